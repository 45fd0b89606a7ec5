#include "operators/op_cost.h"

#include <algorithm>

#include "core/argument.h"
#include "core/enforce.h"
#include "core/shape_walk.h"
#include "core/types.h"
#include "operators/conv_pool_op_base.h"
#include "operators/fc_op.h"
#include "operators/matmul_op.h"
#include "operators/shape_inference_utils.h"

namespace doppio {
namespace {

uint64_t ElementCount(const TensorShape& shape) {
  uint64_t count = 1;
  for (int64_t d : shape.dims()) count *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
  return count;
}

// Strings and undefined types have no fixed width; they count as 4 bytes so
// a figure still comes out (no op here does arithmetic on them).
uint64_t ElementBytes(const TensorShape& shape) {
  const auto dtype = static_cast<DataType>(shape.data_type());
  if (!IsStorableType(dtype) || dtype == DataType::kString) return 4;
  return ItemSize(dtype);
}

uint64_t Bytes(const TensorShape& shape) { return ElementCount(shape) * ElementBytes(shape); }

uint64_t BytesOf(const CostInputs& shapes) {
  uint64_t total = 0;
  for (const TensorShape& shape : shapes) total += Bytes(shape);
  return total;
}

void RequireInputs(const OperatorDef& def, const CostInputs& in, size_t count) {
  DOPPIO_ENFORCE(in.size() >= count, "cost inference of op ", def.type(), " needs ", count,
                 " input shapes, got ", in.size());
  for (size_t i = 0; i < count; ++i) {
    DOPPIO_ENFORCE(!in[i].unknown_shape(), "cost inference of op ", def.type(),
                   ": the shape of input ", i, " ('",
                   i < static_cast<size_t>(def.input_size()) ? def.input(i) : "", "') is unknown");
  }
}

// The op's output shapes from its own schema, so cost and shape inference
// never disagree about the geometry.
std::vector<TensorShape> OutputShapes(const OperatorDef& def, const CostInputs& in) {
  const OpSchema* schema = OpSchemaRegistry::Schema(def.type());
  DOPPIO_ENFORCE(schema != nullptr && schema->has_shape_inference(), "cost inference of op ",
                 def.type(), " needs its shape inference");
  std::vector<TensorShape> out = schema->InferTensor(def, in);
  for (size_t i = 0; i < out.size(); ++i) {
    DOPPIO_ENFORCE(!out[i].unknown_shape(), "cost inference of op ", def.type(),
                   ": the shape of output ", i, " cannot be inferred from the inputs");
  }
  return out;
}

// The conv geometry of X against filter W: kernel defaults to W's spatial
// dims, as the conv op does.
ConvPoolGeometry ConvGeometry(const OperatorDef& def, const TensorShape& x,
                              const TensorShape& w, const ConvPoolArgs& args) {
  const auto& f = w.dims();
  DOPPIO_ENFORCE(f.size() >= 3, "cost inference of op ", def.type(), ": filter '",
                 def.input(1), "' must have rank 3 or more, got ", f.size());
  const bool nchw = args.order() == StorageOrder::kNCHW;
  const std::vector<int64_t> kernel(f.begin() + (nchw ? 2 : 1), f.end() - (nchw ? 0 : 1));
  return args.Resolve(DimsOf(x), def.input(0), kernel);
}

// FLOPs of one forward conv: multiply-adds over every (output position,
// kernel tap, input channel of the group, output channel). The channels per
// group are the filter's (dim 1 in NCHW, the last in NHWC), as Caffe2 counts
// them: a cost query may pass shapes the op itself would refuse.
uint64_t ConvFlops(const ConvPoolGeometry& g, const TensorShape& w, const ConvPoolArgs& args,
                   int64_t out_channels) {
  const bool nchw = args.order() == StorageOrder::kNCHW;
  const uint64_t channels_per_group = static_cast<uint64_t>(w.dims(nchw ? 1 : w.dims_size() - 1));
  return 2 * static_cast<uint64_t>(g.batch) * static_cast<uint64_t>(g.output_image_size()) *
         static_cast<uint64_t>(g.kernel_size()) * channels_per_group *
         static_cast<uint64_t>(out_channels);
}

OpSchema::Cost FCCost(const OperatorDef& def, const CostInputs& in, bool weight_is_k_by_n) {
  RequireInputs(def, in, 2);
  const ArgumentHelper args(def);
  const FCShape shape = ComputeFCShape(def.type(), def.input(0), DimsOf(in[0]), def.input(1),
                                       DimsOf(in[1]), args.GetSingle<int>("axis", 1),
                                       args.GetSingle<int>("axis_w", 1), weight_is_k_by_n);
  const uint64_t M = shape.M, K = shape.K, N = shape.N;
  const uint64_t item = ElementBytes(in[0]);
  OpSchema::Cost cost;
  cost.flops = 2 * M * N * K + M * N;
  cost.bytes_read = BytesOf(in);
  cost.bytes_written = M * N * item;
  cost.params_bytes = Bytes(in[1]) + (in.size() > 2 ? Bytes(in[2]) : 0);
  return cost;
}

OpSchema::Cost FCGradientCost(const OperatorDef& def, const CostInputs& in,
                              bool weight_is_k_by_n) {
  RequireInputs(def, in, 3);
  const ArgumentHelper args(def);
  const FCShape shape = ComputeFCShape(def.type(), def.input(0), DimsOf(in[0]), def.input(1),
                                       DimsOf(in[1]), args.GetSingle<int>("axis", 1),
                                       args.GetSingle<int>("axis_w", 1), weight_is_k_by_n);
  const uint64_t M = shape.M, K = shape.K, N = shape.N;
  OpSchema::Cost cost;
  cost.flops = 2 * M * N * K + M * N;  // dW and db
  cost.bytes_read = BytesOf(in);
  cost.bytes_written = Bytes(in[1]) + N * ElementBytes(in[0]);
  cost.params_bytes = Bytes(in[1]);
  if (def.output_size() == 3) {
    cost.flops += 2 * M * N * K;  // dX
    cost.bytes_written += Bytes(in[0]);
  }
  return cost;
}

}  // namespace

OpSchema::Cost CostInferenceForConv(const OperatorDef& def, const CostInputs& in) {
  RequireInputs(def, in, 2);
  const ConvPoolArgs args(def);
  const ConvPoolGeometry g = ConvGeometry(def, in[0], in[1], args);
  const int64_t out_channels = in[1].dims(0);
  const uint64_t outputs = static_cast<uint64_t>(g.batch) *
                           static_cast<uint64_t>(g.output_image_size()) *
                           static_cast<uint64_t>(out_channels);
  OpSchema::Cost cost;
  cost.flops = ConvFlops(g, in[1], args, out_channels);
  if (in.size() > 2) cost.flops += outputs;  // bias
  cost.bytes_read = BytesOf(in);
  cost.bytes_written = outputs * ElementBytes(in[0]);
  cost.params_bytes = Bytes(in[1]) + (in.size() > 2 ? Bytes(in[2]) : 0);
  return cost;
}

OpSchema::Cost CostInferenceForConvGradient(const OperatorDef& def, const CostInputs& in) {
  RequireInputs(def, in, 3);
  const ConvPoolArgs args(def);
  const ConvPoolGeometry g = ConvGeometry(def, in[0], in[1], args);
  const int64_t out_channels = in[1].dims(0);
  const bool has_bias = !ArgumentHelper(def).GetSingle<bool>("no_bias", false);
  // Outputs are dW, then db unless no_bias, then dX when one more is named.
  const bool computes_dx = def.output_size() > (has_bias ? 2 : 1);
  const uint64_t forward = ConvFlops(g, in[1], args, out_channels);
  OpSchema::Cost cost;
  cost.flops = forward;
  cost.bytes_written = Bytes(in[1]);
  if (has_bias) {
    cost.flops += ElementCount(in[2]);
    cost.bytes_written += static_cast<uint64_t>(out_channels) * ElementBytes(in[0]);
  }
  if (computes_dx) {
    cost.flops += forward;
    cost.bytes_written += Bytes(in[0]);
  }
  cost.bytes_read = BytesOf(in);
  cost.params_bytes = Bytes(in[1]);
  return cost;
}

OpSchema::Cost CostInferenceForConvTranspose(const OperatorDef& def, const CostInputs& in) {
  RequireInputs(def, in, 2);
  const ConvPoolArgs args(def);
  const std::vector<TensorShape> out = OutputShapes(def, in);
  const bool nchw = args.order() == StorageOrder::kNCHW;
  const auto& x = in[0].dims();
  const auto& f = in[1].dims();
  DOPPIO_ENFORCE(x.size() >= 3 && f.size() >= 3, "cost inference of op ", def.type(),
                 ": X and the filter must have rank 3 or more");
  const uint64_t batch = x[0];
  const uint64_t in_channels = nchw ? x[1] : x[x.size() - 1];
  uint64_t in_spatial = 1;
  const int x_end = x.size() - (nchw ? 0 : 1);
  for (int i = nchw ? 2 : 1; i < x_end; ++i) in_spatial *= x[i];
  uint64_t kernel = 1;
  const int f_end = f.size() - (nchw ? 0 : 1);
  for (int i = nchw ? 2 : 1; i < f_end; ++i) kernel *= f[i];
  // The filter is [C, M / group, kernel...] (NHWC: [C, kernel..., M / group]).
  const uint64_t out_per_group = nchw ? f[1] : f[f.size() - 1];
  OpSchema::Cost cost;
  cost.flops = 2 * batch * in_spatial * kernel * in_channels * out_per_group;
  if (in.size() > 2) cost.flops += ElementCount(out[0]);
  cost.bytes_read = BytesOf(in);
  cost.bytes_written = Bytes(out[0]);
  cost.params_bytes = Bytes(in[1]) + (in.size() > 2 ? Bytes(in[2]) : 0);
  return cost;
}

OpSchema::Cost CostInferenceForFC(const OperatorDef& def, const CostInputs& in) {
  return FCCost(def, in, false);
}

OpSchema::Cost CostInferenceForFCTransposed(const OperatorDef& def, const CostInputs& in) {
  return FCCost(def, in, true);
}

OpSchema::Cost CostInferenceForFCGradient(const OperatorDef& def, const CostInputs& in) {
  return FCGradientCost(def, in, false);
}

OpSchema::Cost CostInferenceForFCTransposedGradient(const OperatorDef& def,
                                                    const CostInputs& in) {
  return FCGradientCost(def, in, true);
}

OpSchema::Cost CostInferenceForMatMul(const OperatorDef& def, const CostInputs& in) {
  RequireInputs(def, in, 2);
  const ArgumentHelper args(def);
  const MatMulShape shape = ComputeMatMulShape(
      def.type(), def.input(0), DimsOf(in[0]), def.input(1), DimsOf(in[1]),
      args.GetSingle<int>("axis_a", 1), args.GetSingle<int>("axis_b", 1),
      args.GetSingle<int>("trans_a", 0) != 0, args.GetSingle<int>("trans_b", 0) != 0);
  OpSchema::Cost cost;
  cost.flops = 2 * static_cast<uint64_t>(shape.M) * shape.N * shape.K;
  cost.bytes_read = Bytes(in[0]) + Bytes(in[1]);
  cost.bytes_written = static_cast<uint64_t>(shape.M) * shape.N * ElementBytes(in[0]);
  return cost;
}

OpSchema::Cost CostInferenceForPool(const OperatorDef& def, const CostInputs& in) {
  RequireInputs(def, in, 1);
  const ConvPoolArgs args(def);
  const ConvPoolGeometry g = args.Resolve(DimsOf(in[0]), def.input(0));
  const uint64_t outputs = static_cast<uint64_t>(g.batch) * g.channels * g.output_image_size();
  OpSchema::Cost cost;
  cost.flops = outputs * static_cast<uint64_t>(g.kernel_size());
  cost.bytes_read = Bytes(in[0]);
  cost.bytes_written = outputs * ElementBytes(in[0]);
  return cost;
}

OpSchema::Cost CostInferenceForPoolGradient(const OperatorDef& def, const CostInputs& in) {
  RequireInputs(def, in, 3);
  OpSchema::Cost cost = CostInferenceForPool(def, {in[0]});
  cost.bytes_read = BytesOf(in);
  cost.bytes_written = Bytes(in[0]);
  return cost;
}

OpSchema::Cost CostInferenceForSpatialBNGradient(const OperatorDef& def, const CostInputs& in) {
  RequireInputs(def, in, 3);
  OpSchema::Cost cost;
  cost.flops = 5 * ElementCount(in[0]);
  cost.bytes_read = BytesOf(in);
  cost.bytes_written = Bytes(in[0]) + 2 * Bytes(in[1]);
  return cost;
}

OpSchema::Cost CostInferenceForSpatialBN(const OperatorDef& def, const CostInputs& in) {
  RequireInputs(def, in, 3);
  OpSchema::Cost cost = PointwiseCostInference(4)(def, in);
  // Only Y has X's size; the training outputs are per-channel statistics.
  cost.bytes_written = Bytes(in[0]) + (def.output_size() - 1) * Bytes(in[1]);
  cost.params_bytes = Bytes(in[1]) + Bytes(in[2]);
  return cost;
}

OpSchema::Cost CostInferenceForSum(const OperatorDef& def, const CostInputs& in) {
  RequireInputs(def, in, 1);
  OpSchema::Cost cost;
  cost.flops = ElementCount(in[0]) * (in.size() - 1);
  cost.bytes_read = BytesOf(in);
  cost.bytes_written = Bytes(in[0]);
  return cost;
}

OpSchema::Cost CostInferenceForConcat(const OperatorDef& def, const CostInputs& in) {
  RequireInputs(def, in, in.size());
  OpSchema::Cost cost;
  cost.bytes_read = BytesOf(in);
  cost.bytes_written = cost.bytes_read + in.size() * sizeof(int32_t);  // + split_info
  (void)def;
  return cost;
}

OpSchema::Cost CostInferenceForSoftmax(const OperatorDef& def, const CostInputs& in) {
  return PointwiseCostInference(5)(def, in);
}

OpSchema::Cost CostInferenceForSoftmaxWithLoss(const OperatorDef& def, const CostInputs& in) {
  RequireInputs(def, in, 2);
  const auto& x = in[0].dims();
  const int axis = ArgumentHelper(def).GetSingle<int>("axis", 1);
  uint64_t rows = 1;
  for (int i = 0; i < std::min<int>(axis, x.size()); ++i) rows *= x[i];
  OpSchema::Cost cost;
  cost.flops = 5 * ElementCount(in[0]) + 2 * rows;
  cost.bytes_read = BytesOf(in);
  cost.bytes_written = Bytes(in[0]) + ElementBytes(in[0]);
  return cost;
}

OpSchema::CostInferenceFunctionType PointwiseCostInference(uint64_t flops_per_element) {
  return [flops_per_element](const OperatorDef& def, const CostInputs& in) {
    RequireInputs(def, in, in.size());
    DOPPIO_ENFORCE(!in.empty(), "cost inference of op ", def.type(), " needs an input shape");
    const TensorShape* largest = &in[0];
    for (const TensorShape& shape : in) {
      if (ElementCount(shape) > ElementCount(*largest)) largest = &shape;
    }
    OpSchema::Cost cost;
    cost.flops = ElementCount(*largest) * flops_per_element;
    cost.bytes_read = BytesOf(in);
    cost.bytes_written = Bytes(*largest) * std::max(def.output_size(), 1);
    return cost;
  };
}

namespace {

void Accumulate(const OpSchema::Cost& cost, OpSchema::Cost* total) {
  total->flops += cost.flops;
  total->bytes_read += cost.bytes_read;
  total->bytes_written += cost.bytes_written;
  total->params_bytes += cost.params_bytes;
}

}  // namespace

NetCostEstimate InferNetCost(const NetDef& net,
                             const std::map<std::string, TensorShape>& known_shapes) {
  NetCostEstimate result;
  result.shapes = known_shapes;
  for (int index = 0; index < net.op_size(); ++index) {
    const OperatorDef& op = net.op(index);
    OpCostEstimate estimate;
    estimate.index = index;
    estimate.type = op.type();
    estimate.name = op.name();
    std::vector<TensorShape> inputs;
    std::string missing;
    const bool inputs_known = KnownInputShapes(op, result.shapes, &inputs, &missing);
    const OpSchema* schema = OpSchemaRegistry::Schema(op.type());
    if (schema == nullptr) {
      estimate.reason = "no schema";
    } else if (!schema->HasCostInferenceFunction()) {
      estimate.reason = "no cost inference";
    } else if (!inputs_known) {
      estimate.reason = "shape of input '" + missing + "' unknown";
    } else {
      try {
        estimate.cost = schema->InferCost(op, inputs);
        estimate.known = true;
      } catch (const std::exception& error) {
        estimate.reason = error.what();
      }
    }
    if (estimate.known) {
      Accumulate(estimate.cost, &result.total);
    } else {
      ++result.unknown_ops;
    }
    RecordOutputs(op, inputs, inputs_known, &result.shapes);
    result.ops.push_back(std::move(estimate));
  }
  return result;
}

}  // namespace doppio
