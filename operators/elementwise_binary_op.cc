// Add, Sub, Mul, Div with numpy or legacy broadcasting, their gradient ops
// (AddGradient, SubGradient, MulGradient, DivGradient, as Caffe2 names
// them), and SumReduceLike, the legacy reduction older Caffe2 gradient nets
// use.
#include "operators/elementwise_binary_op.h"

#include <algorithm>
#include <type_traits>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/broadcast_gradient_functors.h"
#include "operators/elementwise_functors.h"
#include "operators/op_cost.h"
#include "operators/shape_inference_utils.h"

namespace doppio {

BroadcastPlan PlanBinaryOutput(const OperatorBase& op, const BroadcastArgs& args,
                               const Tensor& A, const Tensor& B) {
  const BroadcastPlan plan =
      PlanBroadcast(op, args, {op.input_name(0), A.dims()}, {op.input_name(1), B.dims()});
  // In place, the output keeps the shape of the input it overwrites (with
  // broadcast=1 Caffe2 forbade B outright; a B of A's shape is safe).
  const Tensor* inputs[] = {&A, &B};
  for (int i = 0; i < 2; ++i) {
    if (op.IsInputOutputAlias(i, 0)) {
      DOPPIO_ENFORCE(plan.output_dims == inputs[i]->dims(), "the result's shape ", plan.output_dims,
                     " differs from the shape ", inputs[i]->dims(), " of '", op.input_name(i),
                     "', so it cannot be computed in place");
    }
  }
  return plan;
}

std::vector<TensorShape> BroadcastShapeInference(const OperatorDef& def,
                                                 const std::vector<TensorShape>& in,
                                                 bool bool_output) {
  TensorShape out;
  out.set_data_type(bool_output ? TensorProto::BOOL : in.at(0).data_type());
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

void BroadcastArgsSchema(OpSchema& schema) {
  schema
      .Arg("broadcast",
           "(int, default 0) 1 selects legacy broadcasting: B's shape (or a "
           "scalar) must match a contiguous run of A's dims starting at `axis`")
      .Arg("axis",
           "(int, default -1) with broadcast=1, the dim of A where B's dims "
           "start; -1 aligns B with A's last dims")
      .Arg("axis_str", "(string) with broadcast=1, the axis as a letter of `order`")
      .Arg("order", "(string, default NCHW) the layout axis_str refers to");
}

namespace {

// ---- functors ----
// The per-element math is the shared functors' (elementwise_functors.h,
// broadcast_gradient_functors.h), which the CUDA kernels run too.

// Add, Sub and Mul take every numeric type both ways and their gradient ops
// (dC, A, B); Div overrides what differs.
struct ArithmeticFunctorBase : BinaryFunctorBase {
  using Types = AllNumericTypes;
  using GradTypes = NumericTypes;
  static GradientSlots Slots(int) { return {}; }
};

struct AddFunctor : ArithmeticFunctorBase {
  static constexpr bool kNeedsA = functors::AddGradient::kNeedsA;
  static constexpr bool kNeedsB = functors::AddGradient::kNeedsB;
  static constexpr bool kNeedsC = functors::AddGradient::kNeedsC;
  template <typename T>
  T operator()(T a, T b) const {
    return functors::Add{}(a, b);
  }
  template <typename T>
  void Gradient(T dc, T a, T b, T c, T* da, T* db) const {
    functors::AddGradient{}(dc, a, b, c, da, db);
  }
};

struct SubFunctor : ArithmeticFunctorBase {
  static constexpr bool kNeedsA = functors::SubGradient::kNeedsA;
  static constexpr bool kNeedsB = functors::SubGradient::kNeedsB;
  static constexpr bool kNeedsC = functors::SubGradient::kNeedsC;
  template <typename T>
  T operator()(T a, T b) const {
    return functors::Sub{}(a, b);
  }
  template <typename T>
  void Gradient(T dc, T a, T b, T c, T* da, T* db) const {
    functors::SubGradient{}(dc, a, b, c, da, db);
  }
};

struct MulFunctor : ArithmeticFunctorBase {
  static constexpr bool kNeedsA = functors::MulGradient::kNeedsA;
  static constexpr bool kNeedsB = functors::MulGradient::kNeedsB;
  static constexpr bool kNeedsC = functors::MulGradient::kNeedsC;
  template <typename T>
  T operator()(T a, T b) const {
    return functors::Mul{}(a, b);
  }
  template <typename T>
  void Gradient(T dc, T a, T b, T c, T* da, T* db) const {
    functors::MulGradient{}(dc, a, b, c, da, db);
  }
};

struct DivFunctor : ArithmeticFunctorBase {
  using GradTypes = FloatTypes;
  static constexpr bool kNeedsA = functors::DivGradient::kNeedsA;
  static constexpr bool kNeedsB = functors::DivGradient::kNeedsB;
  static constexpr bool kNeedsC = functors::DivGradient::kNeedsC;
  static GradientSlots Slots(int num_inputs) {
    // Caffe2 emits DivGradient(dC, A, B, C); its older nets (B, C, dC).
    if (num_inputs == 4) return {0, 1, 2, 3};
    return {2, -1, 0, 1};
  }
  template <typename T>
  static void Validate(const OperatorBase& op, const Tensor& B) {
    if constexpr (std::is_integral<T>::value) {
      // Integer division by zero traps; floats follow IEEE (inf, nan) as numpy.
      const T* b = B.data<T>();
      for (int64_t i = 0; i < B.numel(); ++i) {
        DOPPIO_ENFORCE(b[i] != 0, "integer division by zero ('", op.input_name(1),
                       "' holds 0 at element ", i, ")");
      }
    }
  }
  template <typename T>
  T operator()(T a, T b) const {
    // Validate has ruled out integer division by zero.
    return functors::Div{}(a, b);
  }
  template <typename T>
  void Gradient(T dc, T a, T b, T c, T* da, T* db) const {
    functors::DivGradient{}(dc, a, b, c, da, db);
  }
};

// ---- SumReduceLike ----

class SumReduceLikeOp final : public Operator<CPUContext> {
 public:
  SumReduceLikeOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace),
        // SumReduceLike always reduces the legacy way; it has no broadcast flag.
        args_(ReadBroadcastArgs(*this, /*always_legacy=*/true)) {}

  void RunOnDevice() override {
    const Tensor& A = Input(0);
    const std::vector<int64_t> b_dims = Input(1).dims();
    const BroadcastPlan plan =
        PlanBroadcast(*this, args_, {input_name(0), A.dims()}, {input_name(1), b_dims});
    DispatchTypes(NumericTypes{}, input_name(0), A.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* a = A.data<T>();
      Tensor* C = Output(0);
      C->Resize(b_dims);
      SumToBroadcastShape(plan.out, a, plan.b, C->mutable_data<T>());
    });
  }

 private:
  BroadcastArgs args_;
};

}  // namespace

