// Tensor: a typed, shaped view of device memory.
//
// Ownership: a Tensor owns a shared reference to a Storage made by its
// device's allocator. ShareData makes two tensors alias one storage (that is
// how Alias and in-place memonger sharing work); ShareSlice makes a tensor a
// view of some outer slices of another (how RecurrentNetwork hands each
// timestep its rows of a sequence without copying); CopyFrom copies elements.
// Tensors are movable, not copyable, so aliasing is always explicit.
//
// Resize only records the new shape; the first mutable_data() after it
// reallocates if the existing storage is too small, and otherwise keeps it
// (so steady-state iterations allocate nothing). Storage of one plain
// numeric dtype is kept for another too when no other tensor shares it: a
// blob memonger shares between an int and a float blob would otherwise
// reallocate twice per iteration. Strings always get storage of their own.
//
// Thread-safety: none; a tensor is used by one op at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/enforce.h"
#include "core/types.h"

namespace doppio {

// Device memory holding `capacity` bytes of one dtype. String storage holds
// constructed std::string objects and destroys them with the storage.
class Storage {
 public:
  Storage(Device device, DataType dtype, size_t num_elements);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t capacity_bytes() const { return capacity_bytes_; }
  DataType dtype() const { return dtype_; }
  Device device() const { return device_; }
  // Whether these bytes may be handed out as `dtype` without constructing
  // anything: both dtypes plain numbers (not strings).
  bool CanRetypeTo(DataType dtype) const;
  // Relabels the bytes (contents undefined as the new dtype); needs
  // CanRetypeTo(dtype).
  void RetypeTo(DataType dtype);

 private:
  Device device_;
  DataType dtype_;
  size_t capacity_bytes_;
  Allocator* allocator_;
  void* data_;
};

// Product of dims, checked: every dim >= 0 and no int64 overflow (dims come
// from files and protos we did not write).
int64_t CheckedNumElements(const std::vector<int64_t>& dims);

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Device device) : device_(device) {}
  Tensor(const std::vector<int64_t>& dims, DataType dtype, Device device = {});
  Tensor(Tensor&&) = default;
  Tensor& operator=(Tensor&&) = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  const std::vector<int64_t>& dims() const { return dims_; }
  int ndim() const { return static_cast<int>(dims_.size()); }
  // dim(i) with Python-style negative indices; throws when out of range.
  int64_t dim(int i) const;
  int64_t numel() const { return numel_; }
  DataType dtype() const { return dtype_; }
  size_t itemsize() const { return ItemSize(dtype_); }
  size_t nbytes() const { return static_cast<size_t>(numel_) * itemsize(); }
  Device device() const { return device_; }
  // True once data has been written (or shared) for the current shape.
  bool has_storage() const { return storage_ != nullptr; }

  // Maps a possibly negative axis onto [0, ndim), with a clear error.
  int CanonicalAxis(int axis) const;
  int64_t SizeToDim(int k) const;    // product of dims [0, k)
  int64_t SizeFromDim(int k) const;  // product of dims [k, ndim)
  int64_t SizeBetweenDims(int begin, int end) const;  // [begin, end)

  // Sets the shape; storage is (re)allocated lazily by mutable_data.
  void Resize(const std::vector<int64_t>& dims);
  void ResizeLike(const Tensor& other) { Resize(other.dims()); }
  // Changes the shape keeping the elements; the element count must match.
  void Reshape(const std::vector<int64_t>& dims);

  // Typed access. data<T>() enforces that the tensor holds T.
  template <typename T>
  const T* data() const {
    DOPPIO_ENFORCE(dtype_ == DataTypeFor<T>(), "tensor holds ",
                   DataTypeName(dtype_), ", not ", DataTypeName(DataTypeFor<T>()));
    return static_cast<const T*>(raw_data());
  }
  template <typename T>
  T* mutable_data() {
    return static_cast<T*>(raw_mutable_data(DataTypeFor<T>()));
  }
  const void* raw_data() const;
  // Storage for numel() elements of dtype; previous contents are kept only
  // when the storage already fits that dtype and size (storage of another
  // numeric dtype that is large enough and not shared is reused, its
  // contents undefined).
  void* raw_mutable_data(DataType dtype);
  // The current dtype's storage (the dtype must have been set).
  void* raw_mutable_data() { return raw_mutable_data(dtype_); }

  // Deep copy of shape, dtype and elements (both tensors on the CPU;
  // cross-device copies go through a device context).
  void CopyFrom(const Tensor& source);
  // Aliases source's storage, shape and dtype.
  void ShareData(const Tensor& source);
  // Becomes a view of `count` slices of source's outermost dim starting at
  // `begin` (shape [count, source dims 1...]); writes through it land in
  // source. Source must hold data. A later Resize that outgrows the view
  // gives this tensor storage of its own (source no longer sees its writes).
  void ShareSlice(const Tensor& source, int64_t begin, int64_t count);
  bool SharesStorageWith(const Tensor& other) const {
    return storage_ != nullptr && storage_ == other.storage_;
  }
  // Drops shape, dtype and storage.
  void Reset();

  // "float32[2, 3]"
  std::string DebugString() const;

 private:
  Device device_;
  DataType dtype_ = DataType::kUndefined;
  std::vector<int64_t> dims_;
  int64_t numel_ = 0;
  std::shared_ptr<Storage> storage_;
  // Where this tensor's elements start in storage_ (non-zero for slices).
  size_t offset_bytes_ = 0;
};

}  // namespace doppio
