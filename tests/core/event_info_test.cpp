// Every event carries where and when it happened (EventInfo), and the events
// of a sub-run (as_tool) reach the host through the parent run's queue: on
// the host's thread, once, in order.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <variant>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/executor.h>
#include <agentkit/function_tool.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::Event;
using agentkit::EventInfo;
using agentkit::info_of;
using agentkit::Json;
using agentkit::StopReason;
using agentkit::ToolCall;
using agentkit_test::call;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using namespace std::chrono_literals;

namespace {

// "ModelCallStarted", ... by the variant's order.
std::string type_of(const Event& e) {
  static constexpr std::array<const char*, std::variant_size_v<Event>> kNames{
      "ModelCallStarted", "ModelCallFinished", "ToolCallStarted", "ToolCallFinished", "ToolSpan",
      "RunSuspended",     "RunFinished",       "Progress",        "McpProgress",      "TextDelta",
      "ToolCallRefused",  "ApprovalDecided",   "ToolCallDelta",   "ReasoningDelta"};
  return kNames[e.index()];
}

// "<agent path> <type>", one per event.
std::vector<std::string> trace(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(std::string(info_of(e).agent_path()) + " " + type_of(e));
  return out;
}

// Keeps every event it is handed and the thread that handed it.
class Recorder final : public agentkit::Observer {
 public:
  void on_event(const Event& event) override {
    std::lock_guard lock(mutex_);
    events.push_back(event);
    threads.push_back(std::this_thread::get_id());
  }
  std::vector<Event> snapshot() const {
    std::lock_guard lock(mutex_);
    return events;
  }
  std::vector<Event> events;
  std::vector<std::thread::id> threads;

 private:
  mutable std::mutex mutex_;
};

agentkit::ToolPtr lookup() {
  return agentkit::tool("lookup")
      .doc("Look up a customer order by its id and return its status.")
      .side_effecting(false)
      .params("order_id")
      .fn([](const std::string& id) { return id + ": delivered"; });
}

agentkit::ToolPtr delegate(std::shared_ptr<const Agent> agent) {
  const std::string name = agent->name();
  return agentkit::as_tool(std::move(agent), {.name = name,
                                              .description = "Delegate a sub-task to the " + name + " agent.",
                                              .side_effecting = false});
}

// parent -> child (as_tool) -> lookup: the child looks A-1 up and answers.
struct Family {
  std::shared_ptr<Agent> child =
      std::make_shared<Agent>("child", "fake", "You look orders up.", react({lookup()}));
  Agent parent{"parent", "fake", "You delegate order questions.", react({delegate(child)})};
  std::shared_ptr<FakeLLM> llm = FakeLLM::script({
      Turn{.tool_calls = {call("p1", "child", {{"task", "where is A-1?"}})}},
      Turn{.tool_calls = {call("k1", "lookup", {{"order_id", "A-1"}})}},
      Turn{.content = "A-1 was delivered."},
      Turn{.content = "Your order A-1 was delivered."},
  });
};

const std::vector<std::string> kFamilyTrace{
    "parent ModelCallStarted", "parent ModelCallFinished", "parent ToolCallStarted",
    "parent/child ModelCallStarted", "parent/child ModelCallFinished", "parent/child ToolCallStarted",
    "parent/child ToolSpan", "parent/child ToolCallFinished", "parent/child ModelCallStarted",
    "parent/child ModelCallFinished", "parent/child RunFinished",
    "parent ToolSpan", "parent ToolCallFinished", "parent ModelCallStarted", "parent ModelCallFinished",
    "parent RunFinished"};

// Polls `handle` to its end from this thread, draining as it goes.
std::vector<Event> drive(agentkit::RunHandle& handle) {
  std::vector<Event> seen;
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (true) {
    const bool done = handle.poll();
    for (auto& e : handle.drain_events()) seen.push_back(std::move(e));
    if (done) break;
    if (std::chrono::steady_clock::now() > give_up) FAIL("the run did not end within 10 s");
    std::this_thread::sleep_for(100us);
  }
  return seen;
}

// The metadata every event of `events` must show: stamped, times in order,
// one run id and span per agent path, sub-runs under their parent's span.
void check_metadata(const std::vector<Event>& events) {
  std::map<std::string, const EventInfo*> first;  // by agent path
  auto last = std::chrono::system_clock::time_point{};
  for (const auto& e : events) {
    const EventInfo& info = info_of(e);
    INFO(type_of(e) << " of " << info.agent_path());
    REQUIRE(info.source);
    CHECK(info.time != std::chrono::system_clock::time_point{});
    CHECK(info.time >= last);
    last = info.time;
    CHECK_FALSE(info.run_id().empty());
    CHECK_FALSE(info.span_id().empty());
    auto [it, fresh] = first.emplace(std::string(info.agent_path()), &info);
    if (!fresh) {
      CHECK(info.run_id() == it->second->run_id());
      CHECK(info.span_id() == it->second->span_id());
      CHECK(info.parent_span_id() == it->second->parent_span_id());
    }
  }
  for (const auto& [path, info] : first) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) {
      CHECK(info->parent_span_id().empty());  // a top-level run
      continue;
    }
    const EventInfo* parent = first.at(path.substr(0, slash));
    INFO(path);
    CHECK(info->parent_span_id() == parent->span_id());
    CHECK(info->span_id() != parent->span_id());
    CHECK(info->run_id() != parent->run_id());
  }
}

}  // namespace

