// 03 — a refund that needs a human's approval, approved in another process.
//
// The run checkpoints to a SQLite file. It suspends before the refund (which
// declares requires_approval), and this process ends its part there. A second
// process, started from the same executable, opens the file, approves the
// pending call and resumes the run by its id: the refund runs there, once.
// A later attempt to approve it again is refused.
//
// Run: ./build/examples/example_03_refund_approval [--store refunds.db]
// (it starts its second half itself: example_03_refund_approval resume DB RUN_ID)
// With --store the SQLite file is kept (without it, a temporary one is
// removed), and `agentkit runs --store refunds.db` / `agentkit show RUN_ID
// --store refunds.db` show the run: the call that waited, the approval, the
// refund in the second process.
//
// Traced: with OTEL_EXPORTER_OTLP_ENDPOINT set to a collector (for example
// http://localhost:4318), both processes send the run's spans there over
// OTLP/HTTP: one trace, the resumed part under the part that suspended.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/otlp.h>
#include <agentkit/state/sqlite_store.h>

extern char** environ;

namespace {

const std::string kTask = "My order A-1 arrived damaged, can I get my money back?";

// A support model whose next turn follows from the history alone: look the
// order up, then refund it, then report. A process that resumes the run
// continues the plan with nothing shared but the store.
class SupportModel final : public agentkit::Model {
 public:
  agentkit::ModelResponse complete(const agentkit::ModelRequest& request, agentkit::RunContext&) override {
    const agentkit::Message& last = request.messages.back();
    agentkit::ModelResponse response;
    response.finish_reason = "tool_calls";
    if (last.role == agentkit::Role::user) {
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

agentkit::Agent support_agent() {
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
                      char buf[96];
                      std::snprintf(buf, sizeof buf, "$%.2f on %s (issued by pid %d)", amount, id.c_str(),
                                    static_cast<int>(::getpid()));
                      return std::string(buf);
                    });
  return agentkit::Agent("support", "support-model", "You handle refunds for damaged orders.",
                         agentkit::cognition::react({lookup_order, refund}));
}

// Everything a process needs to continue a run: the store and the model;
// and, when a collector is named, an exporter for its spans (sent when the
// last copy of the context ends, at the latest).
agentkit::RunContext durable_context(const std::string& db) {
  agentkit::RunContext ctx;
  ctx.store = std::make_shared<agentkit::state::SqliteStore>(db);
  auto model = std::make_shared<SupportModel>();
  ctx.models = [model](std::string_view) { return model; };
  if (std::getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) ctx.tracer = agentkit::providers::make_otlp_exporter_from_env();
  return ctx;
}

std::string tag() { return "[pid " + std::to_string(::getpid()) + "] "; }

// The second process: a human approves the pending call, the run resumes.
int approve_and_resume(const std::string& db, const std::string& run_id) {
  auto ctx = durable_context(db);
  const auto stored = agentkit::load_run(*ctx.store, ctx.scope, run_id);
  if (!stored) {
    std::cout << tag() << "no run " << run_id << " in " << db << "\n";
    return 1;
  }
  agentkit::Decisions decisions;
  for (const auto& call : stored->batch) {
    if (std::find(stored->pending.begin(), stored->pending.end(), call.id) == stored->pending.end()) continue;
    std::cout << tag() << "human approves " << call.name << " " << call.arguments.dump() << "\n";
    decisions[call.id] = agentkit::Decision::approve();
  }
  const auto result = support_agent().resume(run_id, decisions, ctx);
  std::cout << tag() << "resumed run: " << to_string(result.stop_reason) << "\n";
  return result.stop_reason == agentkit::StopReason::answered ? 0 : 1;
}

struct Child {
  pid_t pid = -1;
  int exit_status = -1;
};

// Runs `self resume db run_id` and waits for it.
Child run_second_process(const char* self, const std::string& db, const std::string& run_id) {
  std::string name = self, mode = "resume", db_arg = db, id_arg = run_id;
  char* argv[] = {name.data(), mode.data(), db_arg.data(), id_arg.data(), nullptr};
  Child child;
  if (::posix_spawn(&child.pid, "/proc/self/exe", nullptr, nullptr, argv, environ) != 0) return {};
  int status = 0;
  if (::waitpid(child.pid, &status, 0) == child.pid && WIFEXITED(status)) child.exit_status = WEXITSTATUS(status);
  return child;
}

// `kept`: the store's path when the caller named one (it stays), else empty
// (a temporary store, removed at the end).
int first_process(const char* self, const std::string& kept) {
  const std::string db =
      kept.empty()
          ? (std::filesystem::temp_directory_path() / ("agentkit_refund_" + std::to_string(::getpid()) + ".db")).string()
          : kept;
  std::string shown_run;
  const auto agent = support_agent();
  int status = 1;
  {
    auto ctx = durable_context(db);
    const auto result = agent.run(kTask, ctx);
    const std::string run_id = result.state.run_id;
    shown_run = run_id;
    std::cout << tag() << "run " << run_id << ": " << to_string(result.stop_reason) << "\n";
    if (result.suspended) {
      for (const auto& call : result.suspended->pending) {
        std::cout << tag() << "awaiting approval: " << call.name << " " << call.arguments.dump() << "\n";
      }
      std::cout << std::flush;
      const Child child = run_second_process(self, db, run_id);
      std::cout << tag() << "second process (pid " << child.pid << ") exited with " << child.exit_status << "\n";
      const auto final_state = agentkit::load_run(*ctx.store, ctx.scope, run_id);
      std::cout << tag() << "stored run: " << to_string(final_state->stop_reason) << ": " << final_state->output
                << "\n";
      const bool refunded_there =
          final_state->output.find("issued by pid " + std::to_string(child.pid) + ")") != std::string::npos;
      std::cout << tag() << (refunded_there ? "the refund ran in the second process" : "the refund did not run there")
                << "\n";
      try {
        agent.resume(run_id, {{"c2", agentkit::Decision::approve()}}, ctx);
        std::cout << tag() << "a second approval ran the refund again\n";
      } catch (const agentkit::RunAlreadyResumed& e) {
        std::cout << tag() << "a second approval is refused: " << e.what() << "\n";
        status = child.exit_status == 0 && refunded_there ? 0 : 1;
      }
    }
  }
  if (!kept.empty()) {
    std::cout << tag() << "the store is kept; look at the run with:\n"
              << "  agentkit runs --store " << db << "\n"
              << "  agentkit show " << shown_run << " --store " << db << "\n";
    return status;
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 4 && std::string(argv[1]) == "resume") return approve_and_resume(argv[2], argv[3]);
    if (argc == 3 && std::string(argv[1]) == "--store") return first_process(argv[0], argv[2]);
    if (argc != 1) {
      std::cerr << "usage: " << argv[0] << " [--store PATH]\n";
      return 2;
    }
    return first_process(argv[0], {});
  } catch (const std::exception& e) {
    std::cerr << tag() << "error: " << e.what() << "\n";
    return 1;
  }
}
