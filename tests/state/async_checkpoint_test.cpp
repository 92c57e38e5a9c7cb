// A durable run's checkpoints are written off the host's thread: poll()
// never waits on the store, saves land in order, a batch starts only once
// the checkpoint naming it is written, and a refused save still stops the
// run (never a silent success).
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
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
// (a full one: every write once refuse() is called, or every write but the
// first of the runs whose id starts with `refused`), recording the phase of
// every run document it writes, in order and by run.
class GatedStore final : public agentkit::state::Store {
 public:
  explicit GatedStore(std::string refused = "\x01") : refused_(std::move(refused)) {}
  std::optional<agentkit::state::Entry> get(std::string_view key) override { return inner_.get(key); }
  std::int64_t put(std::string_view key, std::string value, Ttl ttl) override {
    return inner_.put(key, std::move(value), ttl);
  }
  std::optional<std::int64_t> compare_and_set(std::string_view key, std::int64_t expected, std::string value,
                                              Ttl ttl) override {
    const auto at = key.find("runs/");
    if (at == std::string_view::npos) return inner_.compare_and_set(key, expected, std::move(value), ttl);
    {
      std::unique_lock lock(mutex_);
      writer_thread_ = std::this_thread::get_id();
      cv_.wait(lock, [&] { return !hold_; });
      auto& run = by_run_[std::string(key)];
      if (refuse_ || (!run.empty() && key.substr(at + 5).starts_with(refused_))) {
        throw agentkit::state::StoreError("disk full");
      }
      run.push_back(Json::parse(value).at("phase").get<std::string>());
      phases_.push_back(run.back());
    }
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
  // Every phase written, in order (of all runs).
  std::vector<std::string> phases() {
    std::lock_guard lock(mutex_);
    return phases_;
  }
  std::map<std::string, std::vector<std::string>> phases_by_run() {
    std::lock_guard lock(mutex_);
    return by_run_;
  }
  // The phases written for run `id`, in order.
  std::vector<std::string> phases_of(std::string_view id) {
    std::lock_guard lock(mutex_);
    for (const auto& entry : by_run_) {
      if (entry.first.ends_with("runs/" + std::string(id))) return entry.second;
    }
    return {};
  }
  std::thread::id writer_thread() {
    std::lock_guard lock(mutex_);
    return writer_thread_;
  }

 private:
  agentkit::state::InMemoryStore inner_;
  std::string refused_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool hold_ = false;
  bool refuse_ = false;
  std::vector<std::string> phases_;
  std::map<std::string, std::vector<std::string>> by_run_;
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

TEST_CASE("poll() never waits on a slow store, a batch starts only once its checkpoint is written",
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

TEST_CASE("a run that fails while its end save is still queued takes no further step",
          "[durable][async]") {
  auto store = std::make_shared<GatedStore>();
  auto llm = FakeLLM::script({Turn{.content = "not json"}, Turn{.content = "{\"n\": 1}"}});
  agentkit::AgentOptions options;
  options.output = agentkit::OutputSpec{agentkit::Schema{{"type", "object"}}, "Out", [](const Json& v, agentkit::DecodeState&) {
                                          return v.is_object();
                                        }};
  // The estimator fails once the model has spoken: at the step after the repair.
  options.context_policy = agentkit::ContextPolicy{
      .max_tokens = 100000, .estimate = [](const agentkit::Message& m) -> std::size_t {
        if (m.role == agentkit::Role::assistant) throw std::runtime_error("estimator down");
        return 1;
      }};
  Agent agent("clerk", "fake", "You answer in JSON.", react({}), options);
  auto ctx = make_test_ctx({.llm = llm, .store = store});
  auto handle = agent.start("answer", ctx, {.run_id = "r4"});
  store->hold(true);  // from here the failed run's end save waits in the writer
  for (int i = 0; i < 20 && !handle.poll(); ++i) std::this_thread::sleep_for(1ms);
  CHECK(llm->calls() == 1);  // the policy failed the run: no model is asked after that
  store->hold(false);
  const auto result = handle.wait();
  CHECK(result.stop_reason == StopReason::failed);
  CHECK_THAT(result.failure.value().message, Catch::Contains("estimator down"));
  CHECK(llm->calls() == 1);
}

namespace {

// Threads writing checkpoints now (the store writers name theirs), or -1
// where /proc/self/task cannot tell.
int writer_threads() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::directory_iterator tasks("/proc/self/task", ec);
  if (ec) return -1;
  int n = 0;
  for (const auto& task : tasks) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name == "agentkit-ckpt") ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("200 concurrent durable runs on one store share one writer thread, each run's saves in order, and the thread outlives them",
          "[durable][async]") {
  if (writer_threads() < 0) {
    WARN("skipped: /proc/self/task is not readable here, so writer threads cannot be counted");
    return;
  }
  auto store = std::make_shared<GatedStore>();
  auto runs = std::make_shared<std::atomic<int>>(0);
  Agent agent("clerk", "fake", "You take notes.", react({note_tool(runs)}));
  constexpr int kRuns = 200;
  std::vector<agentkit::RunHandle> handles;
  std::vector<agentkit::RunContext> contexts;
  for (int i = 0; i < kRuns; ++i) {
    auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "note", {{"what", std::to_string(i)}})}},
                                Turn{.content = "noted " + std::to_string(i)}});
    contexts.push_back(make_test_ctx({.llm = llm, .store = store}));
    handles.push_back(agent.start("take a note", contexts.back(), {.run_id = "r" + std::to_string(i)}));
  }
  int most_threads = writer_threads();
  const auto deadline = Clock::now() + 60s;
  for (bool all_done = false; !all_done;) {
    REQUIRE(Clock::now() < deadline);
    all_done = true;
    for (auto& handle : handles) all_done = handle.poll() && all_done;
    most_threads = std::max(most_threads, writer_threads());
    if (!all_done) std::this_thread::sleep_for(1ms);
  }
  if (most_threads == 0) {
    WARN("writer threads cannot be counted here (thread names are not visible in /proc/self/task)");
  } else {
    CHECK(most_threads == 1);  // one per run would be 200
  }
  CHECK(*runs == kRuns);
  for (int i = 0; i < kRuns; ++i) {
    handles[i].wait();  // the end is in the store
    const auto& result = handles[i].result();
    CHECK(result.stop_reason == StopReason::answered);
    CHECK(result.output == "noted " + std::to_string(i));
    auto stored = agentkit::load_run(*store, contexts[i].scope, "r" + std::to_string(i));
    REQUIRE(stored);
    CHECK(stored->phase == agentkit::Phase::done);
    CHECK(stored->history == result.state.history);
  }
  for (const auto& entry : store->phases_by_run()) {
    CHECK(entry.second == std::vector<std::string>{"ask_model", "act", "ask_model", "done"});
  }
  CHECK(store->phases_by_run().size() == kRuns);
  handles.clear();
  if (most_threads == 0) return;
  CHECK(writer_threads() == 1);  // the store's writer waits for its next run: runs do not start threads
  // Once the store is gone, the next durable run (on another store) joins its writer.
  contexts.clear();
  store.reset();
  auto other = std::make_shared<GatedStore>();
  auto llm = FakeLLM::script({Turn{.content = "nothing to note"}});
  auto ctx = make_test_ctx({.llm = llm, .store = other});
  auto handle = agent.start("take a note", ctx, {.run_id = "after"});
  CHECK(writer_threads() == 1);
  handle.wait();
  CHECK(handle.result().stop_reason == StopReason::answered);
}