TEST_CASE("a polling host drains a sub-agent's events on its own thread, in order", "[events][subrun]") {
  Family f;
  auto observer = std::make_shared<Recorder>();
  auto ctx = make_test_ctx(
      {.llm = f.llm, .executor = std::make_shared<agentkit::ThreadPoolExecutor>(2), .observer = observer});
  auto handle = f.parent.start("Where is my order A-1?", ctx);
  const auto events = drive(handle);
  REQUIRE(handle.result().stop_reason == StopReason::answered);

  // Every event, the sub-run's included, came out of drain_events() on this
  // thread, interleaved where it happened: inside the delegating call.
  CHECK(trace(events) == kFamilyTrace);
  CHECK(observer->snapshot().empty());  // nothing went around the queue to the observer
  check_metadata(events);
  const std::string parent_run = handle.result().state.run_id;
  CHECK(info_of(events.front()).run_id() == parent_run);
  // The durable sub-run's id follows from the call (see as_tool).
  CHECK(std::string(info_of(events.at(3)).run_id()).rfind(parent_run + "/", 0) == 0);
}

TEST_CASE("a blocking run() hands each sub-run event to the observer once, on its thread", "[events][subrun]") {
  Family f;
  auto observer = std::make_shared<Recorder>();
  std::shared_ptr<agentkit::Executor> executor;
  SECTION("tools on a thread pool") { executor = std::make_shared<agentkit::ThreadPoolExecutor>(2); }
  SECTION("inline") {}
  auto ctx = make_test_ctx({.llm = f.llm, .executor = executor, .observer = observer});
  REQUIRE(f.parent.run("Where is my order A-1?", ctx).stop_reason == StopReason::answered);

  const auto events = observer->snapshot();
  CHECK(trace(events) == kFamilyTrace);  // no duplicates: each exactly once
  check_metadata(events);
  for (const auto& thread : observer->threads) CHECK(thread == std::this_thread::get_id());
}

TEST_CASE("a sub-run of a sub-run has the agent path a/b/c", "[events][subrun]") {
  auto c = std::make_shared<Agent>("c", "fake", "You answer.");
  auto b = std::make_shared<Agent>("b", "fake", "You delegate to c.", react({delegate(c)}));
  Agent a("a", "fake", "You delegate to b.", react({delegate(b)}));
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("a1", "b", {{"task", "ask c"}})}},
      Turn{.tool_calls = {call("b1", "c", {{"task", "answer"}})}},
      Turn{.content = "c's answer"},
      Turn{.content = "b's answer"},
      Turn{.content = "a's answer"},
  });
  auto ctx = make_test_ctx({.llm = llm, .executor = std::make_shared<agentkit::ThreadPoolExecutor>(2)});
  auto handle = a.start("go", ctx);
  const auto events = drive(handle);
  REQUIRE(handle.result().output == "a's answer");

  std::vector<std::string> finished;
  for (const auto& e : events) {
    if (std::holds_alternative<agentkit::RunFinished>(e)) finished.emplace_back(info_of(e).agent_path());
  }
  CHECK(finished == std::vector<std::string>{"a/b/c", "a/b", "a"});
  check_metadata(events);
}