// ---- registration ----

REGISTER_CPU_OPERATOR(Add, BinaryElementwiseOp<AddFunctor>);
REGISTER_CPU_OPERATOR(Sub, BinaryElementwiseOp<SubFunctor>);
REGISTER_CPU_OPERATOR(Mul, BinaryElementwiseOp<MulFunctor>);
REGISTER_CPU_OPERATOR(Div, BinaryElementwiseOp<DivFunctor>);
REGISTER_CPU_OPERATOR(AddGradient, BinaryElementwiseGradientOp<AddFunctor>);
REGISTER_CPU_OPERATOR(SubGradient, BinaryElementwiseGradientOp<SubFunctor>);
REGISTER_CPU_OPERATOR(MulGradient, BinaryElementwiseGradientOp<MulFunctor>);
REGISTER_CPU_OPERATOR(DivGradient, BinaryElementwiseGradientOp<DivFunctor>);
REGISTER_CPU_OPERATOR(SumReduceLike, SumReduceLikeOp);

namespace {

std::function<void(OpSchema&)> ArithmeticSchema(const char* verb, const char* symbol) {
  return [verb, symbol](OpSchema& schema) {
    schema.NumInputs(2)
        .NumOutputs(1)
        .Elementwise()
        .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
          return BroadcastShapeInference(def, in, /*bool_output=*/false);
        })
        .CostInferenceFunction(PointwiseCostInference(1))
        .Apply(BroadcastArgsSchema)
        .Input(0, "A", "first operand (float32, float64, int32 or int64)")
        .Input(1, "B", "second operand, of A's type")
        .Output(0, "C",
                MakeString("A ", symbol, " B, in the broadcast shape (A's shape with "
                           "broadcast=1)"))
        .Doc(MakeString("Elementwise ", verb, " C = A ", symbol,
                        " B. Without `broadcast`, shapes broadcast as in numpy "
                        "(aligned at the right, 1s stretch); with broadcast=1, "
                        "Caffe2's legacy rule applies and C has A's shape."));
  };
}

// dA has the shape of the forward A (or, without A, of C) and dB of B.
OpSchema::InferenceFunction GradientShapeInference(GradientSlots (*slots_of)(int)) {
  return [slots_of](const OperatorDef&, const std::vector<TensorShape>& in) {
    const GradientSlots slots = slots_of(static_cast<int>(in.size()));
    std::vector<TensorShape> out = {in.at(slots.a >= 0 ? slots.a : slots.c), in.at(slots.b)};
    for (TensorShape& shape : out) shape.set_data_type(in.at(slots.dc).data_type());
    return out;
  };
}

std::function<void(OpSchema&)> ArithmeticGradientSchema(const char* forward,
                                                        GradientSlots (*slots_of)(int)) {
  return [forward, slots_of](OpSchema& schema) {
    schema.NumOutputs(2)
        .TensorInferenceFunction(GradientShapeInference(slots_of))
        .Apply(BroadcastArgsSchema)
        .Input(0, "dC", MakeString("gradient of ", forward, "'s output"))
        .Input(1, "A", MakeString(forward, "'s first input"))
        .Input(2, "B", MakeString(forward, "'s second input"))
        .Output(0, "dA", "gradient of A, summed to A's shape")
        .Output(1, "dB", "gradient of B, summed to B's shape")
        .Doc(MakeString("Gradient of ", forward, ": each input's gradient is summed over "
                        "the dims along which that input was broadcast. Takes ",
                        forward, "'s arguments."));
  };
}

}  // namespace

