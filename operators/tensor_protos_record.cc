#include "operators/tensor_protos_record.h"

#include <cstring>
#include <limits>

#include "core/limits.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "float_data is copied as little-endian bytes");

namespace doppio {
namespace {

// Wire types and the field numbers of doppio.proto's TensorProtos and
// TensorProto this parser knows.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kProtosField = 1;
constexpr uint32_t kDimsField = 1;
constexpr uint32_t kDataTypeField = 2;
constexpr uint32_t kFloatDataField = 3;
constexpr uint32_t kInt32DataField = 4;
constexpr uint32_t kByteDataField = 5;
constexpr uint32_t kNameField = 7;

// TensorProto.DataType values on the wire.
constexpr uint64_t kWireFloat = 1;
constexpr uint64_t kWireInt32 = 2;
constexpr uint64_t kWireByte = 3;
constexpr uint64_t kWireUint8 = 6;

constexpr int kMaxVarintBytes = 10;

// A cursor over bytes; every read is bounds-checked and says false rather
// than guess.
class WireReader {
 public:
  WireReader(const char* begin, const char* end) : pos_(begin), end_(end) {}
  bool done() const { return pos_ == end_; }

  // Only canonical-length varints (the 10th byte, if any, holds bit 63
  // alone), so what is accepted here protobuf reads as the same value.
  bool Varint(uint64_t* value) {
    uint64_t result = 0;
    for (int i = 0; i < kMaxVarintBytes; ++i) {
      if (pos_ == end_) return false;
      const uint8_t byte = static_cast<uint8_t>(*pos_++);
      if (i == kMaxVarintBytes - 1 && byte > 1) return false;
      result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
      if ((byte & 0x80) == 0) {
        *value = result;
        return true;
      }
    }
    return false;
  }

  bool Tag(uint32_t* field, uint32_t* wire_type) {
    uint64_t tag;
    if (!Varint(&tag) || tag > std::numeric_limits<uint32_t>::max()) return false;
    *field = static_cast<uint32_t>(tag >> 3);
    *wire_type = static_cast<uint32_t>(tag & 7);
    return *field != 0;
  }

  bool Bytes(const char** data, size_t* size) {
    uint64_t length;
    if (!Varint(&length) || length > static_cast<uint64_t>(end_ - pos_)) return false;
    *data = pos_;
    *size = static_cast<size_t>(length);
    pos_ += length;
    return true;
  }

 private:
  const char* pos_;
  const char* end_;
};

// How many varints `size` bytes hold, each valid; false otherwise.
bool CountVarints(const char* data, size_t size, int64_t* count) {
  WireReader reader(data, data + size);
  int64_t n = 0;
  uint64_t ignored;
  while (!reader.done()) {
    if (!reader.Varint(&ignored)) return false;
    ++n;
  }
  *count = n;
  return true;
}

bool AppendDim(uint64_t value, RecordTensorView* view) {
  const int64_t dim = static_cast<int64_t>(value);
  if (dim < 0 || view->ndims == RecordTensorView::kMaxDims) return false;
  view->dims[view->ndims++] = dim;
  return true;
}

bool ParseTensor(const char* begin, const char* end, RecordTensorView* view) {
  *view = RecordTensorView();
  WireReader reader(begin, end);
  bool seen_type = false;
  bool seen_name = false;
  uint64_t wire_type_value = 0;
  uint32_t data_field = 0;
  while (!reader.done()) {
    uint32_t field, wire_type;
    if (!reader.Tag(&field, &wire_type)) return false;
    if (field == kDimsField && wire_type == kVarint) {
      uint64_t value;
      if (!reader.Varint(&value) || !AppendDim(value, view)) return false;
    } else if (field == kDimsField && wire_type == kLengthDelimited) {
      const char* packed;
      size_t size;
      if (!reader.Bytes(&packed, &size)) return false;
      WireReader dims(packed, packed + size);
      while (!dims.done()) {
        uint64_t value;
        if (!dims.Varint(&value) || !AppendDim(value, view)) return false;
      }
    } else if (field == kDataTypeField && wire_type == kVarint) {
      if (seen_type || !reader.Varint(&wire_type_value)) return false;
      seen_type = true;
    } else if ((field == kFloatDataField || field == kInt32DataField ||
                field == kByteDataField) &&
               wire_type == kLengthDelimited) {
      if (data_field != 0 || !reader.Bytes(&view->payload, &view->payload_bytes)) {
        return false;
      }
      data_field = field;
    } else if (field == kNameField && wire_type == kLengthDelimited) {
      const char* name;
      size_t size;
      if (seen_name || !reader.Bytes(&name, &size)) return false;
      seen_name = true;
    } else {
      return false;
    }
  }
  if (!seen_type) return false;

  uint32_t expected_field;
  switch (wire_type_value) {
    case kWireFloat:
      view->dtype = DataType::kFloat;
      expected_field = kFloatDataField;
      break;
    case kWireInt32:
      view->dtype = DataType::kInt32;
      expected_field = kInt32DataField;
      break;
    case kWireByte:
    case kWireUint8:
      view->dtype = DataType::kUint8;
      expected_field = kByteDataField;
      break;
    default:
      return false;
  }
  if (data_field != 0 && data_field != expected_field) return false;

  int64_t numel = 1;
  for (int i = 0; i < view->ndims; ++i) {
    if (view->dims[i] != 0 && numel > std::numeric_limits<int64_t>::max() / view->dims[i]) {
      return false;
    }
    numel *= view->dims[i];
  }
  const int64_t item_size = static_cast<int64_t>(ItemSize(view->dtype));
  if (numel > MaxTensorBytes() / item_size) return false;
  view->numel = numel;

  int64_t carried = 0;
  if (view->dtype == DataType::kInt32) {
    if (!CountVarints(view->payload, view->payload_bytes, &carried)) return false;
  } else {
    if (view->payload_bytes % item_size != 0) return false;
    carried = static_cast<int64_t>(view->payload_bytes) / item_size;
  }
  return carried == numel;
}

}  // namespace

bool ParseTensorProtosRecord(std::string_view record, int num_tensors, RecordTensorView* tensors,
                             int max_tensors) {
  if (num_tensors > max_tensors) return false;
  WireReader reader(record.data(), record.data() + record.size());
  int parsed = 0;
  while (!reader.done()) {
    uint32_t field, wire_type;
    const char* message;
    size_t size;
    if (!reader.Tag(&field, &wire_type) || field != kProtosField ||
        wire_type != kLengthDelimited || !reader.Bytes(&message, &size) ||
        parsed == num_tensors || !ParseTensor(message, message + size, &tensors[parsed])) {
      return false;
    }
    ++parsed;
  }
  return parsed == num_tensors;
}

void CopyRecordElements(const RecordTensorView& view, void* out) {
  if (view.numel == 0) return;
  if (view.dtype != DataType::kInt32) {
    std::memcpy(out, view.payload, view.payload_bytes);
    return;
  }
  // int32_data: protobuf keeps the low 32 bits of each varint.
  WireReader reader(view.payload, view.payload + view.payload_bytes);
  auto* values = static_cast<int32_t*>(out);
  for (int64_t i = 0; i < view.numel; ++i) {
    uint64_t value = 0;
    reader.Varint(&value);
    values[i] = static_cast<int32_t>(static_cast<uint32_t>(value));
  }
}

}  // namespace doppio
