#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/workspace.h"
#include "parallel/data_parallel_builder.h"

using namespace doppio;

OperatorDef* AddOp(NetDef* net, const std::string& type, const std::vector<std::string>& inputs,
                   const std::vector<std::string>& outputs) {
  OperatorDef* op = net->add_op();
  op->set_type(type);
  for (const std::string& name : inputs) op->add_input(name);
  for (const std::string& name : outputs) op->add_output(name);
  return op;
}

template <typename T>
void SetArg(OperatorDef* op, const std::string& name, T value) {
  Argument* arg = op->add_arg();
  arg->set_name(name);
  if constexpr (std::is_same_v<T, float>) arg->set_f(value);
  else if constexpr (std::is_same_v<T, int>) arg->set_i(value);
  else if constexpr (std::is_same_v<T, std::string>) arg->set_s(value);
  else for (int64_t dim : value) arg->add_ints(dim);
}

float Fetch(Workspace& workspace, const std::string& name) {
  return workspace.GetBlob(name)->Get<Tensor>().data<float>()[0];
}

int Train(const std::string& db) {
  ModelBuilders builders;
  // Each builder is called once; Parallelize clones what it wrote to cpu_0/, cpu_1/.
  builders.input = [](NetDef* init, NetDef* net) {
    SetArg(AddOp(net, "TensorProtosDBInput", {"reader"}, {"data_uint8", "label"}),
           "batch_size", 32);
    SetArg(AddOp(net, "Cast", {"data_uint8"}, {"data"}), "to", std::string("float"));
    SetArg(AddOp(net, "Scale", {"data"}, {"data"}), "scale", 1.0f / 255);
    AddOp(net, "StopGradient", {"data"}, {"data"});
  };
  builders.forward = [](NetDef* init, NetDef* net, float loss_scale) {
    std::string x = "data";
    const std::vector<std::pair<std::string, std::vector<int64_t>>> layers = {
        {"fc1", {256, 784}}, {"fc2", {128, 256}}, {"pred", {10, 128}}};
    for (const auto& [layer, shape] : layers) {
      SetArg(AddOp(init, "XavierFill", {}, {layer + "_w"}), "shape", shape);
      SetArg(AddOp(init, "ConstantFill", {}, {layer + "_b"}), "shape",
             std::vector<int64_t>{shape[0]});
      AddOp(net, "FC", {x, layer + "_w", layer + "_b"}, {layer});
      x = layer;
      if (layer != "pred") AddOp(net, "Relu", {x}, {x});
    }
    AddOp(net, "Softmax", {x}, {"softmax"});
    AddOp(net, "LabelCrossEntropy", {"softmax", "label"}, {"xent"});
    AddOp(net, "AveragedLoss", {"xent"}, {"loss"});
    SetArg(AddOp(net, "Scale", {"loss"}, {"scaled_loss"}), "scale", loss_scale);
    return std::vector<std::string>{"scaled_loss"};
  };
  builders.param_update = [](NetDef* init, NetDef* update,
                             const std::map<std::string, std::string>& param_to_grad) {
    OperatorDef* lr = AddOp(init, "ConstantFill", {}, {"lr"});
    SetArg(lr, "shape", std::vector<int64_t>{1});
    SetArg(lr, "value", 0.05f);
    for (const auto& [param, grad] : param_to_grad) {
      AddOp(init, "ConstantFill", {param}, {param + "_momentum"});  // zeros, param's shape
      SetArg(AddOp(update, "MomentumSGDUpdate", {grad, param + "_momentum", "lr", param},
                   {grad, param + "_momentum", param}), "momentum", 0.9f);
    }
  };
  ParallelizeOptions options;
  options.devices = {0, 1};
  options.shared_blobs = {"reader"};  // one reader: each device takes its own 32 images
  const Parallelized model = BuildDataParallel(builders, options);

  Workspace workspace;
  OperatorDef create_db;
  create_db.set_type("CreateDB");
  create_db.add_output("reader");
  SetArg(&create_db, "db", db);
  SetArg(&create_db, "db_type", std::string("minidb"));
  workspace.RunOperatorOnce(create_db);
  RunInitNet(&workspace, model);
  float first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    RunNet(&workspace, model);
    const float loss = (Fetch(workspace, "cpu_0/loss") + Fetch(workspace, "cpu_1/loss")) / 2;
    if (step < 5) first += loss / 5;
    if (step >= 35) last += loss / 5;
  }
  std::printf("C++: mean loss of the first 5 steps %.2f, of the last 5 %.2f\n", first, last);
  return last < 0.7f * first ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: data_parallel_mlp TRAIN_MINIDB\n");
    return 2;
  }
  try {
    return Train(argv[1]);
  } catch (const std::exception& error) {  // doppio::Error: a bad DB, a bad net ...
    std::fprintf(stderr, "data_parallel_mlp: %s\n", error.what());
    return 1;
  }
}
