// Guardrails: input (on the task, before the model is asked), output (on
// the answer, before the run answers) and tool (on arguments before the
// call, on the result after). A tripwire stops the run with
// guardrail_tripped, naming the guardrail; a tool guardrail may repair
// instead; a guardrail that throws trips; every check is an event and a
// span; a call a before-guardrail blocks never runs, not after a suspension
// either.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/registry.h>
#include <agentkit/guardrail.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/span_recorder.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/events_of.h"
#include "../helpers/span_named.h"
#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::AgentOptions;
using agentkit::GuardrailChecked;
using agentkit::GuardrailVerdict;
using agentkit::RunContext;
using agentkit::StopReason;
using agentkit::ToolCall;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using agentkit_test::call;

namespace {

struct Refunds {
  std::shared_ptr<std::vector<double>> ran = std::make_shared<std::vector<double>>();
  agentkit::ToolPtr tool;
  Refunds() {
    tool = agentkit::tool("refund")
               .doc("Issue a refund against a customer order and return the confirmation id.")
               .side_effecting(true)
               .params("order_id", "amount_usd")
               .fn([ran = ran](const std::string&, double amount) {
                 ran->push_back(amount);
                 return "refunded " + std::to_string(static_cast<int>(amount)) + " (card 4111 1111 1111 1111)";
               });
  }
};

agentkit::InputGuardrail no_card_numbers() {
  return {"no_card_numbers", [](const std::string& task, const RunContext&) {
            return task.find("4111") != std::string::npos ? GuardrailVerdict::trip("the task holds a card number")
                                                          : GuardrailVerdict::pass();
          }};
}

struct EventLog final : agentkit::Observer {
  std::vector<agentkit::Event> events;
  void on_event(const agentkit::Event& e) override { events.push_back(e); }
};

std::vector<GuardrailChecked> checks(const std::vector<agentkit::Event>& events) {
  return agentkit_test::events_of<GuardrailChecked>(events);
}

}  // namespace

TEST_CASE("an input guardrail's tripwire stops the run before the model is asked", "[guardrail][agent]") {
  AgentOptions options;
  options.input_guardrails = {no_card_numbers()};
  auto llm = FakeLLM::script({Turn{.content = "never"}});
  Agent agent("support", "fake", "You help.", react({}), options);
  auto log = std::make_shared<EventLog>();
  auto ctx = make_test_ctx({.llm = llm, .observer = log});
  const auto& events = log->events;

  auto result = agent.run("Refund card 4111 1111 1111 1111 please", ctx);
  CHECK(result.stop_reason == StopReason::guardrail_tripped);
  CHECK(result.output.empty());
  REQUIRE(result.failure);
  CHECK(result.failure->code == agentkit::ErrorCode::permission_denied);
  CHECK(result.failure->message == "guardrail 'no_card_numbers' tripped: the task holds a card number");
  CHECK(llm->requests().empty());
  const auto seen = checks(events);
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].guardrail == "no_card_numbers");
  CHECK(seen[0].stage == "input");
  CHECK(seen[0].verdict == "trip");

  SECTION("a clean task passes, once, and the run answers") {
    auto ok = FakeLLM::script({Turn{.content = "Done."}});
    auto more = std::make_shared<EventLog>();
    auto ctx2 = make_test_ctx({.llm = ok, .observer = more});
    CHECK(agent.run("Refund order A-1", ctx2).stop_reason == StopReason::answered);
    REQUIRE(checks(more->events).size() == 1);
    CHECK(checks(more->events)[0].verdict == "pass");
  }
}

TEST_CASE("an output guardrail stops an answer that breaks it: the answer is not handed out", "[guardrail][agent]") {
  AgentOptions options;
  options.output_guardrails = {{"no_card_numbers_out", [](const agentkit::Message& answer, const RunContext&) {
                                  return answer.text().find("4111") != std::string::npos
                                             ? GuardrailVerdict::trip("the answer holds a card number")
                                             : GuardrailVerdict::pass();
                                }}};
  auto llm = FakeLLM::script({Turn{.content = "Your card 4111 1111 1111 1111 was refunded."}});
  Agent agent("support", "fake", "You help.", react({}), options);
  auto ctx = make_test_ctx({.llm = llm});
  auto result = agent.run("Refund A-1", ctx);
  CHECK(result.stop_reason == StopReason::guardrail_tripped);
  CHECK(result.output.empty());
  REQUIRE(result.failure);
  CHECK(result.failure->message == "guardrail 'no_card_numbers_out' tripped: the answer holds a card number");
  for (const auto& m : result.state.history) CHECK(m.text().find("4111") == std::string::npos);
}

