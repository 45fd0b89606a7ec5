#include "operators/elementwise_add_op.h"

#include <utility>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

namespace {

// Calls fn(TypeTag<T>) for the arithmetic types Add and its kin support.
template <typename Fn>
void DispatchNumeric(const OperatorBase& op, const std::string& blob, DataType dtype,
                     Fn&& fn) {
  switch (dtype) {
    case DataType::kFloat: return fn(TypeTag<float>{});
    case DataType::kDouble: return fn(TypeTag<double>{});
    case DataType::kInt32: return fn(TypeTag<int32_t>{});
    case DataType::kInt64: return fn(TypeTag<int64_t>{});
    default: break;
  }
  DOPPIO_THROW("op ", op.type(), ": '", blob, "' holds ", DataTypeName(dtype),
               "; supported types are float32, float64, int32 and int64");
}

}  // namespace

// ---- Add ----

AddOp::AddOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadBroadcastArgs(*this)) {}

void AddOp::RunOnDevice() {
  const Tensor& A = Input(0);
  const Tensor& B = Input(1);
  DOPPIO_ENFORCE(A.dtype() == B.dtype(), "op ", type(), ": '", input_name(0), "' holds ",
                 DataTypeName(A.dtype()), " but '", input_name(1), "' holds ",
                 DataTypeName(B.dtype()), "; both must have one type");
  const BroadcastPlan plan = PlanBroadcast(*this, args_, {input_name(0), A.dims()},
                                           {input_name(1), B.dims()});
  if (args_.legacy) {
    DOPPIO_ENFORCE(!IsInputOutputAlias(1, 0), "op ", type(),
                   ": with broadcast=1 only A ('", input_name(0),
                   "') may be the output, not B ('", input_name(1), "')");
  }
  // In place, the output keeps the shape of the input it overwrites.
  for (int i = 0; i < 2; ++i) {
    if (IsInputOutputAlias(i, 0)) {
      DOPPIO_ENFORCE(plan.output_dims == Input(i).dims(), "op ", type(),
                     ": the result's shape ", plan.output_dims,
                     " differs from the shape ", Input(i).dims(), " of '", input_name(i),
                     "', so it cannot be computed in place");
    }
  }
  DispatchNumeric(*this, input_name(0), A.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = A.data<T>();
    const T* b = B.data<T>();
    Tensor* C = Output(0);
    C->Resize(plan.output_dims);
    BroadcastBinary(plan, a, b, C->mutable_data<T>(),
                    [](T x, T y) { return static_cast<T>(x + y); });
  });
}

// ---- AddGradient ----

AddGradientOp::AddGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadBroadcastArgs(*this)) {}

void AddGradientOp::RunOnDevice() {
  const Tensor& dC = Input(0);
  const std::vector<int64_t> a_dims = Input(1).dims();
  const std::vector<int64_t> b_dims = Input(2).dims();
  const BroadcastPlan plan =
      PlanBroadcast(*this, args_, {input_name(1), a_dims}, {input_name(2), b_dims});
  DOPPIO_ENFORCE(dC.dims() == plan.output_dims, "op ", type(), ": gradient '",
                 input_name(0), "' has shape ", dC.dims(), " but Add's output has shape ",
                 plan.output_dims);
  DispatchNumeric(*this, input_name(0), dC.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    // An output that is also dC must not be written while dC is read.
    const bool aliased = IsInputOutputAlias(0, 0) || IsInputOutputAlias(0, 1);
    Tensor a_scratch, b_scratch;
    Tensor* dA = aliased ? &a_scratch : Output(0);
    Tensor* dB = aliased ? &b_scratch : Output(1);
    dA->Resize(a_dims);
    dB->Resize(b_dims);
    const T* dc = dC.data<T>();
    SumToBroadcastShape(plan.out, dc, plan.a, dA->mutable_data<T>());
    SumToBroadcastShape(plan.out, dc, plan.b, dB->mutable_data<T>());
    if (aliased) {
      *Output(0) = std::move(a_scratch);
      *Output(1) = std::move(b_scratch);
    }
  });
}

// ---- SumReduceLike ----

SumReduceLikeOp::SumReduceLikeOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      // SumReduceLike always reduces the legacy way; it has no broadcast flag.
      args_(ReadBroadcastArgs(*this, /*always_legacy=*/true)) {}

void SumReduceLikeOp::RunOnDevice() {
  const Tensor& A = Input(0);
  const std::vector<int64_t> b_dims = Input(1).dims();
  const BroadcastPlan plan =
      PlanBroadcast(*this, args_, {input_name(0), A.dims()}, {input_name(1), b_dims});
  DispatchNumeric(*this, input_name(0), A.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = A.data<T>();
    Tensor* C = Output(0);
    C->Resize(b_dims);
    SumToBroadcastShape(plan.out, a, plan.b, C->mutable_data<T>());
  });
}

