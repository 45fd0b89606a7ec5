#include "operators/utility_op.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <iostream>
#include <sstream>
#include <type_traits>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/lengths_reducer_ops.h"
#include "operators/op_type_dispatch.h"
#include "operators/sparse_index_utils.h"

namespace doppio {

namespace {

const Tensor& HostInput(const OperatorBase& op, const Tensor& input) {
  DOPPIO_ENFORCE(input.device().kind == DeviceKind::kCPU, "input '", op.input_name(0),
                 "' is not on the CPU; this build copies host tensors only");
  return input;
}

}  // namespace

void CopyOp::RunOnDevice() {
  const Tensor& input = HostInput(*this, Input(0));
  Output(0)->CopyFrom(input);
}

void AliasOp::RunOnDevice() { Output(0)->ShareData(Input(0)); }

// ---- Print ----

namespace {
// Caffe2 prints at most this many elements when `limit` is 0.
constexpr int64_t kDefaultPrintLimit = 1000;

template <typename T>
void PrintElement(std::ostream& out, const T& value) {
  if constexpr (std::is_same<T, float16>::value) {
    out << HalfToFloat(value);
  } else if constexpr (std::is_same<T, bfloat16>::value) {
    out << BFloat16ToFloat(value);
  } else if constexpr (std::is_same<T, int8_t>::value || std::is_same<T, uint8_t>::value) {
    out << static_cast<int>(value);  // numbers, not characters
  } else {
    out << value;
  }
}
}  // namespace

PrintOp::PrintOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      limit_(GetSingleArgument<int64_t>("limit", 0)),
      every_n_(GetSingleArgument<int>("every_n", 1)) {
  DOPPIO_ENFORCE(every_n_ >= 1, "argument 'every_n' must be at least 1, got ", every_n_);
  DOPPIO_ENFORCE(limit_ >= 0, "argument 'limit' must not be negative, got ", limit_);
  if (limit_ == 0) limit_ = kDefaultPrintLimit;
  if (GetSingleArgument<bool>("to_file", false)) {
    const std::string path = LogFileName(input_name(0));
    file_ = std::make_unique<std::ofstream>(path, std::ios::app);
    DOPPIO_ENFORCE(file_->good(), "cannot open '", path, "' to print blob '", input_name(0), "'");
  }
}

std::string PrintOp::LogFileName(const std::string& blob_name) {
  std::string name = blob_name;
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  return name + ".log";
}

std::ostream& PrintOp::Stream() {
  if (file_) return *file_;
  return std::cout;
}

void PrintOp::RunOnDevice() {
  // Prints runs 1, 1 + every_n, 1 + 2 * every_n ...
  const bool print_now = runs_ % every_n_ == 0;
  ++runs_;
  if (!print_now) return;
  std::ostringstream line;
  const Blob& blob = InputBlob(0);
  if (!blob.IsTensor()) {
    line << "Blob " << input_name(0) << " of type: " << blob.TypeName();
  } else {
    const Tensor& tensor = HostInput(*this, blob.GetTensor());
    line << "Tensor " << input_name(0) << " of type " << DataTypeName(tensor.dtype())
         << ". Dims: (";
    for (int64_t d : tensor.dims()) line << d << ",";
    line << "): ";
    if (tensor.numel() > 0) {
      DispatchDataType(tensor.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* data = tensor.data<T>();
        const int64_t count = std::min(tensor.numel(), limit_);
        for (int64_t i = 0; i < count; ++i) {
          if (i) line << ",";
          PrintElement(line, data[i]);
        }
      });
    }
  }
  std::ostream& out = Stream();
  out << line.str() << std::endl;
  DOPPIO_ENFORCE(out.good(), "writing blob '", input_name(0), "' failed");
}

// ---- registration ----

REGISTER_CPU_OPERATOR(Copy, CopyOp);
// On the CPU, copying "to the device of input 1" is a plain copy.
REGISTER_CPU_OPERATOR(CopyOnDeviceLike, CopyOp);
// On the CPU both are plain copies; their CUDA versions (copy_op_gpu.cc)
// cross the host/device boundary.
REGISTER_CPU_OPERATOR(CopyFromCPUInput, CopyOp);
REGISTER_CPU_OPERATOR(EnsureCPUOutput, CopyOp);
REGISTER_CPU_OPERATOR(Alias, AliasOp);
REGISTER_CPU_OPERATOR(Print, PrintOp);

