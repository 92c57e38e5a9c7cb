// 13 — handoffs: a triage agent hands the conversation to a billing agent,
// which answers. The triage model sees a `transfer_to_billing` tool (beside
// its own tools); calling it switches the run to billing: billing's prompt,
// tools and model from the next turn on, the history carried (here without
// triage's order lookup: Handoff::keep filters what billing's model sees).
// The result says which agent answered; the switch is a HandoffOccurred
// event (and a span when the run is traced).
//
// Every model is a FakeLLM script, so this runs offline.
// Run: ./build/examples/example_13_handoff
#include <iostream>
#include <memory>
#include <string>
#include <variant>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

namespace {

using agentkit::testing::FakeLLM;
using agentkit::testing::Turn;

agentkit::ToolCall call(std::string id, std::string name, agentkit::Json arguments = agentkit::Json::object()) {
  return agentkit::ToolCall{std::move(id), std::move(name), std::move(arguments), {}};
}

struct PrintHandoffs final : agentkit::Observer {
  void on_event(const agentkit::Event& event) override {
    if (const auto* h = std::get_if<agentkit::HandoffOccurred>(&event)) {
      std::cout << "handoff: " << h->from << " -> " << h->to << " (call " << h->call_id << ")\n";
    }
  }
};

}  // namespace

int main() {
  auto lookup_order = agentkit::tool("lookup_order")
                          .doc("Look up a customer order by id and return its status line.")
                          .side_effecting(false)
                          .params("order_id")
                          .fn([](const std::string& id) { return "order " + id + ": delivered, damaged"; });
  auto refund = agentkit::tool("refund")
                    .doc("Issue a refund against a customer order and return the confirmation id.")
                    .side_effecting(true)
                    .params("order_id", "amount_usd")
                    .fn([](const std::string& id, double amount) {
                      return "refund R-" + id + " of $" + std::to_string(static_cast<int>(amount)) + " issued";
                    });

  auto billing = std::make_shared<const agentkit::Agent>(
      "billing", "fake/billing", "You are billing. You issue refunds.", agentkit::cognition::react({refund}));
  agentkit::AgentOptions options;
  options.handoffs.push_back({billing, "Refunds, invoices and charges.",
                              // Billing needs no order lookups: hide them (a call goes with its result).
                              [](const agentkit::Message& m) { return m.tool_name != "lookup_order"; }});
  agentkit::Agent triage("triage", "fake/triage", "You are triage. Find out what the customer needs.",
                         agentkit::cognition::react({lookup_order}), std::move(options));

  auto triage_llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "lookup_order", {{"order_id", "A-1"}})}},
      Turn{.content = "A refund: passing you to billing.", .tool_calls = {call("h1", "transfer_to_billing")}},
  });
  auto billing_llm = FakeLLM::script({
      Turn{.tool_calls = {call("c2", "refund", {{"order_id", "A-1"}, {"amount_usd", 20}})}},
      Turn{.content = "I have refunded $20 for order A-1 (refund R-A-1)."},
  });
  auto ctx = agentkit::testing::make_test_ctx({.observer = std::make_shared<PrintHandoffs>()});
  ctx.models = [&](std::string_view name) -> std::shared_ptr<agentkit::Model> {
    return name == "fake/billing" ? billing_llm : triage_llm;
  };

  auto result = triage.run("Order A-1 arrived damaged. I want my $20 back.", ctx);
  const auto triage_requests = triage_llm->requests();
  const auto billing_requests = billing_llm->requests();
  std::cout << "triage saw tools:";
  for (const auto& name : triage_requests.at(0).tools) std::cout << " " << name;
  std::cout << "\nbilling's prompt: " << billing_requests.at(0).system << "\n";
  std::cout << "billing saw tools:";
  for (const auto& name : billing_requests.at(0).tools) std::cout << " " << name;
  std::cout << "\nbilling saw " << billing_requests.at(0).messages.size() << " of the " << result.state.handoff.at
            << " messages before the handoff\n";
  std::cout << to_string(result.stop_reason) << " by " << result.agent << ": " << result.output << "\n";
  return result.stop_reason == agentkit::StopReason::answered && result.agent == "billing" ? 0 : 1;
}
