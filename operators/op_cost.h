// Cost inference: the FLOPs and bytes an op moves for given input shapes,
// attached to schemas with `.CostInferenceFunction(...)` as in Caffe2, and a
// walk over a whole NetDef that feeds each op the shapes that schema shape
// inference gives its inputs (tools/inspect_net's per-op table).
//
// Conventions (the figures are estimates for planning, not measurements):
//  - a multiply-add counts 2 FLOPs; a compare, add, exp or divide counts 1;
//  - bytes_read is every input's bytes, bytes_written every output's, each
//    at its element type's size; params_bytes is the learned parameters'
//    part of bytes_read (weights and biases, BN scale and bias);
//  - grouped convolutions count C / group input channels per output channel
//    (Caffe2 ignores group, overcounting grouped convs by a factor of group).
//
// Every function throws doppio::Error naming the op when the shapes do not
// fit it (too few inputs, wrong rank).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/schema.h"
#include "proto/doppio.pb.h"

namespace doppio {

using CostInputs = std::vector<TensorShape>;

// Conv / Conv1D-3D: 2 * N * out_spatial * kernel * (C / group) * M, plus
// N * M * out_spatial for the bias.
OpSchema::Cost CostInferenceForConv(const OperatorDef& def, const CostInputs& in);
// ConvGradient: dW costs what the forward conv does, dX (when computed) too,
// db one add per dY element.
OpSchema::Cost CostInferenceForConvGradient(const OperatorDef& def, const CostInputs& in);
// ConvTranspose: 2 * N * in_spatial * kernel * C * (M / group) (+ bias adds).
OpSchema::Cost CostInferenceForConvTranspose(const OperatorDef& def, const CostInputs& in);
// FC (W as [N, K]) and FCTransposed (W as [K, N]): 2 * M * N * K + M * N.
OpSchema::Cost CostInferenceForFC(const OperatorDef& def, const CostInputs& in);
OpSchema::Cost CostInferenceForFCTransposed(const OperatorDef& def, const CostInputs& in);
// FCGradient: dW 2*M*N*K, db M*N, dX (3 outputs) 2*M*N*K.
OpSchema::Cost CostInferenceForFCGradient(const OperatorDef& def, const CostInputs& in);
OpSchema::Cost CostInferenceForFCTransposedGradient(const OperatorDef& def,
                                                    const CostInputs& in);
// MatMul: 2 * M * N * K from the output's shape and the shared dim.
OpSchema::Cost CostInferenceForMatMul(const OperatorDef& def, const CostInputs& in);
// Pooling: one compare (max) or add (average) per window element per output.
OpSchema::Cost CostInferenceForPool(const OperatorDef& def, const CostInputs& in);
// Pooling gradients (X, Y, dY): one FLOP per window element per output, as
// the forward op.
OpSchema::Cost CostInferenceForPoolGradient(const OperatorDef& def, const CostInputs& in);
// SpatialBN: 4 FLOPs per element of X (Caffe2's figure); params are scale
// and bias. Its gradient: 5 per element of X (dX, and the dscale and dbias
// reductions).
OpSchema::Cost CostInferenceForSpatialBN(const OperatorDef& def, const CostInputs& in);
OpSchema::Cost CostInferenceForSpatialBNGradient(const OperatorDef& def, const CostInputs& in);
// Sum of k inputs: (k - 1) adds per element.
OpSchema::Cost CostInferenceForSum(const OperatorDef& def, const CostInputs& in);
// Concat: no arithmetic, every input copied once.
OpSchema::Cost CostInferenceForConcat(const OperatorDef& def, const CostInputs& in);
// Softmax: max, subtract, exp, sum and divide per element (5).
OpSchema::Cost CostInferenceForSoftmax(const OperatorDef& def, const CostInputs& in);
// SoftmaxWithLoss: the softmax plus a log and an add per row.
OpSchema::Cost CostInferenceForSoftmaxWithLoss(const OperatorDef& def, const CostInputs& in);
// Elementwise ops: `flops_per_element` FLOPs per element of the largest
// input (the output of a broadcast), all inputs read, one output of that
// size written per output.
OpSchema::CostInferenceFunctionType PointwiseCostInference(uint64_t flops_per_element);

// ---- whole nets ----

struct OpCostEstimate {
  int index = 0;
  std::string type;
  std::string name;
  bool known = false;  // false: `reason` says why there is no figure
  std::string reason;
  OpSchema::Cost cost;
};

struct NetCostEstimate {
  std::vector<OpCostEstimate> ops;
  OpSchema::Cost total;  // sum over the ops with known costs
  int unknown_ops = 0;
  // Shapes inferred for the blobs (the last write wins), the given ones
  // included.
  std::map<std::string, TensorShape> shapes;
};

// Walks `net`'s ops in order, inferring each op's output shapes from its
// schema and the shapes known so far (starting from `known_shapes`), and
// asks the schema's cost function for its cost. An op without a schema,
// without a cost function or with an input of unknown shape gets no figure
// (known = false) rather than an error.
NetCostEstimate InferNetCost(const NetDef& net,
                             const std::map<std::string, TensorShape>& known_shapes);

}  // namespace doppio
