// Invoker: chain order, the terminal's approval gate, unknown tools, results
// (spec 000 "Note the call path", approval gating).
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <agentkit/function_tool.h>
#include <agentkit/json.h>
#include <agentkit/invoker.h>
#include <agentkit/testing/test_context.h>

using agentkit::Autonomy;
using agentkit::Invoker;
using agentkit::Json;
using agentkit::Middleware;
using agentkit::Next;
using agentkit::RunContext;
using agentkit::ToolPtr;
using agentkit::ToolRequest;
using agentkit::ToolResult;
using Status = agentkit::ToolResult::Status;

namespace {

struct Counted {
  std::shared_ptr<int> runs = std::make_shared<int>(0);
  ToolPtr tool;
};

Counted lookup_tool() {
  Counted c;
  c.tool = agentkit::tool("lookup")
               .doc("Look up a customer record by id and return its display name.")
               .side_effecting(false)
               .params("id")
               .fn([runs = c.runs](const std::string& id) {
                 ++*runs;
                 return "customer " + id;
               });
  return c;
}

Counted send_tool() {
  Counted c;
  c.tool = agentkit::tool("send_email")
               .doc("Send one email to a single recipient and return the provider message id.")
               .side_effecting(true)
               .params("to", "body")
               .fn([runs = c.runs](const std::string& to, const std::string&) {
                 ++*runs;
                 return "queued for " + to;
               });
  return c;
}

Counted refund_tool() {
  Counted c;
  c.tool = agentkit::tool("refund")
               .doc("Issue a refund against a customer order and return the confirmation id.")
               .side_effecting(true)
               .requires_approval()
               .params("order_id")
               .fn([runs = c.runs](const std::string& order_id) {
                 ++*runs;
                 return "refunded " + order_id;
               });
  return c;
}

// A read-only tool that still insists on a human decision.
Counted export_tool() {
  Counted c;
  c.tool = agentkit::tool("export_report")
               .doc("Export the quarterly report for review by a human before it leaves the building.")
               .side_effecting(false)
               .requires_approval()
               .fn([runs = c.runs] {
                 ++*runs;
                 return std::string("exported");
               });
  return c;
}

ToolRequest request_for(const ToolPtr& tool, Json arguments = Json::object()) {
  return ToolRequest{.call_id = "c1", .name = tool->name(), .arguments = std::move(arguments), .tool = tool};
}

Middleware recording(std::string name, std::shared_ptr<std::vector<std::string>> log) {
  return [name = std::move(name), log](const ToolRequest& req, RunContext& ctx, const Next& next) {
    log->push_back(name + ">");
    auto result = next(req, ctx);
    log->push_back("<" + name);
    return result;
  };
}

}  // namespace

TEST_CASE("a default Invoker runs the tool and returns its value as ok", "[invoker]") {
  auto lookup = lookup_tool();
  Invoker invoker;
  RunContext ctx;
  CHECK(invoker.size() == 0);

  auto result = invoker.invoke_tool(request_for(lookup.tool, {{"id", "42"}}), ctx);

  CHECK(result.status == Status::ok);
  CHECK(result.value == Json("customer 42"));
  CHECK(result.model_text() == "customer 42");
  CHECK(*lookup.runs == 1);
}

TEST_CASE("the first middleware is the outermost layer", "[invoker]") {
  auto log = std::make_shared<std::vector<std::string>>();
  auto tool = agentkit::tool("probe")
                  .doc("Record that the tool body ran, for checking middleware order.")
                  .side_effecting(false)
                  .fn([log] {
                    log->push_back("tool");
                    return std::string("done");
                  });
  Invoker invoker({recording("outer", log), recording("middle", log), recording("inner", log)});
  RunContext ctx;
  CHECK(invoker.size() == 3);

  auto result = invoker.invoke_tool(request_for(tool), ctx);

  CHECK(result.is_ok());
  CHECK(*log == std::vector<std::string>{"outer>", "middle>", "inner>", "tool", "<inner", "<middle", "<outer"});
}

TEST_CASE("the chain is reusable: each call walks it again", "[invoker]") {
  auto log = std::make_shared<std::vector<std::string>>();
  auto lookup = lookup_tool();
  Invoker invoker({recording("a", log)});
  RunContext ctx;

  invoker.invoke_tool(request_for(lookup.tool, {{"id", "1"}}), ctx);
  invoker.invoke_tool(request_for(lookup.tool, {{"id", "2"}}), ctx);

  CHECK(*log == std::vector<std::string>{"a>", "<a", "a>", "<a"});
  CHECK(*lookup.runs == 2);
}

