// Guardrails that ask an agent (<agentkit/agent_guardrails.h>), and
// guardrails of every kind on a pool: the check runs off the thread that
// polls, so a slow guardrail (an agent's model call) never blocks poll().
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/agent_guardrails.h>
#include <agentkit/cognition/react.h>
#include <agentkit/executor.h>
#include <agentkit/function_tool.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/events_of.h"
#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::AgentOptions;
using agentkit::GuardrailChecked;
using agentkit::GuardrailVerdict;
using agentkit::Json;
using agentkit::RunContext;
using agentkit::RunResult;
using agentkit::StopReason;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using agentkit_test::call;
using namespace std::chrono_literals;

namespace {

struct Refunds {
  std::shared_ptr<std::vector<double>> ran = std::make_shared<std::vector<double>>();
  agentkit::ToolPtr tool = agentkit::tool("refund")
                               .doc("Issue a refund against a customer order and return the confirmation id.")
                               .side_effecting(true)
                               .params("order_id", "amount_usd")
                               .fn([ran = ran](const std::string&, double amount) {
                                 ran->push_back(amount);
                                 return "refunded " + std::to_string(static_cast<int>(amount));
                               });
};

std::shared_ptr<const Agent> judge() {
  return std::make_shared<const Agent>("judge", "fake", "Answer PASS, REPAIR: <advice>, or why it must stop.");
}

struct EventLog final : agentkit::Observer {
  std::vector<agentkit::Event> events;
  void on_event(const agentkit::Event& e) override { events.push_back(e); }
};

RunResult answered_with(std::string text, Json structured = nullptr) {
  RunResult r;
  r.output = std::move(text);
  r.structured = std::move(structured);
  return r;
}

}  // namespace

TEST_CASE("agent_verdict reads a guardrail agent's answer, and trips on anything it cannot read",
          "[guardrail][agent_guardrail]") {
  using Kind = GuardrailVerdict::Kind;
  CHECK(agentkit::agent_verdict(answered_with("PASS")).kind == Kind::pass);
  CHECK(agentkit::agent_verdict(answered_with("  pass: on topic")).kind == Kind::pass);
  CHECK(agentkit::agent_verdict(answered_with("PASSPORT numbers are in it")).kind == Kind::trip);
  const auto repair = agentkit::agent_verdict(answered_with("REPAIR: ask for the order id first"));
  CHECK(repair.kind == Kind::repair);
  CHECK(repair.message == "ask for the order id first");
  const auto trip = agentkit::agent_verdict(answered_with("It asks for someone's password."));
  CHECK(trip.kind == Kind::trip);
  CHECK(trip.message == "It asks for someone's password.");
  CHECK(agentkit::agent_verdict(answered_with("")).kind == Kind::trip);
  // A structured answer decides by its tripwire, and must have one.
  CHECK(agentkit::agent_verdict(answered_with("", {{"tripwire", false}})).kind == Kind::pass);
  const auto structured = agentkit::agent_verdict(answered_with("PASS", {{"tripwire", true}, {"reason", "off topic"}}));
  CHECK(structured.kind == Kind::trip);
  CHECK(structured.message == "off topic");
  CHECK(agentkit::agent_verdict(answered_with("PASS", {{"tripwire", "no"}})).kind == Kind::trip);
  CHECK_THROWS_AS(agentkit::input_guardrail("x", nullptr), agentkit::Error);
}

TEST_CASE("an input guardrail that is an agent: its tripwire stops the run before the model is asked",
          "[guardrail][agent_guardrail]") {
  AgentOptions options;
  options.input_guardrails.push_back(agentkit::input_guardrail("on_topic", judge()));
  Agent support("support", "fake", "You help.", react({}), options);
  auto log = std::make_shared<EventLog>();

  SECTION("tripped") {
    auto llm = FakeLLM::script({Turn{.content = "It asks for someone else's password.",
                                     .usage = {.input_tokens = 30, .output_tokens = 8}}});
    auto ctx = make_test_ctx({.llm = llm, .observer = log});
    auto result = support.run("What is my neighbour's password?", ctx);
    CHECK(result.stop_reason == StopReason::guardrail_tripped);
    REQUIRE(result.failure);
    CHECK(result.failure->message == "guardrail 'on_topic' tripped: It asks for someone else's password.");
    const auto requests = llm->requests();
    REQUIRE(requests.size() == 1);  // the judge's; the support model was never asked
    CHECK(requests[0].system == "Answer PASS, REPAIR: <advice>, or why it must stop.");
    CHECK(requests[0].messages.back().text() == "What is my neighbour's password?");
    CHECK(result.usage.input_tokens == 30);  // the judge's sub-run counts toward the run
    const auto seen = agentkit_test::events_of<GuardrailChecked>(log->events);
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].verdict == "trip");
  }
  SECTION("passed") {
    auto llm = FakeLLM::script({Turn{.content = "PASS"}, Turn{.content = "Here is how to reset yours."}});
    auto ctx = make_test_ctx({.llm = llm, .observer = log});
    auto result = support.run("How do I reset my password?", ctx);
    CHECK(result.stop_reason == StopReason::answered);
    CHECK(result.output == "Here is how to reset yours.");
  }
  SECTION("the guardrail agent fails: the run trips, naming why") {
    auto llm = FakeLLM::script({Turn{.throws = "judge is down"}});
    auto ctx = make_test_ctx({.llm = llm, .observer = log});
    auto result = support.run("How do I reset my password?", ctx);
    CHECK(result.stop_reason == StopReason::guardrail_tripped);
    REQUIRE(result.failure);
    CHECK_THAT(result.failure->message, Catch::StartsWith("guardrail 'on_topic' failed: sub-agent 'judge' did not answer"));
  }
}

