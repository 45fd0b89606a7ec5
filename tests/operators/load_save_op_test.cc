// Save, Load, CreateDB and DBExists: Caffe2's checkpoint against its JSON
// reference, round trips of every dtype through minidb and lmdb, hostile
// files (Load is all-or-nothing), and atomic replacement on Save.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/db.h"
#include "core/gradient.h"
#include "core/schema.h"
#include "core/serialization.h"
#include "core/workspace.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

namespace fs = std::filesystem;
using testing::ErrorOf;
using testing::IntArg;
using testing::MakeOp;
using testing::ReadBytes;
using testing::StringArg;
using testing::StringsArg;
using testing::TempDir;
using testing::VectorPath;

// ---- a minimal JSON reader for checkpoint.expected.json ----

struct Json {
  enum Kind { kNumber, kString, kArray, kObject } kind = kNumber;
  double number = 0;
  std::string text;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;  // file order
};

class JsonReader {
 public:
  explicit JsonReader(std::string text) : text_(std::move(text)) {}
  Json Parse() {
    Json value = Value();
    Skip();
    EXPECT_EQ(at_, text_.size()) << "trailing JSON";
    return value;
  }

 private:
  void Skip() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  char Peek() {
    Skip();
    return at_ < text_.size() ? text_[at_] : '\0';
  }
  void Expect(char c) {
    EXPECT_EQ(Peek(), c) << "at " << at_;
    ++at_;
  }
  std::string String() {
    Expect('"');
    std::string out;
    while (at_ < text_.size() && text_[at_] != '"') {
      if (text_[at_] == '\\') ++at_;  // the reference holds no escapes but \"
      out += text_[at_++];
    }
    ++at_;
    return out;
  }
  Json Value() {
    Json value;
    const char c = Peek();
    if (c == '{') {
      value.kind = Json::kObject;
      Expect('{');
      while (Peek() != '}') {
        std::string key = String();
        Expect(':');
        value.members.emplace_back(key, Value());
        if (Peek() == ',') ++at_;
      }
      Expect('}');
    } else if (c == '[') {
      value.kind = Json::kArray;
      Expect('[');
      while (Peek() != ']') {
        value.items.push_back(Value());
        if (Peek() == ',') ++at_;
      }
      Expect(']');
    } else if (c == '"') {
      value.kind = Json::kString;
      value.text = String();
    } else {
      char* end = nullptr;
      value.number = std::strtod(text_.c_str() + at_, &end);
      EXPECT_NE(end, text_.c_str() + at_) << "bad JSON at " << at_;
      at_ = end - text_.c_str();
    }
    return value;
  }

  std::string text_;
  size_t at_ = 0;
};

// ---- op helpers ----

// The arguments every Load and Save here takes: the DB of `type` at the
// absolute `path`, after `args`.
std::vector<Argument> WithDB(std::vector<Argument> args, const std::string& path,
                             const std::string& type) {
  args.push_back(StringArg("db", path));
  args.push_back(StringArg("db_type", type));
  args.push_back(IntArg("absolute_path", 1));
  return args;
}

OperatorDef LoadOp(const std::string& path, const std::vector<std::string>& outputs,
                   std::vector<Argument> extra = {}, const std::string& type = "minidb") {
  return MakeOp("Load", {}, outputs, WithDB(std::move(extra), path, type));
}

OperatorDef SaveOp(const std::string& path, const std::vector<std::string>& inputs,
                   std::vector<Argument> extra = {}, const std::string& type = "minidb") {
  return MakeOp("Save", inputs, {}, WithDB(std::move(extra), path, type));
}

Tensor* Feed(Workspace* ws, const std::string& name, std::vector<int64_t> dims, DataType dtype) {
  Tensor* tensor = ws->CreateBlob(name)->GetMutableTensor();
  tensor->Resize(dims);
  tensor->raw_mutable_data(dtype);
  return tensor;
}

// ---- Caffe2's checkpoint ----

