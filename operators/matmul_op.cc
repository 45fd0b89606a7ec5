#include "operators/matmul_op.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/matrix_utils.h"
#include "operators/op_cost.h"
#include "operators/op_type_dispatch.h"
#include "operators/shape_inference_utils.h"

namespace doppio {

// ---------------------------------------------------------------- MatMul

MatMulShape ComputeMatMulShape(const std::string& op, const std::string& a_name,
                               const std::vector<int64_t>& a_dims, const std::string& b_name,
                               const std::vector<int64_t>& b_dims, int axis_a, int axis_b,
                               bool trans_a, bool trans_b) {
  const int a_axis = CanonicalAxisOf(op, "axis_a", axis_a, a_name, a_dims);
  const int b_axis = CanonicalAxisOf(op, "axis_b", axis_b, b_name, b_dims);
  const int64_t a_rows = DimsProduct(a_dims, 0, a_axis);
  const int64_t a_cols = DimsProduct(a_dims, a_axis, a_dims.size());
  const int64_t b_rows = DimsProduct(b_dims, 0, b_axis);
  const int64_t b_cols = DimsProduct(b_dims, b_axis, b_dims.size());
  MatMulShape shape;
  shape.M = trans_a ? a_cols : a_rows;
  shape.K = trans_a ? a_rows : a_cols;
  shape.N = trans_b ? b_rows : b_cols;
  const int64_t b_k = trans_b ? b_cols : b_rows;
  DOPPIO_ENFORCE(shape.K == b_k, "op ", op, ": dimension mismatch: ",
                 trans_a ? "trans(A)" : "A", " ('", a_name, "' of shape ", a_dims,
                 ") is [", shape.M, ", ", shape.K, "] but ", trans_b ? "trans(B)" : "B",
                 " ('", b_name, "' of shape ", b_dims, ") is [", b_k, ", ", shape.N, "]");
  return shape;
}

namespace {

// ----------------------------------------------------------- BatchMatMul

// One batched product: Y[i] = op(A[a_index[i]]) op(B[b_index[i]]), each
// matrix contiguous in its tensor.
struct BatchPlan {
  int64_t M = 0, K = 0, N = 0;
  bool trans_a = false, trans_b = false;
  std::vector<int64_t> y_dims;
  std::vector<int64_t> a_index, b_index;
};

BatchPlan PlanBatchMatMul(const std::string& op, const std::string& a_name,
                          std::vector<int64_t> a_dims, const std::string& b_name,
                          std::vector<int64_t> b_dims, bool trans_a, bool trans_b,
                          bool broadcast) {
  const std::vector<int64_t> a_given = a_dims, b_given = b_dims;
  const auto shapes = [&] {
    return MakeString("A ('", a_name, "') has shape ", a_given, ", B ('", b_name,
                      "') has shape ", b_given);
  };
  if (!broadcast) {
    DOPPIO_ENFORCE(a_dims.size() >= 2 && a_dims.size() == b_dims.size(), "op ", op,
                   ": without broadcast=1, A and B must have one rank >= 2; ", shapes());
    DOPPIO_ENFORCE(std::equal(a_dims.begin(), a_dims.end() - 2, b_dims.begin()), "op ", op,
                   ": batch dims differ and broadcast is 0; ", shapes());
  }
  DOPPIO_ENFORCE(!a_dims.empty() && !b_dims.empty(), "op ", op,
                 ": inputs must have rank >= 1; ", shapes());
  BatchPlan plan;
  plan.trans_a = trans_a;
  plan.trans_b = trans_b;
  // numpy.matmul: a vector A is a row [1, K], a vector B a column [K, 1];
  // the added unit dim is dropped from Y again. Transposing a vector is a
  // no-op.
  const bool a_vector = a_dims.size() == 1;
  const bool b_vector = b_dims.size() == 1;
  if (a_vector) {
    a_dims.insert(a_dims.begin(), 1);
    plan.trans_a = false;
  }
  if (b_vector) {
    b_dims.push_back(1);
    plan.trans_b = false;
  }
  const size_t a_rank = a_dims.size(), b_rank = b_dims.size();
  plan.M = plan.trans_a ? a_dims[a_rank - 1] : a_dims[a_rank - 2];
  plan.K = plan.trans_a ? a_dims[a_rank - 2] : a_dims[a_rank - 1];
  const int64_t b_k = plan.trans_b ? b_dims[b_rank - 1] : b_dims[b_rank - 2];
  plan.N = plan.trans_b ? b_dims[b_rank - 2] : b_dims[b_rank - 1];
  DOPPIO_ENFORCE(plan.K == b_k, "op ", op, ": the inner dims differ: ",
                 plan.trans_a ? "trans(A)" : "A", " has K = ", plan.K, " but ",
                 plan.trans_b ? "trans(B)" : "B", " has K = ", b_k, "; ", shapes());

  // Batch dims align at the right; a missing or unit dim stretches.
  const size_t a_batch_rank = a_rank - 2, b_batch_rank = b_rank - 2;
  const size_t batch_rank = std::max(a_batch_rank, b_batch_rank);
  std::vector<int64_t> a_batch(batch_rank, 1), b_batch(batch_rank, 1), y_batch(batch_rank);
  std::copy(a_dims.begin(), a_dims.end() - 2, a_batch.begin() + (batch_rank - a_batch_rank));
  std::copy(b_dims.begin(), b_dims.end() - 2, b_batch.begin() + (batch_rank - b_batch_rank));
  for (size_t i = 0; i < batch_rank; ++i) {
    DOPPIO_ENFORCE(a_batch[i] == b_batch[i] || a_batch[i] == 1 || b_batch[i] == 1, "op ",
                   op, ": batch dims do not broadcast; ", shapes());
    y_batch[i] = (a_batch[i] == 1) ? b_batch[i] : a_batch[i];
  }
  plan.y_dims = y_batch;
  if (!a_vector) plan.y_dims.push_back(plan.M);
  if (!b_vector) plan.y_dims.push_back(plan.N);
  if (a_vector && b_vector) plan.y_dims.push_back(1);  // Caffe2's dot product is [1]

  // Walk Y's batch index like an odometer; a stretched dim keeps its
  // input's index at 0.
  const int64_t batch_count = DimsProduct(y_batch, 0, batch_rank);
  plan.a_index.reserve(batch_count);
  plan.b_index.reserve(batch_count);
  std::vector<int64_t> index(batch_rank, 0);
  for (int64_t i = 0; i < batch_count; ++i) {
    int64_t a_flat = 0, b_flat = 0;
    for (size_t d = 0; d < batch_rank; ++d) {
      a_flat = a_flat * a_batch[d] + (a_batch[d] == 1 ? 0 : index[d]);
      b_flat = b_flat * b_batch[d] + (b_batch[d] == 1 ? 0 : index[d]);
    }
    plan.a_index.push_back(a_flat);
    plan.b_index.push_back(b_flat);
    for (size_t d = batch_rank; d-- > 0;) {
      if (++index[d] < y_batch[d]) break;
      index[d] = 0;
    }
  }
  return plan;
}

}  // namespace

// ---- MatMul ----

MatMulArgs ReadMatMulArgs(const OperatorBase& op) {
  MatMulArgs args;
  args.axis_a = op.GetSingleArgument<int>("axis_a", args.axis_a);
  args.axis_b = op.GetSingleArgument<int>("axis_b", args.axis_b);
  args.trans_a = op.GetSingleArgument<int>("trans_a", 0) != 0;
  args.trans_b = op.GetSingleArgument<int>("trans_b", 0) != 0;
  return args;
}

MatMulPlan PlanMatMul(const OperatorBase& op, const MatMulArgs& args) {
  MatMulPlan plan;
  plan.shape = ComputeMatMulShape(op.type(), op.input_name(0), TensorInput(op, 0).dims(),
                                  op.input_name(1), TensorInput(op, 1).dims(), args.axis_a,
                                  args.axis_b, args.trans_a, args.trans_b);
  EnforceInputsOfOneType(FloatTypes{}, op, {0, 1});
  const int64_t M = plan.shape.M, N = plan.shape.N;
  plan.y_dims = {M, N};
  if (op.InputSize() == 3) {
    // The gradient form: Y takes the shape of the input it is the gradient of.
    const std::vector<int64_t>& like = TensorInput(op, 2).dims();
    DOPPIO_ENFORCE(DimsProduct(like, 0, like.size()) == M * N, "the product is [", M, ", ", N,
                   "] but input 2 ('", op.input_name(2),
                   "'), whose shape it should take, has shape ", like);
    plan.y_dims = like;
  }
  return plan;
}

MatMulOp::MatMulOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadMatMulArgs(*this)) {}

