// 02 — the ReAct loop: the model asks for tools, agentkit runs them and hands
// the results back, until the model answers. An observer prints each step.
//
// The model is a FakeLLM playing a script, so this runs offline; the tools
// run for real. Run: ./build/examples/example_02_react_tools
#include <iostream>
#include <map>
#include <string>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

namespace {

using agentkit::testing::Turn;

// Prints each step of the run as it happens.
class PrintSteps final : public agentkit::Observer {
 public:
  void on_event(const agentkit::Event& event) override {
    if (auto* e = std::get_if<agentkit::ModelCallFinished>(&event)) {
      std::cout << "[model] step " << e->iteration << ": " << e->finish_reason << "\n";
    } else if (auto* e = std::get_if<agentkit::ToolCallStarted>(&event)) {
      std::cout << "[tool]  " << e->call.name << " " << e->call.arguments.dump() << "\n";
    } else if (auto* e = std::get_if<agentkit::ToolCallFinished>(&event)) {
      std::cout << "[tool]  " << e->name << " -> " << agentkit::to_string(e->outcome) << ": " << e->text << "\n";
    } else if (auto* e = std::get_if<agentkit::RunFinished>(&event)) {
      std::cout << "[run]   " << agentkit::to_string(e->stop_reason) << "\n";
    }
  }
};

agentkit::ToolCall call(std::string id, std::string name, agentkit::Json args) {
  return {std::move(id), std::move(name), std::move(args), {}};
}

}  // namespace

int main() {
  auto population = agentkit::tool("city_population")
                        .doc("Look up the most recent census population for a named city.")
                        .side_effecting(false)
                        .idempotent()
                        .params("city")
                        .fn([](const std::string& city) {
                          static const std::map<std::string, int> census{{"Lisbon", 545'000}, {"Porto", 231'000}};
                          auto it = census.find(city);
                          return it == census.end() ? 0 : it->second;
                        });
  auto subtract = agentkit::tool("subtract")
                      .doc("Subtract b from a and return the difference.")
                      .side_effecting(false)
                      .params("a", "b")
                      .fn([](int a, int b) { return a - b; });

  // The model's turns: two lookups in one turn, then arithmetic, then the answer.
  auto llm = agentkit::testing::FakeLLM::script({
      Turn{.tool_calls = {call("c1", "city_population", {{"city", "Lisbon"}}),
                          call("c2", "city_population", {{"city", "Porto"}})}},
      Turn{.tool_calls = {call("c3", "subtract", {{"a", 545000}, {"b", 231000}})}},
      Turn{.content = "Lisbon is larger, by 314,000 residents."},
  });
  agentkit::Agent agent("atlas", "fake", "You answer questions about cities. Use the tools for numbers.",
                        agentkit::cognition::react({population, subtract}));
  auto ctx = agentkit::testing::make_test_ctx({.llm = llm, .observer = std::make_shared<PrintSteps>()});

  auto result = agent.run("Which city is larger, Lisbon or Porto, and by how much?", ctx);

  // What the model was shown before its last turn: the subtract result.
  std::cout << "model saw last: " << llm->requests().back().messages.back().text() << "\n";
  std::cout << "answer: " << result.output << " (" << result.iterations << " model calls, "
            << ctx.budget->tool_calls() << " tool calls)\n";
  return result.stop_reason == agentkit::StopReason::answered ? 0 : 1;
}
