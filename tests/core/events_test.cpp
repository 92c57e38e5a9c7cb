// What a run tells its host: every outcome of a call is an event, whether
// the call ran, was refused before running, or waited for a decision.
#include <catch2/catch.hpp>

#include <mutex>
#include <thread>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/executor.h>
#include <agentkit/function_tool.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::ApprovalDecided;
using agentkit::Decision;
using agentkit::Event;
using agentkit::Json;
using agentkit::StopReason;
using agentkit::ToolCall;
using agentkit::ToolCallRefused;
using agentkit::ToolCallStarted;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using agentkit_test::call;

namespace {

// Keeps every event it is handed, from any thread.
class Recorder final : public agentkit::Observer {
 public:
  void on_event(const Event& event) override {
    std::lock_guard lock(mutex_);
    events_.push_back(event);
  }
  template <class T>
  std::vector<T> all() const {
    std::lock_guard lock(mutex_);
    std::vector<T> out;
    for (const auto& e : events_) {
      if (auto* x = std::get_if<T>(&e)) out.push_back(*x);
    }
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Event> events_;
};

agentkit::ToolPtr lookup() {
  return agentkit::tool("lookup")
      .doc("Look up a customer order by its id and return its status.")
      .side_effecting(false)
      .params("order_id")
      .fn([](const std::string& id) { return id + ": delivered"; });
}

agentkit::ToolPtr refund(int& runs) {
  return agentkit::tool("refund")
      .doc("Refund a damaged customer order in full and return the refund id.")
      .side_effecting(true)
      .requires_approval()
      .params("order_id")
      .fn([&runs](const std::string& id) {
        ++runs;
        return "refunded " + id;
      });
}

}  // namespace

TEST_CASE("a call refused before it runs is a ToolCallRefused event", "[events]") {
  ToolCall not_json{"c2", "lookup", Json::object(), "{\"order_id\": "};
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "cancel_order", {{"order_id", "A-1"}}), not_json,
                          call("c3", "lookup", {{"order_id", "A-1"}})}},
      Turn{.content = "Order A-1 was delivered."},
  });
  auto recorder = std::make_shared<Recorder>();
  Agent agent("desk", "fake", "You answer questions about orders.", react({lookup()}));
  auto ctx = make_test_ctx({.llm = llm, .observer = recorder});
  const auto result = agent.run("Where is A-1?", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);

  const auto refused = recorder->all<ToolCallRefused>();
  REQUIRE(refused.size() == 2);
  CHECK(refused[0].call.id == "c1");
  CHECK(refused[0].call.name == "cancel_order");
  CHECK_THAT(refused[0].error, Catch::StartsWith("unknown tool 'cancel_order'"));
  CHECK(refused[1].call.id == "c2");
  CHECK(refused[1].call.arguments_text == "{\"order_id\": ");
  CHECK_THAT(refused[1].error, Catch::Contains("lookup"));
  // The model got the same text as the call's error result.
  const auto history = llm->requests().at(1).messages;
  CHECK(history.at(2).text() == refused[0].error);
  CHECK(history.at(3).text() == refused[1].error);
  // Only the valid call started.
  const auto started = recorder->all<ToolCallStarted>();
  REQUIRE(started.size() == 1);
  CHECK(started[0].call.id == "c3");
}

TEST_CASE("each decision on a pending call is an ApprovalDecided event", "[events][approval]") {
  int runs = 0;
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "refund", {{"order_id", "A-1"}})}},
      Turn{.content = "Done."},
  });
  Agent agent("desk", "fake", "You handle refunds for damaged orders.", react({refund(runs)}));
  auto recorder = std::make_shared<Recorder>();
  auto ctx = make_test_ctx({.llm = llm, .observer = recorder});
  auto suspended = agent.run("Refund A-1", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  CHECK(recorder->all<ApprovalDecided>().empty());

  SECTION("rejected, with the reason") {
    const auto done = agent.resume(std::move(suspended.state), {{"c1", Decision::reject("not damaged")}}, ctx);
    CHECK(done.stop_reason == StopReason::answered);
    const auto decided = recorder->all<ApprovalDecided>();
    REQUIRE(decided.size() == 1);
    CHECK(decided[0].call.id == "c1");
    CHECK(decided[0].decision == agentkit::ApprovalVerdict::rejected);
    CHECK(decided[0].reason == "not damaged");
    CHECK(runs == 0);
  }
  SECTION("approved, then the call starts") {
    const auto done = agent.resume(std::move(suspended.state), {{"c1", Decision::approve()}}, ctx);
    CHECK(done.stop_reason == StopReason::answered);
    const auto decided = recorder->all<ApprovalDecided>();
    REQUIRE(decided.size() == 1);
    CHECK(decided[0].decision == agentkit::ApprovalVerdict::approved);
    CHECK(decided[0].call.arguments == Json{{"order_id", "A-1"}});
    CHECK(recorder->all<ToolCallStarted>().size() == 2);  // before the suspension, and now
    CHECK(runs == 1);
  }
  SECTION("edited: the event carries the arguments that run") {
    const auto done = agent.resume(std::move(suspended.state), {{"c1", Decision::edit({{"order_id", "A-2"}})}}, ctx);
    CHECK(done.stop_reason == StopReason::answered);
    const auto decided = recorder->all<ApprovalDecided>();
    REQUIRE(decided.size() == 1);
    CHECK(decided[0].decision == agentkit::ApprovalVerdict::edited);
    CHECK(decided[0].call.arguments == Json{{"order_id", "A-2"}});
    CHECK(runs == 1);
  }
}

