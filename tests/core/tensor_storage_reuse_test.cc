// Tensor storage reuse (issue 13: no allocations in steady-state
// iterations): a tensor keeps its storage while the bytes it needs fit,
// also across plain numeric dtypes when no other tensor shares the storage
// (a blob memonger shares between an int and a float blob). Expected
// allocation counts and byte sizes come from the shapes used here.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/allocator.h"
#include "core/tensor.h"

namespace doppio {
namespace {

int64_t Allocations() { return GetCPUAllocatorStats().allocations; }

TEST(TensorStorageReuseTest, ShrinkingAndRegrowingWithinCapacityKeepsTheStorage) {
  Tensor t(std::vector<int64_t>{10, 10}, DataType::kFloat);
  float* first = t.mutable_data<float>();
  const int64_t before = Allocations();
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{5}, std::vector<int64_t>{10, 10}, std::vector<int64_t>{4, 25}}) {
    t.Resize(dims);
    EXPECT_EQ(t.mutable_data<float>(), first);
  }
  EXPECT_EQ(Allocations(), before);
  t.Resize({101});
  EXPECT_NE(t.mutable_data<float>(), nullptr);
  EXPECT_EQ(Allocations() - before, 1);
}

TEST(TensorStorageReuseTest, ANumericDtypeReusesTheStorageOfAnother) {
  Tensor t(std::vector<int64_t>{100}, DataType::kFloat);  // 400 bytes
  void* block = t.mutable_data<float>();
  const int64_t before = Allocations();

  int32_t* ints = t.mutable_data<int32_t>();  // 400 bytes: fits
  EXPECT_EQ(static_cast<void*>(ints), block);
  EXPECT_EQ(t.dtype(), DataType::kInt32);
  for (int i = 0; i < 100; ++i) ints[i] = i * 3;
  const int32_t* read = t.data<int32_t>();
  EXPECT_EQ(read[99], 297);

  t.Resize({50});
  EXPECT_EQ(static_cast<void*>(t.mutable_data<double>()), block);  // 400 bytes again
  t.Resize({100});
  EXPECT_EQ(static_cast<void*>(t.mutable_data<uint8_t>()), block);  // 100 bytes
  EXPECT_EQ(static_cast<void*>(t.mutable_data<float>()), block);
  EXPECT_EQ(Allocations(), before);
  EXPECT_THROW(t.data<int32_t>(), Error);  // it holds floats now

  // 800 bytes do not fit in 400.
  EXPECT_NE(static_cast<void*>(t.mutable_data<int64_t>()), block);
  EXPECT_EQ(Allocations() - before, 1);
}

TEST(TensorStorageReuseTest, SharedStorageIsNeverRetyped) {
  Tensor a(std::vector<int64_t>{4}, DataType::kFloat);
  float* values = a.mutable_data<float>();
  for (int i = 0; i < 4; ++i) values[i] = 1.5f * static_cast<float>(i);
  Tensor b;
  b.ShareData(a);
  const int64_t before = Allocations();

  int32_t* ints = b.mutable_data<int32_t>();
  for (int i = 0; i < 4; ++i) ints[i] = -1;
  EXPECT_EQ(Allocations() - before, 1);
  EXPECT_FALSE(b.SharesStorageWith(a));
  // a still reads its own floats.
  const float* kept = a.data<float>();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(kept[i], 1.5f * static_cast<float>(i));
}

TEST(TensorStorageReuseTest, StringsNeverShareBytesWithNumbers) {
  Tensor t(std::vector<int64_t>{64}, DataType::kFloat);  // 256 bytes
  t.mutable_data<float>();
  const int64_t before = Allocations();
  t.Resize({2});  // 2 strings need far less than 256 bytes
  std::string* strings = t.mutable_data<std::string>();
  EXPECT_EQ(Allocations() - before, 1);
  strings[0] = "constructed";
  EXPECT_EQ(t.data<std::string>()[1], "");
  t.Resize({2});
  EXPECT_NE(t.mutable_data<float>(), nullptr);
  EXPECT_EQ(Allocations() - before, 2);
}

}  // namespace
}  // namespace doppio
