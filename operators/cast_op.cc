#include "operators/cast_op.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/parallel_for.h"

namespace doppio {

DataType CastTypeArgument(const std::string& op_type, const ArgumentHelper& args,
                          const std::string& name) {
  DOPPIO_ENFORCE(args.Has(name), "op ", op_type, ": argument '", name, "' is required");
  int value = 0;
  if (args.HasSingleOfType<std::string>(name)) {
    std::string text = args.GetSingle<std::string>(name, "");
    for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    TensorProto::DataType parsed;
    DOPPIO_ENFORCE(TensorProto::DataType_Parse(text, &parsed), "op ", op_type,
                   ": argument '", name, "' is '", args.GetSingle<std::string>(name, ""),
                   "', not the name of a TensorProto.DataType");
    value = parsed;
  } else {
    value = args.GetSingle<int>(name, 0);
  }
  const DataType dtype = static_cast<DataType>(value);
  DOPPIO_ENFORCE(dtype != DataType::kByte, "op ", op_type, ": argument '", name,
                 "' is BYTE, which is deprecated; use UINT8");
  DOPPIO_ENFORCE(IsStorableType(dtype), "op ", op_type, ": argument '", name, "' is ", value,
                 ", not a TensorProto.DataType a tensor can hold");
  return dtype;
}

namespace {

template <typename Dst, typename Src>
Dst CastValue(Src value) {
  if constexpr (std::is_same<Src, float16>::value) {
    return CastValue<Dst>(HalfToFloat(value));
  } else if constexpr (std::is_same<Dst, float16>::value) {
    return FloatToHalf(static_cast<float>(value));
  } else if constexpr (std::is_same<Dst, std::string>::value) {
    return std::to_string(value);
  } else if constexpr (std::is_same<Dst, bool>::value) {
    return value != Src(0);
  } else if constexpr (std::is_integral<Dst>::value && std::is_floating_point<Src>::value) {
    // Out-of-range conversions are undefined in C++: saturate instead.
    if (std::isnan(value)) return Dst(0);
    if (value <= static_cast<Src>(std::numeric_limits<Dst>::lowest())) {
      return std::numeric_limits<Dst>::lowest();
    }
    if (value >= static_cast<Src>(std::numeric_limits<Dst>::max())) {
      return std::numeric_limits<Dst>::max();
    }
    return static_cast<Dst>(value);
  } else {
    return static_cast<Dst>(value);
  }
}

}  // namespace

void CastOp::RunOnDevice() {
  const Tensor& X = Input(0);
  DOPPIO_ENFORCE(X.dtype() != DataType::kString, "'", input_name(0),
                 "' holds strings, which cannot be cast");
  Tensor* Y = Output(0);
  // Y is written directly, keeping its storage from one run to the next (a
  // fresh tensor per run allocated every iteration). With Y in X's storage
  // (not allowed by the schema, but cheap to be safe) the source must
  // outlive the conversion, so that case converts into a fresh tensor.
  const bool aliased = Y == &X || Y->SharesStorageWith(X);
  Tensor fresh;
  Tensor& converted = aliased ? fresh : *Y;
  converted.Resize(X.dims());
  DispatchDataType(X.dtype(), [&](auto source_tag) {
    using S = typename decltype(source_tag)::type;
    if constexpr (!std::is_same<S, std::string>::value) {
      const S* x = X.data<S>();
      DispatchDataType(to_, [&](auto target_tag) {
        using D = typename decltype(target_tag)::type;
        D* y = converted.mutable_data<D>();
        const int64_t n = X.numel();
        if constexpr (std::is_arithmetic_v<D>) {
          ParallelFor(n, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) y[i] = CastValue<D>(x[i]);
          });
        } else {
          // Strings allocate (and may throw): not inside an OpenMP region.
          for (int64_t i = 0; i < n; ++i) y[i] = CastValue<D>(x[i]);
        }
      });
    }
  });
  if (aliased) *Y = std::move(fresh);
}

REGISTER_CPU_OPERATOR(Cast, CastOp);

OPERATOR_SCHEMA(Cast)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      TensorShape out = in.at(0);
      out.set_data_type(static_cast<TensorProto::DataType>(
          CastTypeArgument(def.type(), ArgumentHelper(def), "to")));
      return std::vector<TensorShape>{out};
    })
    .Arg("to", "(int or string, required) the TensorProto.DataType to cast to", true)
    .Arg("from_type", "(int or string) the input's TensorProto.DataType; needed only for "
                      "the gradient, which casts back to it")
    .Input(0, "X", "tensor of any non-string type")
    .Output(0, "Y", "X's elements converted to `to`, of X's shape")
    .Doc("Casts the elements of X to the type `to`. Floats become integers by "
         "truncation, saturating at the integer's range (nan gives 0); numbers "
         "become bool by != 0 and strings by std::to_string.");