void MatMulOp::RunOnDevice() {
  const Tensor& A = Input(0);
  const Tensor& B = Input(1);
  const MatMulPlan plan = PlanMatMul(*this, args_);
  const MatMulShape& shape = plan.shape;
  DispatchInput(FloatTypes{}, *this, 0, A.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor* Y = Output(0);
    Y->Resize(plan.y_dims);
    MatrixProduct<T>(args_.trans_a, args_.trans_b, shape.M, shape.N, shape.K, A.data<T>(),
                     B.data<T>(), Y->mutable_data<T>());
  });
}

// ---- BatchMatMul ----

BatchMatMulOp::BatchMatMulOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      trans_a_(GetSingleArgument<int>("trans_a", 0) != 0),
      trans_b_(GetSingleArgument<int>("trans_b", 0) != 0),
      broadcast_(GetSingleArgument<int>("broadcast", 0) != 0) {}

void BatchMatMulOp::RunOnDevice() {
  const Tensor& A = Input(0);
  const Tensor& B = Input(1);
  const BatchPlan plan = PlanBatchMatMul(type(), input_name(0), A.dims(), input_name(1),
                                         B.dims(), trans_a_, trans_b_, broadcast_);
  const DataType dtype = EnforceInputsOfOneType(FloatTypes{}, *this, {0, 1});
  DispatchInput(FloatTypes{}, *this, 0, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor* Y = Output(0);
    Y->Resize(plan.y_dims);
    const T* a = A.data<T>();
    const T* b = B.data<T>();
    T* y = Y->mutable_data<T>();
    const int64_t a_size = plan.M * plan.K, b_size = plan.K * plan.N, y_size = plan.M * plan.N;
    const int64_t batch_count = static_cast<int64_t>(plan.a_index.size());
    const bool shared_b = std::all_of(plan.b_index.begin(), plan.b_index.end(),
                                      [](int64_t i) { return i == 0; });
    const bool a_in_order = [&] {
      for (int64_t i = 0; i < batch_count; ++i) {
        if (plan.a_index[i] != i) return false;
      }
      return true;
    }();
    if (shared_b && a_in_order && !plan.trans_a) {
      // One B for every batch and the A's stacked in order: one tall GEMM
      // beats many small ones.
      MatrixProduct<T>(false, plan.trans_b, batch_count * plan.M, plan.N, plan.K, a, b, y);
      return;
    }
    for (int64_t i = 0; i < batch_count; ++i) {
      MatrixProduct<T>(plan.trans_a, plan.trans_b, plan.M, plan.N, plan.K,
                       a + plan.a_index[i] * a_size, b + plan.b_index[i] * b_size,
                       y + i * y_size);
    }
  });
}

