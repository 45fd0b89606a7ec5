// Failure behaviour of Load and Save: a hostile or damaged file makes Load
// fail with an error naming the file and the blob while the workspace stays
// exactly as it was; a Save that fails midway leaves the previous checkpoint
// (minidb file or lmdb directory) untouched and no temporary files behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/workspace.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

namespace fs = std::filesystem;
using testing::DirectoryListing;
using testing::ErrorOf;
using testing::Int32LE;
using testing::IntArg;
using testing::MakeOp;
using testing::MiniDBRecord;
using testing::ParseMiniDBRecords;
using testing::ReadBytes;
using testing::StringArg;
using testing::TempDir;
using testing::VectorPath;
using testing::WriteBytes;

OperatorDef Op(const std::string& type, const std::vector<std::string>& inputs,
               const std::vector<std::string>& outputs, const std::string& path,
               const std::string& db_type = "minidb", bool load_all = false) {
  std::vector<Argument> args = {StringArg("db", path), StringArg("db_type", db_type),
                                IntArg("absolute_path", 1)};
  if (load_all) args.push_back(IntArg("load_all", 1));
  return MakeOp(type, inputs, outputs, args);
}

// ---- minidb files made by hand ----

// A float tensor BlobProto; `edit` damages it.
std::string FloatBlob(const std::string& name, std::vector<int64_t> dims, int elements,
                      const std::function<void(TensorProto*)>& edit = nullptr) {
  BlobProto blob;
  blob.set_name(name);
  blob.set_type("Tensor");
  TensorProto* tensor = blob.mutable_tensor();
  tensor->set_name(name);
  for (int64_t d : dims) tensor->add_dims(d);
  tensor->set_data_type(TensorProto::FLOAT);
  for (int i = 0; i < elements; ++i) tensor->add_float_data(i);
  if (edit) edit(tensor);
  return blob.SerializeAsString();
}

struct HostileFile {
  const char* what;
  std::string bytes;
  std::vector<std::string> outputs;
  std::vector<std::string> expected;  // fragments of the error
};

std::vector<HostileFile> HostileFiles() {
  const std::string checkpoint = ReadBytes(VectorPath("checkpoint.minidb"));
  const std::vector<std::string> checkpoint_blobs = {"gpu_0/fc_w", "gpu_0/fc_b",
                                                     "optimizer_iteration", "gpu_0/big"};
  const std::string good = MiniDBRecord("gpu_0/fc_w#%0", FloatBlob("gpu_0/fc_w", {2}, 2));
  std::string without_last_chunk;
  std::string with_chunk_twice;
  for (const auto& record : ParseMiniDBRecords(checkpoint)) {
    if (record.first != "gpu_0/big#%1") {
      without_last_chunk += MiniDBRecord(record.first, record.second);
    }
    with_chunk_twice += MiniDBRecord(record.first, record.second);
    if (record.first == "gpu_0/big#%0") {
      with_chunk_twice += MiniDBRecord(record.first, record.second);
    }
  }
  return {
      {"truncated checkpoint", checkpoint.substr(0, 400), checkpoint_blobs,
       {"is corrupt", "bytes follow"}},
      {"garbage", std::string("garbage, not a minidb file: \x01\x02\xff\xfe", 32),
       checkpoint_blobs, {"is corrupt"}},
      {"record longer than the file", good + Int32LE(5) + Int32LE(1 << 30) + "zbad#%",
       {"gpu_0/fc_w", "zbad"}, {"is corrupt", "1073741824-byte value"}},
      {"dims overflow",
       good + MiniDBRecord("zbad#%0",
                           FloatBlob("zbad", {int64_t{1} << 40, int64_t{1} << 40}, 0)),
       {"gpu_0/fc_w", "zbad"},
       {"more elements than int64 can count", "while loading blob 'zbad'"}},
      {"too few elements", good + MiniDBRecord("zbad#%0", FloatBlob("zbad", {3}, 2)),
       {"gpu_0/fc_w", "zbad"},
       {"tensor 'zbad' of float32 dims [3] should carry 3 elements but carries 2",
        "while loading blob 'zbad'"}},
      {"segment out of range",
       good + MiniDBRecord("zbad#%0", FloatBlob("zbad", {4}, 7,
                                               [](TensorProto* t) {
                                                 t->mutable_segment()->set_begin(2);
                                                 t->mutable_segment()->set_end(9);
                                               })),
       {"gpu_0/fc_w", "zbad"},
       {"segment [2, 9) outside its 4 elements", "while loading blob 'zbad'"}},
      {"missing chunk", without_last_chunk, checkpoint_blobs,
       {"blob 'gpu_0/big' is missing elements [6, 10)", "while loading blob 'gpu_0/big'"}},
      {"chunk stored twice", with_chunk_twice, checkpoint_blobs,
       {"overlapping chunks", "while loading blob 'gpu_0/big'"}},
      {"not a BlobProto", good + MiniDBRecord("zbad#%0", "\xff\xff\xff\xff"),
       {"gpu_0/fc_w", "zbad"}, {"record 'zbad#%0'", "is not a valid BlobProto"}},
      {"unknown blob type", good + MiniDBRecord("zbad", [] {
                              BlobProto blob;
                              blob.set_name("zbad");
                              blob.set_type("MysteryType");
                              return blob.SerializeAsString();
                            }()),
       {"gpu_0/fc_w", "zbad"}, {"type 'MysteryType'", "while loading blob 'zbad'"}},
  };
}

