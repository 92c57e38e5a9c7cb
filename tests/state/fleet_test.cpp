// FleetWorker against a throwaway PostgreSQL server: worker threads sharing
// one PostgresRunQueue table and one PostgresStore table, as processes of a
// fleet would. Runs are executed by one worker each, an approval submitted
// on another connection wakes a sleeping worker through NOTIFY, a dead
// worker's run is recovered after its lease expires without running its
// side effect again, and a worker never serves another scope's runs.
#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/executor.h>
#include <agentkit/fleet.h>
#include <agentkit/function_tool.h>
#include <agentkit/state/postgres_run_queue.h>
#include <agentkit/state/postgres_store.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../helpers/claimed_first_store.h"
#include "../helpers/cut_store.h"
#include "../helpers/postgres_server.h"
#include "../helpers/tool_calls.h"

namespace {

using namespace std::chrono_literals;
using agentkit::Agent;
using agentkit::Decision;
using agentkit::FleetRunReport;
using agentkit::FleetWorker;
using agentkit::Scope;
using agentkit::StopReason;
using agentkit::cognition::react;
using agentkit::state::PostgresRunQueue;
using agentkit::state::PostgresStore;
using agentkit::testing::make_test_ctx;
using agentkit_test::fresh_table;
using agentkit_test::shared_postgres;
using Outcome = FleetRunReport::Outcome;

const Scope kA{.org_id = 1};
const Scope kB{.org_id = 2};

// A model that calls `tool` once with the task, then answers: its reply
// depends only on the history, so any worker can take a run over mid-way.
class OneCallModel final : public agentkit::Model {
 public:
  explicit OneCallModel(std::string tool) : tool_(std::move(tool)) {}
  agentkit::ModelResponse complete(const agentkit::ModelRequest& request, agentkit::RunContext&) override {
    std::string task;
    bool called = false;
    for (const auto& m : request.messages) {
      if (m.role == agentkit::Role::user && task.empty()) task = m.text();
      if (m.role == agentkit::Role::tool) called = true;
    }
    agentkit::ModelResponse response;
    response.usage = {10, 5, 0};
    if (called) {
      response.message = agentkit::Message::assistant("recorded " + task);
    } else {
      response.message = agentkit::Message::assistant("", {agentkit_test::call("c1", tool_, {{"what", task}})});
      response.finish_reason = "tool_calls";
    }
    return response;
  }

 private:
  std::string tool_;
};

// Side effects, counted by argument.
struct Effects {
  std::mutex mutex;
  std::map<std::string, int> runs;

  agentkit::ToolPtr tool(std::string name, bool approval = false) {
    auto b = agentkit::tool(std::move(name)).doc("Record one thing in the outside world.").side_effecting(true);
    if (approval) b = std::move(b).requires_approval();
    return std::move(b).params("what").fn([this](const std::string& what) {
      std::lock_guard lock(mutex);
      ++runs[what];
      return "done: " + what;
    });
  }
  int count(const std::string& what) {
    std::lock_guard lock(mutex);
    return runs[what];
  }
};

// The workers' reports, waited on.
struct Reports {
  std::mutex mutex;
  std::condition_variable added;
  std::vector<FleetRunReport> all;

  std::function<void(const FleetRunReport&)> sink() {
    return [this](const FleetRunReport& report) {
      {
        std::lock_guard lock(mutex);
        all.push_back(report);
      }
      added.notify_all();
    };
  }
  // Waits until `enough` holds for the reports (up to `timeout`); a copy.
  std::vector<FleetRunReport> until(const std::function<bool(const std::vector<FleetRunReport>&)>& enough,
                                    std::chrono::seconds timeout = 60s) {
    std::unique_lock lock(mutex);
    added.wait_for(lock, timeout, [&] { return enough(all); });
    return all;
  }
};

// Starts `worker`, waits until `count` reports are in (up to a minute) and
// stops it; the reports.
std::vector<FleetRunReport> serve_until(FleetWorker& worker, Reports& reports, std::size_t count) {
  worker.start();
  auto seen = reports.until([count](const auto& all) { return all.size() >= count; });
  worker.stop();
  return seen;
}

std::size_t count_outcome(const std::vector<FleetRunReport>& reports, Outcome outcome) {
  std::size_t n = 0;
  for (const auto& r : reports) n += r.outcome == outcome;
  return n;
}

PostgresRunQueue::Options queue_options(const std::string& table) {
  return {.attempts = 2, .backoff = {.base = 10ms, .max = 50ms}, .table = table};
}

// What the processes of a fleet share: the database's two tables.
struct Fleet {
  explicit Fleet(std::string server = shared_postgres().conninfo()) : conninfo(std::move(server)) {}

