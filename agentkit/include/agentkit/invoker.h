#pragma once
// Every tool call passes through the invoker's middleware chain; only the end
// of the chain calls Tool::run.
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <agentkit/error.h>
#include <agentkit/context.h>
#include <agentkit/tool.h>

namespace agentkit {

struct ToolRequest;
struct ToolResult;

// Exactly-once records for side-effecting calls, set on a request by a
// durable run (see agentkit::state::StoreLedger). The end of the chain asks
// begin() before running a side-effecting tool: a result means "do not run,
// answer this" (the recorded outcome, or outcome_unknown for a call that
// started and never recorded an end); nullopt means the intent is now
// recorded and the tool runs, after which end() records its outcome. A
// begin() that throws (its store is away) leaves the call unrun: its result
// is an error saying so.
//
// The ledger also keeps idempotent()'s results for the run, keyed by what a
// call did (tool and canonical arguments) rather than by call id, so an
// identical call in a later process of the same run (after a resume or a
// recovery) gets the first one's result: remember() stores an ok result,
// recall() returns it or nullopt.
class CallLedger {
 public:
  virtual ~CallLedger() = default;
  virtual std::optional<ToolResult> begin(const ToolRequest& request) const = 0;
  virtual void end(const ToolRequest& request, const ToolResult& result) const = 0;
  virtual std::optional<ToolResult> recall(const std::string& call) const = 0;
  virtual void remember(const std::string& call, const ToolResult& result) const = 0;
};

// A human's approval of one exact call: its call id, tool and arguments. It
// is what lets the end of the invoker chain run a call that needs approval
// (see needs_approval()); nothing else does, whatever a middleware sets on a
// request. An approval cannot be made from a request's fields: only the run
// engine mints one (ApprovalIssuer), for a call it holds a Decision for. A
// copy moved onto another call, or left on a request whose call id, tool or
// arguments a middleware changed, approves nothing.
class Approval {
 public:
  Approval() = default;  // approves nothing

  // Whether this approves exactly `request` (same call id, tool and arguments).
  bool approves(const ToolRequest& request) const;
  // The arguments the model proposed when a human's Decision::edit replaced
  // them; null when the call runs as proposed.
  const Json& proposed_arguments() const noexcept;

 private:
  friend class ApprovalIssuer;
  struct Grant;
  explicit Approval(std::shared_ptr<const Grant> grant) : grant_(std::move(grant)) {}
  std::shared_ptr<const Grant> grant_;
};

// The one place approvals are minted. The run engine derives from it (see
// <agentkit/cognition/engine.h>; strategies do not) and issues an approval only for a
// call a human decided to run; agentkit::testing::approve() is the seam for
// tests that drive the invoker directly. A middleware MUST NOT derive from it.
class ApprovalIssuer {
 protected:
  ~ApprovalIssuer() = default;
  // Approves `request` as it stands (call id, tool, arguments); `proposed`
  // is what the model proposed when a human edited the arguments.
  static Approval issue(const ToolRequest& request, Json proposed = nullptr);
};

// A request to run one tool call.
struct ToolRequest {
  std::string call_id;
  std::string name;
  Json arguments = Json::object();
  ToolPtr tool;
  // The request's own claim; the tool's declaration wins when either says so.
  bool side_effecting = false;
  // A human's approval of this exact call, minted by the run engine when it
  // resumes with a Decision (see Approval). Empty: not approved.
  Approval approval;
  int attempt = 1;
  // Where this call's intent and outcome are recorded (null: no record), and
  // the call's key, unique within its run (see RunContext::call_key).
  std::shared_ptr<const CallLedger> ledger;
  std::string ledger_key;

  bool effectively_side_effecting() const { return side_effecting || (tool && tool->side_effecting_for(arguments)); }
  bool effectively_idempotent() const noexcept { return tool && tool->idempotent(); }
};

// The outcome of one call, as the loop and the model see it.
struct ToolResult {
  // ok, error, denied, awaiting_approval, outcome_unknown (see CallStatus
  // in <agentkit/events.h>; a tool never returns `interrupted`).
  using Status = CallStatus;

  Status status = Status::ok;
  Json value;
  std::string text;        // model-visible text for non-ok results
  bool retryable = false;  // an error that a retry may fix
  // Content parts beside the value (ok results; see ToolOutput).
  std::vector<ContentPart> parts;
  // awaiting_approval from a sub-run (CallSuspended): what it awaits.
  std::shared_ptr<const NestedSuspension> nested;
  // Set (to the failure's code) on the outcome_unknown result of a call that
  // threw RunInterrupted: the run stops there, unsaved (see RunInterrupted).
  std::optional<ErrorCode> interrupted;

