// Dispatching a tensor's dtype onto a fixed list of C++ types, for ops that
// support only some dtypes: unlike DispatchDataType (every dtype), the
// generic lambda is instantiated only for the listed types, so a kernel may
// use arithmetic that a string or bool would not compile, and an unlisted
// dtype is a clear error naming the op, the blob and what is supported.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "core/enforce.h"
#include "core/operator.h"
#include "core/types.h"

namespace doppio {

template <typename... Ts>
struct TypeList {
  // This list and more types: AllNumericTypes::With<float16>.
  template <typename... More>
  using With = TypeList<Ts..., More...>;
};

using FloatTypes = TypeList<float, double>;
using NumericTypes = TypeList<float, double, int32_t, int64_t>;
// NumericTypes and the narrow integers: for forward elementwise math that
// ONNX models run on any integer width (wrapping as numpy does); gradients
// stay on NumericTypes.
using AllNumericTypes = TypeList<float, double, int32_t, int64_t, int8_t, uint8_t, int16_t,
                                 uint16_t, uint32_t, uint64_t>;
using IndexTypes = TypeList<int32_t, int64_t>;
using BoolTypes = TypeList<bool>;

template <typename... Ts>
std::string TypeListNames(TypeList<Ts...>) {
  std::string names;
  ((names += (names.empty() ? "" : ", ") + std::string(DataTypeName(DataTypeFor<Ts>()))),
   ...);
  return names;
}

// Whether `dtype` is one of `types`.
template <typename... Ts>
bool TypeListHas(TypeList<Ts...>, DataType dtype) {
  return ((dtype == DataTypeFor<Ts>()) || ...);
}

// Calls fn(TypeTag<T>{}) for the T in `types` whose dtype is `dtype`; throws
// "'<blob>' holds <dtype>; supported types are ..." otherwise (the net adds
// the op). Every op dispatches its dtypes through this, CPU and CUDA alike.
template <typename... Ts, typename Fn>
void DispatchTypes(TypeList<Ts...> types, const std::string& blob, DataType dtype, Fn&& fn) {
  const bool matched =
      ((dtype == DataTypeFor<Ts>() ? (fn(TypeTag<Ts>{}), true) : false) || ...);
  if (!matched) {
    DOPPIO_THROW("'", blob, "' holds ", DataTypeName(dtype), "; supported types are ",
                 TypeListNames(types));
  }
}

// DispatchTypes for input `index` of `op`, whose dtype is `dtype`.
template <typename... Ts, typename Fn>
void DispatchInput(TypeList<Ts...> types, const OperatorBase& op, int index, DataType dtype,
                   Fn&& fn) {
  DispatchTypes(types, op.input_name(index), dtype, std::forward<Fn>(fn));
}

// Input `index` holds one of `types`; the same error as DispatchInput's.
template <typename... Ts>
void EnforceInputType(TypeList<Ts...> types, const OperatorBase& op, int index, DataType dtype) {
  DispatchInput(types, op, index, dtype, [](auto) {});
}

// Input `index` of an op whose kernels run on `device` (a CUDA op's GPU)
// lives there: a blob fed on the host, or on another GPU, cannot be read by
// them. Every CUDA op checks its device inputs through this or the next.
inline void EnforceInputOnDevice(const OperatorBase& op, int index, const Tensor& tensor,
                                 Device device) {
  if (tensor.device() == device) return;
  const std::string where = device.kind == DeviceKind::kCUDA
                                ? "CUDA device " + std::to_string(device.id)
                                : std::string("the CPU");
  const std::string remedy =
      "; copy it there first (CopyCPUToGPU, or feed it under the op's device option)";
  DOPPIO_ENFORCE(tensor.device().kind == device.kind, "'", op.input_name(index), "' is not a ",
                 device.kind == DeviceKind::kCUDA ? "CUDA" : "CPU", " tensor (",
                 tensor.DebugString(), ") but the op runs on ", where, remedy);
  DOPPIO_THROW("'", op.input_name(index), "' lives on CUDA device ", tensor.device().id,
               " but the op runs on ", where, remedy);
}

// Every tensor input of `op` lives on `device` (inputs that hold no tensor
// are left to the op).
inline void EnforceInputsOnDevice(const OperatorBase& op, Device device) {
  for (int i = 0; i < op.InputSize(); ++i) {
    const Blob& blob = op.InputBlob(i);
    if (blob.IsTensor()) EnforceInputOnDevice(op, i, blob.GetTensor(), device);
  }
}

// Input `index` is a tensor of one of `types` on `device`.
template <typename... Ts>
void EnforceDeviceInput(TypeList<Ts...> types, const OperatorBase& op, int index,
                        const Tensor& tensor, Device device) {
  EnforceInputOnDevice(op, index, tensor, device);
  EnforceInputType(types, op, index, tensor.dtype());
}

// Input i of `op` as a tensor, for helpers that hold the op as an
// OperatorBase (where Operator::Input is out of reach).
inline const Tensor& TensorInput(const OperatorBase& op, int i) {
  const Blob& blob = op.InputBlob(i);
  DOPPIO_ENFORCE(blob.IsTensor(), "input ", i, " ('", op.input_name(i),
                 "') should be a tensor but holds ", blob.TypeName());
  return blob.GetTensor();
}

// Both inputs of a binary op must hold one dtype.
inline void EnforceSameType(const OperatorBase& op, int first, const Tensor& a, int second,
                            const Tensor& b) {
  DOPPIO_ENFORCE(a.dtype() == b.dtype(), "'", op.input_name(first), "' holds ",
                 DataTypeName(a.dtype()), " but '", op.input_name(second), "' holds ",
                 DataTypeName(b.dtype()), "; both must have one type");
}

// Inputs `indices` of `op` each hold one of `types`, all one dtype, which
// is returned; the first input breaking either rule is named.
template <typename... Ts>
DataType EnforceInputsOfOneType(TypeList<Ts...> types, const OperatorBase& op,
                                std::initializer_list<int> indices) {
  const int first = *indices.begin();
  const Tensor& reference = TensorInput(op, first);
  for (int i : indices) {
    const Tensor& tensor = TensorInput(op, i);
    EnforceInputType(types, op, i, tensor.dtype());
    EnforceSameType(op, first, reference, i, tensor);
  }
  return reference.dtype();
}

}  // namespace doppio