OPERATOR_SCHEMA(Copy)
    .Elementwise()
    .NumInputs(1)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .Input(0, "input", "tensor to copy (any dtype)")
    .Output(0, "output", "a deep copy of the input")
    .Doc("Copies the input tensor into the output (shape, dtype and elements), "
         "possibly across devices.");

OPERATOR_SCHEMA(CopyOnDeviceLike)
    .NumInputs(2)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .Input(0, "input", "tensor to copy")
    .Input(1, "dst", "tensor on whose device the copy is made")
    .Output(0, "output", "a deep copy of the input on dst's device")
    .Doc("Copies input 0 onto the device that holds input 1 (Copy's gradient).");

// The cross-device copies (issue 9). Their kernels are CUDA-only, except
// CopyFromCPUInput and EnsureCPUOutput, which Caffe2 also runs on the CPU.
OPERATOR_SCHEMA(CopyGPUToCPU)
    .NumInputs(1)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .Input(0, "input", "The input tensor.")
    .Output(0, "output", "Tensor that will contain a copy of the input.")
    .Doc("Copies a tensor from the op's GPU to the CPU. Must be run under a "
         "CUDA device option.");

OPERATOR_SCHEMA(CopyCPUToGPU)
    .NumInputs(1)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .Input(0, "input", "The input tensor.")
    .Output(0, "output", "Tensor that will contain a copy of the input.")
    .Doc("Copies a CPU tensor to the op's GPU. Must be run under a CUDA device "
         "option.");

OPERATOR_SCHEMA(CopyFromCPUInput)
    .NumInputs(1)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .Input(0, "input", "The input CPU tensor.")
    .Output(0, "output", "either a TensorCUDA or a TensorCPU")
    .Doc("Takes a CPU input tensor and copies it to an output on the op's "
         "device (GPU or CPU); this may be a cross-device copy.");

OPERATOR_SCHEMA(EnsureCPUOutput)
    .NumInputs(1)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .Input(0, "input", "The input CUDA or CPU tensor.")
    .Output(0, "output", "TensorCPU that is a copy of the input.")
    .Doc("Always makes a CPU output, which may be a cross-device copy. Under a "
         "CPU device option the input must be on the CPU; under a CUDA one it "
         "may be on the op's GPU or on the CPU.");

OPERATOR_SCHEMA(Alias)
    .NumInputs(1)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .Input(0, "input", "tensor whose storage is shared")
    .Output(0, "output", "tensor of the input's shape sharing its storage")
    .Doc("Makes the output share the input's storage. Writes through either "
         "are visible in both, which breaks the one-writer assumption of "
         "memory optimization and the dag executor: use it only where that "
         "is intended (e.g. Hogwild).");

OPERATOR_SCHEMA(Print)
    .NumInputs(1)
    .NumOutputs(0)
    .Arg("to_file",
         "(bool, default 0) append to the file <blob name>.log in the current "
         "directory ('/' in the name becomes '_') instead of stdout")
    .Arg("limit", "(int, default 0) print at most this many elements; 0 means 1000")
    .Arg("every_n", "(int, default 1) print on every n-th run only")
    .Input(0, "tensor", "the blob to print")
    .Doc("Prints the input's name, dtype, dims and first elements.");

namespace {

class GetCopyGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    // Copied back onto the device of the forward input.
    return SingleGradientDef("CopyOnDeviceLike", "", {GO(0), I(0)}, {GI(0)});
  }
};

// Sparse output gradients are not handed through: doppio's gradient maker
// cannot tell a sparse output gradient from a dense one without core changes,
// and the device copies only ever see dense gradients in the nets we run.
class GetGPUToCPUGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("CopyCPUToGPU", "", {GO(0)}, {GI(0)});
  }
};

class GetCPUToGPUGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("CopyGPUToCPU", "", {GO(0)}, {GI(0)});
  }
};

class GetAliasGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    // Output and input are one tensor, so are their gradients.
    SetDense(0, GO(0));
    return {};
  }
};

}  // namespace

