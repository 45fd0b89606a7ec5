#include "core/net_trace.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/enforce.h"
#include "core/json.h"
#include "core/thread_pool.h"

namespace doppio {
namespace {

// Caffe2's DeviceType numbering (proto/doppio.proto).
constexpr int kCPUDeviceType = 0;
constexpr int kCUDADeviceType = 1;

std::string Microseconds(double us) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", us);
  return text;
}

}  // namespace

bool IsCollectiveOp(const OperatorDef& def) {
  static const std::set<std::string> kTypes = {
      "Allreduce", "AllreduceCoalesced", "Broadcast", "Allgather", "ReduceScatter", "Barrier",
      "CreateCommonWorld", "VerifyCollectiveSchedule"};
  return def.engine() == "GLOO" || def.type().rfind("NCCL", 0) == 0 || kTypes.count(def.type());
}

std::string DeviceLabel(const DeviceOption& option) {
  const std::string id = std::to_string(option.cuda_gpu_id());
  if (option.device_type() == kCPUDeviceType) return "cpu_" + id;
  if (option.device_type() == kCUDADeviceType) return "gpu_" + id;
  return "device" + std::to_string(option.device_type()) + "_" + id;
}

NetProfiler::NetProfiler(NetBase* net) : net_(net), op_seconds_(net->operators().size(), 0.0) {
  net_->SetOpEventObserver([this](const NetBase::OpEvent& event) { Record(event); });
}

NetProfiler::~NetProfiler() { net_->SetOpEventObserver(nullptr); }

void NetProfiler::Run(int iterations) {
  for (int i = 0; i < iterations; ++i) {
    events_.clear();
    run_start_ = std::chrono::steady_clock::now();
    try {
      net_->Run();
    } catch (...) {
      const std::chrono::duration<double> elapsed =
          std::chrono::steady_clock::now() - run_start_;
      last_run_us_ = elapsed.count() * 1e6;
      throw;
    }
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - run_start_;
    last_run_us_ = elapsed.count() * 1e6;
    net_seconds_ += elapsed.count();
    ++runs_;
  }
}

void NetProfiler::Record(const NetBase::OpEvent& event) {
  op_seconds_.at(event.op_index) += event.seconds;
  const OperatorDef& def = event.op->def();
  OpTraceEvent trace;
  trace.op_index = event.op_index;
  trace.name = def.name().empty() ? def.type() : def.name();
  trace.type = def.type();
  trace.device = DeviceLabel(def.device_option());
  trace.thread = ThreadPool::CurrentWorkerLabel();
  if (trace.thread.empty()) trace.thread = "caller";
  const std::chrono::duration<double> since_start = event.start - run_start_;
  trace.start_us = since_start.count() * 1e6;
  trace.duration_us = event.seconds * 1e6;
  trace.collective = IsCollectiveOp(def);
  for (int i = 0; trace.collective && i < event.op->InputSize(); ++i) {
    const Blob& blob = event.op->InputBlob(i);
    if (blob.IsTensor()) trace.bytes += static_cast<int64_t>(blob.GetTensor().nbytes());
  }
  events_.push_back(std::move(trace));
}

