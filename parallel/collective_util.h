// Checks shared by the in-process collectives (Allreduce, Broadcast): their
// blobs are per-device replicas of one tensor, passed in place.
#pragma once

#include <vector>

#include "core/operator.h"

namespace doppio {

// Every output i is input i's blob, and no blob appears twice: a replica
// listed twice would be counted twice in a sum, which is never meant.
void EnforceOneToOneInplace(const OperatorBase& op);

// Input i's tensor, writable in its own blob: Output(i) would replace a
// tensor on another CPU device id, and each replica keeps its device.
Tensor* ReplicaTensor(OperatorBase* op, int i);

// The shape and type every replica must share, or an error naming the
// first replica that differs from replica 0.
void EnforceSameDimsAndType(const OperatorBase& op, const std::vector<Tensor*>& replicas);

}  // namespace doppio
