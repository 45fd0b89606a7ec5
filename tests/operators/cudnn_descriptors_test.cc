// cuDNN descriptors and the host-side planning of the CUDA conv/pool ops,
// none of which needs a GPU: descriptors are filled for the reference CNN's
// shapes (python_api/examples/fmnist_train.py, add_reference_cnn) and read
// back through cuDNN's getters; cuDNN's output-size arithmetic is compared
// with the convolution formula written here; argument errors are raised
// before any CUDA call. Descriptor tests skip visibly if this machine's
// cuDNN refuses to create descriptors at all.
#include <gtest/gtest.h>

#include <cudnn.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/cuda/cuda_common.h"
#include "core/registry.h"
#include "core/workspace.h"
#include "operators/conv_op_gpu.h"
#include "operators/conv_transpose_op_gpu.h"
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

// ---- ConvTranspose ----

// The transposed convolution's output size, written independently of the
// code under test.
int64_t ConvTransposeOut(int64_t in, int64_t kernel, int64_t pad_begin, int64_t pad_end,
                         int64_t stride, int64_t dilation, int64_t adj) {
  return (in - 1) * stride - pad_begin - pad_end + dilation * (kernel - 1) + 1 + adj;
}

struct ConvTransposeCase {
  const char* name;
  std::vector<int64_t> x;  // NCHW (or NCL / NCDHW)
  std::vector<int64_t> w;  // C, M per group, kernel...
  std::vector<int64_t> pads;  // begin per axis..., end per axis...
  int stride, dilation, adj, group;
};

// A decoder's upsampling layers (batch 64, 7 -> 14 -> 28 like the reference
// CNN's feature maps in reverse) plus adj, group, dilation, unequal pads
// whose difference adj makes up, 1-D and 3-D.
const std::vector<ConvTransposeCase>& ConvTransposeCases() {
  static const std::vector<ConvTransposeCase> cases = {
      {"up1", {64, 64, 7, 7}, {64, 32, 4, 4}, {1, 1, 1, 1}, 2, 1, 0, 1},
      {"up2", {64, 32, 14, 14}, {32, 1, 4, 4}, {1, 1, 1, 1}, 2, 1, 0, 1},
      {"adj", {8, 16, 7, 7}, {16, 8, 3, 3}, {1, 1, 1, 1}, 2, 1, 1, 1},
      {"grouped", {4, 8, 5, 6}, {8, 3, 3, 2}, {0, 0, 0, 0}, 1, 1, 0, 2},
      {"dilated", {2, 3, 5, 5}, {3, 4, 3, 3}, {2, 2, 2, 2}, 3, 2, 2, 1},
      {"unequal_pads", {2, 4, 6, 5}, {4, 2, 3, 3}, {0, 1, 1, 1}, 2, 1, 1, 1},
      {"1d", {2, 3, 9}, {3, 5, 4}, {1, 1}, 2, 1, 1, 1},
      {"3d", {1, 4, 3, 4, 5}, {4, 2, 3, 3, 3}, {1, 1, 1, 1, 1, 1}, 2, 1, 0, 1},
  };
  return cases;
}

OperatorDef ConvTransposeDef(const ConvTransposeCase& c, const std::string& order = "NCHW") {
  return MakeOp("ConvTranspose", {"X", "W", "b"}, {"Y"},
                {IntsArg("pads", c.pads), IntArg("stride", c.stride),
                 IntArg("dilation", c.dilation), IntArg("adj", c.adj), IntArg("group", c.group),
                 StringArg("order", order)});
}

CudnnConvTransposePlan PlanOf(const OperatorDef& def, const std::vector<int64_t>& x,
                              const std::vector<int64_t>& w) {
  return ResolveCudnnConvTranspose(ConvPoolArgs(def), ConvTransposeAdj(def), "X", x, "W", w);
}

std::vector<int64_t> ExpectedConvTransposeDims(const ConvTransposeCase& c) {
  const size_t spatial = c.x.size() - 2;
  std::vector<int64_t> dims = {c.x[0], c.w[1] * c.group};
  for (size_t axis = 0; axis < spatial; ++axis) {
    dims.push_back(ConvTransposeOut(c.x[2 + axis], c.w[2 + axis], c.pads[axis],
                                    c.pads[spatial + axis], c.stride, c.dilation, c.adj));
  }
  return dims;
}