TEST_CASE("a cancelled parent ends, its sub-run's late events stay in the parent's queue", "[events][subrun]") {
  std::atomic<bool> waiting{false};
  auto stall = agentkit::tool("stall")
                   .doc("Wait until the run is cancelled, then report that it stopped.")
                   .side_effecting(false)
                   .fn([&waiting](agentkit::RunContext& ctx) {
                     waiting = true;
                     while (!ctx.cancelled()) std::this_thread::sleep_for(1ms);
                     std::this_thread::sleep_for(100ms);  // ends well after the parent did
                     return std::string("stopped");
                   });
  auto child = std::make_shared<Agent>("child", "fake", "You stall.", react({stall}));
  Agent parent("parent", "fake", "You delegate.", react({delegate(child)}));
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("p1", "child", {{"task", "stall"}})}},
      Turn{.tool_calls = {call("k1", "stall", Json::object())}},
  });
  auto capture = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  auto ctx = make_test_ctx({.llm = llm, .executor = std::make_shared<agentkit::ThreadPoolExecutor>(2)});
  ctx.logger = std::make_shared<spdlog::logger>("capture", capture);
  ctx.logger->set_level(spdlog::level::debug);
  auto handle = std::make_optional(parent.start("go", ctx));
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  std::vector<Event> events;
  while (!waiting) {
    handle->poll();
    for (auto& e : handle->drain_events()) events.push_back(std::move(e));
    REQUIRE(std::chrono::steady_clock::now() < give_up);
    std::this_thread::sleep_for(100us);
  }
  handle->cancel();
  for (auto& e : drive(*handle)) events.push_back(std::move(e));  // no hang: the run ends at once
  CHECK(handle->result().stop_reason == StopReason::cancelled);

  const auto sub_run_finished = [](const std::vector<Event>& seen) {
    for (const auto& e : seen) {
      if (std::holds_alternative<agentkit::RunFinished>(e) && info_of(e).agent_path() == "parent/child") return true;
    }
    return false;
  };
  SECTION("the handle kept: drain_events() after the end returns them, after the parent's RunFinished") {
    CHECK_FALSE(sub_run_finished(events));
    while (!sub_run_finished(events)) {
      for (auto& e : handle->drain_events()) events.push_back(std::move(e));
      REQUIRE(std::chrono::steady_clock::now() < give_up);
      std::this_thread::sleep_for(1ms);
    }
    const auto finished = [&](std::string_view path) {
      return std::find_if(events.begin(), events.end(), [path](const Event& e) {
        return std::holds_alternative<agentkit::RunFinished>(e) && info_of(e).agent_path() == path;
      });
    };
    const auto child_end = finished("parent/child");
    CHECK(std::get<agentkit::RunFinished>(*child_end).stop_reason == StopReason::cancelled);
    CHECK(finished("parent") < child_end);
    check_metadata(events);
  }
  SECTION("the handle dropped: they are dropped, each with a debug line on ctx.logger") {
    handle.reset();
    const auto logged = [&] {
      for (const auto& line : capture->last_formatted()) {
        if (line.find("an event was dropped") != std::string::npos) return true;
      }
      return false;
    };
    while (!logged()) {
      REQUIRE(std::chrono::steady_clock::now() < give_up);
      std::this_thread::sleep_for(1ms);
    }
  }
}

