// run_net: runs a serialized Doppio/Caffe2 net (or a PlanDef) on the CPU,
// feeding inputs from .npy or TensorProto files and writing outputs as .npy,
// optionally timing the net per operator type.

#include <gflags/gflags.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/enforce.h"
#include "core/net.h"
#include "core/net_trace.h"
#include "core/npy.h"
#include "core/serialization.h"
#include "core/tensor_int8.h"
#include "core/workspace.h"
#include "parallel/gloo/gloo_common.h"
#include "proto/doppio.pb.h"
#include "tools/cli_util.h"
#include "transforms/optimize_inference.h"

DEFINE_string(init_net, "",
              "NetDef file (binary or text protobuf) run once before anything "
              "else, e.g. to fill parameters");
DEFINE_string(net, "",
              "NetDef file (binary or text protobuf) to run; this or --plan is required");
DEFINE_string(plan, "",
              "PlanDef file (binary or text protobuf) to run once instead of --net; its "
              "execution steps set their own iteration counts");
DEFINE_string(input, "",
              "NAME=FILE: feeds blob NAME from FILE (.npy, or a TensorProto in "
              "binary or text protobuf). Repeatable, or comma-separated");
DEFINE_string(output, "",
              "NAME=FILE: writes blob NAME to FILE after the last run: a tensor as "
              ".npy (an Int8 blob: its integers), or with FILE ending in .pb any blob "
              "as Caffe2's serialized BlobProto (an Int8 blob with its scale and zero "
              "point). Repeatable, or comma-separated");
DEFINE_int32(iters, 1, "timed runs of --net");
DEFINE_bool(optimize, true,
            "after the init net and the inputs, rewrite --net for inference before "
            "creating it: fold Conv + SpatialBN(is_test), fuse Conv + activation "
            "(ConvFusion) and FC + Relu, MatMul + bias -> FC, run activations in place "
            "(transforms/optimize_inference.h). On by default, as ONNX Runtime's graph "
            "optimizations are; --nooptimize runs the net exactly as given. The net's "
            "external outputs and --output blobs are kept as the net computes them");
DEFINE_string(optimize_passes, "default",
              "which inference passes run, a comma-separated subset of "
              "conv_bn,matmul_bias,activation,conv_sum,conv_inference,channels_last,"
              "channels_last_always,inplace, "
              "\"default\" (all but channels_last_always; channels_last switches a "
              "convolutional region to NHWC only where the kernels say it pays on this "
              "CPU), or all, none");
DEFINE_int32(warmup, 0, "untimed runs of --net before the timed ones");
DEFINE_bool(report_per_op, false,
            "after the timed runs, print the time spent per operator type");
DEFINE_string(profile, "",
              "FILE: after the warmup, runs --net once more (untimed) and writes a "
              "chrome://tracing JSON of that run to FILE: one event per op with its "
              "device, worker thread, start and duration");
DEFINE_string(trace, "", "FILE: the older name of --profile");

