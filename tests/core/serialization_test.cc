// Tensor and blob serialization: byte-compatibility with Caffe2's vectors
// (tensorprotos.pb and checkpoint.minidb, both made by Caffe2's schema),
// round trips of every dtype through chunks, and rejection of hostile protos.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/serialization.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::ParseMiniDBRecords;
using testing::ReadBytes;
using testing::VectorPath;

#define EXPECT_ERROR_CONTAINS(statement, fragment)                      \
  do {                                                                  \
    const std::string doppio_message = ErrorOf([&] { statement; });     \
    EXPECT_NE(doppio_message.find(fragment), std::string::npos)         \
        << "expected an error containing \"" << (fragment) << "\", got \"" \
        << doppio_message << "\"";                                      \
  } while (false)

TensorProtos Caffe2Vectors() {
  TensorProtos protos;
  EXPECT_TRUE(protos.ParseFromString(ReadBytes(VectorPath("tensorprotos.pb"))));
  return protos;
}

const TensorProto& ByName(const TensorProtos& protos, const std::string& name) {
  for (const TensorProto& proto : protos.protos()) {
    if (proto.name() == name) return proto;
  }
  ADD_FAILURE() << "no vector named " << name;
  return protos.protos(0);
}

TEST(TensorSerializationTest, Caffe2VectorsReserializeByteForByte) {
  const TensorProtos protos = Caffe2Vectors();
  ASSERT_EQ(protos.protos_size(), 11);
  for (const TensorProto& proto : protos.protos()) {
    SCOPED_TRACE(proto.name());
    if (proto.name() == "bytes") continue;  // BYTE loads as uint8: below
    Tensor tensor;
    DeserializeTensor(proto, &tensor);
    TensorProto again;
    TensorProto expected = proto;
    if (proto.has_segment()) {
      SerializeTensor(tensor, proto.name(), &again, proto.segment().begin(),
                      proto.segment().end());
      // The source device is not ours to reproduce: this build serializes
      // from host tensors only.
      expected.clear_device_detail();
    } else {
      SerializeTensor(tensor, proto.name(), &again);
    }
    EXPECT_EQ(again.SerializeAsString(), expected.SerializeAsString())
        << again.DebugString() << "\nvs\n" << expected.DebugString();
  }
}

TEST(TensorSerializationTest, Caffe2VectorsHoldTheirValues) {
  // Values as printed in tensorprotos.pbtxt.
  const TensorProtos protos = Caffe2Vectors();
  Tensor t;
  DeserializeTensor(ByName(protos, "f32"), &t);
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::vector<float>(t.data<float>(), t.data<float>() + 6),
            (std::vector<float>{0.0f, 1.5f, -2.0f, 3.25f, 1e-08f, 1e8f}));
  DeserializeTensor(ByName(protos, "i32"), &t);
  EXPECT_EQ(std::vector<int32_t>(t.data<int32_t>(), t.data<int32_t>() + 4),
            (std::vector<int32_t>{0, -1, 2147483647, -2147483647 - 1}));
  DeserializeTensor(ByName(protos, "u8"), &t);
  EXPECT_EQ(std::vector<uint8_t>(t.data<uint8_t>(), t.data<uint8_t>() + 3),
            (std::vector<uint8_t>{0, 128, 255}));
  DeserializeTensor(ByName(protos, "bool"), &t);
  EXPECT_TRUE(t.data<bool>()[0]);
  EXPECT_FALSE(t.data<bool>()[1]);
  DeserializeTensor(ByName(protos, "f16"), &t);
  EXPECT_EQ(t.data<float16>()[0].bits, 0x3c00);  // 1.0
  EXPECT_EQ(t.data<float16>()[1].bits, 0xc000);  // -2.0
  DeserializeTensor(ByName(protos, "i64"), &t);
  EXPECT_EQ(t.data<int64_t>()[0], int64_t{1} << 40);
  EXPECT_EQ(t.data<int64_t>()[1], -7);
  DeserializeTensor(ByName(protos, "f64"), &t);
  EXPECT_EQ(t.data<double>()[0], 3.141592653589793);
  EXPECT_TRUE(std::signbit(t.data<double>()[1]));
  DeserializeTensor(ByName(protos, "bytes"), &t);
  EXPECT_EQ(t.dtype(), DataType::kUint8);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(t.data<uint8_t>()), 5),
            std::string("\x00\x01\xfe\xff" "A", 5));
  DeserializeTensor(ByName(protos, "str"), &t);
  EXPECT_EQ(t.data<std::string>()[0], "hello");
  EXPECT_EQ(t.data<std::string>()[1], "\xe2\x82\xac");
  DeserializeTensor(ByName(protos, "empty"), &t);
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(t.dtype(), DataType::kFloat);

  // A chunk fills its segment of the full shape.
  Tensor chunk;
  DeserializeTensor(ByName(protos, "chunk"), &chunk);
  EXPECT_EQ(chunk.dims(), std::vector<int64_t>{10});
  EXPECT_EQ(std::vector<float>(chunk.data<float>() + 5, chunk.data<float>() + 8),
            (std::vector<float>{5, 6, 7}));
  // Into a tensor of that shape already, the other elements stay.
  Tensor filled(std::vector<int64_t>{10}, DataType::kFloat);
  std::fill(filled.mutable_data<float>(), filled.mutable_data<float>() + 10, 9.0f);
  DeserializeTensor(ByName(protos, "chunk"), &filled);
  EXPECT_EQ(std::vector<float>(filled.data<float>(), filled.data<float>() + 10),
            (std::vector<float>{9, 9, 9, 9, 9, 5, 6, 7, 9, 9}));
}

