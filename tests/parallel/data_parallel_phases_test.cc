// Each phase of the Parallelize pass on its own (parallel/data_parallel_phases.h):
// the plan is checked as a value, against what the template and options say,
// before anything is emitted; the emitters are checked against a plan.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/backward.h"
#include "parallel/collective_schedule.h"
#include "parallel/data_parallel_phases.h"
#include "tests/parallel/mlp_template.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::IntsArg;
using testing::kParams;
using testing::MakeOp;
using testing::MlpTemplate;
using testing::TwoDevices;

int IndexOfOutput(const std::vector<OperatorDef>& ops, const std::string& blob) {
  int last = -1;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    const auto& outputs = ops[i].output();
    if (std::find(outputs.begin(), outputs.end(), blob) != outputs.end()) last = i;
  }
  return last;
}

TEST(ParallelizePhasesTest, ReplicasFollowTheDeviceOrderAndType) {
  ParallelizeOptions options;
  options.devices = {3, 1};
  options.device_type = CUDA;
  const std::vector<Replica> replicas = PlanReplicas(options);
  ASSERT_EQ(replicas.size(), 2u);
  EXPECT_EQ(replicas[0].prefix, "gpu_3/");
  EXPECT_EQ(replicas[1].prefix, "gpu_1/");
  EXPECT_EQ(replicas[1].device_option.device_type(), CUDA);
  EXPECT_EQ(replicas[1].device_option.cuda_gpu_id(), 1);
}

TEST(ParallelizePhasesTest, DevicePrefixOfFindsOnlyWholePrefixes) {
  EXPECT_EQ(DevicePrefixOf(CPU, "cpu_12/fc_w"), "cpu_12/");
  EXPECT_EQ(DevicePrefixOf(CUDA, "gpu_0/a/b"), "gpu_0/");
  EXPECT_EQ(DevicePrefixOf(CPU, "gpu_0/fc_w"), "");
  EXPECT_EQ(DevicePrefixOf(CPU, "cpu_/x"), "");
  EXPECT_EQ(DevicePrefixOf(CPU, "cpu_1x/y"), "");
  EXPECT_EQ(DevicePrefixOf(CPU, "cpu_1"), "");
  EXPECT_EQ(DevicePrefixOf(CPU, "fc_w"), "");
}

TEST(ParallelizePhasesTest, GradientsComeFromTheBackwardPassOnce) {
  const DataParallelTemplate model = MlpTemplate();
  ParallelPlan plan;
  PlanGradients(model, &plan);
  const BackwardResult backward = AddGradientOperators(model.net, model.losses);
  EXPECT_EQ(plan.num_forward_ops, model.net.op_size());
  ASSERT_EQ(plan.train_ops.size(), model.net.op_size() + backward.ops.size());
  for (const std::string& param : kParams) {
    EXPECT_EQ(plan.param_to_grad.at(param), backward.gradients.at(param).dense) << param;
  }

  // A template that carries its backward is taken as it is: the pass does
  // not run the backward pass again (a marker op shows which ops it used).
  DataParallelTemplate carried = MlpTemplate();
  BackwardResult given = backward;
  given.ops.push_back(MakeOp("Copy", {"w1_grad"}, {"marker"}));
  carried.backward = given;
  ParallelPlan from_carried;
  PlanGradients(carried, &from_carried);
  EXPECT_EQ(from_carried.train_ops.back().output(0), "marker");
  EXPECT_EQ(from_carried.param_to_grad, plan.param_to_grad);
}

TEST(ParallelizePhasesTest, NoLossesMeansNoBackward) {
  DataParallelTemplate model = MlpTemplate();
  model.losses.clear();
  model.param_update_net.clear_op();
  ParallelPlan plan;
  PlanGradients(model, &plan);
  EXPECT_EQ(plan.train_ops.size(), static_cast<size_t>(model.net.op_size()));
  EXPECT_TRUE(plan.param_to_grad.empty());
}