OPERATOR_SCHEMA(Add).LowPrecisionInFloat32().AllowInplace({{0, 0}, {1, 0}}).Apply(ArithmeticSchema("addition", "+"));
OPERATOR_SCHEMA(Sub).LowPrecisionInFloat32().AllowInplace({{0, 0}, {1, 0}}).Apply(ArithmeticSchema("subtraction", "-"));
OPERATOR_SCHEMA(Mul).LowPrecisionInFloat32()
    .AllowInplace({{0, 0}, {1, 0}})
    .Apply(ArithmeticSchema("multiplication", "*"));
// Div's gradient reads B, so B may not be overwritten.
OPERATOR_SCHEMA(Div)
    .AllowInplace({{0, 0}})
    .Apply(ArithmeticSchema("division", "/"))
    .Doc("Elementwise division C = A / B with numpy or legacy (broadcast=1) "
         "broadcasting. Floats follow IEEE: x/0 is +-inf and 0/0 nan, as in "
         "numpy. Integers divide truncating toward zero (C's rule, as Caffe2); "
         "an integer division by zero is an error.");

// Add and Sub read A and B for their shapes only, which dA and dB take: the
// gradient of an in-place Add passes dC for the overwritten input's shape.
OPERATOR_SCHEMA(AddGradient).LowPrecisionInFloat32()
    .NumInputs(3)
    .AllowInplace({{0, 0}, {0, 1}, {1, 0}, {2, 1}})
    .Apply(ArithmeticGradientSchema("Add", &AddFunctor::Slots));
OPERATOR_SCHEMA(SubGradient).LowPrecisionInFloat32()
    .NumInputs(3)
    .AllowInplace({{0, 0}, {0, 1}, {1, 0}, {2, 1}})
    .Apply(ArithmeticGradientSchema("Sub", &SubFunctor::Slots));
OPERATOR_SCHEMA(MulGradient).LowPrecisionInFloat32()
    .NumInputs(3)
    .AllowInplace({{0, 0}, {0, 1}})
    .Apply(ArithmeticGradientSchema("Mul", &MulFunctor::Slots));
OPERATOR_SCHEMA(DivGradient)
    .NumInputs(3, 4)
    .AllowInplace({{0, 0}})
    .Apply(ArithmeticGradientSchema("Div", &DivFunctor::Slots))
    .Input(3, "C", "Div's output")
    .Doc("Gradient of Div: dA = dC / B and dB = -dC * C / B, each summed over "
         "the dims along which its input was broadcast. Inputs are (dC, A, B, "
         "C), or (B, C, dC) as older Caffe2 nets wrote them.");

OPERATOR_SCHEMA(SumReduceLike)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction(ShapeOfInput(1))
    .Arg("axis", "(int, default -1) the dim of A where B's dims start")
    .Arg("axis_str", "(string) the axis as a letter of `order`")
    .Arg("order", "(string, default NCHW) the layout axis_str refers to")
    .Input(0, "A", "tensor to reduce")
    .Input(1, "B", "tensor whose shape the result takes")
    .Output(0, "C", "A summed over the dims B is broadcast along, in B's shape")
    .Doc("Sums A down to B's shape, the reverse of legacy broadcasting of B "
         "onto A.");

namespace {

class GetArithmeticGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    const std::string& type = Def().type();
    if (type == "Mul") {
      // MulGradient reads both inputs; an overwritten one is gone.
      DOPPIO_ENFORCE(I(0) != O(0) && I(1) != O(0), "op Mul: cannot differentiate Mul "
                     "computed in place over '", O(0), "': its gradient needs both inputs");
    }
    std::vector<std::string> inputs = {GO(0), I(0), I(1)};
    // Add and Sub read their inputs only for their shapes. An input the op
    // overwrote had C's shape (the kernel refuses in place otherwise), which
    // dC still has: the gradient then needs no overwritten blob (Caffe2's
    // attention accumulates into its sums in place).
    if (type == "Add" || type == "Sub") {
      for (int i : {0, 1}) {
        if (I(i) == O(0)) inputs[1 + i] = GO(0);
      }
    }
    if (type == "Div") inputs.push_back(O(0));
    // broadcast/axis travel along: the gradient reduces the way the op broadcast.
    return SingleGradientDef(type + "Gradient", "", inputs, {GI(0), GI(1)}, Def().arg());
  }
};

constexpr const char kSecondOrder[] =
    "it is a gradient op; second derivatives are not supported";

}  // namespace

REGISTER_GRADIENT(Add, GetArithmeticGradient);
REGISTER_GRADIENT(Sub, GetArithmeticGradient);
REGISTER_GRADIENT(Mul, GetArithmeticGradient);
REGISTER_GRADIENT(Div, GetArithmeticGradient);
SHOULD_NOT_DO_GRADIENT(AddGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(SubGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(MulGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(DivGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(SumReduceLike, kSecondOrder);

}  // namespace doppio
