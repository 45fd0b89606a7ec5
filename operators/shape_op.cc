#include "operators/shape_op.h"

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

void ShapeOp::RunOnDevice() {
  // Copied first: the output may be the input's blob.
  const std::vector<int64_t> dims = Input(0).dims();
  std::vector<int64_t> values;
  if (axes_.empty()) {
    values = dims;
  } else {
    for (int axis : axes_) {
      DOPPIO_ENFORCE(axis >= 0 && axis < static_cast<int>(dims.size()), "axis ", axis,
                     " in argument 'axes' is out of range for '", input_name(0), "' of shape ",
                     dims);
      values.push_back(dims[axis]);
    }
  }
  Tensor* Y = Output(0);
  Y->Resize({static_cast<int64_t>(values.size())});
  int64_t* y = Y->mutable_data<int64_t>();
  for (size_t i = 0; i < values.size(); ++i) y[i] = values[i];
}

REGISTER_CPU_OPERATOR(Shape, ShapeOp);

OPERATOR_SCHEMA(Shape)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      const std::vector<int> axes = ArgumentHelper(def).GetRepeated<int>("axes");
      TensorShape out;
      out.set_data_type(TensorProto::INT64);
      out.add_dims(axes.empty() ? in.at(0).dims_size() : static_cast<int>(axes.size()));
      return std::vector<TensorShape>{out};
    })
    .Arg("axes", "(list of ints) report only these dims, in this order")
    .Input(0, "data", "tensor of any type (only its shape is read)")
    .Output(0, "shape", "1-D int64 tensor of the dims")
    .Doc("Outputs the shape of the input as a 1-D int64 tensor.");

NO_GRADIENT(Shape, "its output depends only on the input's shape, not its values");

}  // namespace doppio
