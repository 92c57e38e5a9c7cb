// Honest records under cancellation, and runs that own what their work in
// flight needs: what a cancelled run says about each call, how fast run()
// gives up on a tool that ignores its context, each call's own token, and a
// host dropping the Agent or the handle while a call is running.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/executor.h>
#include <agentkit/function_tool.h>
#include <agentkit/state/store.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/ledger_left.h"
#include "../helpers/timing.h"
#include "../helpers/tool_calls.h"
#include "../helpers/watch_tool.h"

using agentkit::Agent;
using agentkit::Json;
using agentkit::Message;
using agentkit::RunContext;
using agentkit::StopReason;
using agentkit::ToolCall;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using namespace std::chrono_literals;
using agentkit_test::call;

namespace {

using Clock = std::chrono::steady_clock;

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit = 5s) {
  const auto until = Clock::now() + limit;
  while (!condition()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// What a blocking tool or model saw. Shared with the work, so a body still
// running after the test's locals are gone never dangles.
struct Gate {
  std::atomic<int> started{0};
  std::atomic<int> finished{0};
  std::atomic<bool> release{false};
  std::atomic<bool> saw_cancel{false};

  // Blocks until released (or 5 s), ignoring cancellation.
  void hold() {
    ++started;
    const auto until = Clock::now() + 5s;
    while (!release && Clock::now() < until) std::this_thread::sleep_for(1ms);
  }
  // Blocks until the context is cancelled (or 5 s).
  void hold_until_cancelled(const RunContext& ctx) {
    ++started;
    const auto until = Clock::now() + 5s;
    while (!ctx.cancelled() && Clock::now() < until) std::this_thread::sleep_for(1ms);
    saw_cancel = ctx.cancelled();
  }
};

// A side-effecting tool that counts its runs and, when `gate` is set,
// blocks in it (ignoring cancellation) before returning.
agentkit::ToolPtr effect(std::string name, std::shared_ptr<Gate> gate, std::shared_ptr<std::atomic<int>> runs) {
  return agentkit::tool(name)
      .doc("A side-effecting test tool that records each run and can be held mid-call.")
      .side_effecting(true)
      .fn([name, gate, runs]() {
        ++*runs;
        if (gate) {
          gate->hold();
          ++gate->finished;
        }
        return "done " + name;
      });
}

const Message& tool_message(const agentkit::RunResult& result, const std::string& call_id) {
  const auto& history = result.state.history;
  auto it = std::find_if(history.begin(), history.end(),
                         [&](const Message& m) { return m.role == agentkit::Role::tool && m.tool_call_id == call_id; });
  REQUIRE(it != history.end());
  return *it;
}

// A model that blocks in its first call until released (or its context is
// cancelled), then reads what the request points at: the agent's prompt and
// its tools' specs. Later calls answer at once.
class HeldModel final : public agentkit::Model {
 public:
  explicit HeldModel(std::shared_ptr<Gate> gate) : gate_(std::move(gate)) {}

  agentkit::ModelResponse complete(const agentkit::ModelRequest& request, RunContext& ctx) override {
    if (calls_++ == 0) {
      ++gate_->started;
      const auto until = Clock::now() + 5s;
      while (!gate_->release && !ctx.cancelled() && Clock::now() < until) std::this_thread::sleep_for(1ms);
      gate_->saw_cancel = ctx.cancelled();
    }
    {
      std::lock_guard lock(mutex_);
      systems_.emplace_back(request.system);
      for (const agentkit::ToolSpec* spec : request.tools) tools_.push_back(spec->name);
    }
    ++gate_->finished;
    return {Message::assistant("answered"), {}, "stop"};
  }

  std::vector<std::string> systems() const {
    std::lock_guard lock(mutex_);
    return systems_;
  }
  std::vector<std::string> tools() const {
    std::lock_guard lock(mutex_);
    return tools_;
  }

 private:
  std::shared_ptr<Gate> gate_;
  std::atomic<int> calls_{0};
  mutable std::mutex mutex_;
  std::vector<std::string> systems_;
  std::vector<std::string> tools_;
};

}  // namespace

TEST_CASE("a cancelled run records each call by what happened to it: finished, running, never started",
          "[agent][cancel]") {
  // One worker: "charge" finishes, "ship" is held mid-call, "notify" waits
  // behind it in the queue when the run is cancelled.
  auto executor = std::make_shared<agentkit::ThreadPoolExecutor>(1);
  auto gate = std::make_shared<Gate>();
  auto charged = std::make_shared<std::atomic<int>>(0);
  auto shipped = std::make_shared<std::atomic<int>>(0);
  auto notified = std::make_shared<std::atomic<int>>(0);
  auto llm = FakeLLM::script(
      {Turn{.tool_calls = {call("c1", "charge"), call("c2", "ship"), call("c3", "notify")}}, Turn{.content = "never"}});
  Agent agent("a", "fake", "p",
              react({effect("charge", nullptr, charged), effect("ship", gate, shipped), effect("notify", nullptr, notified)}));
  auto ctx = make_test_ctx({.llm = llm, .executor = executor});

  auto handle = agent.start("go", ctx);
  REQUIRE(eventually([&] {
    handle.poll();
    return gate->started == 1;
  }));
  handle.cancel();
  REQUIRE(eventually([&] { return handle.poll(); }));
  const auto& result = handle.result();
  CHECK(result.stop_reason == StopReason::cancelled);

  SECTION("the finished call keeps its real result") {
    const Message& m = tool_message(result, "c1");
    CHECK(m.text() == "done charge");
    CHECK_FALSE(m.is_error);
  }
  SECTION("the call still running is outcome_unknown, not 'Not run'") {
    const Message& m = tool_message(result, "c2");
    CHECK(m.is_error);
    CHECK_THAT(m.text(), Catch::StartsWith("Outcome unknown: the run stopped (cancelled) while this call was running"));
    CHECK_THAT(m.text(), !Catch::Contains("Not run"));
  }
  SECTION("only the call that never started says 'Not run', and it never starts") {
    const Message& m = tool_message(result, "c3");
    CHECK(m.is_error);
    CHECK(m.text() == "Not run: the run stopped (cancelled) before this call.");
    gate->release = true;
    REQUIRE(eventually([&] { return gate->finished == 1; }));
    executor.reset();  // joins the worker: anything queued has run by now
    CHECK(*notified == 0);
    CHECK(*shipped == 1);
    CHECK(*charged == 1);
  }
  SECTION("observers hear how each started call ended") {
    std::vector<std::pair<std::string, std::string>> finished;
    for (const auto& event : handle.drain_events()) {
      if (auto* e = std::get_if<agentkit::ToolCallFinished>(&event)) finished.emplace_back(e->call_id, to_string(e->outcome));
    }
    CHECK(finished == std::vector<std::pair<std::string, std::string>>{{"c1", "ok"}, {"c2", "outcome_unknown"}});
  }
  gate->release = true;
}

TEST_CASE("after a cancel, run() returns within 50 ms though a tool ignores it, the late completion corrupts nothing",
          "[agent][cancel]") {
  auto executor = std::make_shared<agentkit::ThreadPoolExecutor>(2);
  auto gate = std::make_shared<Gate>();
  auto runs = std::make_shared<std::atomic<int>>(0);
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "ship")}}, Turn{.content = "never"}});
  Agent agent("a", "fake", "p", react({effect("ship", gate, runs)}));
  auto store = std::make_shared<agentkit::state::InMemoryStore>();
  auto ctx = make_test_ctx({.llm = llm, .executor = executor, .store = store});

  Clock::time_point cancelled_at;
  std::thread host([&, token = ctx.cancellation] {
    eventually([&] { return gate->started == 1; });
    cancelled_at = Clock::now();
    token.cancel();
  });
  const auto result = agent.run("go", ctx, {.run_id = "r1"});
  const auto returned_at = Clock::now();
  host.join();

  CHECK(returned_at - cancelled_at < agentkit_test::latency_bound(50ms));
  CHECK(result.stop_reason == StopReason::cancelled);
  CHECK_THAT(tool_message(result, "c1").text(), Catch::StartsWith("Outcome unknown:"));

  // The body completes later; the stored run keeps what the run said, and
  // the ledger's records are tidied once the body has recorded its outcome.
  gate->release = true;
  REQUIRE(eventually([&] { return gate->finished == 1; }));
  REQUIRE(eventually([&] { return agentkit_test::only_finished_owner_left(*store, "global/ledger/r1/"); }));
  const auto stored = agentkit::load_run(*store, {}, "r1");
  REQUIRE(stored);
  CHECK(stored->phase == agentkit::Phase::done);
  CHECK(stored->stop_reason == StopReason::cancelled);
  CHECK(stored->history == result.state.history);
  CHECK(*runs == 1);
}