TEST(ParallelizePhasesTest, DenseReductionsFollowTheLastTouchInReverseFirstUse) {
  const DataParallelTemplate model = MlpTemplate();
  const ParallelPlan plan = PlanParallelize(model, TwoDevices());
  // Every gradient is summed once, right after the op that last touches it.
  std::set<std::string> summed;
  for (const auto& entry : plan.after_op) {
    for (const std::string& grad : entry.second.gradients) {
      EXPECT_TRUE(summed.insert(grad).second) << grad << " summed twice";
      int last = -1;
      for (int i = 0; i < static_cast<int>(plan.train_ops.size()); ++i) {
        const OperatorDef& op = plan.train_ops[i];
        for (const auto* names : {&op.input(), &op.output()}) {
          if (std::find(names->begin(), names->end(), grad) != names->end()) last = i;
        }
      }
      EXPECT_EQ(entry.first, last) << grad;
    }
    EXPECT_TRUE(entry.second.shard_buckets.empty());
    EXPECT_TRUE(entry.second.sparse.empty());
  }
  EXPECT_EQ(summed, (std::set<std::string>{"w1_grad", "b1_grad", "w2_grad", "b2_grad"}));
  // The second layer's gradients are made first by backward: summed first.
  EXPECT_LT(IndexOfOutput(plan.train_ops, "w2_grad"), IndexOfOutput(plan.train_ops, "w1_grad"));
  EXPECT_LT(plan.after_op.begin()->first, plan.after_op.rbegin()->first);
}

TEST(ParallelizePhasesTest, OneDeviceNeedsNoReductionOrBroadcast) {
  ParallelizeOptions options = TwoDevices();
  options.devices = {2};
  const ParallelPlan plan = PlanParallelize(MlpTemplate(), options);
  EXPECT_TRUE(plan.after_op.empty());
  EXPECT_TRUE(plan.init_broadcasts.empty());
}

TEST(ParallelizePhasesTest, InitBroadcastsTheParamsTheInitNetMakes) {
  DataParallelTemplate model = MlpTemplate();
  model.computed_params = {"w1", "not_made_by_init"};  // w1 listed twice
  const ParallelPlan plan = PlanParallelize(model, TwoDevices());
  EXPECT_EQ(plan.init_broadcasts, kParams);  // shared ONE / lr and unmade blobs left out
  EXPECT_TRUE(plan.init_master_only.empty());
}

TEST(ParallelizePhasesTest, BucketsAcrossShards) {
  ParallelizeOptions options = TwoDevices();
  options.rendezvous.num_shards = 2;
  options.rendezvous.kv_handler = "store";
  options.rendezvous.bucket_cap_mb = 0;  // one bucket per gradient
  const ParallelPlan plan = PlanParallelize(MlpTemplate(), options);
  EXPECT_TRUE(plan.distributed);
  int buckets = 0;
  for (const auto& entry : plan.after_op) {
    for (const auto& bucket : entry.second.shard_buckets) {
      ASSERT_EQ(bucket.size(), 1u);
      const auto& local = entry.second.gradients;
      EXPECT_NE(std::find(local.begin(), local.end(), bucket[0]), local.end())
          << bucket[0] << " crosses the shards right after its local sum";
      ++buckets;
    }
  }
  EXPECT_EQ(buckets, 4);
}

TEST(ParallelizePhasesTest, PlanPrintsWhatItDecided) {
  const ParallelPlan plan = PlanParallelize(MlpTemplate(), TwoDevices());
  const std::string text = plan.ToString();
  EXPECT_NE(text.find("replicas: cpu_0/, cpu_3/"), std::string::npos) << text;
  EXPECT_NE(text.find("shared blobs: ONE, lr"), std::string::npos) << text;
  EXPECT_NE(text.find("sum over replicas: w2_grad"), std::string::npos) << text;
  EXPECT_NE(text.find("init broadcasts: w1, b1, w2, b2"), std::string::npos) << text;
}

