// The C++ side of the Caffe2 wire-compatibility check: each shared vector
// (made by Caffe2's schema, an independent reference) parses with the
// generated C++ classes without unknown fields, serializes back to the same
// bytes, and its text form parses to the same message.
#include <string>

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "proto/doppio.pb.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

// The bytes of the shared vector `name`.
std::string ReadVector(const std::string& name) {
  return testing::ReadBytes(testing::VectorPath(name));
}

template <typename Message>
void ExpectRoundTrip(const std::string& name) {
  SCOPED_TRACE(name);
  const std::string binary = ReadVector(name + ".pb");
  ASSERT_FALSE(binary.empty());
  Message message;
  ASSERT_TRUE(message.ParseFromString(binary));
  EXPECT_EQ(message.GetReflection()->GetUnknownFields(message).field_count(), 0);
  std::string reserialized;
  ASSERT_TRUE(message.SerializeToString(&reserialized));
  EXPECT_EQ(reserialized, binary);

  Message from_text;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      ReadVector(name + ".pbtxt"), &from_text));
  std::string text_bytes;
  ASSERT_TRUE(from_text.SerializeToString(&text_bytes));
  EXPECT_EQ(text_bytes, binary);
}

TEST(WireTest, NetDef) { ExpectRoundTrip<NetDef>("netdef"); }
TEST(WireTest, PlanDef) { ExpectRoundTrip<PlanDef>("plandef"); }
TEST(WireTest, TensorProtos) { ExpectRoundTrip<TensorProtos>("tensorprotos"); }
TEST(WireTest, TensorShapes) { ExpectRoundTrip<TensorShapes>("tensorshapes"); }
TEST(WireTest, QTensorProto) { ExpectRoundTrip<QTensorProto>("qtensorproto"); }
TEST(WireTest, BlobProtoTensor) { ExpectRoundTrip<BlobProto>("blobproto_tensor"); }
TEST(WireTest, BlobProtoDBReader) { ExpectRoundTrip<BlobProto>("blobproto_dbreader"); }

TEST(WireTest, CaffeFieldNamesSurviveText) {
  NetDef net;
  ASSERT_TRUE(net.ParseFromString(ReadVector("netdef.pb")));
  // Spot checks of fields whose names Caffe2 later changed or deprecated.
  EXPECT_EQ(net.device_option().cuda_gpu_id(), 0);
  EXPECT_EQ(net.device_option().numa_node_id(), 1);
  EXPECT_EQ(net.num_workers(), 8);
  EXPECT_EQ(net.op(0).engine(), "CUDNN");
  EXPECT_EQ(net.op(0).arg(3).ints(3), 1099511627776LL);
}

}  // namespace
}  // namespace doppio