TEST_CASE("a tool's Progress carries its run's metadata", "[events]") {
  auto report = agentkit::tool("report")
                    .doc("Report progress on the export, then finish it.")
                    .side_effecting(false)
                    .fn([](agentkit::RunContext& ctx) {
                      ctx.emit(agentkit::Progress{"half"});
                      return std::string("done");
                    });
  Agent agent("desk", "fake", "You export.", react({report}));
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "report", Json::object())}}, Turn{.content = "ok"}});
  auto ctx = make_test_ctx({.llm = llm, .executor = std::make_shared<agentkit::ThreadPoolExecutor>(1)});
  auto handle = agent.start("export", ctx);
  const auto events = drive(handle);
  check_metadata(events);
  const auto progress = std::find_if(events.begin(), events.end(),
                                     [](const Event& e) { return std::holds_alternative<agentkit::Progress>(e); });
  REQUIRE(progress != events.end());
  CHECK(info_of(*progress).run_id() == handle.result().state.run_id);
  CHECK(info_of(*progress).agent_path() == "desk");
  CHECK(info_of(*progress).span_id() == info_of(events.front()).span_id());
}

TEST_CASE("emit() stamps what the emitter left unset and keeps what it set", "[events]") {
  agentkit::RunContext ctx;
  auto observer = std::make_shared<Recorder>();
  ctx.observer = observer;

  SECTION("no run: to the observer, stamped with the context's fields") {
    ctx.emit(agentkit::Progress{"bare"});  // all four fields empty: no source
    ctx.correlation_id = "run-1";
    ctx.agent_path = "host/desk";
    ctx.span_id = agentkit::trace::SpanId("00000000000000a1");
    ctx.emit(agentkit::Progress{"named"});
    const auto events = observer->snapshot();
    REQUIRE(events.size() == 2);
    CHECK(info_of(events[0]).time != std::chrono::system_clock::time_point{});
    CHECK_FALSE(info_of(events[0]).source);
    CHECK(info_of(events[0]).run_id().empty());
    CHECK(info_of(events[1]).run_id() == "run-1");
    CHECK(info_of(events[1]).agent_path() == "host/desk");
    CHECK(info_of(events[1]).span_id() == "00000000000000a1");
    CHECK(info_of(events[1]).parent_span_id().empty());
  }
  SECTION("a cached source is shared while it matches, and rebuilt when a field changes") {
    ctx.events = std::make_shared<agentkit::EventQueue>();
    ctx.correlation_id = "run-1";
    ctx.refresh_event_source();
    ctx.emit(agentkit::Progress{"a"});
    ctx.emit(agentkit::Progress{"b"});
    ctx.span_id = agentkit::trace::SpanId("00000000000000a2");
    ctx.emit(agentkit::Progress{"c"});
    const auto events = ctx.events->drain();
    REQUIRE(events.size() == 3);
    CHECK(info_of(events[0]).source == info_of(events[1]).source);
    CHECK(info_of(events[2]).span_id() == "00000000000000a2");
    CHECK(observer->snapshot().empty());
  }
  SECTION("set fields are kept") {
    ctx.correlation_id = "run-1";
    const auto when = std::chrono::system_clock::time_point(std::chrono::seconds(1'000'000'000));
    ctx.emit(agentkit::Progress{.message = "preset",
                                .info = {.time = when,
                                         .source = std::make_shared<const agentkit::EventSource>(
                                             agentkit::EventSource{.run_id = "other"})}});
    const auto events = observer->snapshot();
    REQUIRE(events.size() == 1);
    CHECK(info_of(events[0]).time == when);
    CHECK(info_of(events[0]).run_id() == "other");
  }
}

TEST_CASE("EventQueue: stamped times never decrease, a closed queue takes nothing", "[events]") {
  agentkit::EventQueue queue;
  const auto future = std::chrono::system_clock::now() + std::chrono::hours(1);
  CHECK(queue.push(agentkit::Progress{.message = "from the future", .info = {.time = future}}));
  CHECK(queue.push(agentkit::Progress{"now"}));  // stamped no earlier than the last
  queue.close();
  CHECK_FALSE(queue.push(agentkit::Progress{"late"}));
  const auto events = queue.drain();
  REQUIRE(events.size() == 2);
  CHECK(info_of(events[0]).time == future);
  CHECK(info_of(events[1]).time == future);
}
