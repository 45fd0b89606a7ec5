// Memonger passes on small hand-built nets. Safety is checked against an
// independent reference: the test derives the op DAG itself (read after
// write, write after read, write after write), enumerates EVERY topological
// order, and checks that no two blobs sharing a name are ever live at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/enforce.h"
#include "parallel/memonger/assignment.h"
#include "parallel/memonger/memonger.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using memonger::AssignmentProblem;
using memonger::Slots;
using testing::MakeOp;

NetDef MakeNet(const std::vector<OperatorDef>& ops, const std::vector<std::string>& inputs,
               const std::vector<std::string>& outputs) {
  NetDef net;
  net.set_name("memonger_test");
  for (const OperatorDef& op : ops) *net.add_op() = op;
  for (const std::string& name : inputs) net.add_external_input(name);
  for (const std::string& name : outputs) net.add_external_output(name);
  return net;
}

// The reference DAG: op j depends on an earlier op i when j reads what i
// writes, or writes what i reads or writes.
std::vector<std::set<int>> ReferenceParents(const NetDef& net) {
  std::vector<std::set<int>> parents(net.op_size());
  for (int j = 0; j < net.op_size(); ++j) {
    const OperatorDef& b = net.op(j);
    std::set<std::string> b_reads(b.input().begin(), b.input().end());
    std::set<std::string> b_writes(b.output().begin(), b.output().end());
    for (int i = 0; i < j; ++i) {
      const OperatorDef& a = net.op(i);
      for (const std::string& w : a.output()) {
        if (b_reads.count(w) || b_writes.count(w)) parents[j].insert(i);
      }
      for (const std::string& r : a.input()) {
        if (b_writes.count(r)) parents[j].insert(i);
      }
    }
  }
  return parents;
}

void ForEachTopologicalOrder(const std::vector<std::set<int>>& parents,
                             const std::function<void(const std::vector<int>&)>& visit) {
  const int n = static_cast<int>(parents.size());
  std::vector<int> order;
  std::vector<bool> placed(n, false);
  std::function<void()> extend = [&] {
    if (static_cast<int>(order.size()) == n) {
      visit(order);
      return;
    }
    for (int op = 0; op < n; ++op) {
      if (placed[op]) continue;
      bool ready = true;
      for (int p : parents[op]) ready = ready && placed[p];
      if (!ready) continue;
      placed[op] = true;
      order.push_back(op);
      extend();
      order.pop_back();
      placed[op] = false;
    }
  };
  extend();
}

// For the ORIGINAL net's blobs: under every schedule of the original DAG,
// blobs given the same name by `renamed` must have disjoint live spans
// [first access, last access]. Returns the number of schedules checked.
int ExpectNoOverlapInAnySchedule(const NetDef& original, const NetDef& optimized) {
  std::map<std::string, std::string> new_name;
  std::map<std::string, std::set<int>> accesses;
  for (int i = 0; i < original.op_size(); ++i) {
    const OperatorDef& a = original.op(i);
    const OperatorDef& b = optimized.op(i);
    for (int k = 0; k < a.input_size(); ++k) {
      new_name[a.input(k)] = b.input(k);
      accesses[a.input(k)].insert(i);
    }
    for (int k = 0; k < a.output_size(); ++k) {
      new_name[a.output(k)] = b.output(k);
      accesses[a.output(k)].insert(i);
    }
  }
  int schedules = 0;
  ForEachTopologicalOrder(ReferenceParents(original), [&](const std::vector<int>& order) {
    ++schedules;
    std::vector<int> position(order.size());
    for (size_t p = 0; p < order.size(); ++p) position[order[p]] = static_cast<int>(p);
    for (const auto& x : accesses) {
      for (const auto& y : accesses) {
        if (x.first >= y.first || new_name[x.first] != new_name[y.first]) continue;
        int x_lo = 1 << 30, x_hi = -1, y_lo = 1 << 30, y_hi = -1;
        for (int op : x.second) x_lo = std::min(x_lo, position[op]), x_hi = std::max(x_hi, position[op]);
        for (int op : y.second) y_lo = std::min(y_lo, position[op]), y_hi = std::max(y_hi, position[op]);
        EXPECT_TRUE(x_hi < y_lo || y_hi < x_lo)
            << x.first << " and " << y.first << " share '" << new_name[x.first]
            << "' but are live together in some schedule";
      }
    }
  });
  return schedules;
}