REGISTER_GRADIENT(Copy, GetCopyGradient);
REGISTER_GRADIENT(CopyOnDeviceLike, GetCopyGradient);
REGISTER_GRADIENT(Alias, GetAliasGradient);
REGISTER_GRADIENT(CopyGPUToCPU, GetGPUToCPUGradient);
REGISTER_GRADIENT(CopyCPUToGPU, GetCPUToGPUGradient);
NO_GRADIENT(CopyFromCPUInput,
            "Caffe2 gives it none: it feeds host inputs (data, constants) onto a device");
NO_GRADIENT(EnsureCPUOutput, "it makes host copies of outputs for reading, as in Caffe2");
SHOULD_NOT_DO_GRADIENT(Print, "it has no outputs; a net's backward pass should not reach it");

void SizeOp::RunOnDevice() {
  const int64_t size = Input(0).numel();
  Tensor* Y = Output(0);
  Y->Resize({});
  Y->mutable_data<int64_t>()[0] = size;
}

namespace {

template <typename T>
T ScalarOf(const OperatorBase& op, int index, const Tensor& t) {
  DOPPIO_ENFORCE(t.numel() == 1, "'", op.input_name(index), "' must be a scalar, not ",
                 t.DebugString());
  return t.data<T>()[0];
}

}  // namespace

void RangeOp::RunOnDevice() {
  const DataType dtype = Input(0).dtype();
  for (int i = 1; i < InputSize(); ++i) {
    DOPPIO_ENFORCE(Input(i).dtype() == dtype, "Range's inputs must have one type: '", input_name(i),
                   "' is ", DataTypeName(Input(i).dtype()), ", '", input_name(0), "' ",
                   DataTypeName(dtype));
  }
  DispatchInput(NumericTypes{}, *this, 0, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T start = 0, step = 1, stop;
    if (InputSize() == 1) {
      stop = ScalarOf<T>(*this, 0, Input(0));
    } else {
      start = ScalarOf<T>(*this, 0, Input(0));
      stop = ScalarOf<T>(*this, 1, Input(1));
      if (InputSize() == 3) step = ScalarOf<T>(*this, 2, Input(2));
    }
    DOPPIO_ENFORCE(step != 0, "Step size cannot be 0 (Range's step)");
    const double count = std::ceil((double(stop) - double(start)) / double(step));
    const int64_t length = count > 0 ? static_cast<int64_t>(count) : 0;
    Tensor* Y = Output(0);
    Y->Resize({length});
    T* y = Y->mutable_data<T>();
    for (int64_t i = 0; i < length; ++i) y[i] = static_cast<T>(start + step * static_cast<T>(i));
  });
}

void LengthsToShapeOp::RunOnDevice() {
  const Tensor& lengths = Input(0);
  DOPPIO_ENFORCE(lengths.ndim() == 1 && lengths.dtype() == DataType::kInt32, "lengths '",
                 input_name(0), "' must be an int32 vector, not ", lengths.DebugString());
  const int32_t* data = lengths.data<int32_t>();
  const int32_t first = lengths.numel() > 0 ? data[0] : 0;
  for (int64_t i = 1; i < lengths.numel(); ++i) {
    DOPPIO_ENFORCE_EQ(data[i], first, "lengths '", input_name(0),
                      "' must all be equal to make a shape (element ", i, ")");
  }
  Tensor* Y = Output(0);
  Y->Resize({2});
  int32_t* y = Y->mutable_data<int32_t>();
  y[0] = static_cast<int32_t>(lengths.numel());
  y[1] = first;
}

