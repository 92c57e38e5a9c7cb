#pragma once
// ReActCognition: ask the model, act on its tool calls, observe, ask again,
// until it answers, suspends for a human, or hits a limit.
#include <memory>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/engine.h>
#include <agentkit/registry.h>

namespace agentkit::cognition {

// Holds the agent's tools; the ReAct strategy of the run engine
// (<agentkit/cognition/engine.h>):
//
//   ask_model -> (answer) done
//             -> (tool calls) act -> ask_model
//                                 -> suspended (a call awaits approval) -> act (on resume)
//
// Each transition is a step boundary: RunState is complete there and
// serialisable. Every model call advertises the tools. Bad calls (arguments
// not JSON or invalid, unknown tool, duplicate or empty ids and names, tool
// failures, shape errors) go back to the model as error results, up to
// AgentOptions::max_repairs consecutive turns; so does an answer that does
// not match the agent's output type. The engine runs the calls of one turn
// concurrently on ctx.executor (inline when null), results in call order,
// each under its own token (a child of the run's; see RunHandle for what a
// cancelled run records), and checks budgets before every model call and
// before every batch, and cancellation at every step.
class ReActCognition final : public Strategy {
 public:
  ReActCognition() = default;
  explicit ReActCognition(const std::vector<ToolPtr>& tools) : tools_(ToolRegistry::from_tools(tools)) {}
  explicit ReActCognition(ToolRegistry tools) : tools_(std::move(tools)) {}

  const ToolRegistry& tools() const override { return tools_; }
  Next next_call(const StepContext& step, RunState& state) const override;
  Next on_reply(const StepContext& step, RunState& state, Message reply) const override;
  Next after_calls(const StepContext& step, RunState& state) const override;

 private:
  ToolRegistry tools_;
};

// ReAct's decisions, for strategies that end in a ReAct loop:
// react_answer: a reply without tool calls is the answer, checked against
// the agent's output type (a mismatch appends a repair message and asks
// again, failing the run past max_repairs); react_after_calls: a batch with
// a bad call counts a repair turn (failing past max_repairs), a clean one
// resets the count, then the model is asked again.
Next react_answer(const StepContext& step, RunState& state, Message reply);
Next react_after_calls(const StepContext& step, RunState& state);

// Shorthand: std::make_shared<ReActCognition>(tools).
inline std::shared_ptr<const ReActCognition> react(const std::vector<ToolPtr>& tools) {
  return std::make_shared<const ReActCognition>(tools);
}

}  // namespace agentkit::cognition
