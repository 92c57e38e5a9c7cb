// Agent + ReActCognition + FakeLLM: the agent-level examples of spec 000 and
// the run engine's contracts (suspension, resume, limits, repair turns).
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <thread>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/executor.h>
#include <agentkit/function_tool.h>
#include <agentkit/session.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/timing.h"
#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::Decision;
using agentkit::Json;
using agentkit::StopReason;
using agentkit::ToolCall;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using agentkit_test::call;

namespace {

agentkit::ToolPtr city_population() {
  return agentkit::tool("city_population")
      .doc("Look up the most recent census population for a named city.")
      .side_effecting(false)
      .idempotent()
      .params("city")
      .fn([](const std::string& city) { return city == "Lisbon" ? 545000 : 0; });
}

struct Refunds {
  std::atomic<int> executed{0};
  agentkit::ToolPtr tool(bool requires_approval = true) {
    auto builder = agentkit::tool("refund")
                       .doc("Issue a refund against a customer order and return the confirmation id.")
                       .side_effecting(true);
    if (requires_approval) builder = std::move(builder).requires_approval();
    return std::move(builder).params("order_id", "amount_usd").fn([this](const std::string& id, double amount) {
      ++executed;
      char buf[64];
      std::snprintf(buf, sizeof buf, "refunded %.1f on %s", amount, id.c_str());
      return std::string(buf);
    });
  }
};

}  // namespace

TEST_CASE("Lisbon: a ReAct run with one tool call, then the answer", "[agent][spec]") {
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "city_population", {{"city", "Lisbon"}})}},
      Turn{.content = "Lisbon has about 545,000 residents."},
  });
  Agent agent("atlas", "fake", "You answer questions about cities.", react({city_population()}));
  auto ctx = make_test_ctx({.llm = llm});
  auto result = agent.run("How big is Lisbon?", ctx);
  CHECK(result.stop_reason == StopReason::answered);
  CHECK(result.output == "Lisbon has about 545,000 residents.");
  CHECK(result.iterations == 2);
  CHECK(result.usage.input_tokens == 20);

  auto requests = llm->requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].system == "You answer questions about cities.");
  CHECK(requests[0].tools == std::vector<std::string>{"city_population"});
  REQUIRE(requests[1].messages.size() == 3);
  CHECK(requests[1].messages[2].role == agentkit::Role::tool);
  CHECK(requests[1].messages[2].text() == "545000");
  CHECK(requests[1].messages[2].tool_call_id == "c1");
}

TEST_CASE("copies of an Agent share its definition and a moved-from Agent is still the agent", "[agent]") {
  Agent original("atlas", "fake", "You answer questions about cities.", react({city_population()}));
  const Agent copy = original;
  CHECK(&copy.options() == &original.options());
  CHECK(&copy.cognition() == &original.cognition());

  const Agent moved = std::move(original);
  CHECK(original.name() == "atlas");  // NOLINT(bugprone-use-after-move): the contract under test
  CHECK(&moved.options() == &copy.options());

  auto llm = FakeLLM::script({Turn{.content = "Lisbon."}, Turn{.content = "Porto."}});
  auto ctx = make_test_ctx({.llm = llm});
  CHECK(original.run("Which city?", ctx).output == "Lisbon.");
  CHECK(moved.run("Which other city?", ctx).output == "Porto.");
  CHECK(llm->requests().at(1).system == "You answer questions about cities.");
}

TEST_CASE("FakeLLM fails loudly, naming the call number, when the script runs out", "[agent][fake]") {
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "city_population", {{"city", "Porto"}})}}});
  Agent agent("atlas", "fake", "You answer questions about cities.", react({city_population()}));
  auto ctx = make_test_ctx({.llm = llm});
  auto result = agent.run("How big is Porto?", ctx);
  CHECK(result.stop_reason == StopReason::failed);
  CHECK_THAT(result.failure.value().message, Catch::Contains("script exhausted at model call #2 (the script has 1 turns)"));
}

