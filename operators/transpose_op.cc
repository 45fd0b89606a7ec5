#include "operators/transpose_op.h"

#include <algorithm>
#include <numeric>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/dnnl_permute.h"

namespace doppio {

void PermuteTensor(const Tensor& X, const std::vector<int>& axes, Tensor* Y) {
  const int ndim = X.ndim();
  const std::vector<int64_t>& in_dims = X.dims();
  std::vector<int64_t> in_strides(ndim, 1);
  for (int i = ndim - 2; i >= 0; --i) in_strides[i] = in_strides[i + 1] * in_dims[i + 1];
  // Output dim i walks the input with the stride of the input dim it came from.
  std::vector<int64_t> out_dims(ndim), strides(ndim);
  for (int i = 0; i < ndim; ++i) {
    out_dims[i] = in_dims[axes[i]];
    strides[i] = in_strides[axes[i]];
  }
  Y->Resize(out_dims);
  if (X.dtype() == DataType::kFloat &&
      DnnlPermuteFloat(in_dims, axes, X.data<float>(), Y->mutable_data<float>())) {
    return;
  }
  DispatchDataType(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    T* y = Y->mutable_data<T>();
    const int64_t total = X.numel();
    if (total == 0) return;
    if (ndim == 0) {
      y[0] = x[0];
      return;
    }
    const int64_t inner = out_dims[ndim - 1];
    const int64_t inner_stride = strides[ndim - 1];
    std::vector<int64_t> index(ndim, 0);
    int64_t offset = 0;
    for (int64_t k = 0; k < total; k += inner) {
      for (int64_t j = 0; j < inner; ++j) y[k + j] = x[offset + j * inner_stride];
      // Advance the outer dims like an odometer, keeping the offset in step.
      for (int d = ndim - 2; d >= 0; --d) {
        offset += strides[d];
        if (++index[d] < out_dims[d]) break;
        offset -= strides[d] * out_dims[d];
        index[d] = 0;
      }
    }
  });
}

namespace {

// `axes` (reversed dims when empty) as a checked permutation of ndim dims.
std::vector<int> CheckedAxes(const std::string& op_type, const std::vector<int>& axes,
                             const std::vector<int64_t>& dims) {
  const int ndim = static_cast<int>(dims.size());
  if (axes.empty()) {
    std::vector<int> reversed(ndim);
    std::iota(reversed.rbegin(), reversed.rend(), 0);
    return reversed;
  }
  DOPPIO_ENFORCE(static_cast<int>(axes.size()) == ndim, "op ", op_type, ": argument 'axes' ",
                 axes, " must name each of the ", ndim, " dims of the input of shape ", dims);
  std::vector<bool> seen(ndim, false);
  for (int axis : axes) {
    DOPPIO_ENFORCE(axis >= 0 && axis < ndim && !seen[axis], "op ", op_type,
                   ": argument 'axes' ", axes, " is not a permutation of 0..", ndim - 1);
    seen[axis] = true;
  }
  return axes;
}

}  // namespace

void TransposeOp::RunOnDevice() {
  const Tensor& X = Input(0);
  PermuteTensor(X, CheckedAxes(type(), axes_, X.dims()), Output(0));
}

REGISTER_CPU_OPERATOR(Transpose, TransposeOp);

OPERATOR_SCHEMA(Transpose)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      const std::vector<int64_t> dims(in.at(0).dims().begin(), in.at(0).dims().end());
      const std::vector<int> axes =
          CheckedAxes(def.type(), ArgumentHelper(def).GetRepeated<int>("axes"), dims);
      TensorShape out;
      out.set_data_type(in[0].data_type());
      for (int axis : axes) out.add_dims(dims[axis]);
      return std::vector<TensorShape>{out};
    })
    .Arg("axes", "(list of ints, default: the dims reversed) output dim i is input dim axes[i]")
    .Input(0, "data", "tensor of any type")
    .Output(0, "transposed", "the input with its dims permuted")
    .Doc("Permutes the dims of the input, like numpy.transpose.");

namespace {

class GetTransposeGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<OperatorDef> ops = SingleGradientDef("Transpose", "", {GO(0)}, {GI(0)});
    const std::vector<int> axes = ArgumentHelper(Def()).GetRepeated<int>("axes");
    // Reversing is its own inverse; otherwise invert the permutation.
    if (!axes.empty()) {
      std::vector<int64_t> inverse(axes.size());
      for (size_t i = 0; i < axes.size(); ++i) {
        DOPPIO_ENFORCE(axes[i] >= 0 && axes[i] < static_cast<int>(axes.size()),
                       "op Transpose: argument 'axes' ", axes, " is not a permutation");
        inverse[axes[i]] = static_cast<int64_t>(i);
      }
      Argument* arg = ops[0].add_arg();
      arg->set_name("axes");
      for (int64_t axis : inverse) arg->add_ints(axis);
    }
    return ops;
  }
};

}  // namespace

REGISTER_GRADIENT(Transpose, GetTransposeGradient);

}  // namespace doppio
