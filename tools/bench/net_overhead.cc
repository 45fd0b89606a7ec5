// Executor benchmarks (issue 5), printed as one JSON object per line:
//
//  * overhead: a net of --ops tiny ops on 1-element float tensors, a chain
//    x = Add(x, one) in place (what PyTorch's x.add_(one) loop does), run by
//    the "simple" and "dag" executors; microseconds per op, best of --reps
//    runs. The same net of a do-nothing op gives the executor's own share.
//  * parallel: two independent chains of --conv_layers Conv layers, one on
//    cpu_0 and one on cpu_1, run by "dag" and by "simple"; the speed-up is
//    simple / dag. Both use the net's default intra-op threads (cores / 2
//    devices); "simple_all_cores" gives the simple net every core per op.
//
//   net_overhead [--ops N] [--reps R] [--conv_layers L] [--conv_channels C]
//                [--conv_size S] [--conv_batch B] [--skip_conv] [--trace FILE]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <gflags/gflags.h>

#include "core/gradient.h"
#include "core/intra_op_threads.h"
#include "core/net.h"
#include "core/net_trace.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/workspace.h"
#include "proto/doppio.pb.h"

DEFINE_int32(ops, 10000, "ops in the overhead nets");
DEFINE_int32(reps, 7, "timed runs per case; the best one counts");
DEFINE_int32(conv_layers, 6, "Conv layers per device in the parallel bench");
DEFINE_int32(conv_channels, 32, "channels of every Conv layer");
DEFINE_int32(conv_size, 32, "height and width of the Conv inputs");
DEFINE_int32(conv_batch, 4, "batch size of the Conv inputs");
DEFINE_bool(skip_conv, false, "run only the overhead bench");
DEFINE_string(trace, "", "writes a chrome://tracing JSON of one run of the dag Conv net here");

