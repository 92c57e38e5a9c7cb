#pragma once
// Typed events a run emits. Hosts receive them through an Observer (blocking
// `run`) or drain them from a RunHandle on their own thread.
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <agentkit/messages.h>
#include <agentkit/trace_ids.h>

namespace agentkit {

// Why a run ended. Names (to_string) are what RunState documents and the
// CLI's JSON carry: "answered", "suspended", "max_iterations",
// "budget_exhausted", "cancelled", "failed".
// guardrail_tripped: a guardrail's tripwire stopped the run (<agentkit/guardrail.h>).
enum class StopReason { answered, suspended, max_iterations, budget_exhausted, cancelled, failed, guardrail_tripped };
std::string_view to_string(StopReason reason) noexcept;
// The stop reason named `name`, or nullopt.
std::optional<StopReason> stop_reason_from_string(std::string_view name) noexcept;

// How one tool call ended: ToolResult::Status is this type (see
// <agentkit/invoker.h>). `interrupted` is the run engine's, never a tool's:
// the call never started because the run stopped or was cancelled first.
enum class CallStatus {
  ok,                 // value holds the result
  error,              // text is a model-visible error (is_error on the wire)
  denied,             // refused by policy or a human; text says why
  awaiting_approval,  // needs a decision first; the tool did not run
  outcome_unknown,    // a side-effecting call that may or may not have happened
  interrupted,        // never started: the run stopped first
};
// "ok", "error", "denied", "awaiting_approval", "outcome_unknown", "interrupted".
std::string_view to_string(CallStatus status) noexcept;
std::optional<CallStatus> call_status_from_string(std::string_view name) noexcept;

// What a human decided on a call awaiting approval (ApprovalDecided).
enum class ApprovalVerdict { approved, edited, rejected };
// "approved", "edited", "rejected".
std::string_view to_string(ApprovalVerdict verdict) noexcept;

// Where an event comes from: the run, the agent and the span that emitted
// it. A run builds one and every event it emits shares it (RunContext::emit
// stamps it), so stamping costs a reference count, not four string copies.
struct EventSource {
  std::string run_id;          // the emitting run's id (its RunContext::correlation_id)
  std::string agent_path;      // the agent's name; "parent/child" for a sub-run
  trace::SpanId span_id;         // the emitting run's span
  trace::SpanId parent_span_id;  // the span of the run that started it; empty for a top-level run
};

// What every event carries besides its own fields, as its last member
// `info`: when it was emitted and where from. Both are stamped where the
// event enters a run's queue or reaches an observer (RunContext::emit); an
// emitter that sets one keeps it. Along one run's queue (the events its
// drain_events() hands out, its sub-runs' included) the times stamped never
// decrease. An event built by hand and never emitted carries neither.
//
// Spans: a run's events carry the run's span and, for a sub-run, the span
// of the run that started it as parent_span_id (a sub-run started from a
// tool call hangs under the calling run, whatever the call's ToolSpan).
//
// Example:
//   for (const agentkit::Event& e : handle.drain_events()) {
//     const agentkit::EventInfo& info = agentkit::info_of(e);
//     if (info.agent_path() != "planner") continue;  // a sub-agent's event
//   }
struct EventInfo {
  std::chrono::system_clock::time_point time{};  // the epoch: not stamped
  std::shared_ptr<const EventSource> source;     // null: not stamped, or emitted outside any run