// The workspace a failed Load must leave alone.
void Populate(Workspace* ws) {
  Tensor* w = ws->CreateBlob("gpu_0/fc_w")->GetMutableTensor();
  w->Resize({1});
  w->mutable_data<int64_t>()[0] = 77;
  ws->CreateBlob("unrelated")->GetMutableTensor()->Resize({0});
}

void ExpectUntouched(Workspace* ws, const std::vector<std::string>& blobs_before) {
  const Tensor& w = ws->GetBlob("gpu_0/fc_w")->GetTensor();
  EXPECT_EQ(w.dtype(), DataType::kInt64);
  EXPECT_EQ(w.dims(), std::vector<int64_t>{1});
  EXPECT_EQ(w.data<int64_t>()[0], 77);
  // Other blobs are the ones that were there, plus the op's declared outputs
  // (created empty when the op was built, as for every op).
  for (const std::string& name : ws->Blobs()) {
    if (std::find(blobs_before.begin(), blobs_before.end(), name) == blobs_before.end()) {
      EXPECT_TRUE(ws->GetBlob(name)->IsEmpty()) << name;
    }
  }
}

TEST(LoadFailureTest, HostileFilesChangeNothingAndNameFileAndBlob) {
  const std::string dir = TempDir("hostile");
  int index = 0;
  for (const HostileFile& file : HostileFiles()) {
    SCOPED_TRACE(file.what);
    const std::string path = dir + "/case" + std::to_string(index++) + ".minidb";
    WriteBytes(path, file.bytes);
    for (bool load_all : {false, true}) {
      Workspace ws;
      Populate(&ws);
      const std::vector<std::string> before = ws.Blobs();
      const std::string error = ErrorOf([&] {
        ws.RunOperatorOnce(Op("Load", {}, load_all ? std::vector<std::string>{} : file.outputs,
                              path, "minidb", load_all));
      });
      ASSERT_FALSE(error.empty()) << "load_all " << load_all;
      EXPECT_NE(error.find(path), std::string::npos) << error;
      for (const std::string& fragment : file.expected) {
        EXPECT_NE(error.find(fragment), std::string::npos) << fragment << " in:\n" << error;
      }
      ExpectUntouched(&ws, before);
      if (load_all) {
        EXPECT_EQ(ws.Blobs(), before);
      }
    }
  }
}

// ---- atomic Save ----

class AtomicSaveTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = TempDir("save_" + GetParam());
    path_ = dir_ + "/checkpoint";
    Set(1.5f);
    ws_.CreateBlob("never_written");
    ws_.CreateBlob("not_serializable")->Reset(std::make_unique<int>(3));
  }
  void Set(float value) {
    Tensor* a = ws_.CreateBlob("a")->GetMutableTensor();
    a->Resize({2});
    a->mutable_data<float>()[0] = value;
    a->mutable_data<float>()[1] = -value;
  }
  float Saved() {
    Workspace loaded;
    loaded.RunOperatorOnce(Op("Load", {}, {"a"}, path_, GetParam()));
    return loaded.GetBlob("a")->GetTensor().data<float>()[0];
  }
  // The checkpoint's content as bytes: the file, or every file of the dir.
  std::string Snapshot() {
    if (!fs::is_directory(path_)) return ReadBytes(path_);
    std::string all;
    for (const std::string& name : DirectoryListing(path_)) {
      if (name != "lock.mdb") all += name + ":" + ReadBytes(path_ + "/" + name);
    }
    return all;
  }

  Workspace ws_;
  std::string dir_, path_;
};

TEST_P(AtomicSaveTest, FailedSaveLeavesThePreviousCheckpoint) {
  ws_.RunOperatorOnce(Op("Save", {"a"}, {}, path_, GetParam()));
  const std::string before = Snapshot();
  ASSERT_FALSE(before.empty());
  Set(2.5f);

  struct Failure {
    std::vector<std::string> inputs;
    const char* expected;
  };
  for (const Failure& failure :
       {Failure{{"a", "never_written"}, "blob 'never_written' holds nothing"},
        Failure{{"a", "not_serializable"}, "holds int, which has no registered serializer"},
        Failure{{"a", "no_such_blob"}, "input blob 'no_such_blob' does not exist"}}) {
    const std::string error =
        ErrorOf([&] { ws_.RunOperatorOnce(Op("Save", failure.inputs, {}, path_, GetParam())); });
    EXPECT_NE(error.find(failure.expected), std::string::npos) << error;
    EXPECT_EQ(Snapshot(), before);
    EXPECT_EQ(DirectoryListing(dir_), std::vector<std::string>{"checkpoint"}) << "temporaries left";
  }
  EXPECT_EQ(Saved(), 1.5f);

  // A good Save replaces it, file or directory, leaving nothing else.
  ws_.RunOperatorOnce(Op("Save", {"a"}, {}, path_, GetParam()));
  EXPECT_EQ(Saved(), 2.5f);
  EXPECT_EQ(DirectoryListing(dir_), std::vector<std::string>{"checkpoint"});
}

TEST_P(AtomicSaveTest, ErrorsNameTheTarget) {
  const std::string target = dir_ + "/missing_dir/checkpoint";
  const std::string error =
      ErrorOf([&] { ws_.RunOperatorOnce(Op("Save", {"a"}, {}, target, GetParam())); });
  EXPECT_NE(error.find(target), std::string::npos) << error;
  EXPECT_EQ(DirectoryListing(dir_), std::vector<std::string>{});
}

INSTANTIATE_TEST_SUITE_P(MiniDBAndLMDB, AtomicSaveTest, ::testing::Values("minidb", "lmdb"));

}  // namespace
}  // namespace doppio
