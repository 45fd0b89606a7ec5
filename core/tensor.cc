#include "core/tensor.h"

#include <cstring>
#include <limits>
#include <new>

namespace doppio {

Storage::Storage(Device device, DataType dtype, size_t num_elements)
    : device_(device),
      dtype_(dtype),
      capacity_bytes_(num_elements * ItemSize(dtype)),
      allocator_(GetAllocator(device.kind)),
      data_(allocator_->Allocate(capacity_bytes_)) {
  if (dtype_ == DataType::kString) {
    DOPPIO_ENFORCE(device.kind == DeviceKind::kCPU,
                   "string tensors live on the CPU only");
    auto* strings = static_cast<std::string*>(data_);
    for (size_t i = 0; i < num_elements; ++i) new (strings + i) std::string();
  }
}

Storage::~Storage() {
  if (dtype_ == DataType::kString) {
    auto* strings = static_cast<std::string*>(data_);
    const size_t count = capacity_bytes_ / sizeof(std::string);
    for (size_t i = 0; i < count; ++i) strings[i].~basic_string();
  }
  allocator_->Free(data_);
}

bool Storage::CanRetypeTo(DataType dtype) const {
  return dtype_ != DataType::kString && dtype != DataType::kString;
}

void Storage::RetypeTo(DataType dtype) {
  DOPPIO_ENFORCE(CanRetypeTo(dtype), "storage of ", DataTypeName(dtype_),
                 " cannot be reused for ", DataTypeName(dtype));
  dtype_ = dtype;
}

int64_t CheckedNumElements(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) {
    DOPPIO_ENFORCE_GE(d, 0, "negative dimension in shape ", dims);
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / d) {
      DOPPIO_THROW("shape ", dims, " has more elements than int64 can count");
    }
    count *= d;
  }
  return count;
}

Tensor::Tensor(const std::vector<int64_t>& dims, DataType dtype, Device device)
    : device_(device), dtype_(dtype) {
  Resize(dims);
}

int64_t Tensor::dim(int i) const { return dims_[CanonicalAxis(i)]; }

int Tensor::CanonicalAxis(int axis) const {
  const int n = ndim();
  DOPPIO_ENFORCE(axis >= -n && axis < n, "axis ", axis,
                 " is out of range for a tensor of ", n, " dims ", dims_);
  return axis < 0 ? axis + n : axis;
}

int64_t Tensor::SizeToDim(int k) const { return SizeBetweenDims(0, k); }

int64_t Tensor::SizeFromDim(int k) const { return SizeBetweenDims(k, ndim()); }

int64_t Tensor::SizeBetweenDims(int begin, int end) const {
  DOPPIO_ENFORCE(0 <= begin && begin <= end && end <= ndim(), "dims [", begin,
                 ", ", end, ") out of range for shape ", dims_);
  int64_t count = 1;
  for (int i = begin; i < end; ++i) count *= dims_[i];
  return count;
}

void Tensor::Resize(const std::vector<int64_t>& dims) {
  // Ops resize their outputs on every run, mostly to the shape they have.
  // (Not for {}: a fresh tensor has those dims but no element yet.)
  if (!dims.empty() && dims == dims_) return;
  const int64_t count = CheckedNumElements(dims);
  const size_t item = std::max<size_t>(ItemSize(dtype_), 1);
  DOPPIO_ENFORCE(static_cast<uint64_t>(count) <=
                     std::numeric_limits<size_t>::max() / 16 / item,
                 "shape ", dims, " is too large to allocate");
  dims_ = dims;
  numel_ = count;
}

void Tensor::Reshape(const std::vector<int64_t>& dims) {
  const int64_t count = CheckedNumElements(dims);
  DOPPIO_ENFORCE_EQ(count, numel_, "Reshape from ", dims_, " to ", dims,
                    " must keep the number of elements");
  dims_ = dims;
}

namespace {
char* At(const Storage& storage, size_t offset_bytes) {
  return static_cast<char*>(storage.data()) + offset_bytes;
}
}  // namespace

