// The operator registry: (op type, device kind, engine) -> constructor.
//
//   REGISTER_CPU_OPERATOR(Scale, ScaleOp<CPUContext>);
//   REGISTER_CPU_OPERATOR_WITH_ENGINE(Conv, DNNL, DnnlConvOp);
//
// CreateOperator looks up the def's engine (a comma-separated preference
// list) on the def's device and falls back to the default engine. An op
// type with a CPU kernel but none for the def's device runs through that
// device's fallback, when its runtime registered one (core/cuda: inputs
// copied to the host, the CPU kernel, outputs copied back, as Caffe2's
// GPUFallbackOp). Unknown types fail with a message suggesting registered
// names that are close.
//
// Thread-safety: registration happens during static initialization; lookups
// afterwards are read-only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/operator.h"

namespace doppio {

using OperatorCreator =
    std::function<std::unique_ptr<OperatorBase>(const OperatorDef&, Workspace*)>;

struct OperatorKey {
  std::string type;
  DeviceKind device;
  std::string engine;  // "" is the default engine
};

// Builds the op for a device from the CPU kernel's creator `cpu`.
using FallbackCreator = std::function<std::unique_ptr<OperatorBase>(const OperatorDef&, Workspace*,
                                                                    const OperatorCreator& cpu)>;

class OperatorRegistry {
 public:
  static void Register(const OperatorKey& key, OperatorCreator creator);
  // nullptr when nothing is registered under exactly this key.
  static const OperatorCreator* Find(const OperatorKey& key);
  // The fallback of `device` (at most one per device), and nullptr when
  // none is registered.
  static void RegisterFallback(DeviceKind device, FallbackCreator creator);
  static const FallbackCreator* FindFallback(DeviceKind device);
  static std::vector<OperatorKey> Keys();
  // Registered types within a small edit distance of `type`, closest first.
  static std::vector<std::string> SimilarTypes(const std::string& type);
};

// Builds the operator for `def`, verifying it against its schema. Errors
// name the op; an op type without a schema is refused.
std::unique_ptr<OperatorBase> CreateOperator(const OperatorDef& def,
                                             Workspace* workspace);

// Static registration helper behind the REGISTER_* macros.
struct OperatorRegisterer {
  OperatorRegisterer(const char* type, DeviceKind device, const char* engine,
                     OperatorCreator creator) {
    OperatorRegistry::Register({type, device, engine}, std::move(creator));
  }
};

template <typename OpClass>
std::unique_ptr<OperatorBase> MakeOperator(const OperatorDef& def, Workspace* ws) {
  return std::make_unique<OpClass>(def, ws);
}

}  // namespace doppio

#define REGISTER_OPERATOR_FOR_(type, device, engine, ...)                      \
  static ::doppio::OperatorRegisterer DOPPIO_CONCAT_(doppio_op_##type##_, __LINE__)( \
      #type, device, engine, &::doppio::MakeOperator<__VA_ARGS__>)

#define REGISTER_CPU_OPERATOR(type, ...) \
  REGISTER_OPERATOR_FOR_(type, ::doppio::DeviceKind::kCPU, "", __VA_ARGS__)
#define REGISTER_CPU_OPERATOR_WITH_ENGINE(type, engine, ...) \
  REGISTER_OPERATOR_FOR_(type, ::doppio::DeviceKind::kCPU, #engine, __VA_ARGS__)
#define REGISTER_CUDA_OPERATOR(type, ...) \
  REGISTER_OPERATOR_FOR_(type, ::doppio::DeviceKind::kCUDA, "", __VA_ARGS__)
#define REGISTER_CUDA_OPERATOR_WITH_ENGINE(type, engine, ...) \
  REGISTER_OPERATOR_FOR_(type, ::doppio::DeviceKind::kCUDA, #engine, __VA_ARGS__)

#ifndef DOPPIO_CONCAT_
#define DOPPIO_CONCAT_IMPL_(a, b) a##b
#define DOPPIO_CONCAT_(a, b) DOPPIO_CONCAT_IMPL_(a, b)
#endif
