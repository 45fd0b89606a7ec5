// CPU vs CUDA (cuDNN) for ConvTranspose and ConvTransposeGradient: each op
// runs on the CPU and on GPU 0 from the same inputs, and every output must
// agree, over NCHW and NHWC, 1-D to 3-D, float32 and float64, groups,
// dilation, adj and unequal pads. The forward pass is also checked against a
// direct scatter loop written here, so a bug shared by both backends shows.
//
// Without a GPU every test skips with the reason; with DOPPIO_REQUIRE_GPU=1
// (tools/gpu_selftest.sh) it fails instead.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/workspace.h"
#include "tests/operators/cpu_vs_cuda_util.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::IntArg;
using testing::IntsArg;
using testing::MakeOp;
using testing::StringArg;
using namespace cpu_vs_cuda;

// Deterministic, sign-varying values in about [-1, 1].
template <typename T>
Feed Make(const std::string& name, const std::vector<int64_t>& dims, int salt) {
  return cpu_vs_cuda::Make<T>(name, dims, Values<T>(Count(dims), 1.0, salt));
}

// ---- the reference: a direct NCHW 2-D transposed convolution ----

struct Geometry2d {
  int64_t n, c, h, w;       // X
  int64_t mg, kh, kw;       // filter [C, M / group, kh, kw]
  int64_t group, stride, dilation, adj;
  int64_t pad_t, pad_l, pad_b, pad_r;
};

// Every X value times the filter scattered onto the uncropped output, then
// the pads cropped and the bias added.
std::vector<double> ReferenceConvTranspose(const Geometry2d& g, const std::vector<double>& x,
                                           const std::vector<double>& w,
                                           const std::vector<double>& bias, int64_t* out_h,
                                           int64_t* out_w) {
  const int64_t full_h = (g.h - 1) * g.stride + g.dilation * (g.kh - 1) + 1 + g.adj;
  const int64_t full_w = (g.w - 1) * g.stride + g.dilation * (g.kw - 1) + 1 + g.adj;
  *out_h = full_h - g.pad_t - g.pad_b;
  *out_w = full_w - g.pad_l - g.pad_r;
  const int64_t m = g.mg * g.group, cg = g.c / g.group;
  std::vector<double> y(g.n * m * *out_h * *out_w, 0.0);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t i = 0; i < g.h; ++i)
        for (int64_t j = 0; j < g.w; ++j)
          for (int64_t o = 0; o < g.mg; ++o)
            for (int64_t a = 0; a < g.kh; ++a)
              for (int64_t b = 0; b < g.kw; ++b) {
                const int64_t row = i * g.stride + a * g.dilation - g.pad_t;
                const int64_t col = j * g.stride + b * g.dilation - g.pad_l;
                if (row < 0 || row >= *out_h || col < 0 || col >= *out_w) continue;
                const int64_t channel = (c / cg) * g.mg + o;
                y[((n * m + channel) * *out_h + row) * *out_w + col] +=
                    x[((n * g.c + c) * g.h + i) * g.w + j] *
                    w[((c * g.mg + o) * g.kh + a) * g.kw + b];
              }
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t p = 0; p < *out_h * *out_w; ++p) y[(n * m + o) * *out_h * *out_w + p] += bias[o];
  return y;
}

std::vector<double> AsDoubles(const Feed& feed) {
  std::vector<double> values;
  const int64_t count = Count(feed.dims);
  for (int64_t i = 0; i < count; ++i) {
    if (feed.dtype == DataType::kFloat) {
      values.push_back(reinterpret_cast<const float*>(feed.bytes.data())[i]);
    } else {
      values.push_back(reinterpret_cast<const double*>(feed.bytes.data())[i]);
    }
  }
  return values;
}

// ---- cases ----

struct Case {
  std::vector<int64_t> x, w;  // in the op's order
  std::vector<Argument> args;
  int64_t out_channels;  // M, for the bias
  std::string engine = "";
};

OperatorDef Def(const Case& c, const std::string& type, const std::vector<std::string>& inputs,
                const std::vector<std::string>& outputs, const std::vector<Argument>& args) {
  OperatorDef def = MakeOp(type, inputs, outputs, args);
  def.set_engine(c.engine);
  return def;
}

