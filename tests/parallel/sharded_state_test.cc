// The sharded optimizer state (parallel/sharded_state.h): the block rule,
// ShardSlice, what Parallelize(shard_optimizer_state) emits, and the update
// nets it refuses, each refusal naming the op and the blob.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/workspace.h"
#include "parallel/data_parallel.h"
#include "parallel/shard_block.h"
#include "tests/parallel/mlp_template.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::FloatArg;
using testing::IntArg;
using testing::IntsArg;
using testing::MakeOp;

TEST(ShardBlockTest, BlocksTileTheTensorTheFirstOnesOneLonger) {
  for (int64_t n = 0; n <= 13; ++n) {
    for (int shards = 1; shards <= 5; ++shards) {
      SCOPED_TRACE(MakeString(n, " elements over ", shards, " shards"));
      int64_t at = 0;
      const int64_t longest = BlockOfShard(n, shards, 0).size();
      for (int shard = 0; shard < shards; ++shard) {
        const ShardBlock block = BlockOfShard(n, shards, shard);
        EXPECT_EQ(block.begin, at);  // consecutive, no gap or overlap
        // As even as can be, and no block longer than one before it.
        EXPECT_TRUE(block.size() == longest || block.size() == longest - 1) << block.size();
        if (shard > 0) EXPECT_LE(block.size(), BlockOfShard(n, shards, shard - 1).size());
        at = block.end;
      }
      EXPECT_EQ(at, n);
    }
  }
  // Gloo's reduce-scatter layout, written out: 11 over 4 is 3, 3, 3, 2.
  EXPECT_EQ(BlockOfShard(11, 4, 2).begin, 6);
  EXPECT_EQ(BlockOfShard(11, 4, 3).size(), 2);
}

TEST(ShardSliceTest, KeepsTheBlockAndReleasesTheWholeInPlace) {
  Workspace ws;
  Tensor* x = ws.CreateBlob("x")->GetMutableTensor(Device());
  x->Resize({3, 4});
  float* data = x->mutable_data<float>();
  for (int i = 0; i < 12; ++i) data[i] = static_cast<float>(i);
  ws.RunOperatorOnce(MakeOp("ShardSlice", {"x"}, {"y"}, {IntArg("num_shards", 3),
                                                        IntArg("shard_id", 1)}));
  const Tensor& y = ws.GetBlob("y")->GetTensor();
  ASSERT_EQ(y.dims(), std::vector<int64_t>({4}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.data<float>()[i], 4 + i);
  ws.RunOperatorOnce(MakeOp("ShardSlice", {"x"}, {"x"}, {IntArg("num_shards", 5),
                                                        IntArg("shard_id", 4)}));
  const Tensor& cut = ws.GetBlob("x")->GetTensor();
  ASSERT_EQ(cut.dims(), std::vector<int64_t>({2}));
  EXPECT_EQ(cut.data<float>()[0], 10);
  EXPECT_EQ(cut.nbytes(), 2 * sizeof(float));
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.RunOperatorOnce(MakeOp("ShardSlice", {"y"}, {"z"},
                                                 {IntArg("num_shards", 2),
                                                  IntArg("shard_id", 2)}));
                     }),
                     "shard_id 2", "num_shards = 2");
}

// The MLP with momentum SGD, one of two shards, two devices per process.
DataParallelTemplate MomentumMlp() {
  DataParallelTemplate model = testing::MlpTemplate();
  model.param_update_net.clear_op();
  const std::map<std::string, std::vector<int64_t>> shapes = {
      {"w1", {5, 4}}, {"b1", {5}}, {"w2", {3, 5}}, {"b2", {3}}};
  for (const std::string& param : testing::kParams) {
    *model.param_init_net.add_op() =
        MakeOp("ConstantFill", {}, {param + "_momentum"},
               {IntsArg("shape", shapes.at(param)), FloatArg("value", 0)});
    *model.param_update_net.add_op() =
        MakeOp("MomentumSGDUpdate", {param + "_grad", param + "_momentum", "lr", param},
               {param + "_grad", param + "_momentum", param}, {FloatArg("momentum", 0.9f)});
  }
  return model;
}

