// Each phase of the Parallelize pass on its own (parallel/data_parallel_phases.h):
// the plan is checked as a value, against what the template and options say,
// before anything is emitted; the emitters are checked against a plan.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/backward.h"
#include "parallel/data_parallel_phases.h"
#include "tests/parallel/mlp_template.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
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
