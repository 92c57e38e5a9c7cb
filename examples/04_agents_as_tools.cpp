// 04 — agents as tools: a lead agent delegates to a researcher agent, which
// is just another tool (as_tool). The sub-run shares the lead's budget and
// cancellation, and the lead's usage totals include it.
//
// Both models are FakeLLM scripts, so this runs offline.
// Run: ./build/examples/example_04_agents_as_tools
#include <iostream>
#include <memory>
#include <string>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

namespace {

using agentkit::testing::FakeLLM;
using agentkit::testing::Turn;

agentkit::ToolCall call(std::string id, std::string name, agentkit::Json args) {
  return {std::move(id), std::move(name), std::move(args), {}};
}

std::string tokens(const agentkit::Usage& u) {
  return std::to_string(u.input_tokens) + " in / " + std::to_string(u.output_tokens) + " out";
}

}  // namespace

int main() {
  // The researcher has its own tool and its own model.
  auto search_notes = agentkit::tool("search_notes")
                          .doc("Search the field notes for passages about a topic.")
                          .side_effecting(false)
                          .params("topic")
                          .fn([](const std::string& topic) {
                            return "notes on " + topic + ": veined octopuses carry coconut shell halves as shelter";
                          });
  auto researcher = std::make_shared<agentkit::Agent>("researcher", "fake/researcher",
                                                      "You research a topic and reply in one sentence.",
                                                      agentkit::cognition::react({search_notes}));
  auto research = agentkit::as_tool(
      researcher, {.name = "research",
                   .description = "Delegate a research question and get a one-sentence finding back.",
                   .side_effecting = false,  // required: the researcher only reads notes
                   .render = [](const agentkit::RunResult& r) {
                     std::cout << "  researcher: " << to_string(r.stop_reason) << " after " << r.iterations
                               << " model calls, " << tokens(r.usage) << " tokens\n";
                     return r.output;
                   }});
  agentkit::Agent lead("lead", "fake/lead", "You answer by delegating research.", agentkit::cognition::react({research}));

  auto lead_llm = FakeLLM::script({
      Turn{.tool_calls = {call("l1", "research", {{"task", "Do octopuses use tools?"}})}, .usage = {100, 20, 0}},
      Turn{.content = "Yes: veined octopuses carry coconut shells to use as shelter.", .usage = {140, 15, 0}},
  });
  auto researcher_llm = FakeLLM::script({
      Turn{.tool_calls = {call("r1", "search_notes", {{"topic", "octopus tool use"}})}, .usage = {60, 10, 0}},
      Turn{.content = "Veined octopuses carry coconut shell halves and use them as shelter.", .usage = {80, 12, 0}},
  });
  auto ctx = agentkit::testing::make_test_ctx();
  ctx.models = [&](std::string_view name) -> std::shared_ptr<agentkit::Model> {
    return name == "fake/lead" ? lead_llm : researcher_llm;
  };

  auto result = lead.run("Do octopuses use tools?", ctx);
  std::cout << "lead:       " << to_string(result.stop_reason) << " after " << result.iterations << " model calls\n";
  std::cout << "answer: " << result.output << "\n";
  std::cout << "usage (lead + researcher): " << tokens(result.usage) << " tokens, " << ctx.budget->model_steps()
            << " model calls on the shared budget\n";
  return result.stop_reason == agentkit::StopReason::answered ? 0 : 1;
}
