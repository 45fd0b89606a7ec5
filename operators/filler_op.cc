#include "operators/filler_op.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <type_traits>
#include <utility>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

// ---- argument helpers shared with GivenTensorFill ----

std::vector<int64_t> ReadShapeArgument(const OperatorBase& op, const std::string& name) {
  std::vector<int64_t> dims = op.GetRepeatedArgument<int64_t>(name);
  for (int64_t d : dims) {
    DOPPIO_ENFORCE(d >= 0, "argument '", name, "' has a negative dimension ", d, " in ", dims);
  }
  return dims;
}

DataType DtypeArgumentType(const std::string& op_type, int dtype) {
  DataType type = static_cast<DataType>(dtype);
  if (type == DataType::kByte) type = DataType::kUint8;
  DOPPIO_ENFORCE(IsStorableType(type), "op ", op_type, ": argument 'dtype' has the value ",
                 dtype, ", which is not a TensorProto.DataType a tensor can hold");
  return type;
}

namespace {

template <typename T>
constexpr bool kReadDirectly =
    std::is_same<T, float>::value || std::is_same<T, double>::value ||
    std::is_same<T, bool>::value || std::is_same<T, int32_t>::value ||
    std::is_same<T, int64_t>::value || std::is_same<T, std::string>::value;

template <typename T>
T NarrowInteger(const OperatorBase& op, const std::string& name, int64_t value) {
  // Arguments are int64: a uint64 takes any non-negative one.
  constexpr int64_t kHighest = std::is_same<T, uint64_t>::value
                                   ? std::numeric_limits<int64_t>::max()
                                   : static_cast<int64_t>(std::numeric_limits<T>::max());
  DOPPIO_ENFORCE(value >= static_cast<int64_t>(std::numeric_limits<T>::min()) && value <= kHighest,
                 "argument '", name, "' value ", value, " does not fit ",
                 DataTypeName(DataTypeFor<T>()));
  return static_cast<T>(value);
}

}  // namespace

template <typename T>
T ScalarArgumentAs(const OperatorBase& op, const std::string& name, const T& default_value) {
  if constexpr (kReadDirectly<T>) {
    return op.GetSingleArgument<T>(name, default_value);
  } else if constexpr (std::is_same<T, float16>::value) {
    return FloatToHalf(op.GetSingleArgument<float>(name, HalfToFloat(default_value)));
  } else if constexpr (std::is_same<T, bfloat16>::value) {
    return FloatToBFloat16(op.GetSingleArgument<float>(name, BFloat16ToFloat(default_value)));
  } else {
    const int64_t value =
        op.GetSingleArgument<int64_t>(name, static_cast<int64_t>(default_value));
    return NarrowInteger<T>(op, name, value);
  }
}

template <typename T>
std::vector<T> ListArgumentAs(const OperatorBase& op, const std::string& name) {
  if constexpr (kReadDirectly<T>) {
    return op.GetRepeatedArgument<T>(name);
  } else if constexpr (std::is_same<T, float16>::value) {
    std::vector<T> values;
    for (float v : op.GetRepeatedArgument<float>(name)) values.push_back(FloatToHalf(v));
    return values;
  } else if constexpr (std::is_same<T, bfloat16>::value) {
    std::vector<T> values;
    for (float v : op.GetRepeatedArgument<float>(name)) values.push_back(FloatToBFloat16(v));
    return values;
  } else {
    std::vector<T> values;
    for (int64_t v : op.GetRepeatedArgument<int64_t>(name)) {
      values.push_back(NarrowInteger<T>(op, name, v));
    }
    return values;
  }
}

#define DOPPIO_INSTANTIATE_FILL_ARGUMENT_(T)                                       \
  template T ScalarArgumentAs<T>(const OperatorBase&, const std::string&, const T&); \
  template std::vector<T> ListArgumentAs<T>(const OperatorBase&, const std::string&);
DOPPIO_INSTANTIATE_FILL_ARGUMENT_(float)
DOPPIO_INSTANTIATE_FILL_ARGUMENT_(double)
DOPPIO_INSTANTIATE_FILL_ARGUMENT_(float16)
DOPPIO_INSTANTIATE_FILL_ARGUMENT_(bfloat16)
DOPPIO_INSTANTIATE_FILL_ARGUMENT_(int8_t)
DOPPIO_INSTANTIATE_FILL_ARGUMENT_(int16_t)
DOPPIO_INSTANTIATE_FILL_ARGUMENT_(int32_t)
DOPPIO_INSTANTIATE_FILL_ARGUMENT_(int64_t)
DOPPIO_INSTANTIATE_FILL_ARGUMENT_(uint8_t)
DOPPIO_INSTANTIATE_FILL_ARGUMENT_(uint16_t)
DOPPIO_INSTANTIATE_FILL_ARGUMENT_(uint32_t)
DOPPIO_INSTANTIATE_FILL_ARGUMENT_(uint64_t)
DOPPIO_INSTANTIATE_FILL_ARGUMENT_(bool)
DOPPIO_INSTANTIATE_FILL_ARGUMENT_(std::string)
#undef DOPPIO_INSTANTIATE_FILL_ARGUMENT_

