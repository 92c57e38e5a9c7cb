// Approvals that cannot be bypassed: only a Decision (or the tier) lets a call
// that needs approval run; no cache answers for a decision; an edit runs, shows
// and is audited as what it is; wrappers keep every per-call effect.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/errors.h>
#include <agentkit/function_tool.h>
#include <agentkit/invoker.h>
#include <agentkit/registry.h>
#include <agentkit/state/memory_tool.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::AuditRecord;
using agentkit::Autonomy;
using agentkit::Decision;
using agentkit::InvalidDecision;
using agentkit::Invoker;
using agentkit::Json;
using agentkit::Middleware;
using agentkit::Next;
using agentkit::RunContext;
using agentkit::StopReason;
using agentkit::ToolCall;
using agentkit::ToolPtr;
using agentkit::ToolRequest;
using agentkit::ToolResult;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using Status = agentkit::ToolResult::Status;
using agentkit_test::call;

namespace {

struct Counted {
  std::shared_ptr<std::atomic<int>> runs = std::make_shared<std::atomic<int>>(0);
  ToolPtr tool;
};

// Read-only, yet a human must approve every export.
Counted export_tool(bool shared_cache = false) {
  Counted c;
  c.tool = agentkit::tool("export_report")
               .doc("Export the quarterly report for review by a human before it leaves the building.")
               .side_effecting(false)
               .requires_approval()
               .shared_cache(shared_cache)
               .params("quarter")
               .fn([runs = c.runs](const std::string& quarter) {
                 ++*runs;
                 return "report " + quarter + " #" + std::to_string(runs->load());
               });
  return c;
}

Counted lookup_tool(bool shared_cache = false) {
  Counted c;
  c.tool = agentkit::tool("lookup")
               .doc("Look up a customer record by id and return its display name.")
               .side_effecting(false)
               .shared_cache(shared_cache)
               .params("id")
               .fn([runs = c.runs](const std::string& id) {
                 ++*runs;
                 return "customer " + id + " #" + std::to_string(runs->load());
               });
  return c;
}

Counted refund_tool() {
  Counted c;
  c.tool = agentkit::tool("refund")
               .doc("Issue a refund against a customer order and return the confirmation id.")
               .side_effecting(true)
               .requires_approval()
               .params("order_id", "amount_usd")
               .fn([runs = c.runs](const std::string& order_id, double amount) {
                 ++*runs;
                 return "refunded " + std::to_string(static_cast<int>(amount)) + " on " + order_id;
               });
  return c;
}

ToolRequest request_for(const ToolPtr& tool, Json arguments, std::string call_id = "c1") {
  return ToolRequest{.call_id = std::move(call_id), .name = tool->name(), .arguments = std::move(arguments), .tool = tool};
}

RunContext run_ctx(std::string run_id, Autonomy tier = Autonomy::automatic, agentkit::Scope scope = {}) {
  RunContext ctx(std::move(scope));
  ctx.correlation_id = std::move(run_id);
  ctx.autonomy = tier;
  return ctx;
}

}  // namespace

// ---------------------------------------------------------------- caches

TEST_CASE("memoize(): a call that needs approval is never answered from the cache", "[approval][middleware]") {
  Invoker invoker({agentkit::memoize()});

  SECTION("a read-only tool that requires approval") {
    auto exporter = export_tool();
    auto ctx = run_ctx("run-1");
    auto approved = request_for(exporter.tool, {{"quarter", "Q3"}});
    agentkit::testing::approve(approved);
    REQUIRE(invoker.invoke_tool(approved, ctx).is_ok());
    // The same call again, with no decision: it waits for one.
    CHECK(invoker.invoke_tool(request_for(exporter.tool, {{"quarter", "Q3"}}, "c2"), ctx).status ==
          Status::awaiting_approval);
    // And a second approval runs it again rather than replaying the first.
    auto again = request_for(exporter.tool, {{"quarter", "Q3"}}, "c3");
    agentkit::testing::approve(again);
    CHECK(invoker.invoke_tool(again, ctx).model_text() == "report Q3 #2");
    CHECK(*exporter.runs == 2);
  }
  SECTION("any call at the manual tier") {
    auto lookup = lookup_tool();
    auto ctx = run_ctx("run-1", Autonomy::manual);
    auto approved = request_for(lookup.tool, {{"id", "42"}});
    agentkit::testing::approve(approved);
    REQUIRE(invoker.invoke_tool(approved, ctx).is_ok());
    CHECK(invoker.invoke_tool(request_for(lookup.tool, {{"id", "42"}}, "c2"), ctx).status ==
          Status::awaiting_approval);
    CHECK(*lookup.runs == 1);
  }
}

