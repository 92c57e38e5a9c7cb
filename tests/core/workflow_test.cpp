// Workflows (<agentkit/workflow.h>): sequence, parallel with a join, routers
// by host function and by model, failures, nesting, as_tool, durability,
// cancellation, and nodes that talk to the OpenAI adapter over loopback.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/executor.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/models.h>
#include <agentkit/state/keys.h>
#include <agentkit/state/store.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/testing/wire_server.h>
#include <agentkit/workflow.h>

#include "../helpers/timing.h"
#include "../helpers/recording_store.h"
#include "../helpers/tool_calls.h"
#include "../helpers/watch_tool.h"
#include "../helpers/wire_replies.h"

using agentkit::Agent;
using agentkit::ErrorCode;
using agentkit::Json;
using agentkit::Role;
using agentkit::RunContext;
using agentkit::StopReason;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using agentkit_test::call;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;
using Llms = std::map<std::string, std::shared_ptr<FakeLLM>>;

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit = 5s) {
  const auto until = Clock::now() + limit;
  while (!condition()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Each agent's model name picks its own scripted model, so a test reads
// what every node's model received.
agentkit::ModelResolver by_name(Llms llms) {
  return [llms = std::move(llms)](std::string_view name) -> std::shared_ptr<agentkit::Model> {
    auto it = llms.find(std::string(name));
    return it == llms.end() ? nullptr : it->second;
  };
}

RunContext ctx_for(const Llms& llms, agentkit::testing::TestContextOptions options = {}) {
  RunContext ctx = make_test_ctx(std::move(options));
  ctx.models = by_name(llms);
  return ctx;
}

// An agent whose model is named after it.
std::shared_ptr<const Agent> node(const std::string& name, std::vector<agentkit::ToolPtr> tools = {},
                                  agentkit::AgentOptions options = {}) {
  return std::make_shared<const Agent>(name, name, "You are the " + name + " agent.", react(tools),
                                       std::move(options));
}

// The text of the last user message a model request carried: the node's task.
std::string task_seen(const FakeLLM& llm, std::size_t request = 0) {
  const auto messages = llm.requests().at(request).messages;
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    if (it->role == Role::user) return it->text();
  }
  return {};
}


}  // namespace

TEST_CASE("a sequence hands each step's output to the next step as its task", "[workflow][sequence]") {
  Llms llms{{"research", FakeLLM::script({Turn{.content = "Refunds take 5 days."}})},
            {"draft", FakeLLM::script({Turn{.content = "Dear customer, refunds take 5 days."}})},
            {"review", FakeLLM::script({Turn{.content = "Dear customer, your refund arrives within 5 days."}})}};
  auto pipeline = agentkit::sequence("support_reply", {node("research"), node("draft"), node("review")});
  auto ctx = ctx_for(llms);
  const auto result = pipeline.run("How long do refunds take?", ctx);

  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(result.output == "Dear customer, your refund arrives within 5 days.");
  CHECK(task_seen(*llms["research"]) == "How long do refunds take?");
  CHECK(task_seen(*llms["draft"]) == "Refunds take 5 days.");
  CHECK(task_seen(*llms["review"]) == "Dear customer, refunds take 5 days.");
  CHECK(llms["research"]->requests().at(0).system == "You are the research agent.");

  const auto record = agentkit::workflow_result(result);
  REQUIRE(record);
  CHECK(record->workflow == "support_reply");
  CHECK(record->outputs.at("draft") == "Dear customer, refunds take 5 days.");
  CHECK(record->outputs.size() == 3);
  CHECK(record->terminal == std::vector<std::string>{"review"});
  CHECK(agentkit::render_result(result) == result.output);
  CHECK(result.usage.input_tokens == 30);  // the three sub-runs' model calls
}

