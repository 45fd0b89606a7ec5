// PrefetchOperator: the base of input ops that read the next batch in the
// background while the rest of the net works on the current one, as Caffe2's
// PrefetchOperator does.
//
// The first Run starts a fetch; every Run waits for the fetch in flight,
// hands its result to the outputs (CopyPrefetched) and starts the next one.
// A fetch runs on its own std::thread, which Run (or Finalize) joins, so at
// most one fetch is in flight and nothing outlives the operator.
//
// Failures in the background thread (a corrupt record, an unreadable DB) are
// captured and rethrown from the Run that waits for them, as a doppio::Error
// naming the op and its data source; the next Run starts a fresh fetch.
//
// Subclasses must call Finalize() first thing in their destructor: a fetch in
// flight calls their Prefetch(), which must not outlive their members.
//
// Thread-safety: Prefetch() runs on the background thread while the caller's
// thread is outside the operator (between Runs), so the two never touch the
// prefetch buffers at once; anything else Prefetch() reads (the input blobs)
// must tolerate the rest of the net running concurrently.
#pragma once

#include <exception>
#include <string>
#include <system_error>
#include <thread>

#include "core/enforce.h"
#include "core/operator.h"

namespace doppio {

template <class Context>
class PrefetchOperator : public Operator<Context> {
 public:
  PrefetchOperator(const OperatorDef& def, Workspace* workspace)
      : Operator<Context>(def, workspace) {}
  // Only a safety net: by now the subclass is gone, so it must have joined.
  ~PrefetchOperator() override { Finalize(); }

  void RunOnDevice() final {
    if (!fetch_thread_.joinable()) StartFetch();
    WaitForFetch();
    CopyPrefetched();
    StartFetch();
  }

 protected:
  // Fills the subclass's prefetch buffers with the next batch (background
  // thread). Throws on failure.
  virtual void Prefetch() = 0;
  // Moves or copies the prefetched batch into the outputs (caller's thread).
  virtual void CopyPrefetched() = 0;
  // Where the data comes from, for error messages ("lmdb db '/data/train'").
  // Must not throw.
  virtual std::string DataSourceDescription() const = 0;

  // Waits for a fetch in flight and forgets its outcome; the operator may
  // still Run afterwards.
  void Finalize() {
    if (fetch_thread_.joinable()) fetch_thread_.join();
    fetch_error_ = nullptr;
  }

 private:
  void StartFetch() {
    fetch_error_ = nullptr;
    try {
      fetch_thread_ = std::thread([this] {
        try {
          Prefetch();
        } catch (...) {
          // Read by WaitForFetch after join(), which orders the accesses.
          fetch_error_ = std::current_exception();
        }
      });
    } catch (const std::system_error& error) {
      DOPPIO_THROW(this->DisplayName(), ": cannot start the prefetch thread: ", error.what());
    }
  }

  void WaitForFetch() {
    fetch_thread_.join();
    if (fetch_error_ == nullptr) return;
    std::exception_ptr error = fetch_error_;
    fetch_error_ = nullptr;
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

  std::thread fetch_thread_;
  std::exception_ptr fetch_error_;
};

}  // namespace doppio
