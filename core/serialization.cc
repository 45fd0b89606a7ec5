// Tensors to and from TensorProto. Blob-level serialization, chunking and the
// registries are in serialization_blob.cc.
#include "core/serialization.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/limits.h"
#include "core/serialization_internal.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "byte_data holds little-endian elements; a big-endian host "
              "would need byte swapping here");

namespace doppio {
namespace {

template <typename T>
constexpr bool kNarrowType = std::is_same<T, bool>::value || std::is_same<T, int8_t>::value ||
                             std::is_same<T, int16_t>::value || std::is_same<T, uint8_t>::value ||
                             std::is_same<T, uint16_t>::value || std::is_same<T, float16>::value ||
                             std::is_same<T, bfloat16>::value;

// data_type as written. proto2 files unknown enum values among the unknown
// fields and reports the default, so a value from a newer or corrupt writer
// would otherwise silently read as FLOAT.
int64_t DataTypeOnWire(const TensorProto& proto) {
  if (proto.has_data_type()) return proto.data_type();
  const auto& unknown = proto.GetReflection()->GetUnknownFields(proto);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const auto& field = unknown.field(i);
    if (field.number() == TensorProto::kDataTypeFieldNumber &&
        field.type() == google::protobuf::UnknownField::TYPE_VARINT) {
      return static_cast<int64_t>(field.varint());
    }
  }
  return TensorProto::FLOAT;
}

// How many elements the proto's data field for T holds.
template <typename T>
int64_t ElementsOnWire(const TensorProto& proto, DataType wire_type,
                       const std::string& label) {
  if (wire_type == DataType::kByte) return static_cast<int64_t>(proto.byte_data().size());
  if constexpr (kNarrowType<T>) {
    // Newer Caffe2 may pack the narrow types as raw bytes instead of int32s.
    if (proto.has_byte_data()) {
      const size_t bytes = proto.byte_data().size();
      DOPPIO_ENFORCE(bytes % sizeof(T) == 0, "tensor ", label, " has ", bytes,
                     " bytes of byte_data, not a whole number of ",
                     DataTypeName(DataTypeFor<T>()), " elements");
      return static_cast<int64_t>(bytes / sizeof(T));
    }
    return proto.int32_data_size();
  } else if constexpr (std::is_same<T, float>::value) {
    return proto.float_data_size();
  } else if constexpr (std::is_same<T, double>::value) {
    return proto.double_data_size();
  } else if constexpr (std::is_same<T, int64_t>::value || std::is_same<T, uint32_t>::value ||
                       std::is_same<T, uint64_t>::value) {
    return proto.int64_data_size();
  } else if constexpr (std::is_same<T, std::string>::value) {
    return proto.string_data_size();
  } else {
    static_assert(std::is_same<T, int32_t>::value, "unhandled element type");
    return proto.int32_data_size();
  }
}

template <typename T>
void ReadElements(const TensorProto& proto, DataType wire_type, int64_t count,
                  T* out, const std::string& label) {
  if (count == 0) return;
  if constexpr (kNarrowType<T>) {
    if (wire_type == DataType::kByte || proto.has_byte_data()) {
      const char* bytes = proto.byte_data().data();
      if constexpr (std::is_same<T, bool>::value) {
        // Any byte but 0 is true; copying it raw would make an invalid bool.
        for (int64_t i = 0; i < count; ++i) out[i] = bytes[i] != 0;
      } else {
        std::memcpy(out, bytes, static_cast<size_t>(count) * sizeof(T));
      }
      return;
    }
  }
  if constexpr (std::is_same<T, float>::value) {
    std::copy(proto.float_data().begin(), proto.float_data().begin() + count, out);
  } else if constexpr (std::is_same<T, double>::value) {
    std::copy(proto.double_data().begin(), proto.double_data().begin() + count, out);
  } else if constexpr (std::is_same<T, int64_t>::value) {
    std::copy(proto.int64_data().begin(), proto.int64_data().begin() + count, out);
  } else if constexpr (std::is_same<T, uint64_t>::value) {
    // Its two's-complement bits.
    for (int64_t i = 0; i < count; ++i) {
      out[i] = static_cast<uint64_t>(proto.int64_data(static_cast<int>(i)));
    }
  } else if constexpr (std::is_same<T, uint32_t>::value) {
    for (int64_t i = 0; i < count; ++i) {
      const int64_t value = proto.int64_data(static_cast<int>(i));
      DOPPIO_ENFORCE(value >= 0 && value <= 0xffffffffLL, "tensor ", label, ": int64_data[", i,
                     "] = ", value, " does not fit uint32");
      out[i] = static_cast<uint32_t>(value);
    }
  } else if constexpr (std::is_same<T, std::string>::value) {
    for (int64_t i = 0; i < count; ++i) out[i] = proto.string_data(static_cast<int>(i));
  } else if constexpr (std::is_same<T, bool>::value) {
    for (int64_t i = 0; i < count; ++i) out[i] = proto.int32_data(static_cast<int>(i)) != 0;
  } else if constexpr (std::is_same<T, float16>::value || std::is_same<T, bfloat16>::value) {
    for (int64_t i = 0; i < count; ++i) {
      const int32_t bits = proto.int32_data(static_cast<int>(i));
      DOPPIO_ENFORCE(bits >= 0 && bits <= 0xffff, "tensor ", label, ": int32_data[", i,
                     "] = ", bits, " is not a ", DataTypeName(DataTypeFor<T>()), " bit pattern");
      out[i].bits = static_cast<uint16_t>(bits);
    }
  } else {
    for (int64_t i = 0; i < count; ++i) {
      const int32_t value = proto.int32_data(static_cast<int>(i));
      DOPPIO_ENFORCE(value >= std::numeric_limits<T>::min() &&
                         value <= std::numeric_limits<T>::max(),
                     "tensor ", label, ": int32_data[", i, "] = ", value, " does not fit ",
                     DataTypeName(DataTypeFor<T>()));
      out[i] = static_cast<T>(value);
    }
  }
}

template <typename T>
void WriteElements(const T* values, int64_t count, TensorProto* proto) {
  if constexpr (std::is_same<T, float>::value) {
    proto->mutable_float_data()->Add(values, values + count);
  } else if constexpr (std::is_same<T, double>::value) {
    proto->mutable_double_data()->Add(values, values + count);
  } else if constexpr (std::is_same<T, int64_t>::value) {
    proto->mutable_int64_data()->Add(values, values + count);
  } else if constexpr (std::is_same<T, uint32_t>::value || std::is_same<T, uint64_t>::value) {
    auto* field = proto->mutable_int64_data();
    field->Reserve(static_cast<int>(count));
    for (int64_t i = 0; i < count; ++i) field->AddAlreadyReserved(static_cast<int64_t>(values[i]));
  } else if constexpr (std::is_same<T, std::string>::value) {
    auto* field = proto->mutable_string_data();
    field->Reserve(static_cast<int>(count));
    for (int64_t i = 0; i < count; ++i) *field->Add() = values[i];
  } else {
    // int32, the narrow integers, bool and float16 (as its bit pattern):
    // Caffe2's int32_data convention.
    auto* field = proto->mutable_int32_data();
    field->Reserve(static_cast<int>(count));
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (std::is_same<T, float16>::value || std::is_same<T, bfloat16>::value) {
        field->AddAlreadyReserved(static_cast<int32_t>(values[i].bits));
      } else {
        field->AddAlreadyReserved(static_cast<int32_t>(values[i]));
      }
    }
  }
}

