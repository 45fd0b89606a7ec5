// Checkpoint checksums end to end: a byte damaged inside a record's tensor
// data -- which still parses, as different numbers -- makes Load fail naming
// the blob and the file, for minidb files and LMDB directories alike, and
// changes no blob. Caffe2's own checkpoint (no checksums) still loads; a
// record stripped of its checksum among checksummed ones is an error.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/workspace.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

namespace fs = std::filesystem;
using testing::ErrorIfAny;
using testing::ErrorOf;
using testing::IntArg;
using testing::MakeOp;
using testing::MiniDBRecord;
using testing::ParseMiniDBRecords;
using testing::ReadBytes;
using testing::StringArg;
using testing::TempDir;
using testing::VectorPath;
using testing::WriteBytes;

constexpr int kElements = 64;

float Weight(int i) { return 1000.5f + static_cast<float>(i); }

std::vector<Argument> DBArgs(const std::string& path, const std::string& type,
                             bool load_all = false) {
  std::vector<Argument> args = {StringArg("db", path), StringArg("db_type", type),
                                IntArg("absolute_path", 1)};
  if (load_all) args.push_back(IntArg("load_all", 1));
  return args;
}

void SaveCheckpoint(const std::string& path, const std::string& type) {
  Workspace ws;
  Tensor* w = ws.CreateBlob("w")->GetMutableTensor();
  w->Resize({kElements});
  for (int i = 0; i < kElements; ++i) w->mutable_data<float>()[i] = Weight(i);
  Tensor* step = ws.CreateBlob("step")->GetMutableTensor();
  step->Resize({1});
  step->mutable_data<int64_t>()[0] = 41;
  ws.RunOperatorOnce(MakeOp("Save", {"w", "step"}, {}, DBArgs(path, type)));
}

// A workspace whose "w" must survive a failed Load.
void Populate(Workspace* ws) {
  Tensor* w = ws->CreateBlob("w")->GetMutableTensor();
  w->Resize({1});
  w->mutable_data<int32_t>()[0] = -7;
}

void ExpectUntouched(Workspace* ws) {
  const Tensor& w = ws->GetBlob("w")->GetTensor();
  ASSERT_EQ(w.dtype(), DataType::kInt32);
  EXPECT_EQ(w.data<int32_t>()[0], -7);
  const Blob* step = ws->GetBlob("step");
  EXPECT_TRUE(step == nullptr || step->IsEmpty());
}

class CorruptRecordTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    path_ = TempDir("corrupt_" + GetParam()) + "/checkpoint";
    SaveCheckpoint(path_, GetParam());
  }
  // The file holding the records: the minidb file, or the LMDB's data.mdb.
  std::string DataFile() const {
    return GetParam() == "lmdb" ? path_ + "/data.mdb" : path_;
  }

  std::string path_;
};

TEST_P(CorruptRecordTest, ADamagedFloatIsCaughtAndNothingChanges) {
  std::string bytes = ReadBytes(DataFile());
  const float target = Weight(17);
  char pattern[4];
  std::memcpy(pattern, &target, 4);
  const size_t at = bytes.find(std::string(pattern, 4));
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(std::string(pattern, 4), at + 1), std::string::npos);
  bytes[at] = static_cast<char>(bytes[at] ^ 0x01);  // still a float, just another one
  WriteBytes(DataFile(), bytes);

  for (bool load_all : {false, true}) {
    SCOPED_TRACE(load_all ? "load_all" : "named outputs");
    Workspace ws;
    Populate(&ws);
    const std::string error = ErrorOf([&] {
      ws.RunOperatorOnce(MakeOp("Load", {}, load_all ? std::vector<std::string>{}
                                                     : std::vector<std::string>{"w", "step"},
                                DBArgs(path_, GetParam(), load_all)));
    });
    for (const std::string& part :
         {std::string("checksum does not match"), std::string("record 'w#%0'"),
          std::string("while loading blob 'w'"), path_, std::string("no blob was changed")}) {
      EXPECT_NE(error.find(part), std::string::npos) << part << " in:\n" << error;
    }
    ExpectUntouched(&ws);
  }

  // The undamaged record alone still loads.
  Workspace ws;
  ws.RunOperatorOnce(MakeOp("Load", {}, {"step"}, DBArgs(path_, GetParam())));
  EXPECT_EQ(ws.GetBlob("step")->GetTensor().data<int64_t>()[0], 41);
}

INSTANTIATE_TEST_SUITE_P(MiniDBAndLMDB, CorruptRecordTest, ::testing::Values("minidb", "lmdb"));

TEST(ChecksumLoadTest, EveryDamagedByteOfAMiniDBIsAnError) {
  const std::string path = TempDir("every_byte") + "/checkpoint";
  SaveCheckpoint(path, "minidb");
  const std::string intact = ReadBytes(path);
  const std::string damaged_path = path + ".damaged";
  for (size_t at = 0; at < intact.size(); ++at) {
    for (unsigned char flip : {0x01, 0x80, 0xff}) {
      std::string bytes = intact;
      bytes[at] = static_cast<char>(bytes[at] ^ flip);
      WriteBytes(damaged_path, bytes);
      Workspace ws;
      Populate(&ws);
      const std::string error = ErrorIfAny([&] {
        ws.RunOperatorOnce(MakeOp("Load", {}, {"w", "step"}, DBArgs(damaged_path, "minidb")));
      });
      ASSERT_FALSE(error.empty()) << "byte " << at << " ^ " << int(flip) << " went unnoticed";
      EXPECT_NE(error.find(damaged_path), std::string::npos) << error;
      ExpectUntouched(&ws);
    }
  }
}

TEST(ChecksumLoadTest, Caffe2CheckpointsWithoutChecksumsStillLoad) {
  Workspace ws;
  ws.RunOperatorOnce(MakeOp("Load", {}, {}, DBArgs(VectorPath("checkpoint.minidb"), "minidb",
                                                   /*load_all=*/true)));
  EXPECT_EQ(ws.Blobs().size(), 4u);
  EXPECT_EQ(ws.GetBlob("optimizer_iteration")->GetTensor().data<int64_t>()[0], 1234);
}

TEST(ChecksumLoadTest, ARecordWithoutChecksumAmongChecksummedOnesIsAnError) {
  const std::string path = TempDir("mixed") + "/checkpoint";
  SaveCheckpoint(path, "minidb");
  std::string mixed;
  for (const auto& record : ParseMiniDBRecords(ReadBytes(path))) {
    // Save's records start with the 6-byte checksum field; drop it from one.
    mixed += MiniDBRecord(record.first,
                          record.first == "step#%0" ? record.second.substr(6) : record.second);
  }
  WriteBytes(path, mixed);
  Workspace ws;
  Populate(&ws);
  const std::string error = ErrorOf([&] {
    ws.RunOperatorOnce(MakeOp("Load", {}, {"w", "step"}, DBArgs(path, "minidb")));
  });
  EXPECT_NE(error.find("record 'step#%0' carries no checksum although record 'w#%0'"),
            std::string::npos)
      << error;
  ExpectUntouched(&ws);
}

}  // namespace
}  // namespace doppio