void ExpectMatchesReference(Workspace* ws, const std::string& prefix = "") {
  const Json reference = JsonReader(ReadBytes(VectorPath("checkpoint.expected.json"))).Parse();
  ASSERT_EQ(reference.kind, Json::kObject);
  ASSERT_EQ(reference.members.size(), 4u);
  for (const auto& member : reference.members) {
    SCOPED_TRACE(member.first);
    const Json* dtype = nullptr;
    const Json* shape = nullptr;
    const Json* values = nullptr;
    for (const auto& field : member.second.members) {
      if (field.first == "dtype") dtype = &field.second;
      if (field.first == "shape") shape = &field.second;
      if (field.first == "values") values = &field.second;
    }
    ASSERT_TRUE(dtype && shape && values);
    std::string name = member.first;
    if (!prefix.empty()) name = prefix + name.substr(name.find('/') + 1);
    const Blob* blob = ws->GetBlob(name);
    ASSERT_NE(blob, nullptr) << name;
    const Tensor& tensor = blob->GetTensor();
    std::vector<int64_t> dims;
    for (const Json& d : shape->items) dims.push_back(static_cast<int64_t>(d.number));
    EXPECT_EQ(tensor.dims(), dims);
    ASSERT_EQ(tensor.numel(), static_cast<int64_t>(values->items.size()));
    if (dtype->text == "float32") {
      ASSERT_EQ(tensor.dtype(), DataType::kFloat);
      for (size_t i = 0; i < values->items.size(); ++i) {
        EXPECT_EQ(tensor.data<float>()[i], static_cast<float>(values->items[i].number)) << i;
      }
    } else {
      ASSERT_EQ(dtype->text, "int64");
      ASSERT_EQ(tensor.dtype(), DataType::kInt64);
      for (size_t i = 0; i < values->items.size(); ++i) {
        EXPECT_EQ(tensor.data<int64_t>()[i], static_cast<int64_t>(values->items[i].number));
      }
    }
  }
}

const std::vector<std::string> kCheckpointBlobs = {"gpu_0/fc_w", "gpu_0/fc_b",
                                                   "optimizer_iteration", "gpu_0/big"};

TEST(LoadOpTest, LoadsCaffe2CheckpointAsTheReferenceSays) {
  Workspace ws;
  ws.RunOperatorOnce(LoadOp(VectorPath("checkpoint.minidb"), kCheckpointBlobs));
  ExpectMatchesReference(&ws);

  Workspace all;
  all.RunOperatorOnce(LoadOp(VectorPath("checkpoint.minidb"), {}, {IntArg("load_all", 1)}));
  ExpectMatchesReference(&all);
  EXPECT_EQ(all.Blobs().size(), 4u);
}

