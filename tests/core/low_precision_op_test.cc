// The element conversions of core/low_precision_op.h (vectorized where the
// CPU allows) against the scalar conversions of core/types.h, which are
// checked exhaustively in types_test: every float16 and bfloat16 bit
// pattern widened, and rounding cases, specials and random floats narrowed,
// at lengths that exercise the vector body and the scalar tail.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/low_precision_op.h"

namespace doppio {
namespace {

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

Tensor Uint16Tensor(DataType dtype, const std::vector<uint16_t>& bits) {
  Tensor tensor({static_cast<int64_t>(bits.size())}, dtype);
  std::memcpy(tensor.raw_mutable_data(dtype), bits.data(), bits.size() * 2);
  return tensor;
}

TEST(LowPrecisionConversionTest, WideningEveryBitPatternMatchesTheScalarConversion) {
  std::vector<uint16_t> all(1 << 16);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16}) {
    Tensor wide;
    WidenToFloat(Uint16Tensor(dtype, all), &wide);
    for (uint32_t i = 0; i < all.size(); ++i) {
      const float expected = dtype == DataType::kFloat16
                                 ? HalfToFloat(float16{static_cast<uint16_t>(i)})
                                 : BFloat16ToFloat(bfloat16{static_cast<uint16_t>(i)});
      const float got = wide.data<float>()[i];
      if (std::isnan(expected)) {
        ASSERT_TRUE(std::isnan(got)) << DataTypeName(dtype) << " bits " << i;
      } else {
        ASSERT_EQ(Bits(got), Bits(expected)) << DataTypeName(dtype) << " bits " << i;
      }
    }
  }
}

TEST(LowPrecisionConversionTest, NarrowingMatchesTheScalarConversionAtEveryLength) {
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.5f, 65504.0f, 65520.0f, 70000.0f, -1e30f,
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN(),
                               std::numeric_limits<float>::denorm_min(), 6.1e-5f, 3e-8f,
                               std::numeric_limits<float>::max(), 1.00390625f, 1.01171875f};
  // Ties of both roundings: halfway between neighbours at 1 + k * 2^-8 and 2^-11.
  for (int k = 0; k < 16; ++k) {
    values.push_back(1.0f + (2 * k + 1) * std::ldexp(1.0f, -9));
    values.push_back(1.0f + (2 * k + 1) * std::ldexp(1.0f, -12));
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 100.0f);
  for (int i = 0; i < 200; ++i) values.push_back(normal(rng));
  for (size_t length : {size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{31}, values.size()}) {
    Tensor in({static_cast<int64_t>(length)}, DataType::kFloat);
    std::memcpy(in.mutable_data<float>(), values.data(), length * sizeof(float));
    for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16}) {
      Tensor narrow;
      NarrowFromFloat(in, dtype, &narrow);
      ASSERT_EQ(narrow.dtype(), dtype);
      const auto* got = static_cast<const uint16_t*>(narrow.raw_data());
      for (size_t i = 0; i < length; ++i) {
        const uint16_t expected = dtype == DataType::kFloat16 ? FloatToHalf(values[i]).bits
                                                              : FloatToBFloat16(values[i]).bits;
        const bool nan = std::isnan(values[i]);
        if (nan) {
          // Any quiet NaN of the same sign.
          ASSERT_EQ(got[i] & 0x8000, expected & 0x8000);
          ASSERT_TRUE(dtype == DataType::kFloat16 ? std::isnan(HalfToFloat(float16{got[i]}))
                                                  : std::isnan(BFloat16ToFloat(bfloat16{got[i]})));
        } else {
          ASSERT_EQ(got[i], expected) << DataTypeName(dtype) << " " << values[i] << " at " << i
                                      << " of " << length;
        }
      }
    }
  }
}

TEST(LowPrecisionConversionTest, WrongTypesAreRefused) {
  Tensor ints({3}, DataType::kInt32);
  Tensor out;
  EXPECT_THROW(WidenToFloat(ints, &out), Error);
  EXPECT_THROW(NarrowFromFloat(ints, DataType::kFloat16, &out), Error);
  Tensor floats({3}, DataType::kFloat);
  EXPECT_THROW(NarrowFromFloat(floats, DataType::kDouble, &out), Error);
}

}  // namespace
}  // namespace doppio
