// PrefetchOperator: the base of input ops that read the next batches in the
// background while the rest of the net works on the current one, as Caffe2's
// PrefetchOperator does, but with a queue of kPrefetchDepth batches instead
// of one.
//
// One background thread per operator (started by the first fetch, kept until
// Finalize) fills the subclass's kPrefetchDepth slots in turn, each with the
// next batch (Prefetch(slot)), whenever a slot is free. Each Run waits until
// the oldest filled slot is ready, hands it to the outputs
// (CopyPrefetched(slot)) and frees it. Why a queue and a kept thread: a
// training step of a small model takes ~1 ms on a machine whose cores are
// all busy, so a reader with a single slot, woken once per step, was often
// not yet scheduled when the step wanted its batch (the input op then took
// ~90 us of a 1 ms step, waiting); with two slots the reader may run late by
// a whole step without stalling it. The batches come out in the order they
// were read, so the outputs do not depend on the depth.
//
// When reading ahead does not pay, the op reads on the thread that runs it:
// when that thread's intra-op threads (oneDNN's OpenMP pool, ParallelFor)
// cover every core this process may use, the net keeps all of them busy, so
// a reader thread could only take a core from it -- and an OpenMP region
// whose second thread is preempted stalls whole, for a scheduler time slice.
// The reference MLP on 2 cores trained at ~130-150k images/s with the reader
// thread and ~175-185k reading inline (decoding a batch costs ~30 us). A
// net applies the same intra-op thread count on every run, so the choice
// holds: once a run has started the reader thread, the op keeps it.
//
// Failures in the background thread (a corrupt record, an unreadable DB) are
// kept in their slot and rethrown from the Run that reaches that slot, as a
// doppio::Error naming the op and its data source; the thread reads nothing
// more until then, and the next Run gets the batch after the bad one.
//
// Subclasses must call Finalize() first thing in their destructor: a fetch in
// flight calls their Prefetch(), which must not outlive their members.
// A subclass may call StartFetching() at the end of its constructor, so the
// first batches are read while the rest of the net is created (the op then
// reads ahead whatever its runs' thread counts).
//
// Thread-safety: the background thread and Run touch different slots (a
// slot is the reader's while free, the caller's while filled); anything else
// Prefetch() reads (the input blobs) must tolerate the rest of the net running
// concurrently.
#pragma once

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#endif

#include <omp.h>

#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "core/enforce.h"
#include "core/intra_op_threads.h"
#include "core/operator.h"

namespace doppio {

template <class Context>
class PrefetchOperator : public Operator<Context> {
 public:
  static constexpr int kPrefetchDepth = 2;

  PrefetchOperator(const OperatorDef& def, Workspace* workspace)
      : Operator<Context>(def, workspace) {}
  // Only a safety net: by now the subclass is gone, so it must have joined.
  ~PrefetchOperator() override { Finalize(); }

  void RunOnDevice() final {
    // Batches read from a source that has since been replaced (a reader
    // restored from a checkpoint) are not the ones to hand out.
    if (SourceChanged()) Finalize();
    if (!thread_.joinable() && !ReadAheadPays()) {
      // No reader thread, so no batch read ahead: slot oldest_ is free.
      try {
        Prefetch(oldest_);
      } catch (...) {
        RethrowWithContext(std::current_exception());
      }
      CopyPrefetched(oldest_);
      return;
    }
    StartFetching();
    const int slot = WaitForOldestSlot();
    // A failed slot was freed by WaitForOldestSlot, which threw.
    CopyPrefetched(slot);
    ReleaseOldestSlot();
  }

