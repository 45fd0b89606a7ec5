// What the NetDef and PlanDef targets share: small input tensors for a
// net's external inputs, and the allow-list of ops safe to run on them.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/workspace.h"
#include "proto/doppio.pb.h"

namespace doppio {
namespace fuzz {

// Ops whose outputs are computed from their input tensors alone and are at
// most a small multiple of their size, whatever the arguments say. Nets of
// only these ops are run (on the tiny tensors below), so their shape and
// argument checks are fuzzed too. Fillers (shapes from arguments), file and
// network ops, and anything that sleeps or allocates from an argument are
// left out: running them would measure the machine, not the checks.
inline const std::set<std::string>& RunnableOps() {
  static const std::set<std::string> ops = {
      "Abs",
      "Add",
      "Alias",
      "And",
      "Cast",
      "Clip",
      "ColwiseMax",
      "Concat",
      "Copy",
      "Div",
      "EQ",
      "Elu",
      "Exp",
      "ExpandDims",
      "FC",
      "Flatten",
      "FlattenToVec",
      "GE",
      "GT",
      "Gather",
      "LE",
      "LT",
      "LayerNorm",
      "LeakyRelu",
      "Log",
      "LogSoftmax",
      "MatMul",
      "Max",
      "Min",
      "Mul",
      "NCHW2NHWC",
      "NE",
      "NHWC2NCHW",
      "Neg",
      "Not",
      "Or",
      "ReduceMax",
      "ReduceMean",
      "ReduceSum",
      "Relu",
      "Reshape",
      "RowwiseMax",
      "Scale",
      "Shape",
      "Sigmoid",
      "Slice",
      "Softmax",
      "Softplus",
      "Split",
      "Sqrt",
      "Squeeze",
      "StopGradient",
      "Sub",
      "Sum",
      "SumElements",
      "Tanh",
      "Transpose",
      "Xor",
      // Detection ops whose outputs are bounded by their inputs (RoIAlign,
      // RoIPool and the resizes take output sizes from arguments).
      "AffineChannel",
      "BBoxTransform",
      "BoxWithNMSLimit",
      "GenerateProposals",
      "HasElements",
      "IsEmpty",
      "SpatialNarrowAs",
      "CollectRpnProposals",
      "DistributeFpnProposals",
      "CollectAndDistributeFpnRpnProposals",
      "GatherElements",
      // Int8 ops whose outputs are bounded by their inputs or arguments
      // (Int8Quantize makes Int8 blobs of the fed tensors).
      "Int8Quantize",
      "Int8Dequantize",
      "Int8GivenTensorFill",
      "Int8GivenIntTensorFill",
      "Int8Add",
      "Int8AddRelu",
      "Int8Sum",
      "Int8SumRelu",
      "Int8Relu",
      "Int8LeakyRelu",
      "Int8Sigmoid",
      "Int8Softmax",
      "Int8FC",
      "Int8Flatten",
      "Int8Reshape",
      "Int8Transpose",
      "Int8Slice",
      "Int8Concat",
      "Int8ChannelShuffle",
  };
  return ops;
}

constexpr int kMaxOpsToRun = 64;

inline bool AllOpsRunnable(const NetDef& net) {
  if (net.op_size() > kMaxOpsToRun) return false;
  for (const OperatorDef& op : net.op()) {
    if (!RunnableOps().count(op.type())) return false;
  }
  return true;
}

// FNV-1a: a stable hash, so a blob name always gets the same tensor.
inline uint64_t NameHash(const std::string& name) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : name) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

// A tensor of at most 3 dims of at most 3 elements each, its dtype and
// shape picked by the name's hash so that the fuzzer reaches other shapes
// and types by changing names. Values are small and finite (some integer
// values are out of range as indices, on purpose).
inline void FillTensorForName(const std::string& name, Tensor* tensor) {
  uint64_t bits = NameHash(name);
  auto take = [&bits](uint64_t n) {
    const uint64_t value = bits % n;
    bits /= n;
    return value;
  };
  static const DataType kTypes[] = {DataType::kFloat, DataType::kFloat, DataType::kFloat,
                                    DataType::kInt32, DataType::kInt64, DataType::kBool};
  const DataType dtype = kTypes[take(6)];
  std::vector<int64_t> dims(take(4));
  for (int64_t& dim : dims) dim = static_cast<int64_t>(take(4));
  tensor->Resize(dims);
  const int64_t numel = tensor->numel();
  switch (dtype) {
    case DataType::kFloat: {
      float* data = tensor->mutable_data<float>();
      for (int64_t i = 0; i < numel; ++i) data[i] = 0.5f * static_cast<float>(take(9)) - 2.0f;
      break;
    }
    case DataType::kInt32: {
      int32_t* data = tensor->mutable_data<int32_t>();
      for (int64_t i = 0; i < numel; ++i) data[i] = static_cast<int32_t>(take(5)) - 1;
      break;
    }
    case DataType::kInt64: {
      int64_t* data = tensor->mutable_data<int64_t>();
      for (int64_t i = 0; i < numel; ++i) data[i] = static_cast<int64_t>(take(5)) - 1;
      break;
    }
    default: {
      bool* data = tensor->mutable_data<bool>();
      for (int64_t i = 0; i < numel; ++i) data[i] = take(2) != 0;
      break;
    }
  }
}

// Creates the net's external inputs (the first few) as small tensors, so
// that op construction gets past "input missing" to the checks beyond it.
inline void FeedExternalInputs(const NetDef& net, Workspace* workspace) {
  constexpr int kMaxFed = 16;
  for (int i = 0; i < net.external_input_size() && i < kMaxFed; ++i) {
    const std::string& name = net.external_input(i);
    FillTensorForName(name, workspace->CreateBlob(name)->GetMutableTensor());
  }
}

}  // namespace fuzz
}  // namespace doppio
