// The `agentkit worker`, `submit` and `approve` commands against a throwaway
// PostgreSQL server: two worker processes serve one agent's queue, runs are
// submitted from other processes, a run stopped at a side-effecting call is
// approved from yet another process (which wakes a worker through NOTIFY),
// SIGTERM stops the workers, and `agentkit runs` reads the results from the
// same database. Lives in the state suite: it needs the server helper and
// libpq, which only this executable links.
#include <agentkit/state/postgres_run_queue.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "../core/cli_support.h"
#include "../helpers/postgres_server.h"
#include "../helpers/wire_replies.h"

namespace {

using namespace agentkit_test::cli;
using agentkit_test::json_reply;
using agentkit_test::read_file;
using agentkit_test::shared_postgres;
using namespace std::chrono_literals;
using agentkit::Json;
using agentkit::testing::WireServer;

// A database of its own on the shared server: the CLI uses the default
// table names.
std::string fresh_database() {
  static std::atomic<int> next{0};
  const std::string name = "cli_fleet_" + std::to_string(::getpid()) + "_" + std::to_string(next++);
  shared_postgres().sql("CREATE DATABASE " + name);
  return shared_postgres().conninfo(name);
}

// The scripted model, by what the request holds (two runs interleave on it):
// the refund task calls the refund tool, then answers once it has the
// tool's result; any other task is answered at once.
WireServer::Response model_reply(const WireServer::Request& request) {
  const Json body = Json::parse(request.body);
  const Json& messages = body["messages"];
  const std::string all = messages.dump();
  if (all.find("Refund orders A-1 and B-2") != std::string::npos) {
    if (messages.back().value("role", "") == "tool") return answer({"Done."});
    return calls({{"c1", "refund", {{"order_id", "A-1"}}}, {"c2", "refund", {{"order_id", "B-2"}}}});
  }
  if (all.find("Refund order A-1") == std::string::npos) return answer({"Lisbon."});
  if (messages.back().value("role", "") == "tool") return answer({"Refunded order A-1."});
  return calls({{"c1", "refund", {{"order_id", "A-1"}}}});
}

// Waits until `check` holds or `timeout` passes.
template <typename F>
bool eventually(F check, std::chrono::milliseconds timeout = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (check()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return check();
}

// The scripted model, a shop that records refunds, the support agent's
// YAML (gated: a refund waits for approval) and a database of its own.
struct Desk {
  Desk() {
    model.set_handler(model_reply);
    shop.set_handler([](const WireServer::Request&) { return json_reply({{"refund", "R-9"}, {"status", "done"}}); });
  }
  TempDir dir;
  WireServer model, shop;
  std::filesystem::path file = dir.write("support.yaml", agent_yaml(model, "autonomy: gated\ntools:\n" + refund_tool(shop)));
  std::string db = fresh_database();
  agentkit::state::PostgresRunQueue queue{db};
};

}  // namespace

TEST_CASE("agentkit worker serves submitted runs and approve from another process finishes a suspended one",
          "[cli][fleet][postgres]") {
  Desk desk;
  TempDir& dir = desk.dir;
  WireServer &model = desk.model, &shop = desk.shop;
  const auto& file = desk.file;
  const std::string& db = desk.db;
  agentkit::state::PostgresRunQueue& queue = desk.queue;

  const pid_t a = spawn_cli(dir, {"worker", file.string(), "--store", db, "--worker-id", "w-a"}, {}, "worker-a");
  const pid_t b = spawn_cli(dir, {"worker", file.string(), "--store", db, "--worker-id", "w-b"}, {}, "worker-b");

  const Outcome refund = run_cli(dir, {"submit", "atlas", "Refund order A-1", "--store", db, "--run-id", "refund-1"});
  REQUIRE(refund.exit_code == 0);
  CHECK(refund.out == "refund-1\n");
  const Outcome question = run_cli(dir, {"submit", "atlas", "Which city is the capital of Portugal?", "--store", db});
  REQUIRE(question.exit_code == 0);
  std::string question_id = question.out.substr(0, question.out.find('\n'));
  CHECK(question_id.rfind("run-", 0) == 0);
  // Submitting an id again changes nothing.
  const Outcome again = run_cli(dir, {"submit", "atlas", "Refund order A-1", "--store", db, "--run-id", "refund-1"});
  CHECK(again.exit_code == 0);
  CHECK(again.err.find("already submitted") != std::string::npos);

  using Status = agentkit::state::PostgresRunQueue::Status;
  const auto status_of = [&](const std::string& id) {
    const auto info = queue.info({}, id);
    return info ? std::optional<Status>(info->status) : std::nullopt;
  };
  REQUIRE(eventually([&] { return status_of("refund-1") == Status::suspended; }));
  REQUIRE(eventually([&] { return status_of(question_id) == Status::done; }));
  CHECK(shop.requests().empty());  // the side effect waits for the approval

  SECTION("approve wakes a worker and the run finishes with the call made once") {
    // A call that is not pending, and a run that is not there, are errors with their own codes.
    const Outcome wrong = run_cli(dir, {"approve", "refund-1", "c9", "--store", db});
    CHECK(wrong.exit_code == 13);
    CHECK(wrong.err.find("no pending call 'c9'") != std::string::npos);
    CHECK(wrong.err.find("c1  refund") != std::string::npos);
    CHECK(run_cli(dir, {"approve", "no-such-run", "c1", "--store", db}).exit_code == 11);
    CHECK(status_of("refund-1") == Status::suspended);

    const Outcome approved = run_cli(dir, {"approve", "refund-1", "c1", "--store", db});
    REQUIRE(approved.exit_code == 0);
    REQUIRE(eventually([&] { return status_of("refund-1") == Status::done; }));
    CHECK(shop.requests().size() == 1);
    const auto info = queue.info({}, "refund-1");
    REQUIRE(info->result);
    CHECK(info->result->find("Refunded order A-1.") != std::string::npos);
    // Decided already: approving again is refused.
    CHECK(run_cli(dir, {"approve", "refund-1", "c1", "--store", db}).exit_code == 13);
  }
  SECTION("approve --reject with a reason: the call never runs and the model is told why") {
    const Outcome rejected = run_cli(dir, {"approve", "refund-1", "c1", "--reject", "not damaged", "--store", db});
    REQUIRE(rejected.exit_code == 0);
    REQUIRE(eventually([&] { return status_of("refund-1") == Status::done; }));
    CHECK(shop.requests().empty());
    bool told = false;
    for (const auto& request : model.requests()) told = told || request.body.find("Reason: not damaged") != std::string::npos;
    CHECK(told);
  }

  // SIGTERM: both workers stop cleanly (exit 0).
  ::kill(a, SIGTERM);
  ::kill(b, SIGTERM);
  CHECK(wait_for(a) == 0);
  CHECK(wait_for(b) == 0);
  const std::string logs = read_file(dir.path / "worker-a.err") + read_file(dir.path / "worker-b.err");
  INFO(logs);
  CHECK(logs.find("run refund-1 (atlas, attempt 1): suspended") != std::string::npos);
  CHECK(logs.find("stopped after") != std::string::npos);

  // The runs are in the store the workers share: `agentkit runs` reads it.
  const Outcome runs = run_cli(dir, {"runs", "--store", db, "--json"});
  REQUIRE(runs.exit_code == 0);
  const auto lines = json_lines(runs.out);
  REQUIRE(lines.size() == 2);
  for (const auto& line : lines) {
    INFO(line.dump());
    CHECK(line["status"] == "answered");
    CHECK(line["agent"] == "atlas");
  }
}

TEST_CASE("agentkit approve of one call of two holds the run until the other is decided too",
          "[cli][fleet][postgres]") {
  Desk desk;
  TempDir& dir = desk.dir;
  WireServer& shop = desk.shop;
  const auto& file = desk.file;
  const std::string& db = desk.db;
  agentkit::state::PostgresRunQueue& queue = desk.queue;
  const pid_t worker = spawn_cli(dir, {"worker", file.string(), "--store", db}, {}, "worker");
  REQUIRE(run_cli(dir, {"submit", "atlas", "Refund orders A-1 and B-2", "--store", db, "--run-id", "both"}).exit_code == 0);
  using Status = agentkit::state::PostgresRunQueue::Status;
  REQUIRE(eventually([&] { return queue.info({}, "both")->status == Status::suspended; }));

  const Outcome first = run_cli(dir, {"approve", "both", "c1", "--store", db});
  CHECK(first.exit_code == 0);
  CHECK(first.err.find("resumes once every pending call is decided") != std::string::npos);
  std::this_thread::sleep_for(500ms);  // time a wrongly woken worker would take to resume it
  CHECK(queue.info({}, "both")->status == Status::suspended);
  CHECK(shop.requests().empty());

  const Outcome second = run_cli(dir, {"approve", "both", "c2", "--reject", "B-2 is not ours", "--store", db});
  CHECK(second.exit_code == 0);
  REQUIRE(eventually([&] { return queue.info({}, "both")->status == Status::done; }));
  REQUIRE(shop.requests().size() == 1);  // c1 approved, c2 rejected
  CHECK(shop.requests()[0].path == "/orders/A-1/refund");
  ::kill(worker, SIGTERM);
  CHECK(wait_for(worker) == 0);
}

TEST_CASE("agentkit approve waits for a suspended run whose worker died before marking it", "[cli][fleet][postgres]") {
  Desk desk;
  TempDir& dir = desk.dir;
  const std::string& db = desk.db;
  agentkit::state::PostgresRunQueue& queue = desk.queue;
  const pid_t worker = spawn_cli(dir, {"worker", desk.file.string(), "--store", db}, {}, "worker");
  REQUIRE(run_cli(dir, {"submit", "atlas", "Refund order A-1", "--store", db, "--run-id", "refund-1"}).exit_code == 0);
  using Status = agentkit::state::PostgresRunQueue::Status;
  REQUIRE(eventually([&] { return queue.info({}, "refund-1")->status == Status::suspended; }));
  // The checkpoint is suspended, but the queue holds the run leased by a
  // worker that died before marking it, for two more seconds.
  agentkit_test::PostgresSession(db).exec(
      "UPDATE agentkit_runs SET status = 'leased', lease_owner = 'ghost', lease_token = lease_token + 1,"
      " lease_expires_at = now() + interval '2 seconds' WHERE run_id = 'refund-1'");

  const Outcome hasty = run_cli(dir, {"approve", "refund-1", "c1", "--wait", "0", "--store", db});
  CHECK(hasty.exit_code == 13);
  CHECK(desk.shop.requests().empty());
  const Outcome approved = run_cli(dir, {"approve", "refund-1", "c1", "--store", db});
  CHECK(approved.exit_code == 0);
  CHECK(approved.err.find("still held by worker ghost") != std::string::npos);
  REQUIRE(eventually([&] { return queue.info({}, "refund-1")->status == Status::done; }));
  CHECK(desk.shop.requests().size() == 1);
  ::kill(worker, SIGTERM);
  CHECK(wait_for(worker) == 0);
}

TEST_CASE("agentkit fleet commands refuse a SQLite store and never print a conninfo password", "[cli][fleet]") {
  TempDir dir;
  const Outcome sqlite = run_cli(dir, {"submit", "atlas", "task", "--store", dir.store()});
  CHECK(sqlite.exit_code == 2);
  CHECK(sqlite.err.find("must name a PostgreSQL database") != std::string::npos);
  for (const std::string& store : std::vector<std::string>{"host=" + dir.path.string() + " port=1 dbname=x user=u password=hunter2secret",
                                  "postgresql://u:hunter2secret@127.0.0.1:1/x?connect_timeout=2"}) {
    INFO(store);
    for (const auto& args : std::vector<std::vector<std::string>>{{"submit", "atlas", "task", "--store", store},
                                                                  {"approve", "r", "c1", "--store", store},
                                                                  {"runs", "--store", store}}) {
      const Outcome r = run_cli(dir, args);
      CHECK(r.exit_code != 0);
      CHECK(r.err.find("hunter2secret") == std::string::npos);
      CHECK(r.out.find("hunter2secret") == std::string::npos);
    }
  }
  CHECK(run_cli(dir, {"worker", "x.yaml", "--store", "dbname=x", "--scope", "nope"}).exit_code == 2);
}

TEST_CASE("agentkit worker stopped by SIGTERM mid-run hands the run back and another worker finishes it",
          "[cli][fleet][postgres]") {
  TempDir dir;
  WireServer model;
  std::atomic<int> asked{0};
  // The first model call is slow (the worker is stopped during it); the others answer at once.
  model.set_handler([&](const WireServer::Request&) {
    WireServer::Response r = answer({"Lisbon."});
    if (asked++ == 0) r.delay = 3s;
    return r;
  });
  const auto file = dir.write("atlas.yaml", agent_yaml(model));
  const std::string db = fresh_database();
  agentkit::state::PostgresRunQueue queue(db);
  using Status = agentkit::state::PostgresRunQueue::Status;

  const pid_t first = spawn_cli(dir, {"worker", file.string(), "--store", db, "--worker-id", "first"}, {}, "first");
  REQUIRE(run_cli(dir, {"submit", "atlas", "Which city is the capital of Portugal?", "--store", db, "--run-id", "q1"})
              .exit_code == 0);
  REQUIRE(eventually([&] { return asked.load() >= 1; }));
  ::kill(first, SIGTERM);
  CHECK(wait_for(first) == 0);
  const std::string log = read_file(dir.path / "first.err");
  INFO(log);
  CHECK(log.find("run q1 (atlas, attempt 1): released") != std::string::npos);
  const auto info = queue.info({}, "q1");
  REQUIRE(info);
  CHECK(info->status == Status::runnable);
  CHECK(info->lease_owner.empty());

  const pid_t second = spawn_cli(dir, {"worker", file.string(), "--store", db, "--worker-id", "second"}, {}, "second");
  CHECK(eventually([&] { return queue.info({}, "q1")->status == Status::done; }));
  ::kill(second, SIGINT);
  CHECK(wait_for(second) == 0);
  const auto done = queue.info({}, "q1");
  CHECK(done->attempts == 2);
  REQUIRE(done->result);
  CHECK(done->result->find("Lisbon.") != std::string::npos);
}

TEST_CASE("agentkit worker serves only its --scope and runs lists a scope's runs", "[cli][fleet][postgres]") {
  TempDir dir;
  WireServer model;
  model.set_handler([](const WireServer::Request&) { return answer({"Lisbon."}); });
  const auto file = dir.write("atlas.yaml", agent_yaml(model));
  const std::string db = fresh_database();
  agentkit::state::PostgresRunQueue queue(db);
  using Status = agentkit::state::PostgresRunQueue::Status;

  const pid_t worker = spawn_cli(dir, {"worker", file.string(), "--store", db, "--scope", "org7"}, {}, "worker");
  REQUIRE(run_cli(dir, {"submit", "atlas", "Capital of Portugal?", "--store", db, "--run-id", "g1"}).exit_code == 0);
  REQUIRE(run_cli(dir, {"submit", "atlas", "Capital of Portugal?", "--store", db, "--run-id", "s1", "--scope", "7"})
              .exit_code == 0);
  const agentkit::Scope org7{.org_id = 7};
  CHECK(eventually([&] { return queue.info(org7, "s1")->status == Status::done; }));
  CHECK(queue.info({}, "g1")->status == Status::runnable);  // not this worker's scope
  ::kill(worker, SIGTERM);
  CHECK(wait_for(worker) == 0);

  const Outcome scoped = run_cli(dir, {"runs", "--store", db, "--scope", "org7", "--json"});
  REQUIRE(scoped.exit_code == 0);
  const auto lines = json_lines(scoped.out);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0]["run_id"] == "s1");
  CHECK(lines[0]["status"] == "answered");
  CHECK(run_cli(dir, {"show", "s1", "--store", db, "--scope", "org7", "--json"}).exit_code == 0);
  CHECK(run_cli(dir, {"show", "s1", "--store", db, "--json"}).exit_code == 11);  // not a global run
  CHECK(run_cli(dir, {"runs", "--store", db, "--json"}).out.empty());          // g1 never ran
}
