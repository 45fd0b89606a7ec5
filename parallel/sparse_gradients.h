// Sparse (GradientSlice) parameter gradients in the Parallelize pass.
//
// A table read with Gather or SparseLengthsSum gets a gradient made of
// (indices, values) rows, which an Allreduce cannot sum: each device holds
// different rows. As Caffe2's data_parallel_model does on CPU, every device
// instead concatenates all devices' indices and all devices' values (along
// axis 0, in device order), and its sparse update op applies the whole
// concatenation. The replicas then apply identical updates, and a row named
// by several devices is updated once per occurrence, exactly as one device
// would for the same global batch (the sparse update ops accumulate repeated
// indices).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "proto/doppio.pb.h"

namespace doppio {

struct SparseGradientSync {
  std::string param;
  // The slice backward produced, template names.
  GradientWrapper slice;
  // Its concatenation over all devices, template names (per device once
  // prefixed): "<param>_grad_indices_all_devices", "..._values_all_devices".
  // The backward pass already uses "<grad>_indices_concat" for slices summed
  // within one device, hence the distinct suffix.
  GradientWrapper gathered;
};

// The concatenated slice's names for `param` (the Python front end mirrors
// this rule in data_parallel_model._AllDevicesSlice).
GradientWrapper AllDevicesSliceNames(const std::string& param);

// One entry per sparse param gradient. Throws when a concatenated name is
// already a blob of the template (`template_blobs`), or a slice is malformed.
std::vector<SparseGradientSync> PlanSparseGradientSync(
    const std::map<std::string, GradientWrapper>& sparse_grads,
    const std::set<std::string>& template_blobs);

// Two Concat ops (indices, values) per device: device d's read every
// device's slice (prefixes[i] + name, in order) and write prefixes[d] +
// gathered names, running on device_options[d].
std::vector<OperatorDef> AllDevicesConcatOps(const SparseGradientSync& sync,
                                             const std::vector<std::string>& prefixes,
                                             const std::vector<DeviceOption>& device_options);

// Rewrites the update ops (template names) to read and write the
// concatenated slices instead of the per-device ones. An op is matched to a
// param by the slice's values blob it names; one naming only an indices blob
// shared by several sparse params is ambiguous and an error.
void UseAllDevicesSlices(const std::vector<SparseGradientSync>& syncs, NetDef* update_net);

}  // namespace doppio