TEST_CASE("Progress a tool emits reaches the host's observer and handle", "[events]") {
  auto progress_tool = agentkit::tool("export_orders")
                           .doc("Export every order of the day to the warehouse, reporting progress.")
                           .side_effecting(false)
                           .params("day")
                           .fn([](const std::string& day, agentkit::RunContext& ctx) {
                             ctx.emit(agentkit::Progress{"exported half of " + day});
                             ctx.emit(agentkit::Progress{"exported all of " + day});
                             return std::string("exported");
                           });
  auto script = [] {
    return FakeLLM::script({
        Turn{.tool_calls = {call("c1", "export_orders", {{"day", "monday"}})}},
        Turn{.content = "Exported."},
    });
  };
  Agent agent("desk", "fake", "You export orders when asked to.", react({progress_tool}));
  const std::vector<std::string> expected{"exported half of monday", "exported all of monday"};
  auto messages = [](const std::vector<agentkit::Progress>& events) {
    std::vector<std::string> out;
    for (const auto& e : events) out.push_back(e.message);
    return out;
  };

  SECTION("run(): to the observer, in order") {
    auto recorder = std::make_shared<Recorder>();
    auto ctx = make_test_ctx({.llm = script(), .observer = recorder});
    CHECK(agent.run("Export Monday", ctx).stop_reason == StopReason::answered);
    CHECK(messages(recorder->all<agentkit::Progress>()) == expected);
  }
  SECTION("start(): drained from the handle on the host's thread, the tool on an executor") {
    auto ctx = make_test_ctx({.llm = script(), .executor = std::make_shared<agentkit::ThreadPoolExecutor>(2)});
    auto handle = agent.start("Export Monday", ctx);
    std::vector<agentkit::Progress> seen;
    while (true) {
      const bool done = handle.poll();
      for (const auto& e : handle.drain_events()) {
        if (auto* p = std::get_if<agentkit::Progress>(&e)) seen.push_back(*p);
      }
      if (done) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    CHECK(handle.result().stop_reason == StopReason::answered);
    CHECK(messages(seen) == expected);
  }
}

TEST_CASE("a run nobody observes makes no events, and one that is observed or drained gets them all", "[events]") {
  // The tool reports whether its context would deliver an event.
  auto seen = std::make_shared<std::vector<bool>>();
  auto probe = agentkit::tool("probe")
                   .doc("Report whether this run's events reach anyone, for the test.")
                   .side_effecting(false)
                   .params("note")
                   .fn([seen](const std::string&, agentkit::RunContext& ctx) {
                     seen->push_back(ctx.observed());
                     return std::string("probed");
                   });
  auto script = [] {
    return FakeLLM::script({
        Turn{.tool_calls = {call("c1", "probe", {{"note", "x"}})}},
        Turn{.content = "Probed."},
    });
  };
  Agent agent("desk", "fake", "You probe when asked to.", react({probe}));

  SECTION("run() without an observer: the tool's context is unobserved") {
    auto ctx = make_test_ctx({.llm = script()});
    CHECK(agent.run("Probe", ctx).stop_reason == StopReason::answered);
    CHECK(*seen == std::vector<bool>{false});
  }
  SECTION("run() with an observer: observed, and the observer gets the call's events") {
    auto recorder = std::make_shared<Recorder>();
    auto ctx = make_test_ctx({.llm = script(), .observer = recorder});
    CHECK(agent.run("Probe", ctx).stop_reason == StopReason::answered);
    CHECK(*seen == std::vector<bool>{true});
    CHECK(recorder->all<ToolCallStarted>().size() == 1);
    CHECK(recorder->all<agentkit::ToolCallFinished>().size() == 1);
  }
  SECTION("a handle the host polls and drains: observed, and drain_events() has the call's events") {
    auto ctx = make_test_ctx({.llm = script()});
    auto handle = agent.start("Probe", ctx);
    int started = 0, finished = 0;
    for (bool done = false; !done;) {
      done = handle.poll();
      for (const auto& e : handle.drain_events()) {
        started += std::holds_alternative<ToolCallStarted>(e);
        finished += std::holds_alternative<agentkit::ToolCallFinished>(e);
      }
    }
    CHECK(handle.result().stop_reason == StopReason::answered);
    CHECK(*seen == std::vector<bool>{true});
    CHECK(started == 1);
    CHECK(finished == 1);
  }
  SECTION("a sub-run (as_tool) of an observed run sends its events to the parent's observer") {
    auto inner = std::make_shared<Agent>("inner", "fake", "You probe for the lead.", react({probe}));
    auto delegate = agentkit::as_tool(
        inner, {.name = "inner", .description = "Delegate probing to the inner agent.", .side_effecting = false});
    Agent lead("lead", "fake", "You delegate probing.", react({delegate}));
    auto llm = FakeLLM::script({
        Turn{.tool_calls = {call("c1", "inner", {{"task", "probe it"}})}},
        Turn{.tool_calls = {call("c2", "probe", {{"note", "x"}})}},
        Turn{.content = "Inner probed."},
        Turn{.content = "Done."},
    });
    auto recorder = std::make_shared<Recorder>();
    auto ctx = make_test_ctx({.llm = llm, .observer = recorder});
    CHECK(lead.run("Probe via inner", ctx).stop_reason == StopReason::answered);
    CHECK(*seen == std::vector<bool>{true});
    std::vector<std::string> started;
    for (const auto& e : recorder->all<ToolCallStarted>()) started.push_back(e.call.id);
    CHECK(started == std::vector<std::string>{"c1", "c2"});
  }
}