// Caffe2's std::string blobs (what FeedBlob makes of a Python str or
// bytes; predictor exports keep their MetaNetDef in one): BlobProto type
// "std::string" with the bytes in `content`, never chunked, as Caffe2
// writes them.
constexpr const char* kStringBlobType = "std::string";

class StringSerializer final : public BlobSerializerBase {
 public:
  void Serialize(const Blob& blob, const std::string& name, const SerializationAcceptor& acceptor,
                 int64_t /*chunk_size*/) override {
    BlobProto proto;
    proto.set_name(name);
    proto.set_type(kStringBlobType);
    proto.set_content(blob.Get<std::string>());
    acceptor(name, proto.SerializeAsString());
  }
};

class StringDeserializer final : public BlobDeserializerBase {
 public:
  void Deserialize(const BlobProto& proto, Blob* blob) override {
    blob->Reset(std::make_unique<std::string>(proto.content()));
  }
};

BlobSerializerRegisterer g_string_serializer(std::type_index(typeid(std::string)),
                                             [] { return std::make_unique<StringSerializer>(); });
BlobDeserializerRegisterer g_string_deserializer(kStringBlobType, [] {
  return std::make_unique<StringDeserializer>();
});

}  // namespace

namespace serialization_internal {

std::string TensorLabel(const TensorProto& proto) {
  return proto.name().empty() ? std::string("(unnamed)") : "'" + proto.name() + "'";
}

TensorLayout ValidateTensorProto(const TensorProto& proto) {
  const std::string label = TensorLabel(proto);
  TensorLayout layout;
  const int64_t wire_value = DataTypeOnWire(proto);
  DOPPIO_ENFORCE(TensorProto::DataType_IsValid(static_cast<int>(wire_value)) &&
                     wire_value == static_cast<int>(wire_value),
                 "tensor ", label, " has unknown data_type ", wire_value,
                 " (known: FLOAT=1, INT32=2, BYTE=3, STRING=4, BOOL=5, UINT8=6, "
                 "INT8=7, UINT16=8, INT16=9, INT64=10, FLOAT16=12, DOUBLE=13)");
  layout.wire_type = static_cast<DataType>(wire_value);
  layout.dtype = layout.wire_type == DataType::kByte ? DataType::kUint8 : layout.wire_type;

  layout.dims.assign(proto.dims().begin(), proto.dims().end());
  for (size_t i = 0; i < layout.dims.size(); ++i) {
    DOPPIO_ENFORCE(layout.dims[i] >= 0, "tensor ", label, " has negative dimension ",
                   layout.dims[i], " at index ", i, " in dims ", layout.dims);
  }
  try {
    layout.numel = CheckedNumElements(layout.dims);
  } catch (Error& error) {
    error.AppendContext("in the dims of tensor " + label);
    throw;
  }
  // The whole tensor is allocated even for one segment, so the cap applies
  // to the dims, not to the data this proto carries.
  EnforceTensorBytesLimit(layout.numel, layout.dtype, "tensor " + label);

  layout.begin = 0;
  layout.end = layout.numel;
  if (proto.has_segment()) {
    layout.begin = proto.segment().begin();
    layout.end = proto.segment().end();
    DOPPIO_ENFORCE(0 <= layout.begin && layout.begin <= layout.end &&
                       layout.end <= layout.numel,
                   "tensor ", label, " has segment [", layout.begin, ", ", layout.end,
                   ") outside its ", layout.numel, " elements (dims ", layout.dims, ")");
  }

  if (layout.dtype == DataType::kUndefined) {
    // Caffe2 writes never-typed empty tensors as UNDEFINED; they load as
    // empty float tensors, as in Caffe2. Anything with elements is corrupt.
    DOPPIO_ENFORCE(layout.numel == 0, "tensor ", label, " has data_type UNDEFINED but ",
                   layout.numel, " elements");
    layout.dtype = DataType::kFloat;
    return layout;
  }

  const int64_t expected = layout.end - layout.begin;
  const int64_t present = DispatchDataType(layout.wire_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return ElementsOnWire<T>(proto, layout.wire_type, label);
  });
  DOPPIO_ENFORCE(present == expected, "tensor ", label, " of ", DataTypeName(layout.dtype),
                 " dims ", layout.dims,
                 proto.has_segment() ? MakeString(" segment [", layout.begin, ", ",
                                                  layout.end, ")")
                                     : std::string(),
                 " should carry ", expected, " elements but carries ", present);
  return layout;
}