  std::string conninfo;
  std::string runs_table = fresh_table();
  std::string store_table = fresh_table();
  std::shared_ptr<PostgresStore> store = std::make_shared<PostgresStore>(
      conninfo, PostgresStore::Options{
                    .pool_size = 8, .attempts = 2, .backoff = {.base = 10ms, .max = 50ms}, .table = store_table});

  std::shared_ptr<PostgresRunQueue> queue() const {
    return std::make_shared<PostgresRunQueue>(conninfo, queue_options(runs_table));
  }
};

// A side-effecting tool whose calls wait until release(): a call in
// flight at the moment a test chooses.
class HeldTool {
 public:
  agentkit::ToolPtr tool() {
    return agentkit::tool("record")
        .doc("Record one thing in the outside world.")
        .side_effecting(true)
        .params("what")
        .fn([this](const std::string& what) {
          std::unique_lock lock(mutex_);
          ++calls_;
          entered_ = true;
          changed_.notify_all();
          changed_.wait(lock, [&] { return go_; });
          return "done: " + what;
        });
  }
  bool wait_entered() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(60), [&] { return entered_; });
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      go_ = true;
    }
    changed_.notify_all();
  }
  int calls() {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool entered_ = false, go_ = false;
  int calls_ = 0;
};

}  // namespace

TEST_CASE("fleet: three workers finish every run and each run is executed by one worker", "[postgres][fleet]") {
  Fleet fleet;
  Effects effects;
  const auto clerk =
      std::make_shared<const Agent>("clerk", "fake", "You record things.", react({effects.tool("record")}));
  Reports reports;
  auto submitter = fleet.queue();
  constexpr int kRuns = 12;
  for (int i = 0; i < kRuns; ++i)
    REQUIRE(submitter->submit(kA, "run-" + std::to_string(i), "clerk", "t" + std::to_string(i)));

  std::vector<std::unique_ptr<FleetWorker>> workers;
  for (int w = 0; w < 3; ++w) {
    auto base = make_test_ctx({.llm = std::make_shared<OneCallModel>("record"), .store = fleet.store});
    workers.push_back(std::make_unique<FleetWorker>(
        fleet.queue(), FleetWorker::Agents{{"clerk", clerk}}, base,
        agentkit::FleetWorkerOptions{.name = "w" + std::to_string(w), .scopes = {kA}, .on_run = reports.sink()}));
    workers.back()->start();
  }
  const auto done = reports.until([](const auto& all) { return all.size() >= kRuns; });
  for (auto& w : workers) w->stop();
  REQUIRE(done.size() == kRuns);
  CHECK(count_outcome(done, Outcome::done) == kRuns);
  int claims = 0;
  for (const auto& w : workers) claims += w->claims();
  CHECK(claims == kRuns);
  std::map<std::string, int> reported;
  for (const auto& r : done) {
    ++reported[r.run_id];
    REQUIRE(r.result);
    CHECK(r.result->stop_reason == StopReason::answered);
  }
  for (int i = 0; i < kRuns; ++i) {
    const std::string id = "run-" + std::to_string(i);
    INFO(id);
    CHECK(reported[id] == 1);
    CHECK(effects.count("t" + std::to_string(i)) == 1);
    const auto info = submitter->info(kA, id);
    REQUIRE(info);
    CHECK(info->status == PostgresRunQueue::Status::done);
    CHECK(info->attempts == 1);
    const auto result = agentkit::Json::parse(info->result.value_or("{}"));
    CHECK(result.value("output", "") == "recorded t" + std::to_string(i));
  }
}

