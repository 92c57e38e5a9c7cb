// Dependency injection (seed 003's Inject[T]): a tool parameter of type
// Inject<T> comes from the run's Dependencies, is never advertised nor read
// from the arguments; a missing one fails the run at its start, naming the
// tool and the type, before the model is asked; per-run factories make one
// object per run (a sub-run its own), shared by that run's calls.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/inject.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::Dependencies;
using agentkit::Inject;
using agentkit::Json;
using agentkit::RunContext;
using agentkit::StopReason;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using agentkit_test::call;

namespace inject_test {

struct OrderDb {
  std::string find(const std::string& id) const { return id == "A-1" ? "shipped" : "unknown"; }
};

// One per run: counts the calls of its run.
struct UnitOfWork {
  int calls = 0;
  std::string run;
};

}  // namespace inject_test

using inject_test::OrderDb;
using inject_test::UnitOfWork;

namespace {

agentkit::ToolPtr lookup() {
  return agentkit::tool("lookup_order")
      .doc("Look a customer order up by its id and return its status.")
      .side_effecting(false)
      .params("order_id")
      .fn([](const std::string& id, Inject<OrderDb> db, Inject<UnitOfWork> work) {
        ++work->calls;
        return db->find(id) + " (call " + std::to_string(work->calls) + " of " + work->run + ")";
      });
}

std::shared_ptr<Dependencies> shop_dependencies(std::shared_ptr<std::atomic<int>> made) {
  auto deps = std::make_shared<Dependencies>();
  deps->provide<OrderDb>(std::make_shared<OrderDb>());
  deps->provide_per_run<UnitOfWork>([made](const RunContext& ctx) {
    ++*made;
    auto work = std::make_shared<UnitOfWork>();
    work->run = ctx.agent_path;
    return work;
  });
  return deps;
}

}  // namespace

TEST_CASE("Inject<T> parameters are resolved from the run's dependencies and never advertised",
          "[inject][agent]") {
  const auto tool = lookup();
  const Json& parameters = *tool->spec().parameters;
  CHECK(parameters["properties"].size() == 1);  // order_id only
  CHECK(parameters["required"] == Json::array({"order_id"}));
  REQUIRE(tool->spec().injected.size() == 2);
  CHECK(tool->spec().injected[0].name == "inject_test::OrderDb");
  CHECK(tool->spec().injected[1].name == "inject_test::UnitOfWork");

  auto made = std::make_shared<std::atomic<int>>(0);
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "lookup_order", {{"order_id", "A-1"}})}},
      Turn{.tool_calls = {call("c2", "lookup_order", {{"order_id", "B-2"}})}},
      Turn{.content = "A-1 shipped."},
  });
  Agent agent("clerk", "fake", "You look orders up.", react({tool}));
  auto ctx = make_test_ctx({.llm = llm});
  ctx.dependencies = shop_dependencies(made);
  auto result = agent.run("Where is A-1?", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  const auto requests = llm->requests();
  CHECK(requests[1].messages.back().text() == "shipped (call 1 of clerk)");
  CHECK(requests[2].messages.back().text() == "unknown (call 2 of clerk)");  // the same unit of work
  CHECK(*made == 1);

  SECTION("a second run gets its own per-run object; the singleton is shared") {
    auto again = FakeLLM::script({Turn{.tool_calls = {call("c1", "lookup_order", {{"order_id", "A-1"}})}},
                                  Turn{.content = "ok"}});
    auto ctx2 = make_test_ctx({.llm = again});
    ctx2.dependencies = ctx.dependencies;
    REQUIRE(agent.run("Where is A-1?", ctx2).stop_reason == StopReason::answered);
    CHECK(again->requests()[1].messages.back().text() == "shipped (call 1 of clerk)");
    CHECK(*made == 2);
  }
  SECTION("an argument named like the injected parameter is not how it is filled") {
    auto sneaky = FakeLLM::script(
        {Turn{.tool_calls = {call("c1", "lookup_order", {{"order_id", "A-1"}, {"db", "attacker"}})}},
         Turn{.content = "ok"}});
    auto ctx3 = make_test_ctx({.llm = sneaky});
    ctx3.dependencies = shop_dependencies(made);
    REQUIRE(agent.run("Where is A-1?", ctx3).stop_reason == StopReason::answered);
    CHECK_THAT(sneaky->requests()[1].messages.back().text(), Catch::Contains("unexpected") && Catch::Contains("db"));
  }
}