TEST_CASE("every tool call has its own token, a child of the run's, that the host's context does not share",
          "[agent][cancel]") {
  std::optional<Clock::time_point> call_deadline;
  std::atomic<bool> cancelled_in_call{false};
  auto probe = agentkit::tool("probe")
                   .doc("Report the call's deadline, then cancel its own call through its context.")
                   .side_effecting(false)
                   .fn([&](RunContext& ctx) {
                     call_deadline = ctx.deadline();
                     ctx.cancellation.cancel();  // this call only
                     cancelled_in_call = ctx.cancelled();
                     return 1;
                   });
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "probe")}}, Turn{.content = "after the call"}});
  Agent agent("a", "fake", "p", react({probe}));
  auto ctx = make_test_ctx({.llm = llm, .budget = {.wall_time = 60s}});
  const auto started = Clock::now();

  auto result = agent.run("go", ctx);

  // The call's deadline is the run's wall_time budget; cancelling the call
  // did not cancel the run, which went on to its answer.
  REQUIRE(call_deadline);
  CHECK(*call_deadline > started + 59s);
  CHECK(*call_deadline <= Clock::now() + 60s);
  CHECK(cancelled_in_call);
  CHECK(result.stop_reason == StopReason::answered);
  CHECK(result.output == "after the call");

  SECTION("cancelling a handle stops its run, not the host's context") {
    auto llm2 = FakeLLM::script({Turn{.content = "x"}});
    auto ctx2 = make_test_ctx({.llm = llm2});
    auto handle = agent.start("go", ctx2);
    handle.cancel();
    REQUIRE(handle.poll());
    CHECK(handle.result().stop_reason == StopReason::cancelled);
    CHECK_FALSE(ctx2.cancelled());
    CHECK(agent.run("again", ctx2).stop_reason == StopReason::answered);
  }
}