std::set<std::string> DistinctBlobs(const NetDef& net) {
  std::set<std::string> names;
  for (const OperatorDef& op : net.op()) {
    names.insert(op.input().begin(), op.input().end());
    names.insert(op.output().begin(), op.output().end());
  }
  return names;
}

memonger::RecyclingOptions ShareAll(const NetDef& net) {
  memonger::RecyclingOptions options;
  options.shareable_blobs = DistinctBlobs(net);
  return options;
}

TEST(MemongerTest, DiamondIsNotSharedAlthoughLinearLivenessWould) {
  // In op order, a dies at op 1 and c is born at op 2, so a linear-order
  // memonger would give them one name; but op 2 only needs x and the dag
  // executor may run it before or between ops 0 and 1.
  const NetDef net = MakeNet({MakeOp("Relu", {"x"}, {"a"}), MakeOp("Relu", {"a"}, {"b"}),
                              MakeOp("Relu", {"x"}, {"c"}), MakeOp("Sum", {"b", "c"}, {"d"})},
                             {"x"}, {"d"});
  for (auto algorithm : {memonger::AssignmentAlgorithm::kGreedy,
                         memonger::AssignmentAlgorithm::kDynamicProgramming}) {
    memonger::RecyclingOptions options = ShareAll(net);
    options.algorithm = algorithm;
    const NetDef optimized = memonger::ComputeBlobRecyclingForDag(net, options);
    EXPECT_EQ(optimized.SerializeAsString(), net.SerializeAsString());
    EXPECT_EQ(ExpectNoOverlapInAnySchedule(net, optimized), 3);
  }
}

TEST(MemongerTest, ChainSharesAndStaysSafeInEverySchedule) {
  const NetDef net = MakeNet(
      {MakeOp("Relu", {"x"}, {"a"}), MakeOp("Relu", {"a"}, {"b"}), MakeOp("Relu", {"b"}, {"c"}),
       MakeOp("Relu", {"c"}, {"d"}), MakeOp("Relu", {"d"}, {"e"}), MakeOp("Relu", {"x"}, {"f"}),
       MakeOp("Sum", {"e", "f"}, {"y"})},
      {"x"}, {"y"});
  const NetDef optimized = memonger::ComputeBlobRecyclingForDag(net, ShareAll(net));
  // a, c, e can take one name and b, d another; f runs in parallel with
  // the whole chain, so it must keep its own.
  EXPECT_EQ(optimized.op(0).output(0), "__m0_shared");
  EXPECT_EQ(optimized.op(2).output(0), "__m0_shared");
  EXPECT_EQ(optimized.op(4).output(0), "__m0_shared");
  EXPECT_EQ(optimized.op(1).output(0), "__m1_shared");
  EXPECT_EQ(optimized.op(3).output(0), "__m1_shared");
  EXPECT_EQ(optimized.op(5).output(0), "f");
  EXPECT_EQ(DistinctBlobs(optimized).size(), DistinctBlobs(net).size() - 3);
  EXPECT_GT(ExpectNoOverlapInAnySchedule(net, optimized), 1);
  EXPECT_TRUE(memonger::VerifyGraphEquality(net, optimized));
  EXPECT_TRUE(memonger::VerifyInplaceBlobs(net, optimized));
}

TEST(MemongerTest, ControlInputsAndWriteAfterReadKeepBlobsApart) {
  // op 2 writes c and reads only x, but a control_input on b orders it after
  // op 1; without that edge a and c could not share.
  OperatorDef late = MakeOp("Relu", {"x"}, {"c"});
  late.add_control_input("b");
  const NetDef with_edge = MakeNet({MakeOp("Relu", {"x"}, {"a"}), MakeOp("Relu", {"a"}, {"b"}),
                                    late, MakeOp("Sum", {"b", "c"}, {"d"})},
                                   {"x"}, {"d"});
  const NetDef shared = memonger::ComputeBlobRecyclingForDag(with_edge, ShareAll(with_edge));
  EXPECT_EQ(shared.op(0).output(0), shared.op(2).output(0));
  EXPECT_EQ(shared.op(2).control_input(0), shared.op(1).output(0));
}

