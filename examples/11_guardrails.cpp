// 11 — guardrails and approval rules on a support agent (offline: FakeLLM).
//
// Three runs of one agent, and one of an agent whose answers an agent judges:
//   1. A task holding a card number: the input guardrail trips before the
//      model is asked.
//   2. Two refunds: the $900 one is repaired by a tool guardrail (it never
//      runs; the model reads why), the $40 one runs at once, and its result
//      is repaired after the call (the card number is withheld).
//   3. A $250 refund: the approval rule (over $100) suspends it for a human.
//   4. An answer that promises a date: a judge agent (an output guardrail
//      that is an agent) stops it before the run answers.
//
// Run: ./build/examples/example_11_guardrails
#include <iostream>
#include <memory>
#include <string>

#include <agentkit/agent.h>
#include <agentkit/agent_guardrails.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/guardrail.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

namespace {

using agentkit::GuardrailVerdict;
using agentkit::testing::Turn;

agentkit::ToolPtr refund_tool() {
  return agentkit::tool("refund")
      .doc("Issue a refund against a customer order and return the confirmation.")
      .side_effecting(true)
      .requires_approval([](const agentkit::Json& args) { return args.at("amount_usd").get<double>() > 100; })
      .params("order_id", "amount_usd")
      .fn([](const std::string& order, double amount) {
        std::cout << "  [refund] $" << amount << " on " << order << "\n";
        return "refunded $" + std::to_string(static_cast<int>(amount)) + " on " + order + " to card 4111 1111 1111 1111";
      });
}

agentkit::AgentOptions guarded() {
  agentkit::AgentOptions options;
  options.input_guardrails.push_back({"no_card_numbers", [](const std::string& task, const agentkit::RunContext&) {
    return task.find("4111") != std::string::npos ? GuardrailVerdict::trip("the task holds a card number")
                                                  : GuardrailVerdict::pass();
  }});
  options.tool_guardrails.push_back(
      {.name = "refund_policy",
       .tools = {"refund"},
       .before = [](const agentkit::ToolCall& call, const agentkit::RunContext&) {
         return call.arguments.value("amount_usd", 0.0) > 500
                    ? GuardrailVerdict::repair("refunds over $500 go through the finance team; tell the customer")
                    : GuardrailVerdict::pass();
       },
       .after = [](const agentkit::ToolCall&, const agentkit::CallOutcome& result, const agentkit::RunContext&) {
         return result.text.find("4111") != std::string::npos
                    ? GuardrailVerdict::repair("refund issued (card details withheld)")
                    : GuardrailVerdict::pass();
       }});
  return options;
}

void report(const char* title, const agentkit::RunResult& result,
            const std::shared_ptr<agentkit::testing::FakeLLM>& llm) {
  std::cout << title << ": " << to_string(result.stop_reason);
  if (result.failure) std::cout << ": " << result.failure->message;
  if (!result.output.empty()) std::cout << ": " << result.output;
  std::cout << "\n";
  if (result.suspended) {
    for (const auto& call : result.suspended->pending) {
      std::cout << "  awaiting approval: " << call.name << " " << call.arguments.dump() << "\n";
    }
  }
  const auto requests = llm->requests();
  if (requests.size() > 1) {
    for (const auto& m : requests.back().messages) {
      if (m.role == agentkit::Role::tool) std::cout << "  the model read (" << m.tool_call_id << "): " << m.text() << "\n";
    }
  }
}

}  // namespace

int main() {
  const agentkit::Agent agent("support", "fake", "You handle refunds.", agentkit::cognition::react({refund_tool()}),
                              guarded());

  auto llm1 = agentkit::testing::FakeLLM::script({Turn{.content = "never asked"}});
  auto ctx1 = agentkit::testing::make_test_ctx({.llm = llm1});
  report("1. card number in the task", agent.run("Refund card 4111 1111 1111 1111", ctx1), llm1);

  auto llm2 = agentkit::testing::FakeLLM::script({
      Turn{.tool_calls = {{"big", "refund", {{"order_id", "A-1"}, {"amount_usd", 900}}, {}},
                          {"small", "refund", {{"order_id", "A-2"}, {"amount_usd", 40}}, {}}}},
      Turn{.content = "I refunded $40 on A-2; the $900 refund on A-1 goes to our finance team."},
  });
  auto ctx2 = agentkit::testing::make_test_ctx({.llm = llm2});
  report("2. two refunds", agent.run("Refund A-1 ($900) and A-2 ($40)", ctx2), llm2);

  auto llm3 = agentkit::testing::FakeLLM::script({
      Turn{.tool_calls = {{"mid", "refund", {{"order_id", "A-3"}, {"amount_usd", 250}}, {}}}},
  });
  auto ctx3 = agentkit::testing::make_test_ctx({.llm = llm3});
  report("3. a $250 refund", agent.run("Refund A-3 ($250)", ctx3), llm3);

  auto judge = std::make_shared<const agentkit::Agent>(
      "judge", "fake", "Answer PASS unless the reply promises what we cannot keep; then say what it promises.");
  agentkit::AgentOptions judged;
  judged.output_guardrails.push_back(agentkit::output_guardrail("no_promises", judge));
  const agentkit::Agent careful("support", "fake", "You handle refunds.", agentkit::cognition::react({refund_tool()}),
                                judged);
  auto llm4 = agentkit::testing::FakeLLM::script({
      Turn{.content = "Your refund arrives tomorrow, guaranteed."},
      Turn{.content = "It guarantees a delivery date."},  // the judge's verdict
  });
  auto ctx4 = agentkit::testing::make_test_ctx({.llm = llm4});
  report("4. a promise, judged by an agent", careful.run("When does my refund arrive?", ctx4), llm4);
}
