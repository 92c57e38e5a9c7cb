// 15 — a fleet: two workers share runs through PostgreSQL, and a refund is
// approved from another process.
//
// Two FleetWorker threads (they could as well be two hosts) serve one
// PostgresRunQueue; the runs' checkpoints and ledgers live in a
// PostgresStore on the same database. Two runs are submitted: a question,
// answered by whichever worker claims it, and a refund, which stops at the
// side-effecting `refund` call (requires_approval) and is marked suspended.
// A second process, started from this executable (the way a web handler
// elsewhere would decide), reads the run's pending calls from the store and
// submits the approval to the queue, whose NOTIFY wakes a sleeping worker:
// it resumes the run from its checkpoint, the refund runs once, and the run
// is done.
//
// Run: ./build/examples/example_15_fleet [CONNINFO]
// CONNINFO (or $AGENTKIT_PG) is a libpq URI or conninfo, e.g.
// postgresql://me@localhost/agentkit. Without one, the example starts a
// throwaway server of its own (initdb + pg_ctl from /usr/lib/postgresql,
// Debian's postgresql package) in a temporary directory and removes it at
// the end. (It starts its approving half itself: example_15_fleet approve
// CONNINFO RUN_ID.)
//
// The agentkit CLI does the same from a shell:
//   agentkit worker support.yaml --store postgresql://...   # on each host
//   agentkit submit support "Refund order A-1" --store postgresql://...
//   agentkit approve RUN_ID c2 --store postgresql://...
#include <fcntl.h>
#include <pwd.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/fleet.h>
#include <agentkit/function_tool.h>
#include <agentkit/state/postgres_run_queue.h>
#include <agentkit/state/postgres_store.h>

extern char** environ;

namespace {

namespace fs = std::filesystem;

// A support model whose next turn follows from the history alone, so any
// worker (or process) continues a run with nothing shared but the store:
// a refund task looks the order up, refunds it, then reports; any other
// task is answered at once.
class SupportModel final : public agentkit::Model {
 public:
  agentkit::ModelResponse complete(const agentkit::ModelRequest& request, agentkit::RunContext&) override {
    const agentkit::Message& last = request.messages.back();
    agentkit::ModelResponse response;
    response.finish_reason = "tool_calls";
    bool refund_task = false;
    for (const auto& message : request.messages) {
      refund_task = refund_task || (message.role == agentkit::Role::user && message.text().find("Refund") != std::string::npos);
    }
    if (!refund_task) {
      response.message = agentkit::Message::assistant("We ship to Portugal within 3 business days.");
      response.finish_reason = "stop";
    } else if (last.role == agentkit::Role::user) {
      response.message = agentkit::Message::assistant("", {{"c1", "lookup_order", {{"order_id", "A-1"}}, {}}});
    } else if (last.tool_name == "lookup_order") {
      response.message =
          agentkit::Message::assistant("", {{"c2", "refund", {{"order_id", "A-1"}, {"amount_usd", 20.0}}, {}}});
    } else {
      response.message = agentkit::Message::assistant("Your order was damaged, so I refunded it: " + last.text());
      response.finish_reason = "stop";
    }
    return response;
  }
};

std::shared_ptr<const agentkit::Agent> support_agent() {
  auto lookup_order = agentkit::tool("lookup_order")
                          .doc("Look up a customer order: its status and the amount paid in USD.")
                          .side_effecting(false)
                          .idempotent()
                          .params("order_id")
                          .fn([](const std::string& id) { return id + ": delivered damaged, paid $20.00"; });
  auto refund = agentkit::tool("refund")
                    .doc("Issue a refund against a customer order and return the confirmation.")
                    .side_effecting(true)
                    .requires_approval()
                    .params("order_id", "amount_usd")
                    .fn([](const std::string& id, double amount) {
                      char buf[64];
                      std::snprintf(buf, sizeof buf, "$%.2f on %s", amount, id.c_str());
                      return std::string(buf);
                    });
  return std::make_shared<const agentkit::Agent>("support", "support-model", "You handle refunds for damaged orders.",
                                                 agentkit::cognition::react({lookup_order, refund}));
}

std::string tag() { return "[pid " + std::to_string(::getpid()) + "] "; }

// ---------------------------------------------------------------------------
// A throwaway PostgreSQL server, for when no CONNINFO is given: initdb into a
// temporary directory, a server listening on a Unix socket there only (no
// TCP), trust authentication, stopped and removed by the destructor. It is
// a convenience of this example, not part of agentkit: in production the
// workers are given the database they share.
class ThrowawayPostgres {
 public:
  ThrowawayPostgres() {
    fs::path bin;
    std::error_code ignored;
    for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ignored)) {
      if (fs::exists(entry.path() / "bin" / "pg_ctl") && entry.path() > bin.parent_path()) bin = entry.path() / "bin";
    }
    if (bin.empty()) throw std::runtime_error("no PostgreSQL server under /usr/lib/postgresql; give a CONNINFO");
    bin_ = bin;
    std::string pattern = (fs::temp_directory_path() / "agentkit-fleet-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    if (::geteuid() == 0) {  // PostgreSQL refuses to run as root: run it as `postgres`
      const passwd* user = ::getpwnam("postgres");
      if (!user || ::chown(dir_.c_str(), user->pw_uid, user->pw_gid) != 0) {
        throw std::runtime_error("running as root and cannot hand the server to the 'postgres' user");
      }
      as_user_ = {"runuser", "-u", "postgres", "--"};
    }
    run({(bin_ / "initdb").string(), "-D", (dir_ / "data").string(), "-U", "agentkit", "-A", "trust", "-E", "UTF8",
         "--locale=C", "-N"});
    std::ofstream(dir_ / "data" / "postgresql.conf", std::ios::app)
        << "listen_addresses = ''\nunix_socket_directories = '" << dir_.string() << "'\nfsync = off\n";
    run({(bin_ / "pg_ctl").string(), "-D", (dir_ / "data").string(), "-w", "-l", (dir_ / "server.log").string(),
         "start"});
    started_ = true;
  }
  ~ThrowawayPostgres() {
    if (started_) {
      try {
        run({(bin_ / "pg_ctl").string(), "-D", (dir_ / "data").string(), "-w", "-m", "fast", "stop"});
      } catch (const std::exception&) {
      }
    }
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  ThrowawayPostgres(const ThrowawayPostgres&) = delete;
  ThrowawayPostgres& operator=(const ThrowawayPostgres&) = delete;

  std::string conninfo() const { return "host=" + dir_.string() + " user=agentkit dbname=postgres"; }

 private:
  // Runs `args` (as `postgres` under root), its output to commands.log.
  void run(std::vector<std::string> args) const {
    args.insert(args.begin(), as_user_.begin(), as_user_.end());
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = (dir_ / "commands.log").string();
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = -1;
    int status = 0;
    const int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::ifstream in(log);
      throw std::runtime_error("starting a throwaway PostgreSQL server: " + args[as_user_.size()] + " failed:\n" +
                               std::string(std::istreambuf_iterator<char>(in), {}));
    }
  }

  fs::path bin_, dir_;
  std::vector<std::string> as_user_;
  bool started_ = false;
};
// ---------------------------------------------------------------------------

