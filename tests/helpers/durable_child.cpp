// A separate process for the crash harness and the cross-process resume test.
//
//   agentkit_durable_child work   DB LEDGER RUN_ID...   run each run to its end or suspension
//                                                      (a "nest..." run is the boss's: see durable_workload.h)
//   agentkit_durable_child resume DB LEDGER RUN_ID      approve every pending call and resume
//
// Prints "ready" once set up, then one line per run: "<run id> <stop reason>".
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

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

}  // namespace

int main(int argc, char** argv) {
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
