// What blob recycling needs to know about a net: the executor's op DAG with
// its transitive closure, and where each blob is touched.
#ifndef DOPPIO_PARALLEL_MEMONGER_LIVENESS_H_
#define DOPPIO_PARALLEL_MEMONGER_LIVENESS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "proto/doppio.pb.h"

namespace doppio {
namespace memonger {

// Ancestor sets of every op in the dag executor's dependency graph.
class OpAncestry {
 public:
  explicit OpAncestry(const NetDef& net);
  // True when `ancestor` must finish before `op` starts in every schedule.
  bool IsAncestor(int ancestor, int op) const;
  int num_ops() const { return num_ops_; }

 private:
  int num_ops_ = 0;
  int words_per_op_ = 0;
  std::vector<uint64_t> bits_;  // row per op: bit j set = op j is an ancestor
};

struct BlobUse {
  int first_access = -1;  // op index of the first read or write
  bool first_access_is_write = false;
  // Every op that reads, writes or waits on (control_input) the blob.
  std::vector<int> accesses;
};

// Blob name -> its uses, over inputs, outputs and control inputs.
std::map<std::string, BlobUse> CollectBlobUses(const NetDef& net);

}  // namespace memonger
}  // namespace doppio

#endif  // DOPPIO_PARALLEL_MEMONGER_LIVENESS_H_