TEST_CASE("fleet: decisions submitted from another connection wake the sleeping worker", "[postgres][fleet]") {
  Fleet fleet;
  Effects effects;
  const auto billing =
      std::make_shared<const Agent>("billing", "fake", "You refund orders.", react({effects.tool("refund", true)}));
  Reports reports;
  auto base = make_test_ctx({.llm = std::make_shared<OneCallModel>("refund"), .store = fleet.store});
  // The safety net is far longer than the wake-up may take.
  FleetWorker worker(fleet.queue(), {{"billing", billing}}, base,
                     {.name = "w", .scopes = {kA}, .idle_wait = 60s, .on_run = reports.sink()});
  worker.start();
  auto approver = fleet.queue();  // another connection, as `agentkit approve` in another process
  REQUIRE(approver->submit(kA, "refund-1", "billing", "A-1"));

  auto seen = reports.until([](const auto& all) { return !all.empty(); });
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].outcome == Outcome::suspended);
  REQUIRE(seen[0].result);
  REQUIRE(seen[0].result->suspended);
  CHECK(seen[0].result->suspended->pending.at(0).id == "c1");
  CHECK(effects.count("A-1") == 0);
  CHECK(approver->info(kA, "refund-1")->status == PostgresRunQueue::Status::suspended);
  // The pending approval is in the run's checkpoint, for any process to read.
  const auto stored = agentkit::load_run(*fleet.store, kA, "refund-1");
  REQUIRE(stored);
  CHECK(stored->phase == agentkit::Phase::suspended);

  const auto start = std::chrono::steady_clock::now();
  REQUIRE(approver->submit_decisions(kA, "refund-1", agentkit::decisions_to_json({{"c1", Decision::approve()}})) ==
          PostgresRunQueue::Decided::runnable);
  seen = reports.until([](const auto& all) { return all.size() >= 2; });
  const auto took = std::chrono::steady_clock::now() - start;
  worker.stop();
  REQUIRE(seen.size() == 2);
  CHECK(seen[1].outcome == Outcome::done);
  CHECK(took < 10s);  // NOTIFY, not the 60 s safety net
  REQUIRE(seen[1].result);
  CHECK(seen[1].result->output == "recorded A-1");
  CHECK(effects.count("A-1") == 1);
  CHECK(approver->info(kA, "refund-1")->status == PostgresRunQueue::Status::done);
}

TEST_CASE("fleet: a dead worker's run is recovered after its lease expires and its side effect runs once",
          "[postgres][fleet]") {
  Fleet fleet;
  Effects effects;
  const auto clerk =
      std::make_shared<const Agent>("clerk", "fake", "You record things.", react({effects.tool("record")}));
  auto queue = fleet.queue();
  REQUIRE(queue->submit(kA, "r1", "clerk", "once"));
  {
    // The worker that dies: it claims with a short lease, runs the run until
    // its side effect happened, and vanishes without a heartbeat or a mark.
    const auto claim = queue->claim("doomed", {kA}, 500ms);
    REQUIRE(claim);
    auto ctx = make_test_ctx({.llm = std::make_shared<OneCallModel>("record"), .scope = kA, .store = fleet.store});
    auto run = clerk->start(claim->task, ctx, {.run_id = claim->run_id});
    while (effects.count("once") == 0 && !run.poll()) {
    }
    REQUIRE(effects.count("once") == 1);
    REQUIRE_FALSE(run.done());  // it dies mid-run
  }
  CHECK(queue->info(kA, "r1")->status == PostgresRunQueue::Status::leased);

  Reports reports;
  auto base = make_test_ctx({.llm = std::make_shared<OneCallModel>("record"), .store = fleet.store});
  // It looks again every 100 ms: nothing notifies a lease's expiry.
  FleetWorker rescuer(
      fleet.queue(), {{"clerk", clerk}}, base,
      {.name = "rescuer", .scopes = {kA}, .lease = 5s, .heartbeat = 1s, .idle_wait = 100ms, .on_run = reports.sink()});
  const auto seen = serve_until(rescuer, reports, 1);
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].outcome == Outcome::done);
  CHECK(seen[0].taken_over);
  CHECK(seen[0].attempt == 2);
  REQUIRE(seen[0].result);
  CHECK(seen[0].result->stop_reason == StopReason::answered);
  CHECK(seen[0].result->output == "recorded once");
  CHECK(effects.count("once") == 1);  // the ledger's record, not a second call
  const auto info = queue->info(kA, "r1");
  CHECK(info->status == PostgresRunQueue::Status::done);
  CHECK(info->attempts == 2);
}