TEST_CASE("a lambda middleware can deny a call without running the tool", "[invoker]") {
  auto shell_runs = std::make_shared<int>(0);
  auto shell = agentkit::tool("shell")
                   .doc("Run a shell command on the build host and return its output.")
                   .side_effecting(true)
                   .params("command")
                   .fn([shell_runs](const std::string&) {
                     ++*shell_runs;
                     return std::string("ran");
                   });
  auto lookup = lookup_tool();
  Invoker invoker({[](const ToolRequest& req, RunContext& ctx, const Next& next) {
    if (req.name == "shell") return ToolResult::denied("blocked by policy");
    return next(req, ctx);
  }});
  RunContext ctx;

  auto denied = invoker.invoke_tool(request_for(shell, {{"command", "rm -rf /"}}), ctx);
  auto allowed = invoker.invoke_tool(request_for(lookup.tool, {{"id", "7"}}), ctx);

  CHECK(denied.status == Status::denied);
  CHECK(denied.model_text() == "blocked by policy");
  CHECK(*shell_runs == 0);
  CHECK(allowed.is_ok());
  CHECK(*lookup.runs == 1);
}

TEST_CASE("a middleware may call next several times", "[invoker]") {
  auto lookup = lookup_tool();
  Invoker invoker({[](const ToolRequest& req, RunContext& ctx, const Next& next) {
    next(req, ctx);
    return next(req, ctx);
  }});
  RunContext ctx;

  invoker.invoke_tool(request_for(lookup.tool, {{"id", "1"}}), ctx);

  CHECK(*lookup.runs == 2);
}

TEST_CASE("an unknown tool is a model-visible error", "[invoker]") {
  Invoker invoker;
  RunContext ctx;

  auto result = invoker.invoke_tool(ToolRequest{.call_id = "c9", .name = "teleport"}, ctx);

  CHECK(result.status == Status::error);
  CHECK(result.text == "unknown tool 'teleport'");
}

TEST_CASE("tool exceptions propagate through a chain without error_boundary", "[invoker]") {
  auto tool = agentkit::tool("flaky")
                  .doc("Fail every time, to check that exceptions reach the middleware.")
                  .side_effecting(false)
                  .fn([]() -> std::string { throw std::runtime_error("disk on fire"); });
  Invoker invoker;
  RunContext ctx;

  CHECK_THROWS_WITH(invoker.invoke_tool(request_for(tool), ctx), "disk on fire");
}

TEST_CASE("an empty middleware is refused at construction", "[invoker]") {
  CHECK_THROWS_AS(Invoker(std::vector<Middleware>{Middleware{}}), agentkit::Error);
}

TEST_CASE("needs_approval combines the tool's declaration with the autonomy tier", "[invoker]") {
  const auto read_only = request_for(lookup_tool().tool);
  const auto mutation = request_for(send_tool().tool);
  const auto gated_mutation = request_for(refund_tool().tool);
  const auto gated_read = request_for(export_tool().tool);
  auto claimed = read_only;
  claimed.side_effecting = true;  // the request's own claim counts too

  SECTION("manual: everything pauses") {
    CHECK(agentkit::needs_approval(read_only, Autonomy::manual));
    CHECK(agentkit::needs_approval(mutation, Autonomy::manual));
    CHECK(agentkit::needs_approval(gated_mutation, Autonomy::manual));
    CHECK(agentkit::needs_approval(gated_read, Autonomy::manual));
  }
  SECTION("gated: side-effecting calls and requires_approval tools pause") {
    CHECK_FALSE(agentkit::needs_approval(read_only, Autonomy::gated));
    CHECK(agentkit::needs_approval(mutation, Autonomy::gated));
    CHECK(agentkit::needs_approval(claimed, Autonomy::gated));
    CHECK(agentkit::needs_approval(gated_mutation, Autonomy::gated));
    CHECK(agentkit::needs_approval(gated_read, Autonomy::gated));
  }
  SECTION("automatic: only requires_approval tools pause") {
    CHECK_FALSE(agentkit::needs_approval(read_only, Autonomy::automatic));
    CHECK_FALSE(agentkit::needs_approval(mutation, Autonomy::automatic));
    CHECK_FALSE(agentkit::needs_approval(claimed, Autonomy::automatic));
    CHECK(agentkit::needs_approval(gated_mutation, Autonomy::automatic));
    CHECK(agentkit::needs_approval(gated_read, Autonomy::automatic));
  }
}

