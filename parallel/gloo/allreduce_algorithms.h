// The Gloo allreduce algorithms that the "algorithm" argument of Allreduce
// and AllreduceCoalesced names, and the choice made when it is unset.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>

#include "core/operator.h"
#include "parallel/gloo/gloo_common.h"

namespace doppio {

// The op's "algorithm" argument, checked: "", "ring", "ring_chunked" or
// "halving_doubling".
inline std::string AllreduceAlgorithmArgument(const OperatorBase& op) {
  const std::string algorithm = op.GetSingleArgument<std::string>("algorithm", "");
  DOPPIO_ENFORCE(algorithm.empty() || algorithm == "ring" || algorithm == "ring_chunked" ||
                     algorithm == "halving_doubling",
                 "unknown algorithm '", algorithm,
                 "'; expected \"ring\", \"ring_chunked\" or \"halving_doubling\"");
  return algorithm;
}

// `requested`, or for "" halving_doubling on power-of-two worlds (log2(size)
// steps, bandwidth-optimal there) and ring_chunked otherwise (its pipelining
// pays off where halving/doubling would need extra steps).
inline std::string ChooseAllreduceAlgorithm(const std::string& requested,
                                            const gloo::Context& world) {
  if (!requested.empty()) return requested;
  const bool power_of_two = (world.size & (world.size - 1)) == 0;
  return power_of_two ? "halving_doubling" : "ring_chunked";
}

// Every buffer on every rank becomes the sum of all of them.
template <typename T>
std::unique_ptr<gloo::Algorithm> MakeAllreduce(const std::string& algorithm,
                                               const CommonWorld& world,
                                               const std::vector<T*>& buffers, int count) {
  if (algorithm == "ring") return std::make_unique<gloo::AllreduceRing<T>>(world, buffers, count);
  if (algorithm == "ring_chunked") {
    return std::make_unique<gloo::AllreduceRingChunked<T>>(world, buffers, count);
  }
  return std::make_unique<gloo::AllreduceHalvingDoubling<T>>(world, buffers, count);
}

}  // namespace doppio