TEST(ParallelizePhasesTest, EmittersFollowThePlan) {
  const DataParallelTemplate model = MlpTemplate();
  const ParallelizeOptions options = TwoDevices();
  ParallelPlan plan = PlanParallelize(model, options);
  // Drop every reduction but one: the emitter adds exactly what is planned.
  const auto kept = *plan.after_op.begin();
  plan.after_op = {{kept.first, kept.second}};
  const NetDef net = EmitTrainNet(plan, model, options);
  int allreduces = 0;
  for (const OperatorDef& op : net.op()) allreduces += op.type() == "Allreduce";
  EXPECT_EQ(allreduces, static_cast<int>(kept.second.gradients.size()));

  plan.init_broadcasts = {"b2"};
  const NetDef init = EmitInitNet(plan, model, options);
  int broadcasts = 0;
  for (const OperatorDef& op : init.op()) {
    if (op.type() != "Broadcast") continue;
    ++broadcasts;
    EXPECT_EQ(op.input(0), "cpu_0/b2");
  }
  EXPECT_EQ(broadcasts, 1);
}

TEST(ParallelizePhasesTest, ParamsNoLossDependsOnAreRefusedByName) {
  DataParallelTemplate model = MlpTemplate();
  // A layer built but never wired into the loss.
  *model.param_init_net.add_op() = MakeOp("XavierFill", {}, {"w3"}, {IntsArg("shape", {2, 5})});
  *model.net.add_op() = MakeOp("FC", {"h", "w3", "b1"}, {"dangling"});
  model.params.push_back("w3");
  EXPECT_EQ(ParamsNoLossDependsOn(model), std::vector<std::string>{"w3"});
  ParallelPlan plan;
  EXPECT_THROW(PlanGradients(model, &plan), InvalidArgumentError);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { PlanParallelize(model, TwoDevices()); }),
                     "parameter 'w3' gets no gradient",
                        "no loss of net 'mlp' depends on it", "'avg_loss'", "StopGradient");
}

TEST(ParallelizePhasesTest, ParamsFrozenBehindStopGradientAreLeftOut) {
  DataParallelTemplate model = MlpTemplate();
  // Detectron's FREEZE_AT: the first layer's output goes through StopGradient.
  OperatorDef stop = MakeOp("StopGradient", {"h"}, {"h"});
  model.net.mutable_op()->Add(std::move(stop));
  for (int i = model.net.op_size() - 1; i > 1; --i) model.net.mutable_op()->SwapElements(i, i - 1);
  ASSERT_EQ(model.net.op(1).type(), "StopGradient");
  model.param_update_net.clear_op();  // w1 and b1 have no gradient to update with
  EXPECT_TRUE(ParamsNoLossDependsOn(model).empty());
  const ParallelPlan plan = PlanParallelize(model, TwoDevices());
  EXPECT_EQ(plan.param_to_grad.count("w1"), 0u);
  EXPECT_EQ(plan.param_to_grad.count("b1"), 0u);
  EXPECT_EQ(plan.param_to_grad.count("w2"), 1u);
}

TEST(ParallelizePhasesTest, AccumulationPlansAnAccumulatorPerGradient) {
  ParallelizeOptions options = TwoDevices();
  options.accumulate_steps = 3;
  const ParallelPlan plan = PlanParallelize(MlpTemplate(), options);
  EXPECT_EQ(plan.accumulate_steps, 3);
  ASSERT_EQ(plan.accumulators.size(), 4u);
  EXPECT_EQ(plan.accumulators.at("w1_grad"), "w1_grad_accumulated");
  const std::string text = plan.ToString();
  EXPECT_NE(text.find("forward and backward 3 times per step"), std::string::npos) << text;
  EXPECT_NE(text.find("accumulated over micro-batches: b1_grad -> b1_grad_accumulated"),
            std::string::npos) << text;

  DataParallelTemplate taken = MlpTemplate();
  *taken.param_init_net.add_op() =
      MakeOp("ConstantFill", {}, {"w2_grad_accumulated"}, {IntsArg("shape", {1})});
  EXPECT_MESSAGE_HAS(ErrorOf([&] { PlanParallelize(taken, options); }),
                     "blob 'w2_grad_accumulated' already exists");
}