TEST_CASE("refund: suspended under AUTO, the refund never ran", "[agent][approval][spec]") {
  Refunds refunds;
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "refund", {{"order_id", "A-1"}, {"amount_usd", 20.0}})}},
      Turn{.content = "Refund issued."},
  });
  Agent agent("billing", "fake", "You handle refunds.", react({refunds.tool()}));
  auto ctx = make_test_ctx({.llm = llm});
  auto result = agent.run("Refund order A-1 for $20", ctx);
  REQUIRE(result.stop_reason == StopReason::suspended);
  REQUIRE(result.suspended.has_value());
  CHECK(result.suspended->reason == "awaiting_approval");
  REQUIRE(result.suspended->pending.size() == 1);
  CHECK(result.suspended->pending[0].name == "refund");
  CHECK(result.suspended->pending[0].arguments == Json({{"order_id", "A-1"}, {"amount_usd", 20.0}}));
  CHECK(refunds.executed == 0);
  CHECK(llm->calls() == 1);

  // The state round-trips through JSON, as durable storage will.
  auto restored = agentkit::RunState::from_json(Json::parse(result.state.to_json().dump()));
  CHECK(restored.to_json() == result.state.to_json());

  SECTION("approve: the call runs once and the run answers") {
    auto resumed = agent.resume(restored, {{"c1", Decision::approve()}}, ctx);
    CHECK(resumed.stop_reason == StopReason::answered);
    CHECK(resumed.output == "Refund issued.");
    CHECK(resumed.usage.input_tokens == 20);  // both steps, across the suspension
    CHECK(refunds.executed == 1);
    CHECK(llm->requests().back().messages.back().text() == "refunded 20.0 on A-1");
  }
  SECTION("reject: the model gets an honest denial and the call never runs") {
    auto resumed = agent.resume(restored, {{"c1", Decision::reject("amount too high")}}, ctx);
    CHECK(resumed.stop_reason == StopReason::answered);
    CHECK(refunds.executed == 0);
    const auto last = llm->requests().back().messages.back();
    CHECK(last.is_error);
    CHECK(last.text() == "A human reviewer rejected the call to 'refund'; it did not run. Reason: amount too high");
  }
  SECTION("no decision counts as a rejection") {
    auto resumed = agent.resume(restored, {}, ctx);
    CHECK(refunds.executed == 0);
    CHECK(llm->requests().back().messages.back().is_error);
  }
  SECTION("edit: the edited arguments run") {
    auto resumed = agent.resume(restored, {{"c1", Decision::edit({{"order_id", "A-1"}, {"amount_usd", 15.0}})}}, ctx);
    CHECK(refunds.executed == 1);
    CHECK(llm->requests().back().messages.back().text() == "refunded 15.0 on A-1");
  }
  SECTION("resuming a run that is not suspended is refused") {
    auto resumed = agent.resume(restored, {{"c1", Decision::approve()}}, ctx);
    CHECK_THROWS_AS(agent.resume(resumed.state, {}, ctx), agentkit::Error);
  }
}

TEST_CASE("a parallel batch with one gated call: siblings run once and are kept", "[agent][approval]") {
  Refunds refunds;
  std::atomic<int> lookups{0};
  auto lookup = agentkit::tool("lookup_order")
                    .doc("Look up an order's current status and its total amount.")
                    .side_effecting(false)
                    .params("order_id")
                    .fn([&](const std::string& id) {
                      ++lookups;
                      return id + ": delivered, $20";
                    });
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "lookup_order", {{"order_id", "A-1"}}),
                          call("c2", "refund", {{"order_id", "A-1"}, {"amount_usd", 20.0}}),
                          call("c3", "lookup_order", {{"order_id", "B-2"}})}},
      Turn{.content = "Done."},
  });
  Agent agent("billing", "fake", "You handle refunds.", react({lookup, refunds.tool()}));
  auto ctx = make_test_ctx({.llm = llm});
  auto result = agent.run("Check A-1 and B-2, refund A-1", ctx);
  REQUIRE(result.stop_reason == StopReason::suspended);
  CHECK(lookups == 2);
  auto restored = agentkit::RunState::from_json(result.state.to_json());
  auto resumed = agent.resume(restored, {{"c2", Decision::approve()}}, ctx);
  CHECK(resumed.stop_reason == StopReason::answered);
  CHECK(lookups == 2);  // not re-run
  CHECK(refunds.executed == 1);
  const auto messages = llm->requests().back().messages;
  REQUIRE(messages.size() == 5);
  CHECK(messages[2].tool_call_id == "c1");
  CHECK(messages[2].text() == "A-1: delivered, $20");
  CHECK(messages[3].tool_call_id == "c2");
  CHECK(messages[3].text() == "refunded 20.0 on A-1");
  CHECK(messages[4].tool_call_id == "c3");
}