const void* Tensor::raw_data() const {
  if (numel_ == 0) return storage_ ? At(*storage_, offset_bytes_) : nullptr;
  DOPPIO_ENFORCE(storage_ != nullptr && storage_->dtype() == dtype_ &&
                     storage_->capacity_bytes() >= offset_bytes_ + nbytes(),
                 "tensor ", DebugString(), " was read before it was written");
  return At(*storage_, offset_bytes_);
}

void* Tensor::raw_mutable_data(DataType dtype) {
  DOPPIO_ENFORCE(IsStorableType(dtype), "cannot store elements of type ",
                 DataTypeName(dtype));
  DOPPIO_ENFORCE(static_cast<uint64_t>(numel_) <=
                     std::numeric_limits<size_t>::max() / ItemSize(dtype),
                 "shape ", dims_, " of ", DataTypeName(dtype), " is too large to allocate");
  const size_t needed = static_cast<size_t>(numel_) * ItemSize(dtype);
  const bool fits = storage_ != nullptr && storage_->capacity_bytes() >= offset_bytes_ + needed &&
                    storage_->device() == device_;
  // Retyping storage another tensor shares would change what that tensor
  // reads, so only sole owners reuse theirs across dtypes.
  if (fits && storage_->dtype() != dtype && storage_.use_count() == 1 &&
      storage_->CanRetypeTo(dtype)) {
    storage_->RetypeTo(dtype);
  }
  if (!fits || storage_->dtype() != dtype) {
    storage_ = std::make_shared<Storage>(device_, dtype, numel_);
    offset_bytes_ = 0;
  }
  dtype_ = dtype;
  return At(*storage_, offset_bytes_);
}

void Tensor::CopyFrom(const Tensor& source) {
  if (&source == this) return;
  DOPPIO_ENFORCE(source.device().kind == DeviceKind::kCPU &&
                     device_.kind == DeviceKind::kCPU,
                 "Tensor::CopyFrom copies host tensors only; use a Copy op "
                 "across devices");
  Resize(source.dims());
  if (source.dtype() == DataType::kUndefined) {
    dtype_ = DataType::kUndefined;
    return;
  }
  void* destination = raw_mutable_data(source.dtype());
  if (numel_ == 0) return;
  if (source.dtype() == DataType::kString) {
    const auto* from = static_cast<const std::string*>(source.raw_data());
    auto* to = static_cast<std::string*>(destination);
    for (int64_t i = 0; i < numel_; ++i) to[i] = from[i];
  } else {
    std::memcpy(destination, source.raw_data(), nbytes());
  }
}

void Tensor::ShareData(const Tensor& source) {
  device_ = source.device_;
  dtype_ = source.dtype_;
  dims_ = source.dims_;
  numel_ = source.numel_;
  storage_ = source.storage_;
  offset_bytes_ = source.offset_bytes_;
}

void Tensor::ShareSlice(const Tensor& source, int64_t begin, int64_t count) {
  DOPPIO_ENFORCE(source.ndim() >= 1, "cannot slice a scalar tensor ", source.DebugString());
  DOPPIO_ENFORCE(0 <= begin && 0 <= count && begin + count <= source.dim(0), "slices [", begin,
                 ", ", begin + count, ") out of range for shape ", source.dims());
  DOPPIO_ENFORCE(source.storage_ != nullptr, "cannot slice tensor ", source.DebugString(),
                 " before it holds data");
  const int64_t slice = source.SizeFromDim(1);
  std::vector<int64_t> dims = source.dims();
  dims[0] = count;
  device_ = source.device_;
  dtype_ = source.dtype_;
  dims_ = dims;
  numel_ = count * slice;
  storage_ = source.storage_;
  offset_bytes_ =
      source.offset_bytes_ + static_cast<size_t>(begin * slice) * ItemSize(source.dtype_);
}

void Tensor::Reset() {
  dtype_ = DataType::kUndefined;
  dims_.clear();
  numel_ = 0;
  storage_.reset();
  offset_bytes_ = 0;
}

std::string Tensor::DebugString() const {
  return MakeString(DataTypeName(dtype_), dims_);
}

}  // namespace doppio