// The loop op of `net`, or null.
const OperatorDef* FindLoop(const NetDef& net) {
  for (const OperatorDef& op : net.op()) {
    if (op.type() == "While") return &op;
  }
  return nullptr;
}

const NetDef* NetArgument(const OperatorDef& op, const std::string& name) {
  for (const Argument& arg : op.arg()) {
    if (arg.name() == name && arg.has_n()) return &arg.n();
  }
  return nullptr;
}

TEST(ParallelizePhasesTest, AccumulationLoopsOverMicroStepsThenReducesOnce) {
  const DataParallelTemplate model = MlpTemplate();
  ParallelizeOptions options = TwoDevices();
  options.accumulate_steps = 3;
  const ParallelPlan plan = PlanParallelize(model, options);
  const NetDef net = EmitTrainNet(plan, model, options);
  const OperatorDef* loop = FindLoop(net);
  ASSERT_NE(loop, nullptr);
  const NetDef* body = NetArgument(*loop, "loop_net");
  const NetDef* condition = NetArgument(*loop, "cond_net");
  ASSERT_NE(body, nullptr);
  ASSERT_NE(condition, nullptr);
  auto count = [](const NetDef& n, const std::string& type) {
    int found = 0;
    for (const OperatorDef& op : n.op()) found += op.type() == type;
    return found;
  };
  // One micro-step in the body: 2 layers x 2 replicas, the gradients added
  // into the accumulators, the counter; no reduction inside.
  EXPECT_EQ(count(*body, "FC"), 2 * 2);
  EXPECT_EQ(count(*body, "Add"), 4 * 2);
  EXPECT_EQ(count(*body, "Iter"), 1);
  EXPECT_EQ(count(*body, "Allreduce"), 0);
  EXPECT_EQ(count(*condition, "LT"), 1);
  EXPECT_EQ(count(net, "FC"), 0);
  // Before the loop: the counter, its limit and zeroed accumulators; after
  // it: the gradients set to the sums, then each reduced once.
  int loop_at = -1, limit_at = -1, first_allreduce = -1, last_copy = -1, zeroed = 0;
  for (int i = 0; i < net.op_size(); ++i) {
    const OperatorDef& op = net.op(i);
    if (&op == loop) loop_at = i;
    if (op.type() == "ConstantFill" && op.output(0) == kAccumulateLimitBlob) {
      limit_at = i;
      const auto value = std::find_if(op.arg().begin(), op.arg().end(),
                                      [](const Argument& arg) { return arg.name() == "value"; });
      ASSERT_NE(value, op.arg().end());
      EXPECT_EQ(value->i(), 3);
    }
    if (op.type() == "ConstantFill" && op.input_size() == 1) {
      ++zeroed;
      EXPECT_EQ(op.output(0), op.input(0) + "_grad_accumulated");
    }
    if (op.type() == "Copy") {
      last_copy = i;
      EXPECT_EQ(op.input(0), op.output(0) + "_accumulated");
    }
    if (op.type() == "Allreduce" && first_allreduce < 0) first_allreduce = i;
  }
  EXPECT_EQ(zeroed, 4 * 2);
  EXPECT_LT(limit_at, loop_at);
  EXPECT_LT(loop_at, last_copy);
  EXPECT_LT(last_copy, first_allreduce);
  EXPECT_EQ(count(net, "Allreduce"), 4);
  EXPECT_EQ(count(net, "WeightedSum"), 4 * 2);
  // The loop names what its nets read and write, so the dag orders the
  // copies after it and Free ops (dynamic memory) see its condition's limit.
  const std::set<std::string> outputs(loop->output().begin(), loop->output().end());
  const std::set<std::string> inputs(loop->input().begin(), loop->input().end());
  EXPECT_TRUE(outputs.count("cpu_3/w1_grad_accumulated"));
  EXPECT_TRUE(outputs.count(kAccumulateStepBlob));
  EXPECT_TRUE(inputs.count(kAccumulateLimitBlob));

  options.accumulate_steps = 0;
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ValidateParallelizeOptions(options); }),
                     "accumulate_steps must be >= 1");
  options.accumulate_steps = 2;
  options.shared_model = true;
  EXPECT_THROW(PlanParallelize(model, options), NotImplementedError);
}

