// The fleet crash harness: four worker processes (agentkit_durable_child
// fleet) share runs through a PostgresRunQueue and their checkpoints and
// ledgers through a PostgresStore on the throwaway server, while this
// process approves, edits and rejects their transfers from another
// connection and a chaos thread SIGKILLs workers at random (starting new
// ones), cuts every database connection, and pauses a worker past its lease
// (SIGSTOP, then SIGCONT: two workers believe they own its run). The
// workers' side effects append "<pid> <token>" to one ledger file. At the
// end: every run finished as planned, no side effect executed twice, none
// the model was told succeeded missing, no transfer without its approval,
// an edited transfer run with the edited arguments, a rejected one never.
#include <agentkit/agent.h>
#include <agentkit/fleet.h>
#include <agentkit/state/checkpoint.h>
#include <agentkit/state/postgres_run_queue.h>
#include <agentkit/state/postgres_store.h>

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../helpers/durable_workload.h"
#include "../helpers/paths.h"
#include "../helpers/postgres_server.h"
#include "../helpers/summary.h"
#include "../helpers/temp_dir.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using agentkit::Decision;
using agentkit::Scope;
using agentkit::state::PostgresRunQueue;
using agentkit::state::PostgresStore;
using agentkit_test::PostgresSession;

constexpr int kWorkers = 4;
// FleetWorkerOptions::lease in agentkit_durable_child's fleet mode.
constexpr auto kLease = 1000ms;

#ifndef AGENTKIT_FLEET_HARNESS_RUNS
#define AGENTKIT_FLEET_HARNESS_RUNS 500
#endif
int run_count() {
  const char* env = std::getenv("AGENTKIT_FLEET_RUNS");
  return env ? std::max(1, std::atoi(env)) : AGENTKIT_FLEET_HARNESS_RUNS;
}

// Run i: "nest-<i>" (the boss delegating the plan through as_tool, whose
// worker's transfer surfaces on the boss's run) for i % 10 == 9, else
// "run-<i>" (a transfer when i is even: workload::needs_transfer).
std::string run_name(int i) { return (i % 10 == 9 ? "nest-" : "run-") + std::to_string(i); }

// What a human does with run i's transfer: run-<i> with i % 10 == 0 is
// rejected, i % 10 == 6 approved with edited arguments, the rest approved.
Decision::Kind policy(int i) {
  if (i % 10 == 0) return Decision::Kind::reject;
  if (i % 10 == 6) return Decision::Kind::edit;
  return Decision::Kind::approve;
}
std::string edited_token(const std::string& run) { return run + "/transfer/edited"; }
// The ledger token of an `append` call by its id: "a1" asks "<run>/1/a"
// (workload::PlannedModel).
std::string append_token(const std::string& run, const std::string& call_id) {
  return run + "/" + call_id.substr(1) + "/" + call_id.substr(0, 1);
}

// One worker process: stdout and stderr to its own log file.
struct Worker {
  pid_t pid = -1;
  fs::path log;
};

Worker spawn_worker(const std::string& name, const agentkit_test::TempDir& dir, const std::string& conninfo,
                    const std::string& runs_table, const std::string& store_table) {
  Worker w{.log = dir / (name + ".log")};
  std::vector<std::string> args{AGENTKIT_DURABLE_CHILD, "fleet", conninfo, (dir / "ledger").string(), name,
                                runs_table, store_table};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, w.log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  const int rc = posix_spawn(&w.pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) FAIL("cannot start " << argv[0] << ": " << std::strerror(rc));
  return w;
}

std::string tail_of(const fs::path& path, std::size_t bytes = 1500) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > bytes ? text.substr(text.size() - bytes) : text;
}

// Decides the suspended runs of the queue as they appear, from its own
// connections (a web handler would), recording each decision before it is
// submitted: a transfer in the ledger without one was never approved.
class Approver {
 public:
  Approver(std::string conninfo, std::string runs_table, std::string store_table)
      : conninfo_(std::move(conninfo)), runs_table_(std::move(runs_table)), store_table_(std::move(store_table)) {}

