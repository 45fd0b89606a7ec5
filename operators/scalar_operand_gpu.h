// One-element inputs of CUDA ops (learning rates, WeightedSum's weights)
// that may live on the host or the GPU: a CPU LearningRate op's output is
// shared by every device of a data-parallel model. Host-side only (the .cc
// ops); kernels take the functors::ScalarOperand it returns by value.
#pragma once

#include "core/operator.h"
#include "operators/math_functors.h"

namespace doppio {

// Input `index` of `op`, which runs on `device`, as an operand of type T:
// read here when it is a CPU tensor (its producer has finished: host ops
// return with their work done), else read by the kernel from device memory,
// which must be on the op's own GPU. `what` names it in errors ("the
// learning rate").
template <typename T>
functors::ScalarOperand<T> ScalarOperandOf(const OperatorBase& op, int index,
                                           const Tensor& tensor, Device device,
                                           const char* what) {
  DOPPIO_ENFORCE(tensor.numel() == 1, what, " '", op.input_name(index),
                 "' must hold one element, but has shape ", tensor.dims());
  DOPPIO_ENFORCE(tensor.dtype() == DataTypeFor<T>(), "CUDA kernel: ", what, " '",
                 op.input_name(index), "' holds ", DataTypeName(tensor.dtype()), ", not ",
                 DataTypeName(DataTypeFor<T>()));
  if (tensor.device().kind == DeviceKind::kCPU) {
    return functors::ScalarOperand<T>{nullptr, tensor.data<T>()[0]};
  }
  DOPPIO_ENFORCE(tensor.device() == device, "CUDA device ", device.id, ": ", what, " '",
                 op.input_name(index), "' lives on CUDA device ", tensor.device().id,
                 "; keep it on the host or on the op's GPU");
  return functors::ScalarOperand<T>{tensor.data<T>(), T(0)};
}

}  // namespace doppio
