// InjectCrossDeviceCopies: the pass that makes a model-parallel net runnable.
// Ops of one net may be placed on different devices (DeviceOption); a blob
// written on one device and read on another needs an explicit Copy op
// (docs/DESIGN.md section 4). The pass is pure (NetDef -> NetDef) and follows
// Caffe2's core.InjectCrossDeviceCopies: one copy per (blob, device), named
// "<blob>_gpu_<id>" or "<blob>_cpu" (CPU devices other than 0, which Caffe2
// does not have, get "<blob>_cpu_<id>"), reused by every later reader on that
// device until the blob is written again.
#pragma once

#include <map>
#include <set>
#include <string>
#include <tuple>

#include "proto/doppio.pb.h"

namespace doppio {

// (blob, device_type, device id): where a copy of a blob lives.
using RemapKey = std::tuple<std::string, int, int>;

struct CrossDeviceState {
  // Where each known blob lives. External inputs missing from it are placed
  // on the device of their first reader.
  std::map<std::string, DeviceOption> blob_to_device;
  // Copies made so far (by this or an earlier net), reused instead of copying
  // again.
  std::map<RemapKey, std::string> blob_remap;
};

// The device an op runs on: its own DeviceOption, else the net's, else CPU 0.
DeviceOption EffectiveDevice(const OperatorDef& op, const NetDef& net);

bool SameDevice(const DeviceOption& a, const DeviceOption& b);

// "_cpu", "_cpu_<id>" or "_gpu_<id>": the suffix of a blob copied to `device`.
std::string CopySuffix(const DeviceOption& device);

// Returns the net with Copy ops inserted (named "<net>_cross_device") and
// updates `state` (blob devices, copies made). Ops whose type is in
// `placeholder_ops` are taken to read and write on their own device without
// copies, as Caffe2's placeHolderOps. Throws doppio::Error naming the blob and
// op when an op reads a blob no earlier op writes and the net does not list
// as an external input, or when ops on different devices write one blob.
NetDef InjectCrossDeviceCopies(const NetDef& net, CrossDeviceState* state,
                               const std::set<std::string>& placeholder_ops = {});

}  // namespace doppio