// One tensor of each dtype, with values this test picks.
std::map<std::string, Tensor> TensorsOfEveryType(int64_t n) {
  std::map<std::string, Tensor> tensors;
  auto make = [&](const std::string& name, DataType dtype, std::vector<int64_t> dims) {
    return &tensors.emplace(name, Tensor(dims, dtype)).first->second;
  };
  std::vector<int64_t> shape = {n / 2, 2};
  float* f = make("float", DataType::kFloat, shape)->mutable_data<float>();
  double* d = make("double", DataType::kDouble, shape)->mutable_data<double>();
  float16* h = make("float16", DataType::kFloat16, shape)->mutable_data<float16>();
  bfloat16* bf = make("bfloat16", DataType::kBFloat16, shape)->mutable_data<bfloat16>();
  int8_t* i8 = make("int8", DataType::kInt8, shape)->mutable_data<int8_t>();
  int16_t* i16 = make("int16", DataType::kInt16, shape)->mutable_data<int16_t>();
  int32_t* i32 = make("int32", DataType::kInt32, shape)->mutable_data<int32_t>();
  int64_t* i64 = make("int64", DataType::kInt64, shape)->mutable_data<int64_t>();
  uint8_t* u8 = make("uint8", DataType::kUint8, shape)->mutable_data<uint8_t>();
  uint16_t* u16 = make("uint16", DataType::kUint16, shape)->mutable_data<uint16_t>();
  uint32_t* u32 = make("uint32", DataType::kUint32, shape)->mutable_data<uint32_t>();
  uint64_t* u64 = make("uint64", DataType::kUint64, shape)->mutable_data<uint64_t>();
  bool* b = make("bool", DataType::kBool, shape)->mutable_data<bool>();
  std::string* s = make("string", DataType::kString, shape)->mutable_data<std::string>();
  for (int64_t i = 0; i < n; ++i) {
    f[i] = 0.25f * i - 3.0f;
    d[i] = 1e300 / (i + 1);
    h[i].bits = static_cast<uint16_t>(0x3c00 + 17 * i);
    bf[i].bits = static_cast<uint16_t>(0xbf80 - 31 * i);
    i8[i] = static_cast<int8_t>(i % 2 ? -128 + i : 127 - i);
    i16[i] = static_cast<int16_t>(i % 2 ? -32768 + i : 32767 - i);
    i32[i] = static_cast<int32_t>(i % 2 ? INT32_MIN + i : INT32_MAX - i);
    i64[i] = i % 2 ? INT64_MIN + i : INT64_MAX - i;
    u8[i] = static_cast<uint8_t>(255 - i);
    u16[i] = static_cast<uint16_t>(65535 - i);
    u32[i] = static_cast<uint32_t>(i % 2 ? i : UINT32_MAX - i);
    u64[i] = i % 2 ? static_cast<uint64_t>(i) : UINT64_MAX - static_cast<uint64_t>(i);
    b[i] = i % 3 == 0;
    s[i] = std::string(static_cast<size_t>(i), 'a' + i % 26) + std::string(1, '\0') + "\xff";
  }
  make("empty_float", DataType::kFloat, {0, 3});
  make("empty_string", DataType::kString, {2, 0});
  *make("scalar_int64", DataType::kInt64, {})->mutable_data<int64_t>() = 42;
  return tensors;
}

