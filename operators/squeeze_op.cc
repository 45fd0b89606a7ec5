#include "operators/squeeze_op.h"

#include <algorithm>
#include <string>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

namespace {

// `dims` sorted and deduplicated, as Caffe2 reads them; none may be negative.
std::vector<int> ReadDims(const std::string& op_type, std::vector<int> dims) {
  DOPPIO_ENFORCE(!dims.empty(), "op ", op_type, ": argument 'dims' must be given");
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  DOPPIO_ENFORCE(dims.front() >= 0, "op ", op_type, ": argument 'dims' ", dims,
                 " holds a negative dim");
  return dims;
}

std::vector<int64_t> SqueezedDims(const std::string& op_type, const std::vector<int64_t>& in,
                                  const std::vector<int>& dims) {
  DOPPIO_ENFORCE(dims.back() < static_cast<int>(in.size()), "op ", op_type, ": cannot squeeze ",
                 "dim ", dims.back(), " of an input of shape ", in);
  std::vector<int64_t> out;
  size_t next = 0;
  for (int i = 0; i < static_cast<int>(in.size()); ++i) {
    if (next < dims.size() && dims[next] == i) {
      DOPPIO_ENFORCE(in[i] == 1, "op ", op_type, ": dim ", i, " of the input of shape ", in,
                     " is ", in[i], ", not 1, so it cannot be squeezed");
      ++next;
      continue;
    }
    out.push_back(in[i]);
  }
  return out;
}

std::vector<int64_t> ExpandedDims(const std::string& op_type, const std::vector<int64_t>& in,
                                  const std::vector<int>& dims) {
  DOPPIO_ENFORCE(dims.back() < static_cast<int>(in.size() + dims.size()), "op ", op_type,
                 ": cannot insert dim ", dims.back(), " into an input of shape ", in,
                 " with ", dims.size(), " new dims");
  std::vector<int64_t> out = in;
  for (int dim : dims) out.insert(out.begin() + dim, 1);
  return out;
}

// Y = X's elements in `dims` (in place: only the shape changes).
void ReshapeInto(bool in_place, const Tensor& X,
                 const std::vector<int64_t>& dims, Tensor* Y) {
  if (!in_place) Y->CopyFrom(X);
  Y->Reshape(dims);
}

}  // namespace

SqueezeOp::SqueezeOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      dims_(ReadDims(type(), GetRepeatedArgument<int>("dims"))) {}

void SqueezeOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const std::vector<int64_t> dims = SqueezedDims(type(), X.dims(), dims_);
  ReshapeInto(IsInputOutputAlias(0, 0), X, dims, Output(0));
}

ExpandDimsOp::ExpandDimsOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      dims_(ReadDims(type(), GetRepeatedArgument<int>("dims"))) {}

void ExpandDimsOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const std::vector<int64_t> dims = ExpandedDims(type(), X.dims(), dims_);
  ReshapeInto(IsInputOutputAlias(0, 0), X, dims, Output(0));
}

REGISTER_CPU_OPERATOR(Squeeze, SqueezeOp);
REGISTER_CPU_OPERATOR(ExpandDims, ExpandDimsOp);

namespace {

using DimsRule = std::vector<int64_t> (*)(const std::string&, const std::vector<int64_t>&,
                                          const std::vector<int>&);

OpSchema::InferenceFunction DimsInference(DimsRule rule) {
  return [rule](const OperatorDef& def, const std::vector<TensorShape>& in) {
    const std::vector<int64_t> dims(in.at(0).dims().begin(), in.at(0).dims().end());
    TensorShape out;
    out.set_data_type(in[0].data_type());
    const std::vector<int> which =
        ReadDims(def.type(), ArgumentHelper(def).GetRepeated<int>("dims"));
    for (int64_t d : rule(def.type(), dims, which)) out.add_dims(d);
    return std::vector<TensorShape>{out};
  };
}

// Squeeze and ExpandDims undo each other with the same `dims`.
class GetInverseDimsGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    const std::string inverse = Def().type() == "Squeeze" ? "ExpandDims" : "Squeeze";
    return SingleGradientDef(inverse, "", {GO(0)}, {GI(0)}, Def().arg());
  }
};

}  // namespace

OPERATOR_SCHEMA(Squeeze)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction(DimsInference(&SqueezedDims))
    .Arg("dims", "(list of ints, required) the size-1 dims to remove", true)
    .Input(0, "data", "tensor of any type")
    .Output(0, "squeezed", "the input without the listed dims")
    .Doc("Removes size-1 dims; removing a dim of another size is an error.");

OPERATOR_SCHEMA(ExpandDims)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction(DimsInference(&ExpandedDims))
    .Arg("dims", "(list of ints, required) positions of the new size-1 dims in the output",
         true)
    .Input(0, "data", "tensor of any type")
    .Output(0, "expanded", "the input with size-1 dims inserted")
    .Doc("Inserts size-1 dims at the given positions of the output (sorted, as "
         "numpy.expand_dims applied in increasing order).");

REGISTER_GRADIENT(Squeeze, GetInverseDimsGradient);
REGISTER_GRADIENT(ExpandDims, GetInverseDimsGradient);

}  // namespace doppio
