#include "parallel/mixed_precision.h"

#include <set>
#include <sstream>
#include <utility>

#include "core/argument.h"
#include "core/enforce.h"
#include "core/schema.h"

namespace doppio {
namespace {

// Compute-bound ops: what tensor cores (and AVX-512 BF16) speed up.
const std::set<std::string>& LowOps() {
  static const auto* ops = new std::set<std::string>{
      "Conv", "ConvTranspose", "FC", "FCTransposed", "MatMul", "BatchMatMul"};
  return *ops;
}

// Ops that only move or view elements, whatever their type.
const std::set<std::string>& MoveOps() {
  static const auto* ops = new std::set<std::string>{
      "Reshape", "Flatten", "FlattenToVec", "Concat", "Split", "Transpose", "Copy",
      "Alias",   "StopGradient", "Squeeze", "ExpandDims"};
  return *ops;
}

// Ops with low-precision kernels that autocast still runs in float32: a
// softmax's exponentials and LRN's sums of squares overflow float16.
const std::set<std::string>& Float32Ops() {
  static const auto* ops = new std::set<std::string>{"Softmax", "LRN"};
  return *ops;
}

// Inputs of a kFollow op that stay float32 whatever the data's type.
std::set<int> Float32Inputs(const std::string& op_type) {
  if (op_type == "SpatialBN") return {1, 2, 3, 4};
  return {};
}

// The type a conversion op makes (Cast by its `to`, read as the op reads it;
// FloatToHalf; HalfToFloat), kUndefined for other ops.
DataType ConversionTarget(const OperatorDef& op) {
  if (op.type() == "FloatToHalf") return DataType::kFloat16;
  if (op.type() == "HalfToFloat") return DataType::kFloat;
  if (op.type() != "Cast") return DataType::kUndefined;
  return CastTypeArgument(op.type(), ArgumentHelper(op), "to");
}

const char* Suffix(DataType dtype) {
  switch (dtype) {
    case DataType::kBFloat16: return "_bf16";
    case DataType::kFloat16: return "_fp16";
    default: return "_fp32";
  }
}

// One pass over the ops, in order, tracking which blobs hold low values.
class Lowering {
 public:
  Lowering(const NetDef& net, DataType low) : net_(net), low_(low) {
    for (const OperatorDef& op : net.op()) {
      used_.insert(op.input().begin(), op.input().end());
      used_.insert(op.output().begin(), op.output().end());
    }
    used_.insert(net.external_input().begin(), net.external_input().end());
    used_.insert(net.external_output().begin(), net.external_output().end());
  }

  LoweredNet Run() {
    LoweredNet result;
    result.plan.low = low_;
    result.net = net_;
    result.net.clear_op();
    out_ = &result.net;
    plan_ = &result.plan;
    for (int i = 0; i < net_.op_size(); ++i) LowerOp(i, net_.op(i));
    return result;
  }

 private:
  void LowerOp(int index, OperatorDef op) {
    // A conversion the net already has (its own casts, or this pass's on a
    // net lowered before) is kept as it is: its output is low exactly when
    // it converts to the low type. So lowering a lowered net changes nothing.
    const DataType target = ConversionTarget(op);
    if (target != DataType::kUndefined && op.output_size() == 1) {
      ForgetCasts(op.output(0));
      if (target == low_) {
        low_blobs_.insert(op.output(0));
      } else {
        low_blobs_.erase(op.output(0));
      }
      *out_->add_op() = std::move(op);
      return;
    }
    const PrecisionPolicy policy = PrecisionPolicyOf(op.type());
    const std::set<int> fixed = Float32Inputs(op.type());
    int data_inputs = 0, low_inputs = 0;
    for (int k = 0; k < op.input_size(); ++k) {
      if (fixed.count(k)) continue;
      ++data_inputs;
      low_inputs += low_blobs_.count(op.input(k)) ? 1 : 0;
    }
    const bool run_low = policy == PrecisionPolicy::kLow ||
                         (policy == PrecisionPolicy::kFollow && data_inputs > 0 &&
                          low_inputs == data_inputs);
    for (int k = 0; k < op.input_size(); ++k) {
      const bool want_low = run_low && !fixed.count(k);
      const bool is_low = low_blobs_.count(op.input(k)) > 0;
      if (want_low != is_low) {
        op.set_input(k, CastOf(op.input(k), want_low ? low_ : DataType::kFloat, op));
      }
    }
    if (run_low) plan_->low_ops.emplace_back(index, op.type());
    for (int j = 0; j < op.output_size(); ++j) {
      const std::string& output = op.output(j);
      ForgetCasts(output);
      // Output 0 carries the op's values (the others are indices, masks,
      // shapes or float32 statistics), except for Split's pieces.
      if (run_low && (j == 0 || op.type() == "Split")) {
        low_blobs_.insert(output);
      } else {
        low_blobs_.erase(output);
      }
    }
    *out_->add_op() = std::move(op);
  }

