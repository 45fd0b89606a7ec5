// DeviceCollectives' CUDA forms used by Parallelize_GPU across processes and
// for sparse gradients (parallel/device_collectives.h), and the common world
// of a CUDA model (parallel/distributed.h), checked as op lists: no GPU
// needed. A small evaluator here follows the ops' data flow (Copy copies,
// Sum and NCCLReduce add) to show where each device's contribution ends up.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "parallel/device_collectives.h"
#include "parallel/distributed.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;

constexpr int kCpu = 0;
constexpr int kCuda = 1;

struct Devices {
  std::vector<std::string> prefixes;
  std::vector<DeviceOption> options;
};

Devices Make(int device_type, const std::vector<int>& ids) {
  Devices devices;
  for (int id : ids) {
    devices.prefixes.push_back((device_type == kCuda ? "gpu_" : "cpu_") + std::to_string(id) +
                               "/");
    DeviceOption option;
    option.set_device_type(device_type);
    option.set_cuda_gpu_id(id);
    devices.options.push_back(option);
  }
  return devices;
}

std::vector<std::string> Copies(const Devices& devices, const std::string& blob) {
  std::vector<std::string> names;
  for (const std::string& prefix : devices.prefixes) names.push_back(prefix + blob);
  return names;
}

int DeviceOf(const std::string& blob) {
  const size_t slash = blob.find('/');
  return std::stoi(blob.substr(4, slash - 4));
}

// Which devices' contributions each blob holds after `ops`.
std::map<std::string, std::multiset<int>> Flow(const std::vector<OperatorDef>& ops,
                                               std::map<std::string, std::multiset<int>> state) {
  for (const OperatorDef& op : ops) {
    std::multiset<int> value;
    if (op.type() == "Copy") {
      value = state.at(op.input(0));
    } else {
      EXPECT_TRUE(op.type() == "Sum" || op.type() == "NCCLReduce") << op.type();
      for (const std::string& input : op.input()) {
        value.insert(state.at(input).begin(), state.at(input).end());
      }
    }
    for (const std::string& output : op.output()) state[output] = value;
  }
  return state;
}

TEST(GpuDeviceCollectives, ReduceToFirstWithoutNcclSumsEveryDeviceIntoTheFirst) {
  const Devices devices = Make(kCuda, {3, 4, 6, 7, 9});
  DeviceCollectives collectives(devices.prefixes, devices.options, /*use_nccl=*/false);
  const std::vector<std::string> grads = Copies(devices, "w_grad");
  const std::vector<OperatorDef> ops = collectives.ReduceToFirst("w_grad", grads);
  std::map<std::string, std::multiset<int>> state;
  for (const std::string& grad : grads) state[grad] = {DeviceOf(grad)};
  state = Flow(ops, state);
  EXPECT_EQ(state.at("gpu_3/w_grad"), (std::multiset<int>{3, 4, 6, 7, 9}));
  // No copy back: the sum goes across processes first.
  EXPECT_EQ(ops.size(), 2u * 4u);
  for (const OperatorDef& op : ops) {
    // Each op runs on the device it writes; only Copy reads another's.
    EXPECT_EQ(op.device_option().cuda_gpu_id(), DeviceOf(op.output(0))) << op.DebugString();
    if (op.type() == "Sum") {
      for (const std::string& input : op.input()) {
        EXPECT_EQ(DeviceOf(input), DeviceOf(op.output(0)));
      }
    }
  }
}

TEST(GpuDeviceCollectives, ReduceToFirstWithNcclIsOneChainedReduceIntoDeviceZero) {
  const Devices devices = Make(kCuda, {0, 1, 2});
  DeviceCollectives collectives(devices.prefixes, devices.options, /*use_nccl=*/true);
  const std::vector<OperatorDef> first = collectives.ReduceToFirst("a", Copies(devices, "a"));
  const std::vector<OperatorDef> second = collectives.ReduceToFirst("b", Copies(devices, "b"));
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  const OperatorDef& op = second.front();
  EXPECT_EQ(op.type(), "NCCLReduce");
  EXPECT_EQ(std::vector<std::string>(op.input().begin(), op.input().end()),
            (std::vector<std::string>{"gpu_0/b", "gpu_1/b", "gpu_2/b"}));
  EXPECT_EQ(std::vector<std::string>(op.output().begin(), op.output().end()),
            std::vector<std::string>{"gpu_0/b"});
  ASSERT_EQ(op.arg_size(), 1);
  EXPECT_EQ(op.arg(0).name(), "root");
  EXPECT_EQ(op.arg(0).i(), 0);
  EXPECT_EQ(op.device_option().cuda_gpu_id(), 0);
  EXPECT_EQ(first.front().control_input_size(), 0);
  ASSERT_EQ(op.control_input_size(), 1);
  EXPECT_EQ(op.control_input(0), "gpu_0/a");
  // The broadcast back continues the same chain.
  const std::vector<OperatorDef> back = collectives.Broadcast("b", Copies(devices, "b"));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back.front().type(), "NCCLBroadcast");
  EXPECT_EQ(back.front().control_input(0), "gpu_0/b");
}

