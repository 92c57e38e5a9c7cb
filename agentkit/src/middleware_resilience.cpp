// retry() and timeout(): the layers that decide what a failure or a slow call
// means. Both refuse to guess about side effects: a side-effecting call that
// is not declared idempotent runs at most once.
#include <agentkit/invoker.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace agentkit {

namespace {

using std::chrono::milliseconds;

bool retryable(const ToolResult& result) { return result.status == ToolResult::Status::error && result.retryable; }

// Full jitter (uniform in [0, cap]) spreads retries from many callers
// instead of synchronising them on the same exponential schedule.
class Backoff {
 public:
  explicit Backoff(RetryPolicy policy) : policy_(policy), rng_(std::random_device{}()) {}

  milliseconds delay(int attempt) {
    const auto base = std::max<milliseconds::rep>(policy_.base_delay.count(), 0);
    const auto max = std::max<milliseconds::rep>(policy_.max_delay.count(), 0);
    milliseconds::rep cap = base;
    for (int i = 1; i < attempt && cap < max; ++i) cap *= 2;  // doubling, no overflow past max
    cap = std::min(cap, max);
    std::lock_guard lock(mutex_);
    return milliseconds(std::uniform_int_distribution<milliseconds::rep>(0, cap)(rng_));
  }

 private:
  RetryPolicy policy_;
  std::mutex mutex_;
  std::mt19937 rng_;
};

// Sleeps in short slices so a cancelled run stops waiting promptly.
void sleep_unless_cancelled(milliseconds delay, const RunContext& ctx) {
  constexpr milliseconds kSlice{10};
  const auto until = std::chrono::steady_clock::now() + delay;
  while (!ctx.cancelled()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(until - now, kSlice));
  }
}

// State shared between a timed-out caller and the thread still running the
// call: the thread owns copies of everything it touches.
struct Flight {
  Flight(ToolRequest r, RunContext c, Next n) : request(std::move(r)), ctx(std::move(c)), next(std::move(n)) {}

  ToolRequest request;
  RunContext ctx;
  Next next;
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::optional<ToolResult> result;
  std::exception_ptr error;
};

}  // namespace

Middleware retry(RetryPolicy policy) {
  auto backoff = std::make_shared<Backoff>(policy);
  return [policy, backoff](const ToolRequest& req, RunContext& ctx, const Next& next) {
    // Re-running a non-idempotent mutation could repeat its effect.
    const bool safe = !req.effectively_side_effecting() || req.effectively_idempotent();
    const int attempts = safe ? std::max(policy.max_attempts, 1) : 1;
    if (attempts == 1) return next(req, ctx);

    ToolRequest attempt = req;
    ToolResult last;
    std::exception_ptr last_error;
    for (int n = 1; n <= attempts; ++n) {
      if (n > 1) {
        if (ctx.cancelled()) break;
        sleep_unless_cancelled(backoff->delay(n - 1), ctx);
        if (ctx.cancelled()) break;
      }
      attempt.attempt = n;
      try {
        last = next(attempt, ctx);
        last_error = nullptr;
        if (!retryable(last)) return last;
      } catch (const RetryableToolError&) {
        last_error = std::current_exception();
      }
    }
    if (last_error) std::rethrow_exception(last_error);
    return last;
  };
}

Middleware timeout(milliseconds limit) {
  return [limit](const ToolRequest& req, RunContext& ctx, const Next& next) {
    // The thread may outlive this call, so it gets its own request, context
    // and Next; the caller's references may be gone by the time it ends.
    auto flight = std::make_shared<Flight>(req, ctx, next);
    std::thread([flight] {
      std::optional<ToolResult> result;
      std::exception_ptr error;
      try {
        result = flight->next(flight->request, flight->ctx);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard lock(flight->mutex);
      flight->result = std::move(result);
      flight->error = error;
      flight->done = true;
      flight->finished.notify_all();
    }).detach();

    std::unique_lock lock(flight->mutex);
    if (!flight->finished.wait_for(lock, limit, [&] { return flight->done; })) {
      const std::string what = "tool '" + req.name + "' timed out after " + std::to_string(limit.count()) + " ms";
      if (req.effectively_side_effecting()) {
        return ToolResult::outcome_unknown(what + "; it may or may not have taken effect, so it was not retried");
      }
      return ToolResult::error(what, true);
    }
    if (flight->error) std::rethrow_exception(flight->error);
    return std::move(*flight->result);
  };
}

}  // namespace agentkit
