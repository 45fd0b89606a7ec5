// The template of a small MLP for the Parallelize pass's tests: what a
// builder front end would hand the pass, written out op by op.
#pragma once

#include <string>
#include <vector>

#include "parallel/data_parallel.h"
#include "tests/test_util.h"

namespace doppio {
namespace testing {

inline const std::vector<std::string> kParams = {"w1", "b1", "w2", "b2"};

// data [N,4] -> FC(w1,b1) [N,5] -> Relu -> FC(w2,b2) [N,3] -> SoftmaxWithLoss;
// SGD with a shared lr and ONE made once by the init net.
inline DataParallelTemplate MlpTemplate() {
  DataParallelTemplate model;
  model.param_init_net.set_name("mlp_init");
  auto fill = [&](const std::string& name, const std::vector<int64_t>& shape, float value) {
    *model.param_init_net.add_op() =
        MakeOp("ConstantFill", {}, {name}, {IntsArg("shape", shape), FloatArg("value", value)});
  };
  *model.param_init_net.add_op() =
      MakeOp("XavierFill", {}, {"w1"}, {IntsArg("shape", {5, 4})});
  fill("b1", {5}, 0.1f);
  *model.param_init_net.add_op() =
      MakeOp("XavierFill", {}, {"w2"}, {IntsArg("shape", {3, 5})});
  fill("b2", {3}, -0.1f);
  fill("ONE", {1}, 1.0f);
  fill("lr", {1}, -0.5f);

  model.net.set_name("mlp");
  *model.net.add_op() = MakeOp("FC", {"data", "w1", "b1"}, {"h"});
  *model.net.add_op() = MakeOp("Relu", {"h"}, {"h"});
  *model.net.add_op() = MakeOp("FC", {"h", "w2", "b2"}, {"logits"});
  *model.net.add_op() = MakeOp("SoftmaxWithLoss", {"logits", "label"}, {"prob", "avg_loss"});
  model.losses = {"avg_loss"};
  model.params = kParams;

  model.param_update_net.set_name("mlp_update");
  for (const std::string& param : kParams) {
    *model.param_update_net.add_op() =
        MakeOp("WeightedSum", {param, "ONE", param + "_grad", "lr"}, {param});
  }
  return model;
}

inline ParallelizeOptions TwoDevices() {
  ParallelizeOptions options;
  options.devices = {0, 3};
  options.shared_blobs = {"ONE", "lr"};
  return options;
}

}  // namespace testing
}  // namespace doppio
