// 02 — a ReAct agent with two tools, one of which needs a human's approval.
// The scripted model (FakeLLM) stands in for a real one, so this runs offline.
// The run suspends before the refund, a "human" approves it, the run resumes
// from its serialised state and the agent answers.
#include <cstdio>
#include <iostream>
#include <string>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

namespace {

// Prints each step of the run as it happens.
class PrintSteps final : public agentkit::Observer {
 public:
  void on_event(const agentkit::Event& event) override {
    if (auto* e = std::get_if<agentkit::ModelCallFinished>(&event)) {
      std::cout << "  [model] step " << e->iteration << " (" << e->finish_reason << ")\n";
    } else if (auto* e = std::get_if<agentkit::ToolCallStarted>(&event)) {
      std::cout << "  [tool]  " << e->status << " " << e->call.arguments.dump() << "\n";
    } else if (auto* e = std::get_if<agentkit::ToolCallFinished>(&event)) {
      std::cout << "  [tool]  " << e->name << " -> " << e->outcome
                << (e->outcome == "ok" ? ": " + e->text : std::string()) << "\n";
    }
  }
};

}  // namespace

int main() {
  using agentkit::testing::Turn;

  auto lookup_order = agentkit::tool("lookup_order")
                          .doc("Look up a customer order: its status and the amount paid in USD.")
                          .side_effecting(false)
                          .idempotent()
                          .status("Looking up the order")
                          .params("order_id")
                          .fn([](const std::string& id) { return id + ": delivered damaged, paid $20.00"; });

  auto refund = agentkit::tool("refund")
                    .doc("Issue a refund against a customer order and return the confirmation id.")
                    .side_effecting(true)
                    .requires_approval()
                    .status("Issuing a refund")
                    .params("order_id", "amount_usd")
                    .fn([](const std::string& id, double amount) {
                      char buf[96];
                      std::snprintf(buf, sizeof buf, "refund RF-1001 issued: $%.2f on %s", amount, id.c_str());
                      return std::string(buf);
                    });

  auto llm = agentkit::testing::FakeLLM::script({
      Turn{.tool_calls = {{"c1", "lookup_order", {{"order_id", "A-1"}}, {}}}},
      Turn{.tool_calls = {{"c2", "refund", {{"order_id", "A-1"}, {"amount_usd", 20.0}}, {}}}},
      Turn{.content = "Order A-1 arrived damaged, so I refunded the $20.00 you paid (confirmation RF-1001)."},
  });

  agentkit::Agent agent("billing", "fake", "You handle refunds for damaged orders.",
                        agentkit::cognition::react({lookup_order, refund}));
  auto ctx = agentkit::testing::make_test_ctx({.llm = llm, .observer = std::make_shared<PrintSteps>()});

  std::cout << "task: My order A-1 arrived damaged, can I get my money back?\n";
  auto result = agent.run("My order A-1 arrived damaged, can I get my money back?", ctx);
  std::cout << "stop: " << to_string(result.stop_reason) << "\n";
  if (result.suspended) {
    for (const auto& call : result.suspended->pending) {
      std::cout << "approval needed: " << call.name << " " << call.arguments.dump() << " -> approved\n";
    }
    // The suspended state is plain JSON: store it, resume hours later elsewhere.
    const std::string saved = result.state.to_json().dump();
    auto state = agentkit::RunState::from_json(agentkit::Json::parse(saved));
    result = agent.resume(std::move(state), {{result.suspended->pending[0].id, agentkit::Decision::approve()}}, ctx);
    std::cout << "stop: " << to_string(result.stop_reason) << "\n";
  }
  std::cout << "answer: " << result.output << "\n";
  return result.stop_reason == agentkit::StopReason::answered ? 0 : 1;
}
