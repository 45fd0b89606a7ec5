// Benchmark of the in-process Allreduce (parallel/allreduce_op): for each
// device count n, the op over n blobs of --mib MiB of float32, beside memcpy
// of the same size measured in the same process and rounds, on one thread
// and on every core.
//
// Bandwidths follow the NCCL/Caffe2 "algorithm bandwidth" convention:
// Allreduce GB/s = n * size / time (every device's buffer counts once);
// memcpy GB/s = size / time (bytes copied). Both move 2 bytes of memory
// traffic per counted byte (Allreduce reads n buffers and writes n), so
// 100% would mean the sum costs no more than copying.
//
// Prints a table and one JSON line ("json: {...}").
#include <gflags/gflags.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/allocator.h"
#include "core/enforce.h"
#include "core/intra_op_threads.h"
#include "core/registry.h"
#include "core/workspace.h"

DEFINE_double(mib, 25, "MiB of float32 per device buffer");
DEFINE_string(devices, "2,4", "comma-separated device counts to time");
DEFINE_int32(iters, 20, "timed runs per round; the best one counts");
DEFINE_int32(rounds, 3, "rounds alternating memcpy and Allreduce");
DEFINE_int32(num_threads, 0, "Allreduce's num_threads argument (0: every core)");

namespace doppio {
namespace {

using Clock = std::chrono::steady_clock;

double BestSeconds(int iters, const std::function<void()>& run) {
  run();  // warm: pages touched, pool started
  double best = 1e30;
  for (int i = 0; i < iters; ++i) {
    const auto start = Clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

// memcpy of `bytes` split over `threads` threads (the caller is one of them).
void ParallelMemcpy(char* to, const char* from, size_t bytes, int threads) {
  const size_t share = (bytes + threads - 1) / threads;
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) {
    const size_t begin = std::min(bytes, t * share), end = std::min(bytes, begin + share);
    helpers.emplace_back([=] { std::memcpy(to + begin, from + begin, end - begin); });
  }
  std::memcpy(to, from, std::min(bytes, share));
  for (std::thread& helper : helpers) helper.join();
}

std::vector<int> ParseDevices(const std::string& text) {
  std::vector<int> counts;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    int n = 0;
    try {
      n = std::stoi(item);
    } catch (const std::exception&) {
      DOPPIO_THROW("--devices: '", item, "' is not a number");
    }
    DOPPIO_ENFORCE(n >= 1 && n <= 64, "--devices: ", n, " is not in 1..64");
    counts.push_back(n);
  }
  DOPPIO_ENFORCE(!counts.empty(), "--devices is empty");
  return counts;
}

struct Row {
  int devices;
  double allreduce_gbps = 0, memcpy1_gbps = 0, memcpy_all_gbps = 0;
};

int Main() {
  DOPPIO_ENFORCE(FLAGS_mib > 0 && FLAGS_iters >= 1 && FLAGS_rounds >= 1,
                 "--mib, --iters and --rounds must be positive");
  const std::vector<int> device_counts = ParseDevices(FLAGS_devices);
  const int64_t numel = static_cast<int64_t>(FLAGS_mib * (1 << 20) / sizeof(float));
  const size_t bytes = numel * sizeof(float);
  const int cores = AvailableCores();

  Allocator* allocator = GetCPUAllocator();
  char* from = static_cast<char*>(allocator->Allocate(bytes));
  char* to = static_cast<char*>(allocator->Allocate(bytes));
  std::memset(from, 1, bytes);
  std::memset(to, 0, bytes);

  std::vector<Row> rows;
  for (int n : device_counts) {
    Workspace ws;
    OperatorDef def;
    def.set_type("Allreduce");
    for (int i = 0; i < n; ++i) {
      const std::string name = "cpu_" + std::to_string(i) + "/grad";
      def.add_input(name);
      def.add_output(name);
      Tensor* tensor = ws.CreateBlob(name)->GetMutableTensor();
      tensor->Resize({numel});
      // Zeros stay zeros however often they are summed (no inf, no denormals).
      std::memset(tensor->mutable_data<float>(), 0, bytes);
    }
    Argument* threads_arg = def.add_arg();
    threads_arg->set_name("num_threads");
    threads_arg->set_i(FLAGS_num_threads);
    std::unique_ptr<OperatorBase> op = CreateOperator(def, &ws);

    Row row{n};
    for (int round = 0; round < FLAGS_rounds; ++round) {
      const double copy1 = BestSeconds(FLAGS_iters, [&] { std::memcpy(to, from, bytes); });
      const double copy_all =
          BestSeconds(FLAGS_iters, [&] { ParallelMemcpy(to, from, bytes, cores); });
      const double reduce = BestSeconds(FLAGS_iters, [&] { op->Run(); });
      row.memcpy1_gbps = std::max(row.memcpy1_gbps, bytes / copy1 / 1e9);
      row.memcpy_all_gbps = std::max(row.memcpy_all_gbps, bytes / copy_all / 1e9);
      row.allreduce_gbps = std::max(row.allreduce_gbps, n * bytes / reduce / 1e9);
    }
    rows.push_back(row);
  }
  allocator->Free(from);
  allocator->Free(to);

  std::printf("Allreduce of %.1f MiB float32 per device, %d core(s), best of %d rounds x %d "
              "runs\n",
              FLAGS_mib, cores, FLAGS_rounds, FLAGS_iters);
  std::printf("GB/s: Allreduce = n * size / time (algorithm bandwidth); memcpy = size / "
              "time\n\n");
  std::printf("| devices | Allreduce GB/s | memcpy 1 thread GB/s | memcpy %d threads GB/s | "
              "Allreduce / best memcpy |\n",
              cores);
  std::printf("|---:|---:|---:|---:|---:|\n");
  std::ostringstream json;
  json << "{\"mib\": " << FLAGS_mib << ", \"cores\": " << cores << ", \"rounds\": "
       << FLAGS_rounds << ", \"iters\": " << FLAGS_iters << ", \"rows\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const double best_copy = std::max(r.memcpy1_gbps, r.memcpy_all_gbps);
    std::printf("| %d | %.2f | %.2f | %.2f | %.0f%% |\n", r.devices, r.allreduce_gbps,
                r.memcpy1_gbps, r.memcpy_all_gbps, 100 * r.allreduce_gbps / best_copy);
    json << (i ? ", " : "") << "{\"devices\": " << r.devices
         << ", \"allreduce_gbps\": " << r.allreduce_gbps
         << ", \"memcpy_1_thread_gbps\": " << r.memcpy1_gbps
         << ", \"memcpy_all_cores_gbps\": " << r.memcpy_all_gbps
         << ", \"ratio_to_best_memcpy\": " << r.allreduce_gbps / best_copy << "}";
  }
  json << "]}";
  std::printf("\njson: %s\n", json.str().c_str());
  return 0;
}

}  // namespace
}  // namespace doppio

int main(int argc, char** argv) {
  gflags::SetUsageMessage("times the in-process Allreduce beside memcpy (tools/bench/README.md)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  try {
    return doppio::Main();
  } catch (const doppio::Error& error) {
    std::cerr << "allreduce_bench: " << error.what() << "\n";
    return 1;
  }
}
