// Handoffs (AgentOptions::handoffs): the model sees a transfer_to_<agent>
// tool per target; calling it hands the run to the target (its prompt,
// tools and settings), with the history carried (filtered by keep, a call
// never without its results); the result names the agent that answered; a
// handoff is an event and a span; a suspended or crashed run resumes under
// the target; a stored active agent the graph does not hold fails typed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/errors.h>
#include <agentkit/function_tool.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/span_recorder.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/events_of.h"
#include "../helpers/span_named.h"
#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::AgentOptions;
using agentkit::Decision;
using agentkit::Handoff;
using agentkit::HandoffOccurred;
using agentkit::Json;
using agentkit::Message;
using agentkit::Role;
using agentkit::StopReason;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using agentkit_test::call;

namespace {

struct Counted {
  std::shared_ptr<std::atomic<int>> runs = std::make_shared<std::atomic<int>>(0);
  agentkit::ToolPtr tool;
};

Counted lookup_tool() {
  Counted c;
  c.tool = agentkit::tool("lookup_order")
               .doc("Look up a customer order by id and return its status line.")
               .side_effecting(false)
               .params("order_id")
               .fn([runs = c.runs](const std::string& id) {
                 ++*runs;
                 return "order " + id + ": delivered, damaged";
               });
  return c;
}

Counted refund_tool(bool needs_approval) {
  Counted c;
  c.tool = agentkit::tool("refund")
               .doc("Issue a refund against a customer order and return the confirmation id.")
               .side_effecting(true)
               .requires_approval(needs_approval)
               .params("order_id", "amount_usd")
               .fn([runs = c.runs](const std::string& order_id, double amount) {
                 ++*runs;
                 return "refunded " + std::to_string(static_cast<int>(amount)) + " on " + order_id;
               });
  return c;
}

// Triage (with lookup_order) hands off to billing (with refund).
struct Desk {
  Counted lookup = lookup_tool();
  Counted refund;
  std::shared_ptr<const Agent> billing;
  std::shared_ptr<const Agent> triage;

  explicit Desk(bool refund_needs_approval = false, std::function<bool(const Message&)> keep = nullptr)
      : refund(refund_tool(refund_needs_approval)) {
    billing = std::make_shared<const Agent>("billing", "fake", "You are billing. You issue refunds.",
                                            react({refund.tool}));
    AgentOptions options;
    options.handoffs.push_back({billing, "Refunds, invoices and charges.", std::move(keep)});
    triage = std::make_shared<const Agent>("triage", "fake", "You are triage. Route the customer.",
                                           react({lookup.tool}), std::move(options));
  }
};

struct EventLog final : agentkit::Observer {
  std::vector<agentkit::Event> events;
  void on_event(const agentkit::Event& e) override { events.push_back(e); }
};

// What each model call was offered: tool name -> description.
class SeesTools final : public agentkit::Model {
 public:
  explicit SeesTools(std::shared_ptr<FakeLLM> inner) : inner_(std::move(inner)) {}
  agentkit::ModelResponse complete(const agentkit::ModelRequest& request, agentkit::RunContext& ctx) override {
    std::map<std::string, std::string> tools;
    for (const agentkit::ToolSpec* spec : request.tools) tools[spec->name] = spec->description;
    seen.push_back(std::move(tools));
    return inner_->complete(request, ctx);
  }
  std::vector<std::map<std::string, std::string>> seen;

 private:
  std::shared_ptr<FakeLLM> inner_;
};


}  // namespace