TEST_CASE("autonomy tiers: GATED pauses side effects, MANUAL pauses everything", "[agent][approval]") {
  Refunds refunds;
  auto script = [] {
    return FakeLLM::script({Turn{.tool_calls = {call("c1", "city_population", {{"city", "Lisbon"}}),
                                               call("c2", "refund", {{"order_id", "A-1"}, {"amount_usd", 1.0}})}},
                            Turn{.content = "ok"}});
  };
  Agent agent("a", "fake", "You do things.", react({city_population(), refunds.tool(false)}));
  SECTION("AUTO runs a side-effecting tool that does not require approval") {
    auto ctx = make_test_ctx({.llm = script()});
    CHECK(agent.run("go", ctx).stop_reason == StopReason::answered);
    CHECK(refunds.executed == 1);
  }
  SECTION("GATED") {
    auto ctx = make_test_ctx({.llm = script(), .autonomy = agentkit::Autonomy::gated});
    auto r = agent.run("go", ctx);
    REQUIRE(r.stop_reason == StopReason::suspended);
    REQUIRE(r.suspended->pending.size() == 1);
    CHECK(r.suspended->pending[0].id == "c2");
    CHECK(refunds.executed == 0);
  }
  SECTION("MANUAL") {
    auto ctx = make_test_ctx({.llm = script(), .autonomy = agentkit::Autonomy::manual});
    auto r = agent.run("go", ctx);
    REQUIRE(r.stop_reason == StopReason::suspended);
    CHECK(r.suspended->pending.size() == 2);
    CHECK(refunds.executed == 0);
  }
}

TEST_CASE("malformed calls end in repair turns, not crashes", "[agent][repair]") {
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {ToolCall{"c1", "city_population", {}, "{not json"}, call("c2", "nope", {}),
                          call("c2", "city_population", {{"city", "Lisbon"}}), call("c4", "", {}),
                          call("c5", "city_population", {{"town", 1}})}},
      Turn{.tool_calls = {call("", "city_population", {{"city", "Lisbon"}})}},
      Turn{.content = "545000"},
  });
  Agent agent("atlas", "fake", "You answer questions about cities.", react({city_population()}));
  auto ctx = make_test_ctx({.llm = llm});
  auto result = agent.run("How big is Lisbon?", ctx);
  CHECK(result.stop_reason == StopReason::answered);
  const auto second = llm->requests()[1].messages;
  REQUIRE(second.size() == 7);
  CHECK(second[2].is_error);
  CHECK_THAT(second[2].text(), Catch::Contains("arguments are not valid JSON"));
  CHECK_THAT(second[3].text(), Catch::Contains("unknown tool 'nope'. Advertised tools: ['city_population']"));
  CHECK_THAT(second[4].text(), Catch::Contains("duplicate tool call id 'c2'"));
  CHECK(second[4].tool_call_id != "c2");  // ids stay unique on the wire
  CHECK_THAT(second[5].text(), Catch::Contains("empty name"));
  CHECK_THAT(second[6].text(), Catch::Contains("unexpected argument(s) ['town']"));
  const auto third = llm->requests()[2].messages;
  CHECK_FALSE(third.back().is_error);
  CHECK_FALSE(third.back().tool_call_id.empty());  // a missing id is generated
}

TEST_CASE("too many consecutive bad turns fail the run", "[agent][repair]") {
  std::vector<Turn> turns(5, Turn{.tool_calls = {call("c1", "nope", {})}});
  auto llm = FakeLLM::script(turns);
  Agent agent("a", "fake", "p", react({city_population()}), {.max_repairs = 2});
  auto ctx = make_test_ctx({.llm = llm});
  auto r = agent.run("go", ctx);
  CHECK(r.stop_reason == StopReason::failed);
  CHECK_THAT(r.failure.value().message, Catch::Contains("3 consecutive turns"));
}

