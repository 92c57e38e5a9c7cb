#pragma once
// ReActCognition: ask the model, act on its tool calls, observe, ask again,
// until it answers, suspends for a human, or hits a limit.
#include <memory>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/registry.h>

namespace agentkit::cognition {

// Holds the agent's tools; runs the ReAct state machine:
//
//   ask_model -> (answer) done
//             -> (tool calls) act -> ask_model
//                                 -> suspended (a call awaits approval) -> act (on resume)
//
// Each transition is a step boundary: RunState is complete there and
// serialisable. Bad calls (arguments not JSON or invalid, unknown tool,
// duplicate or empty ids and names, tool failures, shape errors) go back to
// the model as error results, up to AgentOptions::max_repairs consecutive
// turns. Calls of one turn run concurrently on ctx.executor (inline when
// null), results in call order, each under its own token (a child of the
// run's; see RunHandle for what a cancelled run records). Budgets are checked
// before every model call and before every batch; cancellation is checked at
// every step.
class ReActCognition final : public Cognition {
 public:
  ReActCognition() = default;
  explicit ReActCognition(const std::vector<ToolPtr>& tools) : tools_(ToolRegistry::from_tools(tools)) {}
  explicit ReActCognition(ToolRegistry tools) : tools_(std::move(tools)) {}

  const ToolRegistry& tools() const override { return tools_; }
  std::unique_ptr<RunHandle::Driver> drive(const Agent& agent, RunState state, Decisions decisions, RunContext ctx,
                                           std::unique_ptr<Checkpoint> checkpoint) const override;

 private:
  ToolRegistry tools_;
};

// Shorthand: std::make_shared<ReActCognition>(tools).
inline std::shared_ptr<const ReActCognition> react(const std::vector<ToolPtr>& tools) {
  return std::make_shared<const ReActCognition>(tools);
}

}  // namespace agentkit::cognition
