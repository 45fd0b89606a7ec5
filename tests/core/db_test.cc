// DB backends: minidb's exact on-disk format (bytes written out by hand
// here, and Caffe2's checkpoint.minidb), its reader's defences against
// corrupt files, LMDB, the registry and DBReader (against Caffe2's
// blobproto_dbreader vector).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/db.h"
#include "core/serialization.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

namespace fs = std::filesystem;
using testing::ErrorIfAny;
using testing::ErrorOf;
using testing::Int32LE;
using testing::MiniDBRecord;
using testing::ReadBytes;
using testing::TempDir;
using testing::VectorPath;
using testing::WriteBytes;
using Records = std::vector<std::pair<std::string, std::string>>;

void Write(const std::string& type, const std::string& path, const Records& records) {
  auto db = db::OpenDB(type, path, db::NEW);
  auto transaction = db->NewTransaction();
  for (const auto& record : records) transaction->Put(record.first, record.second);
  transaction->Commit();
  transaction.reset();
  db->Close();
}

Records ReadAll(const std::string& type, const std::string& path) {
  auto db = db::OpenDB(type, path, db::READ);
  auto cursor = db->NewCursor();
  Records records;
  for (; cursor->Valid(); cursor->Next()) records.emplace_back(cursor->key(), cursor->value());
  return records;
}

TEST(MiniDBTest, WritesCaffe2RecordLayoutExactly) {
  const std::string path = TempDir("layout") + "/a.minidb";
  const std::string big_value(300, 'v');
  Write("minidb", path, {{"a", "xyz"}, {"key#%1", big_value}});
  EXPECT_EQ(ReadBytes(path), MiniDBRecord("a", "xyz") + MiniDBRecord("key#%1", big_value));
  EXPECT_EQ(ReadBytes(path).substr(0, 8), std::string("\x01\0\0\0\x03\0\0\0", 8));
  // Records come back in file order, not key order.
  Write("MiniDB", path, {{"z", "1"}, {"a", "2"}});
  EXPECT_EQ(ReadAll("minidb", path), (Records{{"z", "1"}, {"a", "2"}}));
}

TEST(MiniDBTest, AppendsInWriteModeAndReadsHandMadeFiles) {
  const std::string path = TempDir("append") + "/a.minidb";
  WriteBytes(path, MiniDBRecord("k1", "v1") + MiniDBRecord("k2", ""));
  {
    auto db = db::OpenDB("minidb", path, db::WRITE);
    auto transaction = db->NewTransaction();
    transaction->Put("k3", "v3");
  }
  EXPECT_EQ(ReadAll("minidb", path), (Records{{"k1", "v1"}, {"k2", ""}, {"k3", "v3"}}));
}

TEST(MiniDBTest, ReadsCaffe2Checkpoint) {
  const Records records = ReadAll("minidb", VectorPath("checkpoint.minidb"));
  std::vector<std::string> keys;
  for (const auto& record : records) keys.push_back(record.first);
  EXPECT_EQ(keys, (std::vector<std::string>{"gpu_0/fc_w#%0", "gpu_0/fc_b#%0",
                                            "optimizer_iteration#%0", "gpu_0/big#%0",
                                            "gpu_0/big#%1"}));
  // 5 records: 8 header bytes each plus keys and values make up the file.
  size_t total = 0;
  for (const auto& record : records) total += 8 + record.first.size() + record.second.size();
  EXPECT_EQ(total, ReadBytes(VectorPath("checkpoint.minidb")).size());
  BlobProto first;
  ASSERT_TRUE(first.ParseFromString(records[0].second));
  EXPECT_EQ(first.type(), "Tensor");
}

