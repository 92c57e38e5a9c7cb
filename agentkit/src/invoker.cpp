#include <agentkit/invoker.h>
#include <agentkit/detail/logging.h>

#include <stdexcept>
#include <utility>

#include <spdlog/spdlog.h>

#include <agentkit/errors.h>

namespace agentkit {

std::string ToolResult::model_text() const {
  if (status != Status::ok) return text;
  if (value.is_string()) return value.get<std::string>();
  // The common scalars as the dump writes them, without a serializer.
  if (value.is_number_integer()) {
    return value.is_number_unsigned() ? std::to_string(value.get<std::uint64_t>())
                                      : std::to_string(value.get<std::int64_t>());
  }
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  return canonical_dump(value);
}

std::string failure_text(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const ToolArgumentError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("Tool failed: ") + e.what();
  } catch (...) {
    return "Tool failed: unknown error";
  }
}

// What one approval covers: the call as the engine held it when it issued it.
struct Approval::Grant {
  std::string call_id;
  std::string name;
  ToolPtr tool;
  Json arguments;
  Json proposed;
};

bool Approval::approves(const ToolRequest& request) const {
  return grant_ && grant_->call_id == request.call_id && grant_->name == request.name &&
         grant_->tool == request.tool && grant_->arguments == request.arguments;
}

const Json& Approval::proposed_arguments() const noexcept {
  static const Json none;
  return grant_ ? grant_->proposed : none;
}

Approval ApprovalIssuer::issue(const ToolRequest& request, Json proposed) {
  return Approval(std::make_shared<const Approval::Grant>(
      Approval::Grant{request.call_id, request.name, request.tool, request.arguments, std::move(proposed)}));
}

namespace {

bool tier_needs_approval(const ToolRequest& request, Autonomy tier) noexcept {
  switch (tier) {
    case Autonomy::manual:
      return true;
    case Autonomy::gated:
      return request.effectively_side_effecting();
    case Autonomy::automatic:
      return false;
  }
  return true;
}

}  // namespace

bool cleared(const ToolRequest& request, const RunContext& ctx) {
  return !needs_approval(request, ctx) || request.approval.approves(request);
}

bool needs_approval(const ToolRequest& request, Autonomy tier) noexcept {
  if (request.tool && (request.tool->requires_approval() || request.tool->spec().approval_when)) return true;
  return tier_needs_approval(request, tier);
}

bool needs_approval(const ToolRequest& request, const RunContext& ctx) noexcept {
  if (request.tool) {
    try {
      if (request.tool->requires_approval_for(request.arguments, ctx)) return true;
    } catch (...) {
      try {
        detail::logger_or_null(ctx.logger)
            ->warn("tool '{}' (call {}): its approval rule failed, so the call waits for a decision: {}", request.name,
                   request.call_id, failure_text(std::current_exception()));
      } catch (...) {
        // The decision stands without its log line.
      }
      return true;
    }
  }
  return tier_needs_approval(request, ctx.gate_tier());
}

namespace {

ToolResult call_tool(const ToolRequest& request, RunContext& ctx) {
  try {
    ToolOutput out = request.tool->run_output(request.arguments, ctx);
    return ToolResult::ok(std::move(out.value), std::move(out.parts));
  } catch (const OutcomeUnknownError& e) {
    return ToolResult::outcome_unknown(e.what());
  } catch (const RunInterrupted& e) {
    ToolResult interrupted = ToolResult::outcome_unknown(e.what());
    interrupted.interrupted = e.code();
    return interrupted;
  } catch (const CallSuspended& e) {
    ToolResult paused = ToolResult::awaiting_approval();
    paused.nested = e.nested();
    return paused;
  }
}

// A side-effecting call with a ledger: answered from the record when there
// is one, otherwise run between an intent and an outcome record.
ToolResult run_recorded(const ToolRequest& request, RunContext& ctx) {
  const CallLedger& ledger = *request.ledger;
  try {
    if (auto recorded = ledger.begin(request)) return *std::move(recorded);
  } catch (const std::exception& e) {
    // Nothing ran: the call starts only once its intent is recorded.
    return ToolResult::error(std::string("The call was not run: its exactly-once record could not be written (") +
                             e.what() + ").");
  }
  // The call has happened by now: a failure to record its outcome must not
  // hide it. A later attempt sees only the intent and reports outcome_unknown.
  const auto record = [&](const ToolResult& result) {
    try {
      ledger.end(request, result);
    } catch (const std::exception& e) {
      detail::logger_or_null(ctx.logger)
          ->error("tool '{}' (call {}): recording its outcome failed: {}", request.name, request.call_id, e.what());
    }
  };
  ToolResult result;
  try {
    result = call_tool(request, ctx);
  } catch (...) {
    record(ToolResult::error(failure_text(std::current_exception())));
    throw;
  }
  // An interrupted call records nothing: its intent stays, and the run's
  // recovery runs the (reenterable) call again.
  if (!result.interrupted) record(result);
  return result;
}

ToolResult run_tool(const ToolRequest& request, RunContext& ctx) {
  if (!cleared(request, ctx)) return ToolResult::awaiting_approval();
  if (!request.tool) return ToolResult::error("unknown tool '" + request.name + "'");
  ctx.call_key = request.ledger_key;
  if (request.ledger && request.effectively_side_effecting()) return run_recorded(request, ctx);
  return call_tool(request, ctx);
}

}  // namespace

Invoker::Invoker() : Invoker(std::vector<Middleware>{}) {}

// Each Next owns (shared) copies of its layer and of the rest of the chain
// rather than pointing into the Invoker, so a call still running on a worker
// after its run was abandoned stays valid even if the Invoker is destroyed.
Invoker::Invoker(std::vector<Middleware> chain) : chain_(std::move(chain)) {
  nexts_.resize(chain_.size() + 1);
  nexts_.back() = run_tool;
  for (std::size_t i = chain_.size(); i-- > 0;) {
    if (!chain_[i]) throw Error(ErrorCode::invalid_argument, "Invoker: middleware #" + std::to_string(i) + " is empty");
    auto layer = std::make_shared<const Middleware>(chain_[i]);
    auto rest = std::make_shared<const Next>(nexts_[i + 1]);
    nexts_[i] = [layer, rest](const ToolRequest& request, RunContext& ctx) { return (*layer)(request, ctx, *rest); };
  }
}

ToolResult Invoker::invoke_tool(const ToolRequest& request, RunContext& ctx) const {
  // The tier the call enters with is the most the gate allows; a chain
  // entered again from inside one keeps the stricter of the two.
  struct EntryTier {
    RunContext& ctx;
    std::optional<Autonomy> saved;
    ~EntryTier() { ctx.entry_tier_ = saved; }
  } entry{ctx, ctx.entry_tier_};
  ctx.entry_tier_ = ctx.entry_tier_ ? std::min(*ctx.entry_tier_, ctx.autonomy) : ctx.autonomy;
  return nexts_.front()(request, ctx);
}

}  // namespace agentkit
