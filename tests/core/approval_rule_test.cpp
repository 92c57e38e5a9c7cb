// Approvals that follow the arguments: a tool's approval rule decides per
// call (refunds over $100 wait for a human; under, they run), a rule that
// throws or cannot read the arguments means "wait" (fail closed), the rule
// survives renaming, plugins and with_approval(), and filter_tools() picks a
// server's tools by name patterns.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/condition.h>
#include <agentkit/function_tool.h>
#include <agentkit/invoker.h>
#include <agentkit/registry.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::Autonomy;
using agentkit::Decision;
using agentkit::Json;
using agentkit::RunContext;
using agentkit::StopReason;
using agentkit::ToolPtr;
using agentkit::ToolRequest;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using agentkit_test::call;

namespace {
struct RefundRule {
  double amount_usd = 0;
};
}  // namespace
template <>
struct agentkit::Describe<RefundRule> {
  static constexpr std::string_view name = "RefundRule";
  static constexpr auto fields = std::tuple{agentkit::field("amount_usd", &RefundRule::amount_usd)};
};

namespace {

struct Refunds {
  std::shared_ptr<std::vector<std::string>> ran = std::make_shared<std::vector<std::string>>();
  ToolPtr tool;
};

// A refund over $100 waits for a human; the rule reads only amount_usd.
template <class Rule>
Refunds refund_tool(Rule rule) {
  Refunds r;
  r.tool = agentkit::tool("refund")
               .doc("Issue a refund against a customer order and return the confirmation id.")
               .side_effecting(true)
               .requires_approval(std::move(rule))
               .params("order_id", "amount_usd")
               .fn([ran = r.ran](const std::string& order_id, double amount) {
                 ran->push_back(order_id);
                 return "refunded " + std::to_string(static_cast<int>(amount)) + " on " + order_id;
               });
  return r;
}

Refunds over_100() {
  return refund_tool([](const RefundRule& r) { return r.amount_usd > 100; });
}

Json refund_args(std::string order, Json amount) { return {{"order_id", std::move(order)}, {"amount_usd", std::move(amount)}}; }

// Whether the call waits for a decision when it reaches the end of an
// invoker chain in a run under `ctx` (it runs otherwise).
bool waits(const ToolPtr& tool, const Json& arguments, RunContext& ctx) {
  ToolRequest request{.call_id = "c", .name = tool->name(), .arguments = arguments, .tool = tool};
  return agentkit::Invoker().invoke_tool(request, ctx).status == agentkit::ToolResult::Status::awaiting_approval;
}

RunContext automatic(agentkit::Scope scope = {}) {
  RunContext ctx(std::move(scope));
  ctx.correlation_id = "run-1";
  ctx.autonomy = Autonomy::automatic;
  return ctx;
}

std::vector<std::string> pending_ids(const agentkit::RunResult& result) {
  std::vector<std::string> ids;
  if (result.suspended) {
    for (const auto& c : result.suspended->pending) ids.push_back(c.id);
  }
  return ids;
}

}  // namespace

TEST_CASE("an approval rule decides per call: over $100 waits for a human, under runs at once",
          "[approval][rule][agent]") {
  auto refunds = over_100();
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("small", "refund", refund_args("A-1", 40)),
                          call("large", "refund", refund_args("A-2", 250))}},
      Turn{.content = "Both refunded."},
  });
  Agent agent("billing", "fake", "You handle refunds.", react({refunds.tool}));
  auto ctx = make_test_ctx({.llm = llm});

  auto first = agent.run("Refund A-1 and A-2", ctx);
  REQUIRE(first.stop_reason == StopReason::suspended);
  CHECK(pending_ids(first) == std::vector<std::string>{"large"});
  CHECK(*refunds.ran == std::vector<std::string>{"A-1"});  // the small one ran, once

  auto second = agent.resume(first.state, {{"large", Decision::approve()}}, ctx);
  REQUIRE(second.stop_reason == StopReason::answered);
  CHECK(*refunds.ran == std::vector<std::string>{"A-1", "A-2"});  // the small one did not run again
}

TEST_CASE("a rejected call under an approval rule never runs", "[approval][rule][agent]") {
  auto refunds = over_100();
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("large", "refund", refund_args("A-2", 250))}},
      Turn{.content = "I could not refund it."},
  });
  Agent agent("billing", "fake", "You handle refunds.", react({refunds.tool}));
  auto ctx = make_test_ctx({.llm = llm});
  auto first = agent.run("Refund A-2", ctx);
  REQUIRE(first.stop_reason == StopReason::suspended);
  auto second = agent.resume(first.state, {{"large", Decision::reject("too large")}}, ctx);
  CHECK(second.stop_reason == StopReason::answered);
  CHECK(refunds.ran->empty());
}