  // The source's fields; empty when there is no source.
  std::string_view run_id() const noexcept { return source ? std::string_view(source->run_id) : std::string_view(); }
  std::string_view agent_path() const noexcept {
    return source ? std::string_view(source->agent_path) : std::string_view();
  }
  std::string_view span_id() const noexcept { return source ? source->span_id.view() : std::string_view(); }
  std::string_view parent_span_id() const noexcept {
    return source ? source->parent_span_id.view() : std::string_view();
  }
};

struct ModelCallStarted {
  int iteration = 0;
  EventInfo info;
};
// A fragment of the assistant's text as a streaming model produces it, in
// order. The whole message still ends the call (ModelCallFinished); adapters
// that do not stream emit none.
struct TextDelta {
  std::string text;
  EventInfo info;
};
struct ModelCallFinished {
  int iteration = 0;
  Usage usage;
  std::string finish_reason;
  EventInfo info;
};
struct ToolCallStarted {
  ToolCall call;
  std::string status;  // the tool's status line
  EventInfo info;
};
// A call the model asked for that the run refused without starting it: an
// unknown tool, an empty name, a duplicate call id, or arguments that are
// not a JSON object within the limits. `error` is the error result the model
// gets for the call. No ToolCallStarted or ToolCallFinished comes for it.
struct ToolCallRefused {
  ToolCall call;
  std::string error;
  EventInfo info;
};
// A decision on a call that was awaiting approval, applied as its run
// resumes. `decision` is approved, edited (approved with new arguments,
// which `call` carries) or rejected (`reason` is what the model is told;
// a pending call given no decision is rejected). An approved or edited call
// then starts as usual; a rejected one never runs.
struct ApprovalDecided {
  ToolCall call;
  ApprovalVerdict decision = ApprovalVerdict::rejected;
  std::string reason;
  EventInfo info;
};
struct ToolCallFinished {
  std::string call_id;
  std::string name;
  CallStatus outcome = CallStatus::ok;  // never interrupted: a call that did not start has no event
  std::string text;                     // what the model sees
  std::chrono::microseconds duration{0};
  EventInfo info;
};
// A span around one tool call, emitted by the tracing() middleware:
// `span_id` is the call's own, `parent_span_id` the run's (info.span_id()).
// `outcome` is the call's status; error also for a call that threw.
struct ToolSpan {
  trace::SpanId span_id;
  trace::SpanId parent_span_id;
  std::string tool;
  std::string call_id;
  CallStatus outcome = CallStatus::ok;
  std::chrono::microseconds duration{0};
  EventInfo info;
};
struct RunSuspended {
  std::vector<ToolCall> pending;
  EventInfo info;
};
struct RunFinished {
  StopReason stop_reason = StopReason::answered;
  std::string output;
  EventInfo info;
};
// A progress note from a tool (`ctx.emit(Progress{...})`), delivered like
// every other event: to the observer, or drained from the run's handle, on
// the host's thread even when the tool runs on an executor.
struct Progress {
  std::string message;
  EventInfo info;
};

// Progress an MCP server reports for a tool call in flight
// (notifications/progress), emitted on the thread running the call.
struct McpProgress {
  std::string server;  // the client's server label
  std::string tool;    // the MCP tool name
  double progress = 0;
  std::optional<double> total;
  std::string message;
  EventInfo info;
};

// A fragment of one tool call's arguments as a streaming model produces it.
// Informational and provisional, like TextDelta: the whole message still
// ends the call (ModelCallFinished), and the tool call that runs is the one
// assembled from the complete, validated reply, never from deltas. A stream
// cut short fails the model call (truncated) after its deltas were emitted,
// and no tool runs. Fragments come in order, interleaved with the reply's
// other deltas as the stream has them; the transport retries a request only
// before its body begins, so no fragment is emitted twice. `arguments` is
// raw JSON text, valid JSON only once a call's fragments are joined.
// Adapters that do not stream emit none; the final-answer tool of a
// declared output type (Anthropic) emits none either.
struct ToolCallDelta {
  std::size_t index = 0;  // the call's position in the reply's tool calls
  std::string id;         // the call id and tool name as known so far: the
  std::string name;       // provider sends them with the call's first fragment
  std::string arguments;  // the next piece of the arguments' JSON text (often empty on a call's first)
  EventInfo info;
};

// A fragment of the model's reasoning (its thinking, or a summary of it) as
// a streaming model produces it, in order. Informational and provisional:
// the reply's ReasoningPart comes whole with the message (ModelCallFinished).
// Only the readable text streams; a signature or encrypted (redacted)
// content never does.
struct ReasoningDelta {
  std::string text;
  EventInfo info;
};

// One guardrail check (<agentkit/guardrail.h>): `stage` is input, output,
// tool_before or tool_after (`call_id` set for the tool stages); `verdict`
// pass, trip or repair; `message` the guardrail's (empty on a pass).
struct GuardrailChecked {
  std::string guardrail;
  std::string stage;
  std::string verdict;
  std::string message;
  std::string call_id;
  EventInfo info;
};

// The run's context window was compacted (AgentOptions::context_policy): the
// model now sees history[from] onward, besides the task, pinned messages
// and the summary; history[previous_from, from) left the window. `tokens_*`
// are the policy's estimates of what the model sees before and after.
// `summarized`: the messages that left were folded into the summary by a
// model call (whose usage is in `usage`); otherwise they were dropped.
struct ContextCompacted {
  std::size_t previous_from = 0;
  std::size_t from = 0;
  std::size_t tokens_before = 0;
  std::size_t tokens_after = 0;
  bool summarized = false;
  Usage usage;
  EventInfo info;
};

// The run handed the conversation from agent `from` to agent `to` (see
// Handoff in <agentkit/agent.h>): the model called `transfer_to_<to>` as
// call `call_id`, the batch's results are in the history, and the run
// continues under `to` (its prompt, tools, model and settings). `at` is
// the history's size at the switch: history[0, at) came before it. Events
// after this one carry the new agent in their agent path.
struct HandoffOccurred {
  std::string from;
  std::string to;
  std::string call_id;
  std::size_t at = 0;
  EventInfo info;
};

using Event = std::variant<ModelCallStarted, ModelCallFinished, ToolCallStarted, ToolCallFinished, ToolSpan,
                           RunSuspended, RunFinished, Progress, McpProgress, TextDelta, ToolCallRefused,
                           ApprovalDecided, ToolCallDelta, ReasoningDelta, GuardrailChecked, ContextCompacted,
                           HandoffOccurred>;

// The metadata of any event (its `info` member).
const EventInfo& info_of(const Event& event) noexcept;
EventInfo& info_of(Event& event) noexcept;

// Receives events. Every method defaults to a no-op; override what you need.
// Called on the thread that drives the run (the host's thread for handles).
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_event(const Event&) {}
};

}  // namespace agentkit