// ---- registration ----

REGISTER_CPU_OPERATOR(MatMul, MatMulOp);
REGISTER_CPU_OPERATOR(BatchMatMul, BatchMatMulOp);

OPERATOR_SCHEMA(MatMul).LowPrecisionInFloat32()
    .NumInputs(2, 3)
    .CostInferenceFunction(CostInferenceForMatMul)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      ArgumentHelper args(def);
      const MatMulShape shape = ComputeMatMulShape(
          def.type(), def.input(0), DimsOf(in.at(0)), def.input(1), DimsOf(in.at(1)),
          args.GetSingle<int>("axis_a", 1), args.GetSingle<int>("axis_b", 1),
          args.GetSingle<int>("trans_a", 0) != 0, args.GetSingle<int>("trans_b", 0) != 0);
      const std::vector<int64_t> dims =
          in.size() == 3 ? DimsOf(in[2]) : std::vector<int64_t>{shape.M, shape.N};
      return std::vector<TensorShape>{MakeShape(dims, in[0].data_type())};
    })
    .Arg("axis_a", "(int, default 1) A is read as a matrix split at this axis")
    .Arg("axis_b", "(int, default 1) B is read as a matrix split at this axis")
    .Arg("trans_a", "(int, default 0) 1 transposes A (after the split at axis_a)")
    .Arg("trans_b", "(int, default 0) 1 transposes B (after the split at axis_b)")
    .Input(0, "A", "float32 or float64 tensor read as a matrix (M x K)")
    .Input(1, "B", "tensor of A's type read as a matrix (K x N)")
    .Input(2, "like", "(optional) a tensor of M*N elements whose shape Y takes")
    .Output(0, "Y", "A * B, (M x N), or the third input's shape")
    .Doc("Matrix product Y = A * B, where A is coerced to a matrix at axis_a and B "
         "at axis_b, each optionally transposed.");