TEST_CASE("an answer cut at the output token limit fails the run truncated, its text kept", "[agent][limits]") {
  Agent agent("atlas", "fake", "You answer questions about cities.", react({city_population()}));
  SECTION("text") {
    auto ctx = make_test_ctx({.llm = FakeLLM::script({Turn{.content = "Lisbon has about", .finish_reason = "length"}})});
    const auto r = agent.run("How big is Lisbon?", ctx);
    CHECK(r.stop_reason == StopReason::failed);
    REQUIRE(r.failure);
    CHECK(r.failure->code == agentkit::ErrorCode::truncated);
    CHECK(r.failure->model == "fake");
    CHECK_THAT(r.failure->message, Catch::Contains("max_output_tokens"));
    CHECK(r.output == "Lisbon has about");
    const auto stored = agentkit::load_run(*ctx.store, ctx.scope, r.state.run_id);
    REQUIRE(stored);
    CHECK(stored->stop_reason == StopReason::failed);
  }
  SECTION("a call cut with it is repaired, and the run goes on") {
    auto llm = FakeLLM::script({Turn{.tool_calls = {ToolCall{"c1", "city_population", {}, R"({"city": "Lis)"}},
                                     .finish_reason = "length"},
                                Turn{.tool_calls = {call("c2", "city_population", {{"city", "Lisbon"}})}},
                                Turn{.content = "545000"}});
    auto ctx = make_test_ctx({.llm = llm});
    const auto r = agent.run("How big is Lisbon?", ctx);
    CHECK(r.stop_reason == StopReason::answered);
    CHECK(r.output == "545000");
    CHECK_THAT(llm->requests()[1].messages.back().text(), Catch::Contains("not valid JSON"));
  }
}

TEST_CASE("limits stop the run with the partial result", "[agent][limits]") {
  SECTION("max iterations") {
    std::vector<Turn> turns(5, Turn{.content = "thinking", .tool_calls = {call("c1", "city_population", {{"city", "Lisbon"}})}});
    auto llm = FakeLLM::script(turns);
    Agent agent("a", "fake", "p", react({city_population()}), {.max_iterations = 3});
    auto ctx = make_test_ctx({.llm = llm});
    auto r = agent.run("go", ctx);
    CHECK(r.stop_reason == StopReason::max_iterations);
    CHECK(r.output == "thinking");
    CHECK(r.iterations == 3);
  }
  SECTION("budget exhausted before a batch: no call of the batch runs, each gets a result") {
    std::atomic<int> runs{0};
    auto counted = agentkit::tool("count").doc("Count one more invocation and return the running total.")
                       .side_effecting(true).fn([&] { return ++runs; });
    auto llm = FakeLLM::script({Turn{.tool_calls = {call("a", "count", {})}},
                                Turn{.tool_calls = {call("b", "count", {}), call("c", "count", {})}},
                                Turn{.content = "never"}});
    Agent agent("a", "fake", "p", react({counted}));
    auto ctx = make_test_ctx({.llm = llm, .budget = {.tool_calls = 2}});
    auto r = agent.run("go", ctx);
    CHECK(r.stop_reason == StopReason::budget_exhausted);
    CHECK_THAT(r.failure.value().message, Catch::Contains("tool_calls limit 2"));
    CHECK(runs == 1);
    const auto& history = r.state.history;
    REQUIRE(history.size() == 6);
    CHECK_THAT(history[4].text(), Catch::Contains("Not run"));
    CHECK_THAT(history[5].text(), Catch::Contains("Not run"));
  }
  SECTION("model steps budget") {
    std::vector<Turn> turns(5, Turn{.tool_calls = {call("c1", "city_population", {{"city", "Lisbon"}})}});
    auto llm = FakeLLM::script(turns);
    Agent agent("a", "fake", "p", react({city_population()}));
    auto ctx = make_test_ctx({.llm = llm, .budget = {.model_steps = 2}});
    CHECK(agent.run("go", ctx).stop_reason == StopReason::budget_exhausted);
    CHECK(llm->calls() == 2);
  }
}

TEST_CASE("cancellation mid-run stops the loop promptly", "[agent][cancel]") {
  std::atomic<bool> started{false};
  auto slow = agentkit::tool("slow").doc("Wait until cancelled, polling the run's cancellation token.")
                  .side_effecting(false).fn([&](agentkit::RunContext& ctx) {
                    started = true;
                    while (!ctx.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                    return 0;
                  });
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "slow", {})}}, Turn{.content = "never"}});
  Agent agent("a", "fake", "p", react({slow}));
  auto ctx = make_test_ctx({.llm = llm, .executor = std::make_shared<agentkit::ThreadPoolExecutor>(2)});
  auto handle = agent.start("go", ctx);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!started && std::chrono::steady_clock::now() < deadline) {
    handle.poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(started);
  const auto t0 = std::chrono::steady_clock::now();
  handle.cancel();
  while (!handle.poll()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(std::chrono::steady_clock::now() - t0 < agentkit_test::latency_bound(std::chrono::milliseconds(200)));
  CHECK(handle.result().stop_reason == StopReason::cancelled);
  CHECK(llm->calls() == 1);
}

TEST_CASE("a host advances a run with poll() and drains typed events", "[agent][handle]") {
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "city_population", {{"city", "Lisbon"}})}},
                              Turn{.content = "545,000"}});
  Agent agent("atlas", "fake", "p", react({city_population()}));
  auto ctx = make_test_ctx({.llm = llm, .executor = std::make_shared<agentkit::ThreadPoolExecutor>(1)});
  auto handle = agent.start("How big is Lisbon?", ctx);
  std::vector<agentkit::Event> events;
  int polls = 0;
  while (!handle.poll()) {
    ++polls;
    for (auto& e : handle.drain_events()) events.push_back(std::move(e));
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  for (auto& e : handle.drain_events()) events.push_back(std::move(e));
  CHECK(polls > 0);
  CHECK(handle.result().output == "545,000");
  bool saw_tool = false, saw_finish = false;
  for (const auto& e : events) {
    if (auto* f = std::get_if<agentkit::ToolCallFinished>(&e)) saw_tool = f->text == "545000";
    if (auto* f = std::get_if<agentkit::RunFinished>(&e)) saw_finish = f->stop_reason == StopReason::answered;
  }
  CHECK(saw_tool);
  CHECK(saw_finish);
}

