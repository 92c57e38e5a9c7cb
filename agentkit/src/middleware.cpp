// Observability and policy layers: tracing, metering, egress, audit,
// error_boundary, logging. Caching lives in middleware_cache.cpp, retry and
// timeout in middleware_resilience.cpp.
#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <utility>

#include <spdlog/spdlog.h>

#include <agentkit/errors.h>
#include <agentkit/detail/logging.h>
#include <agentkit/invoker.h>
#include <agentkit/trace.h>

namespace agentkit {

namespace {

using Clock = std::chrono::steady_clock;

std::chrono::microseconds since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
}

// Runs `next`, then reports the outcome ("exception" when it throws, then
// rethrows) and the elapsed time to `report`.
template <class Report>
ToolResult observe(const ToolRequest& req, RunContext& ctx, const Next& next, Report&& report) {
  const auto start = Clock::now();
  ToolResult result;
  try {
    result = next(req, ctx);
  } catch (...) {
    report(std::string_view("exception"), since(start));
    throw;
  }
  report(to_string(result.status), since(start));
  return result;
}

spdlog::logger& logger_of(const RunContext& ctx) { return *detail::logger_or_null(ctx.logger); }

}  // namespace

Middleware tracing() {
  return [](const ToolRequest& req, RunContext& ctx, const Next& next) {
    if (!ctx.observed()) return next(req, ctx);  // a span no one would see
    ToolSpan span{
        .span_id = trace::new_span_id(), .parent_span_id = ctx.span_id, .tool = req.name, .call_id = req.call_id};
    const auto start = Clock::now();
    const auto report = [&](CallStatus outcome) {
      span.outcome = outcome;
      span.duration = since(start);
      ctx.emit(std::move(span));
    };
    ToolResult result;
    try {
      result = next(req, ctx);
    } catch (...) {
      report(CallStatus::error);  // a call that threw
      throw;
    }
    report(result.status);
    return result;
  };
}

Middleware metering() {
  return [](const ToolRequest& req, RunContext& ctx, const Next& next) {
    // Hold the budget: the call may outlive a reassignment of ctx.budget.
    auto budget = ctx.budget;
    if (!budget) return next(req, ctx);
    budget->charge_tool_calls(1);
    return observe(req, ctx, next,
                   [&](std::string_view, std::chrono::microseconds elapsed) { budget->charge_tool_time(elapsed); });
  };
}

Middleware egress(EgressPolicy policy) {
  if (!policy) throw Error(ErrorCode::invalid_argument, "egress(): the policy must not be empty");
  return [policy = std::move(policy)](const ToolRequest& req, RunContext& ctx, const Next& next) {
    if (auto reason = policy(req)) {
      return ToolResult::denied("call to tool '" + req.name + "' refused by egress policy: " + *reason);
    }
    return next(req, ctx);
  };
}

EgressPolicy deny_tools(std::vector<std::string> names, std::vector<std::string> tags) {
  return [names = std::move(names), tags = std::move(tags)](const ToolRequest& req) -> std::optional<std::string> {
    if (std::find(names.begin(), names.end(), req.name) != names.end()) return "the tool is on the deny list";
    if (!req.tool) return std::nullopt;
    for (const auto& tag : req.tool->spec().tags) {
      if (std::find(tags.begin(), tags.end(), tag) != tags.end()) return "the tool is tagged '" + tag + "'";
    }
    return std::nullopt;
  };
}

Middleware audit(std::function<void(const AuditRecord&)> sink) {
  if (!sink) throw Error(ErrorCode::invalid_argument, "audit(): the sink must not be empty");
  return [sink = std::move(sink)](const ToolRequest& req, RunContext& ctx, const Next& next) {
    auto record = [&](std::string outcome, std::string text) {
      sink(AuditRecord{.correlation_id = ctx.correlation_id,
                       .scope = ctx.scope.key(),
                       .tool = req.name,
                       .call_id = req.call_id,
                       .arguments = req.arguments,
                       .outcome = std::move(outcome),
                       .text = std::move(text),
                       .proposed_arguments = req.approval.approves(req) ? req.approval.proposed_arguments() : Json()});
    };
    ToolResult result;
    try {
      result = next(req, ctx);
    } catch (const std::exception& e) {
      record("exception", e.what());
      throw;
    } catch (...) {
      record("exception", "unknown error");
      throw;
    }
    record(std::string(to_string(result.status)), result.model_text());
    return result;
  };
}

// Tool arguments are never logged: they may carry secrets.
Middleware error_boundary() {
  return [](const ToolRequest& req, RunContext& ctx, const Next& next) {
    try {
      return next(req, ctx);
    } catch (const ToolArgumentError& e) {
      // The model authored the call; the message already says how to fix it.
      logger_of(ctx).debug("tool '{}' (call {}) rejected its arguments: {}", req.name, req.call_id, e.what());
      return ToolResult::error(e.what());
    } catch (const ToolShapeError& e) {
      logger_of(ctx).error("tool '{}' (call {}) returned a value not matching '{}': {} {}", req.name, req.call_id,
                           e.expected(), e.what(), e.detail());
      return ToolResult::error(std::string("Tool failed: ") + e.what());
    } catch (const RetryableToolError& e) {
      // Still retryable, for a retry() layer placed outside this one.
      logger_of(ctx).error("tool '{}' (call {}) failed (retryable): {}", req.name, req.call_id, e.what());
      return ToolResult::error(std::string("Tool failed: ") + e.what(), true);
    } catch (const std::exception& e) {
      logger_of(ctx).error("tool '{}' (call {}) failed: {}", req.name, req.call_id, e.what());
      return ToolResult::error(std::string("Tool failed: ") + e.what());
    } catch (...) {
      logger_of(ctx).error("tool '{}' (call {}) failed with a non-standard exception", req.name, req.call_id);
      return ToolResult::error("Tool failed: unknown error");
    }
  };
}

Middleware logging() {
  return [](const ToolRequest& req, RunContext& ctx, const Next& next) {
    return observe(req, ctx, next, [&](std::string_view outcome, std::chrono::microseconds elapsed) {
      logger_of(ctx).debug("tool '{}' (call {}) -> {} in {} us", req.name, req.call_id, outcome, elapsed.count());
    });
  };
}

std::vector<Middleware> default_middleware() {
  return {error_boundary(), tracing(), metering(), idempotent(), retry()};
}

}  // namespace agentkit
