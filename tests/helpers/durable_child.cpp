// A separate process for the crash harness and the cross-process resume test.
//
//   agentkit_durable_child work   DB LEDGER RUN_ID...   run each run to its end or suspension
//                                                      (a "nest..." run is the boss's: see durable_workload.h)
//   agentkit_durable_child resume DB LEDGER RUN_ID      approve every pending call and resume
//   agentkit_durable_child fleet CONNINFO LEDGER NAME RUNS_TABLE STORE_TABLE
//                                                      a FleetWorker named NAME on PostgreSQL
//                                                      (agents "worker" and "boss"), until SIGTERM
//
// Prints "ready" once set up, then one line per run: "<run id> <stop reason>"
// (fleet: "<run id> <report outcome> attempt <n>[: <error>]").
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

#include <agentkit/fleet.h>
#include <agentkit/state/postgres_run_queue.h>
#include <agentkit/state/postgres_store.h>
#include <agentkit/state/sqlite_store.h>

#include "durable_workload.h"

namespace {

agentkit::RunContext context(const char* db) {
  agentkit::RunContext ctx;
  ctx.store = std::make_shared<agentkit::state::SqliteStore>(
      db, agentkit::state::SqliteStore::Options{.durability = agentkit::state::SqliteStore::Durability::normal});
  ctx.models = workload::models();
  return ctx;
}

volatile std::sig_atomic_t g_stop = 0;

// One worker of the fleet crash harness (tests/state/fleet_crash_test.cpp):
// short leases, so the harness's kills and pauses are recovered in seconds.
int fleet(char** argv) {
  using namespace std::chrono_literals;
  const std::string conninfo = argv[2], ledger = argv[3], name = argv[4];
  const agentkit::Backoff quick{.base = 20ms, .max = 200ms};
  auto queue = std::make_shared<agentkit::state::PostgresRunQueue>(
      conninfo, agentkit::state::PostgresRunQueue::Options{.statement_timeout = 10s, .backoff = quick, .table = argv[5]});
  agentkit::RunContext base;
  base.store = std::make_shared<agentkit::state::PostgresStore>(
      conninfo, agentkit::state::PostgresStore::Options{.statement_timeout = 10s, .backoff = quick, .table = argv[6]});
  base.models = workload::models();
  agentkit::FleetWorker worker(
      queue,
      {{"worker", std::make_shared<const agentkit::Agent>(workload::make_agent(ledger))},
       {"boss", std::make_shared<const agentkit::Agent>(workload::make_boss(ledger))}},
      base,
      {.name = name,
       .scopes = {agentkit::Scope{}},
       .lease = 1000ms,
       .heartbeat = 200ms,
       .idle_wait = 200ms,
       .max_attempts = 50,
       .on_run = [](const agentkit::FleetRunReport& r) {
         std::printf("%s %s attempt %d%s%s\n", r.run_id.c_str(), std::string(agentkit::to_string(r.outcome)).c_str(), r.attempt,
                     r.error.empty() ? "" : ": ", r.error.c_str());
         std::fflush(stdout);
       }});
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  worker.start();
  std::printf("ready\n");
  std::fflush(stdout);
  while (!g_stop) ::usleep(20000);
  worker.stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 7 && std::strcmp(argv[1], "fleet") == 0) {
    try {
      return fleet(argv);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "durable_child: %s\n", e.what());
      return 1;
    }
  }
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s work|resume DB LEDGER RUN_ID...\n", argv[0]);
    return 2;
  }
  try {
    const std::string mode = argv[1];
    auto ctx = context(argv[2]);
    const agentkit::Agent worker = workload::make_agent(argv[3]);
    const agentkit::Agent boss = workload::make_boss(argv[3]);
    std::printf("ready\n");  // the crash harness times its kill from here
    std::fflush(stdout);
    for (int i = 4; i < argc; ++i) {
      agentkit::RunResult result;
      const agentkit::Agent& agent = workload::is_nested(argv[i]) ? boss : worker;
      if (mode == "work") {
        result = agent.run("follow the plan", ctx, {.run_id = argv[i]});
      } else if (mode == "resume") {
        const auto suspended = agentkit::load_run(*ctx.store, ctx.scope, argv[i]);
        if (!suspended) throw std::runtime_error(std::string("no run ") + argv[i]);
        agentkit::Decisions decisions;
        for (const auto& id : suspended->pending) decisions[id] = agentkit::Decision::approve();
        result = agent.resume(argv[i], decisions, ctx);
      } else {
        std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
        return 2;
      }
      std::printf("%s %s\n", argv[i], std::string(agentkit::to_string(result.stop_reason)).c_str());
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "durable_child: %s\n", e.what());
    return 1;
  }
  return 0;
}
