// Dispatching a tensor's dtype onto a fixed list of C++ types, for ops that
// support only some dtypes: unlike DispatchDataType (every dtype), the
// generic lambda is instantiated only for the listed types, so a kernel may
// use arithmetic that a string or bool would not compile, and an unlisted
// dtype is a clear error naming the op, the blob and what is supported.
#pragma once

#include <cstdint>
#include <string>

#include "core/enforce.h"
#include "core/operator.h"
#include "core/types.h"

namespace doppio {

template <typename... Ts>
struct TypeList {};

using FloatTypes = TypeList<float, double>;
using NumericTypes = TypeList<float, double, int32_t, int64_t>;
using BoolTypes = TypeList<bool>;

template <typename... Ts>
std::string TypeListNames(TypeList<Ts...>) {
  std::string names;
  ((names += (names.empty() ? "" : ", ") + std::string(DataTypeName(DataTypeFor<Ts>()))),
   ...);
  return names;
}

// Calls fn(TypeTag<T>{}) for the T in `types` whose dtype is `dtype`; throws
// "op <type>: '<blob>' holds <dtype>; supported types are ..." otherwise.
template <typename... Ts, typename Fn>
void DispatchTypes(TypeList<Ts...> types, const OperatorBase& op, const std::string& blob,
                   DataType dtype, Fn&& fn) {
  const bool matched =
      ((dtype == DataTypeFor<Ts>() ? (fn(TypeTag<Ts>{}), true) : false) || ...);
  if (!matched) {
    DOPPIO_THROW("op ", op.type(), ": '", blob, "' holds ", DataTypeName(dtype),
                 "; supported types are ", TypeListNames(types));
  }
}

// Input i of `op` as a tensor, for helpers that hold the op as an
// OperatorBase (where Operator::Input is out of reach).
inline const Tensor& TensorInput(const OperatorBase& op, int i) {
  const Blob& blob = op.InputBlob(i);
  DOPPIO_ENFORCE(blob.IsTensor(), "op ", op.type(), ": input ", i, " ('", op.input_name(i),
                 "') should be a tensor but holds ", blob.TypeName());
  return blob.GetTensor();
}

// Both inputs of a binary op must hold one dtype.
inline void EnforceSameType(const OperatorBase& op, int first, const Tensor& a, int second,
                            const Tensor& b) {
  DOPPIO_ENFORCE(a.dtype() == b.dtype(), "op ", op.type(), ": '", op.input_name(first),
                 "' holds ", DataTypeName(a.dtype()), " but '", op.input_name(second),
                 "' holds ", DataTypeName(b.dtype()), "; both must have one type");
}

}  // namespace doppio
