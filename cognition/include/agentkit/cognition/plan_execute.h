#pragma once
// PlanExecuteCognition: one planning call without tools, then ReAct over the
// plan. A second strategy of the run engine, in its own file: the proof that
// a strategy is one file (<agentkit/cognition/engine.h>).
#include <memory>
#include <string>
#include <vector>

#include <agentkit/cognition/engine.h>
#include <agentkit/registry.h>

namespace agentkit::cognition {

struct PlanExecuteOptions {
  // Appended to the agent's prompt for the planning call only.
  std::string planning_instruction =
      "Before doing anything, write a short numbered plan for the task: the steps you will take and the tools "
      "you will use. Do not carry out any step yet and do not answer the task yet; reply with the plan only.";
  // The user message that follows the plan in the history.
  std::string execute_instruction =
      "Now carry out the plan, step by step, using the tools. Revise the plan if a step fails. When you are "
      "done, reply with the final answer.";
};

// The first model call of a run carries the agent's prompt plus
// `planning_instruction` and no tools; its reply's text is the plan. The
// plan (an assistant message) and `execute_instruction` (a user message)
// then join the history, so every later request shows them, and the run
// continues as ReActCognition does (tools advertised, repairs, output type).
// A planning reply that asks for tool calls anyway is acted on as ReAct
// would.
//
// The planning call is a model call like any other: it counts against
// AgentOptions::max_iterations and the budget. Where a run stands is read
// from its state alone (the planning call is the run's first,
// RunState::iterations == 0), so suspension, resume and recovery work as
// for ReAct: a run recovered before its plan was checkpointed plans again.
//
// Example:
//   agentkit::Agent agent("mover", "fake", "You move boxes.",
//                         std::make_shared<agentkit::cognition::PlanExecuteCognition>(tools));
class PlanExecuteCognition final : public Strategy {
 public:
  explicit PlanExecuteCognition(const std::vector<ToolPtr>& tools, PlanExecuteOptions options = {})
      : tools_(ToolRegistry::from_tools(tools)), options_(std::move(options)) {}

  const ToolRegistry& tools() const override { return tools_; }
  Next next_call(const StepContext& step, RunState& state) const override;
  Next on_reply(const StepContext& step, RunState& state, Message reply) const override;
  Next after_calls(const StepContext& step, RunState& state) const override;

 private:
  ToolRegistry tools_;
  PlanExecuteOptions options_;
};

}  // namespace agentkit::cognition
