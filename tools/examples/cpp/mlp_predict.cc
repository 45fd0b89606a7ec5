// mlp_predict: a C++ program built against an installed Doppio
// (tools/install.sh PREFIX), with nothing but
//   g++ mlp_predict.cc $(pkg-config --cflags --libs doppio)
// It builds an init net and a predict net in code (FC -> Relu -> FC ->
// Softmax over fixed weights), runs them in a Workspace and prints the class
// probabilities of the input rows given on the command line:
//   mlp_predict X00 X01 X02 X03 [X10 X11 X12 X13 ...]
// Weights: element k (row-major) of each parameter is scale * sin(k + phase),
// so anyone can recompute the result (tests/install does, with numpy).

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/enforce.h"
#include "core/tensor.h"
#include "core/workspace.h"
#include "proto/doppio.pb.h"

namespace {

constexpr int kInputs = 4;
constexpr int kHidden = 5;
constexpr int kClasses = 3;

doppio::OperatorDef* AddOp(doppio::NetDef* net, const std::string& type,
                   const std::vector<std::string>& inputs,
                   const std::vector<std::string>& outputs) {
  doppio::OperatorDef* op = net->add_op();
  op->set_type(type);
  for (const std::string& name : inputs) op->add_input(name);
  for (const std::string& name : outputs) op->add_output(name);
  return op;
}

// A GivenTensorFill of `dims` whose element k is scale * sin(k + phase).
void AddParameter(doppio::NetDef* init_net, const std::string& name,
                  const std::vector<int64_t>& dims, double scale, double phase) {
  doppio::OperatorDef* fill = AddOp(init_net, "GivenTensorFill", {}, {name});
  doppio::Argument* shape = fill->add_arg();
  shape->set_name("shape");
  int64_t count = 1;
  for (int64_t dim : dims) {
    shape->add_ints(dim);
    count *= dim;
  }
  doppio::Argument* values = fill->add_arg();
  values->set_name("values");
  for (int64_t k = 0; k < count; ++k) {
    values->add_floats(static_cast<float>(scale * std::sin(static_cast<double>(k) + phase)));
  }
}

int Usage() {
  std::fprintf(stderr,
               "usage: mlp_predict X00 X01 X02 X03 [X10 ...]: one or more rows of %d "
               "numbers\n",
               kInputs);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<float> rows;
  for (int i = 1; i < argc; ++i) {
    char* end = nullptr;
    const float value = std::strtof(argv[i], &end);
    if (end == argv[i] || *end != '\0') return Usage();
    rows.push_back(value);
  }
  if (rows.empty() || rows.size() % kInputs != 0) return Usage();
  const int64_t batch = static_cast<int64_t>(rows.size()) / kInputs;

  try {
    doppio::NetDef init_net;
    init_net.set_name("mlp_init");
    AddParameter(&init_net, "fc1_w", {kHidden, kInputs}, 0.5, 0.0);
    AddParameter(&init_net, "fc1_b", {kHidden}, 0.1, 1.0);
    AddParameter(&init_net, "fc2_w", {kClasses, kHidden}, 0.7, 2.0);
    AddParameter(&init_net, "fc2_b", {kClasses}, 0.2, 3.0);

    doppio::NetDef predict_net;
    predict_net.set_name("mlp_predict");
    for (const char* name : {"data", "fc1_w", "fc1_b", "fc2_w", "fc2_b"}) {
      predict_net.add_external_input(name);
    }
    predict_net.add_external_output("softmax");
    AddOp(&predict_net, "FC", {"data", "fc1_w", "fc1_b"}, {"fc1"});
    AddOp(&predict_net, "Relu", {"fc1"}, {"fc1"});
    AddOp(&predict_net, "FC", {"fc1", "fc2_w", "fc2_b"}, {"fc2"});
    AddOp(&predict_net, "Softmax", {"fc2"}, {"softmax"});

    doppio::Workspace workspace;
    workspace.RunNetOnce(init_net);
    doppio::Tensor* data = workspace.CreateBlob("data")->GetMutableTensor();
    data->Resize({batch, kInputs});
    float* data_values = data->mutable_data<float>();
    for (size_t i = 0; i < rows.size(); ++i) data_values[i] = rows[i];

    workspace.CreateNet(predict_net);
    workspace.RunNet(predict_net.name());

    const doppio::Blob* output = workspace.GetBlob("softmax");
    DOPPIO_ENFORCE(output != nullptr, "mlp_predict: the net left no blob 'softmax'");
    const doppio::Tensor& softmax = output->GetTensor();
    DOPPIO_ENFORCE(softmax.ndim() == 2 && softmax.dim(0) == batch && softmax.dim(1) == kClasses,
                   "mlp_predict: 'softmax' has an unexpected shape");
    const float* probabilities = softmax.data<float>();
    std::printf("softmax %lld %d\n", static_cast<long long>(batch), kClasses);
    for (int64_t row = 0; row < batch; ++row) {
      for (int c = 0; c < kClasses; ++c) {
        std::printf(c == 0 ? "%.9g" : " %.9g", probabilities[row * kClasses + c]);
      }
      std::printf("\n");
    }
  } catch (const doppio::Error& error) {
    std::fprintf(stderr, "mlp_predict: %s\n", error.what());
    return 1;
  }
  return 0;
}