TEST_CASE("runs on different stores do not wait on each other's writer, a refused save fails only its own run",
          "[durable][async]") {
  auto held = std::make_shared<GatedStore>();
  auto free = std::make_shared<GatedStore>("bad");
  auto runs = std::make_shared<std::atomic<int>>(0);
  Agent agent("clerk", "fake", "You take notes.", react({note_tool(runs)}));
  const auto script = [] {
    return FakeLLM::script({Turn{.tool_calls = {call("c1", "note", {{"what", "a"}})}}, Turn{.content = "noted"}});
  };
  auto held_ctx = make_test_ctx({.llm = script(), .store = held});
  auto held_run = agent.start("take a note", held_ctx, {.run_id = "slow"});
  held->hold(true);  // its writer blocks in the store from its next save on
  for (int i = 0; i < 5; ++i) held_run.poll();

  auto good_ctx = make_test_ctx({.llm = script(), .store = free});
  auto bad_ctx = make_test_ctx({.llm = script(), .store = free});
  auto good = agent.start("take a note", good_ctx, {.run_id = "good"});
  auto bad = agent.start("take a note", bad_ctx, {.run_id = "bad"});
  const auto good_result = good.wait();  // would hang if it waited for the held store's writer
  const auto bad_result = bad.wait();
  CHECK(good_result.stop_reason == StopReason::answered);
  CHECK(bad_result.stop_reason == StopReason::failed);
  CHECK_THAT(bad_result.failure.value().message, Catch::Contains("checkpoint failed: disk full"));
  CHECK(free->phases_of("good") == std::vector<std::string>{"ask_model", "act", "ask_model", "done"});
  CHECK_FALSE(held_run.done());

  held->hold(false);
  CHECK(held_run.wait().stop_reason == StopReason::answered);
  CHECK(held->phases_of("slow") == std::vector<std::string>{"ask_model", "act", "ask_model", "done"});
}