TEST_CASE("the model sees a transfer_to tool per handoff target with its description", "[handoff]") {
  Desk desk;
  auto shipping = std::make_shared<const Agent>("shipping", "fake", "You track parcels.", react({}));
  AgentOptions options;
  options.handoffs.push_back({desk.billing, "Refunds, invoices and charges."});
  options.handoffs.push_back({shipping});
  Agent triage("triage", "fake", "Route the customer.", react({desk.lookup.tool}), options);
  auto llm = FakeLLM::script({Turn{.content = "Hello."}});
  auto model = std::make_shared<SeesTools>(llm);
  auto ctx = make_test_ctx({.llm = model});
  REQUIRE(triage.run("Hi", ctx).stop_reason == StopReason::answered);
  REQUIRE(model->seen.size() == 1);
  const auto tools = model->seen[0];
  CHECK(tools.size() == 3);
  CHECK(tools.count("lookup_order") == 1);
  REQUIRE(tools.count("transfer_to_billing") == 1);
  CHECK(tools.at("transfer_to_billing") == "Refunds, invoices and charges.");
  REQUIRE(tools.count("transfer_to_shipping") == 1);
  CHECK(tools.at("transfer_to_shipping") == "Hand the conversation to shipping.");
  // Sorted by name, like the agent's own tools.
  const auto requests = llm->requests();
  CHECK(requests.at(0).tools == std::vector<std::string>{"lookup_order", "transfer_to_billing", "transfer_to_shipping"});
}

TEST_CASE("after a handoff the target's prompt, tools and the whole history reach its model", "[handoff]") {
  Desk desk;
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "lookup_order", {{"order_id", "A-1"}}), call("h1", "transfer_to_billing")}},
      Turn{.tool_calls = {call("c2", "refund", {{"order_id", "A-1"}, {"amount_usd", 20}})}},
      Turn{.content = "Refunded $20 on A-1."},
  });
  auto ctx = make_test_ctx({.llm = llm});
  auto result = desk.triage->run("My order A-1 arrived damaged, I want my money back", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(result.output == "Refunded $20 on A-1.");
  CHECK(result.agent == "billing");
  CHECK(result.state.agent == "triage");  // the agent the run started with
  CHECK(result.state.handoff.agent == "billing");
  CHECK(result.state.handoff.from == "triage");
  CHECK(*desk.lookup.runs == 1);  // the batch's other call ran as usual
  CHECK(*desk.refund.runs == 1);

  const auto requests = llm->requests();
  REQUIRE(requests.size() == 3);
  CHECK(requests[0].system == "You are triage. Route the customer.");
  CHECK(requests[1].system == "You are billing. You issue refunds.");
  CHECK(requests[1].tools == std::vector<std::string>{"refund"});
  // The whole history: the task, the turn with both calls, both results.
  const auto seen = requests[1].messages;
  REQUIRE(seen.size() == 4);
  CHECK(seen[1].tool_calls.size() == 2);
  CHECK(seen[2].tool_call_id == "c1");
  CHECK(seen[3].tool_call_id == "h1");
  CHECK(seen[3].text() == "Transferred to billing.");
  CHECK_FALSE(seen[3].is_error);
  CHECK(requests[2].system == "You are billing. You issue refunds.");
}

TEST_CASE("a run without a handoff names its own agent in the result", "[handoff]") {
  Desk desk;
  auto llm = FakeLLM::script({Turn{.content = "Your order is on its way."}});
  auto ctx = make_test_ctx({.llm = llm});
  auto result = desk.triage->run("Where is A-1?", ctx);
  CHECK(result.agent == "triage");
  CHECK_FALSE(result.state.handoff.happened());
  CHECK_FALSE(result.state.to_json().contains("handoff"));
}

