// ParseTensorProtosRecord (TensorProtosDBInput's decoder of plain records)
// against protobuf's path: every record it accepts must load through
// protobuf + DeserializeTensor with the same dtype, dims and bytes, and
// every record outside its subset -- or malformed -- must be refused, so
// that protobuf's path decides what it means.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/limits.h"
#include "core/serialization.h"
#include "operators/tensor_protos_record.h"
#include "proto/doppio.pb.h"

namespace doppio {
namespace {

constexpr int kMaxTensors = 4;

bool Parses(const std::string& record, int num_tensors, RecordTensorView* views) {
  return ParseTensorProtosRecord(record, num_tensors, views, kMaxTensors);
}

// The record decodes through the fast path exactly as through protobuf.
void ExpectSameAsProtobuf(const std::string& record, int num_tensors) {
  RecordTensorView views[kMaxTensors];
  ASSERT_TRUE(Parses(record, num_tensors, views));
  TensorProtos protos;
  ASSERT_TRUE(protos.ParseFromString(record));
  ASSERT_EQ(protos.protos_size(), num_tensors);
  for (int i = 0; i < num_tensors; ++i) {
    Tensor expected;
    DeserializeTensor(protos.protos(i), &expected);
    EXPECT_EQ(views[i].dtype, expected.dtype()) << "tensor " << i;
    EXPECT_EQ(std::vector<int64_t>(views[i].dims, views[i].dims + views[i].ndims),
              expected.dims())
        << "tensor " << i;
    ASSERT_EQ(views[i].numel, expected.numel());
    std::vector<char> copied(expected.nbytes());
    CopyRecordElements(views[i], copied.data());
    EXPECT_TRUE(expected.nbytes() == 0 ||
                std::memcmp(copied.data(), expected.raw_data(), expected.nbytes()) == 0)
        << "tensor " << i;
  }
}

TensorProto Image(TensorProto::DataType type, std::vector<int64_t> dims) {
  TensorProto image;
  image.set_data_type(type);
  int64_t count = 1;
  for (int64_t dim : dims) {
    image.add_dims(dim);
    count *= dim;
  }
  std::string pixels;
  for (int64_t j = 0; j < count; ++j) pixels.push_back(static_cast<char>((31 * j + 5) % 256));
  image.set_byte_data(pixels);
  return image;
}

TensorProto Label(int32_t value) {
  TensorProto label;
  label.set_data_type(TensorProto::INT32);
  label.add_int32_data(value);
  return label;
}

TensorProto Floats(std::vector<float> values) {
  TensorProto tensor;
  tensor.set_data_type(TensorProto::FLOAT);
  tensor.add_dims(static_cast<int64_t>(values.size()));
  for (float value : values) tensor.add_float_data(value);
  return tensor;
}

std::string Record(const std::vector<TensorProto>& tensors) {
  TensorProtos protos;
  for (const TensorProto& tensor : tensors) *protos.add_protos() = tensor;
  return protos.SerializeAsString();
}

TEST(TensorProtosRecordTest, PlainRecordsDecodeAsProtobufDoes) {
  ExpectSameAsProtobuf(Record({Image(TensorProto::BYTE, {1, 28, 28}), Label(9)}), 2);
  ExpectSameAsProtobuf(Record({Image(TensorProto::UINT8, {3, 2}), Label(-7)}), 2);
  ExpectSameAsProtobuf(
      Record({Label(std::numeric_limits<int32_t>::min()), Label(std::numeric_limits<int32_t>::max())}),
      2);
  ExpectSameAsProtobuf(Record({Floats({1.5f, -0.0f, std::numeric_limits<float>::infinity()})}), 1);
  ExpectSameAsProtobuf(Record({Image(TensorProto::UINT8, {0, 4})}), 1);
  ExpectSameAsProtobuf(Record({}), 0);
  TensorProto named = Image(TensorProto::BYTE, {2, 2});
  named.set_name("pixels");
  ExpectSameAsProtobuf(Record({named}), 1);
  // A scalar label with no dims; an int32 tensor with no elements.
  TensorProto empty_ints;
  empty_ints.set_data_type(TensorProto::INT32);
  empty_ints.add_dims(0);
  ExpectSameAsProtobuf(Record({Label(3), empty_ints}), 2);
}

TEST(TensorProtosRecordTest, UnpackedDimsDecodeAsProtobufDoes) {
  // TensorProto {dims: 2 (unpacked), dims: 3 (unpacked), data_type: BYTE,
  // byte_data: 6 bytes}, inside TensorProtos field 1.
  const std::string tensor = std::string("\x08\x02\x08\x03\x10\x03\x2a\x06", 8) + "abcdef";
  const std::string record = std::string("\x0a") + static_cast<char>(tensor.size()) + tensor;
  ExpectSameAsProtobuf(record, 1);
}

TEST(TensorProtosRecordTest, RecordsOutsideThePlainFormAreRefused) {
  RecordTensorView views[kMaxTensors];
  const std::string plain = Record({Image(TensorProto::BYTE, {2, 2}), Label(1)});
  ASSERT_TRUE(Parses(plain, 2, views));
  EXPECT_FALSE(Parses(plain, 1, views)) << "wrong tensor count";
  EXPECT_FALSE(Parses(plain, 3, views)) << "wrong tensor count";
  EXPECT_FALSE(ParseTensorProtosRecord(plain, 2, views, 1)) << "more tensors than views";

  auto refused = [&](TensorProto tensor, const char* why) {
    EXPECT_FALSE(Parses(Record({tensor}), 1, views)) << why;
  };
  TensorProto segment = Image(TensorProto::BYTE, {2, 2});
  segment.mutable_segment()->set_begin(0);
  segment.mutable_segment()->set_end(4);
  refused(segment, "segment");
  TensorProto device = Image(TensorProto::BYTE, {2, 2});
  device.mutable_device_detail()->set_device_type(0);
  refused(device, "device_detail");
  TensorProto strings;
  strings.set_data_type(TensorProto::STRING);
  strings.add_string_data("a");
  refused(strings, "string data");
  TensorProto wide;
  wide.set_data_type(TensorProto::INT64);
  wide.add_int64_data(1);
  refused(wide, "int64 data");
  TensorProto float_as_ints = Label(1);
  float_as_ints.set_data_type(TensorProto::FLOAT);
  refused(float_as_ints, "FLOAT carried in int32_data");
  TensorProto uint8_as_ints = Label(1);
  uint8_as_ints.set_data_type(TensorProto::UINT8);
  refused(uint8_as_ints, "UINT8 carried in int32_data (protobuf's path range-checks it)");
  TensorProto short_data = Image(TensorProto::BYTE, {2, 2});
  short_data.set_byte_data("abc");
  refused(short_data, "3 bytes for 4 elements");
  TensorProto untyped = Image(TensorProto::BYTE, {2, 2});
  untyped.clear_data_type();
  refused(untyped, "no data_type (protobuf's default FLOAT)");
  TensorProto deep = Image(TensorProto::BYTE, std::vector<int64_t>(9, 1));
  refused(deep, "more dims than the view holds");
  TensorProto negative = Image(TensorProto::BYTE, {2, 2});
  negative.set_dims(0, -2);
  negative.set_dims(1, -2);
  refused(negative, "negative dims");
  TensorProto huge = Image(TensorProto::BYTE, {0});
  huge.set_dims(0, std::numeric_limits<int64_t>::max());
  huge.add_dims(2);
  refused(huge, "dims whose product overflows");

  // Wire-level oddities: a duplicated data_type, an unknown field, a
  // truncated record, a 10-byte varint with bits past 64, trailing bytes.
  EXPECT_FALSE(Parses(plain.substr(0, plain.size() - 1), 2, views)) << "truncated";
  const std::string image_only = Record({Image(TensorProto::BYTE, {1})});
  EXPECT_FALSE(Parses(image_only + std::string("\x10\x03", 2), 1, views))
      << "a data_type outside any TensorProto";
  auto with_extra = [](const std::string& extra) {
    // TensorProto {dims: [1] (packed), data_type: BYTE, byte_data: "z"} + extra.
    const std::string tensor = std::string("\x0a\x01\x01\x10\x03\x2a\x01", 7) + "z" + extra;
    return std::string("\x0a") + static_cast<char>(tensor.size()) + tensor;
  };
  ASSERT_TRUE(Parses(with_extra(""), 1, views));
  EXPECT_FALSE(Parses(with_extra(std::string("\x10\x03", 2)), 1, views)) << "data_type twice";
  EXPECT_FALSE(Parses(with_extra(std::string("\x2a\x01y", 3)), 1, views)) << "byte_data twice";
  EXPECT_FALSE(Parses(with_extra(std::string("\xa0\x06\x01", 3)), 1, views)) << "unknown field";
  EXPECT_FALSE(Parses(with_extra(std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11)),
                      1, views))
      << "a varint with bits past 64";
}

TEST(TensorProtosRecordTest, TensorsOverTheByteLimitAreRefused) {
  const int64_t previous = SetMaxTensorBytes(100);
  RecordTensorView views[kMaxTensors];
  EXPECT_TRUE(Parses(Record({Image(TensorProto::BYTE, {10, 10})}), 1, views));
  EXPECT_FALSE(Parses(Record({Image(TensorProto::BYTE, {10, 11})}), 1, views));
  SetMaxTensorBytes(previous);
}

}  // namespace
}  // namespace doppio
