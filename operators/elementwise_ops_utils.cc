#include "operators/elementwise_ops_utils.h"

namespace doppio {

BroadcastArgs ReadBroadcastArgs(const OperatorBase& op, bool always_legacy) {
  BroadcastArgs args;
  args.legacy = always_legacy || op.GetSingleArgument<bool>("broadcast", false);
  args.axis = op.GetSingleArgument<int>("axis", -1);
  const std::string axis_str = op.GetSingleArgument<std::string>("axis_str", "");
  // Without broadcast=1 Caffe2 ignores axis; nets written by its helpers set
  // it anyway, so it is accepted and ignored here too.
  if (!args.legacy || axis_str.empty()) return args;
  DOPPIO_ENFORCE(args.axis == -1, "arguments 'axis' and 'axis_str' cannot be used together");
  const std::string order = op.GetSingleArgument<std::string>("order", "NCHW");
  const size_t position = order.find(axis_str);
  DOPPIO_ENFORCE(axis_str.size() == 1 && position != std::string::npos, "argument 'axis_str' '",
                 axis_str, "' is not one letter of order '", order, "'");
  args.axis = static_cast<int>(position);
  return args;
}

std::vector<int64_t> NumpyBroadcastDims(const OperatorBase& op, const NamedShape& a,
                                        const NamedShape& b) {
  const size_t ndim = std::max(a.dims.size(), b.dims.size());
  std::vector<int64_t> out(ndim);
  for (size_t k = 0; k < ndim; ++k) {
    // k counts from the right: numpy aligns trailing dims.
    const int64_t a_dim = k < a.dims.size() ? a.dims[a.dims.size() - 1 - k] : 1;
    const int64_t b_dim = k < b.dims.size() ? b.dims[b.dims.size() - 1 - k] : 1;
    if (a_dim != b_dim && a_dim != 1 && b_dim != 1) {
      DOPPIO_THROW("cannot broadcast '", a.name, "' of shape ", a.dims, " with '", b.name,
                   "' of shape ", b.dims, " (dims ", a_dim, " and ", b_dim, " ", k + 1,
                   " from the right differ and neither is 1)");
    }
    out[ndim - 1 - k] = (a_dim == 0 || b_dim == 0) ? 0 : std::max(a_dim, b_dim);
  }
  return out;
}

LegacySizes LegacyBroadcastSizes(const OperatorBase& op, const NamedShape& a,
                                 const NamedShape& b, int axis) {
  const int a_ndim = static_cast<int>(a.dims.size());
  const int b_ndim = static_cast<int>(b.dims.size());
  DOPPIO_ENFORCE(a_ndim >= b_ndim, "with broadcast=1, '", b.name, "' of shape ", b.dims,
                 " must not have more dims than '", a.name, "' of shape ", a.dims);
  if (axis == -1) axis = a_ndim - b_ndim;
  DOPPIO_ENFORCE(axis >= 0 && axis <= a_ndim - b_ndim, "broadcast axis ", axis, " is outside [0, ",
                 a_ndim - b_ndim, "] for '", a.name, "' of shape ", a.dims, " and '", b.name,
                 "' of shape ", b.dims);
  // B's leading and trailing 1s broadcast too.
  int b_begin = 0;
  while (b_begin < b_ndim && b.dims[b_begin] == 1) ++b_begin;
  int b_end = b_ndim - 1;
  while (b_end >= b_begin && b.dims[b_end] == 1) --b_end;
  LegacySizes sizes;
  for (int i = 0; i < axis + b_begin; ++i) sizes.pre *= a.dims[i];
  for (int i = b_begin; i <= b_end; ++i) {
    DOPPIO_ENFORCE(a.dims[i + axis] == b.dims[i], "with broadcast=1 ", "and axis ", axis, ", '",
                   b.name, "' of shape ", b.dims, " does not match '", a.name, "' of shape ",
                   a.dims, " (dim ", i + axis, " is ", a.dims[i + axis], ", not ", b.dims[i], ")");
    sizes.n *= b.dims[i];
  }
  for (int i = axis + b_end + 1; i < a_ndim; ++i) sizes.post *= a.dims[i];
  return sizes;
}

BroadcastPlan PlanBroadcast(const OperatorBase& op, const BroadcastArgs& args,
                            const NamedShape& a, const NamedShape& b) {
  BroadcastPlan plan;
  if (args.legacy) {
    plan.output_dims = a.dims;
    const int64_t a_count = CheckedNumElements(a.dims);
    if (CheckedNumElements(b.dims) == 1) {
      plan.a = {a_count};
      plan.b = {1};
    } else {
      const LegacySizes sizes = LegacyBroadcastSizes(op, a, b, args.axis);
      plan.a = {sizes.pre, sizes.n, sizes.post};
      plan.b = {1, sizes.n, 1};
    }
    plan.out = plan.a;
    return plan;
  }
  plan.output_dims = NumpyBroadcastDims(op, a, b);
  plan.out = plan.output_dims;
  // Pad both inputs with leading 1s to the output's rank.
  plan.a.assign(plan.out.size() - a.dims.size(), 1);
  plan.a.insert(plan.a.end(), a.dims.begin(), a.dims.end());
  plan.b.assign(plan.out.size() - b.dims.size(), 1);
  plan.b.insert(plan.b.end(), b.dims.begin(), b.dims.end());
  return plan;
}

}  // namespace doppio
