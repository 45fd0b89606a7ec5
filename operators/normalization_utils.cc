#include "operators/normalization_utils.h"

namespace doppio {

bool ReadChannelsLast(const OperatorBase& op) {
  const std::string order = op.GetSingleArgument<std::string>("order", "NCHW");
  if (order == "NCHW") return false;
  if (order == "NHWC") return true;
  DOPPIO_THROW("argument 'order' is '", order, "'; it must be \"NCHW\" or \"NHWC\"");
}

ChannelView ViewByChannel(const OperatorBase& op, int input, const Tensor& X,
                          bool channels_last, int min_rank) {
  DOPPIO_ENFORCE(X.ndim() >= min_rank, "input '", op.input_name(input), "' has shape ", X.dims(),
                 " (rank ", X.ndim(), "); it needs rank ", min_rank, " or more");
  ChannelView view;
  view.batch = X.dim(0);
  view.channels = channels_last ? X.dim(X.ndim() - 1) : X.dim(1);
  view.inner = channels_last ? X.SizeBetweenDims(1, X.ndim() - 1) : X.SizeFromDim(2);
  return view;
}

void CheckParameter(const OperatorBase& op, int input, const Tensor& parameter,
                    int64_t count, DataType dtype, const char* what) {
  DOPPIO_ENFORCE(parameter.dtype() == dtype, what, " '", op.input_name(input), "' holds ",
                 DataTypeName(parameter.dtype()), " but the input holds ", DataTypeName(dtype));
  DOPPIO_ENFORCE(parameter.numel() == count, what, " '", op.input_name(input), "' has shape ",
                 parameter.dims(), " (", parameter.numel(), " elements); it needs ", count,
                 " elements");
}

}  // namespace doppio