TEST_CASE("wait() on a kept handle leaves the result in place, on a temporary it hands it over", "[agent][handle]") {
  const auto script = [] {
    return FakeLLM::script({Turn{.tool_calls = {call("c1", "city_population", {{"city", "Lisbon"}})}},
                            Turn{.content = "545,000"}});
  };
  Agent agent("atlas", "fake", "p", react({city_population()}));
  for (const bool signing : {false, true}) {
    CAPTURE(signing);
    auto kept_ctx = make_test_ctx({.llm = script()});
    auto temp_ctx = make_test_ctx({.llm = script()});
    if (signing) kept_ctx.state_key = temp_ctx.state_key = std::string(32, 'k');
    auto handle = agent.start("How big is Lisbon?", kept_ctx);
    const auto waited = handle.wait();
    CHECK(waited.output == "545,000");
    CHECK(waited.state.history.size() == 4);  // task, call, result, answer
    // The handle still has it all: wait() on a kept handle copies.
    CHECK(handle.result().output == "545,000");
    CHECK(handle.result().state.history.size() == 4);
    CHECK(handle.result().state.signature == waited.state.signature);

    const auto taken = agent.start("How big is Lisbon?", temp_ctx).wait();
    CHECK(taken.output == "545,000");
    CHECK(taken.state.history.size() == 4);
    CHECK(taken.state.signature.empty() == !signing);
    if (signing) CHECK(taken.state.signature.rfind("hmac-sha256:", 0) == 0);
  }
}

TEST_CASE("octopus: an agent as a tool", "[agent][as_tool][spec]") {
  auto researcher = std::make_shared<Agent>("researcher", "fake", "You summarise a topic in one sentence.");
  auto research_tool = agentkit::as_tool(
      researcher, {.name = "researcher",
                   .description = "Delegate a research sub-task and get a one-sentence summary back.",
                   .side_effecting = false});
  CHECK(research_tool->spec().parameters->dump() ==
        R"({"type":"object","properties":{"task":{"type":"string","description":"the sub-task / goal to run"}},"required":["task"]})");
  Agent lead("lead", "fake", "You answer by delegating research.", react({research_tool}));
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "researcher", {{"task", "octopus tool use"}})}},
      Turn{.content = "Octopuses carry coconut shells as portable shelters."},
      Turn{.content = "They do: they carry coconut shells around as shelter."},
  });
  auto ctx = make_test_ctx({.llm = llm});
  auto result = lead.run("Do octopuses use tools?", ctx);
  CHECK(result.output == "They do: they carry coconut shells around as shelter.");
  auto requests = llm->requests();
  REQUIRE(requests.size() == 3);
  CHECK(requests[1].system == "You summarise a topic in one sentence.");
  CHECK(requests[1].messages[0].text() == "octopus tool use");
  CHECK(requests[2].messages.back().text() == "Octopuses carry coconut shells as portable shelters.");
  CHECK(ctx.budget->model_steps() == 3);  // the child shares the budget
  CHECK(result.usage.input_tokens == 30);  // usage totals the researcher's step too
  CHECK(result.usage.output_tokens == 15);
}

TEST_CASE("nested as_tool hits the depth limit as a model-visible error", "[agent][as_tool]") {
  auto inner = std::make_shared<Agent>("inner", "fake", "p");
  auto inner_tool = agentkit::as_tool(
      inner, {.name = "inner", .description = "Delegate to the innermost agent of the chain.", .side_effecting = false});
  auto middle = std::make_shared<Agent>("middle", "fake", "p", react({inner_tool}));
  auto middle_tool = agentkit::as_tool(
      middle, {.name = "middle", .description = "Delegate to the middle agent of the chain.", .side_effecting = false});
  Agent outer("outer", "fake", "p", react({middle_tool}));
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("o1", "middle", {{"task", "go deeper"}})}},
      Turn{.tool_calls = {call("m1", "inner", {{"task", "deepest"}})}},
      Turn{.content = "middle gave up"},
      Turn{.content = "done"},
  });
  auto ctx = make_test_ctx({.llm = llm, .max_depth = 1});
  auto result = outer.run("go", ctx);
  CHECK(result.output == "done");
  const auto middle_view = llm->requests()[2].messages;
  CHECK(middle_view.back().is_error);
  CHECK_THAT(middle_view.back().text(), Catch::Contains("depth limit 1 reached"));
}

