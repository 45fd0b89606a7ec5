#include "operators/cast_op.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/parallel_for.h"

namespace doppio {

namespace {

template <typename Dst, typename Src>
Dst CastValue(Src value) {
  if constexpr (std::is_same<Src, float16>::value) {
    return CastValue<Dst>(HalfToFloat(value));
  } else if constexpr (std::is_same<Src, bfloat16>::value) {
    return CastValue<Dst>(BFloat16ToFloat(value));
  } else if constexpr (std::is_same<Dst, float16>::value) {
    return FloatToHalf(static_cast<float>(value));
  } else if constexpr (std::is_same<Dst, bfloat16>::value) {
    return FloatToBFloat16(static_cast<float>(value));
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

// n elements of x converted into y: the bulk conversions of core/types.h
// between float32 and float16 / bfloat16 (vectorized, the same bits), the
// element loop otherwise.
template <typename Dst, typename Src>
void ConvertRange(const Src* x, Dst* y, int64_t n) {
  if constexpr (std::is_same_v<Src, float> &&
                (std::is_same_v<Dst, float16> || std::is_same_v<Dst, bfloat16>)) {
    if constexpr (std::is_same_v<Dst, float16>) {
      FloatToHalf(x, y, n);
    } else {
      FloatToBFloat16(x, y, n);
    }
  } else if constexpr (std::is_same_v<Dst, float> &&
                       (std::is_same_v<Src, float16> || std::is_same_v<Src, bfloat16>)) {
    if constexpr (std::is_same_v<Src, float16>) {
      HalfToFloat(x, y, n);
    } else {
      BFloat16ToFloat(x, y, n);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = CastValue<Dst>(x[i]);
  }
}

// The shortest text that reads back as the same value, laid out as numpy's
// str and Python's repr: positional for 1e-4 <= |x| < 1e16 (with ".0" when
// whole), else scientific with a two-digit exponent ("1e-05"); NaN, INF,
// -INF; a float16 as the float it stands for; a bool as 1 or 0.
template <typename Src>
std::string ShortestText(Src value) {
  if constexpr (std::is_same<Src, float16>::value) {
    return ShortestText(HalfToFloat(value));
  } else if constexpr (std::is_same<Src, bfloat16>::value) {
    return ShortestText(BFloat16ToFloat(value));
  } else if constexpr (std::is_same<Src, bool>::value) {
    return value ? "1" : "0";
  } else if constexpr (std::is_integral<Src>::value) {
    return std::to_string(value);
  } else {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "INF" : "-INF";
    char buffer[64];
    const char* end =
        std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific).ptr;
    // buffer: [-]d[.ddd]e(+|-)xx: the shortest digits and the exponent.
    const std::string text(static_cast<const char*>(buffer), end);
    const size_t e = text.find('e');
    const bool negative = text[0] == '-';
    std::string digits;
    for (size_t i = negative ? 1 : 0; i < e; ++i) {
      if (text[i] != '.') digits += text[i];
    }
    const int exponent = std::atoi(text.c_str() + e + 1);
    std::string out = negative ? "-" : "";
    if (exponent >= -4 && exponent < 16) {
      if (exponent >= 0) {
        const size_t whole = static_cast<size_t>(exponent) + 1;
        if (digits.size() < whole) digits.append(whole - digits.size(), '0');
        out += digits.substr(0, whole) + "." +
               (digits.size() > whole ? digits.substr(whole) : std::string("0"));
      } else {
        out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
      }
      return out;
    }
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    const int magnitude = exponent < 0 ? -exponent : exponent;
    out += std::string("e") + (exponent < 0 ? "-" : "+") + (magnitude < 10 ? "0" : "") +
           std::to_string(magnitude);
    return out;
  }
}

// A number read from text: a decimal or an integer, with "nan", "inf" and
// "+inf"/"-inf" in any case for floats (strtod's forms); anything else, or
// trailing characters, is an error naming the blob, the index and the text.
template <typename Dst>
Dst ParseText(const std::string& text, const std::string& blob, int64_t index) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const auto check_number = [&] {
    DOPPIO_ENFORCE(end != begin && *end == '\0', "'", blob, "'[", index, "] is \"", text,
                   "\", which is not a number");
  };
  const auto check_range = [&](bool fits) {
    DOPPIO_ENFORCE(errno == 0 && fits, "'", blob, "'[", index, "] is \"", text,
                   "\", outside the range of ", DataTypeName(DataTypeFor<Dst>()));
  };
  if constexpr (std::is_integral<Dst>::value && !std::is_same<Dst, bool>::value) {
    // Whole numbers read exactly (a double holds only 53 bits); decimals,
    // exponents and hex go through strtod below.
    if (text.find_first_of(".eEnNiIxX") == std::string::npos) {
      errno = 0;
      if constexpr (std::is_same<Dst, uint64_t>::value) {
        const unsigned long long whole = std::strtoull(begin, &end, 10);
        check_number();
        check_range(text.find('-') == std::string::npos || whole == 0);
        return static_cast<Dst>(whole);
      } else {
        const long long whole = std::strtoll(begin, &end, 10);
        check_number();
        check_range(whole >= static_cast<long long>(std::numeric_limits<Dst>::lowest()) &&
                    whole <= static_cast<long long>(std::numeric_limits<Dst>::max()));
        return static_cast<Dst>(whole);
      }
    }
  }
  // Out-of-range text reads as strtod gives it: +-inf, or 0 (as numpy's float()).
  const double value = std::strtod(begin, &end);
  check_number();
  return CastValue<Dst>(value);
}

}  // namespace

void CastOp::RunOnDevice() {
  const Tensor& X = Input(0);
  Tensor* Y = Output(0);
  // Y is written directly, keeping its storage from one run to the next (a
  // fresh tensor per run allocated every iteration). With Y in X's storage
  // (not allowed by the schema, but cheap to be safe) the source must
  // outlive the conversion, so that case converts into a fresh tensor.
  const bool aliased = Y == &X || Y->SharesStorageWith(X);
  Tensor fresh;
  Tensor& converted = aliased ? fresh : *Y;
  converted.Resize(X.dims());
  const int64_t n = X.numel();
  DispatchDataType(X.dtype(), [&](auto source_tag) {
    using S = typename decltype(source_tag)::type;
    const S* x = X.data<S>();
    DispatchDataType(to_, [&](auto target_tag) {
      using D = typename decltype(target_tag)::type;
      D* y = converted.mutable_data<D>();
      if constexpr (std::is_same<S, std::string>::value) {
        // Strings parse (and may throw): not inside an OpenMP region.
        for (int64_t i = 0; i < n; ++i) {
          if constexpr (std::is_same<D, std::string>::value) {
            y[i] = x[i];
          } else {
            y[i] = ParseText<D>(x[i], input_name(0), i);
          }
        }
      } else if constexpr (std::is_same<D, std::string>::value) {
        for (int64_t i = 0; i < n; ++i) {
          y[i] = shortest_strings_ ? ShortestText(x[i]) : CastValue<D>(x[i]);
        }
      } else {
        ParallelFor(n, [&](int64_t begin, int64_t end) {
          ConvertRange<D>(x + begin, y + begin, end - begin);
        });
      }
    });
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
    .Arg("from_type",
         "(int or string) the input's TensorProto.DataType; needed only for "
         "the gradient, which casts back to it")
    .Arg("shortest_strings",
         "(bool, default 0) numbers become the shortest text that reads "
         "back as the same value (numpy's str; NaN, INF, -INF), as ONNX's "
         "Cast, instead of std::to_string's six decimals (Caffe2's)")
    .Input(0, "X", "tensor of any type")
    .Output(0, "Y", "X's elements converted to `to`, of X's shape")
    .Doc(
        "Casts the elements of X to the type `to`. Floats become integers by "
        "truncation, saturating at the integer's range (nan gives 0); numbers "
        "become bool by != 0 and strings by std::to_string (or shortest_strings). "
        "Strings become numbers by reading them (decimals, integers, nan, inf, +inf, "
        "-inf in any case); text that is not a number is an error naming the element.");

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

// The same through ConvertRange (the bulk conversions).
template <typename Src, typename Dst>
void ConvertRanges(const Tensor& X, Tensor* Y) {
  Y->Resize(X.dims());
  const Src* x = X.data<Src>();
  Dst* y = Y->mutable_data<Dst>();
  ParallelFor(X.numel(), [&](int64_t begin, int64_t end) {
    ConvertRange<Dst>(x + begin, y + begin, end - begin);
  });
}

}  // namespace

void FloatToHalfOp::RunOnDevice() {
  EnforceInputType(TypeList<float>{}, *this, 0, Input(0).dtype());
  if (!clip_) {
    ConvertRanges<float, float16>(Input(0), Output(0));
    return;
  }
  ConvertElements<float, float16>(Input(0), Output(0), [](float value) {
    // nan compares false both ways and passes through unclipped.
    if (value > kHalfMax) value = kHalfMax;
    if (value < -kHalfMax) value = -kHalfMax;
    return FloatToHalf(value);
  });
}

void HalfToFloatOp::RunOnDevice() {
  EnforceInputType(TypeList<float16>{}, *this, 0, Input(0).dtype());
  ConvertRanges<float16, float>(Input(0), Output(0));
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