void LengthsGatherOp::RunOnDevice() {
  const Tensor& items = Input(0);
  const Tensor& indices = Input(2);
  EnforceHasRows(*this, 0, items);
  EnforceVector(*this, 2, indices);
  DOPPIO_ENFORCE(items.dtype() != DataType::kString, "LengthsGather takes numeric items");
  int64_t total = 0;
  const std::vector<int64_t> length = ReadLengths(*this, 1, Input(1), &total);
  DOPPIO_ENFORCE_EQ(total, items.dim(0), "lengths '", input_name(1),
                    "' must sum to the rows of items '", input_name(0), "'");
  std::vector<int64_t> offsets(length.size() + 1, 0);
  for (size_t i = 0; i < length.size(); ++i) offsets[i + 1] = offsets[i] + length[i];
  std::vector<int64_t> segments(static_cast<size_t>(indices.numel()));
  DispatchInput(IndexTypes{}, *this, 2, indices.dtype(), [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* index = indices.data<I>();
    CheckIndicesInRange(*this, 2, index, indices.numel(), static_cast<int64_t>(length.size()), 1);
    std::copy(index, index + indices.numel(), segments.begin());
  });
  int64_t rows = 0;
  for (int64_t s : segments) rows += length[s];
  Tensor* Y = Output(0);
  Y->Resize(ShapeOfRows({rows}, items));
  const size_t row_bytes = static_cast<size_t>(items.SizeFromDim(1)) * items.itemsize();
  const char* from = static_cast<const char*>(items.raw_data());
  char* to = static_cast<char*>(Y->raw_mutable_data(items.dtype()));
  for (int64_t s : segments) {
    const size_t bytes = row_bytes * length[s];
    if (bytes > 0) std::memcpy(to, from + offsets[s] * row_bytes, bytes);
    to += bytes;
  }
}

void NanCheckOp::RunOnDevice() {
  const Tensor& X = Input(0);
  DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    for (int64_t i = 0; i < X.numel(); ++i) {
      DOPPIO_ENFORCE(std::isfinite(x[i]), "'", input_name(0), "' holds ", x[i], " at element ", i,
                     " (of ", X.DebugString(), ")");
    }
  });
  if (!IsInputOutputAlias(0, 0)) Output(0)->CopyFrom(X);
}

REGISTER_CPU_OPERATOR(Size, SizeOp);
REGISTER_CPU_OPERATOR(Range, RangeOp);
REGISTER_CPU_OPERATOR(LengthsToShape, LengthsToShapeOp);
REGISTER_CPU_OPERATOR(LengthsGather, LengthsGatherOp);
REGISTER_CPU_OPERATOR(NanCheck, NanCheckOp);

OPERATOR_SCHEMA(Size)
    .NumInputs(1)
    .NumOutputs(1)
    .Input(0, "X", "any tensor")
    .Output(0, "size", "int64 scalar: X's number of elements")
    .Doc("The number of elements of a tensor.");
OPERATOR_SCHEMA(Range)
    .NumInputs(1, 3)
    .NumOutputs(1)
    .Input(0, "start_or_stop", "stop alone, or start (then stop, and step)")
    .Output(0, "output", "the values start, start + step, ... short of stop")
    .Doc("numpy.arange over scalar inputs (int32, int64, float32 or float64).");
OPERATOR_SCHEMA(LengthsToShape)
    .NumInputs(1)
    .NumOutputs(1)
    .Input(0, "lengths", "int32 [K], all equal")
    .Output(0, "shape", "int32 [K, lengths[0]]")
    .Doc("The 2-D shape of K equal-length segments.");
OPERATOR_SCHEMA(LengthsGather)
    .NumInputs(3)
    .NumOutputs(1)
    .Input(0, "items", "[N, ...]")
    .Input(1, "lengths", "int32 [K], summing to N: the segments of items")
    .Input(2, "indices", "int32/int64 [M]: the segments to take")
    .Output(0, "output", "the chosen segments, concatenated")
    .Doc("Gathers whole segments of a lengths-split tensor.");
OPERATOR_SCHEMA(NanCheck)
    .NumInputs(1, INT_MAX)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .Input(0, "X", "float32/float64 tensor")
    .Output(0, "Y", "X; an error when it holds a NaN or infinity")
    .Doc("Passes a tensor through, failing with the position of its first NaN or infinity.");

namespace {

class GetNanCheckGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("NanCheck", "", {GO(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_GRADIENT(NanCheck, GetNanCheckGradient);
NO_GRADIENT(Size, "an element count has no gradient");
NO_GRADIENT(Range, "its values depend on its inputs only through a count");
SHOULD_NOT_DO_GRADIENT(LengthsToShape, "it computes a shape");
SHOULD_NOT_DO_GRADIENT(LengthsGather, "Caffe2 defines none");

}  // namespace doppio