void ExpectSameTensor(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.dims(), expected.dims());
  if (expected.numel() == 0) return;
  if (expected.dtype() == DataType::kString) {
    for (int64_t i = 0; i < expected.numel(); ++i) {
      EXPECT_EQ(actual.data<std::string>()[i], expected.data<std::string>()[i]) << i;
    }
  } else {
    EXPECT_EQ(0, std::memcmp(actual.raw_data(), expected.raw_data(), expected.nbytes()));
  }
}

TEST(BlobSerializationTest, EveryTypeRoundTripsThroughChunksInAnyOrder) {
  std::mt19937 shuffle(7);
  for (auto& entry : TensorsOfEveryType(26)) {
    SCOPED_TRACE(entry.first);
    Blob blob;
    Tensor* tensor = blob.GetMutableTensor();
    tensor->CopyFrom(entry.second);
    std::vector<std::string> keys;
    std::vector<BlobProto> chunks;
    SerializeBlob(
        blob, entry.first,
        [&](const std::string& key, const std::string& value) {
          keys.push_back(key);
          chunks.emplace_back();
          ASSERT_TRUE(chunks.back().ParseFromString(value));
        },
        5);
    const size_t expected_chunks =
        std::max<size_t>(1, (static_cast<size_t>(entry.second.numel()) + 4) / 5);
    ASSERT_EQ(keys.size(), expected_chunks);
    for (size_t i = 0; i < keys.size(); ++i) {
      EXPECT_EQ(keys[i], entry.first + "#%" + std::to_string(i));
      EXPECT_EQ(BlobNameFromChunkKey(keys[i]), entry.first);
    }
    std::shuffle(chunks.begin(), chunks.end(), shuffle);
    Blob loaded;
    DeserializeBlobChunks(chunks, &loaded);
    ExpectSameTensor(loaded.GetTensor(), entry.second);

    // One chunk per blob, and one proto without chunks, also round-trip.
    Blob whole;
    DeserializeBlob(SerializeBlobToString(blob, entry.first), &whole);
    ExpectSameTensor(whole.GetTensor(), entry.second);
  }
}

TEST(BlobSerializationTest, ChunkLayoutIsCaffe2s) {
  Blob blob;
  Tensor* tensor = blob.GetMutableTensor();
  tensor->Resize({10});
  for (int i = 0; i < 10; ++i) tensor->mutable_data<float>()[i] = static_cast<float>(i);
  std::vector<std::pair<int64_t, int64_t>> segments;
  SerializeBlob(
      blob, "w",
      [&](const std::string&, const std::string& value) {
        BlobProto proto;
        ASSERT_TRUE(proto.ParseFromString(value));
        EXPECT_EQ(proto.name(), "w");
        EXPECT_EQ(proto.type(), "Tensor");
        EXPECT_EQ(proto.tensor().name(), "w");
        EXPECT_EQ(proto.tensor().dims_size(), 1);
        EXPECT_EQ(proto.tensor().float_data_size(),
                  proto.tensor().segment().end() - proto.tensor().segment().begin());
        segments.emplace_back(proto.tensor().segment().begin(), proto.tensor().segment().end());
      },
      4);
  EXPECT_EQ(segments, (std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {4, 8}, {8, 10}}));

  // An empty tensor still writes one chunk, so its shape survives.
  tensor->Resize({0, 7});
  tensor->mutable_data<float>();
  int chunks = 0;
  SerializeBlob(
      blob, "e",
      [&](const std::string& key, const std::string& value) {
        ++chunks;
        EXPECT_EQ(key, "e#%0");
        BlobProto proto;
        ASSERT_TRUE(proto.ParseFromString(value));
        EXPECT_EQ(proto.tensor().dims_size(), 2);
        EXPECT_TRUE(proto.tensor().has_segment());
        EXPECT_EQ(proto.tensor().segment().end(), 0);
      },
      kDefaultChunkSize);
  EXPECT_EQ(chunks, 1);
  EXPECT_ERROR_CONTAINS(SerializeBlob(blob, "e", [](const std::string&, const std::string&) {}, 0),
                        "chunk_size for blob 'e' must be positive");
}