OpSchema::InferenceFunction FillerShapeInference(DataType default_dtype) {
  return [default_dtype](const OperatorDef& def, const std::vector<TensorShape>& inputs) {
    ArgumentHelper args(def);
    TensorShape out;
    out.set_data_type(static_cast<TensorProto::DataType>(
        args.GetSingle<int>("dtype", static_cast<int>(default_dtype))));
    if (!inputs.empty()) {
      if (args.GetSingle<bool>("input_as_shape", false)) {
        out.set_unknown_shape(true);
        return std::vector<TensorShape>{out};
      }
      for (int64_t d : inputs[0].dims()) out.add_dims(d);
      for (int64_t d : args.GetRepeated<int64_t>("extra_shape")) out.add_dims(d);
    } else {
      for (int64_t d : args.GetRepeated<int64_t>("shape")) out.add_dims(d);
    }
    return std::vector<TensorShape>{out};
  };
}

std::function<void(OpSchema&)> FillerSchema(DataType default_dtype, const char* shape_input) {
  return [default_dtype, shape_input](OpSchema& schema) {
    schema.NumOutputs(1)
        .AllowInplace({{0, 0}})
        .TensorInferenceFunction(FillerShapeInference(default_dtype))
        .Arg("shape", "(list of ints) the output shape; not with an input")
        .Arg("extra_shape",
             "(list of ints) dimensions appended to the shape taken from the input")
        .Arg("input_as_shape",
             "(bool, default 0) take the shape from the values of the 1-D int64 input")
        .Input(0, shape_input,
               "(optional) tensor whose shape (or, with input_as_shape, whose values) "
               "gives the output shape");
  };
}

// ---- ConstantFill ----

DataType ConstantFillType(const OperatorDef& def) {
  const ArgumentHelper args(def);
  if (args.Has("dtype") || !args.Has("value")) {
    const int dtype = args.GetSingle<int>("dtype", static_cast<int>(DataType::kFloat));
    DOPPIO_ENFORCE(dtype != static_cast<int>(DataType::kUndefined), "op ", def.type(),
                   ": argument 'dtype' cannot be UNDEFINED (0)");
    return DtypeArgumentType(def.type(), dtype);
  }
  if (args.HasSingleOfType<int64_t>("value")) return DataType::kInt64;
  if (args.HasSingleOfType<float>("value")) return DataType::kFloat;
  DOPPIO_THROW("op ", def.type(), ": argument 'value' is neither an int nor a float; set "
               "'dtype' to fill with another type");
}

ConstantFillOp::ConstantFillOp(const OperatorDef& def, Workspace* workspace)
    : FillerOp<CPUContext>(def, workspace), dtype_(ConstantFillType(def)) {
  // Parse `value` now, so a value of the wrong kind fails at creation.
  if (InputSize() < 2) {
    value_.Resize({});
    DispatchDataType(dtype_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      *value_.mutable_data<T>() = ScalarArgumentAs<T>(*this, "value", T());
    });
  }
}

void ConstantFillOp::Fill(Tensor* output) {
  // With a second input V, the fill value is V's first element, in V's type.
  const Tensor& value = InputSize() >= 2 ? Input(1) : value_;
  if (InputSize() >= 2) {
    DOPPIO_ENFORCE(value.numel() >= 1, "value input '", input_name(1), "' is empty");
  }
  DispatchDataType(value.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T fill_value = value.data<T>()[0];
    T* data = output->mutable_data<T>();
    std::fill(data, data + output->numel(), fill_value);
  });
}

// ---- DiagonalFill, LengthsRangeFill ----