TEST_CASE("output and tool guardrails that are agents", "[guardrail][agent_guardrail]") {
  Refunds refunds;
  SECTION("an output guardrail agent stops an answer; it is not handed out") {
    AgentOptions options;
    options.output_guardrails.push_back(agentkit::output_guardrail("no_promises", judge()));
    Agent support("support", "fake", "You help.", react({}), options);
    auto llm = FakeLLM::script({Turn{.content = "I promise a full refund tomorrow."},
                                Turn{.content = "It promises a refund nobody approved."}});
    auto ctx = make_test_ctx({.llm = llm});
    auto result = support.run("Where is my refund?", ctx);
    CHECK(result.stop_reason == StopReason::guardrail_tripped);
    CHECK(result.output.empty());
    REQUIRE(llm->requests().size() == 2);
    CHECK(llm->requests()[1].messages.back().text() == "I promise a full refund tomorrow.");
  }
  SECTION("a tool guardrail agent repairs a call: it does not run and the model reads the advice") {
    AgentOptions options;
    options.tool_guardrails.push_back(agentkit::tool_guardrail("refund_review", judge(), {"refund"}));
    Agent support("support", "fake", "You help.", react({refunds.tool}), options);
    auto llm = FakeLLM::script({
        Turn{.tool_calls = {call("c1", "refund", {{"order_id", "A-1"}, {"amount_usd", 900}})}},
        Turn{.content = "REPAIR: refunds over $500 need the order's invoice"},
        Turn{.content = "I need the invoice first."},
    });
    auto ctx = make_test_ctx({.llm = llm});
    auto result = support.run("Refund A-1", ctx);
    CHECK(result.stop_reason == StopReason::answered);
    CHECK(refunds.ran->empty());
    const auto requests = llm->requests();
    REQUIRE(requests.size() == 3);
    CHECK(requests[1].messages.back().text() == R"(Tool call: refund {"amount_usd":900,"order_id":"A-1"})");
    CHECK(requests[2].messages.back().text() == "refunds over $500 need the order's invoice");
  }
}

TEST_CASE("on a pool, no guardrail blocks poll(): each stage's checks run off the polling thread",
          "[guardrail][nonblocking]") {
  // A guardrail that holds until the test lets it go (at most 5 s).
  struct Gate {
    std::atomic<bool> entered{false}, released{false};
    GuardrailVerdict hold() {
      entered = true;
      const auto until = std::chrono::steady_clock::now() + 5s;
      while (!released && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
      return GuardrailVerdict::pass();
    }
  };
  auto gate = std::make_shared<Gate>();
  Refunds refunds;
  AgentOptions options;
  std::string stage;
  SECTION("input") {
    stage = "input";
    options.input_guardrails.push_back({"slow", [gate](const std::string&, const RunContext&) { return gate->hold(); }});
  }
  SECTION("output") {
    stage = "output";
    options.output_guardrails.push_back(
        {"slow", [gate](const agentkit::Message&, const RunContext&) { return gate->hold(); }});
  }
  SECTION("tool_before") {
    stage = "tool_before";
    options.tool_guardrails.push_back(
        {.name = "slow", .before = [gate](const agentkit::ToolCall&, const RunContext&) { return gate->hold(); }});
  }
  SECTION("tool_after") {
    stage = "tool_after";
    options.tool_guardrails.push_back(
        {.name = "slow", .after = [gate](const agentkit::ToolCall&, const agentkit::CallOutcome&, const RunContext&) {
           return gate->hold();
         }});
  }
  Agent support("support", "fake", "You help.", react({refunds.tool}), options);
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "refund", {{"order_id", "A-1"}, {"amount_usd", 20}})}},
      Turn{.content = "Refunded."},
  });
  auto pool = std::make_shared<agentkit::ThreadPoolExecutor>(2);
  auto log = std::make_shared<EventLog>();
  auto ctx = make_test_ctx({.llm = llm, .executor = pool, .observer = log});
  auto handle = support.start("Refund A-1", ctx);
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (!gate->entered && std::chrono::steady_clock::now() < give_up) {
    REQUIRE_FALSE(handle.poll());
    handle.wait_ready(2ms);
  }
  REQUIRE(gate->entered);
  // The guardrail holds; the polls come back at once, the run not done.
  auto longest = std::chrono::steady_clock::duration::zero();
  for (int i = 0; i < 20; ++i) {
    const auto start = std::chrono::steady_clock::now();
    CHECK_FALSE(handle.poll());
    longest = std::max(longest, std::chrono::steady_clock::now() - start);
    std::this_thread::sleep_for(1ms);
  }
  INFO("stage " << stage);
  CHECK(longest < 1s);  // a blocked poll would last until the guardrail's 5 s ran out
  gate->released = true;
  while (!handle.poll()) handle.wait_ready(10ms);
  for (const auto& e : handle.drain_events()) log->on_event(e);
  CHECK(handle.result().stop_reason == StopReason::answered);
  CHECK(*refunds.ran == std::vector<double>{20});
  const auto seen = agentkit_test::events_of<GuardrailChecked>(log->events);
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].stage == stage);
  CHECK(seen[0].verdict == "pass");
}