TEST_CASE("fleet: a worker paused past its lease cannot mark the run another worker took over", "[postgres][fleet]") {
  Fleet fleet;
  Effects effects;
  const auto clerk =
      std::make_shared<const Agent>("clerk", "fake", "You record things.", react({effects.tool("record")}));
  auto queue = fleet.queue();
  REQUIRE(queue->submit(kA, "r1", "clerk", "fenced"));
  const auto paused = queue->claim("paused", {kA}, 500ms);
  REQUIRE(paused);
  // Another worker takes it over once the lease has expired, and ends it.
  Reports reports;
  auto base = make_test_ctx({.llm = std::make_shared<OneCallModel>("record"), .store = fleet.store});
  FleetWorker other(
      fleet.queue(), {{"clerk", clerk}}, base,
      {.name = "other", .scopes = {kA}, .lease = 5s, .heartbeat = 1s, .idle_wait = 100ms, .on_run = reports.sink()});
  other.start();
  const auto seen = reports.until([](const auto& all) { return !all.empty(); });
  other.stop();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].outcome == Outcome::done);
  CHECK(seen[0].taken_over);
  // The paused worker wakes up: its lease is gone, and so is every change.
  CHECK_FALSE(queue->heartbeat("paused", *paused, 30s));
  CHECK_FALSE(queue->mark_done("paused", *paused, "overwritten"));
  CHECK_FALSE(queue->mark_suspended("paused", *paused));
  CHECK_FALSE(queue->release("paused", *paused));
  const auto info = queue->info(kA, "r1");
  CHECK(info->status == PostgresRunQueue::Status::done);
  CHECK(agentkit::Json::parse(info->result.value_or("{}")).value("output", "") == "recorded fenced");
  CHECK(effects.count("fenced") == 1);
}

TEST_CASE("fleet: a worker serving scope A never runs scope B's runs", "[postgres][fleet]") {
  Fleet fleet;
  Effects effects;
  const auto clerk =
      std::make_shared<const Agent>("clerk", "fake", "You record things.", react({effects.tool("record")}));
  auto queue = fleet.queue();
  // B's run is older: a worker that ignored scopes would take it first.
  REQUIRE(queue->submit(kB, "b1", "clerk", "for B"));
  REQUIRE(queue->submit(kA, "a1", "clerk", "for A"));
  Reports reports;
  auto base = make_test_ctx({.llm = std::make_shared<OneCallModel>("record"), .store = fleet.store});
  FleetWorker worker(fleet.queue(), {{"clerk", clerk}}, base, {.name = "wa", .scopes = {kA}, .on_run = reports.sink()});
  worker.start();
  reports.until([](const auto& all) { return !all.empty(); });
  // A later submission to B wakes the worker (NOTIFY) and is not claimed either.
  REQUIRE(queue->submit(kB, "b2", "clerk", "also for B"));
  REQUIRE(queue->submit(kA, "a2", "clerk", "for A again"));
  const auto all = reports.until([](const auto& all) { return all.size() >= 2; });
  worker.stop();
  REQUIRE(all.size() == 2);
  CHECK(worker.claims() == 2);
  for (const auto& r : all) {
    CHECK(r.scope == kA);
    CHECK(r.outcome == Outcome::done);
  }
  CHECK(effects.count("for A") == 1);
  CHECK(effects.count("for A again") == 1);
  CHECK(effects.count("for B") == 0);
  CHECK(effects.count("also for B") == 0);
  for (const char* id : {"b1", "b2"}) {
    const auto info = queue->info(kB, id);
    REQUIRE(info);
    CHECK(info->status == PostgresRunQueue::Status::runnable);
    CHECK(info->attempts == 0);
    CHECK_FALSE(agentkit::load_run(*fleet.store, kB, id));  // never started
  }
}

TEST_CASE("fleet: workers reconnect after the server restarts and finish the runs submitted then",
          "[postgres][fleet]") {
  agentkit_test::PostgresServer server;  // its own: this case restarts it
  Fleet fleet(server.conninfo());
  Effects effects;
  const auto clerk =
      std::make_shared<const Agent>("clerk", "fake", "You record things.", react({effects.tool("record")}));
  Reports reports;
  std::vector<std::unique_ptr<FleetWorker>> workers;
  for (int w = 0; w < 2; ++w) {
    auto base = make_test_ctx({.llm = std::make_shared<OneCallModel>("record"), .store = fleet.store});
    // No safety-net wake-up within the test's time: only LISTEN (and the
    // reconnection) wakes them.
    workers.push_back(std::make_unique<FleetWorker>(fleet.queue(), FleetWorker::Agents{{"clerk", clerk}}, base,
                                                    agentkit::FleetWorkerOptions{.name = "w" + std::to_string(w),
                                                                                 .scopes = {kA},
                                                                                 .lease = 120s,
                                                                                 .heartbeat = 10s,
                                                                                 .idle_wait = 120s,
                                                                                 .on_run = reports.sink()}));
    workers.back()->start();
  }
  REQUIRE(fleet.queue()->submit(kA, "before", "clerk", "before"));
  REQUIRE(reports.until([](const auto& all) { return !all.empty(); }, 30s).size() == 1);

  server.stop();
  server.start();
  auto submitter = fleet.queue();
  constexpr int kAfter = 4;
  for (int i = 0; i < kAfter; ++i)
    REQUIRE(submitter->submit(kA, "after-" + std::to_string(i), "clerk", "a" + std::to_string(i)));
  const auto all = reports.until([](const auto& all) { return all.size() >= 1 + kAfter; }, 60s);
  for (auto& w : workers) w->stop();
  REQUIRE(all.size() == 1 + kAfter);
  CHECK(count_outcome(all, Outcome::done) == 1 + kAfter);
  CHECK(effects.count("before") == 1);
  for (int i = 0; i < kAfter; ++i) {
    CHECK(effects.count("a" + std::to_string(i)) == 1);
    CHECK(submitter->info(kA, "after-" + std::to_string(i))->status == PostgresRunQueue::Status::done);
  }
}

