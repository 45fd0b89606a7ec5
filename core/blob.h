// Blob: a named slot in a Workspace that owns one object of any C++ type, most
// often a Tensor, but also DB cursors, mutexes or communicator contexts that
// ops keep between runs.
//
// Ownership: the blob owns its object and destroys it on Reset or when the
// blob dies. Get/GetMutable hand out borrowed pointers that live until the
// blob's content changes.
// Thread-safety: none; the executor guarantees one writer at a time.
#pragma once

#include <memory>
#include <string>
#include <typeindex>
#include <typeinfo>

#include "core/enforce.h"
#include "core/tensor.h"

namespace doppio {

// A readable name for a C++ type ("Tensor", "doppio::db::Cursor").
std::string DemangledTypeName(const std::type_info& type);

class Blob {
 public:
  Blob() = default;
  Blob(const Blob&) = delete;
  Blob& operator=(const Blob&) = delete;

  bool IsEmpty() const { return object_ == nullptr; }
  template <typename T>
  bool IsType() const {
    return object_ != nullptr && type_ == std::type_index(typeid(T));
  }
  std::type_index type() const { return type_; }
  std::string TypeName() const {
    return object_ ? DemangledTypeName(*type_info_) : "nothing";
  }

  // The held object; throws a clear error when the blob holds something else.
  template <typename T>
  const T& Get() const {
    DOPPIO_ENFORCE(IsType<T>(), "blob holds ", TypeName(), ", not ",
                   DemangledTypeName(typeid(T)));
    return *static_cast<const T*>(object_.get());
  }

  // The held T, default-constructing one (and dropping other content) if the
  // blob holds something else.
  template <typename T>
  T* GetMutable() {
    if (!IsType<T>()) Reset(std::make_unique<T>());
    return static_cast<T*>(object_.get());
  }

  // Takes ownership of `object`.
  template <typename T>
  T* Reset(std::unique_ptr<T> object) {
    T* raw = object.release();
    object_ = std::shared_ptr<void>(raw, [](void* p) { delete static_cast<T*>(p); });
    type_ = std::type_index(typeid(T));
    type_info_ = &typeid(T);
    return raw;
  }
  void Reset() {
    object_.reset();
    type_ = std::type_index(typeid(void));
    type_info_ = &typeid(void);
  }

  // Tensor shorthands, the common case.
  bool IsTensor() const { return IsType<Tensor>(); }
  const Tensor& GetTensor() const { return Get<Tensor>(); }
  // The blob's tensor, made on `device` (an existing tensor on another device
  // is replaced).
  Tensor* GetMutableTensor(Device device = {});

  void Swap(Blob& other) {
    std::swap(object_, other.object_);
    std::swap(type_, other.type_);
    std::swap(type_info_, other.type_info_);
  }

 private:
  std::shared_ptr<void> object_;
  std::type_index type_ = std::type_index(typeid(void));
  const std::type_info* type_info_ = &typeid(void);
};

}  // namespace doppio
