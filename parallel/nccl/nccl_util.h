// The parts of the NCCL ops that need neither NCCL nor a GPU, so they are
// tested on every machine: which devices a collective spans (and the errors
// for inputs that cannot take part), the communicator cache keyed by the
// ordered device set, and the unique-id exchange of the multi-process mode
// through a Gloo store.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "core/allocator.h"
#include "core/types.h"

namespace doppio {

// What a collective needs to know about one of its tensor inputs.
struct CollectiveInput {
  std::string blob;
  Device device;
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> dims;
};

// The device list of a collective whose input i lives on device i: the
// inputs' CUDA device ids in input order. Throws doppio::Error naming `op`
// and the blob when an input is not on a CUDA device, two inputs share a
// device, or their types or shapes differ. `dtype_supported` says whether
// NCCL can reduce a type (the caller owns that mapping).
std::vector<int> CollectiveDevices(const std::string& op,
                                   const std::vector<CollectiveInput>& inputs,
                                   const std::function<bool(DataType)>& dtype_supported);

// Throws unless 0 <= root < ranks; `op` names the op in the message.
void EnforceValidRoot(const std::string& op, int root, int ranks);

// The key under which a communicator over `devices` (in this order: rank i
// is devices[i]) is cached: "0,1,3". Order matters, as ranks follow it.
std::string DeviceSetKey(const std::vector<int>& devices);

// Single-process communicators, one per ordered device set, made on first
// use and kept for the process (NCCL communicators are expensive to make;
// destroying them at exit races the CUDA runtime's teardown). Comm is the
// per-set state (the NCCL build stores its ncclComm_t vector).
template <typename Comm>
class DeviceSetCache {
 public:
  using Factory = std::function<std::unique_ptr<Comm>(const std::vector<int>& devices)>;
  explicit DeviceSetCache(Factory factory) : factory_(std::move(factory)) {}

  // The entry of `devices`, made by the factory once per key even when
  // several threads ask at the same time. A factory that throws leaves no
  // entry, so a later call tries again.
  Comm& Get(const std::vector<int>& devices) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::unique_ptr<Comm>& entry = entries_[DeviceSetKey(devices)];
    if (entry == nullptr) {
      try {
        entry = factory_(devices);
      } catch (...) {
        entries_.erase(DeviceSetKey(devices));
        throw;
      }
    }
    return *entry;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
  }

 private:
  Factory factory_;
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Comm>> entries_;
};

// The store key a communicator's unique id travels under.
std::string NcclUniqueIdKey(const std::string& name);

// Multi-process rendezvous: rank 0 calls `generate` (ncclGetUniqueId in the
// NCCL build; a fake id in tests) and sets the bytes in `store` under
// NcclUniqueIdKey(name); other ranks wait up to `timeout` for the key and get
// it. Every rank returns the same bytes, which must be `id_size` long.
// Throws doppio::Error naming `op` on a bad rank or size, a timeout or a store
// failure (gloo's exceptions do not escape).
std::vector<char> ExchangeUniqueId(const std::string& op, gloo::rendezvous::Store& store,
                                   const std::string& name, int rank, int size,
                                   size_t id_size,
                                   const std::function<std::vector<char>()>& generate,
                                   std::chrono::milliseconds timeout);

// True when the environment says a GPU is expected (DOPPIO_REQUIRE_GPU set
// to anything but "", "0", "false" or "off"): GPU tests then fail instead
// of skipping, so a GPU machine whose driver broke does not pass green.
bool GpuRequiredByEnvironment();

}  // namespace doppio
