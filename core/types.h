// Element types of tensors. The enum values are TensorProto::DataType's, so a
// dtype converts to and from the wire without a table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace doppio {

enum class DataType : int {
  kUndefined = 0,
  kFloat = 1,
  kInt32 = 2,
  kByte = 3,  // wire-only: loads as kUint8
  kString = 4,
  kBool = 5,
  kUint8 = 6,
  kInt8 = 7,
  kUint16 = 8,
  kInt16 = 9,
  kInt64 = 10,
  kFloat16 = 12,
  kDouble = 13,
  kBFloat16 = 16,
  kUint32 = 17,
  kUint64 = 18,
};

// IEEE half precision stored as its bit pattern; arithmetic converts to float.
struct float16 {
  uint16_t bits = 0;
};
float HalfToFloat(float16 h);
float16 FloatToHalf(float f);

// bfloat16 (float32's sign, exponent and top 7 mantissa bits) stored as its
// bit pattern. Widening is exact; narrowing rounds to nearest, ties to even
// (as PyTorch and ONNX since 1.14), and keeps NaN a NaN.
struct bfloat16 {
  uint16_t bits = 0;
};
float BFloat16ToFloat(bfloat16 b);
bfloat16 FloatToBFloat16(float f);

// The same conversions for n elements at once, with the scalar ones' results
// bit for bit; AVX2 and F16C where the CPU has them (core/types_convert.cc).
// `src` and `dst` do not overlap.
void HalfToFloat(const float16* src, float* dst, int64_t n);
void FloatToHalf(const float* src, float16* dst, int64_t n);
void BFloat16ToFloat(const bfloat16* src, float* dst, int64_t n);
void FloatToBFloat16(const float* src, bfloat16* dst, int64_t n);

// A float16 or bfloat16 value as the float it stands for; any other
// arithmetic value as it is: for kernels templated over element types.
inline float Widened(float16 value) { return HalfToFloat(value); }
inline float Widened(bfloat16 value) { return BFloat16ToFloat(value); }
template <typename T>
T Widened(T value) {
  return value;
}
// `value` as a T: rounded to nearest even for float16 and bfloat16, as
// static_cast for other types.
template <typename T, typename U>
T Narrowed(U value) {
  if constexpr (std::is_same_v<T, float16>) {
    return FloatToHalf(static_cast<float>(value));
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return FloatToBFloat16(static_cast<float>(value));
  } else {
    return static_cast<T>(value);
  }
}

// Bytes per element; std::string for kString.
size_t ItemSize(DataType dtype);
// numpy's names: "float32", "int64", "bool", "str" ...
const char* DataTypeName(DataType dtype);
// True for the enum values a tensor can hold (not kUndefined or kByte).
bool IsStorableType(DataType dtype);

template <typename T>
struct DataTypeOf;
#define DOPPIO_DECLARE_DTYPE_(T, value) \
  template <>                           \
  struct DataTypeOf<T> {                \
    static constexpr DataType kValue = value; \
  }
DOPPIO_DECLARE_DTYPE_(float, DataType::kFloat);
DOPPIO_DECLARE_DTYPE_(double, DataType::kDouble);
DOPPIO_DECLARE_DTYPE_(float16, DataType::kFloat16);
DOPPIO_DECLARE_DTYPE_(bfloat16, DataType::kBFloat16);
DOPPIO_DECLARE_DTYPE_(int8_t, DataType::kInt8);
DOPPIO_DECLARE_DTYPE_(int16_t, DataType::kInt16);
DOPPIO_DECLARE_DTYPE_(int32_t, DataType::kInt32);
DOPPIO_DECLARE_DTYPE_(int64_t, DataType::kInt64);
DOPPIO_DECLARE_DTYPE_(uint8_t, DataType::kUint8);
DOPPIO_DECLARE_DTYPE_(uint16_t, DataType::kUint16);
DOPPIO_DECLARE_DTYPE_(uint32_t, DataType::kUint32);
DOPPIO_DECLARE_DTYPE_(uint64_t, DataType::kUint64);
DOPPIO_DECLARE_DTYPE_(bool, DataType::kBool);
DOPPIO_DECLARE_DTYPE_(std::string, DataType::kString);
#undef DOPPIO_DECLARE_DTYPE_

template <typename T>
constexpr DataType DataTypeFor() {
  return DataTypeOf<T>::kValue;
}

// A value that carries a type, for C++17 generic lambdas:
//   DispatchDataType(dtype, [&](auto tag) { using T = typename decltype(tag)::type; ... });
template <typename T>
struct TypeTag {
  using type = T;
};

// Calls fn(TypeTag<T>{}) with the C++ type of `dtype`; used by ops and
// serializers that handle every dtype with one template.
template <typename Fn>
decltype(auto) DispatchDataType(DataType dtype, Fn&& fn);

}  // namespace doppio

#include "core/types_dispatch.h"
