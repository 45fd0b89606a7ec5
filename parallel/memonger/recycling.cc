// Blob recycling (ComputeBlobRecyclingForDag) and the two front ends that
// choose which blobs may be recycled (ShareGradBlobs, OptimizeInferenceForDag).
#include <algorithm>
#include <set>
#include <unordered_map>

#include "core/enforce.h"
#include "parallel/memonger/assignment.h"
#include "parallel/memonger/liveness.h"
#include "parallel/memonger/memonger.h"

namespace doppio {
namespace memonger {
namespace {

bool StartsWith(const std::string& name, const std::string& prefix) {
  return name.compare(0, prefix.size(), prefix) == 0;
}

bool InNamescope(const std::string& name, const std::string& namescope) {
  return StartsWith(name, namescope) || StartsWith(name, "_" + namescope);
}

int64_t ElementCount(const BlobShapes& shapes, const std::string& name) {
  auto it = shapes.find(name);
  if (it == shapes.end()) return 1;
  int64_t count = 1;
  for (int64_t dim : it->second) {
    DOPPIO_ENFORCE(dim >= 0, "memonger: blob_shapes gives blob '", name,
                   "' a negative dimension ", dim);
    count *= dim;
  }
  return count;
}

std::string WithSlash(std::string namescope) {
  if (!namescope.empty() && namescope.back() != '/') namescope += '/';
  return namescope;
}

}  // namespace

NetDef ComputeBlobRecyclingForDag(const NetDef& net, const RecyclingOptions& options) {
  const std::string namescope = WithSlash(options.namescope);
  const std::map<std::string, BlobUse> uses = CollectBlobUses(net);
  std::set<std::string> external(net.external_input().begin(), net.external_input().end());
  external.insert(net.external_output().begin(), net.external_output().end());

  // Candidates: written before anything reads them (so no value flows in
  // from before the net or from the previous run), in order of first write.
  std::vector<std::string> candidates;
  for (const auto& entry : uses) {
    const std::string& name = entry.first;
    if (!options.shareable_blobs.count(name) || options.dont_share_blobs.count(name) ||
        external.count(name) || !InNamescope(name, namescope) ||
        !entry.second.first_access_is_write) {
      continue;
    }
    candidates.push_back(name);
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const std::string& a, const std::string& b) {
                     return uses.at(a).first_access < uses.at(b).first_access;
                   });

  const OpAncestry ancestry(net);
  AssignmentProblem problem;
  for (const std::string& name : candidates) {
    problem.sizes.push_back(ElementCount(options.blob_shapes, name));
  }
  // A candidate may take over a slot only when every op touching any
  // member is a strict ancestor of the candidate's first writer: then no
  // schedule can overlap them, and the writer cannot become in place.
  // Checking the slot's last member is enough: it joined under the same
  // rule, so every earlier member's ops are ancestors of its first writer,
  // which is one of the ops checked here.
  problem.may_follow = [&](const std::vector<int>& slot, int candidate) {
    const int writer = uses.at(candidates[candidate]).first_access;
    for (int op : uses.at(candidates[slot.back()]).accesses) {
      if (!ancestry.IsAncestor(op, writer)) return false;
    }
    return true;
  };
  const Slots slots = options.algorithm == AssignmentAlgorithm::kDynamicProgramming
                          ? AssignOptimal(problem)
                          : AssignGreedy(problem);

  std::unordered_map<std::string, std::string> renamed;
  int shared_index = 0;
  for (const std::vector<int>& slot : slots) {
    if (slot.size() < 2) continue;
    const std::string shared = namescope + "__m" + std::to_string(shared_index++) + "_shared";
    DOPPIO_ENFORCE(!uses.count(shared), "memonger: the net already uses blob '", shared,
                   "', the name a shared blob would get");
    for (int member : slot) renamed[candidates[member]] = shared;
  }