TEST(GpuDeviceCollectives, ReduceToFirstOnCpuIsTheAllreduceItAlwaysWas) {
  const Devices devices = Make(kCpu, {0, 1});
  DeviceCollectives reduce(devices.prefixes, devices.options, false);
  DeviceCollectives allreduce(devices.prefixes, devices.options, false);
  const std::vector<OperatorDef> a = reduce.ReduceToFirst("g", Copies(devices, "g"));
  const std::vector<OperatorDef> b = allreduce.Allreduce("g", Copies(devices, "g"));
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a.front().SerializeAsString(), b.front().SerializeAsString());
  EXPECT_EQ(a.front().type(), "Allreduce");
}

TEST(GpuDeviceCollectives, GatherRowsConcatenatesOnDeviceZeroAndCopiesOut) {
  const Devices devices = Make(kCuda, {2, 5, 7});
  DeviceCollectives collectives(devices.prefixes, devices.options, true);
  const std::vector<OperatorDef> ops =
      collectives.GatherRows("t_grad_values_all_devices", Copies(devices, "rows_grad"));
  ASSERT_EQ(ops.size(), 5u);
  const std::vector<std::string> staged = {"gpu_2/t_grad_values_all_devices_gpu5_copy",
                                           "gpu_2/t_grad_values_all_devices_gpu7_copy"};
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(ops[i].type(), "Copy");
    EXPECT_EQ(ops[i].input(0), Copies(devices, "rows_grad")[i + 1]);
    EXPECT_EQ(ops[i].output(0), staged[i]);
    EXPECT_EQ(ops[i].device_option().cuda_gpu_id(), 2);
  }
  const OperatorDef& concat = ops[2];
  EXPECT_EQ(concat.type(), "Concat");
  EXPECT_EQ(std::vector<std::string>(concat.input().begin(), concat.input().end()),
            (std::vector<std::string>{"gpu_2/rows_grad", staged[0], staged[1]}));
  EXPECT_EQ(std::vector<std::string>(concat.output().begin(), concat.output().end()),
            (std::vector<std::string>{"gpu_2/t_grad_values_all_devices",
                                      "gpu_2/t_grad_values_all_devices_split"}));
  ASSERT_EQ(concat.arg_size(), 1);
  EXPECT_EQ(concat.arg(0).name(), "axis");
  EXPECT_EQ(concat.arg(0).i(), 0);
  EXPECT_EQ(concat.device_option().cuda_gpu_id(), 2);
  for (int i = 3; i < 5; ++i) {
    const int device = i == 3 ? 5 : 7;
    EXPECT_EQ(ops[i].type(), "Copy");
    EXPECT_EQ(ops[i].input(0), "gpu_2/t_grad_values_all_devices");
    EXPECT_EQ(ops[i].output(0), "gpu_" + std::to_string(device) + "/t_grad_values_all_devices");
    EXPECT_EQ(ops[i].device_option().cuda_gpu_id(), device);
  }
  EXPECT_EQ(StagedCopyName("x", 5), "x_gpu5_copy");
}

TEST(GpuDeviceCollectives, GatherRowsNeedsCudaAndOneCopyPerDevice) {
  const Devices cpu = Make(kCpu, {0, 1});
  DeviceCollectives on_cpu(cpu.prefixes, cpu.options, false);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { on_cpu.GatherRows("g", Copies(cpu, "r")); }),
                     "GatherRows of 'g'", "CUDA");
  const Devices gpu = Make(kCuda, {0, 1});
  DeviceCollectives on_gpu(gpu.prefixes, gpu.options, false);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { on_gpu.GatherRows("g", {"gpu_0/r"}); }),
                     "'g' has 1 copies for 2 devices");
  EXPECT_TRUE(on_gpu.GatherRows("g", {"gpu_0/r", "gpu_1/r"}).size() == 3u);
  const Devices one = Make(kCuda, {4});
  DeviceCollectives single(one.prefixes, one.options, false);
  EXPECT_TRUE(single.GatherRows("g", {"gpu_4/r"}).empty());
  EXPECT_TRUE(single.ReduceToFirst("g", {"gpu_4/r"}).empty());
}

TEST(GpuShardCollectives, TheCommonWorldIsMadeOnTheCpuAndTheCollectivesOnTheGpu) {
  RendezvousOptions rendezvous;
  rendezvous.num_shards = 2;
  rendezvous.shard_id = 1;
  rendezvous.kv_handler = "store";
  const Devices gpu = Make(kCuda, {3});
  ShardCollectives shards(rendezvous, gpu.options.front());
  const OperatorDef world = shards.CreateCommonWorld();
  EXPECT_EQ(world.device_option().device_type(), kCpu);
  const OperatorDef allreduce = shards.Allreduce("gpu_3/g");
  EXPECT_EQ(allreduce.engine(), "GLOO");
  EXPECT_EQ(allreduce.device_option().device_type(), kCuda);
  EXPECT_EQ(allreduce.device_option().cuda_gpu_id(), 3);
  EXPECT_EQ(allreduce.input(0), rendezvous.common_world);

  // CPU devices keep the world on their own (logical) device, as before.
  const Devices cpu = Make(kCpu, {2});
  ShardCollectives cpu_shards(rendezvous, cpu.options.front());
  EXPECT_EQ(cpu_shards.CreateCommonWorld().device_option().SerializeAsString(),
            cpu.options.front().SerializeAsString());
}

}  // namespace
}  // namespace doppio
