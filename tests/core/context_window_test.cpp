// A run-level context policy (AgentOptions::context_policy): a long run's
// history outgrows the model's window, so older turns leave what the model
// sees (trimmed, or folded into a summary by a model call), never splitting
// a tool call from its results, never dropping the task or pinned messages.
// Each compaction is an event and is in the checkpoint; the history itself
// stays whole. Tampered windows are refused.
#include <catch2/catch.hpp>

#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/errors.h>
#include <agentkit/function_tool.h>
#include <agentkit/state/checkpoint.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/events_of.h"
#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::AgentOptions;
using agentkit::ContextCompacted;
using agentkit::ContextPolicy;
using agentkit::Json;
using agentkit::Message;
using agentkit::Role;
using agentkit::StopReason;
using agentkit::ToolPtr;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using agentkit_test::call;

namespace {

// A sensor log: each reading is ~60 tokens of text; reading 7 holds the
// vault code, which the agent must never lose.
ToolPtr read_sensor() {
  return agentkit::tool("read_sensor")
      .doc("Read the next line of the robot's sensor log by its index.")
      .side_effecting(false)
      .params("n")
      .fn([](int n) {
        std::string line = "reading " + std::to_string(n) + ": " + std::string(200, 'x');
        if (n == 7) line += " PIN vault code 4711";
        return line;
      });
}

// `turns` model turns that each read one sensor line, then the answer.
std::vector<Turn> sensor_script(int turns) {
  std::vector<Turn> script;
  for (int i = 0; i < turns; ++i) {
    script.push_back(Turn{.tool_calls = {call("c" + std::to_string(i), "read_sensor", {{"n", i}})}});
  }
  script.push_back(Turn{.content = "All readings are in range; the vault code is 4711."});
  return script;
}

AgentOptions with_policy(ContextPolicy policy, int max_iterations) {
  AgentOptions options;
  options.max_iterations = max_iterations;
  options.context_policy = std::move(policy);
  return options;
}

bool pinned(const Message& m) { return m.text().find("PIN") != std::string::npos; }

std::size_t view_tokens(const std::vector<Message>& messages) {
  std::size_t total = 0;
  for (const Message& m : messages) total += agentkit::estimate_tokens(m);
  return total;
}

// Every tool result follows the assistant message that called it, with all
// of that message's results (the view never splits a call from its result).
void check_calls_have_results(const std::vector<Message>& messages) {
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].role == Role::tool) {
      REQUIRE(i > 0);
      std::size_t a = i;
      while (a > 0 && messages[a].role == Role::tool) --a;
      REQUIRE(messages[a].role == Role::assistant);
      bool called = false;
      for (const auto& c : messages[a].tool_calls) called = called || c.id == messages[i].tool_call_id;
      REQUIRE(called);
    }
    if (messages[i].role == Role::assistant) {
      for (std::size_t k = 0; k < messages[i].tool_calls.size(); ++k) {
        REQUIRE(i + 1 + k < messages.size());
        REQUIRE(messages[i + 1 + k].role == Role::tool);
        REQUIRE(messages[i + 1 + k].tool_call_id == messages[i].tool_calls[k].id);
      }
    }
  }
}

std::vector<ContextCompacted> compactions(const std::vector<agentkit::Event>& events) {
  return agentkit_test::events_of<ContextCompacted>(events);
}

}  // namespace

TEST_CASE("a 500-iteration run stays within its context budget, keeping the task, pinned messages and call pairs",
          "[agent][context_policy]") {
  constexpr int kTurns = 500;
  auto llm = FakeLLM::script(sensor_script(kTurns));
  Agent agent("rover", "fake", "You check the sensor log line by line.", react({read_sensor()}),
              with_policy({.max_tokens = 1500, .target_tokens = 900, .pinned = pinned}, kTurns + 1));
  auto ctx = make_test_ctx({.llm = llm});
  auto handle = agent.start("Check every sensor reading and report the vault code.", ctx);
  std::vector<agentkit::Event> events;
  while (!handle.poll()) {
  }
  for (auto& e : handle.drain_events()) events.push_back(std::move(e));
  const auto result = handle.result();
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(result.iterations == kTurns + 1);

  // The history is whole; only the model's view was compacted.
  CHECK(result.state.history.size() == 1 + 2 * kTurns + 1);
  const auto compacted = compactions(events);
  REQUIRE(compacted.size() > 10);
  CHECK(result.state.window.compactions == static_cast<int>(compacted.size()));
  CHECK(result.state.window.summary.empty());  // trimmed, not summarised
  std::size_t from = 1;
  for (const auto& c : compacted) {
    CHECK_FALSE(c.summarized);
    CHECK(c.previous_from == from);
    CHECK(c.from > c.previous_from);
    CHECK(c.tokens_before > 1500);
    CHECK(c.tokens_after <= 900);
    CHECK(result.state.history.at(c.from).role == Role::assistant);
    from = c.from;
  }
  CHECK(result.state.window.from == from);

  const auto requests = llm->requests();
  REQUIRE(requests.size() == kTurns + 1);
  for (std::size_t r = 0; r < requests.size(); ++r) {
    INFO("model call " << r + 1);
    const auto& messages = requests[r].messages;
    REQUIRE_FALSE(messages.empty());
    CHECK(messages.front().text() == "Check every sensor reading and report the vault code.");
    // Never more than the budget plus one turn (a turn lands between checks).
    CHECK(view_tokens(messages) <= 1500);
    check_calls_have_results(messages);
    // The pinned reading stays in view from the turn it arrived.
    if (r > 8) {
      bool vault = false;
      for (const auto& m : messages) vault = vault || m.text().find("vault code 4711") != std::string::npos;
      CHECK(vault);
    }
  }
  // The last request sees the last reading but not the second.
  const auto& last = requests.back().messages;
  CHECK(last.back().text().find("reading 499:") == 0);
  for (const auto& m : last) CHECK(m.text().find("reading 1:") == std::string::npos);
}