TEST(CudnnConvTransposePlanTest, OutputShapesMatchTheTransposedFormula) {
  for (const ConvTransposeCase& c : ConvTransposeCases()) {
    SCOPED_TRACE(c.name);
    const CudnnConvTransposePlan plan = PlanOf(ConvTransposeDef(c), c.x, c.w);
    EXPECT_EQ(plan.output_dims, ExpectedConvTransposeDims(c));
    EXPECT_EQ(plan.in_channels, c.x[1]);
    EXPECT_EQ(plan.out_channels, c.w[1] * c.group);
    EXPECT_EQ(plan.group, c.group);
    // cuDNN gets the filter as it is (K = C), X and Y in N, C, spatial...
    const size_t rank = std::max<size_t>(c.x.size(), 4);
    EXPECT_EQ(plan.cudnn_w_dims.size(), rank);
    EXPECT_EQ(plan.cudnn_w_dims.front(), c.w[0]);
    EXPECT_EQ(plan.cudnn_w_dims[1], c.w[1]);
    EXPECT_EQ(plan.cudnn_x_dims.size(), rank);
    EXPECT_EQ(plan.cudnn_y_dims.size(), rank);
    EXPECT_EQ(plan.cudnn_x_dims[1], c.x[1]);
    EXPECT_EQ(plan.cudnn_y_dims[1], c.w[1] * c.group);
  }
  // The reference decoder: 7 -> 14 -> 28.
  EXPECT_EQ(PlanOf(ConvTransposeDef(ConvTransposeCases()[0]), ConvTransposeCases()[0].x,
                   ConvTransposeCases()[0].w)
                .output_dims,
            (std::vector<int64_t>{64, 32, 14, 14}));
}

// cuDNN computes ConvTranspose as the data gradient of a convolution from Y
// to X: that convolution, built from the plan, must map Y's shape onto X's
// exactly, or cuDNN would refuse the descriptors at run time.
TEST(CudnnDescriptorsTest, ConvTransposeDescriptorsMapYOntoX) {
  SKIP_WITHOUT_CUDNN_DESCRIPTORS();
  for (const std::string order : {"NCHW", "NHWC"}) {
    for (const ConvTransposeCase& c : ConvTransposeCases()) {
      SCOPED_TRACE(std::string(c.name) + " " + order);
      std::vector<int64_t> x = c.x, w = c.w;
      if (order == "NHWC") {
        // Channels last; the filter keeps C first and M / group last.
        x.erase(x.begin() + 1);
        x.push_back(c.x[1]);
        w.erase(w.begin() + 1);
        w.push_back(c.w[1]);
      }
      const CudnnConvTransposePlan plan = PlanOf(ConvTransposeDef(c, order), x, w);
      const cudnnTensorFormat_t format = order == "NHWC" ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
      CudnnTensorDescriptor y_desc;
      y_desc.SetNd(format, CUDNN_DATA_FLOAT, plan.cudnn_y_dims);
      CudnnFilterDescriptor w_desc;
      w_desc.SetNd(format, CUDNN_DATA_FLOAT, plan.cudnn_w_dims);
      CudnnConvolutionDescriptor conv;
      conv.SetNd(plan.pads, plan.strides, plan.dilations, CUDNN_DATA_FLOAT, c.group,
                 CUDNN_FMA_MATH);
      const int rank = static_cast<int>(plan.cudnn_y_dims.size());
      std::vector<int> mapped(rank);
      ASSERT_EQ(cudnnGetConvolutionNdForwardOutputDim(conv.get(), y_desc.get(), w_desc.get(),
                                                      rank, mapped.data()),
                CUDNN_STATUS_SUCCESS);
      EXPECT_EQ(std::vector<int64_t>(mapped.begin(), mapped.end()), plan.cudnn_x_dims);
      // Y's element count survives the 1-D lift.
      int64_t cudnn_count = 1, expected_count = 1;
      for (int64_t v : plan.cudnn_y_dims) cudnn_count *= v;
      for (int64_t v : ExpectedConvTransposeDims(c)) expected_count *= v;
      EXPECT_EQ(cudnn_count, expected_count);
      if (order == "NHWC") {
        EXPECT_EQ(plan.output_dims.back(), c.w[1] * c.group);  // channels stay last
        EXPECT_EQ(plan.output_dims[1], ExpectedConvTransposeDims(c)[2]);
      }
    }
  }
}

std::string ConvTransposeError(const std::vector<Argument>& args, const std::vector<int64_t>& x,
                               const std::vector<int64_t>& w) {
  return ErrorOf([&] {
    const OperatorDef def = MakeOp("ConvTranspose", {"X", "W"}, {"Y"}, args);
    PlanOf(def, x, w);
  });
}

