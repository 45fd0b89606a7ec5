#include "operators/shape_inference_utils.h"

namespace doppio {

std::vector<int64_t> DimsOf(const TensorShape& shape) {
  return std::vector<int64_t>(shape.dims().begin(), shape.dims().end());
}

TensorShape MakeShape(const std::vector<int64_t>& dims, int data_type) {
  TensorShape shape;
  for (int64_t d : dims) shape.add_dims(d);
  shape.set_data_type(static_cast<TensorProto::DataType>(data_type));
  return shape;
}

OpSchema::InferenceFunction ShapeOfInput(int index) {
  return [index](const OperatorDef&, const std::vector<TensorShape>& in) {
    TensorShape out = in.at(index);
    out.set_data_type(in.at(0).data_type());
    return std::vector<TensorShape>{out};
  };
}

}  // namespace doppio
