#include "operators/ftrl_op.h"

#include <cmath>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/optimizer_utils.h"
#include "operators/sparse_index_utils.h"

namespace doppio {

namespace {

// One element's update; w, n and z are read before any is written, so the
// outputs may alias the inputs.
template <typename T>
void FtrlStep(const FtrlArgs& args, T g, T* w, T* n, T* z) {
  const double old_n = *n;
  const double new_n = old_n + static_cast<double>(g) * g;
  const double sigma = (std::sqrt(new_n) - std::sqrt(old_n)) / args.alpha;
  const double new_z = *z + static_cast<double>(g) - sigma * *w;
  double new_w = 0.0;
  if (std::abs(new_z) > args.lambda1) {
    const double sign = new_z > 0 ? 1.0 : -1.0;
    new_w = (args.lambda1 * sign - new_z) /
            ((args.beta + std::sqrt(new_n)) / args.alpha + args.lambda2);
  }
  *n = static_cast<T>(new_n);
  *z = static_cast<T>(new_z);
  *w = static_cast<T>(new_w);
}

}  // namespace

template <bool kSparse>
FtrlOp<kSparse>::FtrlOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace) {
  args_.alpha = GetSingleArgument<float>("alpha", 0.005f);
  args_.beta = GetSingleArgument<float>("beta", 1.0f);
  args_.lambda1 = GetSingleArgument<float>("lambda1", 0.001f);
  args_.lambda2 = GetSingleArgument<float>("lambda2", 0.001f);
  DOPPIO_ENFORCE(args_.alpha > 0, "argument alpha must be > 0, got ", args_.alpha);
}

template <bool kSparse>
void FtrlOp<kSparse>::RunOnDevice() {
  FtrlArgs args = args_;
  if (InputSize() > kAlphaInput) {
    args.alpha = ReadScalar(*this, kAlphaInput, Input(kAlphaInput), "alpha");
    DOPPIO_ENFORCE(args.alpha > 0, "alpha input '", input_name(kAlphaInput), "' must be > 0, got ",
                   args.alpha);
  }
  const Tensor& var = Input(0);
  const Tensor& n_z = Input(1);
  const Tensor& grad = Input(kGradInput);
  EnforceSameType(*this, 0, var, 1, n_z);
  EnforceSameType(*this, 0, var, kGradInput, grad);
  DOPPIO_ENFORCE(n_z.numel() == 2 * var.numel(), "n_z '", input_name(1), "' has ", n_z.numel(),
                 " elements; it holds (n, z) for each of the ", var.numel(), " elements of '",
                 input_name(0), "'");
  // The element offsets of var that grad's elements update, in order.
  std::vector<int64_t> rows;
  int64_t row_size = var.numel();
  if (kSparse) {
    EnforceHasRows(*this, 0, var);
    row_size = var.SizeFromDim(1);
    rows = ReadRowIndices(*this, 2, Input(2), var.dim(0), 0);
  } else {
    rows.push_back(0);
  }
  DOPPIO_ENFORCE(grad.numel() == static_cast<int64_t>(rows.size()) * row_size, "gradient '",
                 input_name(kGradInput), "' has ", grad.numel(), " elements but ", rows.size(),
                 " row(s) of ", row_size, " elements are updated");
  DispatchTypes(FloatTypes{}, input_name(0), var.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (!kSparse) {
      // Not in place: start the outputs from copies of the inputs.
      if (!IsInputOutputAlias(0, 0)) Output(0)->CopyFrom(var);
      if (!IsInputOutputAlias(1, 1)) Output(1)->CopyFrom(n_z);
    }
    T* w = Output(0)->template mutable_data<T>();
    T* nz = Output(1)->template mutable_data<T>();
    const T* g = grad.data<T>();
    for (size_t k = 0; k < rows.size(); ++k) {
      const int64_t start = rows[k] * row_size;
      for (int64_t j = 0; j < row_size; ++j) {
        const int64_t at = start + j;
        FtrlStep(args, g[k * row_size + j], &w[at], &nz[2 * at], &nz[2 * at + 1]);
      }
    }
  });
}

REGISTER_CPU_OPERATOR(Ftrl, FtrlOp<false>);
REGISTER_CPU_OPERATOR(SparseFtrl, FtrlOp<true>);

namespace {

void FtrlArgDocs(OpSchema& schema) {
  schema.NumOutputs(2)
      .Arg("alpha", "(float, default 0.005) learning rate; an alpha input overrides it")
      .Arg("beta", "(float, default 1) smoothing of the per-element rate")
      .Arg("lambda1", "(float, default 0.001) L1 strength (sparsity)")
      .Arg("lambda2", "(float, default 0.001) L2 strength")
      .Input(0, "var", "parameters, float32 or float64")
      .Input(1, "n_z", "(n, z) per element of var: var's shape + [2], var's type")
      .Output(0, "output_var", "updated parameters")
      .Output(1, "output_n_z", "updated (n, z)");
}

}  // namespace

OPERATOR_SCHEMA(Ftrl)
    .Elementwise()
    .NumInputs(3, 4)
    .AllowInplace({{0, 0}, {1, 1}})
    .Apply(FtrlArgDocs)
    .Input(2, "grad", "gradient, var's size and type")
    .Input(3, "alpha", "(optional) one-element learning rate")
    .Doc("FTRL-Proximal update of every element of var.");

OPERATOR_SCHEMA(SparseFtrl)
    .NumInputs(4, 5)
    .EnforceInplace({{0, 0}, {1, 1}})
    .Apply(FtrlArgDocs)
    .Input(2, "indices", "int32 or int64 rows of var to update")
    .Input(3, "grad", "one row of var per index")
    .Input(4, "alpha", "(optional) one-element learning rate")
    .Doc("FTRL-Proximal on the rows `indices` of var; repeated indices apply in turn.");

SHOULD_NOT_DO_GRADIENT(Ftrl, "it is a parameter update, not part of the model");
SHOULD_NOT_DO_GRADIENT(SparseFtrl, "it is a parameter update, not part of the model");

}  // namespace doppio