namespace {
struct Verdict {
  std::string label;
  double confidence = 0;
};
}  // namespace
template <>
struct agentkit::Describe<Verdict> {
  static constexpr std::string_view name = "Verdict";
  static constexpr auto fields = std::tuple{agentkit::field("label", &Verdict::label),
                                            agentkit::field("confidence", &Verdict::confidence)};
};

TEST_CASE("a declared output type: validated and converted, a mismatch is a repair turn", "[agent][output]") {
  auto llm = FakeLLM::script({Turn{.content = "it is spam"},
                              Turn{.content = "```json\n{\"label\": \"spam\", \"confidence\": 0.9}\n```"}});
  Agent agent("classifier", "fake", "Classify.", nullptr, {.output = agentkit::output_type<Verdict>()});
  auto ctx = make_test_ctx({.llm = llm});
  auto r = agent.run("Is this spam?", ctx);
  CHECK(r.stop_reason == StopReason::answered);
  CHECK(r.structured == Json({{"label", "spam"}, {"confidence", 0.9}}));
  CHECK_THAT(llm->requests()[1].messages.back().text(), Catch::Contains("did not match the required output type Verdict"));
  CHECK(agentkit::render_result(r) == "confidence: 0.9\nlabel: spam");
}

TEST_CASE("RunState refuses a newer version and malformed documents", "[agent][state]") {
  agentkit::RunState s;
  Json j = s.to_json();
  j["version"] = 99;
  CHECK_THROWS_WITH(agentkit::RunState::from_json(j), Catch::Contains("newer agentkit"));
  CHECK_THROWS_AS(agentkit::RunState::from_json(Json{{"version", 1}}), agentkit::Error);
  CHECK_THROWS_AS(agentkit::RunState::from_json(Json("x")), agentkit::Error);
}

TEST_CASE("RunState refuses a batch whose pending calls or ids do not add up", "[agent][state]") {
  // A suspended turn: c1 awaits a decision, c2 already ran.
  agentkit::RunState s;
  s.phase = agentkit::Phase::suspended;
  s.stop_reason = agentkit::StopReason::suspended;
  s.batch = {agentkit_test::call("c1", "refund", {{"amount", 20}}), agentkit_test::call("c2", "lookup", {})};
  s.outcomes = {std::nullopt, agentkit::CallOutcome{"found", false, agentkit::CallStatus::ok}};
  s.pending = {"c1"};
  CHECK(agentkit::RunState::from_json(s.to_json()).pending == std::vector<std::string>{"c1"});
  const auto refused = [&](const std::function<void(Json&)>& edit, const char* why) {
    Json j = s.to_json();
    edit(j);
    CHECK_THROWS_WITH(agentkit::RunState::from_json(j), Catch::Contains(why));
  };
  // A decision for c2 would overwrite what it did; one for c9 would land nowhere.
  refused([](Json& j) { j["pending"] = {"c2"}; }, "pending call 'c2'");
  refused([](Json& j) { j["pending"] = {"c1", "c9"}; }, "pending call 'c9'");
  // Two calls under one id would share one approval and one ledger record.
  refused([](Json& j) { j["batch"][1]["id"] = "c1"; }, "call id 'c1' twice");
}

TEST_CASE("sanitize_utf8 replaces each ill-formed sequence as canonical_dump does", "[agent][utf8]") {
  const std::string fffd = "\xEF\xBF\xBD";
  CHECK(agentkit::sanitize_utf8(std::string("h\xC3\xA9llo \xF0\x9F\x98\x80")) == "h\xC3\xA9llo \xF0\x9F\x98\x80");
  CHECK(agentkit::sanitize_utf8(std::string("\x89PNG\r\n\x1a\n\xff\xfe")) == fffd + "PNG\r\n\x1a\n" + fffd + fffd);
  CHECK(agentkit::sanitize_utf8(std::string("abc\xE2\x82")) == "abc" + fffd);  // cut inside a character
  CHECK(agentkit::sanitize_utf8(std::string("\xE2\x82(")) == fffd + "(");
  for (const char* bad : {"\xff", "\xc0\xaf", "\xed\xa0\x80", "abc\xe2\x82", "\xf4\x90\x80\x80", "\xe0\x80\xaf", "\xf0\x9f\x98"}) {
    CAPTURE(bad);
    const std::string clean = agentkit::sanitize_utf8(std::string(bad));
    CHECK(agentkit::is_valid_utf8(clean));
    CHECK(Json(clean).dump() == agentkit::canonical_dump(Json(std::string(bad))));
  }
  const Json dirty = {{"k\xff", {"\xfe", 1, {{"deep", "x\xc3"}}}}};
  const Json clean = agentkit::sanitize_utf8(dirty);
  CHECK(clean == Json{{"k" + fffd, {fffd, 1, {{"deep", "x" + fffd}}}}});
  CHECK_NOTHROW(clean.dump());
}

