// A durable run's checkpoints are written off the host's thread: poll()
// never waits on the store, saves land in order, a batch starts only once
// the checkpoint naming it is written, and a refused save still stops the
// run (never a silent success).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/state/store.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::Json;
using agentkit::StopReason;
using agentkit::ToolCall;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using agentkit_test::call;

namespace {

// A store whose run-document writes can be held (a slow disk) or refused
// (a full one), recording the phase of every document it writes.
class GatedStore final : public agentkit::state::Store {
 public:
  std::optional<agentkit::state::Entry> get(std::string_view key) override { return inner_.get(key); }
  std::int64_t put(std::string_view key, std::string value, Ttl ttl) override {
    return inner_.put(key, std::move(value), ttl);
  }
  std::optional<std::int64_t> compare_and_set(std::string_view key, std::int64_t expected, std::string value,
                                              Ttl ttl) override {
    if (key.find("runs/") == std::string_view::npos) return inner_.compare_and_set(key, expected, std::move(value), ttl);
    std::unique_lock lock(mutex_);
    writer_thread_ = std::this_thread::get_id();
    cv_.wait(lock, [&] { return !hold_; });
    if (refuse_) throw agentkit::state::StoreError("disk full");
    phases_.push_back(Json::parse(value).at("phase").get<std::string>());
    lock.unlock();
    return inner_.compare_and_set(key, expected, std::move(value), ttl);
  }
  bool erase(std::string_view key) override { return inner_.erase(key); }
  std::vector<std::pair<std::string, agentkit::state::Entry>> list(std::string_view prefix) override {
    return inner_.list(prefix);
  }

  void hold(bool on) {
    {
      std::lock_guard lock(mutex_);
      hold_ = on;
    }
    cv_.notify_all();
  }
  void refuse() {
    std::lock_guard lock(mutex_);
    refuse_ = true;
  }
  std::vector<std::string> phases() {
    std::lock_guard lock(mutex_);
    return phases_;
  }
  std::thread::id writer_thread() {
    std::lock_guard lock(mutex_);
    return writer_thread_;
  }

 private:
  agentkit::state::InMemoryStore inner_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool hold_ = false;
  bool refuse_ = false;
  std::vector<std::string> phases_;
  std::thread::id writer_thread_;
};

agentkit::ToolPtr note_tool(std::shared_ptr<std::atomic<int>> runs) {
  return agentkit::tool("note")
      .doc("Record one thing in the outside world and return a receipt for it.")
      .side_effecting(true)
      .params("what")
      .fn([runs](const std::string& what) {
        ++*runs;
        return "done: " + what;
      });
}

}  // namespace

TEST_CASE("poll() never waits on a slow store; a batch starts only once its checkpoint is written",
          "[durable][async]") {
  auto store = std::make_shared<GatedStore>();
  auto runs = std::make_shared<std::atomic<int>>(0);
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "note", {{"what", "a"}})}}, Turn{.content = "noted"}});
  Agent agent("clerk", "fake", "You take notes.", react({note_tool(runs)}));
  auto ctx = make_test_ctx({.llm = llm, .store = store});
  auto handle = agent.start("take a note", ctx, {.run_id = "r1"});  // the claim is written here
  REQUIRE(store->phases() == std::vector<std::string>{"ask_model"});

  store->hold(true);  // every later write blocks until released
  Clock::duration slowest{};
  for (int i = 0; i < 50; ++i) {
    const auto start = Clock::now();
    REQUIRE_FALSE(handle.poll());
    slowest = std::max(slowest, Clock::now() - start);
    std::this_thread::sleep_for(1ms);
  }
  // The model was asked and its calls admitted, but the act checkpoint is
  // held, so the side-effecting call has not started.
  CHECK(llm->calls() == 1);
  CHECK(*runs == 0);
  CHECK(slowest < 20ms);  // a poll that waited for the store would take the whole hold (50+ ms)

  store->hold(false);
  const auto result = handle.wait();
  CHECK(result.stop_reason == StopReason::answered);
  CHECK(*runs == 1);
  // Every step's checkpoint, in order, written off the host's thread.
  CHECK(store->phases() == std::vector<std::string>{"ask_model", "act", "ask_model", "done"});
  CHECK(store->writer_thread() != std::this_thread::get_id());
  // Once wait() returns the end is in the store.
  auto stored = agentkit::load_run(*store, ctx.scope, "r1");
  REQUIRE(stored);
  CHECK(stored->phase == agentkit::Phase::done);
  CHECK(stored->history == result.state.history);
}

TEST_CASE("a refused asynchronous checkpoint stops the run at the next poll, before its calls run",
          "[durable][async]") {
  auto store = std::make_shared<GatedStore>();
  auto runs = std::make_shared<std::atomic<int>>(0);
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "note", {{"what", "a"}})}}, Turn{.content = "noted"}});
  Agent agent("clerk", "fake", "You take notes.", react({note_tool(runs)}));
  auto ctx = make_test_ctx({.llm = llm, .store = store});
  auto handle = agent.start("take a note", ctx, {.run_id = "r2"});
  store->refuse();
  const auto result = handle.wait();
  CHECK(result.stop_reason == StopReason::failed);
  CHECK_THAT(result.failure.value().message, Catch::Contains("checkpoint failed: disk full"));
  CHECK(*runs == 0);
  CHECK(llm->calls() == 1);
  // The store keeps the last checkpoint that was written: recoverable.
  auto stored = agentkit::load_run(*store, ctx.scope, "r2");
  REQUIRE(stored);
  CHECK(stored->phase == agentkit::Phase::ask_model);
  CHECK(agentkit::interrupted_runs(*store, ctx.scope) == std::vector<std::string>{"r2"});
}

TEST_CASE("a run whose earlier checkpoint was refused does not report success, even if it got to an answer",
          "[durable][async]") {
  auto store = std::make_shared<GatedStore>();
  // A model that answers at once: the only saves are the claim and the end,
  // so the refused save here is the one after a repair turn.
  auto llm = FakeLLM::script({Turn{.content = "not json"}, Turn{.content = "{\"n\": 1}"}});
  agentkit::AgentOptions options;
  options.output = agentkit::OutputSpec{agentkit::Schema{{"type", "object"}}, "Out", [](const Json& v, agentkit::DecodeState&) {
                                          return v.is_object();
                                        }};
  Agent agent("clerk", "fake", "You answer in JSON.", react({}), options);
  auto ctx = make_test_ctx({.llm = llm, .store = store});
  auto handle = agent.start("answer", ctx, {.run_id = "r3"});
  store->hold(true);
  store->refuse();
  // Advance until the run has its answer while the repair turn's save is held.
  for (int i = 0; i < 20 && llm->calls() < 2; ++i) handle.poll();
  REQUIRE(llm->calls() == 2);
  store->hold(false);  // now the held save is refused
  const auto result = handle.wait();
  CHECK(result.stop_reason == StopReason::failed);
  CHECK_THAT(result.failure.value().message, Catch::Contains("checkpoint failed: disk full"));
  CHECK(result.state.stop_reason == StopReason::failed);
}
