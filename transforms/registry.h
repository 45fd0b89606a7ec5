// Caffe2's transform registry (workspace.ApplyTransform): net rewrites
// looked up by name. Each takes a NetDef and returns the rewritten one,
// reading no weights, so it applies to any net (training or predict).
//
//   ConvToNNPack        Caffe2's: CPU Conv ops ask for engine NNPACK. Where
//                       no NNPACK kernel is registered (Doppio registers
//                       none) the op runs on the default engine, as in a
//                       Caffe2 build without NNPACK.
//   FuseActivation      transforms/fuse_activation.h
//   InplaceActivation   transforms/inplace_activation.h
//
// Thread-safe: the registry is built once and only read.
#pragma once

#include <string>
#include <vector>

#include "proto/doppio.pb.h"

namespace doppio {
namespace transforms {

// The rewritten net; an unknown name is an error listing the known ones.
NetDef ApplyRegisteredTransform(const std::string& name, const NetDef& net);

std::vector<std::string> RegisteredTransforms();

// The ConvToNNPack rewrite.
NetDef ConvToNNPack(const NetDef& net);

}  // namespace transforms
}  // namespace doppio