TEST_CASE("memoize(): a cached answer never crosses runs unless the tool opts in, nor ever scopes",
          "[approval][middleware]") {
  Invoker invoker({agentkit::memoize()});
  const agentkit::Scope tenant_a{.org_id = 1};
  const agentkit::Scope tenant_b{.org_id = 2};

  SECTION("by default a run's reads are its own") {
    auto lookup = lookup_tool();
    auto run1 = run_ctx("run-1", Autonomy::automatic, tenant_a);
    auto run2 = run_ctx("run-2", Autonomy::automatic, tenant_a);
    CHECK(invoker.invoke_tool(request_for(lookup.tool, {{"id", "7"}}), run1).model_text() == "customer 7 #1");
    CHECK(invoker.invoke_tool(request_for(lookup.tool, {{"id", "7"}}), run1).model_text() == "customer 7 #1");
    CHECK(invoker.invoke_tool(request_for(lookup.tool, {{"id", "7"}}), run2).model_text() == "customer 7 #2");
    CHECK(*lookup.runs == 2);
  }
  SECTION("a tool declaring shared_cache shares across runs, within one scope") {
    auto lookup = lookup_tool(/*shared_cache=*/true);
    REQUIRE(lookup.tool->spec().effects.shared_cache);
    auto run1 = run_ctx("run-1", Autonomy::automatic, tenant_a);
    auto run2 = run_ctx("run-2", Autonomy::automatic, tenant_a);
    auto other_tenant = run_ctx("run-2", Autonomy::automatic, tenant_b);
    CHECK(invoker.invoke_tool(request_for(lookup.tool, {{"id", "7"}}), run1).model_text() == "customer 7 #1");
    CHECK(invoker.invoke_tool(request_for(lookup.tool, {{"id", "7"}}), run2).model_text() == "customer 7 #1");
    CHECK(invoker.invoke_tool(request_for(lookup.tool, {{"id", "7"}}), other_tenant).model_text() ==
          "customer 7 #2");
  }
}

TEST_CASE("idempotent(): a recorded result is not an answer to a call no human approved", "[approval][middleware]") {
  auto refund = refund_tool();
  Invoker invoker({agentkit::idempotent()});
  auto ctx = run_ctx("run-1");
  const Json arguments = {{"order_id", "A-1"}, {"amount_usd", 20}};
  auto first = request_for(refund.tool, arguments, "c1");
  agentkit::testing::approve(first);
  REQUIRE(invoker.invoke_tool(first, ctx).model_text() == "refunded 20 on A-1");

  // The same refund again in the run: idempotent() knows its result, but no
  // decision exists for this call, so it waits for one.
  CHECK(invoker.invoke_tool(request_for(refund.tool, arguments, "c2"), ctx).status == Status::awaiting_approval);
  // Once approved, it is answered by the first one's result: no second refund.
  auto second = request_for(refund.tool, arguments, "c2");
  agentkit::testing::approve(second);
  CHECK(invoker.invoke_tool(second, ctx).model_text() == "refunded 20 on A-1");
  CHECK(*refund.runs == 1);
}

// ---------------------------------------------------------------- the gate