std::string NetProfiler::PerOpTypeReport() const {
  struct Row {
    std::string type;
    int count = 0;
    double seconds = 0;
  };
  std::map<std::string, Row> rows;
  double total = 0;
  const auto& ops = net_->operators();
  for (size_t i = 0; i < op_seconds_.size(); ++i) {
    Row& row = rows[ops[i]->type()];
    row.type = ops[i]->type();
    row.count += 1;
    row.seconds += op_seconds_[i];
    total += op_seconds_[i];
  }
  std::vector<Row> sorted;
  for (const auto& entry : rows) sorted.push_back(entry.second);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Row& a, const Row& b) { return a.seconds > b.seconds; });
  const double per_run = runs_ > 0 ? runs_ : 1;
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof(line), "Per-op time over %d run(s) of net '%s':\n", runs_,
                net_->name().c_str());
  out << line;
  std::snprintf(line, sizeof(line), "%-32s %6s %12s %12s %8s\n", "op type", "count",
                "total ms", "ms/run", "percent");
  out << line;
  for (const Row& row : sorted) {
    std::snprintf(line, sizeof(line), "%-32s %6d %12.3f %12.4f %7.2f%%\n", row.type.c_str(),
                  row.count, row.seconds * 1e3, row.seconds * 1e3 / per_run,
                  total > 0 ? 100.0 * row.seconds / total : 0.0);
    out << line;
  }
  std::snprintf(line, sizeof(line), "%-32s %6zu %12.3f %12.4f %7.2f%%\n", "(all ops)",
                op_seconds_.size(), total * 1e3, total * 1e3 / per_run, total > 0 ? 100.0 : 0.0);
  out << line;
  std::snprintf(line, sizeof(line), "%-32s %6s %12.3f %12.4f\n", "(whole runs)", "",
                net_seconds_ * 1e3, net_seconds_ * 1e3 / per_run);
  out << line;
  return out.str();
}

std::string NetProfiler::ChromeTraceJson() const {
  // Chrome wants integer thread ids; number the threads in order of use,
  // the caller (who runs the net) first, and name them with metadata events.
  std::map<std::string, int> thread_ids{{"caller", 0}};
  std::vector<std::string> thread_names{"caller"};
  bool any_collective = false;
  for (const OpTraceEvent& event : events_) {
    if (thread_ids.emplace(event.thread, static_cast<int>(thread_names.size())).second) {
      thread_names.push_back(event.thread);
    }
    any_collective = any_collective || event.collective;
  }
  const std::string kCollectives = "collectives";
  if (any_collective && thread_ids.emplace(kCollectives, thread_names.size()).second) {
    thread_names.push_back(kCollectives);
  }
  std::ostringstream out;
  out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  for (size_t t = 0; t < thread_names.size(); ++t) {
    out << "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": " << t
        << ", \"args\": {\"name\": " << JsonString(thread_names[t]) << "}},\n";
  }
  out << "{\"name\": " << JsonString("net " + net_->name()) << ", \"cat\": \"net\", "
      << "\"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": 0, \"dur\": "
      << Microseconds(last_run_us_) << ", \"args\": {\"ops\": " << events_.size() << "}}";
  for (const OpTraceEvent& event : events_) {
    out << ",\n{\"name\": " << JsonString(event.name) << ", \"cat\": " << JsonString(event.type)
        << ", \"ph\": \"X\", \"pid\": 0, \"tid\": " << thread_ids.at(event.thread)
        << ", \"ts\": " << Microseconds(event.start_us)
        << ", \"dur\": " << Microseconds(event.duration_us) << ", \"args\": {\"op_index\": "
        << event.op_index << ", \"type\": " << JsonString(event.type)
        << ", \"device\": " << JsonString(event.device)
        << ", \"thread\": " << JsonString(event.thread) << "}}";
    if (!event.collective) continue;
    out << ",\n{\"name\": " << JsonString(event.name) << ", \"cat\": \"collective\""
        << ", \"ph\": \"X\", \"pid\": 0, \"tid\": " << thread_ids.at(kCollectives)
        << ", \"ts\": " << Microseconds(event.start_us)
        << ", \"dur\": " << Microseconds(event.duration_us) << ", \"args\": {\"op_index\": "
        << event.op_index << ", \"type\": " << JsonString(event.type)
        << ", \"bytes\": " << event.bytes << ", \"thread\": " << JsonString(event.thread)
        << "}}";
  }
  out << "\n]}\n";
  return out.str();
}

void WriteChromeTrace(NetBase* net, const std::string& path) {
  NetProfiler profiler(net);
  profiler.Run(1);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  DOPPIO_ENFORCE(file.good(), "cannot open trace file '", path, "' for writing");
  file << profiler.ChromeTraceJson();
  file.close();
  DOPPIO_ENFORCE(file.good(), "could not write trace file '", path, "'");
}

}  // namespace doppio