TEST_CASE("the host may destroy the Agent while its run is in flight", "[agent][lifetime]") {
  auto executor = std::make_shared<agentkit::ThreadPoolExecutor>(2);
  auto gate = std::make_shared<Gate>();
  auto model = std::make_shared<HeldModel>(gate);
  auto ctx = make_test_ctx({.llm = model, .executor = executor});
  auto runs = std::make_shared<std::atomic<int>>(0);
  // The Agent holds the only reference to its cognition and tools.
  auto agent = std::make_unique<Agent>("a", "fake", "You are a test agent.", react({effect("lookup", nullptr, runs)}));

  auto handle = agent->start("go", ctx);
  REQUIRE(eventually([&] {
    handle.poll();
    return gate->started == 1;
  }));
  agent.reset();  // a game unloading the level that held it
  gate->release = true;
  REQUIRE(eventually([&] { return handle.poll(); }));

  // The model call in flight read the prompt and tool specs after the Agent
  // was gone, and the run finished from its own copy.
  CHECK(handle.result().stop_reason == StopReason::answered);
  CHECK(handle.result().output == "answered");
  CHECK(handle.result().state.agent == "a");
  CHECK(model->systems() == std::vector<std::string>{"You are a test agent."});
  CHECK(model->tools() == std::vector<std::string>{"lookup"});
}

TEST_CASE("dropping the handle (and the Agent) mid-call cancels the run and is safe", "[agent][lifetime]") {
  auto executor = std::make_shared<agentkit::ThreadPoolExecutor>(2);
  auto gate = std::make_shared<Gate>();

  SECTION("during a tool call") {
    auto slow = agentkit::tool("slow")
                    .doc("Wait until the call is cancelled, then return what it saw.")
                    .side_effecting(true)
                    .fn([gate](RunContext& ctx) {
                      gate->hold_until_cancelled(ctx);
                      ++gate->finished;
                      return std::string(ctx.correlation_id);
                    });
    auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "slow")}}, Turn{.content = "never"}});
    auto ctx = std::make_unique<RunContext>(make_test_ctx({.llm = llm, .executor = executor}));
    auto agent = std::make_unique<Agent>("a", "fake", "p", react({slow}));
    auto handle = std::make_unique<agentkit::RunHandle>(agent->start("go", *ctx));
    REQUIRE(eventually([&] {
      handle->poll();
      return gate->started == 1;
    }));
    handle.reset();
    agent.reset();
    ctx.reset();
    REQUIRE(eventually([&] { return gate->finished == 1; }));
    CHECK(gate->saw_cancel);
  }
  SECTION("during a model call") {
    auto model = std::make_shared<HeldModel>(gate);
    auto ctx = std::make_unique<RunContext>(make_test_ctx({.llm = model, .executor = executor}));
    auto agent = std::make_unique<Agent>("a", "fake", "p",
                                         react({effect("lookup", nullptr, std::make_shared<std::atomic<int>>(0))}));
    auto handle = std::make_unique<agentkit::RunHandle>(agent->start("go", *ctx));
    REQUIRE(eventually([&] {
      handle->poll();
      return gate->started == 1;
    }));
    handle.reset();
    agent.reset();
    ctx.reset();
    REQUIRE(eventually([&] { return gate->finished == 1; }));
    CHECK(gate->saw_cancel);
    CHECK(model->tools() == std::vector<std::string>{"lookup"});  // read after everything was dropped
  }
  executor.reset();  // joins the workers; under ASan, nothing they touched was freed
}