 protected:
  // Fills prefetch slot `slot` (0 .. kPrefetchDepth - 1) of the subclass with
  // the next batch (background thread). Throws on failure.
  virtual void Prefetch(int slot) = 0;
  // Moves or copies slot `slot`'s batch into the outputs (caller's thread).
  virtual void CopyPrefetched(int slot) = 0;
  // Where the data comes from, for error messages ("lmdb db '/data/train'").
  // Must not throw.
  virtual std::string DataSourceDescription() const = 0;
  // Whether the source the prefetched batches were read from has been
  // replaced since (caller's thread, before a Run takes a batch); then every
  // prefetched batch is dropped and reading starts again.
  virtual bool SourceChanged() const { return false; }

  // Starts the background reader if it is not running.
  void StartFetching() {
    if (thread_.joinable()) return;
    try {
      thread_ = std::thread([this] { FetchLoop(); });
    } catch (const std::system_error& error) {
      DOPPIO_THROW(this->DisplayName(), ": cannot start the prefetch thread: ", error.what());
    }
  }

  // Stops the background reader after the fetch in flight and forgets every
  // prefetched batch; the operator may still Run afterwards (it starts
  // reading again).
  void Finalize() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    slot_freed_.notify_all();
    thread_.join();
    stop_ = false;
    oldest_ = 0;
    filled_ = 0;
    for (std::exception_ptr& error : errors_) error = nullptr;
  }

 private:
  void FetchLoop() {
#ifdef __linux__
    // Waking this thread (ReleaseOldestSlot) would otherwise often preempt
    // the net's worker on its own core, so the worker sat out the whole
    // decode inside the input op (perf: a third of its context switches).
    // SCHED_BATCH threads do not preempt on wakeup but keep their fair share
    // of the CPU, so the reader still keeps up under load. Best effort.
    sched_param batch_param{};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch_param);
#endif
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      // After a failure the reader waits until the caller has seen it.
      slot_freed_.wait(lock, [this] {
        return stop_ || (filled_ < kPrefetchDepth && !AnyError());
      });
      if (stop_) return;
      const int slot = (oldest_ + filled_) % kPrefetchDepth;
      lock.unlock();
      std::exception_ptr error;
      try {
        Prefetch(slot);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      errors_[slot] = error;
      ++filled_;
      slot_filled_.notify_all();
    }
  }

  bool AnyError() const {
    for (const std::exception_ptr& error : errors_) {
      if (error != nullptr) return true;
    }
    return false;
  }

  // The oldest filled slot, waiting for it; rethrows its failure (and frees
  // it) if its fetch failed.
  int WaitForOldestSlot() {
    std::exception_ptr error;
    int slot;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      slot_filled_.wait(lock, [this] { return filled_ > 0; });
      slot = oldest_;
      std::swap(error, errors_[slot]);
    }
    if (error == nullptr) return slot;
    ReleaseOldestSlot();
    RethrowWithContext(error);
  }

  [[noreturn]] void RethrowWithContext(std::exception_ptr error) {
    const std::string context = MakeString("while prefetching for ", this->DisplayName(),
                                           " from ", DataSourceDescription());
    try {
      std::rethrow_exception(error);
    } catch (Error& doppio_error) {
      doppio_error.AppendContext(context);
      throw;
    } catch (const std::exception& other) {
      DOPPIO_THROW(other.what(), " (", context, ")");
    } catch (...) {
      DOPPIO_THROW("an unknown exception (", context, ")");
    }
  }

  static bool ReadAheadPays() {
    static const int cores = AvailableCores();
    return omp_get_max_threads() < cores;
  }

  void ReleaseOldestSlot() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      oldest_ = (oldest_ + 1) % kPrefetchDepth;
      --filled_;
    }
    slot_freed_.notify_all();
  }

  std::thread thread_;
  // Guards the queue state below, shared with the background thread.
  std::mutex mutex_;
  std::condition_variable slot_freed_;   // a slot became free, or stop_
  std::condition_variable slot_filled_;  // a slot was filled
  int oldest_ = 0;  // the slot the next Run takes
  int filled_ = 0;  // slots filled, from oldest_ on
  bool stop_ = false;
  std::exception_ptr errors_[kPrefetchDepth];
};

}  // namespace doppio