TEST_CASE("an approval rule that cannot decide means the call waits (fail closed)", "[approval][rule][agent]") {
  SECTION("the rule throws") {
    auto refunds = refund_tool([](const Json&) -> bool { throw std::runtime_error("pricing service down"); });
    auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "refund", refund_args("A-1", 5))}}});
    Agent agent("billing", "fake", "You handle refunds.", react({refunds.tool}));
    auto ctx = make_test_ctx({.llm = llm});
    auto result = agent.run("Refund A-1", ctx);
    CHECK(result.stop_reason == StopReason::suspended);
    CHECK(pending_ids(result) == std::vector<std::string>{"c1"});
    CHECK(refunds.ran->empty());
  }
  SECTION("the arguments do not fit the rule's struct (an amount sent as a string)") {
    auto refunds = over_100();
    auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "refund", refund_args("A-1", "5"))}}});
    Agent agent("billing", "fake", "You handle refunds.", react({refunds.tool}));
    auto ctx = make_test_ctx({.llm = llm});
    auto result = agent.run("Refund A-1", ctx);
    CHECK(result.stop_reason == StopReason::suspended);
    CHECK(refunds.ran->empty());
  }
  SECTION("the amount is missing") {
    auto refunds = over_100();
    auto ctx = automatic();
    CHECK(waits(refunds.tool, {{"order_id", "A-1"}}, ctx));
    CHECK(refunds.ran->empty());
  }
}

TEST_CASE("an approval rule sees the run's context", "[approval][rule][invoker]") {
  // Tenants on the trial plan (org 7 here) need approval for every refund.
  auto refunds = refund_tool([](const RefundRule& r, const RunContext& ctx) {
    return r.amount_usd > 100 || ctx.scope.org_id == 7;
  });
  const Json small = refund_args("A-1", 5);
  auto trial = automatic(agentkit::Scope{.org_id = 7});
  auto paying = automatic(agentkit::Scope{.org_id = 8});
  CHECK(waits(refunds.tool, small, trial));
  CHECK(refunds.ran->empty());
  CHECK_FALSE(waits(refunds.tool, small, paying));
  CHECK(*refunds.ran == std::vector<std::string>{"A-1"});
  // The tier still applies on top: under manual every call waits.
  paying.autonomy = Autonomy::manual;
  CHECK(waits(refunds.tool, small, paying));
  // Without a run there is no context to decide with: it needs approval.
  const ToolRequest request{.call_id = "c1", .name = "refund", .arguments = small, .tool = refunds.tool};
  CHECK(agentkit::needs_approval(request, Autonomy::automatic));
}

TEST_CASE("renamed(), a plugin and with_approval() keep or add a tool's approval rule", "[approval][rule][registry]") {
  auto refunds = over_100();
  const Json small = refund_args("A-1", 5), large = refund_args("A-2", 500);
  auto ctx = automatic();
  const auto needs = [&](const ToolPtr& tool, const Json& args) { return waits(tool, args, ctx); };

  SECTION("renamed and plugged in: the rule is the original's") {
    const ToolPtr alias = agentkit::renamed(refunds.tool, "give_money_back");
    CHECK_FALSE(needs(alias, small));
    CHECK(needs(alias, large));
    agentkit::ToolRegistry registry;
    registry.add_plugin("shop", {refunds.tool});
    const ToolPtr plugged = registry.find("shop_refund");
    REQUIRE(plugged);
    CHECK_FALSE(needs(plugged, small));
    CHECK(needs(plugged, large));
    CHECK_FALSE(registry.requires_approval("shop_refund"));  // not every call: the declaration alone says no
  }
  SECTION("with_approval adds a rule to a tool that had none, and keeps the tool's own") {
    auto lookup = agentkit::tool("lookup")
                      .doc("Look up an order by its id and return its status line.")
                      .side_effecting(false)
                      .params("order_id")
                      .fn([](const std::string& id) { return "order " + id + ": shipped"; });
    CHECK_FALSE(needs(lookup, {{"order_id", "VIP-1"}}));
    const ToolPtr guarded = agentkit::with_approval(lookup, [](const Json& args, const RunContext&) {
      return args.at("order_id").get<std::string>().starts_with("VIP-");
    });
    CHECK(needs(guarded, {{"order_id", "VIP-1"}}));
    CHECK_FALSE(needs(guarded, {{"order_id", "A-1"}}));
    CHECK(needs(guarded, {{"id", "A-1"}}));  // .at() throws: waits

    const ToolPtr both = agentkit::with_approval(refunds.tool, [](const Json& args, const RunContext&) {
      return args.at("order_id") == "A-1";
    });
    CHECK(needs(both, small));  // the added rule
    CHECK(needs(both, large));  // the tool's own rule still holds
    CHECK_FALSE(needs(both, refund_args("A-3", 5)));

    const ToolPtr by_condition =
        agentkit::with_approval(lookup, agentkit::Condition::parse("order_id in [\"VIP-1\", \"VIP-2\"]").approval_rule());
    CHECK(needs(by_condition, {{"order_id", "VIP-2"}}));
    CHECK_FALSE(needs(by_condition, {{"order_id", "A-1"}}));
    CHECK(needs(by_condition, {{"id", "A-1"}}));  // a condition the arguments cannot decide: waits

    const ToolPtr always = agentkit::with_approval(lookup);
    CHECK(always->requires_approval());
    CHECK(needs(always, {{"order_id", "A-1"}}));
    CHECK_THROWS_AS(agentkit::with_approval(lookup, agentkit::ApprovalPredicate{}), agentkit::ToolDefinitionError);
  }
}