namespace {

// A tool that knows when it is destroyed, to show who keeps it alive.
class ProbeTool final : public agentkit::Tool {
 public:
  ProbeTool(std::shared_ptr<Gate> gate, std::shared_ptr<std::atomic<bool>> destroyed)
      : gate_(std::move(gate)), destroyed_(std::move(destroyed)) {
    spec_.name = "probe";
    spec_.description = "Hold until released, then report that this tool object is still alive.";
    spec_.parameters = agentkit::Schema{{"type", "object"}};
    spec_.effects.side_effecting = true;
  }
  ~ProbeTool() override { *destroyed_ = true; }
  const agentkit::ToolSpec& spec() const noexcept override { return spec_; }
  Json run(const Json&, RunContext&) const override {
    gate_->hold();
    // Reads a member after the Agent, its cognition and the host's tool list are gone.
    const std::string alive = *destroyed_ ? "destroyed" : "alive: " + spec_.name;
    ++gate_->finished;
    return alive;
  }

 private:
  agentkit::ToolSpec spec_;
  std::shared_ptr<Gate> gate_;
  std::shared_ptr<std::atomic<bool>> destroyed_;
};

}  // namespace

TEST_CASE("the Agent and its tools may be destroyed right after start() while a tool is mid-call",
          "[agent][lifetime]") {
  auto executor = std::make_shared<agentkit::ThreadPoolExecutor>(2);
  auto gate = std::make_shared<Gate>();
  auto destroyed = std::make_shared<std::atomic<bool>>(false);
  auto tools = std::make_unique<std::vector<agentkit::ToolPtr>>();
  tools->push_back(std::make_shared<ProbeTool>(gate, destroyed));
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "probe")}}, Turn{.content = "probed"}});
  auto ctx = make_test_ctx({.llm = llm, .executor = executor});
  auto agent = std::make_unique<Agent>("a", "fake", "p", react(*tools));

  auto handle = agent->start("go", ctx);
  agent.reset();  // the host's Agent, and with it its cognition
  tools.reset();  // and the host's own references to the tools
  REQUIRE(eventually([&] {
    handle.poll();
    return gate->started == 1;
  }));
  CHECK_FALSE(*destroyed);  // the run (and the call on the worker) hold the tool
  gate->release = true;
  REQUIRE(eventually([&] { return handle.poll(); }));
  CHECK(handle.result().stop_reason == StopReason::answered);
  CHECK(tool_message(handle.result(), "c1").text().find("alive: probe") != std::string::npos);
  CHECK_FALSE(*destroyed);
  { auto dropped = std::move(handle); }
  CHECK(*destroyed);  // the handle held the last reference
}

TEST_CASE("cancelling the parent cancels its sub-run: the sub-agent's tool sees it, both runs stop cancelled",
          "[agent][cancel][as_tool]") {
  // The sub-agent's tool waits for its run's cancellation (or 5 s).
  const auto wait_tool = agentkit_test::watch_tool();
  auto watcher = std::make_shared<Agent>("watcher", "fake", "You watch the gate.", react({wait_tool.tool}));
  auto watch = agentkit::as_tool(watcher, {.name = "delegate_watch",
                                           .description = "Hand the watching of the gate to the watcher agent.",
                                           .side_effecting = false});
  Agent lead("lead", "fake", "You delegate.", react({watch}));
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("p1", "delegate_watch", {{"task", "watch the gate"}})}},  // the parent
      Turn{.tool_calls = {call("s1", "watch")}},                                          // the sub-run
      Turn{.content = "never"},
      Turn{.content = "never"},
  });
  auto ctx = make_test_ctx({.llm = llm});
  std::thread host([&, token = ctx.cancellation] {
    eventually([&] { return wait_tool.started->load(); });
    token.cancel();
  });
  const auto begun = Clock::now();
  const auto result = lead.run("Watch the gate", ctx);
  host.join();

  CHECK(result.stop_reason == StopReason::cancelled);
  CHECK(Clock::now() - begun < 4s);  // not the tool's 5 s: the cancel reached it
  CHECK(eventually([&] { return wait_tool.saw_cancel->load(); }));
  CHECK(llm->requests().size() == 2);  // neither run asked the model again
}