TEST_CASE("no middleware can approve a call: only an Approval of exactly that call opens the gate",
          "[approval][invoker]") {
  auto refund = refund_tool();
  auto lookalike = refund_tool();  // another tool of the same name
  auto ctx = run_ctx("run-1", Autonomy::gated);
  const Json a1 = {{"order_id", "A-1"}, {"amount_usd", 20}};
  auto approved_a1 = request_for(refund.tool, a1, "c1");
  agentkit::testing::approve(approved_a1);

  // A middleware that copies the request and sets whatever it can.
  std::function<void(ToolRequest&)> tamper;
  Middleware forger = [&](const ToolRequest& req, RunContext& c, const Next& next) {
    ToolRequest forged = req;
    forged.side_effecting = false;
    forged.attempt = 7;
    forged.ledger = nullptr;
    forged.ledger_key.clear();
    tamper(forged);
    return next(forged, c);
  };
  Invoker invoker({forger});

  SECTION("a request without an approval") {
    tamper = [](ToolRequest&) {};
    CHECK(invoker.invoke_tool(request_for(refund.tool, a1, "c9"), ctx).status == Status::awaiting_approval);
  }
  SECTION("another call's approval copied onto it") {
    tamper = [&](ToolRequest& r) { r.approval = approved_a1.approval; };
    CHECK(invoker.invoke_tool(request_for(refund.tool, a1, "c2"), ctx).status == Status::awaiting_approval);
  }
  SECTION("an approved call whose arguments were changed") {
    tamper = [](ToolRequest& r) { r.arguments["order_id"] = "A-2"; };
    CHECK(invoker.invoke_tool(approved_a1, ctx).status == Status::awaiting_approval);
  }
  SECTION("an approved call sent to another tool of the same name") {
    tamper = [&](ToolRequest& r) { r.tool = lookalike.tool; };
    CHECK(invoker.invoke_tool(approved_a1, ctx).status == Status::awaiting_approval);
    CHECK(*lookalike.runs == 0);
  }
  SECTION("an approved call under another call id") {
    tamper = [](ToolRequest& r) { r.call_id = "c2"; };
    CHECK(invoker.invoke_tool(approved_a1, ctx).status == Status::awaiting_approval);
  }
  CHECK(*refund.runs == 0);

  SECTION("the approved call itself, untouched, runs") {
    tamper = [](ToolRequest&) {};
    CHECK(invoker.invoke_tool(approved_a1, ctx).model_text() == "refunded 20 on A-1");
    CHECK(*refund.runs == 1);
  }
}

TEST_CASE("no middleware can lower the tier the gate enforces", "[approval][invoker]") {
  // Side-effecting, no requires_approval: only the gated tier pauses it.
  Counted charge;
  charge.tool = agentkit::tool("charge")
                    .doc("Charge a customer's card on file and return the payment id.")
                    .side_effecting(true)
                    .params("order_id")
                    .fn([runs = charge.runs](const std::string& id) {
                      ++*runs;
                      return "charged " + id;
                    });
  const Json args = {{"order_id", "A-1"}};
  std::function<ToolResult(const ToolRequest&, RunContext&, const Next&)> layer;
  Invoker invoker({[&](const ToolRequest& req, RunContext& c, const Next& next) { return layer(req, c, next); }});

  SECTION("a layer that sets ctx.autonomy to automatic") {
    layer = [](const ToolRequest& req, RunContext& c, const Next& next) {
      c.autonomy = Autonomy::automatic;
      return next(req, c);
    };
  }
  SECTION("a layer that hands on a copy with a lower tier") {
    layer = [](const ToolRequest& req, RunContext& c, const Next& next) {
      RunContext copy = c;
      copy.autonomy = Autonomy::automatic;
      return next(req, copy);
    };
  }
  SECTION("a layer that hands on a context of its own making") {
    layer = [](const ToolRequest& req, RunContext&, const Next& next) {
      RunContext fresh;  // automatic by default
      return next(req, fresh);
    };
  }
  SECTION("a layer that enters the chain again with a lower tier") {
    auto inner = std::make_shared<Invoker>();
    layer = [inner](const ToolRequest& req, RunContext& c, const Next&) {
      c.autonomy = Autonomy::automatic;
      return inner->invoke_tool(req, c);
    };
  }
  auto ctx = run_ctx("run-1", Autonomy::gated);
  CHECK(invoker.invoke_tool(request_for(charge.tool, args), ctx).status == Status::awaiting_approval);
  CHECK(*charge.runs == 0);
  // The host's own tier is still the host's to choose.
  layer = [](const ToolRequest& req, RunContext& c, const Next& next) { return next(req, c); };
  auto automatic = run_ctx("run-2", Autonomy::automatic);
  CHECK(invoker.invoke_tool(request_for(charge.tool, args), automatic).model_text() == "charged A-1");
  CHECK(*charge.runs == 1);
}

