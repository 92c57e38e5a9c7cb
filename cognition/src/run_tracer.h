#pragma once
// The spans of one run, in the OpenTelemetry GenAI semantic conventions
// (v1.41.0): invoke_agent for the run, chat per model call, execute_tool per
// tool call. They go to the context's sink (RunContext::tracer) and, for a
// durable run, to the store with its checkpoints (take_stored()): they are
// the run's record for `agentkit show`. A run with neither builds nothing:
// every call returns at once.
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/context.h>
#include <agentkit/run_state.h>
#include <agentkit/trace.h>

namespace agentkit::cognition {

class RunTracer {
 public:
  using Clock = std::chrono::system_clock;

  // Opens the run's invoke_agent span. A traced run's trace comes from its
  // state (a resumed run), else the context (a caller's traceparent, a
  // parent run), else a new one; the state records it. Sets ctx.trace_id
  // and ctx.span_id.
  void start(RunContext& ctx, RunState& state, const Agent& agent, const Model* model, bool durable);
  bool on() const noexcept { return s_ != nullptr; }
  // The spans ended since the last call, for the run's next checkpoint.
  std::vector<trace::Span> take_stored() { return s_ ? std::exchange(s_->stored, {}) : std::vector<trace::Span>(); }

  // Opens a chat span; returns the traceparent the call's request carries
  // (empty when not traced). Valid until the call ends.
  std::string_view model_started(const ModelRequest& request);
  // `cost_usd`: the call's cost under the agent's pricing, if it has one.
  void model_finished(const ModelResponse& response, std::optional<double> cost_usd);
  void model_failed(const Failure& failure, const Usage& usage);

  // A new execute_tool span id for a call about to start ("" when not
  // traced): a sub-run the tool starts hangs under it.
  trace::SpanId tool_span_id() const;
  // Ends the call's execute_tool span. `decided`: an approval decision
  // applied as the run resumed is added as an event.
  void tool_finished(trace::SpanId span_id, const ToolCall& call, const Tool* tool, CallStatus outcome,
                     std::string_view text, Clock::time_point start, Clock::time_point end);
  // A human's decision on a call, applied as the run resumes: an event on
  // the call's next execute_tool span (a rejected call gets a span of its
  // own, ended at once: it never runs).
  void approval_decided(const ToolCall& call, ApprovalVerdict verdict, std::string_view reason);

  // A guardrail check: a span of its own under the run ("guardrail {name}"),
  // an error when it tripped.
  void guardrail_checked(const GuardrailChecked& check, Clock::time_point start, Clock::time_point end);

  // A handoff (HandoffOccurred): a span of its own under the run
  // ("handoff {to}"), ended at once.
  void handoff(const HandoffOccurred& handoff);

  // Ends the invoke_agent span.
  void run_finished(const RunState& state, const Usage& usage);
  // Ends it for a run whose handle was dropped before it finished.
  void run_abandoned();

 private:
  trace::Span open(std::string name, trace::SpanKind kind, trace::SpanId parent) const;
  void end(trace::Span&& span);
  void end_run(const std::optional<Failure>& failure);

  // Everything a traced run keeps, allocated only when the run is traced or
  // durable: an untraced run's engine carries one null pointer.
  struct State {
    std::shared_ptr<trace::SpanSink> sink;
    bool durable = false;  // spans also go to stored
    bool ended = false;    // the invoke_agent span has ended
    bool content = false;
    std::vector<trace::Span> stored;
    trace::TraceId trace_id;
    trace::Span run;
    std::optional<trace::Span> chat;
    std::string chat_traceparent;
    std::string provider;
    std::string request_model;
    // Decisions awaiting their call's span: call id -> the event.
    std::map<std::string, trace::SpanEvent> decided;
  };
  std::unique_ptr<State> s_;
};

}  // namespace agentkit::cognition
