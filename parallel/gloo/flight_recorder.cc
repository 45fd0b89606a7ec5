#include "parallel/gloo/flight_recorder.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/json.h"

namespace doppio {
namespace {

constexpr size_t kDefaultCapacity = 256;

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

size_t CapacityFromEnvironment() {
  const char* text = std::getenv("DOPPIO_FLIGHT_RECORDER_SIZE");
  if (text == nullptr || *text == '\0') return kDefaultCapacity;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  // A malformed value must not stop training: the default applies.
  if (end == text || *end != '\0' || value < 0) return kDefaultCapacity;
  return static_cast<size_t>(value);
}

std::string DumpDirectory() {
  for (const char* variable : {"DOPPIO_FLIGHT_RECORDER_DIR", "TMPDIR"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && *value != '\0') return value;
  }
  return "/tmp";
}

// The SIGUSR1 handler's end of the pipe: the handler only writes a byte.
int signal_pipe_write = -1;

void OnSigusr1(int) {
  if (signal_pipe_write < 0) return;
  const char byte = 1;
  // Nothing to do about a full pipe: a dump is already pending then.
  ssize_t ignored = ::write(signal_pipe_write, &byte, 1);
  (void)ignored;
}

}  // namespace

FlightRecorder& FlightRecorder::Get() {
  // Never destroyed: collectives may record from threads during exit.
  static FlightRecorder* recorder = new FlightRecorder(CapacityFromEnvironment());
  return *recorder;
}

FlightRecorder::FlightRecorder(size_t capacity) : capacity_(capacity) { ring_.resize(capacity); }

uint64_t FlightRecorder::Begin(const std::string& op, const std::string& what, int64_t bytes,
                               int rank, int size) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t sequence = next_++;
  if (rank >= 0) last_rank_ = rank;
  if (capacity_ == 0) return sequence;
  CollectiveRecord& record = ring_[sequence % capacity_];
  record = CollectiveRecord();
  record.sequence = sequence;
  record.op = op;
  record.what = what;
  record.bytes = bytes;
  record.rank = rank;
  record.size = size;
  record.start_s = Now();
  record.state = "running";
  return sequence;
}

void FlightRecorder::End(uint64_t sequence, const std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (capacity_ == 0) return;
  CollectiveRecord& record = ring_[sequence % capacity_];
  if (record.sequence != sequence || record.state != "running") return;
  record.end_s = Now();
  record.state = error.empty() ? "ok" : "failed: " + error;
}

std::vector<CollectiveRecord> FlightRecorder::Snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CollectiveRecord> records;
  const uint64_t held = std::min<uint64_t>(next_, capacity_);
  for (uint64_t sequence = next_ - held; sequence < next_; ++sequence) {
    records.push_back(ring_[sequence % capacity_]);
  }
  return records;
}

std::string FlightRecorder::ToJson(const std::string& reason) const {
  const std::vector<CollectiveRecord> records = Snapshot();
  int rank;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    rank = last_rank_;
  }
  std::ostringstream out;
  out.precision(17);
  out << "{\"reason\": " << JsonString(reason) << ", \"pid\": " << ::getpid()
      << ", \"rank\": " << rank << ", \"capacity\": " << capacity_ << ", \"collectives\": [";
  for (size_t i = 0; i < records.size(); ++i) {
    const CollectiveRecord& r = records[i];
    out << (i ? ",\n  " : "\n  ") << "{\"sequence\": " << r.sequence
        << ", \"op\": " << JsonString(r.op) << ", \"what\": " << JsonString(r.what)
        << ", \"bytes\": " << r.bytes << ", \"rank\": " << r.rank << ", \"size\": " << r.size
        << ", \"start_s\": " << r.start_s << ", \"end_s\": " << r.end_s
        << ", \"state\": " << JsonString(r.state) << "}";
  }
  out << "]}\n";
  return out.str();
}

std::string FlightRecorder::Dump(const std::string& reason, std::string* problem) const {
  if (capacity_ == 0) {
    if (problem) *problem = "recording is off (DOPPIO_FLIGHT_RECORDER_SIZE=0)";
    return "";
  }
  int rank;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    rank = last_rank_;
  }
  const std::string path = DumpDirectory() + "/doppio_flight_recorder_rank" +
                           std::to_string(rank) + "_pid" + std::to_string(::getpid()) + ".json";
  // Written beside and renamed, so a reader never sees half a file.
  const std::string partial = path + ".partial";
  {
    std::ofstream file(partial, std::ios::trunc);
    file << ToJson(reason);
    if (!file) {
      if (problem) *problem = "could not write " + partial;
      return "";
    }
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    if (problem) *problem = "could not rename " + partial + " to " + path;
    return "";
  }
  return path;
}

void InstallFlightRecorderSignal() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current;
    if (::sigaction(SIGUSR1, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) return;
    int fds[2];
    if (::pipe(fds) != 0) return;
    signal_pipe_write = fds[1];
    std::thread([read_end = fds[0]] {
      char byte;
      while (::read(read_end, &byte, 1) == 1) {
        FlightRecorder::Get().Dump("SIGUSR1");
      }
    }).detach();
    struct sigaction action = {};
    action.sa_handler = OnSigusr1;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(SIGUSR1, &action, nullptr);
  });
}

}  // namespace doppio