// Forward with a bias, then the gradient with all three outputs, with only
// dW and dX (no_bias) and with only dW.
template <typename T>
void CheckForwardAndGradient(const Case& c, double tolerance) {
  const Feed x = Make<T>("X", c.x, 1);
  const Feed w = Make<T>("W", c.w, 2);
  const Feed b = Make<T>("b", {c.out_channels}, 3);
  const std::vector<Fetched> y = ExpectCpuEqualsCuda(
      Def(c, "ConvTranspose", {"X", "W", "b"}, {"Y"}, c.args), {x, w, b}, tolerance);
  ExpectCpuEqualsCuda(Def(c, "ConvTranspose", {"X", "W"}, {"Y"}, c.args), {x, w}, tolerance);
  ASSERT_EQ(y.size(), 1u);
  const Feed dy = Make<T>("dY", y[0].dims, 4);
  ExpectCpuEqualsCuda(
      Def(c, "ConvTransposeGradient", {"X", "W", "dY"}, {"dW", "db", "dX"}, c.args),
      {x, w, dy}, tolerance);
  std::vector<Argument> no_bias = c.args;
  no_bias.push_back(IntArg("no_bias", 1));
  ExpectCpuEqualsCuda(Def(c, "ConvTransposeGradient", {"X", "W", "dY"}, {"dW", "dX"}, no_bias),
                      {x, w, dy}, tolerance);
  ExpectCpuEqualsCuda(Def(c, "ConvTransposeGradient", {"X", "W", "dY"}, {"dW"}, no_bias),
                      {x, w, dy}, tolerance);
}

TEST(CpuVsCudaConvTranspose, ForwardMatchesADirectScatter) {
  SKIP_WITHOUT_GPU();
  const Geometry2d g{2, 4, 5, 6, 3, 3, 2, 2, 2, 2, 1, 0, 1, 1, 1};
  const Feed x = Make<double>("X", {g.n, g.c, g.h, g.w}, 5);
  const Feed w = Make<double>("W", {g.c, g.mg, g.kh, g.kw}, 6);
  const Feed b = Make<double>("b", {g.mg * g.group}, 7);
  int64_t out_h = 0, out_w = 0;
  const std::vector<double> expected =
      ReferenceConvTranspose(g, AsDoubles(x), AsDoubles(w), AsDoubles(b), &out_h, &out_w);
  const OperatorDef def = MakeOp(
      "ConvTranspose", {"X", "W", "b"}, {"Y"},
      {IntArg("stride", g.stride), IntArg("dilation", g.dilation), IntArg("adj", g.adj),
       IntArg("group", g.group), IntsArg("pads", {g.pad_t, g.pad_l, g.pad_b, g.pad_r})});
  const std::vector<Fetched> gpu = RunOn(def, {x, w, b}, true);
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_EQ(gpu[0].dims, (std::vector<int64_t>{g.n, g.mg * g.group, out_h, out_w}));
  Fetched reference{gpu[0].dims, DataType::kDouble, DeviceKind::kCPU, expected};
  ExpectClose(reference, gpu[0], 1e-10, "ConvTranspose vs the direct scatter");
}

TEST(CpuVsCudaConvTranspose, Nchw2d) {
  SKIP_WITHOUT_GPU();
  // A decoder's upsampling layer: 7 -> 14.
  CheckForwardAndGradient<float>(
      {{4, 16, 7, 7}, {16, 8, 4, 4}, {IntArg("stride", 2), IntArg("pad", 1)}, 8}, 1e-4);
  CheckForwardAndGradient<double>(
      {{2, 6, 5, 4}, {6, 2, 3, 3},
       {IntArg("stride", 2), IntArg("adj", 1), IntArg("pad", 1), IntArg("group", 3)}, 6},
      1e-10);
  // Dilation, and unequal pads whose difference adj makes up.
  CheckForwardAndGradient<double>(
      {{2, 3, 4, 5}, {3, 2, 3, 2},
       {IntArg("stride", 2), IntArg("dilation", 2), IntArg("adj", 1),
        IntsArg("pads", {0, 1, 1, 1})},
       2},
      1e-10);
  // The kernel argument, kernel_h/kernel_w and adj_h/adj_w forms.
  CheckForwardAndGradient<float>(
      {{2, 4, 3, 3}, {4, 2, 3, 2},
       {IntArg("kernel_h", 3), IntArg("kernel_w", 2), IntArg("stride_h", 2), IntArg("stride_w", 3),
        IntArg("adj_h", 1), IntArg("adj_w", 2)},
       2},
      1e-4);
}

TEST(CpuVsCudaConvTranspose, OneAndThreeSpatialDims) {
  SKIP_WITHOUT_GPU();
  CheckForwardAndGradient<float>(
      {{2, 3, 9}, {3, 4, 4}, {IntArg("stride", 2), IntArg("pad", 1), IntArg("adj", 1)}, 4},
      1e-4);
  CheckForwardAndGradient<double>(
      {{1, 4, 3, 4, 3}, {4, 2, 3, 3, 3}, {IntArg("stride", 2), IntArg("pad", 1)}, 2}, 1e-10);
}

