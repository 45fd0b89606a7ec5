// A grow-only scratch buffer per thread for memory an op needs only while it
// runs (oneDNN's reordered-layout copies and scratchpads). Kept per op, such
// buffers add up over every op of a net although only the running ones use
// them; shared per thread they cost (threads) x (largest single need).
//
// Thread-safety: each thread has its own arena, and a thread runs one op at
// a time, so a Reserve'd block is never used by two ops at once. Two ops on
// two dag workers use two arenas. The block is valid until the next Reserve
// on the same thread, so an op must not hold it past its Run, nor run
// another arena user (a nested op) while it holds it.
#pragma once

#include <cstddef>

namespace doppio {

class ThreadArena {
 public:
  // The calling thread's arena; freed when the thread exits.
  static ThreadArena& ForThisThread();

  ThreadArena() = default;
  ThreadArena(const ThreadArena&) = delete;
  ThreadArena& operator=(const ThreadArena&) = delete;
  ~ThreadArena();

  // At least nbytes, 64-byte aligned, contents undefined. Grows (dropping
  // the old contents) only when this arena is smaller than the largest
  // request any thread's arena has seen, and then to that size at once: a
  // dag worker may first meet the net's largest op many iterations in,
  // and sizing every arena for the whole process's largest need is what
  // lets a net that repeats its shapes allocate nothing after its first
  // iterations (the cost stays threads x largest single need).
  void* Reserve(size_t nbytes);

  size_t capacity() const { return capacity_; }

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace doppio
