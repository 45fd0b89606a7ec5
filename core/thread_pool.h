// ThreadPool: a fixed set of worker threads taking tasks from one FIFO queue.
//
// The dag executor keeps one pool per device; anything else that needs
// background workers may use it too. Workers start in the constructor and
// sleep while the queue is empty; the destructor runs the tasks still queued
// and joins the workers.
//
// Tasks should handle their own errors. An exception that escapes a task is
// kept (the first one) and rethrown by the next WaitIdle(), so it is never
// lost and never terminates the process.
//
// Thread-safety: Submit and WaitIdle may be called from any thread, including
// from inside a task (Submit only: a task that waits for its own pool to go
// idle would wait for itself).
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace doppio {

class ThreadPool {
 public:
  // `name` labels the workers ("cpu_1" -> "cpu_1/worker 0") for traces and
  // messages.
  ThreadPool(int num_workers, std::string name);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Submit(std::function<void()> task);
  // Blocks until the queue is empty and no worker is running a task, then
  // rethrows the first exception a task let escape since the last call.
  void WaitIdle();

  int size() const { return static_cast<int>(workers_.size()); }
  const std::string& name() const { return name_; }

  // "<pool name>/worker <i>" for a thread of some pool, "" for any other.
  static const std::string& CurrentWorkerLabel();
  // <i> for worker i of some pool, -1 for any other thread. The dag net
  // runs a worker's device ops on stream <i> of the device.
  static int CurrentWorkerIndex();

 private:
  void WorkerLoop(int index);
  // Lets the workers drain the queue, then joins them.
  void Stop();

  const std::string name_;
  std::mutex mutex_;
  std::condition_variable work_available_;
  std::condition_variable idle_;
  std::deque<std::function<void()>> queue_;
  int running_ = 0;
  bool stopping_ = false;
  std::exception_ptr escaped_error_;
  std::vector<std::thread> workers_;
};

}  // namespace doppio
