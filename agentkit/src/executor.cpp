#include <agentkit/executor.h>

#include <agentkit/error.h>

#include <exception>
#include <stdexcept>
#include <utility>

#include <spdlog/spdlog.h>

#include <agentkit/detail/logging.h>

namespace agentkit {

ThreadPoolExecutor::ThreadPoolExecutor(std::size_t threads, std::shared_ptr<spdlog::logger> logger,
                                       IdlePolling polling)
    : polling_(polling), logger_(detail::logger_or_null(logger)) {
  if (threads == 0) throw Error(ErrorCode::invalid_argument, "ThreadPoolExecutor: needs at least one thread");
  if (polling_.every.count() < 0 || polling_.linger.count() < 0) {
    throw Error(ErrorCode::invalid_argument, "ThreadPoolExecutor: IdlePolling's every and linger must not be negative");
  }
  auto work_loop = [this] {
    auto worked = std::chrono::steady_clock::now();
    for (;;) {
      std::function<void()> work;
      {
        std::unique_lock lock(mutex_);
        while (!stopping_ && queue_.empty()) {
          if (polling_.every.count() > 0 && std::chrono::steady_clock::now() - worked < polling_.linger) {
            ++pollers_;
            cv_.wait_for(lock, polling_.every);
            --pollers_;
          } else {
            cv_.wait(lock);
          }
        }
        // Queued work is finished before stopping, including work that
        // queued work submits.
        if (queue_.empty()) return;
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      // An exception escaping a worker would terminate the process; report
      // it and keep the worker alive.
      try {
        work();
      } catch (const std::exception& e) {
        logger_->error("ThreadPoolExecutor: submitted work threw: {}", e.what());
      } catch (...) {
        logger_->error("ThreadPoolExecutor: submitted work threw a non-standard exception");
      }
      worked = std::chrono::steady_clock::now();
    }
  };
  workers_.reserve(threads);
  try {
    for (std::size_t i = 0; i < threads; ++i) workers_.emplace_back(work_loop);
  } catch (...) {
    // A thread failed to start: stop and join the ones that did.
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& worker : workers_) worker.join();
    throw;
  }
}

ThreadPoolExecutor::~ThreadPoolExecutor() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPoolExecutor::submit(std::function<void()> work) {
  if (!work) throw Error(ErrorCode::invalid_argument, "ThreadPoolExecutor::submit: empty work");
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(work));
    // A polling worker finds the work at its next check; wake a sleeper
    // only for work no poller will take.
    wake = queue_.size() > pollers_;
  }
  if (wake) cv_.notify_one();
}

}  // namespace agentkit