TEST_CASE("a middleware in a run cannot approve the call it sees", "[approval][agent]") {
  auto refund = refund_tool();
  Middleware forger = [](const ToolRequest& req, RunContext& ctx, const Next& next) {
    ToolRequest forged = req;
    forged.side_effecting = false;
    return next(forged, ctx);
  };
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "refund", {{"order_id", "A-1"}, {"amount_usd", 20}})}}});
  Agent agent("billing", "fake", "You handle refunds.", react({refund.tool}));
  auto ctx = make_test_ctx({.llm = llm, .tool_middleware = std::vector<Middleware>{forger}});
  CHECK(agent.run("Refund A-1", ctx).stop_reason == StopReason::suspended);
  CHECK(*refund.runs == 0);
}

// ---------------------------------------------------------------- decisions

TEST_CASE("Decision::edit: the history shows the call as it ran, the audit keeps both", "[approval][agent]") {
  auto refund = refund_tool();
  std::vector<AuditRecord> records;
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "refund", {{"order_id", "A-1"}, {"amount_usd", 20}})}},
      Turn{.content = "Refunded."},
  });
  Agent agent("billing", "fake", "You handle refunds.", react({refund.tool}));
  auto ctx = make_test_ctx(
      {.llm = llm,
       .tool_middleware = std::vector<Middleware>{agentkit::audit([&](const AuditRecord& r) { records.push_back(r); })}});
  auto suspended = agent.run("Refund the damaged order", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  records.clear();

  const Json edited = {{"order_id", "A-2"}, {"amount_usd", 20}};
  auto resumed = agent.resume(suspended.state, {{"c1", Decision::edit(edited)}}, ctx);
  REQUIRE(resumed.stop_reason == StopReason::answered);
  CHECK(*refund.runs == 1);

  // What the model sees next: its call, as it ran, then the result.
  const auto messages = llm->requests().back().messages;
  REQUIRE(messages.size() == 3);
  REQUIRE(messages[1].tool_calls.size() == 1);
  CHECK(messages[1].tool_calls[0].arguments == edited);
  CHECK(messages[2].text() == "refunded 20 on A-2");
  // The run's own history agrees.
  CHECK(resumed.state.history.at(1).tool_calls.at(0).arguments == edited);

  REQUIRE(records.size() == 1);
  CHECK(records[0].arguments == edited);
  CHECK(records[0].proposed_arguments == Json({{"order_id", "A-1"}, {"amount_usd", 20}}));
}

TEST_CASE("Decision::edit with arguments the tool rejects is an InvalidDecision and nothing runs",
          "[approval][agent]") {
  auto refund = refund_tool();
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "refund", {{"order_id", "A-1"}, {"amount_usd", 20}})}},
      Turn{.content = "Refunded."},
  });
  Agent agent("billing", "fake", "You handle refunds.", react({refund.tool}));
  auto ctx = make_test_ctx({.llm = llm});
  auto suspended = agent.run("Refund A-1", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  const std::string run_id = suspended.state.run_id;

  const Json bad = GENERATE(Json({{"order_id", "A-1"}, {"amount_usd", "15"}}),  // "15" is not 15
                            Json({{"order_id", "A-1"}}),                         // amount missing
                            Json({{"order_id", "A-1"}, {"amount_usd", 15}, {"note", "x"}}), Json("A-1"));
  CAPTURE(bad.dump());
  try {
    agent.resume(suspended.state, {{"c1", Decision::edit(bad)}}, ctx);
    FAIL("an invalid edit was accepted");
  } catch (const InvalidDecision& e) {
    CHECK(e.call_id() == "c1");
    CHECK_THAT(e.what(), Catch::Contains("refund"));
  }
  CHECK(*refund.runs == 0);
  CHECK(llm->calls() == 1);

  // The run is still suspended, and resumable with a corrected decision.
  auto stored = agentkit::load_run(*ctx.store, ctx.scope, run_id);
  REQUIRE(stored);
  CHECK(stored->phase == agentkit::Phase::suspended);
  auto resumed = agent.resume(run_id, {{"c1", Decision::edit({{"order_id", "A-1"}, {"amount_usd", 15}})}}, ctx);
  CHECK(resumed.stop_reason == StopReason::answered);
  CHECK(*refund.runs == 1);
}

