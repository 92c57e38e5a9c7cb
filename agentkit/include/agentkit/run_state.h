#pragma once
// RunState: the whole state of a run as a resumable state machine, and its
// versioned JSON document; the errors a durable run raises when it cannot be
// started, resumed or recovered as asked. In core so that both the run engine
// (<agentkit/agent.h>) and the store layer (<agentkit/state/checkpoint.h>,
// which saves and loads it) can use it.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <agentkit/context.h>
#include <agentkit/error.h>
#include <agentkit/events.h>
#include <agentkit/json.h>
#include <agentkit/messages.h>
#include <agentkit/model.h>

namespace agentkit {

// Where the state machine stands. Serialisable at every step boundary.
enum class Phase { ask_model, act, suspended, done };
// "ask_model", "act", "suspended", "done".
std::string_view to_string(Phase phase) noexcept;

// Outcome of one call of the current batch, kept across a suspension.
// Serialised with its status's name ("ok", "denied", "interrupted", ...).
struct CallOutcome {
  std::string text;
  bool is_error = false;
  CallStatus outcome = CallStatus::ok;  // ok, error, denied, outcome_unknown or interrupted
  std::vector<ContentPart> parts;  // beside the text: what the tool returned (v4)
};

// A human's decision on one pending call. A decision is the only thing that
// approves a call (the run engine turns it into an Approval of exactly that
// call; see <agentkit/invoker.h>).
//
// edit(args) approves the call with `args` instead of the model's: they are
// checked against the tool (Tool::check_arguments) before anything runs, the
// history shows the call as it ran (with `args`), and audit() records both.
struct Decision {
  enum class Kind { approve, reject, edit };
  Kind kind = Kind::reject;
  std::string message;  // reject: why (shown to the model)
  Json arguments;       // edit: the arguments to run instead

  static Decision approve() { return {Kind::approve, {}, {}}; }
  static Decision reject(std::string why = {}) { return {Kind::reject, std::move(why), {}}; }
  static Decision edit(Json arguments) { return {Kind::edit, {}, std::move(arguments)}; }
};
// Decisions by call id. A pending call without a decision is rejected; a
// decision for a call id that is not pending, or an edit the tool rejects, is
// an InvalidDecision and nothing runs. A sub-agent's call is named by its
// qualified id (see Suspended in <agentkit/agent.h>).
using Decisions = std::map<std::string, Decision>;

// A call of the current batch that runs a sub-agent (as_tool) whose run
// suspended for approval inside it: what the sub-run awaits, and, once the
// parent run is resumed, the decisions routed down to it. The call runs again
// with them (RunContext::resuming) and resumes the sub-run where it stopped.
// Serialised in RunState's "nested" object under the call's id (v4, written
// only when set).
struct NestedSuspension {
  std::string run_id;       // the sub-run's (durable: "<parent run id>/<call key>")
  int iterations = 0;       // the sub-run's model calls when it suspended
  std::vector<ToolCall> pending;    // as the sub-run names them (its own Suspended::pending)
  std::vector<std::string> agents;  // their agent paths, from the sub-run's agent
  bool decided = false;     // the parent was resumed: `decisions` are the human's
  Decisions decisions;      // by the sub-run's call ids
};

// What of the history the model sees, once AgentOptions::context_policy
// compacted it: the task (history[0]), pinned messages, `summary` (when
// set) and history[from] onward. The history itself is never cut.
// Serialised as "window" (an object, written only once a compaction
// happened); `from` must be 0 or the index of a message that is not a tool
// result, within the history.
struct ContextWindow {
  std::size_t from = 0;
  std::string summary;  // of the messages before `from`, by the policy's summarizer
  int compactions = 0;

  bool compacted() const noexcept { return compactions > 0; }
};

// Which agent the run is under once it handed off (see Handoff in
// <agentkit/agent.h>). Serialised as "handoff" (an object with "agent",
// "from" and "at", written only once a handoff happened). `agent` is the
// active agent's name, found again through the starting agent's handoff
// graph when the run is resumed or recovered; `from` the agent that handed
// to it (whose Handoff::keep filters what `agent`'s model sees of
// history[0, at)); `at` the history's size at the handoff (1 to its size).
struct HandoffState {
  std::string agent;  // empty: no handoff, the run is under RunState::agent
  std::string from;
  std::size_t at = 0;
  int handoffs = 0;   // handoffs so far in this run

  bool happened() const noexcept { return !agent.empty(); }
};

// The whole state of a run: what resume() needs, nothing process-bound.
// Serialised as versioned JSON: this agentkit reads every earlier version and
// refuses a newer one with a clear error.
//
// A state handed back to resume() is checked, never trusted: with a store
// (RunContext::store) it must equal the run's stored checkpoint; without one
// it must carry a valid `signature` made with RunContext::state_key. See
// Agent::resume.
struct RunState {
  static constexpr int kVersion = 4;

