#pragma once
// The run engine and the strategy it drives. The engine is written once: it
// schedules model and tool calls on the executor, advances them from poll(),
// queues events, checkpoints at every step boundary, charges budgets and
// pricing, applies cancellation and approval decisions, and runs a batch of
// tool calls through the invoker. A Strategy only decides the next step from
// the run's state: call the model (with or without tools), run the calls the
// model asked for, answer, or stop. ReActCognition is one strategy
// (<agentkit/cognition/react.h>), PlanExecuteCognition another
// (<agentkit/cognition/plan_execute.h>); a new one is one file.
#include <optional>
#include <string>

#include <agentkit/agent.h>

namespace agentkit::cognition {

// One model call as a strategy shapes it. The messages are always the run's
// history (RunState::history): what the model should see later belongs there.
struct ModelCall {
  bool tools = true;          // advertise the strategy's tools (false: a call without tools)
  bool output_schema = true;  // carry the agent's declared output type, if any
  // Replaces the agent's prompt for this call only; nullopt: the agent's.
  std::optional<std::string> system;
};

// What a strategy tells the engine to do next.
//
//  - ask(call): call the model next. Returned from Strategy::next_call it
//    shapes that call; returned from on_reply/after_calls it only means
//    "ask the model again" (next_call shapes the call).
//  - run_calls(message): append the assistant `message` to the history and
//    run its tool calls. The engine screens them first (empty or duplicate
//    ids and names, unknown or hidden tools, arguments that are not a JSON
//    object within the limits: each refused call gets an error result, a
//    ToolCallRefused event and no run), checks the budget, asks for approval
//    where the invoker's gate says so, and suspends the run for a human when
//    a call awaits a decision.
//  - answer(message, structured): append `message`, whose text is the
//    answer, and end the run `answered` (`structured`: the decoded answer of
//    an agent with an output type, handed out as RunResult::structured).
//  - stop(reason, why, code): end the run with `reason` (failed,
//    max_iterations, ...); RunResult::failure carries `why` as its message,
//    and `code` when the reason is failed.
struct Next {
  enum class Kind { ask, run_calls, answer, stop };
  Kind kind = Kind::ask;
  ModelCall call;
  Message message;
  Json structured;
  StopReason reason = StopReason::failed;
  std::string why;
  ErrorCode code = ErrorCode::internal;  // stop: the failure's code when `reason` is failed

  static Next ask(ModelCall call = {}) {
    Next n;
    n.call = std::move(call);
    return n;
  }
  static Next run_calls(Message message) {
    Next n;
    n.kind = Kind::run_calls;
    n.message = std::move(message);
    return n;
  }
  static Next answer(Message message, Json structured = {}) {
    Next n;
    n.kind = Kind::answer;
    n.message = std::move(message);
    n.structured = std::move(structured);
    return n;
  }
  static Next stop(StopReason reason, std::string why, ErrorCode code = ErrorCode::internal) {
    Next n;
    n.kind = Kind::stop;
    n.reason = reason;
    n.why = std::move(why);
    n.code = code;
    return n;
  }
};

// What a strategy may consult while it decides: the run's copy of the agent
// (its options: output type, max_repairs, ...) and the run's context (emit()
// queues an event for the host). Valid for the duration of the call only.
struct StepContext {
  const Agent& agent;
  const RunContext& run;
};

// A reasoning strategy: the tools it may call and the decisions of a run.
// Its drive() hands every run to the engine, which calls the three methods
// below at step boundaries, on the thread that polls the run. They MUST NOT
// block (the engine runs model and tool calls, not the strategy) and MUST
// keep everything they need to decide in `state`: a run is resumed and
// recovered from its RunState alone, in another process, by a fresh
// strategy object. A strategy MAY append to the history (instructions,
// repair messages) and set RunState::repairs; it MUST NOT change messages
// already in the history (checkpoints send only what was appended). The
// engine owns every other field.
//
// A strategy never sees an Approval: the engine alone mints them (it is the
// ApprovalIssuer), for the calls of RunState::approved, the calls a human
// approved.
//
// Example (one model call, no tools, the reply is the answer):
//   class OneShot final : public agentkit::cognition::Strategy {
//    public:
//     const agentkit::ToolRegistry& tools() const override { return none_; }
//     Next next_call(const StepContext&, agentkit::RunState&) const override {
//       return Next::ask({.tools = false});
//     }
//     Next on_reply(const StepContext&, agentkit::RunState&, agentkit::Message reply) const override {
//       return Next::answer(std::move(reply));
//     }
//     Next after_calls(const StepContext&, agentkit::RunState&) const override { return Next::ask(); }
//    private:
//     agentkit::ToolRegistry none_;
//   };
class Strategy : public Cognition {
 public:
  // So a strategy's own declarations can name them unqualified.
  using Next = cognition::Next;
  using StepContext = cognition::StepContext;

  // Before each model call, once the engine checked the model, the budget
  // and AgentOptions::max_iterations: the call to make (ask(call)), or any
  // other step instead of calling the model.
  virtual Next next_call(const StepContext& step, RunState& state) const = 0;
  // The model replied. `reply` is the assistant's message, valid UTF-8; its
  // usage is charged and RunState::iterations counts it. Not yet in the
  // history: run_calls and answer append it; with ask or stop the strategy
  // appends what it wants kept.
  virtual Next on_reply(const StepContext& step, RunState& state, Message reply) const = 0;
  // Every call of the batch has its outcome (RunState::batch and outcomes,
  // in call order, refused calls included); after this the engine appends
  // the results to the history, then takes the step returned (ask: ask the
  // model again).
  virtual Next after_calls(const StepContext& step, RunState& state) const = 0;

  // Runs `agent`'s run on the engine. `agent.cognition()` MUST be this
  // strategy (Agent calls this; throws std::invalid_argument otherwise).
  std::unique_ptr<RunHandle::Driver> drive(const Agent& agent, RunState state, Decisions decisions, RunContext ctx,
                                           std::unique_ptr<Checkpoint> checkpoint) const final;
};

}  // namespace agentkit::cognition