TEST_CASE("a handoff is a HandoffOccurred event and a span under the run", "[handoff][trace]") {
  Desk desk;
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("h1", "transfer_to_billing")}}, Turn{.content = "Done."}});
  auto log = std::make_shared<EventLog>();
  auto ctx = make_test_ctx({.llm = llm, .observer = log});
  auto recorder = std::make_shared<agentkit::testing::SpanRecorder>();
  ctx.tracer = recorder;
  REQUIRE(desk.triage->run("Refund A-1", ctx).stop_reason == StopReason::answered);

  std::size_t at = log->events.size();
  for (std::size_t i = 0; i < log->events.size(); ++i) {
    if (std::holds_alternative<HandoffOccurred>(log->events[i])) at = i;
  }
  REQUIRE(at < log->events.size());
  const auto& handoff = std::get<HandoffOccurred>(log->events[at]);
  CHECK(handoff.from == "triage");
  CHECK(handoff.to == "billing");
  CHECK(handoff.call_id == "h1");
  CHECK(handoff.at == 3);
  CHECK(agentkit::info_of(log->events[at]).agent_path() == "triage");
  // Later events come from the target.
  bool later_model_call = false;
  for (std::size_t i = at + 1; i < log->events.size(); ++i) {
    if (std::holds_alternative<agentkit::ModelCallStarted>(log->events[i])) {
      later_model_call = true;
      CHECK(agentkit::info_of(log->events[i]).agent_path() == "billing");
    }
  }
  CHECK(later_model_call);

  const auto spans = recorder->spans();
  const agentkit::trace::Span* span = agentkit_test::span_named(spans, "handoff billing");
  const agentkit::trace::Span* run = agentkit_test::span_named(spans, "invoke_agent triage");
  REQUIRE(span);
  REQUIRE(run);
  CHECK(span->parent_span_id == run->span_id);
  REQUIRE(span->attribute("agentkit.handoff.from"));
  CHECK(std::get<std::string>(*span->attribute("agentkit.handoff.from")) == "triage");
  CHECK(std::get<std::string>(*span->attribute("gen_ai.tool.call.id")) == "h1");
}

TEST_CASE("two transfers in one turn: the first wins and the other gets an error result", "[handoff]") {
  Desk desk;
  auto shipping = std::make_shared<const Agent>("shipping", "fake", "You are shipping.", react({}));
  AgentOptions options;
  options.handoffs = {{desk.billing}, {shipping}};
  Agent triage("triage", "fake", "Route the customer.", react({}), options);
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("h1", "transfer_to_shipping"), call("h2", "transfer_to_billing")}},
      Turn{.content = "Your parcel is in Porto."},
  });
  auto ctx = make_test_ctx({.llm = llm});
  auto result = triage.run("Where is my parcel, and refund it", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(result.agent == "shipping");
  CHECK(result.state.handoff.handoffs == 1);
  const auto requests = llm->requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[1].system == "You are shipping.");
  const auto seen = requests[1].messages;
  REQUIRE(seen.size() == 4);
  CHECK(seen[2].tool_call_id == "h1");
  CHECK_FALSE(seen[2].is_error);
  CHECK(seen[3].tool_call_id == "h2");
  CHECK(seen[3].is_error);
  CHECK_THAT(seen[3].text(), Catch::Contains("only one handoff per turn"));
}

TEST_CASE("keep filters what the target sees before the handoff, a call with its results", "[handoff]") {
  // Hide the lookup's result: its call goes with it, the transfer stays.
  Desk desk(false, [](const Message& m) { return m.tool_name != "lookup_order"; });
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "lookup_order", {{"order_id", "A-1"}})}},
      Turn{.content = "Let me get billing.", .tool_calls = {call("h1", "transfer_to_billing")}},
      Turn{.tool_calls = {call("c2", "refund", {{"order_id", "A-1"}, {"amount_usd", 20}})}},
      Turn{.content = "Refunded."},
  });
  auto ctx = make_test_ctx({.llm = llm});
  auto result = desk.triage->run("Refund A-1", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(result.state.history.size() == 8);  // the history itself is whole

  const auto requests = llm->requests();
  REQUIRE(requests.size() == 4);
  const auto first = requests[2].messages;  // billing's first call
  REQUIRE(first.size() == 3);
  CHECK(first[0].text() == "Refund A-1");  // the task always stays
  REQUIRE(first[1].tool_calls.size() == 1);
  CHECK(first[1].tool_calls[0].id == "h1");
  CHECK(first[2].tool_call_id == "h1");
  for (const auto& m : first) {
    CHECK(m.tool_call_id != "c1");
    for (const auto& c : m.tool_calls) CHECK(c.id != "c1");
  }
  // What came after the handoff is not filtered.
  const auto second = requests[3].messages;
  REQUIRE(second.size() == 5);
  CHECK(second[4].tool_call_id == "c2");
}

