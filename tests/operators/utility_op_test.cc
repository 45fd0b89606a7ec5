// Copy, CopyOnDeviceLike, Alias and Print: deep copies of every dtype,
// storage sharing, the printed format and its arguments, gradients and
// errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/workspace.h"
#include "tests/operators/op_test_util.h"

namespace doppio {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::Feed;
using testing::Fetch;
using testing::FetchTensor;
using testing::IntArg;
using testing::MakeOp;
using testing::RandomValues;

template <typename T>
void ExpectDeepCopy(const std::vector<int64_t>& dims, const std::vector<T>& values) {
  SCOPED_TRACE(DataTypeName(DataTypeFor<T>()));
  Workspace ws;
  Feed<T>(ws, "x", dims, values);
  ws.RunOperatorOnce(MakeOp("Copy", {"x"}, {"y"}));
  const Tensor& y = FetchTensor(ws, "y");
  EXPECT_EQ(y.dtype(), DataTypeFor<T>());
  EXPECT_EQ(y.dims(), dims);
  EXPECT_EQ(Fetch<T>(ws, "y"), values);
  EXPECT_FALSE(y.SharesStorageWith(FetchTensor(ws, "x")));
  // Overwriting the source leaves the copy alone.
  if (!values.empty()) {
    Tensor* x = ws.GetBlob("x")->GetMutableTensor();
    x->mutable_data<T>()[0] = values.back();
    x->mutable_data<T>()[values.size() - 1] = values.front();
    EXPECT_EQ(Fetch<T>(ws, "y"), values);
  }
}

TEST(CopyTest, CopiesEveryDtype) {
  ExpectDeepCopy<float>({2, 2}, {1.5f, -2, 3, 4});
  ExpectDeepCopy<double>({3}, {0.1, 0.2, 0.3});
  ExpectDeepCopy<int32_t>({2, 1}, {-7, 8});
  ExpectDeepCopy<int64_t>({2}, {1LL << 50, -1});
  ExpectDeepCopy<int16_t>({2}, {-300, 300});
  ExpectDeepCopy<int8_t>({2}, {-100, 100});
  ExpectDeepCopy<uint8_t>({3}, {0, 128, 255});
  ExpectDeepCopy<uint16_t>({1}, {65535});
  ExpectDeepCopy<bool>({3}, {true, false, true});
  ExpectDeepCopy<std::string>({2, 2}, {"a", "", "long string beyond SSO size....", "d"});
}

TEST(CopyTest, ScalarsAndEmptyTensors) {
  ExpectDeepCopy<float>({}, {42});
  ExpectDeepCopy<float>({0, 3}, {});
  ExpectDeepCopy<std::string>({0}, {});
  // float16 through its bit pattern.
  Workspace ws;
  Feed<float16>(ws, "h", {2}, {FloatToHalf(1.5f), FloatToHalf(-2.0f)});
  ws.RunOperatorOnce(MakeOp("Copy", {"h"}, {"c"}));
  EXPECT_EQ(HalfToFloat(FetchTensor(ws, "c").data<float16>()[1]), -2.0f);
}

TEST(CopyTest, ErrorsNameTheBlob) {
  Workspace ws;
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ws.RunOperatorOnce(MakeOp("Copy", {"missing"}, {"y"})); }),
                     "Copy", "'missing'");
  ws.CreateBlob("empty_blob");
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ws.RunOperatorOnce(MakeOp("Copy", {"empty_blob"}, {"y"})); }),
                     "Copy", "'empty_blob'", "tensor");
  Feed<float>(ws, "x", {1}, {1});
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ws.RunOperatorOnce(MakeOp("Copy", {"x", "x"}, {"y"})); }),
                     "Copy", "inputs");
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ws.RunOperatorOnce(MakeOp("Copy", {"x"}, {"x"})); }),
                     "Copy", "in place");
}

TEST(CopyTest, GradientCopiesTheOutputGradient) {
  Workspace ws;
  Feed<double>(ws, "x", {3, 4}, RandomValues<double>(12, 1));
  const OperatorDef copy = MakeOp("Copy", {"x"}, {"y"});
  CheckGradient(copy, ws, {0});
  GradientWrapper dy;
  dy.dense = "y_grad";
  const GradientOpsMeta meta = GetGradientForOp(copy, {dy});
  ASSERT_EQ(meta.ops.size(), 1u);
  EXPECT_EQ(meta.ops[0].type(), "CopyOnDeviceLike");
  EXPECT_EQ(meta.input_gradients[0].dense, "x_grad");
  // CopyOnDeviceLike, on the CPU a plain copy, differentiates the same way.
  Feed<double>(ws, "like", {1}, {0});
  CheckGradient(MakeOp("CopyOnDeviceLike", {"x", "like"}, {"z"}), ws, {0});
}

TEST(AliasTest, SharesStorage) {
  Workspace ws;
  Feed<float>(ws, "x", {2, 3}, {1, 2, 3, 4, 5, 6});
  ws.RunOperatorOnce(MakeOp("Alias", {"x"}, {"y"}));
  const Tensor& y = FetchTensor(ws, "y");
  EXPECT_TRUE(y.SharesStorageWith(FetchTensor(ws, "x")));
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 3}));
  ws.GetBlob("x")->GetMutableTensor()->mutable_data<float>()[4] = -1;
  EXPECT_EQ(Fetch<float>(ws, "y")[4], -1);
  ws.GetBlob("y")->GetMutableTensor()->mutable_data<float>()[0] = 9;
  EXPECT_EQ(Fetch<float>(ws, "x")[0], 9);
  // Strings alias too.
  Feed<std::string>(ws, "s", {1}, {"abc"});
  ws.RunOperatorOnce(MakeOp("Alias", {"s"}, {"t"}));
  EXPECT_TRUE(FetchTensor(ws, "t").SharesStorageWith(FetchTensor(ws, "s")));
}