  void operator()(const std::atomic<bool>& stop) {
    std::unique_ptr<PostgresRunQueue> queue;
    std::unique_ptr<PostgresStore> store;
    while (!stop) {
      try {
        // Each is opened until it opens: a cut connection fails either (a
        // queue opened beside a store that threw is no store).
        if (!queue) queue = std::make_unique<PostgresRunQueue>(conninfo_, PostgresRunQueue::Options{.table = runs_table_});
        if (!store) store = std::make_unique<PostgresStore>(conninfo_, PostgresStore::Options{.table = store_table_});
        std::string ids = PostgresSession(conninfo_).exec("SELECT coalesce(string_agg(run_id, ' '), '') FROM " +
                                                          runs_table_ + " WHERE status = 'suspended'");
        std::istringstream in(ids);
        for (std::string run; in >> run;) decide(*queue, *store, run);
      } catch (const std::exception&) {
        ++failures_;  // a cut connection: look again
      }
      std::this_thread::sleep_for(20ms);
    }
  }

  // The decision given to a run's transfer (nullopt: none).
  std::optional<Decision::Kind> decision(const std::string& run) const {
    std::lock_guard lock(mutex_);
    const auto it = decided_.find(run);
    return it == decided_.end() ? std::nullopt : std::optional(it->second);
  }
  int submitted() const { return submitted_; }
  int failures() const { return failures_; }

 private:
  void decide(PostgresRunQueue& queue, PostgresStore& store, const std::string& run) {
    const auto state = agentkit::state::load_run(store, Scope{}, run);
    if (!state || state->phase != agentkit::Phase::suspended) return;
    // The boss's own calls and its sub-run's, by the ids resume routes.
    std::vector<std::string> pending;
    for (const auto& call : agentkit::suspension_of(*state).pending) pending.push_back(call.id);
    if (pending.empty()) return;
    const int i = std::stoi(run.substr(run.find('-') + 1));
    const Decision::Kind kind = run.starts_with("nest") ? Decision::Kind::approve : policy(i);
    agentkit::Decisions decisions;
    for (const auto& id : pending) {
      decisions[id] = kind == Decision::Kind::reject ? Decision::reject("not today")
                      : kind == Decision::Kind::edit ? Decision::edit({{"token", edited_token(run)}})
                                                     : Decision::approve();
    }
    {
      std::lock_guard lock(mutex_);
      decided_[run] = kind;  // before the queue has it
    }
    // A repeat (the run still shows suspended) merges the same decisions.
    queue.submit_decisions(Scope{}, run, agentkit::decisions_to_json(decisions), pending);
    ++submitted_;
  }

  std::string conninfo_, runs_table_, store_table_;
  mutable std::mutex mutex_;
  std::map<std::string, Decision::Kind> decided_;
  std::atomic<int> submitted_{0}, failures_{0};
};

}  // namespace