TEST_CASE("the target's context policy estimates only what keep shows it: a hidden message never compacts",
          "[handoff][context_policy]") {
  // Triage's lookup returns a long record (~2,500 tokens) that keep hides
  // from billing, whose context budget is 1,000 tokens.
  auto lookup = agentkit::tool("lookup_order")
                    .doc("Look up a customer order by id and return its full record.")
                    .side_effecting(false)
                    .params("order_id")
                    .fn([](const std::string& id) { return "order " + id + ": " + std::string(10000, 'x'); });
  AgentOptions billing_options;
  billing_options.context_policy = agentkit::ContextPolicy{.max_tokens = 1000};
  auto billing =
      std::make_shared<const Agent>("billing", "fake", "You are billing.", react({}), std::move(billing_options));
  AgentOptions options;
  options.handoffs.push_back({billing, "Refunds.", [](const Message& m) { return m.tool_name != "lookup_order"; }});
  Agent triage("triage", "fake", "Route the customer.", react({lookup}), std::move(options));
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "lookup_order", {{"order_id", "A-1"}})}},
      Turn{.tool_calls = {call("h1", "transfer_to_billing")}},
      Turn{.content = "Refunded."},
  });
  auto log = std::make_shared<EventLog>();
  auto ctx = make_test_ctx({.llm = llm, .observer = log});
  const auto result = triage.run("Refund A-1", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(result.agent == "billing");
  REQUIRE(result.state.history.size() == 6);
  REQUIRE(result.state.history[2].tool_name == "lookup_order");
  CHECK(agentkit::estimate_tokens(result.state.history[2]) > 1000);  // alone over billing's budget

  // Billing was shown the task and the transfer (well within its budget),
  // so its window was never compacted.
  const auto requests = llm->requests();
  REQUIRE(requests.size() == 3);
  CHECK(requests[2].messages.size() == 3);
  CHECK(agentkit_test::events_of<agentkit::ContextCompacted>(log->events).empty());
  CHECK_FALSE(result.state.window.compacted());
}

TEST_CASE("what keep hides from the target never reaches it through a summary of its window",
          "[handoff][context_policy]") {
  auto lookup = agentkit::tool("lookup_order")
                    .doc("Look up a customer order by id and return its full record.")
                    .side_effecting(false)
                    .params("order_id")
                    .fn([](const std::string& id) { return "order " + id + ": card holder SSN 123-45-6789"; });
  auto notes = agentkit::tool("billing_notes")
                   .doc("Read the billing department's notes on an order.")
                   .side_effecting(false)
                   .params("order_id")
                   .fn([](const std::string& id) { return "notes on " + id + ": " + std::string(2000, 'n'); });
  AgentOptions billing_options;
  billing_options.context_policy = agentkit::ContextPolicy{.max_tokens = 300, .summarize = true};
  auto billing = std::make_shared<const Agent>("billing", "fake", "You are billing.", react({notes}),
                                               std::move(billing_options));
  AgentOptions options;
  options.handoffs.push_back({billing, "Refunds.", [](const Message& m) { return m.tool_name != "lookup_order"; }});
  Agent triage("triage", "fake", "Route the customer.", react({lookup}), std::move(options));
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "lookup_order", {{"order_id", "A-1"}})}},
      Turn{.tool_calls = {call("h1", "transfer_to_billing")}},
      Turn{.tool_calls = {call("n1", "billing_notes", {{"order_id", "A-1"}})}},
      Turn{.content = "Triage handed the refund of A-1 to billing."},  // the summary
      Turn{.content = "Refunded."},
  });
  auto ctx = make_test_ctx({.llm = llm});
  const auto result = triage.run("Refund A-1", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(result.state.window.compacted());
  const auto requests = llm->requests();
  REQUIRE(requests.size() == 5);
  REQUIRE(requests[3].system == agentkit::ContextPolicy{}.summary_prompt);
  const std::string transcript = requests[3].messages.at(0).text();
  CHECK_THAT(transcript, Catch::Contains("transfer_to_billing"));  // what billing was shown is summarised
  CHECK_THAT(transcript, !Catch::Contains("123-45-6789"));         // what keep hid is not
  for (const auto& m : requests[4].messages) CHECK_THAT(m.text(), !Catch::Contains("123-45-6789"));
}

