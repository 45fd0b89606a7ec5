#include "parallel/memonger/assignment.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

namespace doppio {
namespace memonger {
namespace {

int64_t SlotMax(const AssignmentProblem& problem, const std::vector<int>& slot) {
  int64_t best = 0;
  for (int member : slot) best = std::max(best, problem.sizes[member]);
  return best;
}

// Depth-first over candidates: each goes into any compatible slot or a new
// one; branches already costlier than the best found are cut.
void Search(const AssignmentProblem& problem, int next, Slots* current, int64_t cost,
            Slots* best, int64_t* best_cost) {
  if (cost >= *best_cost) return;
  const int n = static_cast<int>(problem.sizes.size());
  if (next == n) {
    *best = *current;
    *best_cost = cost;
    return;
  }
  const int64_t size = problem.sizes[next];
  for (size_t s = 0; s < current->size(); ++s) {
    // Indexed, not by reference: deeper levels may grow `current`.
    if (!problem.may_follow((*current)[s], next)) continue;
    const int64_t old_max = SlotMax(problem, (*current)[s]);
    (*current)[s].push_back(next);
    Search(problem, next + 1, current, cost + std::max<int64_t>(0, size - old_max), best,
           best_cost);
    (*current)[s].pop_back();
  }
  current->push_back({next});
  Search(problem, next + 1, current, cost + size, best, best_cost);
  current->pop_back();
}

}  // namespace

int64_t SlotsCost(const AssignmentProblem& problem, const Slots& slots) {
  int64_t total = 0;
  for (const std::vector<int>& slot : slots) total += SlotMax(problem, slot);
  return total;
}

Slots AssignGreedy(const AssignmentProblem& problem) {
  Slots slots;
  const int n = static_cast<int>(problem.sizes.size());
  for (int c = 0; c < n; ++c) {
    int chosen = -1;
    int64_t closest = std::numeric_limits<int64_t>::max();
    for (size_t s = 0; s < slots.size(); ++s) {
      if (!problem.may_follow(slots[s], c)) continue;
      const int64_t distance = std::llabs(SlotMax(problem, slots[s]) - problem.sizes[c]);
      if (distance < closest) {
        closest = distance;
        chosen = static_cast<int>(s);
      }
    }
    if (chosen < 0) {
      slots.push_back({c});
    } else {
      slots[chosen].push_back(c);
    }
  }
  return slots;
}

Slots AssignOptimal(const AssignmentProblem& problem, int max_candidates) {
  Slots greedy = AssignGreedy(problem);
  if (static_cast<int>(problem.sizes.size()) > max_candidates) return greedy;
  // Greedy's cost bounds the search from the start.
  Slots best = greedy;
  int64_t best_cost = SlotsCost(problem, greedy);
  Slots current;
  Search(problem, 0, &current, 0, &best, &best_cost);
  return best;
}

}  // namespace memonger
}  // namespace doppio
