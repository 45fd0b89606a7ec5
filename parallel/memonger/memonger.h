// Memonger passes (Caffe2's caffe2/python/memonger.py and memonger.cc).
//
// Blob recycling renames blobs so that several of them use one name (one
// Blob, one allocation). Two blobs may share a name only when, in EVERY
// topological order of the op dependency DAG that the dag executor derives
// (core/net_dag.h OpDependencies: read-after-write, write-after-read,
// write-after-write and control_input edges), all accesses to the first
// finish before the second is first written. Only op inputs, outputs and
// control inputs are renamed; the op list, op types and the dependency
// structure stay the same (VerifyGraphEquality).
#ifndef DOPPIO_PARALLEL_MEMONGER_MEMONGER_H_
#define DOPPIO_PARALLEL_MEMONGER_MEMONGER_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "proto/doppio.pb.h"

namespace doppio {
namespace memonger {

enum class AssignmentAlgorithm { kGreedy, kDynamicProgramming };

using BlobShapes = std::map<std::string, std::vector<int64_t>>;

struct RecyclingOptions {
  // Blobs that may be renamed; everything else keeps its name.
  std::set<std::string> shareable_blobs;
  // Only blobs whose name starts with this (or with "_" + this: backward's
  // auto-split gradients) are renamed; shared names get it as prefix.
  std::string namescope;
  std::set<std::string> dont_share_blobs;
  // Element counts come from here; unknown sizes count as 1.
  BlobShapes blob_shapes;
  AssignmentAlgorithm algorithm = AssignmentAlgorithm::kGreedy;
};

// The core pass: renames shareable blobs onto "{namescope}__m{N}_shared".
// External inputs/outputs, blobs read before they are written and blobs
// outside the namescope are never renamed.
NetDef ComputeBlobRecyclingForDag(const NetDef& net, const RecyclingOptions& options);

// Caffe2's share_grad_blobs: recycles the gradients passed between layers
// and, with share_activations, every other blob the net makes in the
// namescope; never params' grads, losses, dont_share_blobs or what
// ComputeBlobRecyclingForDag protects (params and other state are read
// before they are written). Deviation from Caffe2, whose share_activations
// offers only brew layers' outputs minus the last two: that guard exists
// because its linear liveness cannot see backward's readers; here liveness
// runs over the DAG, so an activation backward reads stays alive until that
// reader in every schedule, and one it never reads is recycled early.
// What Caffe2's guard also gave its users is kept: the forward head (see
// ForwardHeadOutputs), which scripts fetch after a step, is never shared.
NetDef ShareGradBlobs(const NetDef& net, const std::vector<std::string>& losses,
                      const std::set<std::string>& param_grads, std::string namescope,
                      const std::set<std::string>& dont_share_blobs, bool share_activations,
                      const BlobShapes& blob_shapes);

// The outputs of the net's forward head, which share_activations leaves
// alone as Caffe2's does: every forward op from the second-to-last brew
// layer (an op whose output `b` reads "b_w") on, so the last two layers'
// outputs and what is computed from them (softmax, loss) stay fetchable.
// Without layers, the last two forward ops.
std::set<std::string> ForwardHeadOutputs(const NetDef& net);

// Caffe2's optimize_inference_for_dag: recycles every activation of an
// inference-only net (no gradient ops; every blob read is an external input
// or made earlier).
NetDef OptimizeInferenceForDag(const NetDef& net, const std::vector<std::string>& input_blobs,
                               const std::string& namescope);

// Caffe2's release_blobs_when_used: a Free op after each blob's last reader,
// for blobs first made by the net that are not external outputs, inputs of
// an Alias op or in dont_free_blobs.
NetDef ReleaseBlobsWhenUsed(const NetDef& net, const std::set<std::string>& dont_free_blobs);

// Same op types, device options and engines, and every input (and control
// input) produced by the same op in both nets.
bool VerifyGraphEquality(const NetDef& net_a, const NetDef& net_b);
// Same in-place (input index, output index) pairs op by op.
bool VerifyInplaceBlobs(const NetDef& net_a, const NetDef& net_b);

}  // namespace memonger
}  // namespace doppio

#endif  // DOPPIO_PARALLEL_MEMONGER_MEMONGER_H_