TEST(BlobSerializationTest, ReserializesCaffe2CheckpointByteForByte) {
  const auto records = ParseMiniDBRecords(ReadBytes(VectorPath("checkpoint.minidb")));
  ASSERT_EQ(records.size(), 5u);
  std::map<std::string, std::vector<BlobProto>> chunks;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> expected;
  std::vector<std::string> order;
  for (const auto& record : records) {
    const std::string name = record.first.substr(0, record.first.find("#%"));
    if (!chunks.count(name)) order.push_back(name);
    chunks[name].emplace_back();
    ASSERT_TRUE(chunks[name].back().ParseFromString(record.second));
    expected[name].push_back(record);
  }
  for (const std::string& name : order) {
    SCOPED_TRACE(name);
    Blob blob;
    DeserializeBlobChunks(chunks[name], &blob);
    // gpu_0/big was saved with chunk_size 6; the others in one chunk.
    const int64_t chunk_size = name == "gpu_0/big" ? 6 : kDefaultChunkSize;
    std::vector<std::pair<std::string, std::string>> again;
    SerializeBlob(
        blob, name,
        [&](const std::string& key, const std::string& value) { again.emplace_back(key, value); },
        chunk_size);
    EXPECT_EQ(again, expected[name]);
  }
}

TensorProto ValidProto() {
  TensorProto proto;
  proto.set_name("w");
  proto.add_dims(2);
  proto.add_dims(2);
  proto.set_data_type(TensorProto::FLOAT);
  for (int i = 0; i < 4; ++i) proto.add_float_data(i);
  return proto;
}

TEST(TensorSerializationTest, HostileProtosAreRejectedWithTheirName) {
  struct Case {
    const char* what;
    std::function<void(TensorProto*)> mutate;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"negative dim", [](TensorProto* p) { p->set_dims(0, -2); },
       "tensor 'w' has negative dimension -2"},
      {"dims overflow",
       [](TensorProto* p) {
         p->set_dims(0, int64_t{1} << 40);
         p->set_dims(1, int64_t{1} << 40);
       },
       "more elements than int64 can count"},
      {"too few elements", [](TensorProto* p) { p->mutable_float_data()->RemoveLast(); },
       "tensor 'w' of float32 dims [2, 2] should carry 4 elements but carries 3"},
      {"too many elements", [](TensorProto* p) { p->add_float_data(9); },
       "should carry 4 elements but carries 5"},
      {"wrong field", [](TensorProto* p) { p->set_data_type(TensorProto::INT32); },
       "should carry 4 elements but carries 0"},
      {"segment past the end",
       [](TensorProto* p) {
         p->mutable_segment()->set_begin(2);
         p->mutable_segment()->set_end(6);
       },
       "tensor 'w' has segment [2, 6) outside its 4 elements"},
      {"negative segment",
       [](TensorProto* p) {
         p->mutable_segment()->set_begin(-1);
         p->mutable_segment()->set_end(3);
       },
       "has segment [-1, 3)"},
      {"reversed segment",
       [](TensorProto* p) {
         p->mutable_segment()->set_begin(3);
         p->mutable_segment()->set_end(1);
       },
       "has segment [3, 1)"},
      {"segment too long for its data",
       [](TensorProto* p) {
         p->mutable_segment()->set_begin(0);
         p->mutable_segment()->set_end(2);
       },
       "segment [0, 2) should carry 2 elements but carries 4"},
      {"int8 out of range",
       [](TensorProto* p) {
         p->set_data_type(TensorProto::INT8);
         p->clear_float_data();
         for (int v : {1, 2, 300, 4}) p->add_int32_data(v);
       },
       "int32_data[2] = 300 does not fit int8"},
      {"float16 out of range",
       [](TensorProto* p) {
         p->set_data_type(TensorProto::FLOAT16);
         p->clear_float_data();
         for (int v : {1, 2, 3, 70000}) p->add_int32_data(v);
       },
       "int32_data[3] = 70000 is not a float16 bit pattern"},
      {"odd byte_data for int16",
       [](TensorProto* p) {
         p->set_data_type(TensorProto::INT16);
         p->clear_float_data();
         p->set_byte_data("1234567");
       },
       "7 bytes of byte_data, not a whole number of int16"},
      {"undefined type with elements",
       [](TensorProto* p) { p->set_data_type(TensorProto::UNDEFINED); },
       "has data_type UNDEFINED but 4 elements"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    TensorProto proto = ValidProto();
    c.mutate(&proto);
    Tensor tensor;
    EXPECT_ERROR_CONTAINS(DeserializeTensor(proto, &tensor), c.expected);
  }
  // An enum value this schema does not know (11 was never assigned) comes
  // through the unknown fields: field 2, varint 11.
  TensorProto unknown_type;
  ASSERT_TRUE(unknown_type.ParseFromString(std::string("\x08\x01\x10\x0b\x3a\x01w", 7)));
  Tensor tensor;
  EXPECT_ERROR_CONTAINS(DeserializeTensor(unknown_type, &tensor),
                        "tensor 'w' has unknown data_type 11");
}