namespace {

class GetCastGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    const ArgumentHelper args(Def());
    const DataType to = CastTypeArgument("Cast", args, "to");
    DOPPIO_ENFORCE(args.Has("from_type"), "op Cast: argument 'from_type' (the input's "
                   "type) is required to differentiate Cast to ", DataTypeName(to));
    const DataType from = CastTypeArgument("Cast", args, "from_type");
    // Back to the input's type; the roles of the two types swap.
    std::vector<OperatorDef> ops = SingleGradientDef("Cast", "", {GO(0)}, {GI(0)});
    Argument* to_arg = ops[0].add_arg();
    to_arg->set_name("to");
    to_arg->set_i(static_cast<int>(from));
    Argument* from_arg = ops[0].add_arg();
    from_arg->set_name("from_type");
    from_arg->set_i(static_cast<int>(to));
    return ops;
  }
};

}  // namespace

REGISTER_GRADIENT(Cast, GetCastGradient);

// ---- FloatToHalf / HalfToFloat ----

namespace {

// The largest finite float16.
constexpr float kHalfMax = 65504.0f;

// Y (of X's shape, type Dst) = convert(X's Src elements), elementwise.
template <typename Src, typename Dst, typename Convert>
void ConvertElements(const Tensor& X, Tensor* Y, Convert convert) {
  // X and Y never share storage: their element sizes differ, so an in-place
  // form cannot exist (the schemas allow none).
  Y->Resize(X.dims());
  const Src* x = X.data<Src>();
  Dst* y = Y->mutable_data<Dst>();
  ParallelFor(X.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = convert(x[i]);
  });
}

}  // namespace

void FloatToHalfOp::RunOnDevice() {
  EnforceInputType(TypeList<float>{}, *this, 0, Input(0).dtype());
  const bool clip = clip_;
  ConvertElements<float, float16>(Input(0), Output(0), [clip](float value) {
    // nan compares false both ways and passes through unclipped.
    if (clip && value > kHalfMax) value = kHalfMax;
    if (clip && value < -kHalfMax) value = -kHalfMax;
    return FloatToHalf(value);
  });
}

void HalfToFloatOp::RunOnDevice() {
  EnforceInputType(TypeList<float16>{}, *this, 0, Input(0).dtype());
  ConvertElements<float16, float>(Input(0), Output(0),
                                  [](float16 value) { return HalfToFloat(value); });
}

REGISTER_CPU_OPERATOR(FloatToHalf, FloatToHalfOp);
REGISTER_CPU_OPERATOR(HalfToFloat, HalfToFloatOp);

namespace {

TensorShape WithDataType(TensorShape shape, TensorProto::DataType dtype) {
  shape.set_data_type(dtype);
  return shape;
}

}  // namespace

OPERATOR_SCHEMA(FloatToHalf)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      return std::vector<TensorShape>{WithDataType(in.at(0), TensorProto::FLOAT16)};
    })
    .Arg("clip",
         "(bool, default false) saturate at the float16 range (+-65504) instead "
         "of overflowing to +-inf")
    .Input(0, "X", "float32 tensor")
    .Output(0, "Y", "X rounded to float16 (nearest even), of X's shape")
    .Doc(
        "Converts float32 to float16: the float16 copy of a float32 master weight in "
        "mixed-precision training (PseudoFP16Initializer).");

OPERATOR_SCHEMA(HalfToFloat)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      return std::vector<TensorShape>{WithDataType(in.at(0), TensorProto::FLOAT)};
    })
    .Input(0, "X", "float16 tensor")
    .Output(0, "Y", "X as float32 (exact), of X's shape")
    .Doc("Converts float16 to float32, exactly.");

namespace {

// d/dX of an elementwise precision change is the identity, in the other
// direction's precision: the gradient of one cast is the other cast.
template <const char* kInverse>
class GetPrecisionCastGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef(kInverse, "", {GO(0)}, {GI(0)});
  }
};

constexpr char kFloatToHalf[] = "FloatToHalf";
constexpr char kHalfToFloat[] = "HalfToFloat";

}  // namespace

REGISTER_GRADIENT(FloatToHalf, GetPrecisionCastGradient<kHalfToFloat>);
REGISTER_GRADIENT(HalfToFloat, GetPrecisionCastGradient<kFloatToHalf>);

}  // namespace doppio