TEST_CASE("fleet: a worker stopped mid-call gives the run back and the next one recovers it without calling again",
          "[postgres][fleet]") {
  Fleet fleet;
  HeldTool record;  // still running when its worker stops
  const auto clerk = std::make_shared<const Agent>("clerk", "fake", "You record things.", react({record.tool()}));
  auto executor = std::make_shared<agentkit::ThreadPoolExecutor>(2);
  // A context (an invoker) per worker, as in two processes: one invoker
  // would let the second call join the first, still in flight.
  const auto base = [&] {
    return make_test_ctx({.llm = std::make_shared<OneCallModel>("record"), .executor = executor, .store = fleet.store});
  };
  Reports reports;
  auto queue = fleet.queue();
  REQUIRE(queue->submit(kA, "r1", "clerk", "slow"));
  {
    FleetWorker first(fleet.queue(), {{"clerk", clerk}}, base(),
                      {.name = "first", .scopes = {kA}, .on_run = reports.sink()});
    first.start();
    REQUIRE(record.wait_entered());
    first.stop();
  }
  auto seen = reports.until([](const auto& all) { return !all.empty(); });
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].outcome == Outcome::released);
  CHECK(queue->info(kA, "r1")->status == PostgresRunQueue::Status::runnable);

  FleetWorker second(fleet.queue(), {{"clerk", clerk}}, base(),
                     {.name = "second", .scopes = {kA}, .on_run = reports.sink()});
  seen = serve_until(second, reports, 2);
  record.release();  // the first call may end now; nothing waits for it
  REQUIRE(seen.size() == 2);
  CHECK(seen[1].outcome == Outcome::done);
  CHECK_FALSE(seen[1].taken_over);  // given back, not expired
  CHECK(seen[1].attempt == 2);
  REQUIRE(seen[1].result);
  CHECK(seen[1].result->output == "recorded slow");
  // The call that started and recorded nothing is outcome_unknown, not run again.
  bool unknown = false;
  for (const auto& m : seen[1].result->state.history) {
    if (m.role == agentkit::Role::tool)
      unknown = m.is_error && m.text().find("outcome of this call is unknown") != std::string::npos;
  }
  CHECK(unknown);
  CHECK(record.calls() == 1);
}

TEST_CASE("fleet: a worker whose lease was taken over lets the run go and the new owner finishes it",
          "[postgres][fleet]") {
  Fleet fleet;
  HeldTool record;
  const auto clerk = std::make_shared<const Agent>("clerk", "fake", "You record things.", react({record.tool()}));
  auto executor = std::make_shared<agentkit::ThreadPoolExecutor>(2);
  const auto base = [&] {
    return make_test_ctx({.llm = std::make_shared<OneCallModel>("record"), .executor = executor, .store = fleet.store});
  };
  Reports reports;
  auto queue = fleet.queue();
  REQUIRE(queue->submit(kA, "r1", "clerk", "contested"));
  FleetWorker slow(fleet.queue(), {{"clerk", clerk}}, base(),
                   {.name = "slow", .scopes = {kA}, .lease = 5s, .heartbeat = 100ms, .on_run = reports.sink()});
  slow.start();
  REQUIRE(record.wait_entered());
  // Another worker takes the run over in one statement, as a claim after
  // the lease expired would (the slow worker's heartbeat cannot slip between).
  shared_postgres().sql("UPDATE \"" + fleet.runs_table +
                        "\" SET lease_owner = 'taker', lease_token = lease_token + 1,"
                        " lease_expires_at = now() + interval '1 minute', attempts = attempts + 1 WHERE run_id = 'r1'");
  auto seen = reports.until([](const auto& all) { return !all.empty(); });
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].outcome == Outcome::lost);
  slow.stop();
  const auto info = queue->info(kA, "r1");
  CHECK(info->status == PostgresRunQueue::Status::leased);
  CHECK(info->lease_owner == "taker");
  record.release();  // the slow worker's call ends; its run is gone

  // The taker gives it back; a worker finishes it without calling again.
  PostgresRunQueue::Claim taker{.scope = kA, .run_id = "r1", .lease_token = info->lease_token};
  REQUIRE(queue->release("taker", taker));
  FleetWorker next(fleet.queue(), {{"clerk", clerk}}, base(),
                   {.name = "next", .scopes = {kA}, .on_run = reports.sink()});
  seen = serve_until(next, reports, 2);
  REQUIRE(seen.size() == 2);
  CHECK(seen[1].outcome == Outcome::done);
  REQUIRE(seen[1].result);
  CHECK(seen[1].result->output == "recorded contested");
  CHECK(queue->info(kA, "r1")->status == PostgresRunQueue::Status::done);
  CHECK(record.calls() == 1);
}

