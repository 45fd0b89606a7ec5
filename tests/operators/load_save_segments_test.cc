// Sharded checkpoints: Save's `segments` writes a block as a segment of the
// whole tensor, and Load given every block's DB assembles the whole; gaps,
// overlaps (one blob saved to two DBs) and blocks that do not fit their
// description are errors naming the blob.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/workspace.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::IntArg;
using testing::MakeOp;
using testing::StringArg;
using testing::StringsArg;
using testing::TempDir;

void FeedFloats(Workspace* ws, const std::string& name, const std::vector<int64_t>& dims,
                const std::vector<float>& values) {
  Tensor* tensor = ws->CreateBlob(name)->GetMutableTensor();
  tensor->Resize(dims);
  float* data = tensor->mutable_data<float>();
  for (size_t i = 0; i < values.size(); ++i) data[i] = values[i];
}

std::string Segment(const std::string& name, const std::vector<int64_t>& dims, int64_t begin,
                    int64_t end) {
  TensorProto proto;
  proto.set_name(name);
  for (int64_t dim : dims) proto.add_dims(dim);
  proto.set_data_type(TensorProto::FLOAT);
  proto.mutable_segment()->set_begin(begin);
  proto.mutable_segment()->set_end(end);
  return proto.SerializeAsString();
}

// Shard `shard` of a [3, 5] tensor holding 0..14 saves its block to `path`.
void SaveBlock(const std::string& path, int64_t begin, int64_t end, int chunk_size = -1) {
  Workspace ws;
  std::vector<float> block;
  for (int64_t i = begin; i < end; ++i) block.push_back(static_cast<float>(i));
  FeedFloats(&ws, "m", {end - begin}, block);
  FeedFloats(&ws, "other", {2}, {7, 8});
  ws.RunOperatorOnce(MakeOp("Save", {"m"}, {},
                            {StringArg("db", path), StringArg("db_type", "minidb"),
                             IntArg("absolute_path", 1), IntArg("chunk_size", chunk_size),
                             StringsArg("segments", {Segment("m", {3, 5}, begin, end)})}));
}

OperatorDef LoadFrom(const std::vector<std::string>& paths) {
  return MakeOp("Load", {}, {"m"},
                {StringsArg("dbs", paths), StringArg("db_type", "minidb"),
                 IntArg("absolute_path", 1)});
}

TEST(SaveLoadSegmentsTest, LoadAssemblesTheWholeTensorFromEveryBlocksDB) {
  const std::string dir = TempDir("segments");
  SaveBlock(dir + "/a", 0, 5);
  SaveBlock(dir + "/b", 5, 10, /*chunk_size=*/2);
  SaveBlock(dir + "/c", 10, 15);
  Workspace ws;
  ws.RunOperatorOnce(LoadFrom({dir + "/c", dir + "/a", dir + "/b"}));
  const Tensor& whole = ws.GetBlob("m")->GetTensor();
  ASSERT_EQ(whole.dims(), std::vector<int64_t>({3, 5}));
  for (int i = 0; i < 15; ++i) EXPECT_EQ(whole.data<float>()[i], i);

  // A missing block leaves a gap; a block saved twice overlaps.
  Workspace untouched;
  FeedFloats(&untouched, "m", {1}, {42});
  EXPECT_MESSAGE_HAS(ErrorOf([&] { untouched.RunOperatorOnce(LoadFrom({dir + "/a", dir + "/c"})); }),
                     "'m'");
  EXPECT_EQ(untouched.GetBlob("m")->GetTensor().data<float>()[0], 42) << "all or nothing";
  SaveBlock(dir + "/a2", 0, 5);
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       untouched.RunOperatorOnce(
                           LoadFrom({dir + "/a", dir + "/a2", dir + "/b", dir + "/c"}));
                     }),
                     "overlapping");
}

TEST(SaveLoadSegmentsTest, OneBlobSavedTwiceOverlapsAndSegmentsMustFitTheirInput) {
  const std::string dir = TempDir("segments_errors");
  Workspace ws;
  FeedFloats(&ws, "m", {4}, {1, 2, 3, 4});
  for (const char* name : {"/x", "/y"}) {
    ws.RunOperatorOnce(MakeOp("Save", {"m"}, {},
                              {StringArg("db", dir + name), StringArg("db_type", "minidb"),
                               IntArg("absolute_path", 1)}));
  }
  // Save writes even a whole tensor as a segment of itself: two copies of
  // it overlap, and the error names both files.
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ws.RunOperatorOnce(LoadFrom({dir + "/x", dir + "/y"})); }),
                     "blob 'm' has overlapping chunks", "segments_errors/x' and '",
                     "segments_errors/y'");
  auto save = [&](const std::string& segment) {
    ws.RunOperatorOnce(MakeOp("Save", {"m"}, {},
                              {StringArg("db", dir + "/z"), StringArg("db_type", "minidb"),
                               IntArg("absolute_path", 1), StringsArg("segments", {segment})}));
  };
  EXPECT_MESSAGE_HAS(ErrorOf([&] { save(Segment("n", {8}, 0, 4)); }), "'n'", "not an input");
  EXPECT_MESSAGE_HAS(ErrorOf([&] { save(Segment("m", {8}, 0, 3)); }), "holds 4 elements",
                     "[0, 3)");
  EXPECT_MESSAGE_HAS(ErrorOf([&] { save(Segment("m", {8}, 6, 10)); }), "does not fit");
}

}  // namespace
}  // namespace doppio