  static ToolResult ok(Json value, std::vector<ContentPart> parts = {}) {
    return {Status::ok, std::move(value), {}, false, std::move(parts)};
  }
  static ToolResult error(std::string text, bool retryable = false) { return {Status::error, {}, std::move(text), retryable}; }
  static ToolResult denied(std::string text) { return {Status::denied, {}, std::move(text), false}; }
  static ToolResult awaiting_approval() { return {Status::awaiting_approval, {}, "awaiting approval", false}; }
  static ToolResult outcome_unknown(std::string text) { return {Status::outcome_unknown, {}, std::move(text), false}; }

  bool is_ok() const noexcept { return status == Status::ok; }
  // What goes back to the model: the value (strings verbatim, other JSON
  // dumped) or the text.
  std::string model_text() const;
};

// The model-visible text for an exception a tool threw: an argument error's
// own message, otherwise "Tool failed: <what>".
std::string failure_text(std::exception_ptr error);

// The rest of the chain. Passed by const&; a middleware MUST NOT store it.
using Next = std::function<ToolResult(const ToolRequest&, RunContext&)>;
// One layer: may call next zero times (deny), once, or several times (retry).
using Middleware = std::function<ToolResult(const ToolRequest&, RunContext&, const Next&)>;

// Thrown by a tool to say "this failed, and trying again may succeed".
// Code unavailable.
class RetryableToolError : public Error {
 public:
  explicit RetryableToolError(const std::string& message) : Error(ErrorCode::unavailable, message) {}
};

// Thrown by a tool that cannot tell whether its effect happened (a request
// timed out after it was sent). The end of the chain turns it into an
// outcome_unknown result: never retried, recorded as such by a durable run,
// and shown to the model as the exception's message. Code outcome_unknown.
class OutcomeUnknownError : public Error {
 public:
  explicit OutcomeUnknownError(const std::string& message) : Error(ErrorCode::outcome_unknown, message) {}
};

// Thrown by a tool whose work paused for human decisions on calls of its
// own: an agent run through as_tool whose sub-run suspended. The end of the
// chain turns it into an awaiting_approval result carrying `nested`, so the
// run suspends with the sub-run's calls and routes their decisions back
// down (see Suspended in <agentkit/agent.h>). Never recorded as the call's
// outcome: the call runs again when the run resumes. Code unimplemented for
// anything that catches it.
class CallSuspended : public Error {
 public:
  explicit CallSuspended(std::shared_ptr<const NestedSuspension> nested)
      : Error(ErrorCode::unimplemented, "the call suspended awaiting approval"), nested_(std::move(nested)) {}
  const std::shared_ptr<const NestedSuspension>& nested() const noexcept { return nested_; }

 private:
  std::shared_ptr<const NestedSuspension> nested_;
};

// Thrown by a tool whose work is a durable run of its own (as_tool's
// sub-run) when that run's store failed (unreachable, a write whose outcome
// is unknown, the run's end not written), so the call cannot say how it
// ended. The end of the chain turns it into an outcome_unknown result with
// `interrupted` set and records no outcome for the call; the calling run
// then stops where its store last has it, failed with this error's code,
// saving nothing more, and a recovery runs the call again (which resumes or
// recovers the sub-run). Only a reenterable tool (Tool::reenterable) may
// throw it.
class RunInterrupted : public Error {
 public:
  RunInterrupted(ErrorCode code, const std::string& message) : Error(code, message) {}
};

// Whether a call must pause for a human decision in the run of `ctx`: its
// tool requires approval for it (Tool::requires_approval_for: the tool's
// declaration or its approval predicate; a predicate that throws means yes,
// and the failure is logged), or the context's autonomy tier asks for one.
bool needs_approval(const ToolRequest& request, const RunContext& ctx) noexcept;
// The same under `tier`, without a run: a tool with an approval predicate
// needs approval here (there is no context to decide it with).
bool needs_approval(const ToolRequest& request, Autonomy tier) noexcept;
// Whether a call may run now: it needs no approval, or carries an Approval
// of exactly this call. What the end of the chain enforces, and what a layer
// that answers without running (memoize(), idempotent()) checks first: a
// cached answer never stands in for a decision.
bool cleared(const ToolRequest& request, const RunContext& ctx);

// An ordered middleware chain ending in Tool::run. The first middleware is
// the outermost. The chain is composed once, at construction.
//
// The end of the chain enforces approval itself: a call that needs approval
// under ctx.gate_tier() and carries no Approval of exactly that call returns
// awaiting_approval without running, whatever the middleware set. It also consults the request's ledger
// for side-effecting calls, so a recorded call is never run again. A Tool::run that returns normally is
// `ok`, one that throws OutcomeUnknownError is `outcome_unknown`; other
// exceptions propagate to the middleware (see error_boundary()).
//
// Example:
//   auto invoker = std::make_shared<agentkit::Invoker>(std::vector<agentkit::Middleware>{
//       agentkit::error_boundary(), agentkit::tracing(), agentkit::idempotent(),
//       [](const ToolRequest& req, RunContext& ctx, const Next& next) {
//         if (req.name == "shell") return ToolResult::denied("blocked by policy");
//         return next(req, ctx);
//       }});
class Invoker {
 public:
  Invoker();
  explicit Invoker(std::vector<Middleware> chain);
  Invoker(const Invoker&) = delete;
  Invoker& operator=(const Invoker&) = delete;

