// Fleet benchmarks on a throwaway PostgreSQL server (tests/helpers/
// postgres_server.h: initdb in a temporary directory, Unix socket only; as
// root it runs as the `postgres` user). It measures:
//
// 1. Throughput: N runs submitted at once to a PostgresRunQueue and served
//    by 1, 2 and 4 FleetWorker threads. Each worker is set up as a separate
//    process would be: its own PostgresRunQueue, its own PostgresStore object
//    (on the same table) and its own base context (invoker, model). A run is
//    short: the model asks for one side-effecting tool call, then answers.
//    Timed from the first submit() until every run's FleetRunReport came in;
//    prints runs/s and the ratios 2/1 and 4/1.
// 2. Approval-to-resume latency through LISTEN/NOTIFY: a run suspends on a
//    tool that requires approval; the only worker sleeps on LISTEN with a
//    60 s idle_wait, so only the NOTIFY of submit_decisions() can wake it
//    in time. Timed from submit_decisions() returning to the resumed run's
//    first model call (after the approved tool ran) and to the worker's
//    FleetRunReport for it (the run done and marked). Median and p99 in ms.
// 3. The cost of a checkpoint on PostgreSQL beside SQLite: bench_checkpoint's
//    workload (add_script: K calls of a side-effecting tool, then an answer)
//    run durable on each store; µs per iteration, what durability adds per
//    iteration over no store, and PostgreSQL / SQLite ratios. The helper's
//    server runs with fsync, synchronous_commit and full_page_writes off; the
//    PostgreSQL rows are measured that way and again with them turned on
//    (ALTER SYSTEM + reload), the fair match for SQLite durability full.
//
// The figures are noisy, the more so on a 2-core VM where the server, the
// workers and the benchmark share the cores: compare ratios within one run,
// not figures across runs. No targets: the figures are reported only.
//
// Usage: bench_fleet [runs [latency_samples [iterations]]]; defaults 200 50 50.
// AGENTKIT_BENCH_QUICK=1 (or "quick" as the only argument): 40 runs, 10
// samples, K = 20 and fewer repetitions, for a check in well under a minute.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/fleet.h>
#include <agentkit/function_tool.h>
#include <agentkit/state/postgres_run_queue.h>
#include <agentkit/state/postgres_store.h>
#include <agentkit/state/sqlite_store.h>
#include <agentkit/state/store.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/postgres_server.h"
#include "add_script.h"
#include "durable_runs.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using agentkit::FleetRunReport;
using agentkit::FleetWorker;
using agentkit::Scope;
using agentkit::state::PostgresRunQueue;
using agentkit::state::PostgresStore;
using agentkit::state::SqliteStore;
using agentkit::testing::FakeLLM;
using agentkit::testing::Turn;
namespace fs = std::filesystem;

const Scope kScope{.org_id = 1};

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "bench_fleet: %s\n", what.c_str());
  std::exit(1);
}

// A FakeLLM script played by the run's history rather than by call count:
// the turn is the number of tool results the request holds. A worker's
// model serves every run the worker happens to claim (and a resumed run
// picks up mid-script), which a script consumed in call order cannot.
// Stamps the first model call that follows a tool result: for a resumed
// run, the first call after the approved tool ran.
class HistoryScript final : public agentkit::Model {
 public:
  explicit HistoryScript(std::vector<Turn> turns) : turns_(std::move(turns)) {}
  agentkit::ModelResponse complete(const agentkit::ModelRequest& request, agentkit::RunContext& ctx) override {
    std::size_t results = 0;
    for (const auto& m : request.messages) results += m.role == agentkit::Role::tool;
    if (results > 0) after_tool_.store(Clock::now().time_since_epoch().count());
    auto llm = FakeLLM::script({turns_[std::min(results, turns_.size() - 1)]});
    llm->record_requests(false);
    return llm->complete(request, ctx);
  }
  // The last model call that followed a tool result (0: none yet).
  Clock::time_point after_tool() const { return Clock::time_point(Clock::duration(after_tool_.load())); }
  void reset() { after_tool_.store(0); }

 private:
  std::vector<Turn> turns_;
  std::atomic<Clock::rep> after_tool_{0};
};

// The workers' reports with the time each arrived, waited on.
struct Reports {
  std::mutex mutex;
  std::condition_variable added;
  std::vector<std::pair<FleetRunReport, Clock::time_point>> all;

