// retry() and timeout(): the layers that decide what a failure or a slow call
// means. Both refuse to guess about side effects: a side-effecting call that
// is not declared idempotent runs at most once.
#include <agentkit/invoker.h>

#include <agentkit/backoff.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <utility>

namespace agentkit {

namespace {

using std::chrono::milliseconds;

bool retryable(const ToolResult& result) { return result.status == ToolResult::Status::error && result.retryable; }

}  // namespace

Middleware retry(RetryPolicy policy) {
  const Backoff backoff{.base = policy.base_delay, .max = policy.max_delay};
  return [policy, backoff](const ToolRequest& req, RunContext& ctx, const Next& next) {
    // Re-running a non-idempotent mutation could repeat its effect.
    const bool safe = !req.effectively_side_effecting() || req.effectively_idempotent();
    const int attempts = safe ? std::max(policy.max_attempts, 1) : 1;
    if (attempts == 1) return next(req, ctx);

    // The first attempt is the request as it came (attempt 1); a copy is
    // made only for a second.
    std::optional<ToolRequest> again;
    ToolResult last;
    std::exception_ptr last_error;
    for (int n = 1; n <= attempts; ++n) {
      if (n > 1) {
        if (ctx.cancelled()) break;
        ctx.cancellation.sleep_for(backoff.delay(n - 1));
        if (ctx.cancelled()) break;
      }
      if (n > 1 || req.attempt != 1) {
        if (!again) again = req;
        again->attempt = n;
      }
      try {
        last = next(again ? *again : req, ctx);
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
    // The call runs here, on the caller's thread, under a token of its own
    // whose deadline is the limit: a tool that watches ctx.cancelled() stops
    // there. Nothing is left running once this returns, so retry() can never
    // start a second copy beside the first.
    const CancellationToken outer = ctx.cancellation;
    const CancellationToken own = outer.child(CancellationToken::Clock::now() + limit);
    struct Restore {
      RunContext& ctx;
      const CancellationToken& outer;
      ~Restore() { ctx.cancellation = outer; }
    } restore{ctx, outer};
    ctx.cancellation = own;

    std::optional<ToolResult> result;
    std::exception_ptr error;
    try {
      result = next(req, ctx);
    } catch (...) {
      error = std::current_exception();
    }
    // Our limit, not a cancel or a deadline from further out, ended the
    // call; and it ended without a result that says what happened. A result
    // the body did return (ok, or one saying it did not run) is the truth and
    // stands; the ledger has recorded it either way.
    const bool timed_out = own.past_deadline() && !outer.cancelled();
    const bool settled = result && (result->is_ok() || result->status == ToolResult::Status::denied ||
                                    result->status == ToolResult::Status::awaiting_approval ||
                                    result->status == ToolResult::Status::outcome_unknown);
    if (timed_out && !settled) {
      const std::string what = "tool '" + req.name + "' timed out after " + std::to_string(limit.count()) + " ms";
      if (req.effectively_side_effecting()) {
        return ToolResult::outcome_unknown(what + "; it may or may not have taken effect, so it was not retried");
      }
      return ToolResult::error(what, true);
    }
    if (error) std::rethrow_exception(error);
    return std::move(*result);
  };
}

}  // namespace agentkit
