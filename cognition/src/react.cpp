#include <agentkit/cognition/react.h>

#include <optional>
#include <string_view>

#include <agentkit/errors.h>

namespace agentkit::cognition {
namespace {

// The answer text as JSON: the whole text, or the body of a ```json fence.
std::optional<Json> answer_json(const std::string& text) {
  std::string_view body = text;
  if (auto open = body.find("```"); open != std::string_view::npos) {
    auto start = body.find('\n', open);
    auto close = body.rfind("```");
    if (start != std::string_view::npos && close > start) body = body.substr(start + 1, close - start - 1);
  }
  try {
    return parse_arguments("output", body);
  } catch (const ToolArgumentError&) {
    return std::nullopt;
  }
}

}  // namespace

Next react_answer(const StepContext& step, RunState& state, Message reply) {
  const AgentOptions& options = step.agent.options();
  const auto& output = options.output;
  if (!output) return Next::answer(std::move(reply));
  DecodeState decoded;
  std::optional<Json> value = answer_json(reply.text());
  if (value && output->validate(*value, decoded)) return Next::answer(std::move(reply), std::move(*value));
  const std::string problems = value ? decoded.summary() : "the answer is not JSON";
  state.history.push_back(std::move(reply));
  state.history.push_back(Message::user("Your final answer did not match the required output type " +
                                        output->type_name + ": " + problems + ". Reply again with only JSON matching " +
                                        output->schema.dump()));
  if (++state.repairs > options.max_repairs) {
    return Next::stop(StopReason::failed, "the final answer did not match " + output->type_name + ": " + problems,
                      ErrorCode::protocol);
  }
  return Next::ask();
}

Next react_after_calls(const StepContext& step, RunState& state) {
  bool bad_call = false;
  for (const auto& outcome : state.outcomes) bad_call = bad_call || (outcome && outcome->outcome == CallStatus::error);
  state.repairs = bad_call ? state.repairs + 1 : 0;
  const int max_repairs = step.agent.options().max_repairs;
  if (state.repairs > max_repairs) {
    return Next::stop(StopReason::failed, "the model made bad tool calls in " + std::to_string(state.repairs) +
                                              " consecutive turns (max_repairs " + std::to_string(max_repairs) + ")",
                      ErrorCode::protocol);
  }
  return Next::ask();
}

Next ReActCognition::next_call(const StepContext&, RunState&) const { return Next::ask(); }

Next ReActCognition::on_reply(const StepContext& step, RunState& state, Message reply) const {
  if (!reply.tool_calls.empty()) return Next::run_calls(std::move(reply));
  return react_answer(step, state, std::move(reply));
}

Next ReActCognition::after_calls(const StepContext& step, RunState& state) const {
  return react_after_calls(step, state);
}

}  // namespace agentkit::cognition
