// Implementation of DispatchDataType (kept apart so types.h reads as an API).
#pragma once

#include "core/enforce.h"

namespace doppio {

template <typename Fn>
decltype(auto) DispatchDataType(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::kFloat: return fn(TypeTag<float>{});
    case DataType::kDouble: return fn(TypeTag<double>{});
    case DataType::kFloat16: return fn(TypeTag<float16>{});
    case DataType::kBFloat16:
      return fn(TypeTag<bfloat16>{});
    case DataType::kInt8: return fn(TypeTag<int8_t>{});
    case DataType::kInt16: return fn(TypeTag<int16_t>{});
    case DataType::kInt32: return fn(TypeTag<int32_t>{});
    case DataType::kInt64: return fn(TypeTag<int64_t>{});
    case DataType::kUint8:
    case DataType::kByte: return fn(TypeTag<uint8_t>{});
    case DataType::kUint16: return fn(TypeTag<uint16_t>{});
    case DataType::kUint32:
      return fn(TypeTag<uint32_t>{});
    case DataType::kUint64:
      return fn(TypeTag<uint64_t>{});
    case DataType::kBool: return fn(TypeTag<bool>{});
    case DataType::kString: return fn(TypeTag<std::string>{});
    default: break;
  }
  DOPPIO_THROW("unsupported data type ", static_cast<int>(dtype));
}

}  // namespace doppio
