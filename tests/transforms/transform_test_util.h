// Helpers for the transform tests: random float blobs, running a net in a
// workspace and reading its outputs, and nets of the reference CNN's
// shapes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/workspace.h"
#include "proto/doppio.pb.h"
#include "tests/test_util.h"

namespace doppio {
namespace testing {

inline void FeedUniform(Workspace* ws, const std::string& name, const std::vector<int64_t>& dims,
                        float low, float high, std::mt19937* rng) {
  auto tensor = std::make_unique<Tensor>(dims, DataType::kFloat);
  std::uniform_real_distribution<float> dist(low, high);
  float* data = tensor->mutable_data<float>();
  for (int64_t i = 0; i < tensor->numel(); ++i) data[i] = dist(*rng);
  ws->CreateBlob(name)->Reset(std::move(tensor));
}

inline std::vector<float> Values(const Workspace& ws, const std::string& name) {
  const Blob* blob = ws.GetBlob(name);
  if (blob == nullptr) throw Error("test: no blob '" + name + "'");
  const Tensor& tensor = blob->GetTensor();
  const float* data = tensor.data<float>();
  return std::vector<float>(data, data + tensor.numel());
}

inline std::vector<int64_t> Dims(const Workspace& ws, const std::string& name) {
  return ws.GetBlob(name)->GetTensor().dims();
}

// A copy of every tensor blob of `from` into a fresh child-free workspace,
// so the fused and the unfused net each get pristine inputs.
inline void CopyTensors(const Workspace& from, Workspace* to) {
  for (const std::string& name : from.Blobs()) {
    const Blob* blob = from.GetBlob(name);
    if (!blob->IsTensor()) continue;
    auto copy = std::make_unique<Tensor>();
    copy->CopyFrom(blob->GetTensor());
    to->CreateBlob(name)->Reset(std::move(copy));
  }
}

// max |a - b| / (1 + |b|) over all elements; shapes must match.
inline double MaxRelativeDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    worst = std::max(worst, std::abs(double(a[i]) - b[i]) / (1.0 + std::abs(double(b[i]))));
  }
  return worst;
}

inline int CountOps(const NetDef& net, const std::string& type) {
  return static_cast<int>(std::count_if(net.op().begin(), net.op().end(),
                                        [&](const OperatorDef& op) { return op.type() == type; }));
}

inline NetDef MakeNet(const std::string& name, const std::vector<OperatorDef>& ops,
                      const std::vector<std::string>& external_outputs = {}) {
  NetDef net;
  net.set_name(name);
  for (const OperatorDef& op : ops) *net.add_op() = op;
  for (const std::string& output : external_outputs) net.add_external_output(output);
  return net;
}

// BN parameters named prefix_{s,b,rm,riv} for `channels` channels, with
// statistics far enough from the identity that a wrong fold shows.
inline void FeedBatchNormParams(Workspace* ws, const std::string& prefix, int64_t channels,
                                std::mt19937* rng) {
  FeedUniform(ws, prefix + "_s", {channels}, 0.5f, 1.5f, rng);
  FeedUniform(ws, prefix + "_b", {channels}, -0.5f, 0.5f, rng);
  FeedUniform(ws, prefix + "_rm", {channels}, -0.3f, 0.3f, rng);
  FeedUniform(ws, prefix + "_riv", {channels}, 0.5f, 1.5f, rng);
}

inline OperatorDef BatchNorm(const std::string& prefix, const std::string& input,
                             const std::string& output, int is_test = 1,
                             const std::string& order = "NCHW") {
  return MakeOp("SpatialBN",
                {input, prefix + "_s", prefix + "_b", prefix + "_rm", prefix + "_riv"}, {output},
                {IntArg("is_test", is_test), FloatArg("epsilon", 1e-5f),
                 StringArg("order", order)});
}

}  // namespace testing
}  // namespace doppio