TEST_CASE("a keep filter that throws fails the run typed, under a context policy too", "[handoff][context_policy]") {
  AgentOptions billing_options;
  SECTION("no context policy") {}
  SECTION("a context policy") { billing_options.context_policy = agentkit::ContextPolicy{.max_tokens = 1000}; }
  auto billing =
      std::make_shared<const Agent>("billing", "fake", "You are billing.", react({}), std::move(billing_options));
  AgentOptions options;
  options.handoffs.push_back(
      {billing, "Refunds.", [](const Message&) -> bool { throw std::runtime_error("filter offline"); }});
  Agent triage("triage", "fake", "Route the customer.", react({}), std::move(options));
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("h1", "transfer_to_billing")}}, Turn{.content = "never"}});
  auto ctx = make_test_ctx({.llm = llm});
  const auto result = triage.run("Refund A-1", ctx);
  REQUIRE(result.stop_reason == StopReason::failed);
  REQUIRE(result.failure);
  CHECK(result.failure->message == "the handoff's keep filter failed: filter offline");
  CHECK(llm->calls() == 1);  // billing's model was never asked
}

TEST_CASE("a run suspended on the target's tool resumes under the target", "[handoff][approval]") {
  Desk desk(true);
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("h1", "transfer_to_billing")}},
      Turn{.tool_calls = {call("c2", "refund", {{"order_id", "A-1"}, {"amount_usd", 20}})}},
      Turn{.content = "Refunded $15."},
  });
  auto ctx = make_test_ctx({.llm = llm});
  auto suspended = desk.triage->run("Refund A-1", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  CHECK(suspended.agent == "billing");
  CHECK(*desk.refund.runs == 0);

  SECTION("from the state handed back") {
    // An edit is checked against the target's tool, not the starting agent's.
    auto resumed = desk.triage->resume(suspended.state,
                                       {{"c2", Decision::edit({{"order_id", "A-1"}, {"amount_usd", 15}})}}, ctx);
    REQUIRE(resumed.stop_reason == StopReason::answered);
    CHECK(resumed.agent == "billing");
  }
  SECTION("by run id, in a fresh context") {
    auto again = make_test_ctx({.llm = llm});
    again.store = ctx.store;
    auto resumed = desk.triage->resume(suspended.state.run_id, {{"c2", Decision::approve()}}, again);
    REQUIRE(resumed.stop_reason == StopReason::answered);
    CHECK(resumed.agent == "billing");
  }
  CHECK(*desk.refund.runs == 1);
  const auto requests = llm->requests();
  REQUIRE(requests.size() == 3);
  CHECK(requests[2].system == "You are billing. You issue refunds.");
  CHECK(requests[2].tools == std::vector<std::string>{"refund"});
}

TEST_CASE("a run recovered after a handoff continues under the target", "[handoff][recovery]") {
  Desk desk;
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("h1", "transfer_to_billing")}},
      Turn{.content = "Billing here: refunded."},
  });
  auto ctx = make_test_ctx({.llm = llm});
  {
    auto handle = desk.triage->start("Refund A-1", ctx);
    bool handed_off = false;
    while (!handed_off && !handle.poll()) {
      for (const auto& e : handle.drain_events()) handed_off = handed_off || std::holds_alternative<HandoffOccurred>(e);
      if (!handed_off) handle.wait_ready(std::chrono::milliseconds(10));
    }
    REQUIRE(handed_off);
    CHECK(llm->requests().size() == 1);
  }  // the process "dies" here: the handle is dropped after the handoff's checkpoint
  const auto runs = agentkit::interrupted_runs(*ctx.store, ctx.scope);
  REQUIRE(runs.size() == 1);
  auto recovered = desk.triage->recover(runs[0], ctx);
  REQUIRE(recovered.stop_reason == StopReason::answered);
  CHECK(recovered.agent == "billing");
  const auto requests = llm->requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[1].system == "You are billing. You issue refunds.");
  CHECK(requests[1].tools == std::vector<std::string>{"refund"});
}

