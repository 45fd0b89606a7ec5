// Device contexts: what an Operator<Context> needs to run on its device.
// CPUContext is the host one; CUDAContext (core/cuda) follows the same shape:
// device(), SwitchToDevice(stream_id), FinishDeviceComputation() and
// stream_placement() (where its work goes, see core/event.h).
//
// Each operator owns its context, so the random generator is per op and its
// sequence depends only on the op's DeviceOption.random_seed: a seeded net
// gives the same numbers however ops are scheduled.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>

#include "core/allocator.h"
#include "core/event.h"
#include "core/random_state.h"
#include "proto/doppio.pb.h"

namespace doppio {

// DeviceOption -> Device (CPU device ids are logical devices).
Device DeviceFromOption(const DeviceOption& option);

class CPUContext {
 public:
  static constexpr DeviceKind kDeviceKind = DeviceKind::kCPU;

  CPUContext() : CPUContext(DeviceOption()) {}
  explicit CPUContext(const DeviceOption& option);

  Device device() const { return device_; }
  // Host work needs no device switch or synchronization.
  void SwitchToDevice(int /*stream_id*/ = 0) {}
  void FinishDeviceComputation() {}
  // Host work is never queued on streams (see core/event.h).
  static constexpr StreamPlacement stream_placement() { return {}; }

  // The op's random generator: seeded from random_seed when the option sets
  // one, else from a process-wide nondeterministic source.
  std::mt19937& RandGenerator() {
    if (!generator_) CreateGenerator();
    return *generator_;
  }
  // The generator's state ("" before its first use) and back
  // (core/random_state.h).
  std::string RandomState() const { return GeneratorState(generator_); }
  void SetRandomState(const std::string& state) { SetGeneratorState(state, &generator_); }

  void CopyBytes(size_t nbytes, const void* source, void* destination);

 private:
  void CreateGenerator();

  Device device_;
  // Made on first use: most ops draw no random numbers, and a generator's
  // 5 KB state in every op would spread a net's ops over many cache lines.
  bool has_seed_ = false;
  uint32_t seed_ = 0;
  std::unique_ptr<std::mt19937> generator_;
};

}  // namespace doppio