TEST(TensorSerializationTest, NarrowTypesAlsoLoadFromByteData) {
  // Newer Caffe2 writers may pack narrow types into byte_data.
  TensorProto proto;
  proto.set_name("packed");
  proto.add_dims(2);
  proto.set_data_type(TensorProto::INT16);
  proto.set_byte_data(std::string("\x01\x02\xff\xff", 4));
  Tensor tensor;
  DeserializeTensor(proto, &tensor);
  EXPECT_EQ(tensor.data<int16_t>()[0], 0x0201);
  EXPECT_EQ(tensor.data<int16_t>()[1], -1);
}

TEST(BlobSerializationTest, InconsistentChunksLeaveTheBlobAlone) {
  auto chunk = [](int64_t begin, int64_t end, TensorProto::DataType type = TensorProto::FLOAT) {
    BlobProto proto;
    proto.set_name("x");
    proto.set_type("Tensor");
    TensorProto* tensor = proto.mutable_tensor();
    tensor->set_name("x");
    tensor->add_dims(10);
    tensor->set_data_type(type);
    for (int64_t i = begin; i < end; ++i) {
      if (type == TensorProto::FLOAT) {
        tensor->add_float_data(i);
      } else {
        tensor->add_int32_data(static_cast<int32_t>(i));
      }
    }
    tensor->mutable_segment()->set_begin(begin);
    tensor->mutable_segment()->set_end(end);
    return proto;
  };
  Blob blob;
  blob.GetMutableTensor()->Resize({1});
  blob.GetMutableTensor()->mutable_data<int64_t>()[0] = 77;
  auto expect_rejected = [&](const std::vector<BlobProto>& chunks, const char* expected) {
    EXPECT_ERROR_CONTAINS(DeserializeBlobChunks(chunks, &blob), expected);
    ASSERT_TRUE(blob.IsTensor());
    EXPECT_EQ(blob.GetTensor().data<int64_t>()[0], 77);
  };
  expect_rejected({chunk(0, 6)}, "blob 'x' is missing elements [6, 10)");
  expect_rejected({chunk(0, 4), chunk(6, 10)}, "blob 'x' is missing elements [4, 6)");
  expect_rejected({chunk(0, 6), chunk(4, 10)}, "overlapping chunks at element 4");
  expect_rejected({chunk(0, 6), chunk(6, 10), chunk(6, 10)}, "overlapping chunks");
  expect_rejected({chunk(0, 6), chunk(6, 10, TensorProto::INT32)},
                  "has chunks of different shapes or types");
  BlobProto whole = chunk(0, 10);
  whole.mutable_tensor()->clear_segment();
  expect_rejected({whole, chunk(0, 10)}, "one of them carries no segment");
  BlobProto other = chunk(0, 10);
  other.set_type("DBReader");
  expect_rejected({chunk(0, 10), other}, "has chunks of different types");

  DeserializeBlobChunks({chunk(6, 10), chunk(0, 6)}, &blob);
  EXPECT_EQ(blob.GetTensor().data<float>()[9], 9.0f);
}

// A non-tensor type with its own (chunked) serializer, for the registries.
struct Note {
  std::string text;
};

class NoteSerializer final : public BlobSerializerBase {
 public:
  void Serialize(const Blob& blob, const std::string& name, const SerializationAcceptor& acceptor,
                 int64_t) override {
    const std::string& text = blob.Get<Note>().text;
    for (int i = 0; i < 2; ++i) {
      BlobProto proto;
      proto.set_name(name);
      proto.set_type("TestNote");
      proto.set_content(text.substr(i * text.size() / 2, text.size() / 2 + i * (text.size() % 2)));
      proto.set_content_num_chunks(2);
      proto.set_content_chunk_id(i);
      acceptor(name + "#%" + std::to_string(i), proto.SerializeAsString());
    }
  }
};