void FillFromProto(const TensorProto& proto, const TensorLayout& layout,
                   Tensor* tensor) {
  const int64_t count = layout.end - layout.begin;
  if (count == 0) return;
  void* data = tensor->raw_mutable_data(layout.dtype);
  const std::string label = TensorLabel(proto);
  DispatchDataType(layout.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    ReadElements<T>(proto, layout.wire_type, count, static_cast<T*>(data) + layout.begin,
                    label);
  });
}

}  // namespace serialization_internal

void SerializeTensor(const Tensor& tensor, const std::string& name,
                     TensorProto* proto, int64_t begin, int64_t end) {
  DOPPIO_ENFORCE(proto != nullptr, "SerializeTensor needs a proto to fill");
  const bool is_segment = begin != 0 || end >= 0;
  if (end < 0) end = tensor.numel();
  DOPPIO_ENFORCE(tensor.dtype() != DataType::kUndefined, "tensor '", name,
                 "' has no data type (it was never written), so it cannot be "
                 "serialized");
  DOPPIO_ENFORCE(tensor.device().kind == DeviceKind::kCPU, "tensor '", name,
                 "' lives on a non-CPU device; copy it to the host before "
                 "serializing it");
  DOPPIO_ENFORCE(0 <= begin && begin <= end && end <= tensor.numel(), "elements [",
                 begin, ", ", end, ") are outside tensor '", name, "' ",
                 tensor.DebugString());
  // A repeated field holds at most INT_MAX elements; chunking keeps far below.
  DOPPIO_ENFORCE(end - begin <= INT_MAX, "tensor '", name, "': ", end - begin,
                 " elements do not fit one TensorProto; save it in chunks");

  proto->Clear();
  for (int64_t dim : tensor.dims()) proto->add_dims(dim);
  proto->set_data_type(static_cast<TensorProto::DataType>(tensor.dtype()));
  if (end > begin) {
    const void* data = tensor.raw_data();
    DispatchDataType(tensor.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      WriteElements<T>(static_cast<const T*>(data) + begin, end - begin, proto);
    });
  }
  proto->set_name(name);
  if (is_segment) {
    proto->mutable_segment()->set_begin(begin);
    proto->mutable_segment()->set_end(end);
  }
}

void DeserializeTensor(const TensorProto& proto, Tensor* tensor) {
  DOPPIO_ENFORCE(tensor != nullptr, "DeserializeTensor needs a tensor to fill");
  DOPPIO_ENFORCE(tensor->device().kind == DeviceKind::kCPU,
                 "tensor ", serialization_internal::TensorLabel(proto),
                 " can only be deserialized into a host tensor");
  const serialization_internal::TensorLayout layout =
      serialization_internal::ValidateTensorProto(proto);
  // Resize keeps the storage when shape and dtype match, which is how the
  // chunks of one tensor accumulate. The other elements are deliberately not
  // cleared: touching memory for a segment's whole tensor would let a tiny
  // hostile proto claiming huge dims exhaust memory.
  tensor->Resize(layout.dims);
  tensor->raw_mutable_data(layout.dtype);
  serialization_internal::FillFromProto(proto, layout, tensor);
}

}  // namespace doppio
