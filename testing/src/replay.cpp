#include <agentkit/testing/replay.h>

#include <algorithm>

namespace agentkit::testing {

std::vector<Turn> turns_from(const Cassette& cassette, std::string_view run) {
  std::vector<const ModelStep*> steps;
  for (const ModelStep& step : cassette.model_steps) {
    if (run.empty() || step.run == run) steps.push_back(&step);
  }
  if (steps.empty()) {
    throw CassetteError(run.empty() ? std::string("the cassette records no model step")
                                    : "the cassette records no model step of run '" + std::string(run) + "'");
  }
  std::stable_sort(steps.begin(), steps.end(), [](const ModelStep* a, const ModelStep* b) { return a->seq < b->seq; });
  std::vector<Turn> turns;
  turns.reserve(steps.size());
  for (const ModelStep* step : steps) {
    const std::string where = step->run + "#" + std::to_string(step->step);
    Turn turn;
    try {
      if (step->response.is_null()) {
        const std::string message = step->error.is_object() ? step->error.value("message", "") : std::string();
        turn.throws = message.empty() ? "the recorded call at " + where + " failed" : message;
      } else {
        Message reply = message_from_json(step->response.at("message"));
        turn.parts = std::move(reply.content);
        turn.tool_calls = std::move(reply.tool_calls);
        turn.usage = usage_from_json(step->response.at("usage"));
        turn.finish_reason = step->response.at("finish_reason").get<std::string>();
      }
    } catch (const std::exception& e) {
      throw CassetteError("cassette: the reply at " + where + " cannot be read: " + e.what());
    }
    turns.push_back(std::move(turn));
  }
  return turns;
}

}  // namespace agentkit::testing
