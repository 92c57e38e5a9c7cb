#pragma once
// The CLI's commands: run, resume and validate. Each returns the process
// exit code (see Exit in terminal.h).
#include <filesystem>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <agentkit/context.h>

namespace agentkit::cli {

// Options shared by run and resume.
struct OutputOptions {
  bool json = false;                           // one JSON object per line on stdout
  bool yes = false;                            // approve every call that asks, without asking
  std::optional<std::filesystem::path> store;  // the state database; default $AGENTKIT_HOME/state.db
};

struct RunArgs {
  std::filesystem::path agent_file;
  std::string task;
  std::string session;  // overrides the definition's `session`
  OutputOptions output;
};

struct ResumeArgs {
  std::string run_id;
  std::optional<std::filesystem::path> agent_file;  // default: the file the run was started from
  bool approve_all = false;
  std::vector<std::string> approve;                         // call ids
  std::vector<std::pair<std::string, std::string>> reject;  // call id, reason
  OutputOptions output;
};

// `agentkit run AGENT.yaml "task"`: starts a durable run and drives it
// until it ends. A suspension asks for decisions on a terminal (stdin and
// stdout both TTYs, no --json) and continues in-process; otherwise it prints
// the run id and how to resume, and exits with Exit::suspended.
int run_command(const RunArgs& args);

// `agentkit resume RUN_ID`: continues a suspended run with decisions from
// the flags (or asked on a terminal), or recovers a run whose process died
// mid-step. The agent definition is the one the run was started with unless
// a file is given.
int resume_command(const ResumeArgs& args);

struct RunsArgs {
  std::optional<std::filesystem::path> store;
  std::string status;  // only runs with this status (RunSummary::status); empty: all
  bool json = false;
  Scope scope;  // the tenant whose runs to list (fleet runs; the CLI's own runs are global)
};

struct ShowArgs {
  std::string run_id;
  std::optional<std::filesystem::path> store;
  bool json = false;
  std::optional<std::filesystem::path> html;  // write the page here ("-": stdout) instead of the timeline
  std::optional<std::string> against;          // another run to compare with, step by step (compare_runs)
  Scope scope;                                 // the tenant the runs belong to
};

// `agentkit runs`: the store's runs, newest first, as a table or JSON lines.
// A run that cannot be read is a row with status "unreadable" and a line
// on stderr; the others are listed all the same, and the exit code is then
// Exit::state. A store file that does not exist holds no runs.
int runs_command(const RunsArgs& args);

// `agentkit show RUN_ID`: one run as a timeline (or JSON, or an HTML page).
// No such run: ErrorCode::not_found (Exit::rejected); an unreadable run
// document: data_loss (Exit::state). Spans or sub-runs that cannot be read
// are left out with a warning on stderr, and the exit code is Exit::state.
int show_command(const ShowArgs& args);

// `agentkit diff A.json B.json [--html FILE]`: two cassettes
// (<agentkit/replay.h>) compared step by step, one line per difference (or
// an HTML page written to `html`, "-": stdout). Exit 0 when they are the
// same, 1 (Exit::failed) when they differ; a file that is not a cassette is
// data_loss (Exit::state).
int diff_command(const std::filesystem::path& a, const std::filesystem::path& b,
                 const std::optional<std::filesystem::path>& html = std::nullopt);

struct ServeArgs {
  std::filesystem::path agent_file;
  std::string http;  // "HOST:PORT": Streamable HTTP there instead of stdio
  std::optional<std::filesystem::path> store;  // default $AGENTKIT_HOME/state.db
};

// `agentkit serve AGENT.yaml --stdio`: serves the agent's tools, and the
// agent itself as a tool named after it ({"task": string}), to one MCP
// client over newline-delimited JSON-RPC on stdin/stdout (logs on stderr),
// until stdin ends. `--http HOST:PORT`: to any number of clients over
// Streamable HTTP at http://HOST:PORT/mcp until SIGINT; the URL goes to
// stderr; AGENTKIT_MCP_TOKEN, when set, is the bearer token clients must
// send (required for a host that is not loopback). Calls run through the definition's context (autonomy,
// budget, egress, store); one needing approval is put to the client's user
// by elicitation, or refused when the client cannot ask.
int serve_command(const ServeArgs& args);

// A --scope value: "global" (or empty), "ORG" or "orgORG", "domDOM",
// "orgORG:domDOM" (Scope::key()'s form); nullopt for anything else.
std::optional<Scope> parse_scope(const std::string& text);

struct WorkerArgs {
  std::filesystem::path agent_file;
  std::string store;      // a PostgreSQL URI or conninfo
  Scope scope;            // the scope (tenant) whose runs the worker takes
  std::string worker_id;  // the lease owner; default host:pid
};

// `agentkit worker AGENT.yaml --store postgresql://...`: a FleetWorker
// serving the agent's runs from the database's queue until SIGINT or
// SIGTERM; a run in progress then goes back to the queue. One line per run
// handled on stderr.
int worker_command(const WorkerArgs& args);

struct SubmitArgs {
  std::string agent;  // the agent's name (a worker serves it)
  std::string task;
  std::string store;
  Scope scope;
  std::string run_id;  // default: a new one
};

// `agentkit submit AGENT "task" --store postgresql://...`: queues a run for
// the fleet's workers and prints its id. Submitting an id again changes
// nothing (a note on stderr; exit 0).
int submit_command(const SubmitArgs& args);

struct ApproveArgs {
  std::string run_id;
  std::string call_id;                // a pending call's id, or "all"
  std::optional<std::string> reject;  // set: reject, with this reason
  std::string store;
  Scope scope;
  // How long to wait for a run whose checkpoint is suspended while the queue
  // still has it leased (its worker died, or is just marking it).
  std::chrono::seconds wait{60};
};

// `agentkit approve RUN_ID CALL_ID [--reject [REASON]] [--wait SECONDS]
// --store ...`: gives a suspended fleet run its decision and wakes the
// workers (NOTIFY). The call must be one the run's checkpoint lists as
// pending, else Exit::not_pending (so is a run the queue does not hold as
// suspended, after waiting up to `wait` for a leased run whose checkpoint
// is suspended to be marked so); the run resumes once every pending call
// has a decision.
int approve_command(const ApproveArgs& args);

// `agentkit validate AGENT.yaml`: loads and checks the definition and its
// sub-agents without starting anything.
int validate_command(const std::filesystem::path& agent_file);

// The default state database: $AGENTKIT_HOME/state.db, else
// $HOME/.agentkit/state.db.
std::filesystem::path default_store_path();

// Installs the SIGINT handler that cancels the current run (a second SIGINT
// ends the process at once).
void install_interrupt_handler();

}  // namespace agentkit::cli