OPERATOR_SCHEMA(BatchMatMul).LowPrecisionInFloat32()
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      ArgumentHelper args(def);
      const BatchPlan plan = PlanBatchMatMul(
          def.type(), def.input(0), DimsOf(in.at(0)), def.input(1), DimsOf(in.at(1)),
          args.GetSingle<int>("trans_a", 0) != 0, args.GetSingle<int>("trans_b", 0) != 0,
          args.GetSingle<int>("broadcast", 0) != 0);
      return std::vector<TensorShape>{MakeShape(plan.y_dims, in[0].data_type())};
    })
    .Arg("trans_a", "(int, default 0) 1 transposes the last two dims of A")
    .Arg("trans_b", "(int, default 0) 1 transposes the last two dims of B")
    .Arg("broadcast",
         "(int, default 0) 1 broadcasts as numpy.matmul: batch dims stretch and "
         "1-D inputs are vectors; it has no gradient")
    .Input(0, "A", "float32 or float64 tensor (dim0, dim1, ..., M, K)")
    .Input(1, "B", "tensor of A's type (dim0, dim1, ..., K, N)")
    .Output(0, "Y", "tensor (dim0, dim1, ..., M, N)")
    .Doc("Batched matrix product Y[i] = A[i] * B[i] over the leading (batch) dims. "
         "Without broadcast, rank(A) == rank(B) >= 2 and the batch dims match.");

