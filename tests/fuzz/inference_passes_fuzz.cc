// Fuzz target: bytes -> NetDef -> the inference passes (run_net applies them
// to every net it is given, by default) -> the rewritten net created and,
// when small, run. The passes must take any net without crashing: missing
// or extra inputs and outputs, unknown shapes, in-place blobs, odd
// arguments. An external input named like "x_2x4x5x5" is fed as a float
// tensor of those dims (each at most 8, at most 4 of them), so the fuzzer
// reaches convolutions, residual sums and NHWC regions by changing names;
// other names get net_fuzz_util's small tensors.
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/net.h"
#include "core/shape_walk.h"
#include "core/workspace.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/net_fuzz_util.h"
#include "transforms/optimize_inference.h"

namespace {

using doppio::NetDef;
using doppio::Tensor;
using doppio::TensorShape;

// The dims in a name's "_AxBxC" suffix, or none.
std::vector<int64_t> DimsInName(const std::string& name) {
  const size_t underscore = name.rfind('_');
  if (underscore == std::string::npos) return {};
  std::vector<int64_t> dims;
  int64_t value = -1;
  for (size_t i = underscore + 1; i <= name.size(); ++i) {
    const char c = i < name.size() ? name[i] : 'x';
    if (c >= '0' && c <= '9' && value < 8) {
      value = (value < 0 ? 0 : value * 10) + (c - '0');
    } else if (c == 'x' && value >= 1 && value <= 8 && dims.size() < 4) {
      dims.push_back(value);
      value = -1;
    } else {
      return {};
    }
  }
  return dims;
}

void FeedInputs(const NetDef& net, doppio::Workspace* workspace) {
  doppio::fuzz::FeedExternalInputs(net, workspace);
  for (const std::string& name : net.external_input()) {
    const std::vector<int64_t> dims = DimsInName(name);
    if (dims.empty()) continue;
    Tensor* tensor = workspace->CreateBlob(name)->GetMutableTensor();
    tensor->Resize(dims);
    float* data = tensor->mutable_data<float>();
    const uint64_t hash = doppio::fuzz::NameHash(name);
    for (int64_t i = 0; i < tensor->numel(); ++i) {
      data[i] = static_cast<float>((hash + 7 * i) % 17) / 8.0f - 1.0f;
    }
  }
}

// The netdef target's pure ops plus what the passes read and write.
bool Runnable(const doppio::OperatorDef& op) {
  static const std::set<std::string> kPassOps = {
      "Conv",  "ConvFusion", "SpatialBN", "MaxPool",     "AveragePool", "BatchMatMul",
      "Swish", "HardSwish",  "Gelu",      "HardSigmoid", "FCTransposed"};
  return doppio::fuzz::RunnableOps().count(op.type()) > 0 || kPassOps.count(op.type()) > 0;
}

// Runs only nets of runnable ops whose every output shape is known and
// small: the passes are under test, not the machine's memory (a Conv's pad
// argument can ask for any output size).
bool SmallEnoughToRun(const NetDef& net, const doppio::Workspace& workspace) {
  constexpr int64_t kMaxElements = 1 << 14;
  if (net.op_size() > doppio::fuzz::kMaxOpsToRun) return false;
  for (const doppio::OperatorDef& op : net.op()) {
    if (!Runnable(op)) return false;
  }
  const std::map<std::string, TensorShape> shapes =
      doppio::InferNetShapes(net, doppio::WorkspaceShapes(workspace));
  for (const doppio::OperatorDef& op : net.op()) {
    for (const std::string& output : op.output()) {
      const auto found = shapes.find(output);
      if (found == shapes.end() || found->second.unknown_shape()) return false;
      int64_t count = 1;
      for (int64_t dim : found->second.dims()) {
        if (dim < 0 || dim > kMaxElements) return false;
        count *= dim;
        if (count > kMaxElements) return false;
      }
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace doppio;
  fuzz::SetUpOnce();
  NetDef net;
  if (!fuzz::ParseBinaryOrText(data, size, &net)) return 0;
  for (const char* passes : {"default", "all"}) {
    Workspace workspace;
    FeedInputs(net, &workspace);
    NetDef optimized;
    try {
      optimized = transforms::OptimizeForInference(net, &workspace, {}, nullptr,
                                                   transforms::InferencePasses::Parse(passes));
    } catch (const Error&) {
      continue;  // a clear error is an answer; a crash is not
    }
    if (!SmallEnoughToRun(optimized, workspace)) continue;
    try {
      workspace.CreateNet(optimized);
      workspace.RunNet(optimized.name());
      workspace.RunNet(optimized.name());
    } catch (const Error&) {
    }
  }
  return 0;
}
