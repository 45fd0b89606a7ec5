// cuDNN descriptors and the host-side planning of the CUDA conv/pool ops,
// none of which needs a GPU: descriptors are filled for the reference CNN's
// shapes (python_api/examples/fmnist_train.py, add_reference_cnn) and read
// back through cuDNN's getters; cuDNN's output-size arithmetic is compared
// with the convolution formula written here; argument errors are raised
// before any CUDA call. Descriptor tests skip visibly if this machine's
// cuDNN refuses to create descriptors at all.
#include <gtest/gtest.h>

#include <cudnn.h>

#include <string>
#include <vector>

#include "core/cuda/cuda_common.h"
#include "core/registry.h"
#include "core/workspace.h"
#include "operators/conv_op_gpu.h"
#include "operators/cudnn_descriptors_gpu.h"
#include "operators/pool_op_gpu.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::IntArg;
using testing::IntsArg;
using testing::MakeOp;
using testing::StringArg;

// Empty when cuDNN creates descriptors here; else why it does not.
std::string DescriptorsUnavailable() {
  static const std::string reason = [] {
    try {
      CudnnTensorDescriptor probe;
      return std::string();
    } catch (const Error& error) {
      return std::string(error.what());
    }
  }();
  return reason;
}

#define SKIP_WITHOUT_CUDNN_DESCRIPTORS()                                              \
  do {                                                                                \
    if (!DescriptorsUnavailable().empty()) {                                          \
      GTEST_SKIP() << "cuDNN cannot create descriptors here: " << DescriptorsUnavailable(); \
    }                                                                                 \
  } while (0)

// The convolution output size, written independently of the code under test.
int64_t ConvOut(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation) {
  return (in + 2 * pad - (dilation * (kernel - 1) + 1)) / stride + 1;
}

struct ConvCase {
  const char* name;
  std::vector<int64_t> x;  // NCHW
  std::vector<int64_t> w;  // MCHW, C per group
  int pad, stride, dilation, group;
};

// The reference CNN's layers (batch 64) plus the group / stride / dilation
// forms the ops accept.
const std::vector<ConvCase>& ConvCases() {
  static const std::vector<ConvCase> cases = {
      {"conv1", {64, 1, 28, 28}, {32, 1, 3, 3}, 1, 1, 1, 1},
      {"conv2", {64, 32, 14, 14}, {64, 32, 3, 3}, 1, 1, 1, 1},
      {"conv1_5x5", {64, 1, 28, 28}, {32, 1, 5, 5}, 2, 1, 1, 1},
      {"grouped", {64, 32, 14, 14}, {64, 8, 3, 3}, 1, 1, 1, 4},
      {"strided_dilated", {8, 3, 28, 28}, {16, 3, 3, 3}, 1, 2, 2, 1},
  };
  return cases;
}

OperatorDef ConvDef(const ConvCase& c) {
  return MakeOp("Conv", {"X", "W", "b"}, {"Y"},
                {IntArg("pad", c.pad), IntArg("stride", c.stride),
                 IntArg("dilation", c.dilation), IntArg("group", c.group)});
}

TEST(CudnnConvPlanTest, OutputShapesMatchTheConvolutionFormula) {
  for (const ConvCase& c : ConvCases()) {
    SCOPED_TRACE(c.name);
    const CudnnConvPlan plan = ResolveCudnnConv(ConvPoolArgs(ConvDef(c)), "X", c.x, "W", c.w);
    const int64_t h = ConvOut(c.x[2], c.w[2], c.pad, c.stride, c.dilation);
    const int64_t w = ConvOut(c.x[3], c.w[3], c.pad, c.stride, c.dilation);
    EXPECT_EQ(plan.output_dims, (std::vector<int64_t>{c.x[0], c.w[0], h, w}));
    EXPECT_EQ(plan.group, c.group);
    EXPECT_EQ(plan.in_per_group, c.x[1] / c.group);
  }
  // The reference CNN's sizes, spelled out.
  EXPECT_EQ(ResolveCudnnConv(ConvPoolArgs(ConvDef(ConvCases()[0])), "X", ConvCases()[0].x, "W",
                             ConvCases()[0].w)
                .output_dims,
            (std::vector<int64_t>{64, 32, 28, 28}));
}