TEST_CASE("a call needing approval returns awaiting_approval without running", "[invoker]") {
  auto lookup = lookup_tool();
  auto send = send_tool();
  auto refund = refund_tool();
  auto passthrough = [](const ToolRequest& req, RunContext& ctx, const Next& next) { return next(req, ctx); };
  Invoker invoker({passthrough});
  RunContext ctx;
  const auto lookup_req = request_for(lookup.tool, {{"id", "1"}});
  const auto send_req = request_for(send.tool, {{"to", "ops@example.com"}, {"body", "hi"}});
  const auto refund_req = request_for(refund.tool, {{"order_id", "A-1"}});

  SECTION("manual") {
    ctx.autonomy = Autonomy::manual;
    CHECK(invoker.invoke_tool(lookup_req, ctx).status == Status::awaiting_approval);
    CHECK(invoker.invoke_tool(send_req, ctx).status == Status::awaiting_approval);
    CHECK(invoker.invoke_tool(refund_req, ctx).status == Status::awaiting_approval);
    CHECK(*lookup.runs == 0);
    CHECK(*send.runs == 0);
    CHECK(*refund.runs == 0);
  }
  SECTION("gated") {
    ctx.autonomy = Autonomy::gated;
    CHECK(invoker.invoke_tool(lookup_req, ctx).is_ok());
    CHECK(invoker.invoke_tool(send_req, ctx).status == Status::awaiting_approval);
    CHECK(invoker.invoke_tool(refund_req, ctx).status == Status::awaiting_approval);
    CHECK(*lookup.runs == 1);
    CHECK(*send.runs == 0);
    CHECK(*refund.runs == 0);
  }
  SECTION("automatic") {
    ctx.autonomy = Autonomy::automatic;
    CHECK(invoker.invoke_tool(lookup_req, ctx).is_ok());
    CHECK(invoker.invoke_tool(send_req, ctx).is_ok());
    auto paused = invoker.invoke_tool(refund_req, ctx);
    CHECK(paused.status == Status::awaiting_approval);
    CHECK(paused.model_text() == "awaiting approval");
    CHECK(*lookup.runs == 1);
    CHECK(*send.runs == 1);
    CHECK(*refund.runs == 0);
  }
}

TEST_CASE("an approved request runs at every tier", "[invoker]") {
  auto refund = refund_tool();
  Invoker invoker;
  RunContext ctx;
  auto req = request_for(refund.tool, {{"order_id", "A-1"}});
  agentkit::testing::approve(req);

  for (auto tier : {Autonomy::manual, Autonomy::gated, Autonomy::automatic}) {
    ctx.autonomy = tier;
    auto result = invoker.invoke_tool(req, ctx);
    CHECK(result.is_ok());
    CHECK(result.model_text() == "refunded A-1");
  }
  CHECK(*refund.runs == 3);
}

TEST_CASE("model_text: strings verbatim, other JSON compact, non-ok results their text", "[invoker]") {
  CHECK(ToolResult::ok("line one\nline two").model_text() == "line one\nline two");
  CHECK(ToolResult::ok(Json{{"b", 1}, {"a", {1, 2}}}).model_text() == R"({"a":[1,2],"b":1})");
  CHECK(ToolResult::ok(42).model_text() == "42");
  CHECK(ToolResult::ok(nullptr).model_text() == "null");
  CHECK(ToolResult::error("bad call").model_text() == "bad call");
  CHECK(ToolResult::denied("blocked").model_text() == "blocked");
  CHECK(ToolResult::outcome_unknown("maybe").model_text() == "maybe");
}

TEST_CASE("to_string names every status", "[invoker]") {
  CHECK(agentkit::to_string(Status::ok) == "ok");
  CHECK(agentkit::to_string(Status::error) == "error");
  CHECK(agentkit::to_string(Status::denied) == "denied");
  CHECK(agentkit::to_string(Status::awaiting_approval) == "awaiting_approval");
  CHECK(agentkit::to_string(Status::outcome_unknown) == "outcome_unknown");
}

TEST_CASE("an ok result's model text is the canonical dump for every scalar and the string itself for a string", "[invoker]") {
  const std::vector<Json> values = {
      Json(0), Json(-1), Json(42), Json(std::int64_t{-9223372036854775807LL - 1}),
      Json(std::uint64_t{18446744073709551615ULL}), Json(true), Json(false), Json(nullptr),
      Json(1.5), Json(-0.25), Json::array({1, "a"}), Json{{"b", 2}, {"a", 1}}};
  for (const Json& value : values) {
    INFO(value.dump());
    CHECK(ToolResult::ok(value).model_text() == agentkit::canonical_dump(value));
  }
  CHECK(ToolResult::ok("plain words").model_text() == "plain words");
  // A non-ok result speaks its text, whatever value it carries.
  ToolResult denied = ToolResult::ok(7);
  denied.status = Status::denied;
  denied.text = "Denied by policy";
  CHECK(denied.model_text() == "Denied by policy");
}
