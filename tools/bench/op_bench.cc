// op_bench: times Doppio's Conv, SpatialBN and FC forward ops and the gradient
// ops their makers produce, at the reference CNN's shapes (docs/DESIGN.md section
// 8, batch 64), next to OpenBLAS's sgemm peak measured in the same process.
// Prints a table and, as the last line, one JSON object; the PyTorch peer
// (op_bench_torch.py) uses the same case names so op_bench.sh can join them.
//
// The ops are built once and run repeatedly, as a net would run them, so
// per-shape setup (oneDNN primitives, scratch buffers) is not timed.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <cblas.h>
#include <gflags/gflags.h>
#include <omp.h>

#include "core/enforce.h"
#include "core/gradient.h"
#include "core/registry.h"
#include "core/workspace.h"
#include "operators/blas.h"
#include "proto/doppio.pb.h"
#include "tools/cli_util.h"

DEFINE_int32(threads, 0,
             "threads for OpenBLAS and oneDNN (OpenMP); 0: every core of the machine");
DEFINE_int32(warmup, 3, "untimed runs of each op before the timed ones");
DEFINE_int32(reps, 20, "timed runs of each op; the table reports the best and the median");
DEFINE_int32(peak_size, 2048, "M = N = K of the square sgemm that measures the BLAS peak");
DEFINE_int32(peak_reps, 5, "timed runs of the peak sgemm (best is reported)");
DEFINE_string(only, "", "comma-separated case names to run (conv1,bn1,...); default all");
DEFINE_string(json_out, "", "also write the JSON object to this file");

