// Grouping blobs into slots (one shared name each) given which blob may
// follow which.
#ifndef DOPPIO_PARALLEL_MEMONGER_ASSIGNMENT_H_
#define DOPPIO_PARALLEL_MEMONGER_ASSIGNMENT_H_

#include <cstdint>
#include <functional>
#include <vector>

namespace doppio {
namespace memonger {

// Candidates in the order they are first written (a topological order), with
// their sizes in elements. may_follow(slot members, c) says whether candidate
// c may reuse a slot whose members are the given candidate indices.
struct AssignmentProblem {
  std::vector<int64_t> sizes;
  std::function<bool(const std::vector<int>&, int)> may_follow;
};

// Slots of candidate indices; every candidate is in exactly one slot.
using Slots = std::vector<std::vector<int>>;

// Each candidate joins the compatible slot whose largest member is closest
// in size, or opens a new slot.
Slots AssignGreedy(const AssignmentProblem& problem);

// The assignment with the least total bytes (sum of slot maxima), by
// exhaustive search with pruning; meant for small nets (DP in Caffe2).
// Falls back to AssignGreedy beyond max_candidates.
Slots AssignOptimal(const AssignmentProblem& problem, int max_candidates = 12);

// Sum over slots of the largest member size.
int64_t SlotsCost(const AssignmentProblem& problem, const Slots& slots);

}  // namespace memonger
}  // namespace doppio

#endif  // DOPPIO_PARALLEL_MEMONGER_ASSIGNMENT_H_
