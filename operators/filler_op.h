// Fill operators: tensors made from arguments or random draws, with Caffe2's
// argument names and defaults.
//
// Every filler takes its output shape from exactly one place:
//   - no input: the `shape` argument (a list; an empty list is a scalar);
//   - one input: that input's shape, with `extra_shape` appended;
//   - one input and input_as_shape=1: the input's values (a 1-D int tensor),
//     with `extra_shape` appended.
// Conflicting combinations (shape and an input, extra_shape without an
// input) are rejected when the op is created, as Caffe2 does.
//
// Random fillers draw from the op context's generator, so a DeviceOption
// random_seed makes them reproducible.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/operator.h"
#include "core/schema.h"
#include "core/tensor.h"
#include "core/types.h"

namespace doppio {

// Resolves the output shape, then lets the subclass fill the tensor.
template <class Context>
class FillerOp : public Operator<Context> {
 public:
  FillerOp(const OperatorDef& def, Workspace* workspace);

  void RunOnDevice() final;

 protected:
  // `output` is resized; the subclass picks its dtype and writes it.
  virtual void Fill(Tensor* output) = 0;

  std::vector<int64_t> shape_;
  std::vector<int64_t> extra_shape_;
  bool input_as_shape_ = false;

 private:
  std::vector<int64_t> ShapeFromInput() const;
};

// Reads a shape-like list argument, rejecting negative entries by name.
std::vector<int64_t> ReadShapeArgument(const OperatorBase& op, const std::string& name);

// The element type that `dtype`, the value of the 'dtype' argument of an op
// of type `op_type` (a TensorProto.DataType), names: BYTE means uint8, and a
// type no tensor can hold is refused.
DataType DtypeArgumentType(const std::string& op_type, int dtype);

// Argument `name` read as element type T. Fills choose their dtype at run
// time, so this covers every storable type: the narrow integers are read as
// int64 and range-checked, float16 is read as float.
template <typename T>
T ScalarArgumentAs(const OperatorBase& op, const std::string& name,
                   const T& default_value);
template <typename T>
std::vector<T> ListArgumentAs(const OperatorBase& op, const std::string& name);

// Shape inference shared by the fillers: `dtype` (or `default_dtype`) and the
// shape from the argument or the input, unknown when input_as_shape is set.
OpSchema::InferenceFunction FillerShapeInference(DataType default_dtype);

// The schema part every FillerOp shares, for OpSchema::Apply: one output
// (in place on input 0 allowed), FillerShapeInference(default_dtype), the
// shape arguments and input 0, named `shape_input`, that can give the shape.
std::function<void(OpSchema&)> FillerSchema(DataType default_dtype,
                                            const char* shape_input = "input");

// The arguments each filler reads, shared by the CPU and CUDA ops.
//
// The dtype ConstantFill produces without a value input: `dtype` if given,
// else the kind of `value` (an int value means int64, a float value float),
// as in Caffe2. Also the shape inference's.
DataType ConstantFillType(const OperatorDef& def);

// UniformFill's (float) and UniformIntFill's (int32) bounds, default
// [0, 1): as arguments with min < max, or as inputs 1 and 2 (then not as
// arguments, and checked when the op runs).
template <typename T>
struct UniformRange {
  T min;
  T max;
};
template <typename T>
UniformRange<T> ReadUniformRange(const OperatorBase& op);

// GaussianFill's mean (default 0) and std (default 1, not negative).
struct GaussianArgs {
  float mean = 0.0f;
  float std = 1.0f;
};
GaussianArgs ReadGaussianArgs(const OperatorBase& op);

// XavierFill's bound sqrt(3 / fan_in), fan_in = numel / dim(0), and
// MSRAFill's standard deviation sqrt(2 / fan_out), fan_out = numel / dim(1),
// from the resized output (0 for an empty one).
float XavierFillScale(const Tensor& output);
float MSRAFillStd(const Tensor& output);

class ConstantFillOp final : public FillerOp<CPUContext> {
 public:
  ConstantFillOp(const OperatorDef& def, Workspace* workspace);

 protected:
  void Fill(Tensor* output) override;

 private:
  DataType dtype_ = DataType::kFloat;
  // The parsed `value` as a scalar of dtype_ (unused with a value input).
  Tensor value_;
};

// Zeros with `value` on the main diagonal, as numpy.fill_diagonal: (i, i)
// for i < min(rows, cols) of a 2-D output, (i, i, ..., i) of an output of
// higher rank, whose dims must then be equal. Its dtype and value are read
// as ConstantFill's.
class DiagonalFillOp final : public FillerOp<CPUContext> {
 public:
  DiagonalFillOp(const OperatorDef& def, Workspace* workspace);