  std::string run_id;
  std::string agent;
  std::string task;
  Phase phase = Phase::ask_model;
  std::vector<Message> history;  // user task first; the prompt is the agent's; content parts (v4)
  int iterations = 0;            // model calls made
  int tool_calls = 0;            // calls sent to the invoker (v3; what metering() charges)
  double cost_usd = 0;           // model calls' cost under AgentOptions::pricing (v3)
  int repairs = 0;               // consecutive turns with a bad call
  // The current batch (the last assistant message's calls) and the outcomes
  // known so far, in call order.
  std::vector<ToolCall> batch;
  std::vector<std::optional<CallOutcome>> outcomes;
  std::vector<std::string> pending;   // call ids awaiting a decision
  std::vector<std::string> approved;  // call ids of the batch a human approved (v2)
  // Call id -> the arguments the model proposed, for approved calls a human
  // edited (the batch and the history hold the edited ones, as they run).
  std::map<std::string, Json> proposed;
  std::string session;                // the session this run continues, if any (v2)
  int session_base = 0;               // history entries that came from the session (v2)
  Usage usage;
  StopReason stop_reason = StopReason::answered;
  std::string output;
  // Why the run stopped early (RunResult::failure). Serialised as "error"
  // (the message), "error_code" (to_string of the code; v3, written only
  // when set) and, when a provider gave details, "failure" (an optional
  // object: model, http_status, retryable, retry_after_ms). A v1-v3
  // document without a code reads back with the stop reason's code (see
  // RunResult::failure), ErrorCode::internal for `failed`; the v3 provider
  // names "invalid" and "permission" read as invalid_argument and
  // permission_denied.
  std::optional<Failure> failure;
  // "hmac-sha256:<64 hex digits>": HMAC-SHA256 under RunContext::state_key
  // of the rest of the document (its canonical_dump, this field left out).
  // Set on RunResult::state when the context has a key; empty otherwise.
  // Checkpoints in a store do not carry it.
  std::string signature;
  // The run's own RunOptions::model_settings (not the agent's), kept so a
  // resumed or recovered run asks the model as the run started: resume()
  // and recover() take no RunOptions. Optional in the document ("model_settings",
  // written only when set), so v3 documents without it still load.
  std::optional<ModelSettings> model_settings;
  // The trace the run's spans belong to and the span of its first
  // invoke_agent (W3C hex ids), set when a traced run starts; a resumed run
  // hangs its new invoke_agent span under that one, in the same trace,
  // whichever process resumes it. Optional in the document ("trace", an
  // object with "trace_id" and "span_id", written only when set); a
  // malformed id is refused like any malformed field.
  std::string trace_id;
  std::string trace_span_id;
  // The model's view of a long run's history (AgentOptions::context_policy).
  ContextWindow window;
  // The agent the run is under after a handoff. `agent` above keeps naming
  // the agent the run started with (the one that resumes and recovers it);
  // RunResult::agent names the one that answered.
  HandoffState handoff;
  // Calls of the batch whose sub-run suspended, by call id: what they await
  // (see NestedSuspension); in `pending` until the run is resumed.
  std::map<std::string, NestedSuspension> nested;

  // The batch's calls awaiting a decision, in call order.
  std::vector<ToolCall> pending_calls() const;

  // A document whose dump() never throws: text that is not UTF-8 is
  // replaced (see sanitize_utf8). "signature" is written when set.
  Json to_json() const;
  // Throws agentkit::Error (invalid_argument) for a malformed document or a
  // newer version, and a JsonError (also invalid_argument) naming the field for a count
  // or version that is not an integer in range (4294967297, 5.7e21, -1.5).
  static RunState from_json(const Json& j);
};

// A durable run could not be started, resumed or recovered as asked. The
// subclasses say why (their codes in brackets); a plain RunError is a new
// run whose id is already in the store (already_exists).
class RunError : public Error {
 public:
  explicit RunError(const std::string& message, ErrorCode code = ErrorCode::already_exists) : Error(code, message) {}
};
// No checkpoint for that run id in the context's store (and scope). [not_found]
class RunNotFound : public RunError {
 public:
  explicit RunNotFound(const std::string& message) : RunError(message, ErrorCode::not_found) {}
};
// Another resume or recovery of the same run got there first, or the run is
// no longer suspended. [aborted]
class RunAlreadyResumed : public RunError {
 public:
  explicit RunAlreadyResumed(const std::string& message) : RunError(message, ErrorCode::aborted) {}
};
// Decisions a resume cannot apply: one names a call id that is not pending
// (a typo must not turn an approval into a rejection), or an edit's arguments
// are not a valid call of the tool (what() carries the tool's
// ToolArgumentError message). Thrown before anything runs or is saved: the
// run stays suspended, to resume again with corrected decisions.
// [invalid_argument]
class InvalidDecision : public RunError {
 public:
  InvalidDecision(std::string call_id, const std::string& problem)
      : RunError("decision for call '" + call_id + "': " + problem, ErrorCode::invalid_argument),
        call_id_(std::move(call_id)) {}
  const std::string& call_id() const noexcept { return call_id_; }

 private:
  std::string call_id_;
};
// A stored checkpoint is unreadable or was written by a newer agentkit.
// [data_loss]
class CheckpointError : public RunError {
 public:
  explicit CheckpointError(const std::string& message) : RunError(message, ErrorCode::data_loss) {}
};
// A RunState handed to resume() failed its integrity check. Catch this to
// handle both kinds below. [unauthenticated]
class StateIntegrityError : public RunError {
 public:
  explicit StateIntegrityError(const std::string& message) : RunError(message, ErrorCode::unauthenticated) {}
};
// The state differs from the run's stored checkpoint, or its signature does
// not match its content under the context's state key: it was altered (or
// signed with another key). Nothing ran.
class StateTampered : public StateIntegrityError {
 public:
  using StateIntegrityError::StateIntegrityError;
};
// The state cannot be checked: it has no signature, or the context has
// neither a store nor a state key to check it with. Nothing ran.
class StateUnsigned : public StateIntegrityError {
 public:
  using StateIntegrityError::StateIntegrityError;
};

// Charges `budget` with what a stored run has spent so far: its model steps,
// the tool calls it sent to the invoker, its tokens and its cost. Meant for a
// fresh Budget in a process that resumes or recovers the run, so that
// suspending and resuming cannot lift the run's limits. Wall time is not
// carried over.
void charge_spent(Budget& budget, const RunState& state);

}  // namespace agentkit