class NoteDeserializer final : public BlobDeserializerBase {
 public:
  void Deserialize(const BlobProto& proto, Blob* blob) override {
    blob->GetMutable<Note>()->text += proto.content();
  }
};

BlobSerializerRegisterer g_note_serializer(std::type_index(typeid(Note)),
                                           [] { return std::make_unique<NoteSerializer>(); });
BlobDeserializerRegisterer g_note_deserializer(
    "TestNote", [] { return std::make_unique<NoteDeserializer>(); });

// Caffe2's StringSerializer writes {name, type "std::string", content}; a
// proto built to that description loads here, and ours has that form.
TEST(BlobSerializationTest, StringBlobsUseCaffe2sForm) {
  const std::string bytes("meta\0net", 8);
  BlobProto caffe2_form;
  caffe2_form.set_name("!!META_NET_DEF");
  caffe2_form.set_type("std::string");
  caffe2_form.set_content(bytes);
  Blob loaded;
  DeserializeBlob(caffe2_form.SerializeAsString(), &loaded);
  ASSERT_TRUE(loaded.IsType<std::string>());
  EXPECT_EQ(loaded.Get<std::string>(), bytes);

  BlobProto written;
  ASSERT_TRUE(written.ParseFromString(SerializeBlobToString(loaded, "!!META_NET_DEF")));
  EXPECT_EQ(written.name(), "!!META_NET_DEF");
  EXPECT_EQ(written.type(), "std::string");
  EXPECT_EQ(written.content(), bytes);
  EXPECT_FALSE(written.has_tensor());
  EXPECT_FALSE(written.has_content_num_chunks());
}

TEST(BlobSerializationTest, RegistriesHandleOtherTypes) {
  Blob blob;
  blob.Reset(std::make_unique<Note>(Note{"hello world"}));
  std::vector<BlobProto> chunks;
  SerializeBlob(blob, "note", [&](const std::string&, const std::string& value) {
    chunks.emplace_back();
    chunks.back().ParseFromString(value);
  });
  ASSERT_EQ(chunks.size(), 2u);
  std::swap(chunks[0], chunks[1]);
  Blob loaded;
  DeserializeBlobChunks(chunks, &loaded);
  EXPECT_EQ(loaded.Get<Note>().text, "hello world");

  chunks.pop_back();
  EXPECT_ERROR_CONTAINS(DeserializeBlobChunks(chunks, &loaded),
                        "declares 2 content chunks but 1 are present");

  Blob unserializable;
  unserializable.Reset(std::make_unique<int>(3));
  EXPECT_ERROR_CONTAINS(SerializeBlobToString(unserializable, "n"),
                        "blob 'n' holds int, which has no registered serializer");
  EXPECT_ERROR_CONTAINS(SerializeBlobToString(Blob(), "nothing"), "blob 'nothing' holds nothing");
  Blob untyped;
  untyped.GetMutableTensor();
  EXPECT_ERROR_CONTAINS(SerializeBlobToString(untyped, "u"), "tensor 'u' has no data type");

  BlobProto strange;
  strange.set_name("s");
  strange.set_type("QTensor");
  EXPECT_ERROR_CONTAINS(DeserializeBlob(strange, &loaded),
                        "blob 's' has type 'QTensor', which no deserializer handles");
  EXPECT_ERROR_CONTAINS(DeserializeBlob(strange, &loaded), "TestNote");
  EXPECT_ERROR_CONTAINS(DeserializeBlob(std::string("\xff\xff\xff"), &loaded),
                        "cannot parse a BlobProto");
}

TEST(BlobSerializationTest, Caffe2BlobProtoVectorLoads) {
  BlobProto proto;
  ASSERT_TRUE(proto.ParseFromString(ReadBytes(VectorPath("blobproto_tensor.pb"))));
  Blob blob;
  DeserializeBlob(proto, &blob);
  EXPECT_EQ(blob.GetTensor().dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(blob.GetTensor().data<float>()[3], 3.25f);
}

}  // namespace
}  // namespace doppio
