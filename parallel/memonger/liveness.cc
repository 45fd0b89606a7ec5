#include "parallel/memonger/liveness.h"

#include "core/net_dag.h"

namespace doppio {
namespace memonger {

OpAncestry::OpAncestry(const NetDef& net) : num_ops_(net.op_size()) {
  words_per_op_ = (num_ops_ + 63) / 64;
  bits_.assign(static_cast<size_t>(num_ops_) * words_per_op_, 0);
  // The executor's own dependency rules, so the analysis cannot disagree
  // with what the dag net may actually run concurrently.
  const std::vector<std::vector<int>> parents = OpDependencies(net);
  // Parents always have smaller indices, so one forward sweep closes the set.
  for (int op = 0; op < num_ops_; ++op) {
    uint64_t* row = &bits_[static_cast<size_t>(op) * words_per_op_];
    for (int parent : parents[op]) {
      row[parent / 64] |= uint64_t{1} << (parent % 64);
      const uint64_t* parent_row = &bits_[static_cast<size_t>(parent) * words_per_op_];
      for (int w = 0; w < words_per_op_; ++w) row[w] |= parent_row[w];
    }
  }
}

bool OpAncestry::IsAncestor(int ancestor, int op) const {
  if (ancestor < 0 || op < 0 || ancestor >= num_ops_ || op >= num_ops_) return false;
  const uint64_t word = bits_[static_cast<size_t>(op) * words_per_op_ + ancestor / 64];
  return (word >> (ancestor % 64)) & 1;
}

std::map<std::string, BlobUse> CollectBlobUses(const NetDef& net) {
  std::map<std::string, BlobUse> uses;
  auto note = [&](const std::string& name, int op, bool is_write) {
    BlobUse& use = uses[name];
    if (use.first_access < 0) {
      use.first_access = op;
      use.first_access_is_write = is_write;
    }
    if (use.accesses.empty() || use.accesses.back() != op) use.accesses.push_back(op);
  };
  for (int i = 0; i < net.op_size(); ++i) {
    const OperatorDef& op = net.op(i);
    // Reads first: an in-place op reads its blob before writing it.
    for (const std::string& name : op.input()) note(name, i, false);
    for (const std::string& name : op.control_input()) note(name, i, false);
    for (const std::string& name : op.output()) note(name, i, true);
  }
  return uses;
}

}  // namespace memonger
}  // namespace doppio