TEST_CASE("fleet: decisions that do not fit leave the run suspended and nothing runs", "[postgres][fleet]") {
  // The JSON the queue carries, both ways.
  const agentkit::Decisions decisions{
      {"a", Decision::approve()}, {"b", Decision::reject("too much")}, {"c", Decision::edit({{"what", "less"}})}};
  const auto back = agentkit::decisions_from_json(agentkit::decisions_to_json(decisions));
  REQUIRE(back.size() == 3);
  CHECK(back.at("a").kind == Decision::Kind::approve);
  CHECK(back.at("b").kind == Decision::Kind::reject);
  CHECK(back.at("b").message == "too much");
  CHECK(back.at("c").kind == Decision::Kind::edit);
  CHECK(back.at("c").arguments == agentkit::Json{{"what", "less"}});
  CHECK_THROWS_AS(agentkit::decisions_from_json("[1]"), agentkit::Error);
  CHECK_THROWS_AS(agentkit::decisions_from_json(R"({"c1": {"kind": "maybe"}})"), agentkit::Error);

  Fleet fleet;
  Effects effects;
  const auto billing =
      std::make_shared<const Agent>("billing", "fake", "You refund orders.", react({effects.tool("refund", true)}));
  Reports reports;
  FleetWorker worker(fleet.queue(), {{"billing", billing}},
                     make_test_ctx({.llm = std::make_shared<OneCallModel>("refund"), .store = fleet.store}),
                     {.name = "w", .scopes = {kA}, .on_run = reports.sink()});
  worker.start();
  auto approver = fleet.queue();
  REQUIRE(approver->submit(kA, "refund-1", "billing", "A-1"));
  reports.until([](const auto& all) { return !all.empty(); });
  // Unreadable: the queue refuses them. Naming a call that is not pending:
  // the run is suspended again, untouched.
  CHECK_THROWS_AS(approver->submit_decisions(kA, "refund-1", "not json"), agentkit::Error);
  REQUIRE(approver->submit_decisions(kA, "refund-1", agentkit::decisions_to_json({{"c9", Decision::approve()}})) ==
          PostgresRunQueue::Decided::runnable);
  reports.until([](const auto& all) { return all.size() >= 2; });
  REQUIRE(approver->submit_decisions(kA, "refund-1", agentkit::decisions_to_json({{"c1", Decision::approve()}})) ==
          PostgresRunQueue::Decided::runnable);
  const auto seen = reports.until([](const auto& all) { return all.size() >= 3; });
  worker.stop();
  REQUIRE(seen.size() == 3);
  CHECK(seen[1].outcome == Outcome::suspended);
  CHECK(seen[2].outcome == Outcome::done);
  REQUIRE(seen[2].result);
  CHECK(seen[2].result->output == "recorded A-1");
  CHECK(effects.count("A-1") == 1);
}