TEST(LoadOpTest, PrefixRulesAndSourceNames) {
  Workspace ws;
  ws.RunOperatorOnce(LoadOp(VectorPath("checkpoint.minidb"), {},
                            {IntArg("load_all", 1), StringArg("strip_prefix", "gpu_0/"),
                             StringArg("add_prefix", "cpu_1/")}));
  EXPECT_EQ(ws.Blobs(), (std::vector<std::string>{"cpu_1/big", "cpu_1/fc_b", "cpu_1/fc_w",
                                                  "cpu_1/optimizer_iteration"}));
  ExpectMatchesReference(&ws, "cpu_1/");

  Workspace renamed;
  renamed.RunOperatorOnce(LoadOp(VectorPath("checkpoint.minidb"), {"w", "it"},
                                 {StringsArg("source_blob_names",
                                             {"gpu_0/fc_w", "optimizer_iteration"})}));
  EXPECT_EQ(renamed.GetBlob("w")->GetTensor().dims(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(renamed.GetBlob("it")->GetTensor().data<int64_t>()[0], 1234);
}

TEST(LoadOpTest, MissingBlobsFailUnlessAllowed) {
  Workspace ws;
  const std::string path = VectorPath("checkpoint.minidb");
  std::string error = ErrorOf([&] { ws.RunOperatorOnce(LoadOp(path, {"gpu_0/fc_w", "nope"})); });
  EXPECT_NE(error.find("blob(s) [nope] not found in [" + path + "]"), std::string::npos) << error;
  EXPECT_TRUE(ws.GetBlob("gpu_0/fc_w")->IsEmpty());

  ws.RunOperatorOnce(LoadOp(path, {"gpu_0/fc_w", "nope"}, {IntArg("allow_incomplete", 1)}));
  EXPECT_TRUE(ws.GetBlob("gpu_0/fc_w")->IsTensor());
  EXPECT_TRUE(ws.GetBlob("nope")->IsEmpty());

  error = ErrorOf([&] { ws.RunOperatorOnce(LoadOp(path, {"nope"}, {IntArg("load_all", 1)})); });
  EXPECT_NE(error.find("[nope] not found"), std::string::npos) << error;

  error = ErrorOf([&] { ws.RunOperatorOnce(LoadOp("/no/such/file.minidb", {"x"})); });
  EXPECT_NE(error.find("/no/such/file.minidb"), std::string::npos) << error;
  error = ErrorOf([&] { ws.RunOperatorOnce(LoadOp(path, {"x"}, {}, "leveldb")); });
  EXPECT_NE(error.find("unknown db type 'leveldb'"), std::string::npos) << error;
}

// ---- round trips ----

// Tensors of every dtype, with values picked here; `big` has more elements
// than the chunk size used below.
void FeedEveryType(Workspace* ws) {
  float* f = Feed(ws, "f32", {3, 4}, DataType::kFloat)->mutable_data<float>();
  for (int i = 0; i < 12; ++i) f[i] = i * 0.5f - 2.0f;
  double* d = Feed(ws, "f64", {2}, DataType::kDouble)->mutable_data<double>();
  d[0] = -1e-300;
  d[1] = 1.0 / 3.0;
  float16* h = Feed(ws, "f16", {3}, DataType::kFloat16)->mutable_data<float16>();
  h[0].bits = 0x3c00;
  h[1].bits = 0xfbff;
  h[2].bits = 0x0001;
  int8_t* i8 = Feed(ws, "i8", {2}, DataType::kInt8)->mutable_data<int8_t>();
  i8[0] = -128;
  i8[1] = 127;
  int16_t* i16 = Feed(ws, "i16", {2}, DataType::kInt16)->mutable_data<int16_t>();
  i16[0] = -32768;
  i16[1] = 32767;
  int32_t* i32 = Feed(ws, "i32", {1, 2}, DataType::kInt32)->mutable_data<int32_t>();
  i32[0] = INT32_MIN;
  i32[1] = INT32_MAX;
  int64_t* i64 = Feed(ws, "i64", {2}, DataType::kInt64)->mutable_data<int64_t>();
  i64[0] = INT64_MIN;
  i64[1] = INT64_MAX;
  uint8_t* u8 = Feed(ws, "u8", {2}, DataType::kUint8)->mutable_data<uint8_t>();
  u8[0] = 0;
  u8[1] = 255;
  uint16_t* u16 = Feed(ws, "u16", {2}, DataType::kUint16)->mutable_data<uint16_t>();
  u16[0] = 0;
  u16[1] = 65535;
  bool* b = Feed(ws, "bool", {3}, DataType::kBool)->mutable_data<bool>();
  b[0] = true;
  b[1] = false;
  b[2] = true;
  std::string* s = Feed(ws, "str", {2, 2}, DataType::kString)->mutable_data<std::string>();
  s[0] = "";
  s[1] = "plain";
  s[2] = std::string("nul\0byte", 8);
  s[3] = "\xe2\x82\xac";
  Feed(ws, "empty", {0, 5}, DataType::kFloat);
  Feed(ws, "empty_str", {0}, DataType::kString);
  *Feed(ws, "scalar", {}, DataType::kInt32)->mutable_data<int32_t>() = -9;
  float* big = Feed(ws, "gpu_0/big", {1000, 3}, DataType::kFloat)->mutable_data<float>();
  for (int i = 0; i < 3000; ++i) big[i] = std::sin(static_cast<float>(i));
}

void ExpectSameBlobs(Workspace* actual, Workspace* expected, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const Tensor& a = actual->GetBlob(name)->GetTensor();
    const Tensor& e = expected->GetBlob(name)->GetTensor();
    ASSERT_EQ(a.dtype(), e.dtype());
    ASSERT_EQ(a.dims(), e.dims());
    if (e.dtype() == DataType::kString) {
      for (int64_t i = 0; i < e.numel(); ++i) {
        EXPECT_EQ(a.data<std::string>()[i], e.data<std::string>()[i]);
      }
    } else if (e.numel() > 0) {
      EXPECT_EQ(0, std::memcmp(a.raw_data(), e.raw_data(), e.nbytes()));
    }
  }
}

TEST(SaveLoadTest, EveryTypeRoundTripsThroughMiniDBAndLMDB) {
  Workspace source;
  FeedEveryType(&source);
  const std::vector<std::string> names = source.Blobs();
  const std::string dir = TempDir("roundtrip");
  for (const std::string type : {"minidb", "lmdb"}) {
    for (int64_t chunk_size : {-1, 0, 7}) {
      SCOPED_TRACE(type + " chunk_size " + std::to_string(chunk_size));
      const std::string path = dir + "/ckpt_" + type + std::to_string(chunk_size);
      source.RunOperatorOnce(SaveOp(path, names, {IntArg("chunk_size", chunk_size)}, type));
      // The big tensor is split into ceil(3000 / 7) chunks, or one.
      auto db = db::OpenDB(type, path, db::READ);
      auto cursor = db->NewCursor();
      int big_chunks = 0;
      for (; cursor->Valid(); cursor->Next()) {
        if (cursor->key().rfind("gpu_0/big#%", 0) == 0) ++big_chunks;
      }
      EXPECT_EQ(big_chunks, chunk_size == 7 ? 429 : 1);
      cursor.reset();
      db.reset();

      Workspace loaded;
      loaded.RunOperatorOnce(LoadOp(path, names, {}, type));
      ExpectSameBlobs(&loaded, &source, names);
      Workspace all;
      all.RunOperatorOnce(LoadOp(path, {}, {IntArg("load_all", 1)}, type));
      EXPECT_EQ(all.Blobs(), names);
      ExpectSameBlobs(&all, &source, names);
    }
  }
}

TEST(SaveLoadTest, SaveNamesFollowStripPrefixAndOverrides) {
  Workspace ws;
  FeedEveryType(&ws);
  const std::string dir = TempDir("names");
  ws.RunOperatorOnce(
      SaveOp(dir + "/a", {"gpu_0/big", "f32"}, {StringArg("strip_prefix", "gpu_0/")}));
  Workspace a;
  a.RunOperatorOnce(LoadOp(dir + "/a", {}, {IntArg("load_all", 1)}));
  EXPECT_EQ(a.Blobs(), (std::vector<std::string>{"big", "f32"}));

  ws.RunOperatorOnce(SaveOp(dir + "/b", {"gpu_0/big", "f32"},
                            {StringsArg("blob_name_overrides", {"x", "y"})}));
  Workspace b;
  b.RunOperatorOnce(LoadOp(dir + "/b", {}, {IntArg("load_all", 1)}));
  EXPECT_EQ(b.Blobs(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(b.GetBlob("x")->GetTensor().numel(), 3000);

  std::string error = ErrorOf([&] {
    ws.RunOperatorOnce(
        SaveOp(dir + "/c", {"f32"}, {StringsArg("blob_name_overrides", {"x", "y"})}));
  });
  EXPECT_NE(error.find("blob_name_overrides has 2 names for 1 inputs"), std::string::npos)
      << error;
  error = ErrorOf([&] {
    ws.RunOperatorOnce(MakeOp("Save", {"f32"}, {}, {StringArg("db", dir + "/d")}));
  });
  EXPECT_NE(error.find("'db_type' is required"), std::string::npos) << error;
  Feed(&ws, "big", {1}, DataType::kFloat);
  error = ErrorOf([&] {
    ws.RunOperatorOnce(
        SaveOp(dir + "/e", {"gpu_0/big", "big"}, {StringArg("strip_prefix", "gpu_0/")}));
  });
  EXPECT_NE(error.find("two inputs would be saved as 'big'"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(dir + "/c") || fs::exists(dir + "/d") || fs::exists(dir + "/e"));
}

TEST(SaveLoadTest, CreateDBReaderFeedsLoad) {
  Workspace ws;
  ws.RunOperatorOnce(
      MakeOp("CreateDB", {}, {"reader"},
             {StringArg("db", VectorPath("checkpoint.minidb")), StringArg("db_type", "minidb")}));
  EXPECT_TRUE(ws.GetBlob("reader")->IsType<db::DBReader>());
  ws.RunOperatorOnce(MakeOp("Load", {"reader"}, kCheckpointBlobs, {}));
  ExpectMatchesReference(&ws);

  std::string error = ErrorOf([&] { ws.RunOperatorOnce(MakeOp("CreateDB", {}, {"r"}, {})); });
  EXPECT_NE(error.find("argument 'db'"), std::string::npos) << error;
  error = ErrorOf([&] {
    ws.RunOperatorOnce(MakeOp("CreateDB", {}, {"r"}, {StringArg("db", "/no/such.minidb"),
                                                  StringArg("db_type", "minidb")}));
  });
  EXPECT_NE(error.find("/no/such.minidb"), std::string::npos) << error;

  ws.RunOperatorOnce(MakeOp("DBExists", {}, {"yes"},
                            {StringArg("db_name", VectorPath("checkpoint.minidb")),
                             StringArg("db_type", "minidb"), IntArg("absolute_path", 1)}));
  EXPECT_TRUE(ws.GetBlob("yes")->GetTensor().data<bool>()[0]);
  ws.RunOperatorOnce(MakeOp("DBExists", {}, {"no"},
                            {StringArg("db_name", "/no/such.minidb"),
                             StringArg("db_type", "minidb"), IntArg("absolute_path", 1)}));
  EXPECT_FALSE(ws.GetBlob("no")->GetTensor().data<bool>()[0]);
}

// As in Caffe2, a Load over a DBReader stops at the record that completes
// its last blob and leaves the reader there: the next Load over the reader
// continues after it (a predictor export loads its MetaNetDef, then the
// parameters stored behind it), and a blob behind the cursor is not seen.
TEST(SaveLoadTest, LoadsOverOneReaderContinueWhereTheLastStopped) {
  Workspace ws;
  FeedEveryType(&ws);
  const std::string path = TempDir("reader_cursor") + "/db";
  // Chunks of 2 elements: "f32" (12 elements) spans six records.
  ws.RunOperatorOnce(SaveOp(path, {"f64", "f32", "i8"}, {IntArg("chunk_size", 2)}));
  Workspace loaded;
  loaded.RunOperatorOnce(
      MakeOp("CreateDB", {}, {"reader"}, {StringArg("db", path), StringArg("db_type", "minidb")}));
  const std::vector<std::string> keys = [&] {
    std::vector<std::string> all;
    auto db = db::OpenDB("minidb", path, db::Mode::READ);
    for (auto cursor = db->NewCursor(); cursor->Valid(); cursor->Next()) {
      all.push_back(BlobNameFromChunkKey(cursor->key()));
    }
    return all;
  }();
  ASSERT_FALSE(keys.empty());
  const std::string first = keys.front();
  loaded.RunOperatorOnce(MakeOp("Load", {"reader"}, {first}, {}));
  std::vector<std::string> rest;
  for (const std::string& name : {"f64", "f32", "i8"}) {
    if (name != first) rest.push_back(name);
  }
  loaded.RunOperatorOnce(MakeOp("Load", {"reader"}, rest, {}));
  ExpectSameBlobs(&loaded, &ws, {"f64", "f32", "i8"});
  // The reader now stands on the last record: the first blob lies behind it.
  const std::string error =
      ErrorOf([&] { loaded.RunOperatorOnce(MakeOp("Load", {"reader"}, {first}, {})); });
  EXPECT_NE(error.find("not found"), std::string::npos) << error;
}

TEST(SaveLoadTest, SchemasAndGradients) {
  for (const char* type : {"Save", "Load", "CreateDB", "DBExists"}) {
    EXPECT_NE(OpSchemaRegistry::Schema(type), nullptr) << type;
    EXPECT_NE(GradientRegistry::Find(type), nullptr) << type;
  }
  EXPECT_EQ(GradientRegistry::Find("Save")->kind, GradientRegistry::Kind::kShouldNotDoGradient);
  EXPECT_EQ(GradientRegistry::Find("Load")->kind, GradientRegistry::Kind::kNoGradient);
  EXPECT_EQ(GradientRegistry::Find("CreateDB")->kind, GradientRegistry::Kind::kNoGradient);
}

}  // namespace
}  // namespace doppio