TEST_CASE("a sequence's step task shapes the next step's task from the task and the previous output",
          "[workflow][sequence]") {
  Llms llms{{"translate", FakeLLM::script({Turn{.content = "The parcel is late."}})},
            {"answer", FakeLLM::script({Turn{.content = "Sorry, we are checking."}})}};
  auto pipeline = agentkit::sequence("translated_reply", {node("translate"), node("answer")},
                                     [](const std::string& task, const std::string& previous) {
                                       return "Original: " + task + "\nEnglish: " + previous;
                                     });
  auto ctx = ctx_for(llms);
  const auto result = pipeline.run("O pacote está atrasado.", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(task_seen(*llms["answer"]) == "Original: O pacote está atrasado.\nEnglish: The parcel is late.");
  CHECK(result.output == "Sorry, we are checking.");
}

TEST_CASE("a parallel workflow gives every branch the task and answers with one line per branch",
          "[workflow][parallel]") {
  Llms llms{{"optimist", FakeLLM::script({Turn{.content = "It will work."}})},
            {"pessimist", FakeLLM::script({Turn{.content = "It will fail."}})}};
  auto opinions = agentkit::parallel("opinions", {node("optimist"), node("pessimist")});
  auto ctx = ctx_for(llms);
  const auto result = opinions.run("Will the launch go well?", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(task_seen(*llms["optimist"]) == "Will the launch go well?");
  CHECK(task_seen(*llms["pessimist"]) == "Will the launch go well?");
  CHECK(result.output == "optimist: It will work.\npessimist: It will fail.");
  const auto record = agentkit::workflow_result(result);
  REQUIRE(record);
  CHECK(record->terminal == std::vector<std::string>{"optimist", "pessimist"});
  CHECK(agentkit::render_result(result) == "optimist: It will work.\npessimist: It will fail.");
  // One batch of two calls: the branches were issued together.
  const auto& history = result.state.history;
  REQUIRE(history.size() >= 2);
  CHECK(history[1].tool_calls.size() == 2);
}

TEST_CASE("a parallel workflow's join makes the answer from the branches' outputs in branch order",
          "[workflow][parallel]") {
  Llms llms{{"optimist", FakeLLM::script({Turn{.content = "yes"}})},
            {"pessimist", FakeLLM::script({Turn{.content = "no"}})}};
  auto opinions = agentkit::parallel("opinions", {node("optimist"), node("pessimist")},
                                     [](const std::string& task, const std::vector<agentkit::NodeOutput>& outputs) {
                                       std::string text = task + " ->";
                                       for (const auto& o : outputs) text += " " + o.node + "=" + o.output;
                                       return text;
                                     });
  auto ctx = ctx_for(llms);
  const auto result = opinions.run("launch?", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(result.output == "launch? -> optimist=yes pessimist=no");
}

TEST_CASE("a parallel workflow on a thread pool runs its branches at the same time", "[workflow][parallel]") {
  // Each branch's tool waits (up to 5 s) until both branches are inside it.
  auto inside = std::make_shared<std::atomic<int>>(0);
  auto meet = agentkit::tool("meet")
                  .doc("Wait at the meeting point until the other branch arrives there too.")
                  .side_effecting(false)
                  .fn([inside] {
                    ++*inside;
                    const auto until = Clock::now() + 5s;
                    while (inside->load() < 2 && Clock::now() < until) std::this_thread::sleep_for(1ms);
                    return std::string(inside->load() >= 2 ? "met" : "alone");
                  });
  Llms llms{{"left", FakeLLM::script({Turn{.tool_calls = {call("m1", "meet")}}, Turn{.content = "left done"}})},
            {"right", FakeLLM::script({Turn{.tool_calls = {call("m1", "meet")}}, Turn{.content = "right done"}})}};
  auto both = agentkit::parallel("both", {node("left", {meet}), node("right", {meet})});
  auto ctx = ctx_for(llms, {.executor = std::make_shared<agentkit::ThreadPoolExecutor>(2)});
  const auto begun = Clock::now();
  const auto result = both.run("meet", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(Clock::now() - begun < 4s);
  CHECK(llms["left"]->requests().at(1).messages.back().text() == "met");
  CHECK(llms["right"]->requests().at(1).messages.back().text() == "met");
}

TEST_CASE("a router runs only the route its host picker names", "[workflow][router]") {
  Llms llms{{"billing", FakeLLM::script({Turn{.content = "Your invoice is attached."}})},
            {"tech", FakeLLM::script({})}};
  auto desk = agentkit::router("desk", {{node("billing"), "invoices"}, {node("tech"), "bugs"}},
                               [](const std::string& task, const RunContext& ctx) {
                                 CHECK(ctx.scope.org_id == 7);
                                 return task.find("invoice") != std::string::npos ? "billing" : "tech";
                               });
  auto ctx = ctx_for(llms, {.scope = {.org_id = 7, .domain_id = 1}});
  const auto result = desk.run("Where is my invoice?", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(result.output == "Your invoice is attached.");
  CHECK(llms["billing"]->calls() == 1);
  CHECK(llms["tech"]->calls() == 0);
  CHECK(agentkit::workflow_result(result)->terminal == std::vector<std::string>{"billing"});
}

TEST_CASE("a router whose picker names no route fails typed, and no route runs", "[workflow][router]") {
  Llms llms{{"billing", FakeLLM::script({})}};
  auto desk = agentkit::router("desk", {{node("billing"), "invoices"}},
                               [](const std::string&, const RunContext&) { return "sales"; });
  auto ctx = ctx_for(llms);
  const auto result = desk.run("Buy more", ctx);
  CHECK(result.stop_reason == StopReason::failed);
  REQUIRE(result.failure);
  CHECK(result.failure->code == ErrorCode::invalid_argument);
  CHECK_THAT(result.failure->message, Catch::Contains("'sales'") && Catch::Contains("'billing'"));
  CHECK(llms["billing"]->calls() == 0);
}

TEST_CASE("a model router repairs a reply that names no route, then runs the route named", "[workflow][router]") {
  Llms llms{{"switchboard", FakeLLM::script({Turn{.content = "Probably something about money?"},
                                             Turn{.content = " 'Billing'. "}})},
            {"billing", FakeLLM::script({Turn{.content = "Refund issued."}})},
            {"tech", FakeLLM::script({})}};
  auto desk = agentkit::model_router("desk", "switchboard",
                                     {{node("billing"), "invoices, refunds and payment methods"},
                                      {node("tech"), "bugs, outages and error messages"}});
  auto ctx = ctx_for(llms);
  const auto result = desk.run("I was charged twice", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(result.output == "Refund issued.");
  CHECK(task_seen(*llms["billing"]) == "I was charged twice");
  CHECK(llms["tech"]->calls() == 0);

  const auto& router_calls = llms["switchboard"]->requests();
  REQUIRE(router_calls.size() == 2);
  CHECK(router_calls[0].tools.empty());  // a routing call offers no tools
  CHECK_THAT(router_calls[0].system, Catch::Contains("- billing: invoices, refunds and payment methods") &&
                                         Catch::Contains("- tech: bugs, outages and error messages"));
  CHECK(router_calls[0].messages.back().text() == "I was charged twice");
  CHECK_THAT(router_calls[1].messages.back().text(), Catch::Contains("is not one of the routes"));
  CHECK(result.iterations == 2);
}

TEST_CASE("a model router that never names a route fails with protocol after max_repairs", "[workflow][router]") {
  Llms llms{{"switchboard", FakeLLM::script({Turn{.content = "hmm"}, Turn{.content = "sales"}})},
            {"billing", FakeLLM::script({})}};
  auto desk = agentkit::model_router("desk", "switchboard", {{node("billing"), "invoices"}}, {.max_repairs = 1});
  auto ctx = ctx_for(llms);
  const auto result = desk.run("Buy more", ctx);
  CHECK(result.stop_reason == StopReason::failed);
  REQUIRE(result.failure);
  CHECK(result.failure->code == ErrorCode::protocol);
  CHECK_THAT(result.failure->message, Catch::Contains("named no route"));
  CHECK(llms["switchboard"]->calls() == 2);
  CHECK(llms["billing"]->calls() == 0);
}

TEST_CASE("a node that does not answer fails the workflow with its code, and later nodes do not run",
          "[workflow][sequence]") {
  // draft hits its max_iterations (budget_exhausted) after a bad call.
  Llms llms{{"research", FakeLLM::script({Turn{.content = "facts"}})},
            {"draft", FakeLLM::script({Turn{.tool_calls = {call("x1", "no_such_tool")}}})},
            {"review", FakeLLM::script({})}};
  auto pipeline =
      agentkit::sequence("support_reply", {node("research"), node("draft", {}, {.max_iterations = 1}), node("review")});
  auto ctx = ctx_for(llms);
  const auto result = pipeline.run("How long do refunds take?", ctx);
  CHECK(result.stop_reason == StopReason::failed);
  REQUIRE(result.failure);
  CHECK(result.failure->code == ErrorCode::budget_exhausted);
  CHECK_THAT(result.failure->message, Catch::Contains("workflow 'support_reply': node 'draft' failed") &&
                                          Catch::Contains("max_iterations"));
  CHECK(result.output.empty());
  CHECK_FALSE(agentkit::workflow_result(result));
  CHECK(llms["review"]->calls() == 0);
}

TEST_CASE("a node that suspends for approval suspends the workflow, and the decision routes to the node, which goes on",
          "[workflow][sequence][approval]") {
  auto refunds = std::make_shared<int>(0);
  auto refund = agentkit::tool("refund")
                    .doc("Refund an order to the customer's original payment method.")
                    .side_effecting(true)
                    .requires_approval()
                    .params("order")
                    .fn([refunds](const std::string& order) {
                      ++*refunds;
                      return "refunded " + order;
                    });
  Llms llms{{"clerk", FakeLLM::script({Turn{.tool_calls = {call("r1", "refund", {{"order", "A-1"}})}},
                                       Turn{.content = "A-1 is refunded."}})},
            {"notify", FakeLLM::script({Turn{.content = "Dear customer, A-1 is refunded."}})}};
  auto pipeline = agentkit::sequence("refund_flow", {node("clerk", {refund}), node("notify")});
  auto ctx = ctx_for(llms);
  const auto suspended = pipeline.run("Refund order A-1", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  REQUIRE(suspended.suspended->pending.size() == 1);
  const agentkit::ToolCall pending = suspended.suspended->pending[0];
  CHECK_THAT(pending.id, Catch::EndsWith("/r1"));
  CHECK(pending.name == "refund");
  CHECK(suspended.suspended->agents[0] == "refund_flow/clerk");
  CHECK(*refunds == 0);
  CHECK(llms["notify"]->calls() == 0);  // nothing after the node ran on a partial result

  SECTION("approved: the node finishes, the next node runs") {
    const auto done = pipeline.resume(suspended.state.run_id, {{pending.id, agentkit::Decision::approve()}}, ctx);
    REQUIRE(done.stop_reason == StopReason::answered);
    CHECK(done.output == "Dear customer, A-1 is refunded.");
    CHECK(*refunds == 1);
    CHECK(task_seen(*llms["notify"]) == "A-1 is refunded.");
  }
  SECTION("without a store it fails the workflow instead of passing a partial result on") {
    Llms again{{"clerk", FakeLLM::script({Turn{.tool_calls = {call("r1", "refund", {{"order", "A-1"}})}}})},
               {"notify", FakeLLM::script({})}};
    auto plain = ctx_for(again);
    plain.store = nullptr;
    const auto result = pipeline.run("Refund order A-1", plain);
    CHECK(result.stop_reason == StopReason::failed);
    REQUIRE(result.failure);
    CHECK(result.failure->code == ErrorCode::unimplemented);
    CHECK_THAT(result.failure->message, Catch::Contains("node 'clerk' failed") &&
                                            Catch::Contains("suspended awaiting approval"));
    CHECK(again["notify"]->calls() == 0);
  }
}

TEST_CASE("as_tool reports a sub-agent that did not answer as a tool error, not as its answer", "[workflow][as_tool]") {
  Llms llms{{"lead", FakeLLM::script({Turn{.tool_calls = {call("c1", "helper", {{"task", "do it"}})}},
                                      Turn{.content = "the helper failed"}})},
            {"helper", FakeLLM::script({Turn{.tool_calls = {call("x1", "no_such_tool")}}})}};
  auto helper = node("helper", {}, {.max_iterations = 1});
  Agent lead("lead", "lead", "You delegate.",
             react({agentkit::as_tool(helper, {.name = "helper",
                                               .description = "Delegate a sub-task to the helper agent.",
                                               .side_effecting = false})}));
  auto ctx = ctx_for(llms);
  const auto result = lead.run("go", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  const auto seen = llms["lead"]->requests().at(1).messages.back();
  CHECK(seen.role == Role::tool);
  CHECK(seen.is_error);
  CHECK_THAT(seen.text(), Catch::Contains("sub-agent 'helper' did not answer: max_iterations [code budget_exhausted]"));
}

TEST_CASE("a workflow nests in a workflow as a node", "[workflow][nested]") {
  Llms llms{{"optimist", FakeLLM::script({Turn{.content = "It will work."}})},
            {"pessimist", FakeLLM::script({Turn{.content = "It will fail."}})},
            {"judge", FakeLLM::script({Turn{.content = "Launch, with a rollback plan."}})}};
  auto opinions = std::make_shared<const Agent>(agentkit::parallel("opinions", {node("optimist"), node("pessimist")}));
  auto decide = agentkit::sequence("decide", {opinions, node("judge")});
  auto ctx = ctx_for(llms);
  const auto result = decide.run("Launch on Friday?", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(task_seen(*llms["judge"]) == "optimist: It will work.\npessimist: It will fail.");
  CHECK(result.output == "Launch, with a rollback plan.");
  const auto record = agentkit::workflow_result(result);
  REQUIRE(record);
  CHECK(record->outputs.at("opinions") == "optimist: It will work.\npessimist: It will fail.");
}

TEST_CASE("a workflow exposed with as_tool: the outer model reads its rendered result", "[workflow][as_tool]") {
  Llms llms{{"lead", FakeLLM::script({Turn{.tool_calls = {call("c1", "get_opinions", {{"task", "Launch?"}})}},
                                      Turn{.content = "Mixed views."}})},
            {"optimist", FakeLLM::script({Turn{.content = "yes"}})},
            {"pessimist", FakeLLM::script({Turn{.content = "no"}})}};
  auto opinions = std::make_shared<const Agent>(agentkit::parallel("opinions", {node("optimist"), node("pessimist")}));
  Agent lead("lead", "lead", "You decide.",
             react({agentkit::as_tool(opinions, {.name = "get_opinions",
                                                 .description = "Ask an optimist and a pessimist for their views.",
                                                 .side_effecting = false})}));
  auto ctx = ctx_for(llms);
  const auto result = lead.run("Should we launch?", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(task_seen(*llms["optimist"]) == "Launch?");
  const auto seen = llms["lead"]->requests().at(1).messages.back();
  CHECK_FALSE(seen.is_error);
  CHECK(seen.text() == "optimist: yes\npessimist: no");
}

TEST_CASE("a workflow recovered after a crash between nodes does not run the finished node again",
          "[workflow][durable]") {
  auto store = std::make_shared<agentkit_test::RecordingStore>();
  Llms first{{"research", FakeLLM::script({Turn{.content = "facts"}})},
             {"draft", FakeLLM::script({Turn{.content = "draft one"}})}};
  auto pipeline = agentkit::sequence("reply", {node("research"), node("draft")});
  auto ctx = ctx_for(first, {.store = store});
  REQUIRE(pipeline.run("refunds?", ctx, {.run_id = "wf-1"}).output == "draft one");
  CHECK(agentkit::load_run(*store, ctx.scope, "wf-1/0/research"));  // each node is a durable sub-run
  CHECK(agentkit::load_run(*store, ctx.scope, "wf-1/0/draft"));

  // The process dies right after the checkpoint that started draft, before
  // draft's sub-run saved anything.
  const std::string key = agentkit::state::scoped_key(ctx.scope, "runs/wf-1");
  const auto acts = store->checkpoints_at(key, "act");
  REQUIRE(acts.size() == 2);  // one batch per node
  store->inner.put(key, acts[1]);
  store->inner.erase(agentkit::state::scoped_key(ctx.scope, "runs/wf-1/0/draft"));

  Llms later{{"research", FakeLLM::script({})}, {"draft", FakeLLM::script({Turn{.content = "draft two"}})}};
  auto ctx2 = ctx_for(later, {.store = store});
  const auto recovered = pipeline.recover("wf-1", ctx2);
  REQUIRE(recovered.stop_reason == StopReason::answered);
  CHECK(recovered.output == "draft two");
  CHECK(later["research"]->calls() == 0);  // research's result came from the workflow's checkpoint
  CHECK(later["draft"]->calls() == 1);
  CHECK(task_seen(*later["draft"]) == "facts");
}

TEST_CASE("cancelling a workflow cancels the node that is running, and the next node never runs",
          "[workflow][cancel]") {
  const auto watch = agentkit_test::watch_tool();
  Llms llms{{"watcher", FakeLLM::script({Turn{.tool_calls = {call("w1", "watch")}}, Turn{.content = "never"}})},
            {"report", FakeLLM::script({Turn{.content = "never"}})}};
  auto pipeline = agentkit::sequence("guard", {node("watcher", {watch.tool}), node("report")});
  auto ctx = ctx_for(llms);
  std::thread host([&, token = ctx.cancellation] {
    eventually([&] { return watch.started->load(); });
    token.cancel();
  });
  const auto begun = Clock::now();
  const auto result = pipeline.run("Watch the gate", ctx);
  host.join();
  CHECK(result.stop_reason == StopReason::cancelled);
  CHECK(Clock::now() - begun < 4s);
  CHECK(eventually([&] { return watch.saw_cancel->load(); }));
  CHECK(llms["watcher"]->calls() == 1);
  CHECK(llms["report"]->calls() == 0);
}

TEST_CASE("a workflow with no nodes, a null node or two nodes of one name is refused when built",
          "[workflow][definition]") {
  CHECK_THROWS_AS(agentkit::sequence("empty", {}), agentkit::WorkflowDefinitionError);
  CHECK_THROWS_WITH(agentkit::parallel("empty", {}), Catch::Contains("'empty' has no nodes"));
  CHECK_THROWS_WITH(agentkit::sequence("holes", {node("a"), nullptr}), Catch::Contains("node 2 is null"));
  CHECK_THROWS_WITH(agentkit::parallel("twins", {node("a"), node("a")}), Catch::Contains("two nodes are named 'a'"));
  CHECK_THROWS_AS(agentkit::router("desk", {{node("a"), "x"}}, nullptr), agentkit::WorkflowDefinitionError);
  try {
    agentkit::model_router("desk", "m", {});
    FAIL("an empty router was built");
  } catch (const agentkit::Error& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
  }
}

TEST_CASE("a workflow whose nodes talk to the OpenAI adapter over loopback", "[workflow][loopback][openai]") {
  using agentkit_test::json_reply;
  const auto reply = [](const std::string& text) {
    return json_reply({{"choices", {{{"index", 0}, {"finish_reason", "stop"},
                                     {"message", {{"role", "assistant"}, {"content", text}}}}}},
                       {"usage", {{"prompt_tokens", 7}, {"completion_tokens", 3}}}});
  };
  agentkit::testing::WireServer server;
  server.enqueue(reply("Refunds take 5 days."));
  server.enqueue(reply("Dear customer, your refund arrives within 5 days."));
  const std::string model = "openai/gpt-4o-mini@" + server.base_url() + "/v1";
  auto research = std::make_shared<const Agent>("research", model, "You research.");
  auto draft = std::make_shared<const Agent>("draft", model, "You draft replies.");
  auto pipeline = agentkit::sequence("support_reply", {research, draft});
  auto ctx = make_test_ctx();
  ctx.models = agentkit::providers::model_resolver({.openai_api_key = "sk-test-key", .stream = false});
  const auto result = pipeline.run("How long do refunds take?", ctx);

  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(result.output == "Dear customer, your refund arrives within 5 days.");
  CHECK(result.usage.input_tokens == 14);
  const auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  const Json first = Json::parse(requests[0].body);
  const Json second = Json::parse(requests[1].body);
  CHECK(first["messages"][0] == Json({{"role", "system"}, {"content", "You research."}}));
  CHECK(first["messages"][1] == Json({{"role", "user"}, {"content", "How long do refunds take?"}}));
  CHECK(second["messages"][0] == Json({{"role", "system"}, {"content", "You draft replies."}}));
  CHECK(second["messages"][1] == Json({{"role", "user"}, {"content", "Refunds take 5 days."}}));
}