TEST(MemongerTest, ShareGradBlobsNeverTouchesProtectedBlobs) {
  // A two-layer backward pass in namescope cpu_0/.
  const NetDef net = MakeNet(
      {MakeOp("FC", {"cpu_0/x", "cpu_0/w1", "cpu_0/b1"}, {"cpu_0/h"}),
       MakeOp("Relu", {"cpu_0/h"}, {"cpu_0/r"}),
       MakeOp("FC", {"cpu_0/r", "cpu_0/w2", "cpu_0/b2"}, {"cpu_0/o"}),
       MakeOp("AveragedLoss", {"cpu_0/o"}, {"cpu_0/loss"}),
       MakeOp("ConstantFill", {"cpu_0/loss"}, {"cpu_0/loss_grad"}),
       MakeOp("AveragedLossGradient", {"cpu_0/o", "cpu_0/loss_grad"}, {"cpu_0/o_grad"}),
       MakeOp("FCGradient", {"cpu_0/r", "cpu_0/w2", "cpu_0/o_grad"},
              {"cpu_0/w2_grad", "cpu_0/b2_grad", "cpu_0/r_grad"}),
       MakeOp("ReluGradient", {"cpu_0/r", "cpu_0/r_grad"}, {"cpu_0/h_grad"}),
       MakeOp("FCGradient", {"cpu_0/x", "cpu_0/w1", "cpu_0/h_grad"},
              {"cpu_0/w1_grad", "cpu_0/b1_grad", "cpu_0/x_grad"}),
       MakeOp("Relu", {"cpu_0/keep_grad_src"}, {"cpu_0/keep_grad"}),
       MakeOp("Relu", {"cpu_1/a_grad"}, {"cpu_1/b_grad"})},
      {"cpu_0/x", "cpu_0/w1", "cpu_0/b1", "cpu_0/w2", "cpu_0/b2", "cpu_0/keep_grad_src",
       "cpu_1/a_grad"},
      {"cpu_0/x_grad"});
  const std::set<std::string> param_grads = {"cpu_0/w1_grad", "cpu_0/b1_grad", "cpu_0/w2_grad",
                                             "cpu_0/b2_grad"};
  const NetDef optimized = memonger::ShareGradBlobs(
      net, {"cpu_0/loss"}, param_grads, "cpu_0", {"cpu_0/keep_grad"}, false, {});
  const std::set<std::string> after = DistinctBlobs(optimized);
  for (const std::string& name :
       {"cpu_0/x", "cpu_0/w1", "cpu_0/b1", "cpu_0/w2", "cpu_0/b2", "cpu_0/w1_grad",
        "cpu_0/b1_grad", "cpu_0/w2_grad", "cpu_0/b2_grad", "cpu_0/loss", "cpu_0/x_grad",
        "cpu_0/keep_grad", "cpu_1/b_grad", "cpu_0/h", "cpu_0/r", "cpu_0/o"}) {
    EXPECT_TRUE(after.count(name)) << name << " was renamed";
  }
  // loss_grad (dead after op 5) and h_grad (born at op 7) may share; so may
  // o_grad and h_grad. Some gradient must have been recycled.
  EXPECT_LT(after.size(), DistinctBlobs(net).size());
  bool renamed_some = false;
  for (const std::string& name : after) renamed_some |= name.rfind("cpu_0/__m", 0) == 0;
  EXPECT_TRUE(renamed_some);
  ExpectNoOverlapInAnySchedule(net, optimized);
}

