// The in-process collectives the Parallelize pass puts between the replicas
// of one process: how a gradient is summed over the devices, how device 0's
// copy of a blob reaches the others, and how sparse gradient rows are
// gathered from every device.
//
// CPU devices: one `Allreduce` / `Broadcast` op (parallel/allreduce_op.h).
// CUDA devices, as Caffe2's data_parallel_model does:
//   - with NCCL, one `NCCLAllreduce` (inputs and outputs the per-device
//     copies, in place), `NCCLReduce` (root 0, in place into device 0's
//     copy) or `NCCLBroadcast` (root 0) placed on device 0. The NCCL ops of
//     one net are chained by control inputs (each waits for the previous
//     one's first blob): NCCL collectives launched concurrently from
//     different streams can deadlock.
//   - without NCCL, a reduction tree into device 0: at each level device i
//     Copies its partner's partial sum into "<its prefix><grad>_gpu<peer
//     id>_copy" and Sums it into its own copy (both ops on device i);
//     partners are stride 1, 2, 4 ... apart, which is Caffe2's tree for 2,
//     4, 8 and 16 devices. Then one Copy per other device, placed on the
//     receiving device, takes device 0's total back. The pass cannot know
//     the peer-access pattern, so it copies as if no pair had peer access.
// On CUDA only Copy ops read another device's blob; every other op reads
// and writes its own device's blobs (the NCCL ops excepted, by design).
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

  // Ops leaving the sum of all `copies` in copies[0], for a sum that goes on
  // across processes before Broadcast hands it back. On CUDA the other
  // copies end up undefined (NCCLReduce, or the tree's partial sums); on
  // CPU this is Allreduce (every copy gets the sum), as the CPU path always
  // did.
  std::vector<OperatorDef> ReduceToFirst(const std::string& blob,
                                         const std::vector<std::string>& copies);

  // Ops leaving copies[0]'s value in every one of `copies`.
  std::vector<OperatorDef> Broadcast(const std::string& blob,
                                     const std::vector<std::string>& copies);

  // CUDA devices only: ops leaving in prefixes[d] + `gathered`, on every
  // device d, the concatenation along axis 0 of all `copies` (device
  // order). Device 0 Copies each other device's rows in (StagedCopyName of
  // `gathered`), Concats them (its second output, `gathered` + "_split",
  // holds the row counts), and one Copy per other device, on the receiving
  // device, hands the result out; so only Copy ops cross devices. This is
  // Caffe2's GPU handling of a GradientSlice: concatenated on the master
  // GPU, then copied to every GPU. A single device gets no ops.
  std::vector<OperatorDef> GatherRows(const std::string& gathered,
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

// Template name of the copy of `blob` that a device receives from CUDA
// device `peer_id` ("<blob>_gpu<peer>_copy", Caffe2's name), before it
// adds or concatenates it; the caller prefixes the receiving device.
std::string StagedCopyName(const std::string& blob, int peer_id);

// An op reading and writing each of `blobs`, on `device_option`.
OperatorDef InPlaceCollective(const std::string& type, const std::string& name,
                              const std::vector<std::string>& blobs,
                              const DeviceOption& device_option);

}  // namespace doppio