TEST_CASE("a summarising policy folds what leaves into a summary by a model call, charged to the run",
          "[agent][context_policy]") {
  constexpr int kTurns = 40;
  auto llm = FakeLLM::script(sensor_script(kTurns));
  std::vector<Turn> summaries;
  for (int i = 1; i <= 40; ++i) summaries.push_back(Turn{.content = "S" + std::to_string(i), .usage = {100, 20, 0}});
  auto summarizer = FakeLLM::script(summaries);
  Agent agent("rover", "fake", "You check the sensor log line by line.", react({read_sensor()}),
              with_policy({.max_tokens = 1000, .summarize = true, .summary_model = "summarizer"}, kTurns + 1));
  auto ctx = make_test_ctx({.llm = llm});
  ctx.models = [llm, summarizer](std::string_view name) -> std::shared_ptr<agentkit::Model> {
    if (name == "summarizer") return summarizer;
    return llm;
  };
  auto handle = agent.start("Check every sensor reading.", ctx);
  while (!handle.poll()) {
  }
  const auto events = handle.drain_events();
  const auto result = handle.result();
  REQUIRE(result.stop_reason == StopReason::answered);
  const auto compacted = compactions(events);
  REQUIRE(compacted.size() >= 2);
  REQUIRE(summarizer->calls() == compacted.size());
  for (const auto& c : compacted) {
    CHECK(c.summarized);
    CHECK(c.usage.input_tokens == 100);
  }
  // Every summary call was charged: the run's usage is both models'.
  CHECK(result.usage.input_tokens == 10 * (kTurns + 1) + 100 * static_cast<std::int64_t>(compacted.size()));
  CHECK(result.iterations == kTurns + 1);  // summary calls are not the agent's turns
  CHECK(result.state.window.summary == "S" + std::to_string(compacted.size()));

  const auto asked = summarizer->requests();
  CHECK(asked[0].system == ContextPolicy{}.summary_prompt);
  CHECK(asked[0].tools.empty());
  REQUIRE(asked[0].messages.size() == 1);
  const std::string first = asked[0].messages[0].text();
  CHECK(first.find("assistant called read_sensor {\"n\":0}") != std::string::npos);
  CHECK(first.find("tool read_sensor: reading 0: ") != std::string::npos);
  CHECK(first.find("Summary so far") == std::string::npos);
  // The next summary extends the last one.
  CHECK(asked[1].messages[0].text().find("Summary so far: S1\n") == 0);

  // The model sees the task carrying the latest summary, then the window.
  const auto requests = llm->requests();
  const auto& last = requests.back().messages;
  CHECK(last.front().role == Role::user);
  CHECK(last.front().text() == "Check every sensor reading.\n\nSummary of the earlier conversation: S" +
                                   std::to_string(compacted.size()));
  CHECK(last.at(1).role == Role::assistant);
  check_calls_have_results(last);
  // The history itself keeps the task as it was given.
  CHECK(result.state.history.front().text() == "Check every sensor reading.");
}

TEST_CASE("a failed or empty summary fails the run typed, never a silent trim", "[agent][context_policy]") {
  auto llm = FakeLLM::script(sensor_script(10));
  auto ctx = make_test_ctx({.llm = llm});
  const auto run_with_summarizer = [&](std::shared_ptr<FakeLLM> summarizer) {
    ctx.models = [llm, summarizer](std::string_view name) -> std::shared_ptr<agentkit::Model> {
      return name == "summarizer" ? summarizer : llm;
    };
    Agent agent("rover", "fake", "You check the sensor log.", react({read_sensor()}),
                with_policy({.max_tokens = 300, .summarize = true, .summary_model = "summarizer"}, 20));
    return agent.run("Check the readings.", ctx);
  };
  SECTION("the summary call throws") {
    const auto result = run_with_summarizer(FakeLLM::script({Turn{.throws = "summarizer down"}}));
    REQUIRE(result.stop_reason == StopReason::failed);
    CHECK(result.failure->message.find("summarising the context failed: ") == 0);
    CHECK(result.failure->message.find("summarizer down") != std::string::npos);
    CHECK(result.failure->model == "summarizer");
    CHECK_FALSE(result.state.window.compacted());
  }
  SECTION("the summary is empty") {
    const auto result = run_with_summarizer(FakeLLM::script({Turn{.content = ""}}));
    REQUIRE(result.stop_reason == StopReason::failed);
    CHECK(result.failure->code == agentkit::ErrorCode::protocol);
    CHECK(result.failure->message.find("no text") != std::string::npos);
  }
  SECTION("a policy function that throws") {
    Agent agent("rover", "fake", "You check the sensor log.", react({read_sensor()}),
                with_policy({.max_tokens = 300, .pinned = [](const Message&) -> bool {
                               throw std::runtime_error("pin index offline");
                             }},
                            20));
    const auto result = agent.run("Check the readings.", ctx);
    REQUIRE(result.stop_reason == StopReason::failed);
    CHECK(result.failure->message == "the context policy failed: pin index offline");
    CHECK(llm->calls() == 0);
  }
}