  std::function<void(const FleetRunReport&)> sink() {
    return [this](const FleetRunReport& report) {
      const auto now = Clock::now();
      {
        std::lock_guard lock(mutex);
        all.emplace_back(report, now);
      }
      added.notify_all();
    };
  }
  // Waits until there are `n` reports; the n-th (a copy). Fails after `timeout`.
  std::pair<FleetRunReport, Clock::time_point> nth(std::size_t n, std::chrono::seconds timeout = 300s) {
    std::unique_lock lock(mutex);
    if (!added.wait_for(lock, timeout, [&] { return all.size() >= n; }))
      fail("timed out waiting for run report " + std::to_string(n) + " (" + std::to_string(all.size()) + " came)");
    return all[n - 1];
  }
};

void expect_done(const FleetRunReport& report) {
  if (report.outcome != FleetRunReport::Outcome::done || !report.result ||
      report.result->stop_reason != agentkit::StopReason::answered)
    fail("run " + report.run_id + " did not end answered: " + report.error);
}

// 1. Runs per second for `workers` workers serving `runs` runs.
double runs_per_second(const std::string& conninfo, const std::shared_ptr<const agentkit::Agent>& agent, int workers,
                       int runs) {
  const std::string runs_table = agentkit_test::fresh_table(), store_table = agentkit_test::fresh_table();
  const PostgresRunQueue::Options queue_options{.table = runs_table};
  Reports reports;
  std::vector<std::unique_ptr<FleetWorker>> fleet;
  for (int w = 0; w < workers; ++w) {
    // As a process of its own: a queue, a store object and a context each.
    auto store = std::make_shared<PostgresStore>(conninfo, PostgresStore::Options{.table = store_table});
    auto base = agentkit::testing::make_test_ctx(
        {.llm = std::make_shared<HistoryScript>(add_script(1, "record")), .store = store});
    fleet.push_back(std::make_unique<FleetWorker>(
        std::make_shared<PostgresRunQueue>(conninfo, queue_options), FleetWorker::Agents{{"clerk", agent}}, base,
        agentkit::FleetWorkerOptions{
            .name = "w" + std::to_string(w), .scopes = {kScope}, .idle_wait = 60s, .on_run = reports.sink()}));
    fleet.back()->start();
  }
  PostgresRunQueue submitter(conninfo, queue_options);
  const auto start = Clock::now();
  for (int i = 0; i < runs; ++i) submitter.submit(kScope, "run-" + std::to_string(i), "clerk", "t" + std::to_string(i));
  const auto last = reports.nth(static_cast<std::size_t>(runs));
  const double seconds = ms_between(start, last.second) / 1000.0;
  for (auto& w : fleet) w->stop();
  for (const auto& [report, at] : reports.all) expect_done(report);
  if (reports.all.size() != static_cast<std::size_t>(runs))
    fail(std::to_string(reports.all.size()) + " reports for " + std::to_string(runs) + " runs");
  return runs / seconds;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

int arg_or(int argc, char** argv, int i, int fallback) {
  if (argc <= i) return fallback;
  const int v = std::atoi(argv[i]);
  if (v <= 0) fail(std::string("not a positive count: ") + argv[i]);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const char* quick_env = std::getenv("AGENTKIT_BENCH_QUICK");
  const bool quick = (quick_env && *quick_env && std::string(quick_env) != "0") ||
                     (argc == 2 && std::string(argv[1]) == "quick");
  const int first_arg = argc == 2 && std::string(argv[1]) == "quick" ? argc : 1;
  const int runs = arg_or(argc, argv, first_arg, quick ? 40 : 200);
  const int samples = arg_or(argc, argv, first_arg + 1, quick ? 10 : 50);
  const int k = arg_or(argc, argv, first_arg + 2, quick ? 20 : 50);

  std::unique_ptr<agentkit_test::PostgresServer> server;
  try {
    server = std::make_unique<agentkit_test::PostgresServer>();
  } catch (const std::exception& e) {
    fail(std::string("cannot start a PostgreSQL server: ") + e.what());
  }
  const std::string conninfo = server->conninfo();

  std::printf("fleet benchmarks on a throwaway PostgreSQL server%s; noisy on a small VM: compare ratios within one run\n",
              quick ? " (quick mode)" : "");

  // 1. Throughput.
  std::atomic<int> effects{0};
  const auto clerk = std::make_shared<const agentkit::Agent>(
      "clerk", "fake", "You record things.",
      agentkit::cognition::react({agentkit::tool("record")
                                      .doc("Record a sum in the outside world.")
                                      .side_effecting(true)
                                      .params("a", "b")
                                      .fn([&effects](std::int64_t a, std::int64_t b) {
                                        ++effects;
                                        return a + b;
                                      })}));
  std::printf("\n1. throughput: %d runs (one side-effecting tool call, then an answer) submitted at once\n", runs);
  std::printf("   each worker a thread with its own queue, store object and context, as separate processes\n");
  // On a 2-core machine 4 workers cannot scale past the cores: the server's
  // backends, the workers and this process share them, so 4/1 is bounded by
  // about 2 there (less with anything else running).
  std::printf("   %-10s %12s %10s\n", "workers", "runs / s", "vs 1");
  // A warm-up round, untimed: the server's caches, the first connections.
  const int warm_up = std::min(runs, 20);
  runs_per_second(conninfo, clerk, 1, warm_up);
  double one = 0, two = 0, four = 0;
  for (const int workers : {1, 2, 4}) {
    const double rate = runs_per_second(conninfo, clerk, workers, runs);
    (workers == 1 ? one : workers == 2 ? two : four) = rate;
    std::printf("   %-10d %12.1f %10.2f\n", workers, rate, rate / one);
  }
  if (effects.load() != warm_up + 3 * runs)
    fail("side effects: " + std::to_string(effects.load()) + ", want " + std::to_string(warm_up + 3 * runs));
  std::printf("   scaling 2/1: %.2f   4/1: %.2f   (this machine has %ld cores; 4 workers cannot scale past them)\n",
              two / one, four / one, ::sysconf(_SC_NPROCESSORS_ONLN));

  // 2. Approval-to-resume latency.
  {
    const std::string runs_table = agentkit_test::fresh_table(), store_table = agentkit_test::fresh_table();
    const PostgresRunQueue::Options queue_options{.table = runs_table};
    const auto billing = std::make_shared<const agentkit::Agent>(
        "billing", "fake", "You refund orders.",
        agentkit::cognition::react({agentkit::tool("refund")
                                        .doc("Refund an order; a person approves each refund.")
                                        .side_effecting(true)
                                        .requires_approval()
                                        .params("a", "b")
                                        .fn([](std::int64_t a, std::int64_t b) { return a + b; })}));
    auto model = std::make_shared<HistoryScript>(add_script(1, "refund"));
    auto base = agentkit::testing::make_test_ctx(
        {.llm = model, .store = std::make_shared<PostgresStore>(conninfo, PostgresStore::Options{.table = store_table})});
    Reports reports;
    // A 60 s safety net: a wake-up within it is the NOTIFY's.
    FleetWorker worker(std::make_shared<PostgresRunQueue>(conninfo, queue_options), {{"billing", billing}}, base,
                       {.name = "w", .scopes = {kScope}, .idle_wait = 60s, .on_run = reports.sink()});
    worker.start();
    PostgresRunQueue approver(conninfo, queue_options);  // another connection, as `agentkit approve`
    std::vector<double> to_model, to_report;
    for (int i = 0; i < samples; ++i) {
      const std::string id = "refund-" + std::to_string(i);
      approver.submit(kScope, id, "billing", "order " + std::to_string(i));
      const auto [suspended, suspended_at] = reports.nth(2 * static_cast<std::size_t>(i) + 1);
      if (suspended.outcome != FleetRunReport::Outcome::suspended || suspended.run_id != id)
        fail("run " + id + " did not suspend: " + suspended.error);
      // Let the worker finish marking and go back to sleep on LISTEN.
      while (approver.info(kScope, id)->status != PostgresRunQueue::Status::suspended) std::this_thread::sleep_for(1ms);
      std::this_thread::sleep_for(20ms);
      model->reset();
      const auto decided = approver.submit_decisions(
          kScope, id, agentkit::decisions_to_json({{"call_0", agentkit::Decision::approve()}}), {"call_0"});
      const auto start = Clock::now();
      if (decided != PostgresRunQueue::Decided::runnable) fail("decisions for " + id + " not taken");
      const auto [done, done_at] = reports.nth(2 * static_cast<std::size_t>(i) + 2);
      expect_done(done);
      to_model.push_back(ms_between(start, model->after_tool()));
      to_report.push_back(ms_between(start, done_at));
    }
    worker.stop();
    std::printf("\n2. approval to resume through LISTEN/NOTIFY: %d runs, the worker asleep with idle_wait 60 s\n",
                samples);
    std::printf("   from submit_decisions() returning to              %10s %10s\n", "median ms", "p99 ms");
    std::printf("   %-47s %10.2f %10.2f\n", "the resumed run's next model call", percentile(to_model, 0.5),
                percentile(to_model, 0.99));
    std::printf("   %-47s %10.2f %10.2f\n", "the worker's report (run done and marked)", percentile(to_report, 0.5),
                percentile(to_report, 0.99));
  }

  // 3. Checkpoint cost, PostgreSQL beside SQLite.
  {
    const agentkit::Agent adder(
        "adder", "fake", "You add numbers.",
        agentkit::cognition::react({agentkit::tool("record")
                                        .doc("Add two integers and record the sum in the outside world.")
                                        .side_effecting(true)
                                        .params("a", "b")
                                        .fn([](std::int64_t a, std::int64_t b) { return a + b; })}),
        {.max_iterations = 1000});
    const fs::path dir = fs::temp_directory_path() / ("agentkit-bench-fleet-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    int db_serial = 0;
    const auto sqlite = [&](SqliteStore::Durability durability) {
      return [&, durability]() -> std::shared_ptr<agentkit::state::Store> {
        return std::make_shared<SqliteStore>(dir / ("bench-" + std::to_string(++db_serial) + ".db"),
                                             SqliteStore::Options{.durability = durability});
      };
    };
    const auto postgres = [&]() -> std::shared_ptr<agentkit::state::Store> {
      return std::make_shared<PostgresStore>(conninfo, PostgresStore::Options{.table = agentkit_test::fresh_table()});
    };
    const auto durable_server = [&](bool on) {
      const char* v = on ? "on" : "off";
      for (const char* setting : {"fsync", "synchronous_commit", "full_page_writes"})
        server->sql(std::string("ALTER SYSTEM SET ") + setting + " = " + v);
      server->sql("SELECT pg_reload_conf()");
      std::this_thread::sleep_for(200ms);  // the postmaster's reload reaches new backends
    };
    const int few = quick ? 5 : 10, many = quick ? 5 : 30;
    struct Row {
      const char* name;
      std::function<std::shared_ptr<agentkit::state::Store>()> make;
      int runs;
      std::function<void()> before;
      double us = 0;
    };
    std::vector<Row> rows{
        {"no store (not durable)", [] { return nullptr; }, many, {}},
        {"InMemoryStore", [] { return std::make_shared<agentkit::state::InMemoryStore>(); }, many, {}},
        {"SqliteStore, durability normal", sqlite(SqliteStore::Durability::normal), many, {}},
        {"SqliteStore, durability full (fsync per commit)", sqlite(SqliteStore::Durability::full), few, {}},
        {"PostgresStore, server fsync off (test helper's)", postgres, few, [&] { durable_server(false); }},
        {"PostgresStore, server fsync + sync commit on", postgres, few, [&] { durable_server(true); }},
    };
    std::printf("\n3. checkpoint cost: durable %d-iteration runs (a side-effecting call per iteration); the median\n"
                "   of %d runs per store, %d for SQLite full and PostgreSQL\n",
                k, many, few);
    std::printf("   %-50s %14s %22s\n", "store", "µs / iteration", "durability µs / iter");
    for (auto& row : rows) {
      if (row.before) row.before();
      row.us = us_per_run(adder, "record", k, row.runs, row.make);
      const double per_iter = row.us / k, added = (row.us - rows[0].us) / k;
      if (&row == &rows[0])
        std::printf("   %-50s %14.1f %22s\n", row.name, per_iter, "-");
      else
        std::printf("   %-50s %14.1f %22.1f\n", row.name, per_iter, added);
    }
    fs::remove_all(dir);
    const auto added = [&](std::size_t i) { return rows[i].us - rows[0].us; };
    std::printf("   PostgreSQL (fsync on) / SQLite full:    %.2f per iteration, %.2f of durability's cost\n",
                rows[5].us / rows[3].us, added(5) / added(3));
    std::printf("   PostgreSQL (fsync off) / SQLite normal: %.2f per iteration, %.2f of durability's cost\n",
                rows[4].us / rows[2].us, added(4) / added(2));
  }

  std::printf("\ntargets: none (figures only)\n");
  return 0;
}