TEST_CASE("fleet: decisions a dead worker resumed with are never applied to the run's next suspension",
          "[postgres][fleet]") {
  // The model numbers its calls per turn, as some servers do: "c1" refunds
  // 20, then "c1" refunds 5000, each awaiting approval.
  Fleet fleet;
  Effects effects;
  const auto billing =
      std::make_shared<const Agent>("billing", "fake", "You refund orders.", react({effects.tool("refund", true)}));
  auto llm = agentkit::testing::FakeLLM::script({
      agentkit::testing::Turn{.tool_calls = {agentkit_test::call("c1", "refund", {{"what", "20"}})}},
      agentkit::testing::Turn{.tool_calls = {agentkit_test::call("c1", "refund", {{"what", "5000"}})}},
      agentkit::testing::Turn{.content = "refunded 20; 5000 refused"},
  });
  auto ctx = make_test_ctx({.llm = llm, .store = fleet.store});
  ctx.scope = kA;
  auto queue = fleet.queue();
  REQUIRE(queue->submit(kA, "refund-1", "billing", "refund A-1"));

  // A worker ("ghost") runs it to its first suspension and marks it; the
  // human approves c1 (the 20); the ghost claims it again, resumes with that
  // decision, reaches the next suspension (c1: the 5000) and dies before
  // marking it: the queue still holds it leased, with the 20's approval.
  auto first = queue->claim("ghost", {kA}, 60s);
  REQUIRE(first);
  REQUIRE(billing->run(first->task, ctx, {.run_id = "refund-1"}).stop_reason == agentkit::StopReason::suspended);
  REQUIRE(queue->mark_suspended("ghost", *first));
  REQUIRE(queue->submit_decisions(kA, "refund-1", agentkit::decisions_to_json({{"c1", Decision::approve()}}), {"c1"}) ==
          PostgresRunQueue::Decided::runnable);
  auto resumed = queue->claim("ghost", {kA}, 300ms);
  REQUIRE(resumed);
  REQUIRE(resumed->decisions);
  const auto again = billing->resume("refund-1", agentkit::decisions_from_json(*resumed->decisions), ctx);
  REQUIRE(again.stop_reason == agentkit::StopReason::suspended);
  REQUIRE(effects.count("20") == 1);

  // The worker that takes it over asks for decisions again.
  Reports reports;
  FleetWorker worker(fleet.queue(), {{"billing", billing}}, ctx, {.name = "w", .scopes = {kA}, .on_run = reports.sink()});
  worker.start();
  auto seen = reports.until([](const auto& all) { return !all.empty(); });
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].taken_over);
  CHECK(seen[0].outcome == Outcome::suspended);
  CHECK(effects.count("5000") == 0);
  const auto info = queue->info(kA, "refund-1");
  REQUIRE(info);
  CHECK(info->status == PostgresRunQueue::Status::suspended);
  CHECK_FALSE(info->decisions);

  // Decided for what it awaits now: refused, and the run finishes.
  REQUIRE(queue->submit_decisions(kA, "refund-1", agentkit::decisions_to_json({{"c1", Decision::reject("too much")}}),
                                  {"c1"}) == PostgresRunQueue::Decided::runnable);
  seen = reports.until([](const auto& all) { return all.size() >= 2; });
  worker.stop();
  REQUIRE(seen.size() == 2);
  CHECK(seen[1].outcome == Outcome::done);
  CHECK(effects.count("5000") == 0);
  CHECK(effects.count("20") == 1);
}

TEST_CASE("fleet: a run another process advanced after this worker loaded it goes back to the queue, not done",
          "[postgres][fleet]") {
  Fleet fleet;
  Effects effects;
  const auto billing =
      std::make_shared<const Agent>("billing", "fake", "You refund orders.", react({effects.tool("refund", true)}));
  auto ctx = make_test_ctx({.llm = std::make_shared<OneCallModel>("refund"), .store = fleet.store});
  ctx.scope = kA;
  auto queue = fleet.queue();
  REQUIRE(queue->submit(kA, "refund-2", "billing", "A-2"));
  Reports reports;
  {
    FleetWorker worker(fleet.queue(), {{"billing", billing}}, ctx, {.name = "w1", .scopes = {kA}, .on_run = reports.sink()});
    REQUIRE(serve_until(worker, reports, 1).at(0).outcome == Outcome::suspended);
  }
  // The resume's claim of the checkpoint loses to another process's write
  // (a holder paused past its lease that advanced the run after this load).
  auto racing = std::make_shared<agentkit_test::ClaimedFirstStore>(fleet.store, "runs/refund-2");
  ctx.store = racing;
  FleetWorker worker(fleet.queue(), {{"billing", billing}}, ctx, {.name = "w2", .scopes = {kA}, .on_run = reports.sink()});
  worker.start();
  REQUIRE(queue->submit_decisions(kA, "refund-2", agentkit::decisions_to_json({{"c1", Decision::approve()}}), {"c1"}) ==
          PostgresRunQueue::Decided::runnable);
  // Given back, not done as failed. Its next claim cannot know which
  // suspension the run is at now, so the decision is asked for again.
  auto seen = reports.until([](const auto& all) { return all.size() >= 3; });
  CHECK_FALSE(racing->armed);
  REQUIRE(seen.size() == 3);
  CHECK(seen[1].outcome == Outcome::released);
  CHECK(seen[2].outcome == Outcome::suspended);
  CHECK(effects.count("A-2") == 0);
  REQUIRE(queue->submit_decisions(kA, "refund-2", agentkit::decisions_to_json({{"c1", Decision::approve()}}), {"c1"}) ==
          PostgresRunQueue::Decided::runnable);
  seen = reports.until([](const auto& all) { return all.size() >= 4; });
  worker.stop();
  REQUIRE(seen.size() == 4);
  CHECK(seen[3].outcome == Outcome::done);
  REQUIRE(seen[3].result);
  CHECK(seen[3].result->output == "recorded A-2");
  CHECK(effects.count("A-2") == 1);
}