// NHWC: on the H100 with cuDNN 9, every float32 NHWC backward-data
// algorithm needs tensor-op (TF32) math, which is off by default. So each
// case either matches the CPU or fails with the op's clear error.
template <typename T>
void CheckNhwcOrClearError(const std::vector<int64_t>& x_dims,
                           const std::vector<int64_t>& w_dims, std::vector<Argument> args,
                           double tolerance) {
  args.push_back(StringArg("order", "NHWC"));
  const OperatorDef def = MakeOp("ConvTranspose", {"X", "W"}, {"Y"}, args);
  const Feed x = Make<T>("X", x_dims, 1);
  const Feed w = Make<T>("W", w_dims, 2);
  const std::string error = testing::ErrorIfAny([&] { RunOn(def, {x, w}, true); });
  if (error.empty()) {
    ExpectCpuEqualsCuda(def, {x, w}, tolerance);
  } else {
    EXPECT_MESSAGE_HAS(error, "ConvTranspose", "ws_nbytes_limit", "tensor-op");
  }
}

TEST(CpuVsCudaConvTranspose, Nhwc) {
  SKIP_WITHOUT_GPU();
  CheckNhwcOrClearError<float>({2, 5, 5, 4}, {4, 3, 3, 3},
                               {IntArg("stride", 2), IntArg("pad", 1)}, 1e-4);
  CheckNhwcOrClearError<float>({2, 5, 5, 4}, {4, 3, 3, 3},
                               {IntArg("stride", 2), IntArg("pad", 1), IntArg("group", 2)}, 1e-4);
  CheckNhwcOrClearError<double>({2, 4, 3, 6}, {6, 2, 2, 5},
                                {IntArg("stride", 2), IntArg("adj", 1)}, 1e-10);
}

TEST(CpuVsCudaConvTranspose, SearchAndDeterministicArgumentsGiveTheSameResult) {
  SKIP_WITHOUT_GPU();
  CheckForwardAndGradient<float>(
      {{2, 8, 6, 6}, {8, 4, 3, 3},
       {IntArg("stride", 2), IntArg("pad", 1), IntArg("adj", 1), IntArg("exhaustive_search", 1),
        IntArg("ws_nbytes_limit", 1 << 24)},
       4},
      1e-4);
  CheckForwardAndGradient<float>(
      {{2, 8, 6, 6}, {8, 4, 3, 3},
       {IntArg("stride", 2), IntArg("pad", 1), IntArg("deterministic", 1),
        IntArg("shared_buffer", 1)},
       4,
       "CUDNN"},
      1e-4);
}

TEST(CpuVsCudaConvTranspose, EmptyBatchGivesEmptyOutputAndZeroGradients) {
  SKIP_WITHOUT_GPU();
  const Case c{{0, 4, 3, 3}, {4, 2, 3, 3}, {IntArg("stride", 2)}, 2};
  const Feed x = Make<float>("X", c.x, 1);
  const Feed w = Make<float>("W", c.w, 2);
  const std::vector<Fetched> y =
      ExpectCpuEqualsCuda(MakeOp("ConvTranspose", {"X", "W"}, {"Y"}, c.args), {x, w}, 1e-5);
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].dims, (std::vector<int64_t>{0, 2, 7, 7}));
  const Feed dy = Make<float>("dY", y[0].dims, 4);
  ExpectCpuEqualsCuda(
      MakeOp("ConvTransposeGradient", {"X", "W", "dY"}, {"dW", "db", "dX"}, c.args), {x, w, dy},
      1e-5);
}

TEST(CpuVsCudaConvTranspose, WhatCudnnCannotExpressRunsOnTheCpuKernel) {
  SKIP_WITHOUT_GPU();
  const Feed x = Make<float>("X", {1, 2, 3, 3}, 1);
  const Feed w = Make<float>("W", {2, 2, 3, 3}, 2);
  // adj == stride: the CPU accepts it; cuDNN's convolution cannot map it,
  // so the CUDA op runs its CPU kernel (core/cuda/cuda_fallback_op.h).
  const OperatorDef def =
      MakeOp("ConvTranspose", {"X", "W"}, {"Y"}, {IntArg("stride", 2), IntArg("adj", 2)});
  ExpectCpuEqualsCuda(def, {x, w}, 1e-5);
  // Wrong shapes and types name the op and blob, as on the CPU.
  const Feed bad_w = Make<float>("W", {3, 2, 3, 3}, 2);
  EXPECT_MESSAGE_HAS(
      ErrorOf([&] { RunOn(MakeOp("ConvTranspose", {"X", "W"}, {"Y"}), {x, bad_w}, true); }),
      "ConvTranspose", "'W'", "'X'");
  const Feed int_x{"X", {1, 2, 3, 3}, DataType::kInt32, std::vector<char>(18 * 4, 0)};
  EXPECT_MESSAGE_HAS(
      ErrorOf([&] { RunOn(MakeOp("ConvTranspose", {"X", "W"}, {"Y"}), {int_x, w}, true); }),
      "ConvTranspose", "'X'", "float");
}

}  // namespace
}  // namespace doppio
