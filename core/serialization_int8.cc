// Int8TensorCPU blobs in Caffe2's format: BlobProto type "Int8TensorCPU"
// with a QTensorProto (scale, zero point in `bias`, precision 8, unsigned,
// the integers in `data`, data_type UINT8 or INT32). Loading validates the
// proto before allocating, like tensors: dims, the byte limit, one value per
// element, values in range for the data type and a finite positive scale.
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <typeindex>
#include <vector>

#include "core/limits.h"
#include "core/serialization.h"
#include "core/tensor_int8.h"

namespace doppio {
namespace {

constexpr const char* kInt8TensorBlobType = "Int8TensorCPU";

class Int8TensorSerializer final : public BlobSerializerBase {
 public:
  void Serialize(const Blob& blob, const std::string& name, const SerializationAcceptor& acceptor,
                 int64_t /*chunk_size*/) override {
    const auto& tensor = blob.Get<int8::Int8TensorCPU>();
    BlobProto blob_proto;
    blob_proto.set_name(name);
    blob_proto.set_type(kInt8TensorBlobType);
    QTensorProto& proto = *blob_proto.mutable_qtensor();
    proto.set_name(name);
    for (int64_t d : tensor.t.dims()) proto.add_dims(d);
    proto.set_precision(8);
    proto.set_scale(tensor.scale);
    proto.set_bias(tensor.zero_point);
    proto.set_is_signed(false);
    const int64_t n = tensor.t.numel();
    proto.mutable_data()->Reserve(static_cast<int>(n));
    if (tensor.t.dtype() == DataType::kUint8) {
      proto.set_data_type(TensorProto::UINT8);
      const uint8_t* data = n > 0 ? tensor.t.data<uint8_t>() : nullptr;
      for (int64_t i = 0; i < n; ++i) proto.add_data(data[i]);
    } else {
      DOPPIO_ENFORCE(tensor.t.dtype() == DataType::kInt32, "Int8TensorCPU blob '", name, "' holds ",
                     DataTypeName(tensor.t.dtype()),
                     " data; only uint8 and int32 serialize (as in Caffe2)");
      proto.set_data_type(TensorProto::INT32);
      const int32_t* data = n > 0 ? tensor.t.data<int32_t>() : nullptr;
      for (int64_t i = 0; i < n; ++i) proto.add_data(data[i]);
    }
    acceptor(name, blob_proto.SerializeAsString());
  }
};

class Int8TensorDeserializer final : public BlobDeserializerBase {
 public:
  void Deserialize(const BlobProto& blob_proto, Blob* blob) override {
    const std::string label = "Int8TensorCPU blob '" + blob_proto.name() + "'";
    DOPPIO_ENFORCE(blob_proto.has_qtensor(), label, " carries no qtensor");
    const QTensorProto& proto = blob_proto.qtensor();
    DOPPIO_ENFORCE(!proto.is_multiparam() && proto.scales_size() <= 1, label,
                   " has per-channel quantization (", proto.scales_size(),
                   " scales), which Int8TensorCPU does not hold");
    DOPPIO_ENFORCE(std::isfinite(proto.scale()) && proto.scale() > 0, label, " has scale ",
                   proto.scale(), "; it must be finite and positive");
    DOPPIO_ENFORCE(proto.bias() == std::floor(proto.bias()) && std::fabs(proto.bias()) < 1e9, label,
                   " has zero point (bias) ", proto.bias(), ", not an integer");
    const std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
    int64_t numel = 0;
    try {
      numel = CheckedNumElements(dims);
    } catch (Error& error) {
      error.AppendContext("while loading " + label);
      throw;
    }
    const bool bytes = proto.data_type() == TensorProto::UINT8;
    DOPPIO_ENFORCE(bytes || proto.data_type() == TensorProto::INT32, label, " has data_type ",
                   TensorProto::DataType_Name(proto.data_type()),
                   "; Int8TensorCPU holds UINT8 or INT32");
    const DataType dtype = bytes ? DataType::kUint8 : DataType::kInt32;
    EnforceTensorBytesLimit(numel, dtype, label);
    DOPPIO_ENFORCE_EQ(static_cast<int64_t>(proto.data_size()), numel, label, " of shape ", dims,
                      " has ", proto.data_size(), " values");
    if (bytes) {
      for (int i = 0; i < proto.data_size(); ++i) {
        DOPPIO_ENFORCE(proto.data(i) >= 0 && proto.data(i) <= 255, label, " has value ",
                       proto.data(i), " at ", i, ", outside uint8's range");
      }
    }
    auto tensor = std::make_unique<int8::Int8TensorCPU>();
    tensor->scale = static_cast<float>(proto.scale());
    tensor->zero_point = static_cast<int32_t>(proto.bias());
    tensor->t.Resize(dims);
    if (bytes) {
      uint8_t* out = tensor->t.mutable_data<uint8_t>();
      for (int64_t i = 0; i < numel; ++i) out[i] = static_cast<uint8_t>(proto.data(i));
    } else {
      int32_t* out = tensor->t.mutable_data<int32_t>();
      for (int64_t i = 0; i < numel; ++i) out[i] = proto.data(i);
    }
    blob->Reset(std::move(tensor));
  }
};

BlobSerializerRegisterer g_int8_serializer(std::type_index(typeid(int8::Int8TensorCPU)),
                                           [] { return std::make_unique<Int8TensorSerializer>(); });
BlobDeserializerRegisterer g_int8_deserializer(kInt8TensorBlobType, [] {
  return std::make_unique<Int8TensorDeserializer>();
});

}  // namespace
}  // namespace doppio
