// Conversions between numpy arrays and doppio Tensors for the Python
// extension. Arrays must be of a supported dtype (non-contiguous views are
// copied); anything else raises a Python exception naming the blob, never a
// crash.
#pragma once

#include <string>

#include <pybind11/numpy.h>

#include "core/tensor.h"

namespace doppio {
namespace python {

// Copies `array` into `tensor` (which becomes a host tensor of the array's
// dtype and shape). Object arrays of str/bytes become string tensors.
void ArrayToTensor(const pybind11::array& array, const std::string& blob_name,
                   Tensor* tensor);

// A new numpy array holding a copy of the host tensor's elements (bfloat16
// widened to float32, since numpy has no bfloat16).
pybind11::array TensorToArray(const Tensor& tensor, const std::string& blob_name);

// A writable numpy array over the host tensor's own elements (no copy; valid
// while the tensor keeps its storage). String tensors are copied, as
// TensorToArray does, since numpy cannot view std::strings.
pybind11::array TensorView(Tensor* tensor, const std::string& blob_name);

// Like TensorView, but the array holds its own reference to the tensor's
// storage, so it stays valid however long Python keeps it: if the tensor is
// later resized, reset or removed, the array keeps the old elements and no
// longer shows the tensor. Host tensors only.
pybind11::array SharedTensorView(const Tensor& tensor, const std::string& blob_name);

}  // namespace python
}  // namespace doppio
