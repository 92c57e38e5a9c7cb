// The engine/strategy seam: PlanExecuteCognition (a second strategy of the
// library, in its own file) and a strategy written outside the library, both
// driven by the one run engine: model calls, tool batches, approvals,
// durable resume and recovery.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/engine.h>
#include <agentkit/cognition/plan_execute.h>
#include <agentkit/function_tool.h>
#include <agentkit/state/store.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::Decision;
using agentkit::Json;
using agentkit::Message;
using agentkit::Role;
using agentkit::RunState;
using agentkit::StopReason;
using agentkit::ToolCall;
using agentkit::cognition::Next;
using agentkit::cognition::PlanExecuteCognition;
using agentkit::cognition::PlanExecuteOptions;
using agentkit::cognition::StepContext;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using agentkit_test::call;

namespace {

agentkit::ToolPtr counting_tool(std::string name, std::shared_ptr<std::atomic<int>> runs, bool approval = false) {
  auto b = agentkit::tool(std::move(name)).doc("Move one box to a shelf and say where it went.").side_effecting(true);
  if (approval) b = std::move(b).requires_approval();
  return std::move(b).params("box").fn([runs](const std::string& box) {
    ++*runs;
    return "moved " + box;
  });
}

bool has_message(const std::vector<Message>& messages, Role role, const std::string& text) {
  return std::any_of(messages.begin(), messages.end(),
                     [&](const Message& m) { return m.role == role && m.text() == text; });
}

const std::string kPlan = "1. move box A\n2. report";

}  // namespace

TEST_CASE("plan-then-execute: one planning call without tools, then ReAct over the plan", "[strategy][plan]") {
  auto runs = std::make_shared<std::atomic<int>>(0);
  auto llm = FakeLLM::script({
      Turn{.content = kPlan},
      Turn{.tool_calls = {call("c1", "move", {{"box", "A"}})}},
      Turn{.content = "Box A is on shelf 2."},
  });
  Agent agent("mover", "fake", "You move boxes.",
              std::make_shared<PlanExecuteCognition>(std::vector<agentkit::ToolPtr>{counting_tool("move", runs)}));
  auto ctx = make_test_ctx({.llm = llm});
  auto result = agent.run("Move box A", ctx);

  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(result.output == "Box A is on shelf 2.");
  CHECK(result.iterations == 3);
  CHECK(*runs == 1);
  const auto requests = llm->requests();
  REQUIRE(requests.size() == 3);
  const PlanExecuteOptions defaults;
  // Request 1 asks for a plan: no tools, the planning instruction in the prompt.
  CHECK(requests[0].tools.empty());
  CHECK(requests[0].system == "You move boxes.\n\n" + defaults.planning_instruction);
  CHECK(requests[0].messages.size() == 1);
  // Later requests carry the agent's own prompt, the tools and the plan.
  for (std::size_t i = 1; i < requests.size(); ++i) {
    CHECK(requests[i].system == "You move boxes.");
    CHECK(requests[i].tools == std::vector<std::string>{"move"});
    CHECK(has_message(requests[i].messages, Role::assistant, kPlan));
    CHECK(has_message(requests[i].messages, Role::user, defaults.execute_instruction));
  }
  CHECK(requests[2].messages.back().role == Role::tool);
  CHECK(requests[2].messages.back().text() == "moved A");
}

TEST_CASE("plan-then-execute keeps ReAct's repairs: a bad call goes back to the model", "[strategy][plan]") {
  auto runs = std::make_shared<std::atomic<int>>(0);
  auto llm = FakeLLM::script({
      Turn{.content = kPlan},
      Turn{.tool_calls = {call("c1", "teleport", {{"box", "A"}})}},
      Turn{.content = "I could not teleport."},
  });
  Agent agent("mover", "fake", "You move boxes.",
              std::make_shared<PlanExecuteCognition>(std::vector<agentkit::ToolPtr>{counting_tool("move", runs)}));
  auto ctx = make_test_ctx({.llm = llm});
  auto result = agent.run("Move box A", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(*runs == 0);
  const auto last = llm->requests().at(2).messages.back();
  CHECK(last.role == Role::tool);
  CHECK(last.is_error);
  CHECK(last.text().find("unknown tool 'teleport'") != std::string::npos);
}

TEST_CASE("plan-then-execute suspends for approval and resumes from the store without planning again",
          "[strategy][plan][durable]") {
  auto store = std::make_shared<agentkit::state::InMemoryStore>();
  auto runs = std::make_shared<std::atomic<int>>(0);
  const auto make_agent = [&] {
    return Agent("mover", "fake", "You move boxes.",
                 std::make_shared<PlanExecuteCognition>(
                     std::vector<agentkit::ToolPtr>{counting_tool("move", runs, /*approval=*/true)}));
  };
  std::string run_id;
  {
    auto llm = FakeLLM::script({Turn{.content = kPlan}, Turn{.tool_calls = {call("c1", "move", {{"box", "A"}})}}});
    auto ctx = make_test_ctx({.llm = llm, .store = store});
    auto result = make_agent().run("Move box A", ctx);
    REQUIRE(result.stop_reason == StopReason::suspended);
    REQUIRE(result.suspended);
    CHECK(result.suspended->pending.at(0).id == "c1");
    run_id = result.state.run_id;
  }
  CHECK(*runs == 0);
  // A fresh agent and strategy, knowing only the store and the run id.
  auto llm = FakeLLM::script({Turn{.content = "Box A is on shelf 2."}});
  auto ctx = make_test_ctx({.llm = llm, .store = store});
  auto resumed = make_agent().resume(run_id, {{"c1", Decision::approve()}}, ctx);
  REQUIRE(resumed.stop_reason == StopReason::answered);
  CHECK(*runs == 1);  // the engine approved exactly the decided call
  const auto requests = llm->requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].tools == std::vector<std::string>{"move"});
  CHECK(has_message(requests[0].messages, Role::assistant, kPlan));
  CHECK(requests[0].messages.back().text() == "moved A");
}