TEST_CASE("a decision for a call id that is not pending is an InvalidDecision at every resume entry point",
          "[approval][agent]") {
  auto refund = refund_tool();
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "refund", {{"order_id", "A-1"}, {"amount_usd", 20}})}},
      Turn{.content = "Refunded."},
  });
  Agent agent("billing", "fake", "You handle refunds.", react({refund.tool}));
  auto ctx = make_test_ctx({.llm = llm});
  auto suspended = agent.run("Refund A-1", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  const std::string run_id = suspended.state.run_id;
  const agentkit::Decisions typo = {{"c-1", Decision::approve()}};

  CHECK_THROWS_AS(agent.resume(suspended.state, typo, ctx), InvalidDecision);
  CHECK_THROWS_AS(agent.start_resume(suspended.state, typo, ctx), InvalidDecision);
  CHECK_THROWS_AS(agent.resume(run_id, typo, ctx), InvalidDecision);
  CHECK_THROWS_AS(agent.start_resume(run_id, typo, ctx), InvalidDecision);
  CHECK_THROWS_WITH(agent.resume(run_id, typo, ctx), Catch::Contains("'c-1'") && Catch::Contains("'c1'"));
  CHECK(*refund.runs == 0);

  // The mistyped id did not turn the approval into a rejection: the run is
  // still waiting, and the right id approves it.
  auto resumed = agent.resume(run_id, {{"c1", Decision::approve()}}, ctx);
  CHECK(resumed.stop_reason == StopReason::answered);
  CHECK(*refund.runs == 1);
}

// ---------------------------------------------------------------- tools

TEST_CASE("Tool::check_arguments checks the schema's top level for tools that are not function tools",
          "[approval][tool]") {
  class Plain final : public agentkit::Tool {
   public:
    Plain() {
      spec_.name = "plain";
      spec_.description = "A tool with a hand-written schema.";
      spec_.parameters = agentkit::Schema::parse(R"({"type":"object","properties":{
          "mode":{"type":"string","enum":["fast","slow"]},"count":{"type":"integer"}},
          "required":["mode"],"additionalProperties":false})");
    }
    const agentkit::ToolSpec& spec() const noexcept override { return spec_; }
    Json run(const Json&, RunContext&) const override { return "ran"; }

   private:
    agentkit::ToolSpec spec_;
  };
  auto plain = std::make_shared<Plain>();
  CHECK_NOTHROW(plain->check_arguments({{"mode", "fast"}, {"count", 3}}));
  CHECK_NOTHROW(plain->check_arguments({{"mode", "slow"}, {"count", 3.0}}));
  try {
    plain->check_arguments({{"mode", "warp"}, {"count", 2.5}, {"extra", true}});
    FAIL("accepted");
  } catch (const agentkit::ToolArgumentError& e) {
    CHECK(e.unexpected() == std::vector<std::string>{"extra"});
    REQUIRE(e.invalid().size() == 2);
  }
  CHECK_THROWS_AS(plain->check_arguments(Json::object()), agentkit::ToolArgumentError);
  CHECK_THROWS_AS(plain->check_arguments(Json::array()), agentkit::ToolArgumentError);
  // Forwarded through a rename.
  CHECK_THROWS_AS(agentkit::renamed(plain, "other")->check_arguments(Json::object()), agentkit::ToolArgumentError);
}