  NetDef optimized = net;
  auto rename = [&](std::string* name) {
    auto it = renamed.find(*name);
    if (it != renamed.end()) *name = it->second;
  };
  for (OperatorDef& op : *optimized.mutable_op()) {
    for (std::string& name : *op.mutable_input()) rename(&name);
    for (std::string& name : *op.mutable_output()) rename(&name);
    for (std::string& name : *op.mutable_control_input()) rename(&name);
  }
  DOPPIO_ENFORCE(VerifyGraphEquality(net, optimized),
                 "memonger: the recycled net of '", net.name(),
                 "' does not have the original's dependencies (internal error)");
  DOPPIO_ENFORCE(VerifyInplaceBlobs(net, optimized), "memonger: the recycled net of '",
                 net.name(), "' changed which ops run in place (internal error)");
  return optimized;
}

namespace {

size_t DistinctBlobCount(const NetDef& net) {
  std::set<std::string> names;
  for (const OperatorDef& op : net.op()) {
    names.insert(op.input().begin(), op.input().end());
    names.insert(op.output().begin(), op.output().end());
  }
  return names.size();
}

}  // namespace

NetDef ShareGradBlobs(const NetDef& net, const std::vector<std::string>& losses,
                      const std::set<std::string>& param_grads, std::string namescope,
                      const std::set<std::string>& dont_share_blobs, bool share_activations,
                      const BlobShapes& blob_shapes) {
  namescope = WithSlash(namescope);
  auto is_grad_blob = [&](const std::string& name) {
    const bool gradient_name = (name.size() >= 5 && name.compare(name.size() - 5, 5, "_grad") == 0) ||
                               name.find("_grad_autosplit_") != std::string::npos;
    return gradient_name && InNamescope(name, namescope) && !param_grads.count(name);
  };
  RecyclingOptions options;
  options.namescope = namescope;
  options.blob_shapes = blob_shapes;
  options.dont_share_blobs = dont_share_blobs;
  options.dont_share_blobs.insert(losses.begin(), losses.end());
  options.dont_share_blobs.insert(param_grads.begin(), param_grads.end());
  for (const OperatorDef& op : net.op()) {
    for (const auto* names : {&op.input(), &op.output()}) {
      for (const std::string& name : *names) {
        if (is_grad_blob(name)) options.shareable_blobs.insert(name);
      }
    }
  }
  // Caffe2 shares only brew layers' outputs (ops reading "<output>_w"),
  // minus the last two, because its linear liveness cannot tell which
  // activations backward still reads. The DAG liveness here keeps every
  // blob alive until its last reader in every schedule, backward's readers
  // included, so any other blob the net makes is safe to offer: the ones
  // backward reads are recycled only after it, and those it never reads
  // (Sum inputs, a Relu's input whose gradient reads its output) die early.
  // What stays protected is decided in ComputeBlobRecyclingForDag.
  const NetDef gradients_only = ComputeBlobRecyclingForDag(net, options);
  if (!share_activations) return gradients_only;
  for (const OperatorDef& op : net.op()) {
    options.shareable_blobs.insert(op.output().begin(), op.output().end());
  }
  for (const std::string& name : ForwardHeadOutputs(net)) options.dont_share_blobs.insert(name);
  NetDef with_activations = ComputeBlobRecyclingForDag(net, options);
  // The assignment is greedy, so more candidates can pack worse: without
  // shapes to weigh them, keep whichever leaves fewer blobs (Caffe2's
  // promise that sharing activations never adds any).
  if (blob_shapes.empty() &&
      DistinctBlobCount(with_activations) > DistinctBlobCount(gradients_only)) {
    return gradients_only;
  }
  return with_activations;
}

std::set<std::string> ForwardHeadOutputs(const NetDef& net) {
  std::vector<int> forward, layers;
  for (int i = 0; i < net.op_size(); ++i) {
    const OperatorDef& op = net.op(i);
    if (op.is_gradient_op()) continue;
    forward.push_back(i);
    for (const std::string& output : op.output()) {
      if (std::find(op.input().begin(), op.input().end(), output + "_w") != op.input().end()) {
        layers.push_back(i);
        break;
      }
    }
  }
  const std::vector<int>& marks = layers.empty() ? forward : layers;
  if (marks.empty()) return {};
  const int first = marks[marks.size() >= 2 ? marks.size() - 2 : 0];
  std::set<std::string> head;
  for (int i : forward) {
    if (i >= first) head.insert(net.op(i).output().begin(), net.op(i).output().end());
  }
  return head;
}

NetDef OptimizeInferenceForDag(const NetDef& net, const std::vector<std::string>& input_blobs,
                               const std::string& namescope) {
  std::set<std::string> external(net.external_input().begin(), net.external_input().end());
  external.insert(net.external_output().begin(), net.external_output().end());
  RecyclingOptions options;
  options.namescope = namescope;
  options.dont_share_blobs.insert(input_blobs.begin(), input_blobs.end());
  std::set<std::string> made;
  for (const OperatorDef& op : net.op()) {
    DOPPIO_ENFORCE(!op.is_gradient_op(), "optimize_inference_for_dag: net '", net.name(),
                   "' has gradient op ", op.type(), "; pass an inference-only net");
    for (const std::string& name : op.input()) {
      if (external.count(name)) continue;
      DOPPIO_ENFORCE(made.count(name), "optimize_inference_for_dag: net '", net.name(),
                     "': op ", op.type(), " reads blob '", name,
                     "', which is neither an external input nor made by an earlier op");
      options.shareable_blobs.insert(name);
    }
    for (const std::string& name : op.output()) {
      made.insert(name);
      if (!external.count(name)) options.shareable_blobs.insert(name);
    }
  }
  return ComputeBlobRecyclingForDag(net, options);
}

}  // namespace memonger
}  // namespace doppio
