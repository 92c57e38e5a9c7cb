#include <agentkit/executor.h>

#include <agentkit/error.h>

#include <exception>
#include <stdexcept>
#include <utility>

#include <spdlog/spdlog.h>

#include <agentkit/detail/logging.h>

namespace agentkit {

ThreadPoolExecutor::ThreadPoolExecutor(std::size_t threads, std::shared_ptr<spdlog::logger> logger)
    : logger_(detail::logger_or_null(logger)) {
  if (threads == 0) throw Error(ErrorCode::invalid_argument, "ThreadPoolExecutor: needs at least one thread");
  auto work_loop = [this] {
    for (;;) {
      std::function<void()> work;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
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
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(work));
  }
  cv_.notify_one();
}

}  // namespace agentkit
