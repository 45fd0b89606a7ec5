// Checks shared by the in-process collectives (Allreduce, Broadcast): their
// blobs are per-device replicas of one tensor, passed in place.
#pragma once

#include <vector>

#include "core/operator.h"
#include "proto/doppio.pb.h"

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

// Shape inference for the in-place collectives, both forms of the shared
// schema. In process, output i is input i's blob. Under engine "GLOO",
// input 0 is a common world, output i is input i + 1's blob, and an extra
// last output (when there are as many outputs as inputs) is the int32
// status scalar.
std::vector<TensorShape> InPlaceCollectiveShapes(const OperatorDef& def,
                                                 const std::vector<TensorShape>& inputs);

}  // namespace doppio
