// The in-process collectives the Parallelize pass puts between the replicas
// of one process: how a gradient is summed over the devices and how device
// 0's copy of a blob reaches the others.
//
// CPU devices: one `Allreduce` / `Broadcast` op (parallel/allreduce_op.h).
// CUDA devices, as Caffe2's data_parallel_model does:
//   - with NCCL, one `NCCLAllreduce` (inputs and outputs the per-device
//     copies, in place) or `NCCLBroadcast` (root 0) placed on device 0. The
//     NCCL ops of one net are chained by control inputs (each waits for the
//     previous one's first blob): NCCL collectives launched concurrently
//     from different streams can deadlock.
//   - without NCCL, a reduction tree into device 0: at each level device i
//     Copies its partner's partial sum into "<its prefix><grad>_gpu<peer
//     id>_copy" and Sums it into its own copy (both ops on device i);
//     partners are stride 1, 2, 4 ... apart, which is Caffe2's tree for 2,
//     4, 8 and 16 devices. Then one Copy per other device, placed on the
//     receiving device, takes device 0's total back. The pass cannot know
//     the peer-access pattern, so it copies as if no pair had peer access.
#pragma once

#include <string>
#include <vector>

#include "proto/doppio.pb.h"

namespace doppio {

class DeviceCollectives {
 public:
  // One entry per replica, device order; `prefixes[i]` is the blob prefix
  // ("gpu_3/") of the device in device_options[i]. use_nccl only matters
  // for CUDA devices.
  DeviceCollectives(std::vector<std::string> prefixes, std::vector<DeviceOption> device_options,
                    bool use_nccl);

  // Ops leaving in every one of `copies` (one per device, device order, the
  // prefixed names of template blob `blob`) the sum of them all.
  std::vector<OperatorDef> Allreduce(const std::string& blob,
                                     const std::vector<std::string>& copies);

  // Ops leaving copies[0]'s value in every one of `copies`.
  std::vector<OperatorDef> Broadcast(const std::string& blob,
                                     const std::vector<std::string>& copies);

 private:
  bool OnCuda() const;
  OperatorDef Nccl(const std::string& type, const std::string& name,
                   const std::vector<std::string>& copies);
  std::vector<OperatorDef> SumTree(const std::string& blob, const std::vector<std::string>& copies);

  std::vector<std::string> prefixes_;
  std::vector<DeviceOption> device_options_;
  bool use_nccl_;
  // The first blob of this net's previous NCCL op; empty before the first.
  std::string previous_nccl_;
};

// An op reading and writing each of `blobs`, on `device_option`.
OperatorDef InPlaceCollective(const std::string& type, const std::string& name,
                              const std::vector<std::string>& blobs,
                              const DeviceOption& device_option);

}  // namespace doppio