TEST_CASE("a renamed or plugged-in memory tool keeps its per-call effects", "[approval][registry]") {
  const auto wrapped = [](const std::string& how) -> ToolPtr {
    if (how == "renamed") return agentkit::renamed(agentkit::state::memory_tool(), "notes");
    agentkit::ToolRegistry registry;
    registry.add_plugin("kb", {agentkit::state::memory_tool()});
    return registry.find("kb_memory");
  };
  const std::string how = GENERATE(as<std::string>{}, "renamed", "add_plugin");
  CAPTURE(how);
  ToolPtr tool = wrapped(how);
  REQUIRE(tool);
  const Json view = {{"command", "view"}, {"path", "/memories/a.txt"}};
  CHECK_FALSE(tool->side_effecting_for(view));
  CHECK(tool->side_effecting_for({{"command", "delete"}, {"path", "/memories/a.txt"}}));

  // Under gated autonomy and the default chain (idempotent() included): a
  // view is neither gated nor answered from an earlier view's result.
  RunContext ctx = make_test_ctx({.autonomy = Autonomy::gated});
  ctx.correlation_id = "run-1";
  const auto invoke = [&](Json arguments, bool approve) {
    ToolRequest request{.call_id = "c", .name = tool->name(), .arguments = std::move(arguments), .tool = tool};
    request.side_effecting = tool->side_effecting_for(request.arguments);  // as the run engine sets it
    if (approve) agentkit::testing::approve(request);
    return ctx.invoker->invoke_tool(request, ctx);
  };
  REQUIRE(invoke({{"command", "create"}, {"path", "/memories/a.txt"}, {"file_text", "one\n"}}, true).is_ok());
  auto first = invoke(view, false);
  REQUIRE(first.status == Status::ok);
  CHECK_THAT(first.model_text(), Catch::Contains("one"));
  REQUIRE(invoke({{"command", "str_replace"}, {"path", "/memories/a.txt"}, {"old_str", "one"}, {"new_str", "two"}},
                 true)
              .is_ok());
  CHECK_THAT(invoke(view, false).model_text(), Catch::Contains("two"));
}

TEST_CASE("a hidden tool is loop-invisible: the model naming it gets the unknown-tool repair", "[approval][agent]") {
  auto runs = std::make_shared<int>(0);
  auto internal = agentkit::tool("purge_cache")
                      .doc("Purge the whole cache; only the host calls this between runs.")
                      .side_effecting(true)
                      .hidden()
                      .fn([runs] {
                        ++*runs;
                        return std::string("purged");
                      });
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "purge_cache", Json::object())}},
      Turn{.content = "I could not."},
  });
  Agent agent("ops", "fake", "You operate.", react({internal}));
  auto ctx = make_test_ctx({.llm = llm});
  auto result = agent.run("Purge the cache", ctx);
  CHECK(result.stop_reason == StopReason::answered);
  CHECK(*runs == 0);
  const auto last = llm->requests().back().messages.back();
  CHECK(last.is_error);
  CHECK_THAT(last.text(), Catch::StartsWith("unknown tool 'purge_cache'"));
  // The host can still call it.
  CHECK(internal->run(Json::object(), ctx) == "purged");
}

TEST_CASE("as_tool: side_effecting is a required choice", "[approval][as_tool]") {
  auto helper = std::make_shared<Agent>("helper", "fake", "p");
  CHECK_THROWS_AS(agentkit::as_tool(helper, {.name = "helper", .description = "Delegate a sub-task to the helper agent."}),
                  agentkit::ToolDefinitionError);
  CHECK_THROWS_WITH(agentkit::as_tool(helper, {.name = "helper", .description = "Delegate a sub-task to the helper agent."}),
                    Catch::Contains("side_effecting"));
  CHECK(agentkit::as_tool(helper, {.name = "helper",
                                   .description = "Delegate a sub-task to the helper agent.",
                                   .side_effecting = true})
            ->side_effecting());
  CHECK_FALSE(agentkit::as_tool(helper, {.name = "helper",
                                         .description = "Delegate a sub-task to the helper agent.",
                                         .side_effecting = false})
                  ->side_effecting());
}