TEST_CASE("model calls on an executor see the whole history at every turn (the engine's copy grows by appending)",
          "[durable][async]") {
  auto runs = std::make_shared<std::atomic<int>>(0);
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "note", {{"what", "a"}})}},
                              Turn{.tool_calls = {call("c2", "note", {{"what", "b"}})}},
                              Turn{.tool_calls = {call("c3", "note", {{"what", "c"}})}}, Turn{.content = "noted"}});
  Agent agent("clerk", "fake", "You take notes.", react({note_tool(runs)}));
  auto executor = std::make_shared<agentkit::ThreadPoolExecutor>(1);
  auto ctx = make_test_ctx({.llm = llm, .executor = executor});
  auto handle = agent.start("take three notes", ctx, {.run_id = "r4"});
  const auto result = handle.wait();
  REQUIRE(result.stop_reason == StopReason::answered);
  const auto requests = llm->requests();
  REQUIRE(requests.size() == 4);
  const auto& history = result.state.history;  // task, then (call, result) per turn, then the answer
  for (std::size_t k = 0; k < requests.size(); ++k) {
    const std::vector<agentkit::Message> prefix(history.begin(), history.begin() + static_cast<std::ptrdiff_t>(1 + 2 * k));
    CHECK(requests[k].messages == prefix);
  }
}

TEST_CASE("a forked child's durable runs on a store its parent used get a writer thread of their own",
          "[durable][async]") {
  // The parent's run leaves the store's writer thread waiting; a forked child
  // has no such thread, so a run there must not queue saves to it (they would
  // never be written and the run would never end).
  auto store = std::make_shared<agentkit::state::InMemoryStore>();
  auto runs = std::make_shared<std::atomic<int>>(0);
  Agent agent("clerk", "fake", "You take notes.", react({note_tool(runs)}));
  const auto run_once = [&](const std::string& id) {
    auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "note", {{"what", id}})}}, Turn{.content = "noted"}});
    auto ctx = make_test_ctx({.llm = llm, .store = store});
    auto handle = agent.start("take a note", ctx, {.run_id = id});
    handle.wait();
    return handle.result().stop_reason == StopReason::answered &&
           agentkit::load_run(*store, ctx.scope, id)->phase == agentkit::Phase::done;
  };
  REQUIRE(run_once("parent"));
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer cannot start threads in the child of a multi-threaded
  // fork (it dies by design); the other builds run this case.
  WARN("skipped under ThreadSanitizer: it does not support threads started after a multi-threaded fork");
  return;
#endif
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::alarm(30);  // a hang ends the child (SIGALRM), and the check below fails
    ::_exit(run_once("child") ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(run_once("parent again"));  // the parent's writer is still its own
}