TEST(CudnnDescriptorsTest, ConvolutionDescriptorsRoundTripAndAgreeOnOutputShape) {
  SKIP_WITHOUT_CUDNN_DESCRIPTORS();
  for (const ConvCase& c : ConvCases()) {
    SCOPED_TRACE(c.name);
    CudnnTensorDescriptor x;
    x.Set4d(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, c.x[0], c.x[1], c.x[2], c.x[3]);
    cudnnDataType_t type;
    int n, ch, h, w, sn, sc, sh, sw;
    ASSERT_EQ(cudnnGetTensor4dDescriptor(x.get(), &type, &n, &ch, &h, &w, &sn, &sc, &sh, &sw),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(type, CUDNN_DATA_FLOAT);
    EXPECT_EQ((std::vector<int64_t>{n, ch, h, w}), c.x);
    // Packed NCHW strides.
    EXPECT_EQ((std::vector<int>{sn, sc, sh, sw}),
              (std::vector<int>{ch * h * w, h * w, w, 1}));

    CudnnFilterDescriptor filter;
    filter.Set4d(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, c.w[0], c.w[1], c.w[2], c.w[3]);
    cudnnTensorFormat_t format;
    int k, fc, fh, fw;
    ASSERT_EQ(cudnnGetFilter4dDescriptor(filter.get(), &type, &format, &k, &fc, &fh, &fw),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(format, CUDNN_TENSOR_NCHW);
    EXPECT_EQ((std::vector<int64_t>{k, fc, fh, fw}), c.w);

    CudnnConvolutionDescriptor conv;
    conv.Set2d(c.pad, c.pad, c.stride, c.stride, c.dilation, c.dilation, CUDNN_DATA_FLOAT,
               c.group, CUDNN_FMA_MATH);
    int ph, pw, uh, uw, dh, dw;
    cudnnConvolutionMode_t mode;
    ASSERT_EQ(cudnnGetConvolution2dDescriptor(conv.get(), &ph, &pw, &uh, &uw, &dh, &dw, &mode,
                                              &type),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ((std::vector<int>{ph, pw, uh, uw, dh, dw}),
              (std::vector<int>{c.pad, c.pad, c.stride, c.stride, c.dilation, c.dilation}));
    EXPECT_EQ(mode, CUDNN_CROSS_CORRELATION);  // what Caffe2's Conv computes
    int groups = 0;
    ASSERT_EQ(cudnnGetConvolutionGroupCount(conv.get(), &groups), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(groups, c.group);
    cudnnMathType_t math;
    ASSERT_EQ(cudnnGetConvolutionMathType(conv.get(), &math), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(math, CUDNN_FMA_MATH);

    int yn, yc, yh, yw;
    ASSERT_EQ(cudnnGetConvolution2dForwardOutputDim(conv.get(), x.get(), filter.get(), &yn,
                                                    &yc, &yh, &yw),
              CUDNN_STATUS_SUCCESS);
    const CudnnConvPlan plan = ResolveCudnnConv(ConvPoolArgs(ConvDef(c)), "X", c.x, "W", c.w);
    EXPECT_EQ((std::vector<int64_t>{yn, yc, yh, yw}), plan.output_dims);
  }
}

// 1-D is lifted to 2-D (cuDNN wants 2 or 3 spatial axes); 3-D goes through
// the Nd descriptors.
TEST(CudnnDescriptorsTest, NdConvolutionsAgreeOnOutputShape) {
  SKIP_WITHOUT_CUDNN_DESCRIPTORS();
  struct NdCase {
    std::vector<int64_t> x, w;
    int pad, stride, dilation;
  };
  const std::vector<NdCase> cases = {
      {{2, 3, 17}, {4, 3, 5}, 2, 2, 1},
      {{2, 4, 6, 7, 8}, {6, 4, 3, 3, 3}, 1, 1, 2},
  };
  for (const NdCase& c : cases) {
    SCOPED_TRACE(c.x.size());
    const OperatorDef def =
        MakeOp("Conv", {"X", "W"}, {"Y"},
               {IntArg("pad", c.pad), IntArg("stride", c.stride), IntArg("dilation", c.dilation)});
    const CudnnConvPlan plan = ResolveCudnnConv(ConvPoolArgs(def), "X", c.x, "W", c.w);
    std::vector<int64_t> expected = {c.x[0], c.w[0]};
    for (size_t axis = 2; axis < c.x.size(); ++axis) {
      expected.push_back(ConvOut(c.x[axis], c.w[axis], c.pad, c.stride, c.dilation));
    }
    EXPECT_EQ(plan.output_dims, expected);

    CudnnTensorDescriptor x;
    x.SetNd(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, plan.cudnn_x_dims);
    CudnnFilterDescriptor w;
    w.SetNd(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, plan.cudnn_w_dims);
    CudnnConvolutionDescriptor conv;
    conv.SetNd(plan.pads, plan.strides, plan.dilations, CUDNN_DATA_FLOAT, 1, CUDNN_FMA_MATH);
    const int rank = static_cast<int>(plan.cudnn_x_dims.size());
    ASSERT_GE(rank, 4);
    std::vector<int> y(rank);
    ASSERT_EQ(cudnnGetConvolutionNdForwardOutputDim(conv.get(), x.get(), w.get(), rank, y.data()),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(std::vector<int64_t>(y.begin(), y.end()), plan.cudnn_y_dims);
    // The lifted 1-D problem has a unit axis; Y's own dims drop it.
    int64_t y_count = 1, plan_count = 1;
    for (int v : y) y_count *= v;
    for (int64_t v : plan.output_dims) plan_count *= v;
    EXPECT_EQ(y_count, plan_count);
  }
}

TEST(CudnnDescriptorsTest, NhwcTensorHasChannelsInnermost) {
  SKIP_WITHOUT_CUDNN_DESCRIPTORS();
  CudnnTensorDescriptor x;
  x.Set4d(CUDNN_TENSOR_NHWC, CUDNN_DATA_DOUBLE, 2, 3, 4, 5);
  cudnnDataType_t type;
  int n, c, h, w, sn, sc, sh, sw;
  ASSERT_EQ(cudnnGetTensor4dDescriptor(x.get(), &type, &n, &c, &h, &w, &sn, &sc, &sh, &sw),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(type, CUDNN_DATA_DOUBLE);
  EXPECT_EQ((std::vector<int>{sn, sc, sh, sw}), (std::vector<int>{60, 1, 15, 3}));
}

TEST(CudnnDescriptorsTest, PoolingDescriptorsOfTheReferenceCnn) {
  SKIP_WITHOUT_CUDNN_DESCRIPTORS();
  // pool1: 28 -> 14, pool2: 14 -> 7 (kernel 2, stride 2).
  for (int64_t size : {28, 14}) {
    const std::vector<int64_t> x_dims = {64, 32, size, size};
    const OperatorDef def =
        MakeOp("MaxPool", {"X"}, {"Y"}, {IntArg("kernel", 2), IntArg("stride", 2)});
    const CudnnPoolPlan plan = ResolveCudnnPool(ConvPoolArgs(def), "X", x_dims);
    EXPECT_EQ(plan.output_dims, (std::vector<int64_t>{64, 32, size / 2, size / 2}));

    CudnnTensorDescriptor x;
    x.Set4d(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 64, 32, size, size);
    CudnnPoolingDescriptor pool;
    pool.Set2d(CUDNN_POOLING_MAX, 2, 2, 0, 0, 2, 2);
    cudnnPoolingMode_t mode;
    cudnnNanPropagation_t nan;
    int kh, kw, ph, pw, sh, sw;
    ASSERT_EQ(cudnnGetPooling2dDescriptor(pool.get(), &mode, &nan, &kh, &kw, &ph, &pw, &sh, &sw),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(mode, CUDNN_POOLING_MAX);
    EXPECT_EQ((std::vector<int>{kh, kw, ph, pw, sh, sw}), (std::vector<int>{2, 2, 0, 0, 2, 2}));
    int n, c, h, w;
    ASSERT_EQ(cudnnGetPooling2dForwardOutputDim(pool.get(), x.get(), &n, &c, &h, &w),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ((std::vector<int64_t>{n, c, h, w}), plan.output_dims);
  }
}

TEST(CudnnDescriptorsTest, ActivationDescriptorRoundTrips) {
  SKIP_WITHOUT_CUDNN_DESCRIPTORS();
  CudnnActivationDescriptor relu;
  relu.Set(CUDNN_ACTIVATION_RELU, 0.0);
  cudnnActivationMode_t mode;
  cudnnNanPropagation_t nan;
  double coef = -1;
  ASSERT_EQ(cudnnGetActivationDescriptor(relu.get(), &mode, &nan, &coef), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(mode, CUDNN_ACTIVATION_RELU);
  EXPECT_EQ(nan, CUDNN_PROPAGATE_NAN);
  EXPECT_EQ(coef, 0.0);
}

TEST(CudnnDescriptorsTest, OutOfRangeSizesAreErrorsNotWraparound) {
  SKIP_WITHOUT_CUDNN_DESCRIPTORS();
  CudnnTensorDescriptor x;
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       x.Set4d(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, int64_t{1} << 32, 1, 1, 1);
                     }),
                     "does not fit");
}

// ---- argument and shape errors, raised before any CUDA call ----

std::string ConvError(const std::vector<Argument>& args, const std::vector<int64_t>& x,
                      const std::vector<int64_t>& w) {
  return ErrorOf([&] {
    const OperatorDef def = MakeOp("Conv", {"X", "W"}, {"Y"}, args);
    ResolveCudnnConv(ConvPoolArgs(def), "X", x, "W", w);
  });
}

TEST(CudnnConvPlanTest, BadArgumentsAndShapesNameTheOpAndBlob) {
  const std::vector<int64_t> x = {64, 32, 14, 14};
  const std::vector<int64_t> w = {64, 32, 3, 3};
  EXPECT_MESSAGE_HAS(ConvError({IntArg("kernel", 5)}, x, w), "Conv", "kernel", "'W'");
  EXPECT_MESSAGE_HAS(ConvError({IntArg("pad", -1)}, x, w), "Conv", "pad");
  EXPECT_MESSAGE_HAS(ConvError({IntArg("stride", 0)}, x, w), "Conv", "stride");
  EXPECT_MESSAGE_HAS(ConvError({IntArg("group", 3)}, x, {63, 32, 3, 3}), "Conv", "group 3",
                     "does not divide", "'X'");
  EXPECT_MESSAGE_HAS(ConvError({IntArg("group", 2)}, x, w), "Conv", "channels per group",
                     "'W'");
  EXPECT_MESSAGE_HAS(ConvError({IntArg("group", 2)}, x, {63, 16, 3, 3}), "group 2",
                     "output channels", "'W'");
  EXPECT_MESSAGE_HAS(ConvError({IntsArg("pads", {1, 1, 0, 1})}, x, w), "Conv",
                     "equal begin and end pads");
  EXPECT_MESSAGE_HAS(ConvError({}, {8, 32, 4, 4, 14, 14}, {64, 32, 1, 3, 3, 3}), "Conv",
                     "3-D to 5-D", "'X'");
  EXPECT_MESSAGE_HAS(ConvError({}, x, {64, 32, 3}), "Conv", "'W'", "4 dims");
  EXPECT_MESSAGE_HAS(ConvError({IntArg("kernel", 3)}, {1, 32, 2, 2}, w), "Conv", "'X'");
}

// NHWC takes its filter as M x kH x kW x C.
TEST(CudnnConvPlanTest, NhwcPlanKeepsChannelsLast) {
  const OperatorDef def = MakeOp("Conv", {"X", "W"}, {"Y"}, {StringArg("order", "NHWC")});
  // A call that must succeed: any exception fails the test.
  const CudnnConvPlan plan = ResolveCudnnConv(ConvPoolArgs(def), "X", {2, 5, 5, 32}, "W",
                                              {64, 3, 3, 32});
  EXPECT_EQ(plan.output_dims, (std::vector<int64_t>{2, 3, 3, 64}));
}

TEST(CudnnPoolPlanTest, BadArgumentsNameTheOp) {
  auto pool_error = [](const std::vector<Argument>& args, const std::vector<int64_t>& x) {
    return ErrorOf([&] {
      ResolveCudnnPool(ConvPoolArgs(MakeOp("MaxPool", {"X"}, {"Y"}, args)), "X", x);
    });
  };
  const std::vector<int64_t> x = {2, 3, 8, 8};
  EXPECT_MESSAGE_HAS(pool_error({IntArg("kernel", 2), IntArg("dilation", 2)}, x), "MaxPool",
                     "dilation");
  EXPECT_MESSAGE_HAS(pool_error({IntArg("kernel", 2), IntArg("pad", 2)}, x), "MaxPool",
                     "smaller than the kernel");
  EXPECT_MESSAGE_HAS(pool_error({IntArg("kernel", 3), IntsArg("pads", {1, 0, 0, 0})}, x),
                     "MaxPool", "equal begin and end pads");
  EXPECT_MESSAGE_HAS(pool_error({IntArg("kernel", 2)}, {2, 3, 8}), "MaxPool", "4-D", "'X'");
  EXPECT_MESSAGE_HAS(pool_error({}, x), "MaxPool", "kernel");
  // Global pooling needs no kernel and covers the whole image.
  const CudnnPoolPlan global = ResolveCudnnPool(
      ConvPoolArgs(MakeOp("AveragePool", {"X"}, {"Y"}, {IntArg("global_pooling", 1)})), "X",
      {2, 3, 7, 5});
  EXPECT_EQ(global.output_dims, (std::vector<int64_t>{2, 3, 1, 1}));
}

TEST(CudnnDataTypeTest, OnlyFloatingTypesMap) {
  EXPECT_EQ(CudnnDataTypeOf(DataType::kFloat, "t"), CUDNN_DATA_FLOAT);
  EXPECT_EQ(CudnnDataTypeOf(DataType::kDouble, "t"), CUDNN_DATA_DOUBLE);
  EXPECT_MESSAGE_HAS(ErrorOf([] { CudnnDataTypeOf(DataType::kInt32, "op Conv"); }), "op Conv",
                     "int32");
}

// ---- algorithm choice, on made-up cudnnGet*_v7 results ----

cudnnConvolutionFwdAlgoPerf_t Perf(cudnnConvolutionFwdAlgo_t algo, size_t memory,
                                   cudnnDeterminism_t determinism,
                                   cudnnMathType_t math = CUDNN_FMA_MATH,
                                   cudnnStatus_t status = CUDNN_STATUS_SUCCESS) {
  cudnnConvolutionFwdAlgoPerf_t perf{};
  perf.algo = algo;
  perf.status = status;
  perf.memory = memory;
  perf.determinism = determinism;
  perf.mathType = math;
  return perf;
}

TEST(CudnnAlgorithmTest, PicksTheFirstThatFitsTheLimits) {
  const std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs = {
      Perf(CUDNN_CONVOLUTION_FWD_ALGO_FFT, 0, CUDNN_DETERMINISTIC, CUDNN_FMA_MATH,
           CUDNN_STATUS_NOT_SUPPORTED),
      Perf(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, 0, CUDNN_DETERMINISTIC, CUDNN_TENSOR_OP_MATH),
      Perf(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, 1 << 20, CUDNN_NON_DETERMINISTIC),
      Perf(CUDNN_CONVOLUTION_FWD_ALGO_GEMM, 1 << 10, CUDNN_NON_DETERMINISTIC),
      Perf(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, 1 << 12, CUDNN_DETERMINISTIC),
  };
  auto pick = [&](size_t limit, bool deterministic, bool tensor_ops) {
    return PickCudnnAlgorithm(perfs, limit, deterministic, tensor_ops, "Conv", "forward").algo;
  };
  EXPECT_EQ(pick(size_t{1} << 30, false, true), CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD);
  EXPECT_EQ(pick(size_t{1} << 30, false, false),
            CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
  EXPECT_EQ(pick(size_t{1} << 11, false, false), CUDNN_CONVOLUTION_FWD_ALGO_GEMM);
  EXPECT_EQ(pick(size_t{1} << 30, true, false), CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { pick(size_t{1} << 11, true, false); }), "Conv",
                     "ws_nbytes_limit=2048", "deterministic");
  EXPECT_MESSAGE_HAS(ErrorOf([] {
                       PickCudnnAlgorithm(std::vector<cudnnConvolutionFwdAlgoPerf_t>{}, 0, false,
                                          false, "Conv 'c1'", "forward");
                     }),
                     "Conv 'c1'", "forward");
}

// ---- registration, and what a CUDA op does on a machine without a GPU ----

TEST(CudaDnnOpsTest, RegisteredForCudaWithTheirEngines) {
  const std::vector<std::pair<std::string, std::string>> keys = {
      {"Conv", ""},         {"Conv", "CUDNN"},          {"ConvGradient", ""},
      {"ConvGradient", "CUDNN"}, {"MaxPool", "CUDNN"},  {"MaxPoolGradient", ""},
      {"AveragePool", ""},  {"AveragePoolGradient", "CUDNN"}, {"SpatialBN", ""},
      {"SpatialBNGradient", "CUDNN"}, {"Softmax", "CUDNN"}, {"SoftmaxGradient", ""},
      {"FC", ""},           {"FC", "TENSORCORE"},       {"FCGradient", ""},
      {"FCGradient", "TENSORCORE"}, {"MatMul", ""},     {"MatMul", "TENSORCORE"},
  };
  for (const auto& key : keys) {
    EXPECT_NE(OperatorRegistry::Find({key.first, DeviceKind::kCUDA, key.second}), nullptr)
        << key.first << " engine '" << key.second << "'";
  }
}

TEST(CudaDnnOpsTest, CreatingOneWithoutAGpuIsAnErrorNotACrash) {
  if (HasCudaGpu()) GTEST_SKIP() << "this machine has a GPU";
  Workspace ws;
  ws.CreateBlob("X");
  OperatorDef def = MakeOp("Softmax", {"X"}, {"Y"});
  def.mutable_device_option()->set_device_type(static_cast<int>(DeviceKind::kCUDA));
  EXPECT_FALSE(ErrorOf([&] { CreateOperator(def, &ws); }).empty());
}

}  // namespace
}  // namespace doppio