// The other process: a human's approval, given the way a web handler would:
// read the pending calls from the store, hand the decisions to the queue
// (whose NOTIFY wakes a worker). It runs nothing itself.
int approve(const std::string& conninfo, const std::string& run_id) {
  agentkit::state::PostgresStore store(conninfo);
  agentkit::state::PostgresRunQueue queue(conninfo);
  const auto stored = agentkit::load_run(store, {}, run_id);
  if (!stored) {
    std::cout << tag() << "approver: no run " << run_id << "\n";
    return 1;
  }
  agentkit::Decisions decisions;
  std::vector<std::string> awaited;
  for (const auto& call : agentkit::suspension_of(*stored).pending) {  // a sub-agent's calls too
    std::cout << tag() << "approver: a human approves " << call.name << " " << call.arguments.dump() << "\n";
    decisions[call.id] = agentkit::Decision::approve();
    awaited.push_back(call.id);
  }
  // The run resumes once every call it awaits has a decision.
  const bool taken = queue.submit_decisions({}, run_id, agentkit::decisions_to_json(decisions), awaited) ==
                     agentkit::state::PostgresRunQueue::Decided::runnable;
  std::cout << tag() << "approver: decisions " << (taken ? "submitted" : "refused (the run is not suspended)") << "\n";
  return taken ? 0 : 1;
}

// The workers' reports, for the main thread to wait on.
struct Reports {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<agentkit::FleetRunReport> all;