TEST(MemongerTest, ShareActivationsRecyclesForwardBlobsBackwardNeverReads) {
  // A residual step: h + x -> s -> Relu -> r. Backward reads r (Relu's
  // gradient reads its output) but never h or s, so with share_activations
  // h's storage can be reused for r, while r must outlive ReluGradient.
  const NetDef net = MakeNet(
      {MakeOp("FC", {"x", "w", "b"}, {"h"}),
       MakeOp("Sum", {"h", "x"}, {"s"}),
       MakeOp("Relu", {"s"}, {"r"}),
       MakeOp("AveragedLoss", {"r"}, {"loss"}),
       MakeOp("ConstantFill", {"loss"}, {"loss_grad"}),
       MakeOp("AveragedLossGradient", {"r", "loss_grad"}, {"r_grad"}),
       MakeOp("ReluGradient", {"r", "r_grad"}, {"s_grad"}),
       MakeOp("FCGradient", {"x", "w", "s_grad"}, {"w_grad", "b_grad", "x_grad"})},
      {"x", "w", "b"}, {"x_grad"});
  const std::set<std::string> param_grads = {"w_grad", "b_grad"};
  const NetDef grads_only =
      memonger::ShareGradBlobs(net, {"loss"}, param_grads, "", {}, false, {});
  for (const std::string& name : {"h", "s", "r"}) {
    EXPECT_TRUE(DistinctBlobs(grads_only).count(name)) << name << " renamed without "
                                                       << "share_activations";
  }
  const NetDef shared = memonger::ShareGradBlobs(net, {"loss"}, param_grads, "", {}, true, {});
  const std::set<std::string> after = DistinctBlobs(shared);
  for (const std::string& name : {"x", "w", "b", "loss", "w_grad", "b_grad", "x_grad"}) {
    EXPECT_TRUE(after.count(name)) << name << " was renamed";
  }
  // The FC output is dead once Sum has read it; Relu's output is born
  // after that, so the first free slot takes both.
  EXPECT_EQ(shared.op(0).output(0), shared.op(2).output(0));
  EXPECT_EQ(shared.op(0).output(0).rfind("__m", 0), 0u);
  EXPECT_LT(after.size(), DistinctBlobs(grads_only).size());
  ExpectNoOverlapInAnySchedule(net, shared);
  EXPECT_TRUE(memonger::VerifyInplaceBlobs(net, shared));
}

TEST(MemongerTest, GreedyAndDpGiveValidAssignmentsAndDpIsCheaper) {
  // Candidate 1 and 2 may each follow 0, not each other. Greedy puts 1
  // (size 1) after 0 (size 10), then 2 (size 10) needs a slot of its own:
  // 20 elements. The best is {0, 2}, {1}: 11.
  AssignmentProblem problem;
  problem.sizes = {10, 1, 10};
  const std::vector<std::set<int>> allowed = {{}, {0}, {0}};
  problem.may_follow = [&](const std::vector<int>& slot, int c) {
    for (int member : slot) {
      if (!allowed[c].count(member)) return false;
    }
    return true;
  };
  auto expect_valid = [&](const Slots& slots) {
    std::vector<int> seen(problem.sizes.size(), 0);
    for (const std::vector<int>& slot : slots) {
      for (size_t k = 0; k < slot.size(); ++k) {
        ++seen[slot[k]];
        for (size_t m = 0; m < k; ++m) EXPECT_TRUE(allowed[slot[k]].count(slot[m]));
      }
    }
    for (int count : seen) EXPECT_EQ(count, 1);
  };
  const Slots greedy = memonger::AssignGreedy(problem);
  const Slots optimal = memonger::AssignOptimal(problem);
  expect_valid(greedy);
  expect_valid(optimal);
  EXPECT_EQ(memonger::SlotsCost(problem, greedy), 20);
  EXPECT_EQ(memonger::SlotsCost(problem, optimal), 11);
}

TEST(MemongerTest, SizeAwareGreedyPicksTheClosestSlot) {
  // Two free slots of 100 and 8 elements when e (8 elements) is written:
  // it goes with the 8-element one.
  const NetDef net = MakeNet({MakeOp("Relu", {"x"}, {"big"}), MakeOp("Relu", {"y"}, {"small"}),
                              MakeOp("Sum", {"big", "small"}, {"s"}),
                              MakeOp("Relu", {"s"}, {"e"}), MakeOp("Relu", {"e"}, {"out"})},
                             {"x", "y"}, {"out"});
  memonger::RecyclingOptions options;
  options.shareable_blobs = {"big", "small", "e"};
  options.blob_shapes = {{"big", {10, 10}}, {"small", {8}}, {"e", {2, 4}}};
  const NetDef optimized = memonger::ComputeBlobRecyclingForDag(net, options);
  EXPECT_EQ(optimized.op(3).output(0), optimized.op(1).output(0));
  EXPECT_EQ(optimized.op(0).output(0), "big");
  ExpectNoOverlapInAnySchedule(net, optimized);
}

