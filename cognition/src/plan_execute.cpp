#include <agentkit/cognition/plan_execute.h>

#include <agentkit/cognition/react.h>

namespace agentkit::cognition {

Next PlanExecuteCognition::next_call(const StepContext& step, RunState& state) const {
  if (state.iterations > 0) return Next::ask();
  return Next::ask({.tools = false,
                    .output_schema = false,
                    .system = step.agent.prompt() + "\n\n" + options_.planning_instruction});
}

Next PlanExecuteCognition::on_reply(const StepContext& step, RunState& state, Message reply) const {
  if (!reply.tool_calls.empty()) return Next::run_calls(std::move(reply));
  if (state.iterations > 1) return react_answer(step, state, std::move(reply));
  // The planning call's reply: the plan, kept in the history for every later request.
  state.history.push_back(std::move(reply));
  state.history.push_back(Message::user(options_.execute_instruction));
  return Next::ask();
}

Next PlanExecuteCognition::after_calls(const StepContext& step, RunState& state) const {
  return react_after_calls(step, state);
}

}  // namespace agentkit::cognition