TEST_CASE("on a pool, a tripwire and a repair act as they do inline", "[guardrail][nonblocking]") {
  Refunds refunds;
  AgentOptions options;
  options.tool_guardrails.push_back({.name = "cap",
                                     .tools = {"refund"},
                                     .before = [](const agentkit::ToolCall& c, const RunContext&) {
                                       return c.arguments.value("amount_usd", 0.0) > 500
                                                  ? GuardrailVerdict::repair("over the cap")
                                                  : GuardrailVerdict::pass();
                                     },
                                     .after = [](const agentkit::ToolCall&, const agentkit::CallOutcome& o,
                                                 const RunContext&) {
                                       return o.text == "refunded 7" ? GuardrailVerdict::trip("seven is unlucky")
                                                                     : GuardrailVerdict::pass();
                                     }});
  Agent support("support", "fake", "You help.", react({refunds.tool}), options);
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "refund", {{"order_id", "A-1"}, {"amount_usd", 900}}),
                          call("c2", "refund", {{"order_id", "A-2"}, {"amount_usd", 20}})}},
      Turn{.tool_calls = {call("c3", "refund", {{"order_id", "A-3"}, {"amount_usd", 7}})}},
      Turn{.content = "never"},
  });
  auto ctx = make_test_ctx({.llm = llm, .executor = std::make_shared<agentkit::ThreadPoolExecutor>(2)});
  auto result = support.run("Refund A-1, A-2 and A-3", ctx);
  CHECK(result.stop_reason == StopReason::guardrail_tripped);
  REQUIRE(result.failure);
  CHECK(result.failure->message == "guardrail 'cap' tripped: seven is unlucky");
  CHECK(*refunds.ran == std::vector<double>{20, 7});
  const auto requests = llm->requests();
  REQUIRE(requests.size() == 2);
  const auto& second = requests[1].messages;
  CHECK(second[second.size() - 2].text() == "over the cap");
  CHECK(second.back().text() == "refunded 20");
}

TEST_CASE("a call's arguments reach its tool, its after-guardrail and a suspended run's state whole",
          "[agent][arguments]") {
  // The engine lends each call its batch entry's arguments while it runs and
  // takes them back when the batch is collected: whatever reads the batch
  // afterwards must still see what the model sent.
  const bool pooled = GENERATE(false, true);
  CAPTURE(pooled);
  Refunds refunds;
  auto seen = std::make_shared<std::vector<Json>>();
  AgentOptions options;
  options.tool_guardrails.push_back({.name = "watch",
                                     .after = [seen](const agentkit::ToolCall& c, const agentkit::CallOutcome&,
                                                     const RunContext&) {
                                       seen->push_back(c.arguments);
                                       return GuardrailVerdict::pass();
                                     }});
  Agent support("support", "fake", "You help.", react({refunds.tool}), options);
  const Json first = {{"order_id", "A-1"}, {"amount_usd", 20}};
  const Json second = {{"order_id", "A-2"}, {"amount_usd", 30}};
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "refund", first)}},
      Turn{.tool_calls = {call("c2", "refund", second)}},
      Turn{.content = "refunded both"},
  });
  auto ctx = make_test_ctx({.llm = llm,
                            .executor = pooled ? std::make_shared<agentkit::ThreadPoolExecutor>(2) : nullptr});
  auto result = support.run("Refund A-1 and A-2", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(*refunds.ran == std::vector<double>{20, 30});
  CHECK(*seen == std::vector<Json>{first, second});

  SECTION("a call paused for approval keeps its arguments in the state, and runs with them once approved") {
    refunds.ran->clear();
    seen->clear();
    llm->rewind();
    ctx.autonomy = agentkit::Autonomy::gated;
    auto paused = support.run("Refund A-1 and A-2", ctx);
    REQUIRE(paused.stop_reason == StopReason::suspended);
    REQUIRE(paused.state.batch.size() == 1);
    CHECK(paused.state.batch[0].arguments == first);
    CHECK(refunds.ran->empty());
    auto resumed = support.resume(std::move(paused.state), {{"c1", agentkit::Decision::approve()}}, ctx);
    REQUIRE(resumed.stop_reason == StopReason::suspended);  // c2 pauses in turn
    REQUIRE(resumed.state.batch.size() == 1);
    CHECK(resumed.state.batch[0].arguments == second);
    CHECK(*refunds.ran == std::vector<double>{20});
    CHECK(*seen == std::vector<Json>{first});
  }
}
