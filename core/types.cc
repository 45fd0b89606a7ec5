#include "core/types.h"

#include <cstring>

namespace doppio {

float HalfToFloat(float16 h) {
  const uint32_t sign = (h.bits & 0x8000u) << 16;
  uint32_t exponent = (h.bits >> 10) & 0x1f;
  uint32_t mantissa = h.bits & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: renormalize into a float exponent
      exponent = 127 - 15 + 1;
      while (!(mantissa & 0x400u)) {
        mantissa <<= 1;
        --exponent;
      }
      mantissa &= 0x3ffu;
      bits = sign | (exponent << 23) | (mantissa << 13);
    }
  } else if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

float16 FloatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const int32_t exponent = static_cast<int32_t>((bits >> 23) & 0xff);
  uint32_t mantissa = bits & 0x7fffffu;
  float16 h;
  if (exponent == 0xff) {  // inf or nan (keep nan quiet)
    h.bits = sign | 0x7c00u | (mantissa ? 0x200u : 0u);
    return h;
  }
  const int32_t half_exponent = exponent - 127 + 15;
  if (half_exponent >= 0x1f) {
    h.bits = sign | 0x7c00u;
    return h;
  }
  if (half_exponent <= 0) {
    if (half_exponent < -10) {
      h.bits = sign;
      return h;
    }
    mantissa |= 0x800000u;
    const int shift = 14 - half_exponent;
    uint32_t value = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (value & 1u))) ++value;
    h.bits = sign | static_cast<uint16_t>(value);
    return h;
  }
  uint32_t value = (static_cast<uint32_t>(half_exponent) << 10) | (mantissa >> 13);
  const uint32_t remainder = mantissa & 0x1fffu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (value & 1u))) ++value;
  h.bits = sign | static_cast<uint16_t>(value);
  return h;
}

float BFloat16ToFloat(bfloat16 b) {
  const uint32_t bits = static_cast<uint32_t>(b.bits) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

bfloat16 FloatToBFloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  bfloat16 b;
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffffu)) {
    b.bits = static_cast<uint16_t>((bits >> 16) | 0x40u);  // a quiet NaN, sign kept
    return b;
  }
  // Round to nearest even on the 16 bits dropped; a carry into the exponent
  // is the correct rounding (up to infinity past the largest bfloat16).
  bits += 0x7fffu + ((bits >> 16) & 1u);
  b.bits = static_cast<uint16_t>(bits >> 16);
  return b;
}

size_t ItemSize(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat: return 4;
    case DataType::kDouble: return 8;
    case DataType::kFloat16: return 2;
    case DataType::kBFloat16:
      return 2;
    case DataType::kInt8: return 1;
    case DataType::kInt16: return 2;
    case DataType::kInt32: return 4;
    case DataType::kInt64: return 8;
    case DataType::kUint8:
    case DataType::kByte: return 1;
    case DataType::kUint16: return 2;
    case DataType::kUint32:
      return 4;
    case DataType::kUint64:
      return 8;
    case DataType::kBool: return sizeof(bool);
    case DataType::kString: return sizeof(std::string);
    default: return 0;
  }
}

const char* DataTypeName(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat: return "float32";
    case DataType::kDouble: return "float64";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kInt8: return "int8";
    case DataType::kInt16: return "int16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kUint8: return "uint8";
    case DataType::kByte: return "byte";
    case DataType::kUint16: return "uint16";
    case DataType::kUint32:
      return "uint32";
    case DataType::kUint64:
      return "uint64";
    case DataType::kBool: return "bool";
    case DataType::kString: return "str";
    default: return "undefined";
  }
}

bool IsStorableType(DataType dtype) {
  return dtype != DataType::kUndefined && dtype != DataType::kByte &&
         ItemSize(dtype) != 0;
}

}  // namespace doppio