TEST(MiniDBTest, CursorSeeksToFirstAgain) {
  const std::string path = TempDir("seekfirst") + "/a.minidb";
  Write("minidb", path, {{"a", "1"}, {"b", "2"}});
  auto db = db::OpenDB("minidb", path, db::READ);
  auto cursor = db->NewCursor();
  cursor->Next();
  EXPECT_EQ(cursor->key(), "b");
  cursor->Next();
  EXPECT_FALSE(cursor->Valid());
  EXPECT_FALSE(ErrorOf([&] { cursor->key(); }).empty());
  cursor->SeekToFirst();
  EXPECT_EQ(cursor->key(), "a");
  EXPECT_FALSE(cursor->SupportsSeek());
  EXPECT_FALSE(ErrorOf([&] { cursor->Seek("b"); }).empty());
}

// Reads every record of a hostile file; returns the error (or "").
std::string ReadError(const std::string& path) {
  return ErrorIfAny([&] { ReadAll("minidb", path); });
}

TEST(MiniDBTest, EveryTruncationOfTheCheckpointFailsCleanlyOrEndsOnARecord) {
  const std::string bytes = ReadBytes(VectorPath("checkpoint.minidb"));
  ASSERT_EQ(bytes.size(), 464u);
  // Record boundaries, from the layout: header + key + value lengths.
  std::vector<size_t> boundaries = {0};
  for (const auto& record : ReadAll("minidb", VectorPath("checkpoint.minidb"))) {
    boundaries.push_back(boundaries.back() + 8 + record.first.size() + record.second.size());
  }
  const std::string path = TempDir("truncated") + "/cut.minidb";
  for (size_t length = 0; length < bytes.size(); ++length) {
    WriteBytes(path, bytes.substr(0, length));
    const std::string error = ReadError(path);
    const bool on_boundary =
        std::find(boundaries.begin(), boundaries.end(), length) != boundaries.end();
    if (on_boundary) {
      EXPECT_EQ(error, "") << "cut at " << length;
    } else {
      EXPECT_NE(error.find("minidb file '" + path + "' is corrupt"), std::string::npos)
          << "cut at " << length << ": " << error;
    }
  }
}

TEST(MiniDBTest, RejectsBadLengthsWithoutAllocatingThem) {
  const std::string dir = TempDir("lengths");
  struct Case {
    std::string name;
    std::string bytes;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"huge_value", MiniDBRecord("k", "v").substr(0, 4) + Int32LE(0x7fffffff) + "kv",
       "declares a 1-byte key and a 2147483647-byte value but only 2 bytes follow"},
      {"huge_key", Int32LE(0x7ffffff0) + Int32LE(1) + "abc", "2147483632-byte key"},
      {"negative_value", Int32LE(1) + Int32LE(-5) + "k", "value length -5 is negative"},
      {"negative_key", Int32LE(-1) + Int32LE(1) + "kv", "key length -1 is not positive"},
      {"zero_key", Int32LE(0) + Int32LE(1) + "v", "key length 0 is not positive"},
      {"short_header", MiniDBRecord("k", "v") + "\x01\x02\x03", "only 3 bytes where an 8-byte"},
      {"garbage", "this is not a minidb file at all, just text", "corrupt"},
  };
  for (const Case& c : cases) {
    const std::string path = dir + "/" + c.name;
    WriteBytes(path, c.bytes);
    const std::string error = ReadError(path);
    EXPECT_NE(error.find(path), std::string::npos) << c.name << ": " << error;
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.name << ": " << error;
  }
}

TEST(MiniDBTest, RefusesMissingFilesDirectoriesAndFifos) {
  const std::string dir = TempDir("special");
  std::string error = ErrorOf([&] { db::OpenDB("minidb", dir + "/missing", db::READ); });
  EXPECT_NE(error.find("cannot open minidb file '" + dir + "/missing'"), std::string::npos)
      << error;
  error = ErrorOf([&] { db::OpenDB("minidb", dir, db::READ); });
  EXPECT_NE(error.find("is not a regular file"), std::string::npos) << error;
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // Reading a FIFO could block forever; it must fail instead. Holding both
  // ends open here keeps the open itself from blocking in this test.
  const int both_ends = open(fifo.c_str(), O_RDWR);
  ASSERT_GE(both_ends, 0);
  error = ErrorOf([&] { db::OpenDB("minidb", fifo, db::READ); });
  close(both_ends);
  EXPECT_NE(error.find("is not a regular file"), std::string::npos) << error;
  EXPECT_FALSE(ErrorOf([&] { db::OpenDB("minidb", dir + "/no/such/dir/x", db::NEW); }).empty());
}