TEST_CASE("a stored active agent the starting agent's graph does not hold fails the run typed", "[handoff][durable]") {
  Desk desk(true);
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("h1", "transfer_to_billing")}},
      Turn{.tool_calls = {call("c2", "refund", {{"order_id", "A-1"}, {"amount_usd", 20}})}},
  });
  auto ctx = make_test_ctx({.llm = llm});
  auto suspended = desk.triage->run("Refund A-1", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  // A redeployed triage that no longer hands off to billing.
  Agent triage("triage", "fake", "Route the customer.", react({desk.lookup.tool}));
  auto resumed = triage.resume(suspended.state.run_id, {{"c2", Decision::approve()}}, ctx);
  CHECK(resumed.stop_reason == StopReason::failed);
  REQUIRE(resumed.failure);
  CHECK(resumed.failure->code == agentkit::ErrorCode::not_found);
  CHECK_THAT(resumed.failure->message, Catch::Contains("'billing'"));
  CHECK(*desk.refund.runs == 0);
  CHECK(llm->requests().size() == 2);
}

TEST_CASE("RunState carries the handoff through its document and refuses one that does not fit", "[handoff][run_state]") {
  agentkit::RunState state;
  state.run_id = "run-1";
  state.agent = "triage";
  state.task = "Refund A-1";
  state.history = {Message::user("Refund A-1"), Message::assistant("One moment.")};
  state.handoff = {.agent = "billing", .from = "triage", .at = 2, .handoffs = 1};
  const Json doc = state.to_json();
  REQUIRE(doc.contains("handoff"));
  const auto back = agentkit::RunState::from_json(doc);
  CHECK(back.handoff.agent == "billing");
  CHECK(back.handoff.from == "triage");
  CHECK(back.handoff.at == 2);
  CHECK(back.handoff.handoffs == 1);

  Json tampered = doc;
  tampered["handoff"]["at"] = 9;
  CHECK_THROWS_WITH(agentkit::RunState::from_json(tampered), Catch::Contains("handoff"));
  tampered = doc;
  tampered["handoff"]["agent"] = "";
  CHECK_THROWS_AS(agentkit::RunState::from_json(tampered), agentkit::Error);
  tampered = doc;
  tampered["handoff"]["at"] = -1;
  CHECK_THROWS_AS(agentkit::RunState::from_json(tampered), agentkit::Error);
}

TEST_CASE("Agent's constructor refuses handoffs that cannot work, naming the agent", "[handoff]") {
  Desk desk;
  const auto build = [](std::vector<Handoff> handoffs, std::vector<agentkit::ToolPtr> tools = {}) {
    AgentOptions options;
    options.handoffs = std::move(handoffs);
    return Agent("triage", "fake", "Route.", react(std::move(tools)), std::move(options));
  };
  CHECK_THROWS_AS(build({{nullptr}}), agentkit::ToolDefinitionError);
  CHECK_THROWS_WITH(build({{desk.billing}, {desk.billing}}), Catch::Contains("triage") && Catch::Contains("billing"));
  auto spaced = std::make_shared<const Agent>("billing desk", "fake", "You bill.", react({}));
  CHECK_THROWS_WITH(build({{spaced}}), Catch::Contains("'transfer_to_billing desk'"));
  auto clash = agentkit::tool("transfer_to_billing")
                   .doc("A tool of the agent's own that takes the transfer tool's name.")
                   .side_effecting(false)
                   .fn([] { return std::string("no"); });
  CHECK_THROWS_WITH(build({{desk.billing}}, {clash}), Catch::Contains("clashes"));
  // Two different agents of one name in the graph: a resume could not tell them apart.
  auto other_billing = std::make_shared<const Agent>("billing", "fake", "Another billing.", react({}));
  AgentOptions shipping_options;
  shipping_options.handoffs = {{other_billing}};
  auto shipping = std::make_shared<const Agent>("shipping", "fake", "You ship.", react({}), shipping_options);
  CHECK_THROWS_WITH(build({{desk.billing}, {shipping}}), Catch::Contains("two different agents named 'billing'"));
  CHECK_NOTHROW(build({{desk.billing}, {std::make_shared<const Agent>("shipping", "fake", "You ship.", react({}),
                                                                   AgentOptions{.handoffs = {{desk.billing}}})}}));
}