TEST_CASE("a tool guardrail repairs: the call does not run and the model reads why, or its result is replaced",
          "[guardrail][agent]") {
  Refunds refunds;
  AgentOptions options;
  options.tool_guardrails = {{.name = "refund_cap",
                              .tools = {"ref*"},
                              .before =
                                  [](const ToolCall& call, const RunContext&) {
                                    return call.arguments.value("amount_usd", 0.0) > 500
                                               ? GuardrailVerdict::repair("refunds over $500 go through finance")
                                               : GuardrailVerdict::pass();
                                  },
                              .after =
                                  [](const ToolCall&, const agentkit::CallOutcome& result, const RunContext&) {
                                    return result.text.find("4111") != std::string::npos
                                               ? GuardrailVerdict::repair("refund issued (card details withheld)")
                                               : GuardrailVerdict::pass();
                                  }}};
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("big", "refund", {{"order_id", "A-1"}, {"amount_usd", 900}}),
                          call("small", "refund", {{"order_id", "A-2"}, {"amount_usd", 20}})}},
      Turn{.content = "Refunded the small one."},
  });
  Agent agent("support", "fake", "You help.", react({refunds.tool}), options);
  auto ctx = make_test_ctx({.llm = llm});
  auto result = agent.run("Refund A-1 and A-2", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(*refunds.ran == std::vector<double>{20});  // the $900 call never ran
  const auto requests = llm->requests();
  const auto& seen = requests.at(1).messages;
  const auto result_of = [&](const std::string& id) {
    for (const auto& m : seen) {
      if (m.tool_call_id == id) return m;
    }
    FAIL("no result for " << id);
    return agentkit::Message{};
  };
  CHECK(result_of("big").text() == "refunds over $500 go through finance");
  CHECK(result_of("big").is_error);
  CHECK(result_of("small").text() == "refund issued (card details withheld)");
}

TEST_CASE("a tool guardrail's tripwire stops the run: nothing of the batch runs", "[guardrail][agent]") {
  Refunds refunds;
  AgentOptions options;
  options.tool_guardrails = {{.name = "no_refunds_today",
                              .before = [](const ToolCall&, const RunContext&) {
                                return GuardrailVerdict::trip("refunds are frozen");
                              }}};
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "refund", {{"order_id", "A-1"}, {"amount_usd", 5}})}},
                              Turn{.content = "never"}});
  Agent agent("support", "fake", "You help.", react({refunds.tool}), options);
  auto ctx = make_test_ctx({.llm = llm});
  auto result = agent.run("Refund A-1", ctx);
  CHECK(result.stop_reason == StopReason::guardrail_tripped);
  REQUIRE(result.failure);
  CHECK(result.failure->message == "guardrail 'no_refunds_today' tripped: refunds are frozen");
  CHECK(refunds.ran->empty());
  CHECK(llm->requests().size() == 1);
}

TEST_CASE("a guardrail that throws trips the run (fail closed)", "[guardrail][agent]") {
  AgentOptions options;
  options.input_guardrails = {{"moderation", [](const std::string&, const RunContext&) -> GuardrailVerdict {
                                 throw std::runtime_error("moderation service unreachable");
                               }}};
  auto llm = FakeLLM::script({Turn{.content = "never"}});
  Agent agent("support", "fake", "You help.", react({}), options);
  auto ctx = make_test_ctx({.llm = llm});
  auto result = agent.run("Hello", ctx);
  CHECK(result.stop_reason == StopReason::guardrail_tripped);
  REQUIRE(result.failure);
  CHECK_THAT(result.failure->message, Catch::Contains("guardrail 'moderation' failed") &&
                                          Catch::Contains("moderation service unreachable"));
  CHECK(llm->requests().empty());
}

TEST_CASE("a call a before-guardrail blocks does not run after an approval either", "[guardrail][approval]") {
  Refunds refunds;
  auto gated = agentkit::with_approval(refunds.tool);
  auto frozen = std::make_shared<std::atomic<bool>>(false);
  AgentOptions options;
  options.tool_guardrails = {{.name = "freeze",
                              .before = [frozen](const ToolCall&, const RunContext&) {
                                return frozen->load() ? GuardrailVerdict::trip("refunds were frozen meanwhile")
                                                      : GuardrailVerdict::pass();
                              }}};
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "refund", {{"order_id", "A-1"}, {"amount_usd", 5}})}},
                              Turn{.content = "never"}});
  Agent agent("support", "fake", "You help.", react({gated}), options);
  auto ctx = make_test_ctx({.llm = llm});
  auto first = agent.run("Refund A-1", ctx);
  REQUIRE(first.stop_reason == StopReason::suspended);
  frozen->store(true);  // between the request and the decision
  auto second = agent.resume(first.state, {{"c1", agentkit::Decision::approve()}}, ctx);
  CHECK(second.stop_reason == StopReason::guardrail_tripped);
  CHECK(refunds.ran->empty());
}

TEST_CASE("each guardrail check is a span under the run", "[guardrail][trace]") {
  AgentOptions options;
  options.input_guardrails = {no_card_numbers()};
  auto llm = FakeLLM::script({Turn{.content = "Done."}});
  Agent agent("support", "fake", "You help.", react({}), options);
  auto ctx = make_test_ctx({.llm = llm});
  auto recorder = std::make_shared<agentkit::testing::SpanRecorder>();
  ctx.tracer = recorder;
  REQUIRE(agent.run("Refund A-1", ctx).stop_reason == StopReason::answered);
  const auto spans = recorder->spans();
  const agentkit::trace::Span* guard = agentkit_test::span_named(spans, "guardrail no_card_numbers");
  const agentkit::trace::Span* run = agentkit_test::span_named(spans, "invoke_agent support");
  REQUIRE(guard);
  REQUIRE(run);
  CHECK(guard->parent_span_id == run->span_id);
  REQUIRE(guard->attribute("agentkit.guardrail.verdict"));
  CHECK(std::get<std::string>(*guard->attribute("agentkit.guardrail.verdict")) == "pass");
  CHECK(std::get<std::string>(*guard->attribute("agentkit.guardrail.stage")) == "input");
}