TEST(MemongerTest, ForwardHeadStartsAtTheSecondToLastLayer) {
  NetDef net =
      MakeNet({MakeOp("FC", {"x", "fc1_w", "fc1_b"}, {"fc1"}),
               MakeOp("FC", {"fc1", "fc2_w", "fc2_b"}, {"fc2"}), MakeOp("Relu", {"fc2"}, {"r"}),
               MakeOp("FC", {"r", "fc3_w", "fc3_b"}, {"fc3"}), MakeOp("Softmax", {"fc3"}, {"pred"}),
               MakeOp("ReluGradient", {"r", "r_grad"}, {"fc2_grad"})},
              {"x"}, {});
  net.mutable_op(5)->set_is_gradient_op(true);
  EXPECT_EQ(memonger::ForwardHeadOutputs(net), (std::set<std::string>{"fc2", "r", "fc3", "pred"}));
  // Without brew layers, the last two forward ops.
  const NetDef plain = MakeNet(
      {MakeOp("Relu", {"x"}, {"a"}), MakeOp("Relu", {"a"}, {"b"}), MakeOp("Relu", {"b"}, {"c"})},
      {"x"}, {});
  EXPECT_EQ(memonger::ForwardHeadOutputs(plain), (std::set<std::string>{"b", "c"}));
  EXPECT_TRUE(memonger::ForwardHeadOutputs(MakeNet({}, {}, {})).empty());
}

TEST(MemongerTest, VerifyCatchesBrokenRewrites) {
  const NetDef net = MakeNet({MakeOp("Relu", {"x"}, {"a"}), MakeOp("Relu", {"a"}, {"b"}),
                              MakeOp("Relu", {"x"}, {"c"}), MakeOp("Sum", {"b", "c"}, {"d"})},
                             {"x"}, {"d"});
  // Op 1 reading c instead of a: same ops, but a different producer.
  NetDef wrong_producer = net;
  wrong_producer.mutable_op(1)->set_input(0, "c");
  EXPECT_FALSE(memonger::VerifyGraphEquality(net, wrong_producer));
  EXPECT_TRUE(memonger::VerifyInplaceBlobs(net, wrong_producer));

  // Renaming b to a makes op 1 in place.
  NetDef made_inplace = net;
  made_inplace.mutable_op(1)->set_output(0, "a");
  made_inplace.mutable_op(3)->set_input(0, "a");
  EXPECT_TRUE(memonger::VerifyGraphEquality(net, made_inplace));
  EXPECT_FALSE(memonger::VerifyInplaceBlobs(net, made_inplace));

  NetDef other_type = net;
  other_type.mutable_op(2)->set_type("Sigmoid");
  EXPECT_FALSE(memonger::VerifyGraphEquality(net, other_type));
  EXPECT_FALSE(memonger::VerifyInplaceBlobs(net, other_type));
}

TEST(MemongerTest, OptimizeInferenceForDagRejectsBadNets) {
  const NetDef reads_unknown = MakeNet({MakeOp("Relu", {"ghost"}, {"a"})}, {"x"}, {"a"});
  EXPECT_THROW(memonger::OptimizeInferenceForDag(reads_unknown, {"x"}, ""), Error);
  NetDef training = MakeNet({MakeOp("Relu", {"x"}, {"a"})}, {"x"}, {"a"});
  training.mutable_op(0)->set_is_gradient_op(true);
  EXPECT_THROW(memonger::OptimizeInferenceForDag(training, {"x"}, ""), Error);
}

TEST(MemongerTest, ReleaseBlobsWhenUsedFreesAfterLastReader) {
  const NetDef net = MakeNet(
      {MakeOp("Relu", {"x"}, {"a"}), MakeOp("Relu", {"a"}, {"b"}), MakeOp("Relu", {"a"}, {"c"}),
       MakeOp("Sum", {"b", "c"}, {"d"}), MakeOp("Relu", {"d"}, {"y"})},
      {"x"}, {"y"});
  const NetDef released = memonger::ReleaseBlobsWhenUsed(net, {"c"});
  std::vector<std::string> listing;
  for (const OperatorDef& op : released.op()) {
    std::string line = op.type();
    for (const std::string& name : op.input()) line += " " + name;
    listing.push_back(line);
  }
  // x is an external input, y an external output and c is kept; a dies at
  // op 2, b at op 3 and d at op 4.
  const std::vector<std::string> expected = {"Relu x", "Relu a", "Relu a", "Free a",
                                             "Sum b c", "Free b", "Relu d", "Free d"};
  EXPECT_EQ(listing, expected);
  for (const OperatorDef& op : released.op()) {
    if (op.type() == "Free") EXPECT_EQ(op.input(0), op.output(0));
  }
}

}  // namespace
}  // namespace doppio