TEST_CASE("plan-then-execute recovered after its plan was checkpointed does not plan again",
          "[strategy][plan][durable]") {
  auto store = std::make_shared<agentkit::state::InMemoryStore>();
  auto runs = std::make_shared<std::atomic<int>>(0);
  const auto make_agent = [&] {
    return Agent("mover", "fake", "You move boxes.",
                 std::make_shared<PlanExecuteCognition>(std::vector<agentkit::ToolPtr>{counting_tool("move", runs)}));
  };
  {
    auto llm = FakeLLM::script({Turn{.content = kPlan}, Turn{.content = "never asked"}});
    auto ctx = make_test_ctx({.llm = llm, .store = store});
    const Agent agent = make_agent();
    auto handle = agent.start("Move box A", ctx, {.run_id = "p1"});
    // Inline: the first poll makes the planning call, the second takes its
    // reply and checkpoints. The process then "dies": the handle is dropped.
    handle.poll();
    handle.poll();
    REQUIRE(llm->calls() == 1);
  }
  auto stored = agentkit::load_run(*store, {}, "p1");
  REQUIRE(stored);
  CHECK(stored->phase == agentkit::Phase::ask_model);
  CHECK(stored->iterations == 1);
  REQUIRE(agentkit::interrupted_runs(*store, {}) == std::vector<std::string>{"p1"});

  auto llm = FakeLLM::script({Turn{.content = "Nothing needed moving."}});
  auto ctx = make_test_ctx({.llm = llm, .store = store});
  auto recovered = make_agent().recover("p1", ctx);
  REQUIRE(recovered.stop_reason == StopReason::answered);
  CHECK(recovered.iterations == 2);
  const auto requests = llm->requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].tools == std::vector<std::string>{"move"});
  CHECK(has_message(requests[0].messages, Role::assistant, kPlan));
}

namespace {

// A strategy written outside the library: one model call with tools, run
// the calls it asks for, and answer with their results, without asking the
// model again. Nothing in the engine knows it.
class SinglePass final : public agentkit::cognition::Strategy {
 public:
  explicit SinglePass(const std::vector<agentkit::ToolPtr>& tools)
      : tools_(agentkit::ToolRegistry::from_tools(tools)) {}
  const agentkit::ToolRegistry& tools() const override { return tools_; }
  Next next_call(const StepContext&, RunState&) const override { return Next::ask(); }
  Next on_reply(const StepContext&, RunState&, Message reply) const override {
    if (reply.tool_calls.empty()) return Next::answer(std::move(reply));
    return Next::run_calls(std::move(reply));
  }
  Next after_calls(const StepContext&, RunState& state) const override {
    std::string text;
    for (const auto& outcome : state.outcomes) text += (text.empty() ? "" : "; ") + outcome->text;
    if (std::any_of(state.outcomes.begin(), state.outcomes.end(), [](const auto& o) { return o->is_error; })) {
      return Next::stop(StopReason::failed, "a call failed: " + text);
    }
    return Next::answer(Message::assistant(text));
  }

 private:
  agentkit::ToolRegistry tools_;
};

}  // namespace

TEST_CASE("a strategy outside the library drives the same engine: calls, events, answer", "[strategy]") {
  auto runs = std::make_shared<std::atomic<int>>(0);
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "move", {{"box", "A"}}), call("c2", "move", {{"box", "B"}})}}});
  Agent agent("mover", "fake", "You move boxes.",
              std::make_shared<SinglePass>(std::vector<agentkit::ToolPtr>{counting_tool("move", runs)}));
  auto ctx = make_test_ctx({.llm = llm});
  auto handle = agent.start("Move A and B", ctx);
  while (!handle.poll()) {
  }
  const auto& result = handle.result();
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(result.output == "moved A; moved B");
  CHECK(*runs == 2);
  CHECK(llm->calls() == 1);
  // The history stays valid on the wire: the results follow their calls.
  const auto& history = result.state.history;
  REQUIRE(history.size() == 5);
  CHECK(history[2].tool_call_id == "c1");
  CHECK(history[3].tool_call_id == "c2");
  CHECK(history[4].text() == "moved A; moved B");
  int started = 0, finished = 0;
  for (const auto& event : handle.drain_events()) {
    started += std::holds_alternative<agentkit::ToolCallStarted>(event);
    finished += std::holds_alternative<agentkit::RunFinished>(event);
  }
  CHECK(started == 2);
  CHECK(finished == 1);
}

TEST_CASE("a strategy's stop ends the run with its reason, and a refused call never runs", "[strategy]") {
  auto runs = std::make_shared<std::atomic<int>>(0);
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "move", {{"box", 7}})}}});
  Agent agent("mover", "fake", "You move boxes.",
              std::make_shared<SinglePass>(std::vector<agentkit::ToolPtr>{counting_tool("move", runs)}));
  auto ctx = make_test_ctx({.llm = llm});
  auto result = agent.run("Move box 7", ctx);
  CHECK(result.stop_reason == StopReason::failed);
  CHECK(result.failure.value().message.rfind("a call failed: ", 0) == 0);
  CHECK(*runs == 0);
}