namespace {

// Elements between consecutive diagonal entries, and how many there are.
std::pair<int64_t, int64_t> DiagonalStepAndCount(const OperatorBase& op, const Tensor& output) {
  const std::vector<int64_t>& dims = output.dims();
  DOPPIO_ENFORCE(dims.size() >= 2, "the output must have rank 2 or more, got shape ", dims);
  if (dims.size() > 2) {
    for (int64_t d : dims) {
      DOPPIO_ENFORCE(d == dims[0], "an output of rank ", dims.size(),
                     " needs equal dims for a diagonal, got shape ", dims, " (op ", op.def().type(),
                     ")");
    }
  }
  // Moving one step along every axis at once: the sum of the strides.
  int64_t step = 0, stride = 1;
  for (size_t axis = dims.size(); axis-- > 0;) {
    step += stride;
    stride *= dims[axis];
  }
  return {step, *std::min_element(dims.begin(), dims.end())};
}

}  // namespace

DiagonalFillOp::DiagonalFillOp(const OperatorDef& def, Workspace* workspace)
    : FillerOp<CPUContext>(def, workspace), dtype_(ConstantFillType(def)) {
  value_.Resize({});
  DispatchDataType(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    *value_.mutable_data<T>() = ScalarArgumentAs<T>(*this, "value", T());
  });
}

void DiagonalFillOp::Fill(Tensor* output) {
  // Plain locals: a lambda may not capture structured bindings before C++20 (clang refuses).
  const auto step_and_count = DiagonalStepAndCount(*this, *output);
  const int64_t step = step_and_count.first, count = step_and_count.second;
  DispatchDataType(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* data = output->mutable_data<T>();
    std::fill(data, data + output->numel(), T());
    for (int64_t i = 0; i < count; ++i) data[i * step] = value_.data<T>()[0];
  });
}

void LengthsRangeFillOp::RunOnDevice() {
  const Tensor& lengths = Input(0);
  DOPPIO_ENFORCE(lengths.ndim() == 1 && lengths.dtype() == DataType::kInt32, "lengths '",
                 input_name(0), "' must be a 1-D int32 tensor, not ", lengths.DebugString());
  const int32_t* length = lengths.data<int32_t>();
  int64_t total = 0;
  for (int64_t i = 0; i < lengths.numel(); ++i) {
    DOPPIO_ENFORCE(length[i] >= 0, "lengths '", input_name(0), "' has a negative length ",
                   length[i], " at ", i);
    total += length[i];
  }
  Tensor* output = Output(0);
  output->Resize({total});
  int32_t* out = output->mutable_data<int32_t>();
  for (int64_t i = 0; i < lengths.numel(); ++i) {
    std::iota(out, out + length[i], 0);
    out += length[i];
  }
}

// ---- random fills ----

template <typename T>
UniformRange<T> ReadUniformRange(const OperatorBase& op) {
  UniformRange<T> range{op.GetSingleArgument<T>("min", T(0)), op.GetSingleArgument<T>("max", T(1))};
  if (op.InputSize() == 3) {
    DOPPIO_ENFORCE(!op.HasArgument("min") && !op.HasArgument("max"),
                   "give min and max either as arguments or as inputs, not both");
  } else {
    DOPPIO_ENFORCE(range.min < range.max, "max (", range.max, ") must be bigger than min (",
                   range.min, ")");
  }
  return range;
}

template UniformRange<float> ReadUniformRange<float>(const OperatorBase&);
template UniformRange<int32_t> ReadUniformRange<int32_t>(const OperatorBase&);

template <typename T>
UniformFillOp<T>::UniformFillOp(const OperatorDef& def, Workspace* workspace)
    : FillerOp<CPUContext>(def, workspace), range_(ReadUniformRange<T>(*this)) {}

template <typename T>
void UniformFillOp<T>::Fill(Tensor* output) {
  T low = range_.min;
  T high = range_.max;
  if (InputSize() == 3) {
    auto scalar_input = [&](int i) {
      const Tensor& bound = Input(i);
      DOPPIO_ENFORCE(bound.numel() == 1 && bound.dtype() == DataTypeFor<T>(), "input '",
                     input_name(i), "' must be a single ", DataTypeName(DataTypeFor<T>()), ", not ",
                     bound.DebugString());
      return bound.data<T>()[0];
    };
    low = scalar_input(1);
    high = scalar_input(2);
    if (low > high) {
      // Caffe2's convention: an inverted range from inputs yields no rows, so
      // dynamically sized index draws can be empty.
      DOPPIO_ENFORCE(output->ndim() >= 1, "min > max needs an output with at least one dimension");
      std::vector<int64_t> dims = output->dims();
      dims[0] = 0;
      output->Resize(dims);
      output->mutable_data<T>();
      return;
    }
  }
  T* data = output->mutable_data<T>();
  auto& generator = context_.RandGenerator();
  if constexpr (std::is_floating_point<T>::value) {
    std::uniform_real_distribution<T> distribution(low, high);
    for (int64_t i = 0; i < output->numel(); ++i) data[i] = distribution(generator);
  } else {
    std::uniform_int_distribution<T> distribution(low, high);
    for (int64_t i = 0; i < output->numel(); ++i) data[i] = distribution(generator);
  }
}

