#include "parallel/nccl/nccl_util.h"

#include <cstdlib>
#include <exception>
#include <set>
#include <sstream>

#include "core/enforce.h"

namespace doppio {
namespace {

std::string DimsString(const std::vector<int64_t>& dims) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < dims.size(); ++i) out << (i ? ", " : "") << dims[i];
  out << "]";
  return out.str();
}

}  // namespace

std::vector<int> CollectiveDevices(const std::string& op,
                                   const std::vector<CollectiveInput>& inputs,
                                   const std::function<bool(DataType)>& dtype_supported) {
  DOPPIO_ENFORCE(!inputs.empty(), "", op, ": needs at least one tensor input");
  std::vector<int> devices;
  std::set<int> seen;
  const CollectiveInput& first = inputs.front();
  for (const CollectiveInput& input : inputs) {
    DOPPIO_ENFORCE(input.device.kind == DeviceKind::kCUDA, "", op, ": input '", input.blob,
                   "' is on a CPU device; every input of an NCCL collective must be a "
                   "CUDA tensor (input i on GPU i of the communicator)");
    DOPPIO_ENFORCE(seen.insert(input.device.id).second, "", op, ": input '", input.blob,
                   "' is on GPU ", input.device.id,
                   " like an earlier input; each input must be on its own GPU");
    DOPPIO_ENFORCE(input.dtype == first.dtype, "", op, ": input '", input.blob, "' is ",
                   DataTypeName(input.dtype), " but '", first.blob, "' is ",
                   DataTypeName(first.dtype), "; every input must have the same type");
    DOPPIO_ENFORCE(input.dims == first.dims, "", op, ": input '", input.blob, "' has shape ",
                   DimsString(input.dims), " but '", first.blob, "' has ",
                   DimsString(first.dims), "; every input must have the same shape");
    devices.push_back(input.device.id);
  }
  DOPPIO_ENFORCE(dtype_supported(first.dtype), "", op, ": input '", first.blob, "' is ",
                 DataTypeName(first.dtype),
                 ", which NCCL does not reduce (use float, float16, double, int8, uint8, "
                 "int32 or int64)");
  return devices;
}

void EnforceValidRoot(const std::string& op, int root, int ranks) {
  DOPPIO_ENFORCE(root >= 0 && root < ranks, "", op, ": root ", root, " is not a rank of its ",
                 ranks, " participants (root is a position among the inputs, 0..",
                 ranks - 1, ", not a device id)");
}

std::string DeviceSetKey(const std::vector<int>& devices) {
  std::string key;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (i > 0) key += ",";
    key += std::to_string(devices[i]);
  }
  return key;
}

std::string NcclUniqueIdKey(const std::string& name) { return "nccl_unique_id/" + name; }

std::vector<char> ExchangeUniqueId(const std::string& op, gloo::rendezvous::Store& store,
                                   const std::string& name, int rank, int size,
                                   size_t id_size,
                                   const std::function<std::vector<char>()>& generate,
                                   std::chrono::milliseconds timeout) {
  DOPPIO_ENFORCE(size >= 1, "", op, ": size ", size, " must be at least 1");
  DOPPIO_ENFORCE(rank >= 0 && rank < size, "", op, ": rank ", rank, " is not in [0, ", size, ")");
  const std::string key = NcclUniqueIdKey(name);
  std::vector<char> id;
  try {
    if (rank == 0) {
      id = generate();
      DOPPIO_ENFORCE_EQ(id.size(), id_size, "", op, ": the generated unique id has the wrong size");
      store.set(key, id);
    } else {
      store.wait({key}, timeout);
      id = store.get(key);
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    DOPPIO_THROW("", op, ": rank ", rank, " of ", size, " could not exchange the NCCL unique id '",
                 key, "' through the store (", rank == 0 ? "set" : "waited ",
                 rank == 0 ? "" : std::to_string(timeout.count()) + " ms for it", "): ",
                 e.what());
  }
  DOPPIO_ENFORCE_EQ(id.size(), id_size, "", op, ": the store's value under '", key,
                    "' is not an NCCL unique id (wrong size); is another job using the "
                    "same store and name?");
  return id;
}

bool GpuRequiredByEnvironment() {
  const char* value = std::getenv("DOPPIO_REQUIRE_GPU");
  if (value == nullptr) return false;
  const std::string text = value;
  return !(text.empty() || text == "0" || text == "false" || text == "off");
}

}  // namespace doppio
