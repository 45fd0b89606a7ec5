#include "parallel/data_parallel_plan.h"

#include <sstream>

namespace doppio {
namespace {

template <typename Names>
std::string Join(const Names& names) {
  std::string joined;
  for (const std::string& name : names) {
    if (!joined.empty()) joined += ", ";
    joined += name;
  }
  return joined;
}

std::string Describe(const OperatorDef& op) {
  return op.name().empty() ? op.type() : op.type() + " '" + op.name() + "'";
}

void PrintAfterOp(const AfterOp& after, std::ostream& out) {
  if (!after.statistics.empty()) {
    out << "    sum over replicas (statistics): " << Join(after.statistics) << "\n";
  }
  if (!after.gradients.empty()) {
    out << "    sum over replicas: " << Join(after.gradients) << "\n";
  }
  for (const std::vector<std::string>& bucket : after.shard_buckets) {
    out << "    sum over shards, one bucket: " << Join(bucket) << "\n";
  }
  for (const SparseGradientSync& sync : after.sparse) {
    out << "    concatenate over replicas: " << sync.slice.indices << ", " << sync.slice.values
        << " -> " << sync.gathered.indices << ", " << sync.gathered.values << "\n";
  }
}

}  // namespace

std::string ParallelPlan::ToString() const {
  std::ostringstream out;
  std::vector<std::string> prefixes;
  for (const Replica& replica : replicas) prefixes.push_back(replica.prefix);
  out << "replicas: " << Join(prefixes) << (distributed ? " (one shard of several)" : "")
      << "\n";
  out << "shared blobs: " << (shared.empty() ? "none" : Join(shared)) << "\n";
  if (!master_params.empty()) {
    out << "params on the first replica only: " << Join(master_params) << "\n";
  }
  out << "training ops: " << num_forward_ops << " forward, "
      << train_ops.size() - num_forward_ops << " backward, " << update_net.op_size()
      << " update";
  if (accumulate_steps > 1) {
    out << "; forward and backward " << accumulate_steps << " times per step (micro-batches)";
    std::vector<std::string> sums;
    for (const auto& entry : accumulators) sums.push_back(entry.first + " -> " + entry.second);
    out << "\naccumulated over micro-batches: " << Join(sums);
    if (!fed_inputs.empty()) {
      out << "\nfed inputs cut into " << accumulate_steps << " micro-batches: "
          << Join(fed_inputs);
    }
  }
  out << "\n";
  if (local_updates) out << "local updates: each replica applies its own gradients\n";
  if (precision.low != DataType::kFloat) out << precision.ToString();
  if (loss_scaling.enabled) {
    out << "dynamic loss scaling from " << loss_scaling.init_scale << ", growing after "
        << loss_scaling.growth_interval << " good steps; updates skipped on overflow\n";
  }
  for (const auto& entry : after_op) {
    out << "  after op " << entry.first << " (" << Describe(train_ops[entry.first]) << "):\n";
    PrintAfterOp(entry.second, out);
  }
  out << "init broadcasts: " << (init_broadcasts.empty() ? "none" : Join(init_broadcasts))
      << "\n";
  return out.str();
}

}  // namespace doppio