namespace doppio {
namespace {

// Does nothing: what remains of a run is the executor's own cost.
class NoOpBenchOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  void Run() override {}
};
OPERATOR_SCHEMA(NetOverheadNoOp).NumInputs(0, 2).NumOutputs(0, 1).AllowAnyInplace();
REGISTER_CPU_OPERATOR(NetOverheadNoOp, NoOpBenchOp);
NO_GRADIENT(NetOverheadNoOp, "benchmark-only op; computes nothing");

using Clock = std::chrono::steady_clock;

Argument IntArg(const std::string& name, int64_t value) {
  Argument arg;
  arg.set_name(name);
  arg.set_i(value);
  return arg;
}

void FeedFloats(Workspace* ws, const std::string& name, const std::vector<int64_t>& dims,
                std::mt19937* rng, float scale) {
  Tensor* tensor = ws->CreateBlob(name)->GetMutableTensor();
  tensor->Resize(dims);
  std::normal_distribution<float> normal(0.0f, scale);
  float* data = tensor->mutable_data<float>();
  for (int64_t i = 0; i < tensor->numel(); ++i) data[i] = rng ? normal(*rng) : scale;
}

// Best wall time of `reps` runs, after two untimed ones.
double BestSeconds(NetBase* net, int reps) {
  net->Run();
  net->Run();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto start = Clock::now();
    net->Run();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

NetDef ChainOfTinyOps(const std::string& type, const std::string& executor, int ops) {
  NetDef net;
  net.set_name(type + "_" + executor);
  net.set_type(executor);
  for (int i = 0; i < ops; ++i) {
    OperatorDef* op = net.add_op();
    op->set_type(type);
    op->add_input("x");
    op->add_input("one");
    op->add_output("x");
  }
  return net;
}

void OverheadBench() {
  for (const char* type : {"Add", "NetOverheadNoOp"}) {
    for (const char* executor : {"simple", "dag"}) {
      Workspace ws;
      FeedFloats(&ws, "x", {1}, nullptr, 0.0f);
      FeedFloats(&ws, "one", {1}, nullptr, 1.0f);
      NetBase* net = ws.CreateNet(ChainOfTinyOps(type, executor, FLAGS_ops));
      const double seconds = BestSeconds(net, FLAGS_reps);
      std::printf(
          "{\"bench\": \"overhead\", \"executor\": \"%s\", \"op\": \"%s\", \"ops\": %d, "
          "\"us_per_op\": %.4f}\n",
          executor, type, FLAGS_ops, seconds / FLAGS_ops * 1e6);
      std::fflush(stdout);
    }
  }
}

// Two chains of Conv(3x3, pad 1) layers, one per CPU device.
NetDef TwoConvChains(const std::string& executor, int intra_op_threads) {
  NetDef net;
  net.set_name("conv_" + executor);
  net.set_type(executor);
  if (intra_op_threads > 0) *net.add_arg() = IntArg("intra_op_threads", intra_op_threads);
  for (int layer = 0; layer < FLAGS_conv_layers; ++layer) {
    for (int device = 0; device < 2; ++device) {
      const std::string prefix = "cpu_" + std::to_string(device) + "/";
      OperatorDef* op = net.add_op();
      op->set_type("Conv");
      op->mutable_device_option()->set_cuda_gpu_id(device);
      op->add_input(prefix + (layer == 0 ? "data" : "h" + std::to_string(layer - 1)));
      op->add_input(prefix + "w" + std::to_string(layer));
      op->add_input(prefix + "b" + std::to_string(layer));
      op->add_output(prefix + "h" + std::to_string(layer));
      *op->add_arg() = IntArg("kernel", 3);
      *op->add_arg() = IntArg("pad", 1);
    }
  }
  return net;
}

void ParallelBench() {
  Workspace ws;
  std::mt19937 rng(5);
  const int64_t c = FLAGS_conv_channels, s = FLAGS_conv_size;
  for (int device = 0; device < 2; ++device) {
    const std::string prefix = "cpu_" + std::to_string(device) + "/";
    FeedFloats(&ws, prefix + "data", {FLAGS_conv_batch, c, s, s}, &rng, 1.0f);
    for (int layer = 0; layer < FLAGS_conv_layers; ++layer) {
      FeedFloats(&ws, prefix + "w" + std::to_string(layer), {c, c, 3, 3}, &rng, 0.1f);
      FeedFloats(&ws, prefix + "b" + std::to_string(layer), {c}, &rng, 0.1f);
    }
  }
  struct Case {
    const char* label;
    const char* executor;
    int intra_op_threads;  // 0: the net's default
  };
  const Case cases[] = {{"dag", "dag", 0}, {"simple", "simple", 0},
                        {"simple_all_cores", "simple", AvailableCores()}};
  double dag_seconds = 0;
  for (const Case& c : cases) {
    NetDef def = TwoConvChains(c.executor, c.intra_op_threads);
    def.set_name(std::string("conv_") + c.label);
    NetBase* net = ws.CreateNet(def);
    const double seconds = BestSeconds(net, FLAGS_reps);
    if (std::string(c.label) == "dag") {
      dag_seconds = seconds;
      if (!FLAGS_trace.empty()) WriteChromeTrace(net, FLAGS_trace);
    }
    std::printf(
        "{\"bench\": \"parallel\", \"executor\": \"%s\", \"conv_layers_per_device\": %d, "
        "\"input\": [%d, %d, %d, %d], \"ms_per_run\": %.3f, \"dag_speedup\": %.3f}\n",
        c.label, FLAGS_conv_layers, FLAGS_conv_batch, FLAGS_conv_channels, FLAGS_conv_size,
        FLAGS_conv_size, seconds * 1e3, seconds / dag_seconds);
    std::fflush(stdout);
  }
}

}  // namespace
}  // namespace doppio

int main(int argc, char** argv) {
  gflags::SetUsageMessage("times the simple and dag executors (see tools/bench/README.md)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  try {
    doppio::OverheadBench();
    if (!FLAGS_skip_conv) doppio::ParallelBench();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "net_overhead: %s\n", error.what());
    return 1;
  }
  return 0;
}