ParallelizeOptions ShardOneOfTwo() {
  ParallelizeOptions options = testing::TwoDevices();
  options.rendezvous.num_shards = 2;
  options.rendezvous.shard_id = 1;
  options.rendezvous.kv_handler = "store";
  options.shard_optimizer_state = true;
  return options;
}

std::vector<const OperatorDef*> OpsOfType(const NetDef& net, const std::string& type) {
  std::vector<const OperatorDef*> ops;
  for (const OperatorDef& op : net.op()) {
    if (op.type() == type) ops.push_back(&op);
  }
  return ops;
}

TEST(ShardedStateTest, ReduceScattersUpdatesBlocksOnTheFirstDeviceAndAllgathers) {
  const Parallelized result = Parallelize(MomentumMlp(), ShardOneOfTwo());
  const NetDef& net = result.net;
  EXPECT_TRUE(OpsOfType(net, "AllreduceCoalesced").empty());
  const auto scatters = OpsOfType(net, "ReduceScatterBlocks");
  ASSERT_FALSE(scatters.empty());
  std::set<std::string> blocks;
  for (const OperatorDef* op : scatters) {
    for (const std::string& output : op->output()) blocks.insert(output);
  }
  EXPECT_EQ(blocks, std::set<std::string>({"cpu_0/w1_grad_shard", "cpu_0/b1_grad_shard",
                                           "cpu_0/w2_grad_shard", "cpu_0/b2_grad_shard"}));
  const auto updates = OpsOfType(net, "MomentumSGDUpdate");
  ASSERT_EQ(updates.size(), 4u);  // the first device's alone
  for (const OperatorDef* op : updates) {
    EXPECT_EQ(op->input(0).substr(0, 6), "cpu_0/");
    EXPECT_NE(op->input(0).find("_grad_shard"), std::string::npos) << op->input(0);
    EXPECT_NE(op->input(3).find("_shard"), std::string::npos) << op->input(3);
    EXPECT_EQ(op->input(1).find("_shard"), std::string::npos) << "state keeps its name";
  }
  EXPECT_EQ(OpsOfType(net, "ShardSlice").size(), 4u);  // the params' blocks
  std::set<std::string> gathered;
  for (const OperatorDef* op : OpsOfType(net, "AllgatherBlocks")) {
    for (const std::string& output : op->output()) gathered.insert(output);
  }
  EXPECT_EQ(gathered, std::set<std::string>({"cpu_0/w1", "cpu_0/b1", "cpu_0/w2", "cpu_0/b2"}));
  // The state exists on the first device alone, cut to this shard's block.
  const NetDef& init = result.param_init_net;
  for (const OperatorDef& op : init.op()) {
    for (const std::string& output : op.output()) {
      EXPECT_EQ(output.find("cpu_3/w1_momentum"), std::string::npos);
    }
  }
  EXPECT_EQ(OpsOfType(init, "ShardSlice").size(), 4u);
  EXPECT_EQ(result.shard_state_net.op_size(), 4);
  ASSERT_EQ(result.sharded_blobs.size(), 4u);
  for (const Parallelized::ShardedBlob& blob : result.sharded_blobs) {
    if (blob.blob != "cpu_0/w1_momentum") continue;
    EXPECT_EQ(blob.begin, 10);  // shard 1 of 2 of 20 elements
    EXPECT_EQ(blob.end, 20);
    EXPECT_EQ(blob.whole.dims_size(), 2);
  }
}

