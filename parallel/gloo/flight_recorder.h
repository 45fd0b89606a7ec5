// The flight recorder: each process keeps its last N cross-process
// collectives (which op, what algorithm, bytes, start, end, the world's rank
// and size, how it ended) so that a hang or a lost peer can be explained
// after the fact: which collective each rank was in, which it finished
// last, how long it had waited.
//
// Every Gloo collective runs through GlooFailureHandler, which records it
// here. The records go to a JSON file
//   $DOPPIO_FLIGHT_RECORDER_DIR (default $TMPDIR, else /tmp) /
//   doppio_flight_recorder_rank<R>_pid<P>.json
// when a collective fails (a timeout, a lost peer: the error says where the
// file is), and when the process gets SIGUSR1 (for a run that hangs). The
// buffer holds $DOPPIO_FLIGHT_RECORDER_SIZE records (default 256; 0 turns
// recording off).
//
// Thread-safe: collectives of several worlds may record at once.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace doppio {

struct CollectiveRecord {
  uint64_t sequence = 0;  // per process, from 0
  std::string op;         // "AllreduceCoalesced 'allreduce_shards_bucket_...'"
  std::string what;       // "allreduce (ring)"
  int64_t bytes = 0;      // the tensors the op moves, summed
  int rank = -1;          // this process in the world; -1 during a rendezvous
  int size = 0;
  double start_s = 0;     // Unix time
  double end_s = 0;       // 0 while running
  std::string state;      // "running", "ok", or "failed: <error>"
};

class FlightRecorder {
 public:
  // The process's recorder, sized from the environment on first use.
  static FlightRecorder& Get();

  explicit FlightRecorder(size_t capacity);

  // Records the start of a collective; returns its sequence number.
  uint64_t Begin(const std::string& op, const std::string& what, int64_t bytes, int rank,
                 int size);
  // Marks collective `sequence` as ended; `error` empty for success. A
  // record already overwritten by newer ones is left alone.
  void End(uint64_t sequence, const std::string& error);

  // The records still held, oldest first.
  std::vector<CollectiveRecord> Snapshot() const;
  // The records as a JSON object: {"reason", "pid", "rank", "capacity",
  // "collectives": [...]}.
  std::string ToJson(const std::string& reason) const;
  // Writes ToJson(reason) to the dump file (see above) and returns its path;
  // "" when recording is off or the file could not be written (the reason
  // then in *problem when given).
  std::string Dump(const std::string& reason, std::string* problem = nullptr) const;

  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<CollectiveRecord> ring_;  // ring_[sequence % capacity_]
  uint64_t next_ = 0;
  int last_rank_ = -1;
};

// Makes SIGUSR1 dump the process's records (from a thread of its own: a
// signal handler may not allocate or write files), unless the program
// already handles SIGUSR1. Idempotent; CreateCommonWorld calls it.
void InstallFlightRecorderSignal();

}  // namespace doppio