TEST(ParallelizePhasesTest, ScheduleCheckFollowsTheWorldAndListsWhatComesAfter) {
  const DataParallelTemplate model = MlpTemplate();
  ParallelizeOptions options = TwoDevices();
  options.rendezvous.num_shards = 2;
  options.rendezvous.kv_handler = "store";
  const Parallelized result = Parallelize(model, options);
  const NetDef& init = result.param_init_net;
  int create = -1;
  for (int i = 0; i < init.op_size(); ++i) {
    if (init.op(i).type() == "CreateCommonWorld") create = i;
  }
  ASSERT_GE(create, 0);
  ASSERT_LT(create + 1, init.op_size());
  const OperatorDef& check = init.op(create + 1);
  EXPECT_EQ(check.type(), "VerifyCollectiveSchedule");
  const std::vector<ScheduledCollective> schedule = ScheduleOfCheckOp(check);
  // The four init broadcasts across shards, then one gradient bucket.
  ASSERT_EQ(schedule.size(), 5u);
  EXPECT_NE(schedule[0].signature.find("Broadcast engine=GLOO"), std::string::npos);
  EXPECT_NE(schedule[0].signature.find("[cpu_0/w1 FLOAT (5, 4)]"), std::string::npos)
      << schedule[0].signature;
  EXPECT_NE(schedule[4].signature.find("AllreduceCoalesced"), std::string::npos);
  EXPECT_NE(schedule[4].signature.find("cpu_0/w1_grad FLOAT (5, 4)"), std::string::npos)
      << schedule[4].signature;
  // Each entry points at its op, counted in the nets as emitted.
  for (const ScheduledCollective& entry : schedule) {
    const bool in_init = entry.where.rfind("net 'mlp_init' op ", 0) == 0;
    const NetDef& net = in_init ? init : result.net;
    const std::string prefix = in_init ? "net 'mlp_init' op " : "net 'mlp' op ";
    ASSERT_EQ(entry.where.rfind(prefix, 0), 0u) << entry.where;
    const int index = std::stoi(entry.where.substr(prefix.size()));
    EXPECT_EQ(net.op(index).input(0), options.rendezvous.common_world) << entry.where;
    EXPECT_GT(index, in_init ? create + 1 : -1);
  }
  // One process: no world, no check.
  const Parallelized local = Parallelize(model, TwoDevices());
  for (const OperatorDef& op : local.param_init_net.op()) {
    EXPECT_NE(op.type(), "VerifyCollectiveSchedule");
  }
}

TEST(ParallelizePhasesTest, ErrorKindsTheFrontEndsMapToTheirOwn) {
  ParallelizeOptions options = TwoDevices();
  options.shared_model = true;
  options.device_type = CUDA;
  EXPECT_THROW(ValidateParallelizeOptions(options), InvalidArgumentError);
  options = TwoDevices();
  options.rendezvous.num_shards = 2;
  options.rendezvous.kv_handler = "store";
  options.rendezvous.engine = "MPI";
  EXPECT_THROW(ValidateParallelizeOptions(options), NotImplementedError);
  options.rendezvous.engine = "GLOO";
  options.rendezvous.bucket_cap_mb = -1;
  EXPECT_THROW(ValidateParallelizeOptions(options), InvalidArgumentError);
  options.rendezvous.bucket_cap_mb = 25;
  EXPECT_NO_THROW(ValidateParallelizeOptions(options));
  options.devices = {};
  EXPECT_NE(ErrorOf([&] { ValidateParallelizeOptions(options); }).find("device list is empty"),
            std::string::npos);
}

}  // namespace
}  // namespace doppio
