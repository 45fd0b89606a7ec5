// combine_spatial_bn for the Parallelize pass: SpatialBN in training takes
// its batch statistics over every device's batch, so N devices with B/N
// examples each normalize (and backpropagate) exactly as one device with B.
// As in Caffe2's data_parallel_model, each device computes ChannelStats of
// its SpatialBN input; the sums are reduced across devices and fed to
// SpatialBN with num_batches = N. Backward mirrors it: ChannelBackpropStats
// per device, reduced, fed to SpatialBNGradient (num_batches = N).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "proto/doppio.pb.h"

namespace doppio {

// Rewrites the template's forward + backward ops (template, unprefixed
// names) in place for `num_devices` (> 1) devices. Returns, keyed by the
// index in the rewritten `train_ops`, the per-device blobs to Allreduce
// across devices right after the last device's copy of that op; the caller
// must then emit the devices' copies op by op (interleaved), so that every
// device's SpatialBN comes after all devices' ChannelStats.
//
// Only training SpatialBN ops of the single-batch form (5 inputs, 5
// outputs, num_batches 1) are rewritten; test-mode ones are left alone.
std::map<int, std::vector<std::string>> CombineSpatialBN(std::vector<OperatorDef>* train_ops,
                                                         int num_devices);

}  // namespace doppio