template class UniformFillOp<float>;
template class UniformFillOp<int32_t>;

GaussianArgs ReadGaussianArgs(const OperatorBase& op) {
  GaussianArgs args;
  args.mean = op.GetSingleArgument<float>("mean", args.mean);
  args.std = op.GetSingleArgument<float>("std", args.std);
  DOPPIO_ENFORCE(args.std >= 0.0f, "argument 'std' must not be negative, got ", args.std);
  return args;
}

float XavierFillScale(const Tensor& output) {
  DOPPIO_ENFORCE(output.ndim() >= 1, "the output needs at least one dimension to define fan_in");
  if (output.numel() == 0) return 0.0f;
  const int64_t fan_in = output.numel() / output.dim(0);
  return std::sqrt(3.0f / static_cast<float>(fan_in));
}

float MSRAFillStd(const Tensor& output) {
  DOPPIO_ENFORCE(output.ndim() >= 2,
                 "the output needs at least two dimensions to define fan_out, got ", output.dims());
  if (output.numel() == 0) return 0.0f;
  const int64_t fan_out = output.numel() / output.dim(1);
  return std::sqrt(2.0f / static_cast<float>(fan_out));
}

GaussianFillOp::GaussianFillOp(const OperatorDef& def, Workspace* workspace)
    : FillerOp<CPUContext>(def, workspace), args_(ReadGaussianArgs(*this)) {}

namespace {
void FillGaussian(int64_t count, float mean, float stddev, std::mt19937& generator,
                  float* data) {
  if (stddev == 0.0f) {  // std::normal_distribution needs stddev > 0
    std::fill(data, data + count, mean);
    return;
  }
  std::normal_distribution<float> distribution(mean, stddev);
  for (int64_t i = 0; i < count; ++i) data[i] = distribution(generator);
}
}  // namespace

void GaussianFillOp::Fill(Tensor* output) {
  FillGaussian(output->numel(), args_.mean, args_.std, context_.RandGenerator(),
               output->mutable_data<float>());
}

void XavierFillOp::Fill(Tensor* output) {
  const float scale = XavierFillScale(*output);
  float* data = output->mutable_data<float>();
  if (output->numel() == 0) return;
  std::uniform_real_distribution<float> distribution(-scale, scale);
  auto& generator = context_.RandGenerator();
  for (int64_t i = 0; i < output->numel(); ++i) data[i] = distribution(generator);
}

void MSRAFillOp::Fill(Tensor* output) {
  const float stddev = MSRAFillStd(*output);
  float* data = output->mutable_data<float>();
  if (output->numel() == 0) return;
  FillGaussian(output->numel(), 0.0f, stddev, context_.RandGenerator(), data);
}

// ---- registration ----

REGISTER_CPU_OPERATOR(ConstantFill, ConstantFillOp);
REGISTER_CPU_OPERATOR(DiagonalFill, DiagonalFillOp);
REGISTER_CPU_OPERATOR(LengthsRangeFill, LengthsRangeFillOp);
REGISTER_CPU_OPERATOR(UniformFill, UniformFillOp<float>);
REGISTER_CPU_OPERATOR(UniformIntFill, UniformFillOp<int32_t>);
REGISTER_CPU_OPERATOR(GaussianFill, GaussianFillOp);
REGISTER_CPU_OPERATOR(XavierFill, XavierFillOp);
REGISTER_CPU_OPERATOR(MSRAFill, MSRAFillOp);

OPERATOR_SCHEMA(ConstantFill)
    .NumInputs(0, 2)
    .Arg("value", "(type of dtype, default 0) the value of every element")
    .Arg("dtype",
         "(int, TensorProto.DataType) element type; default FLOAT, or INT64 / "
         "FLOAT when only an int / float value is given")
    .Apply(FillerSchema(DataType::kFloat))
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      std::vector<TensorShape> out = FillerShapeInference(DataType::kFloat)(def, in);
      out[0].set_data_type(static_cast<TensorProto::DataType>(
          in.size() >= 2 ? static_cast<DataType>(in[1].data_type()) : ConstantFillType(def)));
      return out;
    })
    .Input(1, "V", "(optional) fill with the first element of V, in V's type")
    .Output(0, "output", "tensor with every element equal to value")
    .Doc("Fills the output with a constant `value` of type `dtype`.");