namespace doppio {
namespace {

constexpr const char* kTool = "run_net";

constexpr const char* kUsage =
    "runs a serialized net.\n"
    "\n"
    "  run_net --net=predict.pb [--init_net=init.pb] \\\n"
    "          [--input data=x.npy --input label=y.pb] [--output softmax=out.npy] \\\n"
    "          [--iters=N] [--warmup=N] [--report_per_op] [--profile=trace.json]\n"
    "  run_net --plan=plan.pbtxt [--init_net=init.pb] [--input ...] [--output ...]\n"
    "\n"
    "The net is rewritten for inference (Conv+SpatialBN folding, Conv/FC +\n"
    "activation fusion, in-place activations) after the inputs are fed, keeping\n"
    "its external outputs and --output blobs; --nooptimize runs it as given.\n"
    "Order: init_net runs once, inputs are fed, the net is created, then runs\n"
    "--warmup times untimed, once traced (--profile) and --iters times timed;\n"
    "outputs are written last.\n"
    "With --plan, the plan runs once in place of the net (same order otherwise).\n"
    "Net files may be binary or text protobuf (detected from their content).\n"
    "Detection nets (Detectron's Faster R-CNN export, Mask R-CNN2Go) take the\n"
    "image and im_info and leave their detections in score_nms, bbox_nms,\n"
    "class_nms (Mask R-CNN2Go also its masks in mask_fcn_probs):\n"
    "  run_net --init_net=model_init.pb --net=model.pb --input data=img.npy \\\n"
    "          --input im_info=info.npy --output score_nms=s.npy \\\n"
    "          --output bbox_nms=b.npy --output class_nms=c.npy\n"
    "Without a model's weights, tools/synthesize_weights.py writes an init\n"
    "net of shapes the net accepts (see docs/serving.md on detection nets).\n"
    "Quantized nets (Caffe2's Int8 ops) run the same way; an Int8 blob's\n"
    "--output is its integers as .npy, or with scale and zero point as a\n"
    "BlobProto when FILE ends in .pb:  --output res2=res2.pb\n"
    "Exit status: 0 success, 1 failure (one line on stderr names the file, op\n"
    "or blob), 2 command-line error.";

struct Options {
  std::vector<std::pair<std::string, std::string>> inputs;
  std::vector<std::pair<std::string, std::string>> outputs;
};

// Exactly one of --net and --plan; the net-only timing flags make no sense
// for a plan, whose steps set their own iteration counts.
void CheckNetOrPlan() {
  if (FLAGS_plan.empty()) {
    if (FLAGS_net.empty()) throw cli::UsageError("--net (or --plan) is required");
    return;
  }
  if (!FLAGS_net.empty()) throw cli::UsageError("--net and --plan are mutually exclusive");
  for (const char* flag : {"iters", "warmup", "optimize", "report_per_op", "trace", "profile"}) {
    if (!gflags::GetCommandLineFlagInfoOrDie(flag).is_default) {
      throw cli::UsageError(std::string("--") + flag +
                            " applies to --net only; a plan's steps set their own "
                            "iteration counts (num_iter)");
    }
  }
}

Options ParseOptions(int argc, char** argv) {
  cli::ParsedCommandLine parsed = cli::ParseCommandLine(argc, argv, {"input", "output"});
  if (parsed.help_requested) {
    gflags::ShowUsageWithFlagsRestrict(argv[0], "tools/run_net");
    std::exit(0);
  }
  if (!parsed.positional.empty()) {
    throw cli::UsageError("unexpected argument '" + parsed.positional.front() + "'");
  }
  CheckNetOrPlan();
  if (!FLAGS_profile.empty() && !FLAGS_trace.empty() && FLAGS_profile != FLAGS_trace) {
    throw cli::UsageError("--profile and --trace name one file (--trace is its older name); "
                          "give one of them");
  }
  try {
    transforms::InferencePasses::Parse(FLAGS_optimize_passes);
  } catch (const Error& error) {
    throw cli::UsageError("--optimize_passes: " + error.message());
  }
  if (FLAGS_iters < 0) throw cli::UsageError("--iters must be >= 0");
  if (FLAGS_warmup < 0) throw cli::UsageError("--warmup must be >= 0");
  Options options;
  options.inputs = cli::ParseNameFileList("input", parsed.repeated["input"]);
  options.outputs = cli::ParseNameFileList("output", parsed.repeated["output"]);
  return options;
}

NetDef LoadNet(const std::string& path) {
  NetDef net;
  cli::ReadProtoFile(path, &net);
  return net;
}

// Context for errors raised while working on the net read from `path`.
template <typename Fn>
void WithNetContext(const std::string& what, const std::string& path, Fn&& fn) {
  try {
    fn();
  } catch (Error& error) {
    error.AppendContext(what + " from '" + path + "'");
    throw;
  }
}

void FeedInputs(const std::vector<std::pair<std::string, std::string>>& inputs,
                Workspace* workspace) {
  for (const auto& input : inputs) {
    try {
      Tensor tensor = cli::ReadTensorFile(input.second);
      workspace->CreateBlob(input.first)->Reset(std::make_unique<Tensor>(std::move(tensor)));
    } catch (Error& error) {
      error.AppendContext("while reading --input " + input.first + "=" + input.second);
      throw;
    }
  }
}

// A declared input that nobody provides is a command-line mistake; say so
// before the op that reads it fails more obscurely.
void CheckExternalInputs(const NetDef& net, const std::string& path,
                         const Workspace& workspace) {
  for (const std::string& name : net.external_input()) {
    DOPPIO_ENFORCE(workspace.HasBlob(name), "net '", net.name(), "' from '", path,
                   "' declares external input '", name,
                   "', but neither --input nor the init net provides it");
  }
}

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Caffe2's serialized blob (what Save writes for it): any blob with a
// serializer, an Int8TensorCPU with its scale and zero point.
void WriteBlobProtoFile(const Blob& blob, const std::string& name, const std::string& path) {
  const std::string bytes = SerializeBlobToString(blob, name);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  DOPPIO_ENFORCE(file.is_open(), "cannot open '", path, "' for writing: ", std::strerror(errno));
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  DOPPIO_ENFORCE(!file.fail(), "cannot write '", path, "': ", std::strerror(errno));
}

// `what_ran` names the net or plan in errors: "net 'main'".
void WriteOutputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                  const std::string& what_ran, const Workspace& workspace) {
  for (const auto& output : outputs) {
    const std::string& name = output.first;
    const Blob* blob = workspace.GetBlob(name);
    DOPPIO_ENFORCE(blob != nullptr, "--output blob '", name, "' does not exist after running ",
                   what_ran);
    try {
      if (EndsWith(output.second, ".pb")) {
        WriteBlobProtoFile(*blob, name, output.second);
      } else if (blob->IsType<int8::Int8TensorCPU>()) {
        WriteNpyFile(blob->Get<int8::Int8TensorCPU>().t, output.second);
      } else {
        DOPPIO_ENFORCE(blob->IsTensor(), "--output blob '", name, "' holds ", blob->TypeName(),
                       ", not a tensor; write it as a BlobProto (a FILE ending in .pb)");
        WriteNpyFile(blob->GetTensor(), output.second);
      }
    } catch (Error& error) {
      error.AppendContext("while writing --output " + name + "=" + output.second);
      throw;
    }
  }
}

// --optimize: the inference rewrites, after the init net filled the
// weights they fold; blobs the user asked for stay as the net computes them.
NetDef OptimizeNet(const NetDef& net_def, const Options& options, Workspace* workspace) {
  std::vector<std::string> keep;
  for (const auto& output : options.outputs) keep.push_back(output.first);
  transforms::InferenceOptimizations done;
  NetDef optimized;
  WithNetContext("while optimizing the net", FLAGS_net, [&] {
    optimized = transforms::OptimizeForInference(
        net_def, workspace, keep, &done,
        transforms::InferencePasses::Parse(FLAGS_optimize_passes));
  });
  std::printf("optimized net '%s': %d -> %d op(s): %s\n", net_def.name().c_str(),
              net_def.op_size(), optimized.op_size(), done.Summary().c_str());
  return optimized;
}

// --plan: runs the plan once, timed as a whole.
void RunPlanFile(const Options& options, Workspace* workspace) {
  PlanDef plan;
  cli::ReadProtoFile(FLAGS_plan, &plan);
  const auto start = std::chrono::steady_clock::now();
  WithNetContext("while running the plan", FLAGS_plan, [&] { workspace->RunPlan(plan); });
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  WriteOutputs(options.outputs, "plan '" + plan.name() + "'", *workspace);
  std::printf("plan '%s': %d network(s), %d execution step(s), %.4f ms\n",
              plan.name().c_str(), plan.network_size(), plan.execution_step_size(),
              elapsed.count() * 1e3);
  std::fflush(stdout);
}

void Run(const Options& options) {
  Workspace workspace;
  if (!FLAGS_init_net.empty()) {
    const NetDef init_net = LoadNet(FLAGS_init_net);
    WithNetContext("while running the init net", FLAGS_init_net,
                   [&] { workspace.RunNetOnce(init_net); });
  }
  FeedInputs(options.inputs, &workspace);
  if (!FLAGS_plan.empty()) {
    RunPlanFile(options, &workspace);
    return;
  }

  NetDef net_def = LoadNet(FLAGS_net);
  CheckExternalInputs(net_def, FLAGS_net, workspace);
  if (FLAGS_optimize) net_def = OptimizeNet(net_def, options, &workspace);
  NetBase* net = nullptr;
  WithNetContext("while creating the net", FLAGS_net,
                 [&] { net = workspace.CreateNet(net_def); });
  WithNetContext("during warmup of the net", FLAGS_net, [&] {
    for (int i = 0; i < FLAGS_warmup; ++i) net->Run();
  });
  const std::string& trace_file = FLAGS_profile.empty() ? FLAGS_trace : FLAGS_profile;
  if (!trace_file.empty()) {
    WithNetContext("while tracing the net", FLAGS_net,
                   [&] { WriteChromeTrace(net, trace_file); });
  }

  // The profiler observes only the timed runs; it is the report's source.
  std::unique_ptr<NetProfiler> profiler;
  if (FLAGS_report_per_op) profiler = std::make_unique<NetProfiler>(net);
  const auto start = std::chrono::steady_clock::now();
  WithNetContext("while running the net", FLAGS_net, [&] {
    if (profiler) {
      profiler->Run(FLAGS_iters);
    } else {
      for (int i = 0; i < FLAGS_iters; ++i) net->Run();
    }
  });
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  const std::string report = profiler ? profiler->PerOpTypeReport() : "";
  profiler.reset();  // detaches it from the net

  WriteOutputs(options.outputs, "net '" + net_def.name() + "'", workspace);

  const double per_iter_ms = FLAGS_iters > 0 ? elapsed.count() * 1e3 / FLAGS_iters : 0.0;
  std::printf("net '%s': %d op(s), %d warmup + %d timed iteration(s), %.4f ms/iter\n",
              net_def.name().c_str(), net_def.op_size(), FLAGS_warmup, FLAGS_iters,
              per_iter_ms);
  if (FLAGS_report_per_op) std::fputs(report.c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace
}  // namespace doppio

int main(int argc, char** argv) {
  using namespace doppio;
  return cli::RunTool(kTool, kUsage, argv[0], [&] {
    Run(ParseOptions(argc, argv));
    // A net with Gloo collectives: let every peer finish its last one
    // before this process's exit closes the connections.
    DrainCommonWorlds();
    return 0;
  });
}