TEST_CASE("the window is in the checkpoint: a suspended run resumes with the model's view where it was",
          "[agent][context_policy][durable]") {
  auto refund = agentkit::tool("refund")
                    .doc("Refund the customer; a human approves every refund first.")
                    .side_effecting(true)
                    .requires_approval()
                    .fn([] { return std::string("refunded"); });
  // Turn 6 asks for the refund (and suspends); the script goes on after it.
  auto script = sensor_script(12);
  script.insert(script.begin() + 6, Turn{.tool_calls = {call("r1", "refund")}});
  auto llm = FakeLLM::script(script);
  Agent agent("rover", "fake", "You check the sensor log.", react({read_sensor(), refund}),
              with_policy({.max_tokens = 300}, 30));
  auto ctx = make_test_ctx({.llm = llm});
  const auto first = agent.run("Check the readings.", ctx);
  REQUIRE(first.stop_reason == StopReason::suspended);
  REQUIRE(first.state.window.compacted());
  const auto stored = agentkit::load_run(*ctx.store, ctx.scope, first.state.run_id);
  REQUIRE(stored);
  CHECK(stored->window.from == first.state.window.from);
  CHECK(stored->window.compactions == first.state.window.compactions);

  const std::size_t before = llm->calls();
  const auto resumed = agent.resume(first.state, {{"r1", agentkit::Decision::approve()}}, ctx);
  REQUIRE(resumed.stop_reason == StopReason::answered);
  const auto requests = llm->requests();
  // The first call after the resume sees the compacted view, not the whole history.
  const auto& after = requests.at(before).messages;
  CHECK(after.size() < resumed.state.history.size());
  CHECK(after.at(1).role == Role::assistant);
  CHECK(resumed.state.window.compactions >= first.state.window.compactions);
}

TEST_CASE("a tampered window is refused when the state is read", "[context_policy][state]") {
  agentkit::RunState state;
  state.run_id = "run-1";
  state.agent = "rover";
  state.task = "t";
  state.history = {Message::user("t"), Message::assistant("", {call("c1", "read_sensor", {{"n", 1}})}),
                   Message::tool_result("c1", "read_sensor", "reading 1", false), Message::assistant("done")};
  state.window = {.from = 3, .summary = "S1", .compactions = 1};
  const Json good = state.to_json();
  CHECK(agentkit::RunState::from_json(good).window.from == 3);
  CHECK(agentkit::RunState::from_json(good).window.summary == "S1");
  Json doc = good;
  doc["window"]["from"] = 2;  // a tool result: its call would be cut off
  CHECK_THROWS_WITH(agentkit::RunState::from_json(doc), Catch::Contains("window does not fit the history"));
  doc["window"]["from"] = 9;
  CHECK_THROWS_WITH(agentkit::RunState::from_json(doc), Catch::Contains("window does not fit the history"));
  doc["window"]["from"] = -1;
  CHECK_THROWS_AS(agentkit::RunState::from_json(doc), agentkit::Error);
  doc = good;
  doc["window"]["compactions"] = 0;
  CHECK_THROWS_WITH(agentkit::RunState::from_json(doc), Catch::Contains("window does not fit the history"));
  doc = good;
  doc["window"].erase("summary");
  CHECK_THROWS_AS(agentkit::RunState::from_json(doc), agentkit::Error);
  // A state never compacted has no window in its document.
  state.window = {};
  CHECK_FALSE(state.to_json().contains("window"));
}

TEST_CASE("a context policy is checked when the agent is built", "[agent][context_policy]") {
  const auto build = [](ContextPolicy policy) {
    return Agent("rover", "fake", "p", react({read_sensor()}), with_policy(std::move(policy), 5));
  };
  CHECK_THROWS_WITH(build({}), Catch::Contains("max_tokens must be above 0"));
  CHECK_THROWS_WITH(build({.max_tokens = 100, .target_tokens = 100}), Catch::Contains("must be below max_tokens"));
  CHECK_THROWS_AS(build({.max_tokens = 100, .target_tokens = 200}), std::invalid_argument);
  CHECK(build({.max_tokens = 100}).options().context_policy->target_tokens == 50);
}
