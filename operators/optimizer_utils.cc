#include "operators/optimizer_utils.h"

#include <cmath>

namespace doppio {

double ReadScalar(const OperatorBase& op, int input, const Tensor& scalar, const char* what) {
  DOPPIO_ENFORCE(scalar.numel() == 1, what, " '", op.input_name(input),
                 "' must hold one element, but has shape ", scalar.dims());
  switch (scalar.dtype()) {
    case DataType::kFloat: return scalar.data<float>()[0];
    case DataType::kDouble: return scalar.data<double>()[0];
    default: break;
  }
  DOPPIO_THROW(what, " '", op.input_name(input), "' holds ", DataTypeName(scalar.dtype()),
               "; it must be float32 or float64");
}

int64_t ReadIteration(const OperatorBase& op, int input, const Tensor& iteration) {
  DOPPIO_ENFORCE(iteration.dtype() == DataType::kInt64, "the iteration counter '",
                 op.input_name(input), "' holds ", DataTypeName(iteration.dtype()),
                 "; it must be int64 (as Iter makes it)");
  DOPPIO_ENFORCE(iteration.numel() == 1, "the iteration counter '", op.input_name(input),
                 "' must hold one element, but has shape ", iteration.dims());
  return iteration.data<int64_t>()[0];
}

void EnforceSameSizeAndType(const OperatorBase& op, int a_input, const Tensor& a,
                            int b_input, const Tensor& b) {
  DOPPIO_ENFORCE(a.numel() == b.numel(), "'", op.input_name(b_input), "' has ", b.numel(),
                 " elements (shape ", b.dims(), ") but '", op.input_name(a_input), "' has ",
                 a.numel(), " (shape ", a.dims(), "); they must match");
  DOPPIO_ENFORCE(a.dtype() == b.dtype(), "'", op.input_name(b_input), "' holds ",
                 DataTypeName(b.dtype()), " but '", op.input_name(a_input), "' holds ",
                 DataTypeName(a.dtype()), "; they must have one type");
}

MomentumSGDArgs ReadMomentumSGDArgs(const OperatorBase& op) {
  MomentumSGDArgs args;
  args.momentum = op.GetSingleArgument<float>("momentum", args.momentum);
  args.nesterov = op.GetSingleArgument<int>("nesterov", 0) != 0;
  return args;
}

double AdamArgs::Correction(int64_t iteration) const {
  const double t = static_cast<double>(iteration) + 1.0;
  const double b1 = beta1, b2 = beta2;
  return std::sqrt(1.0 - std::pow(b2, t)) / (1.0 - std::pow(b1, t));
}

AdamArgs ReadAdamArgs(const OperatorBase& op) {
  AdamArgs args;
  args.beta1 = op.GetSingleArgument<float>("beta1", args.beta1);
  args.beta2 = op.GetSingleArgument<float>("beta2", args.beta2);
  args.epsilon = op.GetSingleArgument<float>("epsilon", args.epsilon);
  return args;
}

AdagradArgs ReadAdagradArgs(const OperatorBase& op) {
  AdagradArgs args;
  args.epsilon = op.GetSingleArgument<float>("epsilon", args.epsilon);
  args.decay = op.GetSingleArgument<float>("decay", args.decay);
  return args;
}

}  // namespace doppio