TEST(ShardedStateTest, AccumulatedGradientsAreReduceScatteredAfterTheLoop) {
  ParallelizeOptions options = ShardOneOfTwo();
  options.accumulate_steps = 3;
  const Parallelized result = Parallelize(MomentumMlp(), options);
  int loop = -1, first_scatter = -1, first_update = -1;
  for (int i = 0; i < result.net.op_size(); ++i) {
    const std::string& type = result.net.op(i).type();
    if (type == "While") loop = i;
    if (type == "ReduceScatterBlocks" && first_scatter < 0) first_scatter = i;
    if (type == "MomentumSGDUpdate" && first_update < 0) first_update = i;
  }
  ASSERT_GE(loop, 0);
  EXPECT_GT(first_scatter, loop);
  EXPECT_GT(first_update, first_scatter);
  EXPECT_EQ(OpsOfType(result.net, "MomentumSGDUpdate").size(), 4u);
}

TEST(ShardedStateTest, OneProcessIsUnchanged) {
  ParallelizeOptions options = testing::TwoDevices();
  options.shard_optimizer_state = true;
  const Parallelized result = Parallelize(MomentumMlp(), options);
  EXPECT_TRUE(OpsOfType(result.net, "ReduceScatterBlocks").empty());
  EXPECT_EQ(OpsOfType(result.net, "MomentumSGDUpdate").size(), 8u);
  EXPECT_TRUE(result.sharded_blobs.empty());
}

std::string RefusalOf(DataParallelTemplate model, ParallelizeOptions options = ShardOneOfTwo()) {
  return ErrorOf([&] { Parallelize(model, options); });
}

TEST(ShardedStateTest, RefusesUpdatesThatCannotRunOnBlocks) {
  DataParallelTemplate norm = MomentumMlp();
  *norm.param_update_net.add_op() = MakeOp("LpNorm", {"w1_grad"}, {"w1_grad_norm"});
  EXPECT_MESSAGE_HAS(RefusalOf(norm), "update op LpNorm", "'w1'", "not elementwise");

  DataParallelTemplate mixed = MomentumMlp();
  *mixed.param_update_net.add_op() = MakeOp("Add", {"w1_grad", "b1_grad"}, {"w1_grad"});
  EXPECT_MESSAGE_HAS(RefusalOf(mixed), "update op Add", "parameter 'b1'", "parameter 'w1'");

  DataParallelTemplate vector = MomentumMlp();
  *vector.param_init_net.add_op() =
      MakeOp("ConstantFill", {}, {"scale"}, {IntsArg("shape", {5}), FloatArg("value", 2)});
  *vector.param_update_net.add_op() = MakeOp("Mul", {"b1_grad", "scale"}, {"b1_grad"});
  EXPECT_MESSAGE_HAS(RefusalOf(vector), "update op Mul", "'scale'", "one-element");

  DataParallelTemplate sized = MomentumMlp();
  *sized.param_init_net.add_op() =
      MakeOp("ConstantFill", {}, {"b1_sum"}, {IntsArg("shape", {7}), FloatArg("value", 0)});
  *sized.param_update_net.add_op() = MakeOp("Add", {"b1_sum", "b1_grad"}, {"b1_sum"});
  EXPECT_MESSAGE_HAS(RefusalOf(sized), "optimizer state 'b1_sum'", "7 elements",
                     "the parameter 5");

  DataParallelTemplate read = MomentumMlp();
  // The update writes a blob the forward pass reads: the forward pass
  // would see a block of it.
  *read.param_update_net.add_op() = MakeOp("Scale", {"b2_grad"}, {"h"});
  EXPECT_MESSAGE_HAS(RefusalOf(read), "blob 'h'", "parameter 'b2'", "of the training net");

  DataParallelTemplate taken = MomentumMlp();
  *taken.param_init_net.add_op() =
      MakeOp("ConstantFill", {}, {"w2_shard"}, {IntsArg("shape", {1}), FloatArg("value", 0)});
  EXPECT_MESSAGE_HAS(RefusalOf(taken), "'w2_shard' already exists");

  ParallelizeOptions cuda = ShardOneOfTwo();
  cuda.device_type = CUDA;
  EXPECT_MESSAGE_HAS(RefusalOf(MomentumMlp(), cuda), "CUDA devices is not implemented");
}

}  // namespace
}  // namespace doppio