TEST_CASE("is_valid_utf8 judges a sequence the same at every offset in ASCII text", "[agent][utf8]") {
  // ASCII is checked eight bytes at a time: each sequence, valid or not, at
  // every position relative to those eight-byte words, and at the end.
  const std::vector<std::string> valid = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF", "\x7F"};
  const std::vector<std::string> invalid = {"\xff",         "\x80",         "\xc0\xaf",     "\xed\xa0\x80", "\xe2\x82",
                                            "\xf4\x90\x80\x80", "\xe0\x80\xaf", "\xf0\x9f\x98", "\xc3(",       "\xf8\x88\x80\x80\x80"};
  for (std::size_t before = 0; before <= 17; ++before) {
    for (std::size_t after : {std::size_t{0}, std::size_t{1}, std::size_t{9}}) {
      const std::string pre(before, 'a'), post(after, 'z');
      for (const auto& seq : valid) {
        CAPTURE(before, after, seq);
        CHECK(agentkit::is_valid_utf8(pre + seq + post));
      }
      for (const auto& seq : invalid) {
        CAPTURE(before, after, seq);
        CHECK_FALSE(agentkit::is_valid_utf8(pre + seq + post));
      }
    }
  }
  CHECK(agentkit::is_valid_utf8(""));
  CHECK(agentkit::is_valid_utf8(std::string(64, 'x')));
  CHECK_FALSE(agentkit::is_valid_utf8(std::string(64, 'x') + "\x80" + std::string(64, 'x')));
}

TEST_CASE("text that is not UTF-8 is replaced where it enters a run, and the run completes", "[agent][utf8]") {
  const std::string fffd = "\xEF\xBF\xBD";
  const std::string png = "\x89PNG\r\n\x1a\n\xff\xfe";
  std::vector<std::string> paths;
  auto read_image = agentkit::tool("read_image")
                        .doc("Read an image file from disk and return its raw bytes.")
                        .side_effecting(false)
                        .params("path")
                        .fn([&](const std::string& path) {
                          paths.push_back(path);
                          return png;
                        });
  // What an MCP server's error content with a broken byte becomes.
  auto mcp_fetch = agentkit::tool("mcp_fetch")
                       .doc("Fetch a resource through the files MCP server and return its text.")
                       .side_effecting(false)
                       .params("uri")
                       .fn([](const std::string&) -> std::string {
                         throw std::runtime_error("MCP server 'files': caf\xc3 is not readable");
                       });
  auto llm = FakeLLM::script({
      Turn{.content = "Looking at it \xe2\x82",
           .tool_calls = {call("c1", "read_image", {{"path", "scan\xff.png"}}),
                          call("c2", "mcp_fetch", {{"uri", "file:///menu"}}),
                          ToolCall{"c3", "read_image", Json::object(), "{\"path\": \"b\xc0\xaf.png\"}"}}},
      Turn{.content = "Done \xff"},
  });
  Agent agent("viewer", "fake", "You look at images.", react({read_image, mcp_fetch}));
  auto ctx = make_test_ctx({.llm = llm});  // with a store: every step is checkpointed
  auto r = agent.run("Describe scan.png", ctx, {.session = "chat"});
  INFO((r.failure ? r.failure->message : std::string()));
  REQUIRE(r.stop_reason == StopReason::answered);
  CHECK(r.output == "Done " + fffd);
  CHECK(paths == std::vector<std::string>{"scan" + fffd + ".png", "b" + fffd + fffd + ".png"});

  const auto requests = llm->requests();
  REQUIRE(requests.size() == 2);
  const auto& seen = requests[1].messages;
  REQUIRE(seen.size() == 5);
  CHECK(seen[1].text() == "Looking at it " + fffd);
  CHECK(seen[1].tool_calls.at(0).arguments == Json({{"path", "scan" + fffd + ".png"}}));
  CHECK(seen[2].text() == fffd + "PNG\r\n\x1a\n" + fffd + fffd);
  CHECK(seen[3].text() == "Tool failed: MCP server 'files': caf" + fffd + " is not readable");
  CHECK(seen[4].text() == seen[2].text());

  std::string dumped;
  CHECK_NOTHROW(dumped = r.state.to_json().dump());
  CHECK(agentkit::RunState::from_json(Json::parse(dumped)).history == r.state.history);
  const auto stored = agentkit::load_run(*ctx.store, ctx.scope, r.state.run_id);
  REQUIRE(stored);
  CHECK(stored->history == r.state.history);
  const auto session = agentkit::session_history(*ctx.store, ctx.scope, "chat");
  REQUIRE(!session.empty());
  CHECK(session.back().text() == "Done " + fffd);
}