 protected:
  void Fill(Tensor* output) override;

 private:
  DataType dtype_ = DataType::kFloat;
  Tensor value_;  // the parsed `value`, a scalar of dtype_
};

// int32 lengths [l0, l1, ...] -> the int32 concatenation of range(l0),
// range(l1), ...: each element's position within its segment.
class LengthsRangeFillOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// UniformFill (float, [min, max)) and UniformIntFill (int32, [min, max]).
template <typename T>
class UniformFillOp final : public FillerOp<CPUContext> {
 public:
  UniformFillOp(const OperatorDef& def, Workspace* workspace);

 protected:
  void Fill(Tensor* output) override;

 private:
  UniformRange<T> range_;
};

class GaussianFillOp final : public FillerOp<CPUContext> {
 public:
  GaussianFillOp(const OperatorDef& def, Workspace* workspace);

 protected:
  void Fill(Tensor* output) override;

 private:
  GaussianArgs args_;
};

// Uniform in [-sqrt(3 / fan_in), sqrt(3 / fan_in)], fan_in = numel / dim(0).
class XavierFillOp final : public FillerOp<CPUContext> {
 public:
  using FillerOp<CPUContext>::FillerOp;

 protected:
  void Fill(Tensor* output) override;
};

// Gaussian(0, sqrt(2 / fan_out)), fan_out = numel / dim(1).
class MSRAFillOp final : public FillerOp<CPUContext> {
 public:
  using FillerOp<CPUContext>::FillerOp;

 protected:
  void Fill(Tensor* output) override;
};

// ---- FillerOp template members (kept here so device variants reuse them) ----

template <class Context>
FillerOp<Context>::FillerOp(const OperatorDef& def, Workspace* workspace)
    : Operator<Context>(def, workspace),
      shape_(ReadShapeArgument(*this, "shape")),
      extra_shape_(ReadShapeArgument(*this, "extra_shape")),
      input_as_shape_(this->template GetSingleArgument<bool>("input_as_shape", false)) {
  if (this->InputSize() > 0) {
    DOPPIO_ENFORCE(shape_.empty(), "cannot set the 'shape' argument and pass an input ('",
                   this->input_name(0), "') at the same time");
  } else {
    DOPPIO_ENFORCE(extra_shape_.empty(), "'extra_shape' needs an input whose shape it extends");
    DOPPIO_ENFORCE(!input_as_shape_, "'input_as_shape' is set but the op has no input");
    const bool scalar_shape = shape_.empty() &&
                              ArgumentHelper(this->def()).HasSingleOfType<int64_t>("shape");
    DOPPIO_ENFORCE(!scalar_shape, "argument 'shape' is a single int; a list is expected");
  }
}

template <class Context>
std::vector<int64_t> FillerOp<Context>::ShapeFromInput() const {
  const Tensor& input = this->Input(0);
  std::vector<int64_t> dims;
  if (!input_as_shape_) {
    dims = input.dims();
  } else {
    DOPPIO_ENFORCE(input.device().kind == DeviceKind::kCPU, "with input_as_shape, input '",
                   this->input_name(0), "' must be a CPU tensor");
    DOPPIO_ENFORCE(input.ndim() == 1 &&
                       (input.dtype() == DataType::kInt64 || input.dtype() == DataType::kInt32),
                   "with input_as_shape, input '", this->input_name(0),
                   "' must be a 1-D int64 (or int32) tensor, not ", input.DebugString());
    DOPPIO_ENFORCE(input.numel() > 0, "with input_as_shape, input '", this->input_name(0),
                   "' must hold at least one dimension");
    for (int64_t i = 0; i < input.numel(); ++i) {
      dims.push_back(input.dtype() == DataType::kInt64 ? input.data<int64_t>()[i]
                                                       : input.data<int32_t>()[i]);
      DOPPIO_ENFORCE(dims.back() >= 0, "input '", this->input_name(0),
                     "' gives a negative dimension ", dims.back(), " for the shape");
    }
  }
  dims.insert(dims.end(), extra_shape_.begin(), extra_shape_.end());
  return dims;
}

template <class Context>
void FillerOp<Context>::RunOnDevice() {
  // Read before touching the output: in place, the output is the input.
  const std::vector<int64_t> dims = this->InputSize() > 0 ? ShapeFromInput() : shape_;
  Tensor* output = this->Output(0);
  output->Resize(dims);
  Fill(output);
}

}  // namespace doppio
