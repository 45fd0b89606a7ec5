#include "operators/sparse_index_utils.h"

namespace doppio {

void EnforceHasRows(const OperatorBase& op, int input, const Tensor& tensor) {
  DOPPIO_ENFORCE(tensor.ndim() >= 1, "op ", op.type(), ": '", op.input_name(input),
                 "' must have at least one dimension (its rows are indexed), but it is a "
                 "scalar");
}

void EnforceVector(const OperatorBase& op, int input, const Tensor& tensor) {
  DOPPIO_ENFORCE(tensor.ndim() == 1, "op ", op.type(), ": '", op.input_name(input),
                 "' must be a vector, but has shape ", tensor.dims());
}

std::vector<int64_t> RowDims(const Tensor& tensor) {
  if (tensor.ndim() == 0) return {};
  return std::vector<int64_t>(tensor.dims().begin() + 1, tensor.dims().end());
}

}  // namespace doppio
