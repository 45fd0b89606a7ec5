// The GPU side of the Parallelize pass on the C++ MLP-like template: gpu_N/
// prefixes and CUDA DeviceOptions, NCCLAllreduce / NCCLBroadcast with
// use_nccl, the Copy + Sum tree without it (checked by evaluating the net
// symbolically: every device's gradient ends as the sum of all devices'),
// and the NCCL schemas: nets naming them validate, creating one without a
// CUDA kernel is an error naming the op.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/registry.h"
#include "core/schema.h"
#include "core/workspace.h"
#include "parallel/data_parallel.h"
#include "parallel/device_collectives.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::IntsArg;
using testing::MakeOp;

DataParallelTemplate Template() {
  DataParallelTemplate model;
  model.param_init_net.set_name("init");
  *model.param_init_net.add_op() = MakeOp("XavierFill", {}, {"w"}, {IntsArg("shape", {3, 4})});
  *model.param_init_net.add_op() = MakeOp("XavierFill", {}, {"b"}, {IntsArg("shape", {3})});
  model.net.set_name("net");
  *model.net.add_op() = MakeOp("FC", {"data", "w", "b"}, {"logits"});
  *model.net.add_op() = MakeOp("SoftmaxWithLoss", {"logits", "label"}, {"prob", "loss"});
  model.losses = {"loss"};
  model.params = {"w", "b"};
  model.param_update_net.set_name("update");
  *model.param_update_net.add_op() = MakeOp("WeightedSum", {"w", "one", "w_grad", "lr"}, {"w"});
  *model.param_update_net.add_op() = MakeOp("WeightedSum", {"b", "one", "b_grad", "lr"}, {"b"});
  return model;
}

ParallelizeOptions Gpus(std::vector<int> devices, bool use_nccl) {
  ParallelizeOptions options;
  options.devices = std::move(devices);
  options.device_type = CUDA;
  options.use_nccl = use_nccl;
  options.shared_blobs = {"one", "lr"};
  return options;
}

int DeviceOf(const std::string& blob) {
  if (blob.rfind("gpu_", 0) != 0) return -1;
  return std::stoi(blob.substr(4, blob.find('/') - 4));
}

// Contributions per blob: Copy copies, Sum and NCCLAllreduce add, any other
// op makes its output device's own value.
using Value = std::multiset<int>;
std::map<std::string, Value> Evaluate(const NetDef& net) {
  std::map<std::string, Value> state;
  for (const OperatorDef& op : net.op()) {
    if (op.type() == "Copy") {
      state[op.output(0)] = state[op.input(0)];
    } else if (op.type() == "Sum" || op.type() == "NCCLAllreduce") {
      Value total;
      for (const std::string& input : op.input()) {
        total.insert(state[input].begin(), state[input].end());
      }
      for (const std::string& output : op.output()) state[output] = total;
    } else {
      for (const std::string& output : op.output()) state[output] = {DeviceOf(output)};
    }
  }
  return state;
}

TEST(GpuParallelizeTest, PrefixesAndDeviceOptions) {
  for (bool nccl : {true, false}) {
    const Parallelized result = Parallelize(Template(), Gpus({1, 4}, nccl));
    for (const NetDef* net : {&result.net, &result.param_init_net}) {
      for (const OperatorDef& op : net->op()) {
        EXPECT_EQ(op.device_option().device_type(), CUDA) << op.type();
        if (op.type().rfind("NCCL", 0) == 0) {
          EXPECT_EQ(op.device_option().cuda_gpu_id(), 1);
          continue;
        }
        for (const std::string& output : op.output()) {
          if (output == "one" || output == "lr") continue;
          EXPECT_EQ(DeviceOf(output), op.device_option().cuda_gpu_id()) << op.type() << output;
        }
      }
    }
  }
}

TEST(GpuParallelizeTest, NcclAllreduceAndBroadcast) {
  const Parallelized result = Parallelize(Template(), Gpus({0, 1, 2, 3}, true));
  std::vector<std::string> reduced;
  std::string previous;
  for (const OperatorDef& op : result.net.op()) {
    EXPECT_NE(op.type(), "Allreduce");
    if (op.type() != "NCCLAllreduce") continue;
    ASSERT_EQ(op.input_size(), 4);
    const std::string grad = op.input(0).substr(std::string("gpu_0/").size());
    for (int d = 0; d < 4; ++d) {
      EXPECT_EQ(op.input(d), "gpu_" + std::to_string(d) + "/" + grad);
      EXPECT_EQ(op.output(d), op.input(d));
    }
    if (!previous.empty()) {
      ASSERT_EQ(op.control_input_size(), 1);
      EXPECT_EQ(op.control_input(0), previous);
    }
    previous = op.input(0);
    reduced.push_back(grad);
  }
  // w and b are first used by the same op; both reduced, once each.
  EXPECT_EQ(std::set<std::string>(reduced.begin(), reduced.end()),
            (std::set<std::string>{"w_grad", "b_grad"}));
  EXPECT_EQ(reduced.size(), 2u);
  int broadcasts = 0;
  for (const OperatorDef& op : result.param_init_net.op()) {
    if (op.type() != "NCCLBroadcast") continue;
    ++broadcasts;
    ASSERT_EQ(op.arg_size(), 1);
    EXPECT_EQ(op.arg(0).name(), "root");
    EXPECT_EQ(op.arg(0).i(), 0);
  }
  EXPECT_EQ(broadcasts, 2);
}

TEST(GpuParallelizeTest, CopySumTreeGivesEveryDeviceTheFullSum) {
  for (int count : {2, 3, 4, 5, 8}) {
    std::vector<int> devices;
    for (int d = 0; d < count; ++d) devices.push_back(d);
    const Parallelized result = Parallelize(Template(), Gpus(devices, false));
    // Stop before the update ops, which rewrite nothing tracked here but
    // would read the sums: evaluate the whole net, then check the grads.
    const std::map<std::string, Value> state = Evaluate(result.net);
    Value every;
    for (int d : devices) every.insert(d);
    for (const std::string grad : {"w_grad", "b_grad"}) {
      for (int d : devices) {
        EXPECT_EQ(state.at("gpu_" + std::to_string(d) + "/" + grad), every)
            << count << " devices, gpu_" << d << "/" << grad;
      }
    }
    for (const OperatorDef& op : result.net.op()) {
      EXPECT_EQ(op.type().rfind("NCCL", 0), std::string::npos);
    }
  }
}

TEST(GpuParallelizeTest, NcclSchemasValidateAndLackKernelsHere) {
  for (const char* type : {"NCCLAllreduce", "NCCLBroadcast", "NCCLReduce", "NCCLAllGather",
                           "NCCLReduceScatter"}) {
    const OpSchema* schema = OpSchemaRegistry::Schema(type);
    ASSERT_NE(schema, nullptr) << type;
    EXPECT_EQ(schema->max_input(), 16) << type;
  }
  Workspace workspace;
  OperatorDef op = MakeOp("NCCLAllreduce", {"a", "b"}, {"a", "b"}, {});
  op.mutable_device_option()->set_device_type(CUDA);
  if (OperatorRegistry::Find({"NCCLAllreduce", DeviceKind::kCUDA, ""}) == nullptr) {
    EXPECT_MESSAGE_HAS(ErrorOf([&] { CreateOperator(op, &workspace); }), "'NCCLAllreduce'",
                       "no CUDA implementation");
  }
  op.mutable_device_option()->set_device_type(CPU);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { CreateOperator(op, &workspace); }), "'NCCLAllreduce'",
                     "CUDA devices only");
}

}  // namespace
}  // namespace doppio