TEST(DBRegistryTest, UnknownTypeListsKnownTypes) {
  const std::string error = ErrorOf([] { db::OpenDB("leveldb", "/tmp/x", db::READ); });
  EXPECT_NE(error.find("unknown db type 'leveldb'"), std::string::npos) << error;
  EXPECT_NE(error.find("minidb"), std::string::npos) << error;
  EXPECT_NE(error.find("lmdb"), std::string::npos) << error;
  const auto types = db::RegisteredDBTypes();
  for (const char* type : {"minidb", "MiniDB", "lmdb", "LMDB"}) {
    EXPECT_NE(std::find(types.begin(), types.end(), type), types.end()) << type;
  }
}

TEST(DBRegistryTest, DBExists) {
  const std::string path = TempDir("exists") + "/a.minidb";
  EXPECT_FALSE(db::DBExists("minidb", path));
  Write("minidb", path, {{"a", "1"}});
  EXPECT_TRUE(db::DBExists("minidb", path));
  EXPECT_FALSE(db::DBExists("nosuchtype", path));
}

TEST(LMDBTest, RoundTripsInKeyOrderAndSeeks) {
  const std::string path = TempDir("lmdb_roundtrip") + "/data.lmdb";
  Write("lmdb", path, {{"b", "2"}, {"a", "1"}, {"c", std::string(5000, 'x')}});
  EXPECT_TRUE(fs::is_directory(path));
  EXPECT_EQ(ReadAll("LMDB", path),
            (Records{{"a", "1"}, {"b", "2"}, {"c", std::string(5000, 'x')}}));
  auto db = db::OpenDB("lmdb", path, db::READ);
  auto cursor = db->NewCursor();
  ASSERT_TRUE(cursor->SupportsSeek());
  cursor->Seek("bb");
  EXPECT_EQ(cursor->key(), "c");
  cursor->Seek("zz");
  EXPECT_FALSE(cursor->Valid());
  // Two cursors at once in one thread.
  auto second = db->NewCursor();
  EXPECT_EQ(second->key(), "a");
  EXPECT_FALSE(ErrorOf([&] { db->NewTransaction(); }).empty());
}

TEST(LMDBTest, WriteModeAddsAndCommitsOnDestruction) {
  const std::string path = TempDir("lmdb_write") + "/data.lmdb";
  Write("lmdb", path, {{"a", "1"}});
  {
    auto db = db::OpenDB("lmdb", path, db::WRITE);
    auto transaction = db->NewTransaction();
    transaction->Put("b", "2");
    // One writer at a time: a second transaction would deadlock in LMDB.
    EXPECT_NE(ErrorOf([&] { db->NewTransaction(); }).find("already has an open transaction"),
              std::string::npos);
  }
  EXPECT_EQ(ReadAll("lmdb", path), (Records{{"a", "1"}, {"b", "2"}}));
}

