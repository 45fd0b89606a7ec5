// Where the Parallelize pass puts each gradient's Allreduce in the listed
// order of the train net, on a 4-layer MLP: in reverse order of the params'
// first use (last layer first); each right after every device has produced
// that gradient and before any device's backward ops of the layer below, so
// communication overlaps the rest of backward; and before the updates.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "parallel/data_parallel.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::FloatArg;
using testing::IntsArg;
using testing::MakeOp;

constexpr int kLayers = 4;

std::string Layer(const std::string& kind, int layer) { return kind + std::to_string(layer); }

// data -> [FC(w_k, b_k) -> Relu] x 3 -> FC(w4, b4) -> SoftmaxWithLoss; SGD.
DataParallelTemplate DeepMlp() {
  DataParallelTemplate model;
  model.param_init_net.set_name("deep_init");
  model.net.set_name("deep");
  model.param_update_net.set_name("deep_update");
  std::string activation = "data";
  for (int k = 1; k <= kLayers; ++k) {
    *model.param_init_net.add_op() =
        MakeOp("XavierFill", {}, {Layer("w", k)}, {IntsArg("shape", {4, 4})});
    *model.param_init_net.add_op() = MakeOp(
        "ConstantFill", {}, {Layer("b", k)}, {IntsArg("shape", {4}), FloatArg("value", 0.0f)});
    const std::string out = Layer("fc", k);
    *model.net.add_op() = MakeOp("FC", {activation, Layer("w", k), Layer("b", k)}, {out});
    if (k < kLayers) *model.net.add_op() = MakeOp("Relu", {out}, {out});
    activation = out;
    model.params.push_back(Layer("w", k));
    model.params.push_back(Layer("b", k));
  }
  *model.net.add_op() = MakeOp("SoftmaxWithLoss", {activation, "label"}, {"prob", "loss"});
  model.losses = {"loss"};
  *model.param_init_net.add_op() =
      MakeOp("ConstantFill", {}, {"lr"}, {IntsArg("shape", {1}), FloatArg("value", -0.1f)});
  *model.param_init_net.add_op() =
      MakeOp("ConstantFill", {}, {"ONE"}, {IntsArg("shape", {1}), FloatArg("value", 1.0f)});
  for (const std::string& param : model.params) {
    *model.param_update_net.add_op() =
        MakeOp("WeightedSum", {param, "ONE", param + "_grad", "lr"}, {param});
  }
  return model;
}

bool Writes(const OperatorDef& op, const std::string& blob) {
  for (const std::string& output : op.output()) {
    if (output == blob) return true;
  }
  return false;
}

bool Reads(const OperatorDef& op, const std::string& blob) {
  for (const std::string& input : op.input()) {
    if (input == blob) return true;
  }
  return false;
}

class AllreduceOrder : public ::testing::TestWithParam<int> {};

TEST_P(AllreduceOrder, ReverseOfFirstUseAndOverlappingBackward) {
  const int num_devices = GetParam();
  ParallelizeOptions options;
  for (int d = 0; d < num_devices; ++d) options.devices.push_back(d);
  options.shared_blobs = {"lr", "ONE"};
  const NetDef net = Parallelize(DeepMlp(), options).net;

  // Position of the Allreduce of each template gradient.
  std::map<std::string, int> allreduce_at;
  std::vector<std::string> order;
  for (int i = 0; i < net.op_size(); ++i) {
    if (net.op(i).type() != "Allreduce") continue;
    const std::string& first = net.op(i).input(0);
    ASSERT_EQ(first.compare(0, 6, "cpu_0/"), 0) << first;
    const std::string grad = first.substr(6);
    ASSERT_EQ(net.op(i).input_size(), num_devices) << grad;
    allreduce_at[grad] = i;
    order.push_back(grad);
  }
  ASSERT_EQ(order.size(), 2u * kLayers);

  // Layer by layer from the last: the two of layer k come before those of
  // layer k - 1 (w and b share their first use, so either goes first).
  for (int k = kLayers; k > 1; --k) {
    for (const char* kind : {"w", "b"}) {
      for (const char* below : {"w", "b"}) {
        EXPECT_LT(allreduce_at.at(Layer(kind, k) + "_grad"),
                  allreduce_at.at(Layer(below, k - 1) + "_grad"))
            << "layer " << k;
      }
    }
  }

  for (int k = 1; k <= kLayers; ++k) {
    for (const char* kind : {"w", "b"}) {
      const std::string grad = Layer(kind, k) + "_grad";
      const int at = allreduce_at.at(grad);
      for (int d = 0; d < num_devices; ++d) {
        const std::string prefix = "cpu_" + std::to_string(d) + "/";
        for (int i = 0; i < net.op_size(); ++i) {
          const OperatorDef& op = net.op(i);
          if (op.type() == "Allreduce") continue;
          // After every device produced the gradient ...
          if (Writes(op, prefix + grad) && op.type() != "WeightedSum") {
            EXPECT_LT(i, at) << grad << " written after its allreduce by " << op.type();
          }
          // ... before any update reads it ...
          if (op.type() == "WeightedSum" && Reads(op, prefix + grad)) {
            EXPECT_GT(i, at) << grad << " read by an update before its allreduce";
          }
          // ... and before every device's gradient ops of the layers below:
          // those do not need it, so the reduction overlaps them.
          for (int below = 1; below < k; ++below) {
            if (Writes(op, prefix + Layer("w", below) + "_grad")) {
              EXPECT_GT(i, at) << grad << " is reduced only after " << prefix << "layer "
                               << below << "'s backward op " << op.type();
            }
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, AllreduceOrder, ::testing::Values(2, 4));

}  // namespace
}  // namespace doppio
