#include "operators/sparse_index_utils.h"

namespace doppio {

void EnforceHasRows(const OperatorBase& op, int input, const Tensor& tensor) {
  DOPPIO_ENFORCE(tensor.ndim() >= 1, "'", op.input_name(input),
                 "' must have at least one dimension (its rows are indexed), but it is a "
                 "scalar");
}

std::vector<int64_t> ReadRowIndices(const OperatorBase& op, int indices_input,
                                    const Tensor& indices, int64_t bound, int bound_input) {
  std::vector<int64_t> rows;
  DispatchInput(IndexTypes{}, op, indices_input, indices.dtype(), [&](auto tag) {
    using Index = typename decltype(tag)::type;
    const Index* index = indices.data<Index>();
    CheckIndicesInRange(op, indices_input, index, indices.numel(), bound, bound_input);
    rows.assign(index, index + indices.numel());
  });
  return rows;
}

void EnforceVector(const OperatorBase& op, int input, const Tensor& tensor) {
  DOPPIO_ENFORCE(tensor.ndim() == 1, "'", op.input_name(input),
                 "' must be a vector, but has shape ", tensor.dims());
}

std::vector<int64_t> ShapeOfRows(std::vector<int64_t> leading, const Tensor& tensor) {
  if (tensor.ndim() > 0) {
    leading.insert(leading.end(), tensor.dims().begin() + 1, tensor.dims().end());
  }
  return leading;
}

OpSchema::InferenceFunction InferRowsPerEntry(int count_input) {
  return [count_input](const OperatorDef&, const std::vector<TensorShape>& in) {
    TensorShape out;
    out.add_dims(in[count_input].dims_size() > 0 ? in[count_input].dims(0) : 0);
    for (int i = 1; i < in[0].dims_size(); ++i) out.add_dims(in[0].dims(i));
    out.set_data_type(in[0].data_type());
    return std::vector<TensorShape>{out};
  };
}

}  // namespace doppio