namespace {

Argument IntArgument(const std::string& name, int64_t value) {
  Argument arg;
  arg.set_name(name);
  arg.set_i(value);
  return arg;
}

google::protobuf::RepeatedPtrField<Argument> Arguments(std::vector<Argument> list) {
  google::protobuf::RepeatedPtrField<Argument> args;
  for (Argument& arg : list) *args.Add() = std::move(arg);
  return args;
}

OperatorDef GradientOp(const std::string& type, std::vector<std::string> inputs,
                       const std::string& output, std::vector<Argument> args) {
  OperatorDef op;
  op.set_type(type);
  for (const auto& input : inputs) op.add_input(input);
  op.add_output(output);
  *op.mutable_arg() = Arguments(std::move(args));
  return op;
}

// Y = op(A) op(B) with G = dY:
//   A B:   dA = G B',   dB = A' G
//   A B':  dA = G B,    dB = G' A
//   A' B:  dA = B G',   dB = A G
//   A' B': dA = B' G',  dB = G' A'
class GetMatMulGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    ArgumentHelper helper(Def());
    const bool trans_a = helper.GetSingle<int>("trans_a", 0) != 0;
    const bool trans_b = helper.GetSingle<int>("trans_b", 0) != 0;
    const int axis_a = helper.GetSingle<int>("axis_a", 1);
    const int axis_b = helper.GetSingle<int>("axis_b", 1);
    const std::string a = I(0), b = I(1), g = GO(0);
    // G is always 2-D, so only the original operands need their axis; the
    // third input gives each gradient its operand's shape.
    if (trans_a && trans_b) {
      return {GradientOp("MatMul", {b, g, a}, GI(0),
                         {IntArgument("trans_a", 1), IntArgument("trans_b", 1),
                          IntArgument("axis_a", axis_b)}),
              GradientOp("MatMul", {g, a, b}, GI(1),
                         {IntArgument("trans_a", 1), IntArgument("trans_b", 1),
                          IntArgument("axis_b", axis_a)})};
    }
    if (trans_a) {
      return {GradientOp("MatMul", {b, g, a}, GI(0),
                         {IntArgument("trans_b", 1), IntArgument("axis_a", axis_b)}),
              GradientOp("MatMul", {a, g, b}, GI(1), {IntArgument("axis_a", axis_a)})};
    }
    if (trans_b) {
      return {GradientOp("MatMul", {g, b, a}, GI(0), {IntArgument("axis_b", axis_b)}),
              GradientOp("MatMul", {g, a, b}, GI(1),
                         {IntArgument("trans_a", 1), IntArgument("axis_b", axis_a)})};
    }
    return {GradientOp("MatMul", {g, b, a}, GI(0),
                       {IntArgument("trans_b", 1), IntArgument("axis_b", axis_b)}),
            GradientOp("MatMul", {a, g, b}, GI(1),
                       {IntArgument("trans_a", 1), IntArgument("axis_a", axis_a)})};
  }
};

// The same identities per batch entry, with BatchMatMul.
class GetBatchMatMulGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    ArgumentHelper helper(Def());
    DOPPIO_ENFORCE(helper.GetSingle<int>("broadcast", 0) == 0, "op ", Def().type(),
                   ": no gradient with broadcast=1 (as in Caffe2): the stretched batch "
                   "dims would need a reduction");
    const bool trans_a = helper.GetSingle<int>("trans_a", 0) != 0;
    const bool trans_b = helper.GetSingle<int>("trans_b", 0) != 0;
    const std::string a = I(0), b = I(1), g = GO(0);
    const auto ta = IntArgument("trans_a", 1);
    const auto tb = IntArgument("trans_b", 1);
    if (trans_a && trans_b) {
      return {GradientOp("BatchMatMul", {b, g}, GI(0), {ta, tb}),
              GradientOp("BatchMatMul", {g, a}, GI(1), {ta, tb})};
    }
    if (trans_a) {
      return {GradientOp("BatchMatMul", {b, g}, GI(0), {tb}),
              GradientOp("BatchMatMul", {a, g}, GI(1), {})};
    }
    if (trans_b) {
      return {GradientOp("BatchMatMul", {g, b}, GI(0), {}),
              GradientOp("BatchMatMul", {g, a}, GI(1), {ta})};
    }
    return {GradientOp("BatchMatMul", {g, b}, GI(0), {tb}),
            GradientOp("BatchMatMul", {a, g}, GI(1), {ta})};
  }
};

}  // namespace

REGISTER_GRADIENT(MatMul, GetMatMulGradient);
REGISTER_GRADIENT(BatchMatMul, GetBatchMatMulGradient);

}  // namespace doppio
