// Checkpoints Doppio writes stay readable by Caffe2: every record of a Save
// parses with Caffe2's BlobProto/TensorProto schema -- written out here from
// caffe2.proto's field numbers, independently of proto/doppio.proto -- with
// the checksum as its only unknown field, and the known fields are exactly
// the blob Caffe2 itself would have written.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/workspace.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

namespace pb = google::protobuf;
using testing::IntArg;
using testing::MakeOp;
using testing::ParseMiniDBRecords;
using testing::ReadBytes;
using testing::StringArg;
using testing::TempDir;

// Caffe2's caffe2.proto, as far as checkpoints use it (enums as int32 and
// nested device options as bytes: the same wire format).
constexpr const char* kCaffe2Schema = R"pb(
  name: "caffe2_subset.proto"
  package: "caffe2"
  syntax: "proto2"
  message_type {
    name: "TensorProto"
    field { name: "dims" number: 1 label: LABEL_REPEATED type: TYPE_INT64 }
    field { name: "data_type" number: 2 label: LABEL_OPTIONAL type: TYPE_INT32 }
    field { name: "float_data" number: 3 label: LABEL_REPEATED type: TYPE_FLOAT
            options { packed: true } }
    field { name: "int32_data" number: 4 label: LABEL_REPEATED type: TYPE_INT32
            options { packed: true } }
    field { name: "byte_data" number: 5 label: LABEL_OPTIONAL type: TYPE_BYTES }
    field { name: "string_data" number: 6 label: LABEL_REPEATED type: TYPE_BYTES }
    field { name: "name" number: 7 label: LABEL_OPTIONAL type: TYPE_STRING }
    field { name: "device_detail" number: 8 label: LABEL_OPTIONAL type: TYPE_BYTES }
    field { name: "double_data" number: 9 label: LABEL_REPEATED type: TYPE_DOUBLE
            options { packed: true } }
    field { name: "int64_data" number: 10 label: LABEL_REPEATED type: TYPE_INT64
            options { packed: true } }
    field { name: "segment" number: 11 label: LABEL_OPTIONAL type: TYPE_MESSAGE
            type_name: ".caffe2.TensorProto.Segment" }
    nested_type {
      name: "Segment"
      field { name: "begin" number: 1 label: LABEL_REQUIRED type: TYPE_INT64 }
      field { name: "end" number: 2 label: LABEL_REQUIRED type: TYPE_INT64 }
    }
  }
  message_type {
    name: "BlobProto"
    field { name: "name" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
    field { name: "type" number: 2 label: LABEL_OPTIONAL type: TYPE_STRING }
    field { name: "tensor" number: 3 label: LABEL_OPTIONAL type: TYPE_MESSAGE
            type_name: ".caffe2.TensorProto" }
    field { name: "content" number: 4 label: LABEL_OPTIONAL type: TYPE_BYTES }
    field { name: "qtensor" number: 5 label: LABEL_OPTIONAL type: TYPE_BYTES }
    field { name: "content_num_chunks" number: 6 label: LABEL_OPTIONAL type: TYPE_INT32 }
    field { name: "content_chunk_id" number: 7 label: LABEL_OPTIONAL type: TYPE_INT32 }
  }
)pb";

TEST(CheckpointWireTest, Caffe2sSchemaReadsEveryRecordOfASave) {
  pb::FileDescriptorProto file;
  ASSERT_TRUE(pb::TextFormat::ParseFromString(kCaffe2Schema, &file));
  pb::DescriptorPool pool;
  const pb::FileDescriptor* schema = pool.BuildFile(file);
  ASSERT_NE(schema, nullptr);
  const pb::Descriptor* blob_type = schema->FindMessageTypeByName("BlobProto");
  pb::DynamicMessageFactory factory(&pool);

  Workspace ws;
  Tensor* weights = ws.CreateBlob("gpu_0/fc_w")->GetMutableTensor();
  weights->Resize({5, 3});
  for (int i = 0; i < 15; ++i) weights->mutable_data<float>()[i] = 0.125f * i - 1.0f;
  Tensor* iteration = ws.CreateBlob("optimizer_iteration")->GetMutableTensor();
  iteration->Resize({1});
  iteration->mutable_data<int64_t>()[0] = 1234;
  const std::string path = TempDir("checkpoint_wire") + "/checkpoint.minidb";
  // chunk_size 4 splits the weights into segments, as Caffe2 does.
  ws.RunOperatorOnce(MakeOp("Save", {"gpu_0/fc_w", "optimizer_iteration"}, {},
                            {StringArg("db", path), StringArg("db_type", "minidb"),
                             IntArg("absolute_path", 1), IntArg("chunk_size", 4)}));

  const auto records = ParseMiniDBRecords(ReadBytes(path));
  ASSERT_EQ(records.size(), 5u);  // four chunks of fc_w, one of the iteration
  int fc_w_floats = 0;
  for (const auto& record : records) {
    SCOPED_TRACE(record.first);
    std::unique_ptr<pb::Message> blob(factory.GetPrototype(blob_type)->New());
    ASSERT_TRUE(blob->ParseFromString(record.second));
    const pb::Reflection* reflection = blob->GetReflection();
    const pb::UnknownFieldSet& unknown = reflection->GetUnknownFields(*blob);
    ASSERT_EQ(unknown.field_count(), 1) << "only the checksum is unknown to Caffe2";
    EXPECT_EQ(unknown.field(0).number(), 2001);
    EXPECT_EQ(unknown.field(0).type(), pb::UnknownField::TYPE_FIXED32);

    // Without it, the record is what Caffe2 writes: its known fields, in
    // field order, and nothing else.
    reflection->MutableUnknownFields(blob.get())->Clear();
    EXPECT_EQ(blob->SerializeAsString(), record.second.substr(6));
    EXPECT_EQ(reflection->GetString(*blob, blob_type->FindFieldByName("type")), "Tensor");
    const pb::Message& tensor =
        reflection->GetMessage(*blob, blob_type->FindFieldByName("tensor"));
    const pb::Descriptor* tensor_type = tensor.GetDescriptor();
    const pb::Reflection* tensor_reflection = tensor.GetReflection();
    const std::string name =
        reflection->GetString(*blob, blob_type->FindFieldByName("name"));
    if (name == "gpu_0/fc_w") {
      EXPECT_EQ(tensor_reflection->GetInt32(tensor, tensor_type->FindFieldByName("data_type")),
                1);  // FLOAT
      const pb::FieldDescriptor* floats = tensor_type->FindFieldByName("float_data");
      const pb::Message& segment =
          tensor_reflection->GetMessage(tensor, tensor_type->FindFieldByName("segment"));
      const int64_t begin = segment.GetReflection()->GetInt64(
          segment, segment.GetDescriptor()->FindFieldByName("begin"));
      for (int i = 0; i < tensor_reflection->FieldSize(tensor, floats); ++i) {
        EXPECT_EQ(tensor_reflection->GetRepeatedFloat(tensor, floats, i),
                  0.125f * static_cast<float>(begin + i) - 1.0f);
        ++fc_w_floats;
      }
    } else {
      EXPECT_EQ(name, "optimizer_iteration");
      const pb::FieldDescriptor* int64s = tensor_type->FindFieldByName("int64_data");
      ASSERT_EQ(tensor_reflection->FieldSize(tensor, int64s), 1);
      EXPECT_EQ(tensor_reflection->GetRepeatedInt64(tensor, int64s, 0), 1234);
    }
  }
  EXPECT_EQ(fc_w_floats, 15);
}

}  // namespace
}  // namespace doppio