TEST_CASE("a run whose tools need a dependency its context lacks fails at its start, naming tool and type",
          "[inject][agent]") {
  auto llm = FakeLLM::script({Turn{.content = "never"}});
  Agent agent("clerk", "fake", "You look orders up.", react({lookup()}));
  auto ctx = make_test_ctx({.llm = llm});

  SECTION("no dependencies at all") {
    auto result = agent.run("Where is A-1?", ctx);
    CHECK(result.stop_reason == StopReason::failed);
    REQUIRE(result.failure);
    CHECK(result.failure->code == agentkit::ErrorCode::invalid_argument);
    CHECK_THAT(result.failure->message,
               Catch::Contains("tool 'lookup_order' needs Inject<inject_test::OrderDb>") &&
                   Catch::Contains("the run's context provides none"));
  }
  SECTION("one of two provided") {
    auto deps = std::make_shared<Dependencies>();
    deps->provide<OrderDb>(std::make_shared<OrderDb>());
    ctx.dependencies = deps;
    auto result = agent.run("Where is A-1?", ctx);
    CHECK(result.stop_reason == StopReason::failed);
    REQUIRE(result.failure);
    CHECK_THAT(result.failure->message, Catch::Contains("Inject<inject_test::UnitOfWork>"));
  }
  CHECK(llm->requests().empty());  // the model was never asked
}

TEST_CASE("a sub-run (as_tool) gets its own per-run objects from the same dependencies", "[inject][as_tool]") {
  auto made = std::make_shared<std::atomic<int>>(0);
  auto clerk = std::make_shared<Agent>("clerk", "fake", "You look orders up.", react({lookup()}));
  auto ask_clerk = agentkit::as_tool(clerk, {.name = "ask_clerk",
                                             .description = "Ask the clerk agent about an order.",
                                             .side_effecting = false});
  Agent lead("lead", "fake", "You delegate.", react({ask_clerk, lookup()}));
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("p1", "lookup_order", {{"order_id", "A-1"}})}},  // lead
      Turn{.tool_calls = {call("p2", "ask_clerk", {{"task", "A-1?"}})}},        // lead
      Turn{.tool_calls = {call("s1", "lookup_order", {{"order_id", "A-1"}})}},  // clerk
      Turn{.content = "shipped"},                                               // clerk
      Turn{.content = "A-1 shipped."},                                          // lead
  });
  auto ctx = make_test_ctx({.llm = llm});
  ctx.dependencies = shop_dependencies(made);
  REQUIRE(lead.run("Where is A-1?", ctx).stop_reason == StopReason::answered);
  const auto requests = llm->requests();
  CHECK(requests[1].messages.back().text() == "shipped (call 1 of lead)");
  CHECK(requests[3].messages.back().text() == "shipped (call 1 of lead/clerk)");
  CHECK(*made == 2);
}

TEST_CASE("Dependencies: a null instance or factory is refused, a factory's cycle and null result are errors",
          "[inject]") {
  Dependencies deps;
  CHECK_THROWS_AS(deps.provide<OrderDb>(nullptr), agentkit::Error);
  CHECK_THROWS_AS(deps.provide_per_run<OrderDb>(nullptr), agentkit::Error);
  deps.provide_per_run<UnitOfWork>([](const RunContext&) { return std::shared_ptr<UnitOfWork>(); });
  RunContext ctx;
  CHECK_THROWS_WITH(deps.get<UnitOfWork>(ctx), Catch::Contains("returned null"));
  CHECK_THROWS_WITH(deps.get<OrderDb>(ctx), Catch::Contains("no dependency of type inject_test::OrderDb"));
  Dependencies cyclic;
  cyclic.provide_per_run<OrderDb>([&cyclic](const RunContext& c) { return cyclic.get<OrderDb>(c); });
  CHECK_THROWS_WITH(cyclic.get<OrderDb>(ctx), Catch::Contains("asks for inject_test::OrderDb itself"));
}