namespace doppio {
namespace {

constexpr const char* kTool = "op_bench";
constexpr const char* kUsage =
    "times Conv, SpatialBN and FC forward and gradient ops at the reference\n"
    "CNN's shapes next to OpenBLAS's sgemm peak; prints a table and a JSON line.\n"
    "\n"
    "  op_bench [--threads N] [--reps R] [--warmup W] [--json_out FILE]";

constexpr int64_t kBatch = 64;

struct Timing {
  double best_s = 0;
  double median_s = 0;
};

Timing Measure(const std::function<void()>& fn, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> seconds;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    const auto stop = std::chrono::steady_clock::now();
    seconds.push_back(std::chrono::duration<double>(stop - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return Timing{seconds.front(), seconds[seconds.size() / 2]};
}

// One op to benchmark: its forward def, the shapes of its inputs, and the
// work of each pass. Compute-bound ops count FLOPs; memory-bound ones
// (SpatialBN) count the bytes they must at least move.
struct Case {
  std::string name;
  std::string shape;  // human-readable, for the table
  OperatorDef forward;
  std::vector<std::vector<int64_t>> input_dims;
  // Inputs whose values must be positive (variances) or near one (scales).
  std::vector<int> positive_inputs;
  double forward_flop = 0, backward_flop = 0;
  double forward_bytes = 0, backward_bytes = 0;
};

Argument IntArg(const std::string& name, int64_t value) {
  Argument arg;
  arg.set_name(name);
  arg.set_i(value);
  return arg;
}

OperatorDef MakeDef(const std::string& type, const std::string& prefix,
                    const std::vector<std::string>& inputs,
                    const std::vector<std::string>& outputs,
                    const std::vector<Argument>& args = {}) {
  OperatorDef def;
  def.set_type(type);
  def.set_name(prefix);
  for (const std::string& input : inputs) def.add_input(prefix + "_" + input);
  for (const std::string& output : outputs) def.add_output(prefix + "_" + output);
  for (const Argument& arg : args) *def.add_arg() = arg;
  return def;
}

// Conv 3x3, pad 1, stride 1 (the reference CNN's): the output is the input's size.
Case ConvCase(const std::string& name, int64_t in_channels, int64_t out_channels,
              int64_t size) {
  Case c;
  c.name = name;
  c.forward = MakeDef("Conv", name, {"X", "W", "b"}, {"Y"},
                      {IntArg("kernel", 3), IntArg("pad", 1), IntArg("stride", 1)});
  c.input_dims = {{kBatch, in_channels, size, size}, {out_channels, in_channels, 3, 3},
                  {out_channels}};
  // 2 * N * Cout * Hout * Wout * Cin * kh * kw; the gradient does that twice
  // (dW and dX), its bias sum is negligible.
  c.forward_flop = 2.0 * kBatch * out_channels * size * size * in_channels * 9;
  c.backward_flop = 2 * c.forward_flop;
  std::ostringstream shape;
  shape << "Conv " << in_channels << "->" << out_channels << " 3x3 p1, " << kBatch << "x"
        << in_channels << "x" << size << "x" << size;
  c.shape = shape.str();
  return c;
}

Case SpatialBNCase(const std::string& name, int64_t channels, int64_t size) {
  Case c;
  c.name = name;
  c.forward = MakeDef("SpatialBN", name, {"X", "scale", "bias", "mean", "var"},
                      {"Y", "mean", "var", "saved_mean", "saved_inv_std"});
  c.input_dims = {{kBatch, channels, size, size}, {channels}, {channels}, {channels}, {channels}};
  c.positive_inputs = {1, 4};
  // Training statistics read X once, normalizing reads it again and writes Y;
  // the gradient reads X and dY for its sums, then again for dX, which it writes.
  const double bytes = 4.0 * kBatch * channels * size * size;
  c.forward_bytes = 3 * bytes;
  c.backward_bytes = 5 * bytes;
  std::ostringstream shape;
  shape << "SpatialBN train, " << kBatch << "x" << channels << "x" << size << "x" << size;
  c.shape = shape.str();
  return c;
}

Case FCCase(const std::string& name, int64_t in_features, int64_t out_features) {
  Case c;
  c.name = name;
  c.forward = MakeDef("FC", name, {"X", "W", "b"}, {"Y"});
  c.input_dims = {{kBatch, in_features}, {out_features, in_features}, {out_features}};
  c.forward_flop = 2.0 * kBatch * in_features * out_features;
  c.backward_flop = 2 * c.forward_flop;  // dW = dY^T X and dX = dY W
  std::ostringstream shape;
  shape << "FC " << in_features << "->" << out_features << ", batch " << kBatch;
  c.shape = shape.str();
  return c;
}

std::vector<Case> ReferenceCases() {
  return {ConvCase("conv1", 1, 32, 28),   SpatialBNCase("bn1", 32, 28),
          ConvCase("conv2", 32, 64, 14),  SpatialBNCase("bn2", 64, 14),
          FCCase("fc1", 64 * 7 * 7, 128), FCCase("fc2", 128, 10)};
}

void FillRandom(Tensor* tensor, const std::vector<int64_t>& dims, std::mt19937& generator,
                float low, float high) {
  tensor->Resize(dims);
  std::uniform_real_distribution<float> distribution(low, high);
  float* data = tensor->mutable_data<float>();
  for (int64_t i = 0; i < tensor->numel(); ++i) data[i] = distribution(generator);
}

struct Row {
  std::string name, pass, op, shape;
  Timing timing;
  double flop = 0, bytes = 0;
};

// Builds the case's forward op and its gradient ops in a fresh workspace and
// times each pass.
std::vector<Row> RunCase(const Case& c, int warmup, int reps) {
  Workspace ws;
  std::mt19937 generator(1234);
  for (int i = 0; i < c.forward.input_size(); ++i) {
    const bool positive =
        std::find(c.positive_inputs.begin(), c.positive_inputs.end(), i) !=
        c.positive_inputs.end();
    FillRandom(ws.CreateBlob(c.forward.input(i))->GetMutableTensor(), c.input_dims[i],
               generator, positive ? 0.5f : -1.0f, positive ? 1.5f : 1.0f);
  }
  std::unique_ptr<OperatorBase> forward = CreateOperator(c.forward, &ws);
  forward->Run();

  // Only the first output (Y) carries a gradient, as in a training net.
  std::vector<GradientWrapper> output_gradients(c.forward.output_size());
  output_gradients[0].dense = GradientName(c.forward.output(0));
  const Tensor& y = ws.GetBlob(c.forward.output(0))->GetTensor();
  FillRandom(ws.CreateBlob(output_gradients[0].dense)->GetMutableTensor(), y.dims(), generator,
             -1.0f, 1.0f);
  const GradientOpsMeta meta = GetGradientForOp(c.forward, output_gradients);
  std::vector<std::unique_ptr<OperatorBase>> backward;
  std::string backward_types;
  for (const OperatorDef& def : meta.ops) {
    backward.push_back(CreateOperator(def, &ws));
    backward_types += (backward_types.empty() ? "" : "+") + def.type();
  }

  Row forward_row{c.name, "forward", c.forward.type(), c.shape, {}, c.forward_flop,
                  c.forward_bytes};
  forward_row.timing = Measure([&] { forward->Run(); }, warmup, reps);
  Row backward_row{c.name, "backward", backward_types, c.shape, {}, c.backward_flop,
                   c.backward_bytes};
  backward_row.timing = Measure(
      [&] {
        for (auto& op : backward) op->Run();
      },
      warmup, reps);
  return {forward_row, backward_row};
}

struct Peak {
  int64_t n = 0;
  Timing timing;
  double gflops = 0;
};

// The best square sgemm rate: the ceiling the GEMM-backed ops are held to.
Peak MeasureSgemmPeak(int64_t n, int reps) {
  std::vector<float> a(n * n), b(n * n), c(n * n);
  std::mt19937 generator(99);
  std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
  for (auto* v : {&a, &b}) {
    for (float& x : *v) x = distribution(generator);
  }
  Peak peak;
  peak.n = n;
  peak.timing = Measure(
      [&] { blas::Gemm<float>(false, false, n, n, n, 1.0f, a.data(), b.data(), 0.0f, c.data()); },
      1, reps);
  peak.gflops = 2.0 * n * n * n / peak.timing.best_s / 1e9;
  return peak;
}

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

std::string JsonString(const std::string& text) {
  std::string quoted = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\') quoted += '\\';
    quoted += ch;
  }
  return quoted + "\"";
}

std::string JsonNumber(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.6g", value);
  return buffer;
}

std::string ToJson(int threads, const Peak& peak, const std::vector<Row>& rows) {
  std::ostringstream json;
  json << "{\"tool\":\"op_bench\",\"framework\":\"doppio\",\"threads\":" << threads
       << ",\"warmup\":" << FLAGS_warmup << ",\"reps\":" << FLAGS_reps
       << ",\"batch\":" << kBatch << ",\"openblas_core\":" << JsonString(openblas_get_corename())
       << ",\"sgemm_peak\":{\"n\":" << peak.n
       << ",\"ms_best\":" << JsonNumber(peak.timing.best_s * 1e3)
       << ",\"gflops\":" << JsonNumber(peak.gflops) << "},\"results\":[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    json << (i ? "," : "") << "{\"name\":" << JsonString(r.name)
         << ",\"pass\":" << JsonString(r.pass) << ",\"op\":" << JsonString(r.op)
         << ",\"shape\":" << JsonString(r.shape)
         << ",\"ms_best\":" << JsonNumber(r.timing.best_s * 1e3)
         << ",\"ms_median\":" << JsonNumber(r.timing.median_s * 1e3);
    if (r.flop > 0) {
      const double gflops = r.flop / r.timing.best_s / 1e9;
      json << ",\"gflop\":" << JsonNumber(r.flop / 1e9) << ",\"gflops\":" << JsonNumber(gflops)
           << ",\"pct_of_sgemm_peak\":" << JsonNumber(100 * gflops / peak.gflops);
    }
    if (r.bytes > 0) {
      json << ",\"gbyte\":" << JsonNumber(r.bytes / 1e9)
           << ",\"gbytes_per_s\":" << JsonNumber(r.bytes / r.timing.best_s / 1e9);
    }
    json << "}";
  }
  json << "]}";
  return json.str();
}

void PrintTable(int threads, const Peak& peak, const std::vector<Row>& rows) {
  std::printf("op_bench: %d thread(s), OpenBLAS core %s, best of %d after %d warmup\n",
              threads, openblas_get_corename(), FLAGS_reps, FLAGS_warmup);
  std::printf("sgemm peak (%lld^3): %.1f GFLOP/s\n\n", static_cast<long long>(peak.n),
              peak.gflops);
  std::printf("%-7s %-8s %-34s %9s %9s %9s %7s %7s\n", "case", "pass", "shape", "best ms",
              "median ms", "GFLOP/s", "%peak", "GB/s");
  for (const Row& r : rows) {
    std::printf("%-7s %-8s %-34s %9.3f %9.3f", r.name.c_str(), r.pass.c_str(), r.shape.c_str(),
                r.timing.best_s * 1e3, r.timing.median_s * 1e3);
    if (r.flop > 0) {
      const double gflops = r.flop / r.timing.best_s / 1e9;
      std::printf(" %9.1f %6.1f%%", gflops, 100 * gflops / peak.gflops);
    } else {
      std::printf(" %9s %7s", "-", "-");
    }
    if (r.bytes > 0) {
      std::printf(" %7.1f\n", r.bytes / r.timing.best_s / 1e9);
    } else {
      std::printf(" %7s\n", "-");
    }
  }
  std::printf("\n");
}

int RunBenchmark() {
  if (FLAGS_threads < 0) throw cli::UsageError("--threads must be >= 0");
  if (FLAGS_reps < 1 || FLAGS_warmup < 0 || FLAGS_peak_reps < 1 || FLAGS_peak_size < 1) {
    throw cli::UsageError("--reps, --peak_reps and --peak_size must be >= 1, --warmup >= 0");
  }
  const int threads = FLAGS_threads > 0
                          ? FLAGS_threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  openblas_set_num_threads(threads);
  omp_set_num_threads(threads);

  std::vector<Case> cases = ReferenceCases();
  const std::vector<std::string> only = SplitCommas(FLAGS_only);
  if (!only.empty()) {
    for (const std::string& name : only) {
      const bool known = std::any_of(cases.begin(), cases.end(),
                                     [&](const Case& c) { return c.name == name; });
      if (!known) throw cli::UsageError("--only: no case named '" + name + "'");
    }
    cases.erase(std::remove_if(cases.begin(), cases.end(),
                               [&](const Case& c) {
                                 return std::find(only.begin(), only.end(), c.name) ==
                                        only.end();
                               }),
                cases.end());
  }

  // Opened first, so a bad path fails before minutes of timing.
  std::ofstream json_file;
  if (!FLAGS_json_out.empty()) {
    json_file.open(FLAGS_json_out, std::ios::trunc);
    DOPPIO_ENFORCE(json_file.good(), "cannot write --json_out file '", FLAGS_json_out, "'");
  }

  const Peak peak = MeasureSgemmPeak(FLAGS_peak_size, FLAGS_peak_reps);
  std::vector<Row> rows;
  for (const Case& c : cases) {
    for (Row& row : RunCase(c, FLAGS_warmup, FLAGS_reps)) rows.push_back(std::move(row));
  }
  PrintTable(threads, peak, rows);
  const std::string json = ToJson(threads, peak, rows);
  std::printf("%s\n", json.c_str());
  if (json_file.is_open()) {
    json_file << json << "\n";
    json_file.close();
    DOPPIO_ENFORCE(json_file.good(), "cannot write --json_out file '", FLAGS_json_out, "'");
  }
  return 0;
}

}  // namespace
}  // namespace doppio

int main(int argc, char** argv) {
  using namespace doppio;
  return cli::RunFlagsOnlyTool(kTool, kUsage,
                               "tools/bench/op_bench", argc, argv,
                               RunBenchmark);
}