// ---- registration ----

REGISTER_CPU_OPERATOR(Add, AddOp);
REGISTER_CPU_OPERATOR(AddGradient, AddGradientOp);
REGISTER_CPU_OPERATOR(SumReduceLike, SumReduceLikeOp);

namespace {

std::vector<TensorShape> AddShapeInference(const OperatorDef& def,
                                           const std::vector<TensorShape>& in) {
  TensorShape out;
  out.set_data_type(in.at(0).data_type());
  if (ArgumentHelper(def).GetSingle<bool>("broadcast", false)) {
    *out.mutable_dims() = in[0].dims();
    return {out};
  }
  // Numpy rule on the known dims; mismatches surface when the op runs.
  const auto& a = in[0].dims();
  const auto& b = in.at(1).dims();
  const int ndim = std::max(a.size(), b.size());
  std::vector<int64_t> dims(ndim);
  for (int k = 0; k < ndim; ++k) {
    const int64_t a_dim = k < a.size() ? a[a.size() - 1 - k] : 1;
    const int64_t b_dim = k < b.size() ? b[b.size() - 1 - k] : 1;
    dims[ndim - 1 - k] = (a_dim == 0 || b_dim == 0) ? 0 : std::max(a_dim, b_dim);
  }
  for (int64_t d : dims) out.add_dims(d);
  return {out};
}

constexpr const char kBroadcastDoc[] =
    "(int, default 0) 1 selects legacy broadcasting: B's shape (or a scalar) "
    "must match a contiguous run of A's dims starting at `axis`";
constexpr const char kAxisDoc[] =
    "(int, default -1) with broadcast=1, the dim of A where B's dims start; -1 "
    "aligns B with A's last dims";

}  // namespace

OPERATOR_SCHEMA(Add)
    .NumInputs(2)
    .NumOutputs(1)
    .AllowInplace({{0, 0}, {1, 0}})
    .TensorInferenceFunction(AddShapeInference)
    .Arg("broadcast", kBroadcastDoc)
    .Arg("axis", kAxisDoc)
    .Arg("axis_str", "(string) with broadcast=1, the axis as a letter of `order`")
    .Arg("order", "(string, default NCHW) the layout axis_str refers to")
    .Input(0, "A", "first operand (float32, float64, int32 or int64)")
    .Input(1, "B", "second operand, of A's type")
    .Output(0, "C", "A + B, in the broadcast shape (A's shape with broadcast=1)")
    .Doc("Elementwise A + B. Without `broadcast`, shapes broadcast as in numpy "
         "(aligned at the right, 1s stretch); with broadcast=1, Caffe2's legacy "
         "rule applies and C has A's shape.");

OPERATOR_SCHEMA(AddGradient)
    .NumInputs(3)
    .NumOutputs(2)
    .AllowInplace({{0, 0}, {0, 1}})
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      std::vector<TensorShape> out = {in.at(1), in.at(2)};
      for (TensorShape& shape : out) shape.set_data_type(in.at(0).data_type());
      return out;
    })
    .Arg("broadcast", kBroadcastDoc)
    .Arg("axis", kAxisDoc)
    .Input(0, "dC", "gradient of Add's output")
    .Input(1, "A", "Add's first input (only its shape is read)")
    .Input(2, "B", "Add's second input (only its shape is read)")
    .Output(0, "dA", "dC summed to A's shape")
    .Output(1, "dB", "dC summed to B's shape")
    .Doc("Gradient of Add: each input's gradient is dC summed over the dims "
         "along which that input was broadcast.");

OPERATOR_SCHEMA(SumReduceLike)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      TensorShape out = in.at(1);
      out.set_data_type(in.at(0).data_type());
      return std::vector<TensorShape>{out};
    })
    .Arg("axis", "(int, default -1) the dim of A where B's dims start")
    .Arg("axis_str", "(string) the axis as a letter of `order`")
    .Arg("order", "(string, default NCHW) the layout axis_str refers to")
    .Input(0, "A", "tensor to reduce")
    .Input(1, "B", "tensor whose shape the result takes")
    .Output(0, "C", "A summed over the dims B is broadcast along, in B's shape")
    .Doc("Sums A down to B's shape, the reverse of legacy broadcasting of B "
         "onto A.");

namespace {

class GetAddGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    // broadcast/axis travel along: the gradient reduces the way Add broadcast.
    return SingleGradientDef("AddGradient", "", {GO(0), I(0), I(1)}, {GI(0), GI(1)},
                             Def().arg());
  }
};

}  // namespace

REGISTER_GRADIENT(Add, GetAddGradient);
SHOULD_NOT_DO_GRADIENT(AddGradient, "it is a gradient op; second derivatives are not supported");
SHOULD_NOT_DO_GRADIENT(SumReduceLike,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
