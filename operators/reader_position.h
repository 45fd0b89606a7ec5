// What an input op over a DBReader keeps so that a checkpointed reader
// resumes exactly (core/db.h, DBReader::AddConsumed / TakeReplay): which
// reader its read-ahead state came from, so that a reader restored from a
// checkpoint (a new generation, or one with records to replay) makes the op
// drop its prefetched batches and start over from the replayed position.
//
// Thread-safety: Changed runs on the caller's thread while a fetch may run
// on the op's prefetch thread (prefetch_op.h); the generation is atomic.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/blob.h"
#include "core/db.h"

namespace doppio {

class ReaderPosition {
 public:
  // The reader the op's state now comes from (e.g. a shuffle buffer filled
  // at construction).
  void Seen(const db::DBReader& reader) { generation_ = reader.generation(); }

  // Whether input blob `blob`, when it holds a reader, is not the one the
  // op's batches came from, or has records to replay: the op's prefetched
  // batches are stale.
  bool Changed(const Blob& blob) const {
    if (!blob.IsType<db::DBReader>()) return false;
    const db::DBReader& reader = blob.Get<db::DBReader>();
    return Stale(reader, reader.pending_replay());
  }

  struct Start {
    bool restart = false;   // the op's own read state must start over
    int64_t replay = 0;     // records to read and drop first
  };
  // Called before each fetch from `reader`.
  Start BeforeFetch(const db::DBReader& reader) {
    Start start;
    start.replay = reader.TakeReplay();
    start.restart = Stale(reader, start.replay);
    generation_ = reader.generation();
    return start;
  }

 private:
  bool Stale(const db::DBReader& reader, int64_t replay) const {
    const uint64_t seen = generation_.load();
    return (seen != 0 && seen != reader.generation()) || replay > 0;
  }

  std::atomic<uint64_t> generation_{0};
};

}  // namespace doppio