TEST(CudnnConvTransposePlanTest, BadArgumentsAndShapesNameTheOpAndBlob) {
  const std::vector<int64_t> x = {2, 8, 5, 5}, w = {8, 4, 3, 3};
  EXPECT_MESSAGE_HAS(ConvTransposeError({IntArg("kernel", 5)}, x, w), "ConvTranspose",
                     "kernel", "'W'");
  EXPECT_MESSAGE_HAS(ConvTransposeError({}, x, {6, 4, 3, 3}), "ConvTranspose", "'W'", "'X'",
                     "8");
  EXPECT_MESSAGE_HAS(ConvTransposeError({IntArg("group", 3)}, x, w), "ConvTranspose",
                     "group 3", "'X'");
  EXPECT_MESSAGE_HAS(ConvTransposeError({}, x, {8, 4, 3}), "ConvTranspose", "'W'");
  EXPECT_MESSAGE_HAS(ConvTransposeError({}, {2, 8}, {8, 4}), "ConvTranspose", "'X'");
  EXPECT_MESSAGE_HAS(ConvTransposeError({IntArg("stride", 2), IntArg("adj", 3)}, x, w),
                     "ConvTranspose", "adj 3", "stride 2");
  EXPECT_MESSAGE_HAS(ConvTransposeError({IntArg("adj", 1), IntsArg("adjs", {1, 1})}, x, w),
                     "ConvTranspose", "only one");
  EXPECT_MESSAGE_HAS(ConvTransposeError({IntArg("adj_h", 1)}, x, w), "ConvTranspose",
                     "adj_h and adj_w");
  EXPECT_MESSAGE_HAS(ConvTransposeError({IntsArg("adjs", {0, 0, 0})}, x, w), "ConvTranspose",
                     "'X'", "2 spatial");
  EXPECT_MESSAGE_HAS(ConvTransposeError({IntArg("adj", -1)}, x, w), "ConvTranspose", ">= 0");
  EXPECT_MESSAGE_HAS(ConvTransposeError({IntArg("pad", 4)}, {2, 8, 1, 1}, w), "ConvTranspose",
                     "'X'", "output size");
  // What the CPU op takes but cuDNN's convolution cannot express: the CUDA
  // op then runs the CPU kernel (NotImplementedError, cuda_fallback_test).
  EXPECT_MESSAGE_HAS(ConvTransposeError({IntArg("stride", 2), IntArg("adj", 2)}, x, w),
                     "ConvTranspose", "CUDA", "adj + pad_begin - pad_end");
  EXPECT_THROW(
      PlanOf(MakeOp("ConvTranspose", {"X", "W"}, {"Y"}, {IntArg("stride", 2), IntArg("adj", 2)}), x,
             w),
      NotImplementedError);
  EXPECT_MESSAGE_HAS(ConvTransposeError({IntsArg("pads", {2, 0, 0, 0})}, x, w),
                     "ConvTranspose", "CUDA", "pad_begin", "'X'");
  EXPECT_MESSAGE_HAS(ConvTransposeError({IntArg("global_pooling", 1)}, x, w), "ConvTranspose",
                     "global_pooling");
  // VALID / SAME mean no padding, as on the CPU.
  const OperatorDef valid =
      MakeOp("ConvTranspose", {"X", "W"}, {"Y"}, {IntArg("legacy_pad", 1)});
  EXPECT_EQ(PlanOf(valid, x, w).output_dims, (std::vector<int64_t>{2, 4, 7, 7}));
  // adj_h / adj_w and adjs are the per-axis forms.
  const OperatorDef per_axis =
      MakeOp("ConvTranspose", {"X", "W"}, {"Y"},
             {IntArg("stride", 2), IntArg("adj_h", 1), IntArg("adj_w", 0)});
  EXPECT_EQ(PlanOf(per_axis, x, w).output_dims, (std::vector<int64_t>{2, 4, 12, 11}));
}

TEST(CudaDnnOpsTest, ConvTransposeRegisteredForCudaWithItsEngine) {
  for (const char* op : {"ConvTranspose", "ConvTransposeGradient"}) {
    for (const char* engine : {"", "CUDNN"}) {
      EXPECT_NE(OperatorRegistry::Find({op, DeviceKind::kCUDA, engine}), nullptr)
          << op << " engine '" << engine << "'";
    }
  }
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

// What cuDNN cannot take is NotImplementedError, which the ops answer with
// their CPU kernel (cuda_fallback_test); a wrong argument stays an Error of
// another kind, reported to the user.
TEST(CudnnPlanTest, WhatCudnnCannotTakeIsNotImplemented) {
  const std::vector<int64_t> x = {1, 2, 5, 5}, w = {3, 2, 3, 3};
  const OperatorDef asymmetric =
      MakeOp("Conv", {"X", "W"}, {"Y"}, {IntArg("kernel", 3), IntsArg("pads", {0, 1, 1, 0})});
  EXPECT_THROW(ResolveCudnnConv(ConvPoolArgs(asymmetric), "X", x, "W", w), NotImplementedError);
  EXPECT_THROW(
      ResolveCudnnPool(ConvPoolArgs(MakeOp("MaxPool", {"X"}, {"Y"}, {IntArg("kernel", 2)})), "X",
                       {2, 3, 8}),
      NotImplementedError);
  const OperatorDef wrong_kernel = MakeOp("Conv", {"X", "W"}, {"Y"}, {IntArg("kernel", 5)});
  try {
    ResolveCudnnConv(ConvPoolArgs(wrong_kernel), "X", x, "W", w);
    ADD_FAILURE() << "a kernel that does not match the filter was accepted";
  } catch (const NotImplementedError& error) {
    ADD_FAILURE() << "a user error reads as unsupported: " << error.what();
  } catch (const Error&) {
  }
}

}  // namespace
}  // namespace doppio