TEST_CASE("fleet crash harness: workers SIGKILLed and paused past their lease and connections cut, every run once",
          "[postgres][fleet][crash]") {
  auto& server = agentkit_test::shared_postgres();
  const std::string conninfo = server.conninfo();
  const std::string runs_table = agentkit_test::fresh_table(), store_table = agentkit_test::fresh_table();
  agentkit_test::TempDir dir;
  const int runs = run_count();

  {
    PostgresRunQueue queue(conninfo, {.table = runs_table});
    for (int i = 0; i < runs; ++i) {
      const std::string run = run_name(i);
      REQUIRE(queue.submit(Scope{}, run, workload::is_nested(run) ? "boss" : "worker", "follow the plan"));
    }
  }

  std::vector<Worker> workers;
  int started = 0;
  const auto start_worker = [&] {
    return spawn_worker("w" + std::to_string(++started), dir, conninfo, runs_table, store_table);
  };
  for (int w = 0; w < kWorkers; ++w) workers.push_back(start_worker());

  Approver approver(conninfo, runs_table, store_table);
  std::atomic<bool> stop_approver{false};
  std::thread approving([&] { approver(stop_approver); });

  // Chaos on this thread until every run is done (or its time is up), then
  // calm until the runs it left are done (or that time is up too): a slow
  // build (the sanitizers) may not finish every run while a worker is killed
  // every few hundred milliseconds, but each must still finish once after.
  const auto count_done = [&](int fallback) {
    try {
      return std::stoi(PostgresSession(conninfo).exec("SELECT count(*) FROM " + runs_table + " WHERE status = 'done'"));
    } catch (const std::exception&) {
      return fallback;  // a connection cut by the chaos; asked again next time
    }
  };
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pause_ms(60, 250), pick(0, 99), slot(0, kWorkers - 1), overrun(200, 800);
  int kills = 0, cuts = 0, pauses = 0, done = 0;
  int paused = -1;  // the slot of the worker stopped now
  Clock::time_point resume_at;
  const auto began = Clock::now();
  const auto chaos_ends = began + 80s;
  while (Clock::now() < chaos_ends) {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
    done = count_done(done);
    if (done == runs) break;
    if (paused >= 0 && Clock::now() >= resume_at) {
      ::kill(workers[paused].pid, SIGCONT);
      paused = -1;
    }
    const int action = pick(rng);
    if (action < 50) {
      const int s = slot(rng);
      ::kill(workers[s].pid, SIGKILL);
      ::waitpid(workers[s].pid, nullptr, 0);
      if (paused == s) paused = -1;
      workers[s] = start_worker();
      ++kills;
    } else if (action < 75) {
      try {
        PostgresSession(conninfo).exec(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()");
        ++cuts;
      } catch (const std::exception&) {
      }
    } else if (paused < 0) {
      paused = slot(rng);
      ::kill(workers[paused].pid, SIGSTOP);
      resume_at = Clock::now() + kLease + std::chrono::milliseconds(overrun(rng));
      ++pauses;
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - began).count();
  if (paused >= 0) ::kill(workers[paused].pid, SIGCONT);
  const int done_in_chaos = done;
  const auto calm_began = Clock::now();
  while (done < runs && Clock::now() < calm_began + 60s) {
    std::this_thread::sleep_for(200ms);
    done = count_done(done);
  }
  const double calm_seconds = std::chrono::duration<double>(Clock::now() - calm_began).count();
  stop_approver = true;
  approving.join();
  for (auto& w : workers) ::kill(w.pid, SIGTERM);
  for (auto& w : workers) {
    int status = 0;
    for (int i = 0; i < 200 && ::waitpid(w.pid, &status, WNOHANG) == 0; ++i) std::this_thread::sleep_for(50ms);
    if (::waitpid(w.pid, &status, WNOHANG) == 0) {
      UNSCOPED_INFO("worker " << w.log.filename() << " did not stop on SIGTERM:\n" << tail_of(w.log));
      ::kill(w.pid, SIGKILL);
      ::waitpid(w.pid, &status, 0);
      CHECK(false);
    }
  }

  // What the workers reported (every log, the killed workers' too).
  std::map<std::string, int> reported;
  for (int w = 1; w <= started; ++w) {
    std::ifstream in(dir / ("w" + std::to_string(w) + ".log"));
    for (std::string run, outcome; in >> run >> outcome;) {
      ++reported[outcome];
      in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
  }

  // The queue, the checkpoints and the ledger.
  std::ostringstream problems;  // shown with the failed checks
  PostgresStore store(conninfo, {.table = store_table});
  PostgresSession session(conninfo);
  const int max_attempts = std::stoi(session.exec("SELECT coalesce(max(attempts), 0) FROM " + runs_table));
  const auto ledger = workload::read_ledger(dir / "ledger");
  int finished = 0, duplicates = 0, lost = 0, unknown = 0, not_run = 0, bypassed = 0, edits_applied = 0, rejections_held = 0;
  for (const auto& [token, pids] : ledger) {
    if (pids.size() < 2) continue;
    ++duplicates;
    problems << "executed " << pids.size() << " times: " << token << " (pids " << pids.front() << ", " << pids.back() << ")" << "\n";
  }
  std::set<std::string> worker_runs;
  for (int i = 0; i < runs; ++i) {
    const std::string run = run_name(i);
    const std::string worker_run = workload::is_nested(run) ? workload::worker_run(run) : run;
    worker_runs.insert(worker_run);
    const auto top = agentkit::state::load_run(store, Scope{}, run);
    const auto worked = agentkit::state::load_run(store, Scope{}, worker_run);
    const auto info = PostgresRunQueue(conninfo, {.pool_size = 1, .table = runs_table}).info(Scope{}, run);
    const bool ok = top && top->stop_reason == agentkit::StopReason::answered && top->output == "done " + run &&
                    worked && worked->stop_reason == agentkit::StopReason::answered &&
                    worked->output == "done " + worker_run && info && info->status == PostgresRunQueue::Status::done &&
                    info->result && agentkit::Json::parse(*info->result).value("output", "") == "done " + run;
    if (!ok) {
      problems << run << " did not finish as planned: "
                        << (top ? std::string(agentkit::to_string(top->stop_reason)) + " " + top->output : "no checkpoint")
                        << " / queue " << (info && info->result ? *info->result : "no result") << " / "
                        << worker_run << ": "
                        << (worked ? std::string(agentkit::to_string(worked->phase)) + " " +
                                         std::string(agentkit::to_string(worked->stop_reason)) + " " + worked->output
                                   : "no checkpoint")
                        << "\n";
      if (top) {
        for (const auto& m : top->history) {
          if (m.role == agentkit::Role::tool) problems << "  " << run << " tool " << m.tool_name << ": " << m.text() << "\n";
        }
      }
    }
    finished += ok;
    if (!worked) continue;
    // Every call the model was told succeeded happened exactly once.
    for (const auto& m : worked->history) {
      if (m.role != agentkit::Role::tool || m.tool_name == "peek") continue;
      const std::string text = m.text();
      if (text.rfind("ok ", 0) == 0) {
        // Happened more than once is counted among the duplicates above.
        if (!ledger.count(text.substr(3))) {
          ++lost;
          problems << worker_run << ": the model was told '" << text << "' but the ledger does not have it\n";
        }
      } else if (text.find("outcome of this call is unknown") != std::string::npos) {
        ++unknown;
      } else if (text.starts_with("The call was not run")) {
        ++not_run;  // its ledger record could not be written: the tool did not run
        const auto token = m.tool_name == "append" ? append_token(worker_run, m.tool_call_id) : "";
        if (!token.empty() && ledger.count(token)) {
          ++duplicates;  // the model was told it did not happen, and it did
          problems << worker_run << ": told '" << text << "' yet " << token << " is in the ledger\n";
        }
      } else if (m.tool_name != "transfer") {
        ++lost;
        problems << worker_run << ": unexpected tool result: " << text << "\n";
      }
    }
    // The transfer ran only as decided.
    if (!workload::needs_transfer(worker_run)) continue;
    const auto decision = approver.decision(run);
    const bool original = ledger.count(worker_run + "/transfer") > 0, edited = ledger.count(edited_token(run)) > 0;
    if (!decision) {
      bypassed += original || edited;
    } else if (*decision == Decision::Kind::reject) {
      bypassed += original || edited;
      rejections_held += !original && !edited;
    } else if (*decision == Decision::Kind::edit) {
      bypassed += original;  // the model's arguments ran, not the human's
      edits_applied += edited;
    } else {
      bypassed += edited;
    }
  }
  char line[1000];
  std::snprintf(line, sizeof line,
                "fleet crash harness: %d runs on %d worker processes in %.1f s of chaos (seed %u; %d done in it, the "
                "rest in %.1f s of calm after), %d SIGKILLed and replaced, %d "
                "paused past their lease, every connection cut %d times; workers reported %d runs lost to a takeover, %d "
                "given back for a checkpoint not stored; runs finished %d/%d (max attempts %d); approvals %d "
                "(edits applied %d, rejections held %d); calls reported outcome_unknown %d, not run for a store failure %d; side effects executed "
                "twice %d; effects lost %d; approvals bypassed %d\n",
                runs, kWorkers, seconds, seed, done_in_chaos, calm_seconds, kills, pauses, cuts, reported["lost"], reported["retried"], finished, runs, max_attempts, approver.submitted(),
                edits_applied, rejections_held, unknown, not_run, duplicates, lost, bypassed);
  agentkit_test::print_summary("fleet_crash_harness", line);
  if (const char* keep = std::getenv("AGENTKIT_FLEET_KEEP"); keep && (finished != runs || duplicates || lost || bypassed)) {
    fs::copy(dir / "", keep, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  }
  if (finished != runs) {
    for (const auto& w : workers) problems << w.log.filename() << ":\n" << tail_of(w.log) << "\n";
  }
  INFO(problems.str());
  CHECK(finished == runs);
  CHECK(duplicates == 0);
  CHECK(lost == 0);
  CHECK(bypassed == 0);
  CHECK(kills > 0);
  CHECK(pauses > 0);
  CHECK(cuts > 0);
}
