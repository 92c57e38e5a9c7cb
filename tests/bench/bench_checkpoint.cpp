// Checkpoint cost: the same 10-iteration ReAct run (a scripted model asks for
// one tool call per turn, then answers) without a store, and durable on each
// store: InMemoryStore, SqliteStore with full durability (fsync per commit),
// and SqliteStore in normal mode (survives a process crash; fsync only at WAL
// checkpoints). A durable run writes its state twice per iteration (after
// the model, after the tools); a side-effecting call adds its ledger intent
// and outcome, and idempotent()'s record of its result. Prints the cost per checkpoint and per iteration.
//
// Then the cost of a checkpoint as history grows: runs of K iterations whose
// tool returns 2 KB of text, so the history reaches 2K KB. A save writes the
// unsealed tail (at most Checkpoint::kSealBytes) and the list of sealed
// segments, so the cost per checkpoint should stay nearly flat in K.
// Run with `make bench`.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/state/sqlite_store.h>
#include <agentkit/state/store.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "add_script.h"
#include "durable_runs.h"

namespace {

using Clock = std::chrono::steady_clock;
using agentkit::state::SqliteStore;
using agentkit::testing::FakeLLM;
namespace fs = std::filesystem;

constexpr int kIterations = 10;

}  // namespace

int main() {
  const auto make_tool = [](const char* name, bool side_effecting) {
    return agentkit::tool(name)
        .doc("Add two integers and return their sum to the caller.")
        .side_effecting(side_effecting)
        .params("a", "b")
        .fn([](std::int64_t a, std::int64_t b) { return a + b; });
  };
  auto page = agentkit::tool("page")
                  .doc("Return the 2 KB page of text at position a + b.")
                  .side_effecting(false)
                  .params("a", "b")
                  .fn([](std::int64_t a, std::int64_t b) { return std::string(2048, static_cast<char>('a' + (a + b) % 26)); });
  const agentkit::Agent agent("adder", "fake", "You add numbers.",
                              agentkit::cognition::react({make_tool("add", false), make_tool("record", true), page}),
                              {.max_iterations = 1000});

  const fs::path dir = fs::temp_directory_path() / ("agentkit-bench-checkpoint-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  int db_serial = 0;
  const auto sqlite = [&](SqliteStore::Durability durability) {
    return [&, durability]() -> std::shared_ptr<agentkit::state::Store> {
      return std::make_shared<SqliteStore>(dir / ("bench-" + std::to_string(++db_serial) + ".db"),
                                           SqliteStore::Options{.durability = durability});
    };
  };
  struct Row {
    const char* name;
    std::function<std::shared_ptr<agentkit::state::Store>()> make;
    int runs;
  };
  const std::vector<Row> rows{
      {"no store (not durable)", [] { return nullptr; }, 400},
      {"InMemoryStore", [] { return std::make_shared<agentkit::state::InMemoryStore>(); }, 400},
      {"SqliteStore, durability normal", sqlite(SqliteStore::Durability::normal), 100},
      {"SqliteStore, durability full (fsync per commit)", sqlite(SqliteStore::Durability::full), 15},
  };

  std::printf("checkpoint cost: %d-iteration runs, 2 checkpoints per iteration + 1 at the start and the end, + the "
              "ledger's owner record\n",
              kIterations);
  std::printf("%-50s %12s %22s %18s", "store", "µs / run", "durability µs / iter", "µs / store write");
  for (const char* tool : {"add", "record"}) {
    const bool side_effecting = std::string(tool) == "record";
    // The claim also names the ledger's owner (one write), which a
    // side-effecting call reads after recording its intent.
    const double writes = 2.0 * kIterations + 3 + (side_effecting ? 3.0 * kIterations : 0);
    std::printf("\ntool call: %s\n", side_effecting ? "side-effecting (+3 ledger writes and 1 read per call)"
                                                  : "read-only (no ledger records)");
    double baseline = 0;
    for (const auto& row : rows) {
      const double us = us_per_run(agent, tool, kIterations, row.runs, row.make);
      if (baseline == 0) {
        baseline = us;
        std::printf("  %-48s %12.1f %22s %18s\n", row.name, us, "-", "-");
        continue;
      }
      std::printf("  %-48s %12.1f %22.1f %18.2f\n", row.name, us, (us - baseline) / kIterations,
                  (us - baseline) / writes);
    }
  }

  std::printf("\nas history grows: K-iteration runs whose tool returns 2 KB; InMemoryStore, and SqliteStore "
              "(durability normal)\n");
  std::printf("  %-6s %12s %24s %24s\n", "K", "history KB", "memory µs / checkpoint", "sqlite µs / checkpoint");
  for (const int k : {25, 100, 400}) {
    const int runs = k >= 400 ? 5 : 15;
    const double base = us_per_run(agent, "page", k, runs, [] { return nullptr; });
    const double memory =
        us_per_run(agent, "page", k, runs, [] { return std::make_shared<agentkit::state::InMemoryStore>(); });
    const double sql = us_per_run(agent, "page", k, runs, sqlite(SqliteStore::Durability::normal));
    const double saves = 2.0 * k + 2;
    std::printf("  %-6d %12d %24.1f %24.1f\n", k, 2 * k, (memory - base) / saves, (sql - base) / saves);
  }
  fs::remove_all(dir);
  return 0;
}
