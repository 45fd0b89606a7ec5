#include "python_api/numpy_tensor.h"

#include <cstring>
#include <memory>
#include <vector>

#include "core/enforce.h"

namespace py = pybind11;

namespace doppio {
namespace python {
namespace {

DataType DataTypeOfArray(const py::array& array, const std::string& blob_name) {
  const py::dtype dtype = array.dtype();
  const char kind = dtype.kind();
  const size_t size = dtype.itemsize();
  if (kind == 'O' || kind == 'U' || kind == 'S') return DataType::kString;
  if (kind == 'b' && size == 1) return DataType::kBool;
  if (kind == 'f') {
    if (size == 4) return DataType::kFloat;
    if (size == 8) return DataType::kDouble;
    if (size == 2) return DataType::kFloat16;
  }
  if (kind == 'i') {
    if (size == 1) return DataType::kInt8;
    if (size == 2) return DataType::kInt16;
    if (size == 4) return DataType::kInt32;
    if (size == 8) return DataType::kInt64;
  }
  if (kind == 'u') {
    if (size == 1) return DataType::kUint8;
    if (size == 2) return DataType::kUint16;
    if (size == 4) return DataType::kUint32;
    if (size == 8) return DataType::kUint64;
  }
  DOPPIO_THROW("cannot feed blob '", blob_name, "': numpy dtype ",
               py::repr(dtype).cast<std::string>(),
               " is not supported (use float16/32/64, "
               "int8/16/32/64, uint8/16/32/64, bool or str)");
}

// numpy's name for a numeric or bool dtype is DataTypeName's; strings (and
// anything numpy has no fixed-size type for) come back as object arrays.
const char* NumpyName(DataType dtype) {
  const bool fixed_size = IsStorableType(dtype) && dtype != DataType::kString;
  return fixed_size ? DataTypeName(dtype) : "object";
}

}  // namespace

void ArrayToTensor(const py::array& original, const std::string& blob_name, Tensor* tensor) {
  const DataType dtype = DataTypeOfArray(original, blob_name);
  // Views (slices, transposes, negative strides) are copied into C order, as
  // Caffe2's feeder does, so what is stored equals what numpy shows.
  const py::array array = py::array::ensure(original, py::array::c_style);
  DOPPIO_ENFORCE(array && (array.flags() & py::array::c_style), "cannot feed blob '", blob_name,
                 "': the array could not be made C-contiguous");
  std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
  tensor->Resize(dims);
  if (dtype == DataType::kString) {
    std::string* out = tensor->mutable_data<std::string>();
    // Flattened iteration over any str/bytes/object array.
    py::array flat = py::array(array.attr("reshape")(-1));
    for (py::ssize_t i = 0; i < flat.size(); ++i) {
      py::object item = flat.attr("__getitem__")(i);
      if (py::isinstance<py::bytes>(item)) {
        out[i] = item.cast<std::string>();
      } else if (py::isinstance<py::str>(item)) {
        out[i] = item.cast<std::string>();
      } else {
        const std::string type_name = py::str(item.get_type().attr("__name__"));
        DOPPIO_THROW("cannot feed blob '", blob_name, "': element ", i,
                     " of the object array is a ", type_name,
                     ", neither str nor bytes (object arrays hold strings only)");
      }
    }
    return;
  }
  void* out = tensor->raw_mutable_data(dtype);
  if (tensor->nbytes() > 0) std::memcpy(out, array.data(), tensor->nbytes());
}

py::array TensorToArray(const Tensor& tensor, const std::string& blob_name) {
  DOPPIO_ENFORCE(tensor.device().kind == DeviceKind::kCPU, "blob '", blob_name,
                 "' is on a GPU; copy it to the host to fetch it");
  DOPPIO_ENFORCE(tensor.dtype() != DataType::kUndefined, "blob '", blob_name,
                 "' holds a tensor that was never written");
  std::vector<py::ssize_t> shape(tensor.dims().begin(), tensor.dims().end());
  if (tensor.dtype() == DataType::kString) {
    py::array result(py::dtype("object"), shape);
    py::array flat = py::array(result.attr("reshape")(-1));
    const std::string* data = tensor.data<std::string>();
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      flat.attr("__setitem__")(i, py::bytes(data[i]));
    }
    return result;
  }
  if (tensor.dtype() == DataType::kBFloat16) {
    // numpy has no bfloat16: the values widen exactly to float32.
    py::array_t<float> result(shape);
    float* out = result.mutable_data();
    const bfloat16* data = tensor.data<bfloat16>();
    for (int64_t i = 0; i < tensor.numel(); ++i) out[i] = BFloat16ToFloat(data[i]);
    return std::move(result);
  }
  py::array result(py::dtype(NumpyName(tensor.dtype())), shape);
  if (tensor.nbytes() > 0) std::memcpy(result.mutable_data(), tensor.raw_data(), tensor.nbytes());
  return result;
}

py::array TensorView(Tensor* tensor, const std::string& blob_name) {
  DOPPIO_ENFORCE(tensor->device().kind == DeviceKind::kCPU, "blob '", blob_name,
                 "' is on a GPU; Python ops see host tensors only");
  DOPPIO_ENFORCE(tensor->dtype() != DataType::kBFloat16, "blob '", blob_name,
                 "' holds bfloat16, which numpy cannot view; Cast it to float32 first");
  if (tensor->dtype() == DataType::kString) return TensorToArray(*tensor, blob_name);
  std::vector<py::ssize_t> shape(tensor->dims().begin(), tensor->dims().end());
  void* data = tensor->raw_mutable_data();
  // The capsule owns nothing: it only makes numpy reference, not copy.
  return py::array(py::dtype(NumpyName(tensor->dtype())), shape, data,
                   py::capsule(data, [](void*) {}));
}

py::array SharedTensorView(const Tensor& tensor, const std::string& blob_name) {
  DOPPIO_ENFORCE(tensor.device().kind == DeviceKind::kCPU, "blob '", blob_name,
                 "' is on a GPU; only a host tensor can be viewed in place (fetch copies)");
  if (tensor.dtype() == DataType::kString || tensor.dtype() == DataType::kBFloat16 ||
      !tensor.has_storage()) {
    return TensorToArray(tensor, blob_name);  // a copy: numpy cannot view these
  }
  auto owner = std::make_unique<Tensor>(tensor.device());
  owner->ShareData(tensor);
  std::vector<py::ssize_t> shape(owner->dims().begin(), owner->dims().end());
  const py::dtype dtype(NumpyName(owner->dtype()));
  void* data = owner->raw_mutable_data();
  py::capsule keep_alive(owner.release(), [](void* held) { delete static_cast<Tensor*>(held); });
  return py::array(dtype, shape, data, keep_alive);
}

}  // namespace python
}  // namespace doppio