TEST(AliasTest, GradientPassesThrough) {
  Workspace ws;
  Feed<double>(ws, "x", {5}, RandomValues<double>(5, 2));
  const OperatorDef alias = MakeOp("Alias", {"x"}, {"y"});
  GradientWrapper dy;
  dy.dense = "y_grad";
  const GradientOpsMeta meta = GetGradientForOp(alias, {dy});
  EXPECT_TRUE(meta.ops.empty());
  EXPECT_EQ(meta.input_gradients[0].dense, "y_grad");
  CheckGradient(alias, ws, {0});
}

// ---- Print ----

std::string CapturePrint(Workspace& ws, const OperatorDef& def, int runs = 1) {
  NetDef net;
  net.set_name("print");
  *net.add_op() = def;
  ws.CreateNet(net, /*overwrite=*/true);
  ::testing::internal::CaptureStdout();
  try {
    for (int i = 0; i < runs; ++i) ws.RunNet("print");
  } catch (...) {
    // Release stdout, or gtest's own report would be swallowed.
    ::testing::internal::GetCapturedStdout();
    throw;
  }
  return ::testing::internal::GetCapturedStdout();
}

TEST(PrintTest, PrintsNameTypeDimsAndValues) {
  Workspace ws;
  Feed<float>(ws, "x", {2, 3}, {1, 2, 3, 4, 5, 6.5});
  EXPECT_EQ(CapturePrint(ws, MakeOp("Print", {"x"}, {})),
            "Tensor x of type float32. Dims: (2,3,): 1,2,3,4,5,6.5\n");
  Feed<int8_t>(ws, "b", {2}, {-3, 65});
  EXPECT_EQ(CapturePrint(ws, MakeOp("Print", {"b"}, {})),
            "Tensor b of type int8. Dims: (2,): -3,65\n");
  Feed<std::string>(ws, "s", {2}, {"hi", "there"});
  EXPECT_EQ(CapturePrint(ws, MakeOp("Print", {"s"}, {})),
            "Tensor s of type str. Dims: (2,): hi,there\n");
  Feed<double>(ws, "e", {0, 2}, {});
  EXPECT_EQ(CapturePrint(ws, MakeOp("Print", {"e"}, {})),
            "Tensor e of type float64. Dims: (0,2,): \n");
  ws.CreateBlob("nothing");
  EXPECT_EQ(CapturePrint(ws, MakeOp("Print", {"nothing"}, {})),
            "Blob nothing of type: nothing\n");
}

TEST(PrintTest, LimitAndEveryN) {
  Workspace ws;
  Feed<int64_t>(ws, "x", {2000}, std::vector<int64_t>(2000, 7));
  const std::string limited = CapturePrint(ws, MakeOp("Print", {"x"}, {}, {IntArg("limit", 3)}));
  EXPECT_EQ(limited, "Tensor x of type int64. Dims: (2000,): 7,7,7\n");
  // Limit 0 means Caffe2's default of 1000 elements.
  const std::string full = CapturePrint(ws, MakeOp("Print", {"x"}, {}));
  EXPECT_EQ(std::count(full.begin(), full.end(), '7'), 1000);
  // every_n 3 over 7 runs prints on runs 1, 4 and 7.
  const std::string every =
      CapturePrint(ws, MakeOp("Print", {"x"}, {}, {IntArg("limit", 1), IntArg("every_n", 3)}), 7);
  EXPECT_EQ(std::count(every.begin(), every.end(), '\n'), 3);
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("Print", {"x"}, {}, {IntArg("every_n", 0)}));
                     }),
                     "Print", "every_n");
}

TEST(PrintTest, ToFileAppendsToBlobNamedLog) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  ASSERT_NE(tmp, nullptr);
  char previous[4096];
  ASSERT_NE(getcwd(previous, sizeof(previous)), nullptr);
  ASSERT_EQ(chdir(tmp), 0);
  std::remove("gpu_0_w.log");
  Workspace ws;
  Feed<int32_t>(ws, "gpu_0/w", {2}, {3, 4});
  ws.RunOperatorOnce(MakeOp("Print", {"gpu_0/w"}, {}, {IntArg("to_file", 1)}));
  ws.RunOperatorOnce(MakeOp("Print", {"gpu_0/w"}, {}, {IntArg("to_file", 1)}));
  std::ifstream file("gpu_0_w.log");
  std::stringstream content;
  content << file.rdbuf();
  EXPECT_EQ(content.str(),
            "Tensor gpu_0/w of type int32. Dims: (2,): 3,4\n"
            "Tensor gpu_0/w of type int32. Dims: (2,): 3,4\n");
  ASSERT_EQ(chdir(previous), 0);
}

TEST(PrintTest, MustNotBeDifferentiated) {
  const GradientRegistry::Entry* entry = GradientRegistry::Find("Print");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->kind, GradientRegistry::Kind::kShouldNotDoGradient);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { GetGradientForOp(MakeOp("Print", {"x"}, {}), {}); }),
                     "Print");
}

}  // namespace
}  // namespace doppio