TEST_CASE("fleet: a call running inline for longer than the lease keeps it (the lease thread heartbeats)",
          "[postgres][fleet]") {
  Fleet fleet;
  std::atomic<int> calls{0};
  auto slow = agentkit::tool("record")
                  .doc("Record one thing in the outside world, slowly.")
                  .side_effecting(true)
                  .params("what")
                  .fn([&](const std::string& what) {
                    ++calls;
                    std::this_thread::sleep_for(2s);  // inline: the run's poll() does not return meanwhile
                    return "done: " + what;
                  });
  const auto clerk = std::make_shared<const Agent>("clerk", "fake", "You record things.", react({slow}));
  Reports reports;
  auto base = make_test_ctx({.llm = std::make_shared<OneCallModel>("record"), .store = fleet.store});
  REQUIRE_FALSE(base.executor);
  const agentkit::FleetWorkerOptions options{
      .scopes = {kA}, .lease = 600ms, .heartbeat = 150ms, .idle_wait = 100ms, .on_run = reports.sink()};
  auto named = [&](std::string name) {
    auto o = options;
    o.name = std::move(name);
    return o;
  };
  FleetWorker first(fleet.queue(), {{"clerk", clerk}}, base, named("first"));
  auto submitter = fleet.queue();
  REQUIRE(submitter->submit(kA, "slow-1", "clerk", "t"));
  first.start();
  // A second worker looks for expired leases every 100 ms all along.
  FleetWorker second(fleet.queue(), {{"clerk", clerk}}, base, named("second"));
  second.start();
  const auto seen = reports.until([](const auto& all) { return !all.empty(); });
  second.stop();
  first.stop();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].outcome == Outcome::done);
  CHECK(seen[0].attempt == 1);
  CHECK(calls == 1);
  CHECK(second.claims() == 0);
  const auto info = submitter->info(kA, "slow-1");
  REQUIRE(info);
  CHECK(info->attempts == 1);
}

TEST_CASE("fleet: a run whose checkpoint could not be stored goes back to the queue and finishes once",
          "[postgres][fleet]") {
  Fleet fleet;
  Effects effects;
  const auto clerk =
      std::make_shared<const Agent>("clerk", "fake", "You record things.", react({effects.tool("record")}));
  Reports reports;
  // Run document writes: the claim, the model's call, the call's outcome (cut), the end.
  auto base = make_test_ctx({.llm = std::make_shared<OneCallModel>("record"),
                             .store = std::make_shared<agentkit_test::CutStore>(fleet.store, "/runs/", 3)});
  FleetWorker worker(fleet.queue(), {{"clerk", clerk}}, base,
                     {.name = "w", .scopes = {kA}, .idle_wait = 100ms, .on_run = reports.sink()});
  auto submitter = fleet.queue();
  REQUIRE(submitter->submit(kA, "cut-1", "clerk", "t"));
  worker.start();
  const auto seen = reports.until([](const auto& all) { return !all.empty() && all.back().outcome == Outcome::done; });
  worker.stop();
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].outcome == Outcome::retried);  // not marked done as failed
  CHECK_THAT(seen[0].error, Catch::Contains("not in the store"));
  CHECK(seen[1].outcome == Outcome::done);
  CHECK(seen[1].attempt == 2);
  REQUIRE(seen[1].result);
  CHECK(seen[1].result->stop_reason == StopReason::answered);
  CHECK(effects.count("t") == 1);  // recovered from the ledger, not called again
  const auto stored = agentkit::load_run(*fleet.store, kA, "cut-1");
  REQUIRE(stored);
  CHECK(stored->output == "recorded t");
}