TEST_CASE("an approval rule gates the cache: memoize() never answers a call the rule holds", "[approval][rule][middleware]") {
  auto reads = std::make_shared<std::atomic<int>>(0);
  auto rules = std::make_shared<std::atomic<int>>(0);
  auto report = agentkit::tool("export_report")
                    .doc("Export a report; reports of the board's quarter need a human's approval first.")
                    .side_effecting(false)
                    .requires_approval([rules](const Json& args) {
                      ++*rules;
                      return args.at("quarter") == "board";
                    })
                    .params("quarter")
                    .fn([reads](const std::string& quarter) {
                      ++*reads;
                      return "report " + quarter;
                    });
  agentkit::Invoker invoker({agentkit::memoize()});
  auto ctx = automatic();
  ToolRequest approved{.call_id = "c1", .name = "export_report", .arguments = {{"quarter", "board"}}, .tool = report};
  agentkit::testing::approve(approved);
  REQUIRE(invoker.invoke_tool(approved, ctx).is_ok());
  ToolRequest again{.call_id = "c2", .name = "export_report", .arguments = {{"quarter", "board"}}, .tool = report};
  CHECK(invoker.invoke_tool(again, ctx).status == agentkit::ToolResult::Status::awaiting_approval);
  CHECK(*reads == 1);
  // The rule decides each call once, at the gate: the cache never asks it.
  CHECK(*rules == 2);
  // A call the rule lets through still runs every time: a tool with a rule is not cached.
  ToolRequest q1{.call_id = "c3", .name = "export_report", .arguments = {{"quarter", "q1"}}, .tool = report};
  REQUIRE(invoker.invoke_tool(q1, ctx).is_ok());
  q1.call_id = "c4";
  REQUIRE(invoker.invoke_tool(q1, ctx).is_ok());
  CHECK(*reads == 3);
  CHECK(*rules == 4);
}

TEST_CASE("filter_tools picks tools by name patterns, exclude winning over include", "[registry][filter]") {
  std::vector<ToolPtr> tools;
  for (const char* name : {"get_order", "get_customer", "refund", "delete_everything"}) {
    tools.push_back(agentkit::tool(name)
                        .doc("A tool of the shop server, for the filter test only.")
                        .side_effecting(false)
                        .fn([] { return 1; }));
  }
  const auto names = [](const std::vector<ToolPtr>& picked) {
    std::vector<std::string> out;
    for (const auto& t : picked) out.push_back(t->name());
    return out;
  };
  CHECK(names(agentkit::filter_tools(tools, {})).size() == 4);
  CHECK(names(agentkit::filter_tools(tools, {.include = {"get_*"}})) ==
        std::vector<std::string>{"get_order", "get_customer"});
  CHECK(names(agentkit::filter_tools(tools, {.include = {"get_*", "refund"}, .exclude = {"*customer"}})) ==
        std::vector<std::string>{"get_order", "refund"});
  CHECK(names(agentkit::filter_tools(tools, {.exclude = {"delete_*"}})).size() == 3);
  CHECK(names(agentkit::filter_tools(tools, {.include = {"*"}, .exclude = {"*"}})).empty());
  CHECK(agentkit::matches_any({"*_order"}, "get_order"));
  CHECK(agentkit::matches_any({"g*t*r"}, "get_order"));
  CHECK_FALSE(agentkit::matches_any({"get_"}, "get_order"));  // no pattern, no prefix match
  CHECK_FALSE(agentkit::matches_any({}, "get_order"));
}
