#pragma once
// Where a run's model and tool calls execute.
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

// A fixed pool of worker threads: at most `threads` calls run at once.
class ThreadPoolExecutor final : public Executor {
 public:
  // Work that throws is reported to `logger` (nowhere when null) and the
  // worker keeps running.
  explicit ThreadPoolExecutor(std::size_t threads, std::shared_ptr<spdlog::logger> logger = nullptr);
  ~ThreadPoolExecutor() override;  // finishes queued work, then joins
  void submit(std::function<void()> work) override;

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace agentkit