TEST(LMDBTest, ErrorsNameThePath) {
  const std::string dir = TempDir("lmdb_errors");
  std::string error = ErrorOf([&] { db::OpenDB("lmdb", dir + "/missing", db::READ); });
  EXPECT_NE(error.find(dir + "/missing"), std::string::npos) << error;
  Write("lmdb", dir + "/exists", {{"a", "1"}});
  error = ErrorOf([&] { db::OpenDB("lmdb", dir + "/exists", db::NEW); });
  EXPECT_NE(error.find("cannot create lmdb directory '" + dir + "/exists'"), std::string::npos)
      << error;
  WriteBytes(dir + "/plain_file", "not lmdb");
  error = ErrorOf([&] { db::OpenDB("lmdb", dir + "/plain_file", db::READ); });
  EXPECT_NE(error.find(dir + "/plain_file"), std::string::npos) << error;
  // Garbage where data.mdb should be.
  fs::create_directories(dir + "/garbage");
  WriteBytes(dir + "/garbage/data.mdb", std::string(8192, 'g'));
  error = ErrorOf([&] { ReadAll("lmdb", dir + "/garbage"); });
  EXPECT_NE(error.find(dir + "/garbage"), std::string::npos) << error;
  // Keys over LMDB's limit fail with a message, not a crash.
  error = ErrorOf([&] { Write("lmdb", dir + "/long_key", {{std::string(1000, 'k'), "v"}}); });
  EXPECT_NE(error.find("keys are limited to"), std::string::npos) << error;
}

TEST(DBReaderTest, ReadsWrapsAndShards) {
  const std::string path = TempDir("reader") + "/a.minidb";
  Write("minidb", path, {{"0", "a"}, {"1", "b"}, {"2", "c"}, {"3", "d"}, {"4", "e"}});
  db::DBReader reader("minidb", path);
  std::string key, value;
  std::string seen;
  for (int i = 0; i < 7; ++i) {
    reader.Read(&key, &value);
    seen += value;
  }
  EXPECT_EQ(seen, "abcdeab");
  db::DBReader shard1("minidb", path, 2, 1);
  seen.clear();
  for (int i = 0; i < 3; ++i) {
    shard1.Read(&key, &value);
    seen += value;
  }
  EXPECT_EQ(seen, "bdb");
  EXPECT_FALSE(ErrorOf([&] { db::DBReader bad("minidb", path, 2, 2); }).empty());
  db::DBReader closed;
  EXPECT_NE(ErrorOf([&] { closed.Read(&key, &value); }).find("not open"), std::string::npos);
}

TEST(DBReaderTest, SerializesAsCaffe2DBReaderProto) {
  // Caffe2's vector: a reader of an lmdb whose cursor stands at "00001234".
  BlobProto expected;
  ASSERT_TRUE(expected.ParseFromString(ReadBytes(VectorPath("blobproto_dbreader.pb"))));
  DBReaderProto expected_reader;
  ASSERT_TRUE(expected_reader.ParseFromString(expected.content()));

  const std::string path = TempDir("reader_proto") + "/train.lmdb";
  Write("lmdb", path, {{"00001233", "x"}, {"00001234", "y"}, {"00001235", "z"}});
  Blob blob;
  auto* reader = blob.Reset(std::make_unique<db::DBReader>("lmdb", path));
  std::string key, value;
  reader->Read(&key, &value);
  ASSERT_EQ(key, "00001233");

  // Same message with our path in place of Caffe2's: byte-identical.
  expected_reader.set_source(path);
  expected.set_content(expected_reader.SerializeAsString());
  EXPECT_EQ(SerializeBlobToString(blob, "reader"), expected.SerializeAsString());

  // And back: a reader of the same db, at the same record.
  Blob loaded;
  DeserializeBlob(SerializeBlobToString(blob, "reader"), &loaded);
  ASSERT_TRUE(loaded.IsType<db::DBReader>());
  loaded.Get<db::DBReader>().Read(&key, &value);
  EXPECT_EQ(key, "00001234");
  EXPECT_EQ(value, "y");

  // Caffe2's original points at a path that is not here: a clear error.
  Blob missing;
  const std::string error =
      ErrorOf([&] { DeserializeBlob(ReadBytes(VectorPath("blobproto_dbreader.pb")), &missing); });
  EXPECT_NE(error.find("/data/fmnist_train.lmdb"), std::string::npos) << error;
}

}  // namespace
}  // namespace doppio
