#include "core/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/blob.h"

namespace doppio {
namespace {

TEST(TensorTest, ResizeAndTypedAccess) {
  Tensor t;
  t.Resize({2, 3, 4});
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.ndim(), 3);
  EXPECT_EQ(t.dim(-1), 4);
  EXPECT_EQ(t.SizeToDim(1), 2);
  EXPECT_EQ(t.SizeFromDim(1), 12);
  EXPECT_EQ(t.SizeBetweenDims(1, 2), 3);
  float* data = t.mutable_data<float>();
  for (int i = 0; i < 24; ++i) data[i] = static_cast<float>(i);
  EXPECT_EQ(t.dtype(), DataType::kFloat);
  EXPECT_EQ(t.nbytes(), 96u);
  EXPECT_EQ(t.data<float>()[23], 23.0f);
  EXPECT_THROW(t.data<double>(), Error);
  EXPECT_THROW(t.dim(3), Error);
  EXPECT_THROW(t.CanonicalAxis(-4), Error);
}

TEST(TensorTest, StorageIsAlignedAndKeptWhenItFits) {
  Tensor t({64}, DataType::kFloat);
  float* first = t.mutable_data<float>();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  t.Resize({8, 8});
  EXPECT_EQ(t.mutable_data<float>(), first);
  t.Resize({4});
  EXPECT_EQ(t.mutable_data<float>(), first);
  t.Resize({1000});
  EXPECT_NE(t.mutable_data<float>(), nullptr);
  EXPECT_EQ(t.numel(), 1000);
}

TEST(TensorTest, RejectsNegativeAndOverflowingShapes) {
  Tensor t;
  EXPECT_THROW(t.Resize({2, -1}), Error);
  const int64_t big = int64_t{1} << 40;
  EXPECT_THROW(t.Resize({big, big}), Error);
  // A shape whose element count fits int64 but not memory is refused too.
  EXPECT_THROW(t.Resize({std::numeric_limits<int64_t>::max()}), Error);
  EXPECT_EQ(CheckedNumElements({0, big, big}), 0);
}

TEST(TensorTest, ReadBeforeWriteIsAnError) {
  Tensor t({3}, DataType::kFloat);
  EXPECT_THROW(t.data<float>(), Error);
}

TEST(TensorTest, ReshapeKeepsElements) {
  Tensor t({2, 3}, DataType::kInt32);
  int32_t* data = t.mutable_data<int32_t>();
  for (int i = 0; i < 6; ++i) data[i] = i * 7;
  t.Reshape({3, 2});
  EXPECT_EQ(t.dim(0), 3);
  EXPECT_EQ(t.data<int32_t>()[5], 35);
  EXPECT_THROW(t.Reshape({4, 2}), Error);
}

TEST(TensorTest, CopyFromIsDeepAndShareDataAliases) {
  Tensor source({3}, DataType::kString);
  std::string* strings = source.mutable_data<std::string>();
  strings[0] = "a";
  strings[1] = "long string that does not fit the small buffer";
  strings[2] = "";
  Tensor copy;
  copy.CopyFrom(source);
  strings[0] = "changed";
  EXPECT_EQ(copy.data<std::string>()[0], "a");
  EXPECT_EQ(copy.data<std::string>()[1], source.data<std::string>()[1]);
  EXPECT_FALSE(copy.SharesStorageWith(source));

  Tensor alias;
  alias.ShareData(source);
  EXPECT_TRUE(alias.SharesStorageWith(source));
  EXPECT_EQ(alias.data<std::string>()[0], "changed");
}

TEST(TensorTest, ShareSliceIsAWritableViewOfOuterSlices) {
  Tensor source;
  source.Resize({4, 2, 3});
  float* data = source.mutable_data<float>();
  for (int i = 0; i < 24; ++i) data[i] = static_cast<float>(i);

  Tensor view;
  view.ShareSlice(source, 1, 2);
  EXPECT_EQ(view.dims(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_TRUE(view.SharesStorageWith(source));
  EXPECT_EQ(view.data<float>()[0], 6.0f);
  EXPECT_EQ(view.data<float>()[11], 17.0f);

  // Writes through the view (and a view of the view) land in the source.
  view.mutable_data<float>()[0] = -1.0f;
  Tensor inner;
  inner.ShareSlice(view, 1, 1);
  inner.Resize({1, 6});
  inner.mutable_data<float>()[5] = -2.0f;
  EXPECT_EQ(data[6], -1.0f);
  EXPECT_EQ(data[17], -2.0f);

  // Out of range, and a view that outgrows its slices gets its own storage.
  EXPECT_THROW(view.ShareSlice(source, 3, 2), Error);
  EXPECT_THROW(view.ShareSlice(source, -1, 1), Error);
  Tensor empty;
  EXPECT_THROW(view.ShareSlice(empty, 0, 0), Error);
  inner.Resize({3, 6});
  inner.mutable_data<float>()[0] = 5.0f;
  EXPECT_FALSE(inner.SharesStorageWith(source));
  EXPECT_EQ(data[12], 12.0f);
}

TEST(TensorTest, EmptyTensor) {
  Tensor t({0, 4}, DataType::kFloat);
  t.mutable_data<float>();
  EXPECT_EQ(t.numel(), 0);
  Tensor copy;
  copy.CopyFrom(t);
  EXPECT_EQ(copy.dims(), (std::vector<int64_t>{0, 4}));
}

// Resize skips its checks when the shape does not change; a fresh tensor's
// dims are {} too, but it has no element until resized to a scalar.
TEST(TensorTest, ResizeToTheSameShapeKeepsDataAndFreshScalarGetsOneElement) {
  Tensor t;
  EXPECT_EQ(t.numel(), 0);
  t.Resize({});
  EXPECT_EQ(t.numel(), 1);
  t.mutable_data<float>()[0] = 2.5f;
  t.Resize({});
  EXPECT_EQ(t.data<float>()[0], 2.5f);

  Tensor v;
  v.Resize({2, 3});
  v.mutable_data<int32_t>()[5] = 7;
  const void* storage = v.raw_data();
  v.Resize({2, 3});
  EXPECT_EQ(v.numel(), 6);
  EXPECT_EQ(v.raw_data(), storage);
  EXPECT_EQ(v.data<int32_t>()[5], 7);
  v.Resize({3, 2});
  EXPECT_EQ(v.dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_THROW(v.Resize({-1}), Error);
}

TEST(TensorTest, HalfConversionMatchesIeee) {
  // Bit patterns from the IEEE 754 binary16 definition.
  EXPECT_EQ(FloatToHalf(1.0f).bits, 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f).bits, 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f).bits, 0x7bff);
  EXPECT_EQ(FloatToHalf(1e6f).bits, 0x7c00);  // overflow -> inf
  EXPECT_EQ(FloatToHalf(5.960464477539063e-08f).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(HalfToFloat(float16{0x3555}), 0.333251953125f);
  EXPECT_EQ(HalfToFloat(float16{0x0001}), 5.960464477539063e-08f);
  for (uint32_t bits = 0; bits < 0x7c00; ++bits) {
    const float16 h{static_cast<uint16_t>(bits)};
    ASSERT_EQ(FloatToHalf(HalfToFloat(h)).bits, bits);
  }
}

// The bfloat16 nearest to `f` (ties to the even pattern), found by
// comparing the two candidates in double: independent of the bit trick.
uint16_t NearestBFloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  const uint16_t down = static_cast<uint16_t>(bits >> 16);
  const uint16_t up = static_cast<uint16_t>(down + 1);
  const double low = BFloat16ToFloat(bfloat16{down}), high = BFloat16ToFloat(bfloat16{up});
  const double distance_low = std::fabs(f - low), distance_high = std::fabs(high - f);
  if (distance_low != distance_high) return distance_low < distance_high ? down : up;
  return (down & 1) ? up : down;
}

TEST(TensorTest, BFloat16ConversionRoundsToNearestEven) {
  EXPECT_EQ(FloatToBFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(FloatToBFloat16(-2.0f).bits, 0xc000);
  EXPECT_EQ(BFloat16ToFloat(bfloat16{0x3f80}), 1.0f);
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::infinity()).bits, 0x7f80);
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::max()).bits, 0x7f80);  // rounds up
  const bfloat16 nan = FloatToBFloat16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(nan)));
  uint32_t signaling_bits = 0xff800001u;  // a NaN whose payload is only in the dropped bits
  float signaling;
  std::memcpy(&signaling, &signaling_bits, sizeof(signaling));
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(signaling))));
  EXPECT_EQ(FloatToBFloat16(signaling).bits & 0x8000, 0x8000);  // the sign stays
  // Every finite bfloat16 widens and narrows back to itself ...
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const bfloat16 value{static_cast<uint16_t>(b)};
    if ((b & 0x7f80) == 0x7f80) continue;  // inf / NaN
    ASSERT_EQ(FloatToBFloat16(BFloat16ToFloat(value)).bits, b);
  }
  // ... and floats round to the nearer neighbor, ties to even (midpoints
  // included: the low 16 bits exactly 0x8000).
  uint32_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1664525u + 1013904223u;
    uint32_t bits = (state & 0x7f7fffffu) | (i % 2 ? 0x80000000u : 0u);
    if (i % 7 == 0) bits = (bits & 0xffff0000u) | 0x8000u;
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    if (!std::isfinite(f) || std::fabs(f) > 3.3e38f) continue;
    ASSERT_EQ(FloatToBFloat16(f).bits, NearestBFloat16(f)) << std::hex << bits;
  }
}

TEST(BlobTest, HoldsAnyTypeAndReportsMismatches) {
  Blob blob;
  EXPECT_TRUE(blob.IsEmpty());
  *blob.GetMutable<int>() = 5;
  EXPECT_TRUE(blob.IsType<int>());
  EXPECT_EQ(blob.Get<int>(), 5);
  try {
    blob.GetTensor();
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("holds int"), std::string::npos)
        << error.what();
  }
  Tensor* tensor = blob.GetMutableTensor();
  EXPECT_TRUE(blob.IsTensor());
  EXPECT_EQ(blob.GetMutableTensor(), tensor);
  blob.Reset();
  EXPECT_TRUE(blob.IsEmpty());
}

}  // namespace
}  // namespace doppio
