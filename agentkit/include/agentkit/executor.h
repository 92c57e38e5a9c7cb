#pragma once
// Where a run's model and tool calls execute.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <spdlog/fwd.h>

namespace agentkit {

// Runs submitted work. `submit` MUST NOT block on the work itself. An
// executor MUST outlive the work submitted to it, and submitted work MUST NOT
// own the executor that runs it.
class Executor {
 public:
  virtual ~Executor() = default;
  virtual void submit(std::function<void()> work) = 0;
  // True when submit() runs the work before returning (one-thread hosts).
  virtual bool inline_execution() const noexcept { return false; }
};

// Runs work immediately on the submitting thread.
class InlineExecutor final : public Executor {
 public:
  void submit(std::function<void()> work) override { work(); }
  bool inline_execution() const noexcept override { return true; }
};

// How an idle worker waits for work. By default it sleeps until submit()
// wakes it, and the submitting thread pays for the wake: on a virtual
// machine an inter-processor interrupt, tens of µs at the tail, which a host
// whose tick must never block (a game frame, a robot's control loop) feels in
// poll(). With `every` set, a worker that finished work (or started) less
// than `linger` ago checks the queue every `every` instead, and submit()
// wakes no one while such a worker can take the work: the host hands work
// over without a system call, at the price of up to `every` before the work starts and the
// idle workers' periodic checks. A worker idle for longer than `linger`
// sleeps, and the next submit() wakes it.
struct IdlePolling {
  std::chrono::microseconds every{0};  // zero: never poll (the default)
  std::chrono::milliseconds linger{100};
};

// A fixed pool of worker threads: at most `threads` calls run at once.
class ThreadPoolExecutor final : public Executor {
 public:
  // Work that throws is reported to `logger` (nowhere when null) and the
  // worker keeps running.
  explicit ThreadPoolExecutor(std::size_t threads, std::shared_ptr<spdlog::logger> logger = nullptr,
                              IdlePolling polling = {});
  ~ThreadPoolExecutor() override;  // finishes queued work, then joins
  void submit(std::function<void()> work) override;

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  IdlePolling polling_;
  std::size_t pollers_ = 0;  // workers checking the queue every polling_.every
  bool stopping_ = false;
  std::vector<std::thread> workers_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace agentkit