TEST_CASE("calls of one turn run concurrently on the executor, results in call order", "[agent][executor]") {
  // Each call waits until both are running: this only finishes if they overlap.
  std::atomic<int> running{0};
  auto meet = agentkit::tool("meet")
                  .doc("Wait until the other call of the same turn is running too.")
                  .side_effecting(false)
                  .params("name")
                  .fn([&](const std::string& name) {
                    ++running;
                    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
                    while (running < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
                    if (name == "first") std::this_thread::sleep_for(std::chrono::milliseconds(20));
                    return name + (running >= 2 ? " overlapped" : " alone");
                  });
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "meet", {{"name", "first"}}), call("c2", "meet", {{"name", "second"}})}},
                              Turn{.content = "ok"}});
  Agent agent("a", "fake", "p", react({meet}));
  auto ctx = make_test_ctx({.llm = llm, .executor = std::make_shared<agentkit::ThreadPoolExecutor>(2)});
  auto r = agent.run("go", ctx);
  REQUIRE(r.stop_reason == StopReason::answered);
  const auto messages = llm->requests()[1].messages;
  CHECK(messages[2].text() == "first overlapped");
  CHECK(messages[3].text() == "second overlapped");
}

TEST_CASE("a wall-time budget stops a run", "[agent][limits]") {
  auto slow = agentkit::tool("slow").doc("Take a little while, then return nothing useful.")
                  .side_effecting(false).fn([] { std::this_thread::sleep_for(std::chrono::milliseconds(30)); return 0; });
  std::vector<Turn> turns(10, Turn{.tool_calls = {call("c1", "slow", {})}});
  auto llm = FakeLLM::script(turns);
  Agent agent("a", "fake", "p", react({slow}));
  auto ctx = make_test_ctx({.llm = llm, .budget = {.wall_time = std::chrono::milliseconds(50)}});
  auto r = agent.run("go", ctx);
  CHECK(r.stop_reason == StopReason::budget_exhausted);
  CHECK_THAT(r.failure.value().message, Catch::Contains("wall_time"));
  CHECK(llm->calls() < 5);
}

TEST_CASE("an agent with prices charges each model call's cost, a cost budget stops the run", "[agent][limits]") {
  auto look = agentkit::tool("look").doc("Look around once and report nothing in particular.")
                  .side_effecting(false).fn([] { return 0; });
  // Each turn: 1000 input and 200 output tokens, $0.0031 at $1.5 / $8 per million.
  std::vector<Turn> turns(10, Turn{.tool_calls = {call("c1", "look", {})}, .usage = {1000, 200, 0}});
  auto llm = FakeLLM::script(turns);
  const agentkit::Pricing prices{.input_usd_per_mtok = 1.5, .output_usd_per_mtok = 8};
  CHECK(prices.cost({1000, 200, 0}) == Approx(0.0031));
  Agent agent("a", "fake", "p", react({look}), {.pricing = prices});
  auto ctx = make_test_ctx({.llm = llm, .budget = {.cost_usd = 0.01}});
  auto r = agent.run("go", ctx);
  CHECK(r.stop_reason == StopReason::budget_exhausted);
  CHECK(r.failure.value().message == "cost limit reached");
  CHECK(r.failure->code == agentkit::ErrorCode::budget_exhausted);
  CHECK(llm->calls() == 4);  // $0.0124 after the fourth call
  CHECK(ctx.budget->cost_usd() == Approx(0.0124));
  CHECK(r.state.cost_usd == Approx(0.0124));
  CHECK(agentkit::RunState::from_json(r.state.to_json()).cost_usd == Approx(0.0124));

  Agent unpriced("b", "fake", "p", react({look}));
  auto free_ctx = make_test_ctx({.llm = FakeLLM::script({Turn{.content = "done"}}), .budget = {.cost_usd = 0.01}});
  CHECK(unpriced.run("go", free_ctx).state.cost_usd == 0);
  CHECK(free_ctx.budget->cost_usd() == 0);
}

TEST_CASE("as_tool takes a custom renderer", "[agent][as_tool]") {
  auto helper = std::make_shared<Agent>("helper", "fake", "p");
  auto t = agentkit::as_tool(helper, {.name = "helper",
                                      .description = "Delegate a sub-task to the helper agent.",
                                      .side_effecting = false,
                                      .render = [](const agentkit::RunResult& r) {
                                        return "[" + std::string(to_string(r.stop_reason)) + "] " + r.output;
                                      }});
  auto llm = FakeLLM::script({Turn{.content = "sub answer"}});
  auto ctx = make_test_ctx({.llm = llm});
  CHECK(t->run({{"task", "x"}}, ctx) == "[answered] sub answer");
}