  // The blob holding `blob` converted to `to`, emitting the Cast the first
  // time it is needed since `blob` was last written.
  std::string CastOf(const std::string& blob, DataType to, const OperatorDef& consumer) {
    auto cached = casts_.find({blob, to});
    if (cached != casts_.end()) return cached->second;
    std::string name = blob + Suffix(to);
    for (int n = 1; used_.count(name); ++n) name = blob + Suffix(to) + "_" + std::to_string(n);
    used_.insert(name);
    OperatorDef cast;
    cast.set_type("Cast");
    cast.add_input(blob);
    cast.add_output(name);
    *cast.mutable_device_option() = consumer.device_option();
    const DataType from = to == DataType::kFloat ? low_ : DataType::kFloat;
    SetArgument(&cast, "to", static_cast<int64_t>(to));
    SetArgument(&cast, "from_type", static_cast<int64_t>(from));
    *out_->add_op() = std::move(cast);
    casts_[{blob, to}] = name;
    if (to != DataType::kFloat) low_blobs_.insert(name);
    plan_->casts.emplace_back(blob, name);
    return name;
  }

  void ForgetCasts(const std::string& written) {
    for (auto it = casts_.begin(); it != casts_.end();) {
      it = it->first.first == written ? casts_.erase(it) : std::next(it);
    }
  }

  const NetDef& net_;
  const DataType low_;
  NetDef* out_ = nullptr;
  PrecisionPlan* plan_ = nullptr;
  std::set<std::string> used_;
  std::set<std::string> low_blobs_;
  std::map<std::pair<std::string, DataType>, std::string> casts_;
};

}  // namespace

PrecisionPolicy PrecisionPolicyOf(const std::string& op_type) {
  if (LowOps().count(op_type)) return PrecisionPolicy::kLow;
  if (MoveOps().count(op_type)) return PrecisionPolicy::kFollow;
  if (Float32Ops().count(op_type)) return PrecisionPolicy::kFloat32;
  const OpSchema* schema = OpSchemaRegistry::Schema(op_type);
  if (schema != nullptr && schema->low_precision_in_float32()) return PrecisionPolicy::kFollow;
  return PrecisionPolicy::kFloat32;
}

DataType ParsePrecision(const std::string& precision) {
  if (precision == "fp32" || precision == "float32" || precision.empty()) return DataType::kFloat;
  if (precision == "bf16" || precision == "bfloat16") return DataType::kBFloat16;
  if (precision == "fp16" || precision == "float16") return DataType::kFloat16;
  DOPPIO_THROW_ARG("precision must be 'fp32', 'bf16' or 'fp16', not '", precision, "'");
}

std::string PrecisionPlan::ToString() const {
  if (low == DataType::kFloat) return "";
  std::ostringstream out;
  out << "precision " << DataTypeName(low) << ": " << low_ops.size() << " ops in "
      << DataTypeName(low) << ", " << casts.size() << " casts\n";
  for (const auto& op : low_ops) out << "  op " << op.first << " " << op.second << "\n";
  for (const auto& cast : casts) out << "  cast " << cast.first << " -> " << cast.second << "\n";
  return out.str();
}

LoweredNet LowerPrecision(const NetDef& net, DataType low) {
  if (low == DataType::kFloat) return {net, PrecisionPlan{}};
  DOPPIO_ENFORCE(low == DataType::kBFloat16 || low == DataType::kFloat16,
                 "LowerPrecision: the low type must be bfloat16 or float16, not ",
                 DataTypeName(low));
  return Lowering(net, low).Run();
}

}  // namespace doppio
