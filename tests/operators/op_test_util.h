// Helpers for operator tests, on top of tests/test_util.h: seeding
// OperatorDefs, feeding and fetching tensors, and checking a gradient
// maker's ops against central finite differences of the forward op.
//
// The gradient check works on float64 inputs. Its scalar loss is a random
// projection of the forward outputs, L = sum_j <R_j, Y_j>, so the output
// gradients fed to the gradient ops are the R_j themselves. The forward op
// must not run in place (finite differences perturb its inputs).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/tensor.h"
#include "core/workspace.h"
#include "proto/doppio.pb.h"
#include "tests/test_util.h"

namespace doppio {
namespace testing {

// ---- defs (MakeOp and the *Arg builders are in tests/test_util.h) ----

inline void SetSeed(OperatorDef* def, uint32_t seed) {
  def->mutable_device_option()->set_random_seed(seed);
}

// ---- tensors ----

template <typename T>
void Feed(Workspace& ws, const std::string& name, const std::vector<int64_t>& dims,
          const std::vector<T>& values) {
  Tensor* tensor = ws.CreateBlob(name)->GetMutableTensor();
  tensor->Resize(dims);
  ASSERT_EQ(static_cast<size_t>(tensor->numel()), values.size()) << "feeding " << name;
  T* data = tensor->mutable_data<T>();
  std::copy(values.begin(), values.end(), data);
}

inline const Tensor& FetchTensor(Workspace& ws, const std::string& name) {
  const Blob* blob = ws.GetBlob(name);
  if (blob == nullptr) throw Error("test: no blob '" + name + "'");
  return blob->GetTensor();
}

template <typename T>
std::vector<T> Fetch(Workspace& ws, const std::string& name) {
  const Tensor& tensor = FetchTensor(ws, name);
  const T* data = tensor.data<T>();
  return std::vector<T>(data, data + tensor.numel());
}

// Deterministic values in [low, high).
template <typename T>
std::vector<T> RandomValues(int64_t count, uint32_t seed, double low = -1.0,
                            double high = 1.0) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> distribution(low, high);
  std::vector<T> values(count);
  for (auto& v : values) v = static_cast<T>(distribution(generator));
  return values;
}

inline int64_t NumElements(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  return count;
}

// ---- gradient check ----

struct GradientCheckOptions {
  double step = 1e-5;
  // |analytic - numeric| <= tolerance * max(1, |numeric|)
  double tolerance = 1e-6;
  uint32_t seed = 1234;
};

// Checks, for each input index in `checked_inputs`, the gradient that
// GetGradientForOp's ops produce for `forward` against central differences.
// `ws` must hold the forward inputs as float64 tensors.
inline void CheckGradient(const OperatorDef& forward, Workspace& ws,
                          const std::vector<int>& checked_inputs,
                          const GradientCheckOptions& options = {}) {
  for (const std::string& output : forward.output()) {
    for (const std::string& input : forward.input()) {
      ASSERT_NE(input, output) << "gradient checks need an out-of-place forward op";
    }
  }
  // Inputs as they were, for the finite-difference workspace.
  std::map<std::string, std::vector<double>> input_values;
  std::map<std::string, std::vector<int64_t>> input_dims;
  for (const std::string& input : forward.input()) {
    input_values[input] = Fetch<double>(ws, input);
    input_dims[input] = FetchTensor(ws, input).dims();
  }

  ws.RunOperatorOnce(forward);
  std::vector<std::vector<double>> projections;
  std::vector<GradientWrapper> output_gradients;
  for (int j = 0; j < forward.output_size(); ++j) {
    const Tensor& y = FetchTensor(ws, forward.output(j));
    projections.push_back(RandomValues<double>(y.numel(), options.seed + j));
    GradientWrapper wrapper;
    wrapper.dense = GradientName(forward.output(j));
    Feed<double>(ws, wrapper.dense, y.dims(), projections.back());
    output_gradients.push_back(wrapper);
  }
  const GradientOpsMeta meta = GetGradientForOp(forward, output_gradients);
  for (const OperatorDef& op : meta.ops) {
    EXPECT_TRUE(op.is_gradient_op()) << op.type();
    ws.RunOperatorOnce(op);
  }
  ASSERT_EQ(static_cast<int>(meta.input_gradients.size()), forward.input_size());

  Workspace fd_ws;
  for (const auto& entry : input_values) {
    Feed<double>(fd_ws, entry.first, input_dims[entry.first], entry.second);
  }
  auto loss = [&]() {
    fd_ws.RunOperatorOnce(forward);
    double total = 0.0;
    for (int j = 0; j < forward.output_size(); ++j) {
      const std::vector<double> y = Fetch<double>(fd_ws, forward.output(j));
      for (size_t k = 0; k < y.size(); ++k) total += projections[j][k] * y[k];
    }
    return total;
  };

  for (int i : checked_inputs) {
    const std::string& input = forward.input(i);
    SCOPED_TRACE("gradient of input " + std::to_string(i) + " '" + input + "' of " +
                 forward.type());
    const GradientWrapper& gradient = meta.input_gradients[i];
    ASSERT_TRUE(gradient.IsDense()) << "no dense gradient for " << input;
    const Tensor& analytic_tensor = FetchTensor(ws, gradient.dense);
    ASSERT_EQ(analytic_tensor.dims(), input_dims[input]);
    const std::vector<double> analytic = Fetch<double>(ws, gradient.dense);
    double* x = fd_ws.GetBlob(input)->GetMutableTensor()->mutable_data<double>();
    for (size_t k = 0; k < analytic.size(); ++k) {
      const double saved = x[k];
      x[k] = saved + options.step;
      const double plus = loss();
      x[k] = saved - options.step;
      const double minus = loss();
      x[k] = saved;
      const double numeric = (plus - minus) / (2 * options.step);
      EXPECT_NEAR(analytic[k], numeric,
                  options.tolerance * std::max(1.0, std::fabs(numeric)))
          << "element " << k;
    }
  }
}

}  // namespace testing
}  // namespace doppio
