#include "core/blob.h"

#include <cxxabi.h>

#include <cstdlib>

namespace doppio {

std::string DemangledTypeName(const std::type_info& type) {
  if (type == typeid(Tensor)) return "Tensor";
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string name = (status == 0 && demangled) ? demangled : type.name();
  std::free(demangled);
  return name;
}

Tensor* Blob::GetMutableTensor(Device device) {
  if (IsType<Tensor>()) {
    Tensor* tensor = static_cast<Tensor*>(object_.get());
    if (tensor->device() == device) return tensor;
  }
  return Reset(std::make_unique<Tensor>(device));
}

}  // namespace doppio