  ToolResult invoke_tool(const ToolRequest& request, RunContext& ctx) const;
  std::size_t size() const noexcept { return chain_.size(); }

 private:
  std::vector<Middleware> chain_;
  std::vector<Next> nexts_;  // nexts_[i] enters layer i; the last is the tool
};

// ---------------------------------------------------------------- middleware

// A span per call (tool, call id, outcome, duration) emitted as a ToolSpan event.
Middleware tracing();
// Counts calls and durations against ctx.budget. This is what charges tool
// calls to the budget (the run loop checks the budget before each batch), so
// a chain without it leaves the tool_calls limit unenforced.
Middleware metering();
// Refuses calls a policy rejects: return a reason to deny, nullopt to allow.
using EgressPolicy = std::function<std::optional<std::string>(const ToolRequest&)>;
Middleware egress(EgressPolicy policy);
// Denies calls to the listed tools or to tools carrying any listed tag.
EgressPolicy deny_tools(std::vector<std::string> names, std::vector<std::string> tags = {});
// Installs `allowlist` as ctx.egress for the rest of the chain, so network
// tools check every URL they reach (redirects included) against it, and turns
// the EgressDenied they throw into a denied result. A tool whose spec
// metadata names a "url" is checked before it runs. See <agentkit/egress.h>.
Middleware egress_allowlist(std::shared_ptr<const EgressAllowlist> allowlist);
// At-most-once for side-effecting calls within a run: keyed by (correlation
// id, scope, tool, canonical arguments); concurrent duplicates wait for the
// first; failures are never cached. Read-only calls pass through, and so
// does a call that needs approval and has none (to the gate): a recorded
// result is never an answer to a call no human approved. Settled
// entries are kept for `retention` (long enough to cover any retry of a run),
// then dropped, so a shared invoker does not grow without bound. In a durable
// run the results are also kept in the run's ledger (CallLedger::remember),
// so the promise holds across the processes that resume or recover the run.
Middleware idempotent(std::chrono::milliseconds retention = std::chrono::hours(24));
// Caches read-only calls for `ttl`, keyed by (scope, run, tool, canonical
// arguments): an answer never crosses scopes, nor runs unless the tool
// declares Effects::shared_cache. Side-effecting calls, calls that need
// approval under ctx.autonomy and every call to a tool with an approval rule
// always pass through: a cached answer never stands in for a decision, and
// the rule runs once per call, at the gate.
Middleware memoize(std::chrono::milliseconds ttl = std::chrono::minutes(5));
// One audit record per call: the arguments that ran and the outcome. When a
// human's Decision::edit replaced the model's arguments, `proposed_arguments`
// holds the model's (null otherwise).
struct AuditRecord {
  std::string correlation_id;
  std::string scope;
  std::string tool;
  std::string call_id;
  Json arguments;
  std::string outcome;
  std::string text;
  Json proposed_arguments;
};
Middleware audit(std::function<void(const AuditRecord&)> sink);
// Retries retryable failures (RetryableToolError or a retryable error result)
// of read-only or idempotent tools, with exponential backoff and full jitter.
// A side-effecting, non-idempotent call is never re-run.
struct RetryPolicy {
  int max_attempts = 3;
  std::chrono::milliseconds base_delay{100};
  std::chrono::milliseconds max_delay{5000};
};
Middleware retry(RetryPolicy policy = {});
// Gives the call a deadline `limit` from now: the rest of the chain runs on
// the calling thread (no thread is started) under a child of ctx.cancellation
// whose deadline that is, so ctx.cancelled() turns true for the tool there
// and network tools give up. timeout() cancels cooperatively: a tool that
// ignores its context runs to its end, and this layer returns when it does.
// A call that ends past the limit without a result (it threw, or returned an
// error) is, when read-only, a retryable error "timed out after N ms"; when
// side-effecting, outcome_unknown, which retry() never re-runs. A result the
// body did return past the limit (ok, denied, outcome_unknown) stands, and a
// durable run's ledger records what the body really returned.
Middleware timeout(std::chrono::milliseconds limit);
// Turns any exception into a model-visible "Tool failed: ..." result and logs
// the full error to ctx.logger (nowhere when it is null).
Middleware error_boundary();
// Logs each call's tool, call id, outcome and duration at debug level.
Middleware logging();

// The chain agentkit uses when a context has no invoker:
// error_boundary, tracing, metering, idempotent, retry.
std::vector<Middleware> default_middleware();

}  // namespace agentkit
