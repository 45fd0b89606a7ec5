// The dtype dispatch and input checks every op, CPU and CUDA, goes through
// (operators/op_type_dispatch.h). The device checks need no GPU: a tensor
// may name a CUDA device without holding memory there.
#include "operators/op_type_dispatch.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/registry.h"
#include "core/workspace.h"
#include "tests/operators/op_test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::Feed;
using testing::MakeOp;

// A Sum over blobs A and B of the workspace, never run: the checks only
// read its inputs' names and tensors.
class DispatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Feed<float>(ws_, "A", {2}, {1.0f, 2.0f});
    Feed<double>(ws_, "B", {2}, {1.0, 2.0});
    op_ = CreateOperator(MakeOp("Sum", {"A", "B"}, {"C"}), &ws_);
  }

  // Replaces blob `name` with an empty tensor on `device`.
  void PlaceOn(const std::string& name, Device device) {
    *ws_.CreateBlob(name)->GetMutableTensor(device) = Tensor(device);
  }

  Workspace ws_;
  std::unique_ptr<OperatorBase> op_;
};

TEST_F(DispatchTest, DispatchCallsTheListedTypeAndNamesTheBlobOtherwise) {
  std::string seen;
  DispatchInput(FloatTypes{}, *op_, 1, DataType::kDouble, [&](auto tag) {
    seen = DataTypeName(DataTypeFor<typename decltype(tag)::type>());
  });
  EXPECT_EQ(seen, "float64");
  EXPECT_MESSAGE_HAS(
      ErrorOf([&] { DispatchInput(IndexTypes{}, *op_, 0, DataType::kFloat, [](auto) {}); }),
      "'A' holds float32", "supported types are int32, int64");
  EXPECT_TRUE(TypeListHas(NumericTypes{}, DataType::kInt64));
  EXPECT_FALSE(TypeListHas(NumericTypes{}, DataType::kString));
}

TEST_F(DispatchTest, InputsOfOneTypeNameTheFirstThatDiffers) {
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       EnforceInputsOfOneType(FloatTypes{}, *op_, {0, 1});
                     }),
                     "'A' holds float32 but 'B' holds float64");
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       EnforceInputsOfOneType(IndexTypes{}, *op_, {0, 1});
                     }),
                     "'A' holds float32", "int32, int64");
}

TEST_F(DispatchTest, DeviceChecksNameTheBlobAndBothDevices) {
  const Device gpu0{DeviceKind::kCUDA, 0};
  // A host tensor handed to a CUDA op.
  EXPECT_MESSAGE_HAS(ErrorOf([&] { EnforceInputsOnDevice(*op_, gpu0); }),
                     "'A' is not a CUDA tensor", "CUDA device 0", "copy it there first");
  // A tensor on another GPU.
  PlaceOn("A", gpu0);
  PlaceOn("B", Device{DeviceKind::kCUDA, 1});
  EXPECT_MESSAGE_HAS(ErrorOf([&] { EnforceInputsOnDevice(*op_, gpu0); }),
                     "'B' lives on CUDA device 1 but the op runs on CUDA device 0");
  EXPECT_NO_THROW(EnforceInputOnDevice(*op_, 0, ws_.GetBlob("A")->GetTensor(), gpu0));
  // Type and device at once: the device is checked first.
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       EnforceDeviceInput(TypeList<float>{}, *op_, 1, ws_.GetBlob("B")->GetTensor(),
                                          gpu0);
                     }),
                     "'B' lives on CUDA device 1");
}

}  // namespace
}  // namespace doppio