OPERATOR_SCHEMA(DiagonalFill)
    .NumInputs(0, 1)
    .Arg("value", "(type of dtype, default 0) the value on the diagonal")
    .Arg("dtype", "(int, TensorProto.DataType) element type, chosen as ConstantFill's")
    .Apply(FillerSchema(DataType::kFloat))
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      std::vector<TensorShape> out = FillerShapeInference(DataType::kFloat)(def, in);
      out[0].set_data_type(static_cast<TensorProto::DataType>(ConstantFillType(def)));
      return out;
    })
    .Output(0, "output", "zeros with value at (i, i, ..., i); rank 2 or more")
    .Doc(
        "Fills the main diagonal of the output with `value` and the rest with "
        "zeros, as numpy.fill_diagonal without wrapping: a tall 2-D output gets "
        "min(rows, cols) entries; an output of higher rank must be a cube.");

OPERATOR_SCHEMA(LengthsRangeFill)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>&) {
      TensorShape out;
      out.set_data_type(TensorProto::INT32);
      out.set_unknown_shape(true);  // the sum of the lengths' values
      return std::vector<TensorShape>{out};
    })
    .Input(0, "lengths", "1-D int32 segment lengths, none negative")
    .Output(0, "range_sequence", "1-D int32: range(lengths[0]), range(lengths[1]), ...")
    .Doc(
        "Numbers the elements of each segment from 0: for lengths [2, 3] the "
        "output is [0, 1, 0, 1, 2].");

OPERATOR_SCHEMA(UniformFill)
    .NumInputs({0, 1, 3})
    .Arg("min", "(float, default 0) lower bound")
    .Arg("max", "(float, default 1) upper bound; must exceed min")
    .Apply(FillerSchema(DataType::kFloat, "shape"))
    .Input(1, "min", "(optional) scalar float tensor, the lower bound")
    .Input(2, "max", "(optional) scalar float tensor, the upper bound")
    .Output(0, "output", "float samples from the uniform distribution [min, max)")
    .Doc("Fills the output with float samples drawn uniformly from [min, max). "
         "With min/max inputs and max < min, the output's first dimension is 0.");

OPERATOR_SCHEMA(UniformIntFill)
    .NumInputs({0, 1, 3})
    .Arg("min", "(int, default 0) lower bound, inclusive")
    .Arg("max", "(int, default 1) upper bound, inclusive; must exceed min")
    .Apply(FillerSchema(DataType::kInt32, "shape"))
    .Input(1, "min", "(optional) scalar int32 tensor, the lower bound")
    .Input(2, "max", "(optional) scalar int32 tensor, the upper bound")
    .Output(0, "output", "int32 samples from the uniform distribution [min, max]")
    .Doc("Fills the output with int32 samples drawn uniformly from [min, max].");

OPERATOR_SCHEMA(GaussianFill)
    .NumInputs(0, 1)
    .Arg("mean", "(float, default 0) mean of the distribution")
    .Arg("std", "(float, default 1) standard deviation of the distribution")
    .Apply(FillerSchema(DataType::kFloat))
    .Output(0, "output", "float samples from N(mean, std^2)")
    .Doc("Fills the output with samples from a normal distribution.");

OPERATOR_SCHEMA(XavierFill)
    .NumInputs(0, 1)
    .Apply(FillerSchema(DataType::kFloat))
    .Output(0, "output", "float samples from U(-sqrt(3/fan_in), sqrt(3/fan_in))")
    .Doc("Xavier (Glorot) initialization: uniform samples in [-s, s] with "
         "s = sqrt(3 / fan_in), fan_in = numel / shape[0].");

OPERATOR_SCHEMA(MSRAFill)
    .NumInputs(0, 1)
    .Apply(FillerSchema(DataType::kFloat))
    .Output(0, "output", "float samples from N(0, 2 / fan_out)")
    .Doc("MSRA (He) initialization: normal samples with mean 0 and standard "
         "deviation sqrt(2 / fan_out), fan_out = numel / shape[1].");

NO_GRADIENT(ConstantFill, "its output depends on no differentiable input (the input only gives a shape)");
NO_GRADIENT(DiagonalFill,
            "its output depends on no differentiable input (the input only gives a shape)");
NO_GRADIENT(LengthsRangeFill, "its integer output depends only on the lengths");
NO_GRADIENT(UniformFill, "random samples depend on no differentiable input");
NO_GRADIENT(UniformIntFill, "random integers depend on no differentiable input");
NO_GRADIENT(GaussianFill, "random samples depend on no differentiable input");
NO_GRADIENT(XavierFill, "random samples depend on no differentiable input");
NO_GRADIENT(MSRAFill, "random samples depend on no differentiable input");

}  // namespace doppio