  void add(const agentkit::FleetRunReport& report, const std::string& worker) {
    std::lock_guard lock(mutex);
    std::cout << tag() << worker << ": run " << report.run_id << " ";
    if (report.outcome == agentkit::FleetRunReport::Outcome::suspended) {
      std::cout << "suspended";
      if (report.result && report.result->suspended) {
        for (const auto& call : report.result->suspended->pending) std::cout << ", awaiting approval: " << call.name;
      }
    } else if (report.outcome == agentkit::FleetRunReport::Outcome::done && report.result) {
      std::cout << "done: " << to_string(report.result->stop_reason) << ": " << report.result->output;
    } else {
      std::cout << "outcome " << static_cast<int>(report.outcome) << " " << report.error;
    }
    std::cout << std::endl;
    all.push_back(report);
    changed.notify_all();
  }
  // Waits until a report for `run_id` with `outcome` arrives (or 60 s).
  bool wait_for(const std::string& run_id, agentkit::FleetRunReport::Outcome outcome) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(60), [&] {
      for (const auto& r : all) {
        if (r.run_id == run_id && r.outcome == outcome) return true;
      }
      return false;
    });
  }
};

// Runs `self approve conninfo run_id` and waits for it; its exit status.
int run_approver(const char* self, const std::string& conninfo, const std::string& run_id, pid_t& pid) {
  std::string name = self, mode = "approve", conn = conninfo, id = run_id;
  char* argv[] = {name.data(), mode.data(), conn.data(), id.data(), nullptr};
  if (::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, environ) != 0) return -1;
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

int fleet(const char* self, const std::string& conninfo) {
  auto store = std::make_shared<agentkit::state::PostgresStore>(conninfo);
  auto model = std::make_shared<SupportModel>();
  agentkit::RunContext base;
  base.store = store;
  base.models = [model](std::string_view) { return model; };
  const agentkit::FleetWorker::Agents agents{{"support", support_agent()}};

  Reports reports;
  std::vector<std::unique_ptr<agentkit::FleetWorker>> workers;
  for (const std::string name : {"worker-a", "worker-b"}) {
    // Each worker its own queue object (its own connections and LISTEN), as on two hosts.
    auto queue = std::make_shared<agentkit::state::PostgresRunQueue>(conninfo);
    workers.push_back(std::make_unique<agentkit::FleetWorker>(
        queue, agents, base,
        agentkit::FleetWorkerOptions{.name = name,
                                     .scopes = {agentkit::Scope{}},
                                     .lease = std::chrono::seconds(30),
                                     .heartbeat = std::chrono::seconds(10),
                                     .idle_wait = std::chrono::seconds(5),
                                     .on_run = [&reports, name](const agentkit::FleetRunReport& r) { reports.add(r, name); }}));
    workers.back()->start();
  }

  // Ids unique per invocation, so the example may run again on the same database.
  const std::string suffix = std::to_string(::getpid());
  const std::string question = "question-" + suffix, refund = "refund-" + suffix;
  agentkit::state::PostgresRunQueue submitter(conninfo);
  submitter.submit({}, question, "support", "Do you ship to Portugal?");
  submitter.submit({}, refund, "support", "Refund order A-1: it arrived damaged.");
  std::cout << tag() << "submitted " << question << " and " << refund << std::endl;

  using Outcome = agentkit::FleetRunReport::Outcome;
  int status = 1;
  if (reports.wait_for(question, Outcome::done) && reports.wait_for(refund, Outcome::suspended)) {
    std::cout << tag() << "the question is answered; the refund waits for a human" << std::endl;
    pid_t pid = -1;
    const int approver = run_approver(self, conninfo, refund, pid);
    std::cout << tag() << "approver process (pid " << pid << ") exited with " << approver << std::endl;
    if (approver == 0 && reports.wait_for(refund, Outcome::done)) {
      const auto info = submitter.info({}, refund);
      std::cout << tag() << "queue: " << refund << " is "
                << (info && info->status == agentkit::state::PostgresRunQueue::Status::done ? "done" : "not done")
                << ", claimed " << (info ? info->attempts : 0) << " times" << std::endl;
      status = 0;
    }
  }
  for (auto& worker : workers) worker->stop();
  std::cout << tag() << "workers stopped: worker-a claimed " << workers[0]->claims() << ", worker-b claimed "
            << workers[1]->claims() << std::endl;
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 4 && std::string(argv[1]) == "approve") return approve(argv[2], argv[3]);
    if (argc > 2) {
      std::cerr << "usage: " << argv[0] << " [CONNINFO]\n";
      return 2;
    }
    std::string conninfo = argc == 2 ? argv[1] : "";
    if (conninfo.empty()) {
      if (const char* env = std::getenv("AGENTKIT_PG"); env && *env) conninfo = env;
    }
    if (!conninfo.empty()) return fleet(argv[0], conninfo);
    std::cout << tag() << "no CONNINFO or AGENTKIT_PG: starting a throwaway PostgreSQL server" << std::endl;
    ThrowawayPostgres server;
    return fleet(argv[0], server.conninfo());
  } catch (const std::exception& e) {
    std::cerr << tag() << "error: " << e.what() << "\n";
    return 1;
  }
}
