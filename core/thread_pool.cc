#include "core/thread_pool.h"

#include <system_error>
#include <utility>

#include "core/enforce.h"

namespace doppio {
namespace {

// Set once per worker thread; traces read it to name the thread an op ran on.
thread_local std::string current_worker_label;
thread_local int current_worker_index = -1;

}  // namespace

ThreadPool::ThreadPool(int num_workers, std::string name) : name_(std::move(name)) {
  DOPPIO_ENFORCE(num_workers >= 1, "thread pool '", name_,
                 "' needs at least one worker, asked for ", num_workers);
  workers_.reserve(num_workers);
  try {
    for (int i = 0; i < num_workers; ++i) {
      workers_.emplace_back([this, i] { WorkerLoop(i); });
    }
  } catch (const std::system_error& error) {
    // Out of threads: stop the ones already started rather than leave
    // joinable threads behind (which would terminate the process).
    Stop();
    DOPPIO_THROW("thread pool '", name_, "' could not start worker ", workers_.size(),
                 " of ", num_workers, ": ", error.what());
  }
}

ThreadPool::~ThreadPool() { Stop(); }

void ThreadPool::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_available_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
  }
  work_available_.notify_one();
}

void ThreadPool::WaitIdle() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return queue_.empty() && running_ == 0; });
  if (escaped_error_) {
    std::exception_ptr error = std::move(escaped_error_);
    escaped_error_ = nullptr;
    std::rethrow_exception(error);
  }
}

const std::string& ThreadPool::CurrentWorkerLabel() { return current_worker_label; }

int ThreadPool::CurrentWorkerIndex() { return current_worker_index; }

void ThreadPool::WorkerLoop(int index) {
  current_worker_label = name_ + "/worker " + std::to_string(index);
  current_worker_index = index;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_available_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    // Queued work still runs at shutdown: a task may be what a caller waits on.
    if (queue_.empty()) return;
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    try {
      task();
    } catch (...) {
      lock.lock();
      if (!escaped_error_) escaped_error_ = std::current_exception();
      lock.unlock();
    }
    // Destroyed outside the lock: a task's captures may be heavy.
    task = nullptr;
    lock.lock();
    --running_;
    if (running_ == 0 && queue_.empty()) idle_.notify_all();
  }
}

}  // namespace doppio
