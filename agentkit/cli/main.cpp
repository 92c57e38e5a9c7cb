// agentkit: run agents defined in YAML from the command line.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "commands.h"
#include "terminal.h"

namespace {

using namespace agentkit::cli;

// What --help adds below CLI11's usage and option list: what each command
// does, the exit codes (the README's table), and a definition.
constexpr std::string_view kFooter = R"(
Usage:
  agentkit run AGENT.yaml "task" [--json] [--store PATH] [--session ID] [--yes]
  agentkit resume RUN_ID [AGENT.yaml] [--approve all|ID]... [--reject ID[:reason]]...
                  [--json] [--store PATH] [--yes]
  agentkit validate AGENT.yaml
  agentkit serve AGENT.yaml [--stdio | --http 127.0.0.1:PORT] [--store PATH]
  agentkit runs [--status STATUS] [--json] [--store PATH] [--scope SCOPE]
  agentkit show RUN_ID [--json | --html FILE] [--against RUN_ID] [--store PATH] [--scope SCOPE]
  agentkit diff A.json B.json [--html FILE]
  agentkit worker AGENT.yaml --store postgresql://... [--scope SCOPE] [--worker-id ID]
  agentkit submit AGENT_NAME "task" --store postgresql://... [--scope SCOPE] [--run-id ID]
  agentkit approve RUN_ID CALL_ID|all [--reject [REASON]] --store postgresql://... [--scope SCOPE]
  agentkit COMMAND --help | agentkit --version

Commands:
  run       Start a run of the agent on the task. Its id goes to stderr
            first, its text streams to stdout, and every call's outcome is
            a status line on stderr (refused calls and decisions included).
            A call that needs approval is asked about on a terminal
            ([a]pprove, [r]eject, [e]dit its JSON arguments); otherwise the
            run is suspended, its id printed with the command that resumes
            it, and agentkit exits 3.
  resume    Continue a suspended run, from this or another process, with
            decisions for its pending calls (a run whose process died
            mid-step is recovered from its last checkpoint). The definition
            defaults to the file the run was started from.
  validate  Check a definition and its sub-agents without running anything.
  serve     Serve the agent's tools, and the agent itself as a tool named
            after it ({"task": string}), to an MCP client (protocol
            2025-11-25) over stdin/stdout: newline-delimited JSON-RPC on
            stdout only, logs on stderr, until stdin ends. --http serves
            Streamable HTTP at http://HOST:PORT/mcp until Ctrl-C (loopback
            only unless AGENTKIT_MCP_TOKEN holds a bearer token clients must
            send; browser pages from other origins get 403). Calls follow the
            definition (autonomy, budget, egress); one that needs approval
            is put to the client's user (MCP elicitation) or, when the
            client cannot ask, refused with a tool error.
  runs      List the stored runs, newest first: id, agent, status, start,
            steps, tokens (in/out), cost, calls awaiting approval. STATUS is
            answered, suspended, failed, cancelled, max_iterations,
            budget_exhausted, guardrail_tripped or running (mid-step, or
            its process died).
  show      One run as a timeline: each model call (tokens, duration,
            finish reason), each tool call (arguments, outcome, duration,
            approvals), sub-runs under their call, resumed parts, then the
            answer or the error. --html FILE writes it as one self-contained
            page (timeline chart, tokens and cost per call, the conversation
            with images, approvals) that opens in any browser, offline.
            --against OTHER compares the two stored runs step by step (by
            position: task and outcome, each model call's reply, each tool
            call's arguments, outcome, approvals and result, sub-runs'
            steps; ids, times and tokens left out) after the timeline, in
            the JSON ("against") or as a section of the page.
            Unknown RUN_ID: exit 11. A run, span or sub-run that cannot be
            read is reported on stderr, the rest shown, and the exit code is 12.
  diff      Two recorded runs (cassettes, see Recorder) step by step: one
            line per model step or tool call that differs, with the first
            difference (--html FILE: as a page). Exit 0: the same; 1: they
            differ; 12: not a cassette.

  worker    Serve the agent's runs from a PostgreSQL fleet queue, beside
            any number of other workers (threads or hosts), until SIGINT or
            SIGTERM; the run in progress then goes back to the queue and
            the next worker recovers it. A run stops at a call needing
            approval (autonomy) until `approve` decides it. One line per run
            handled on stderr. --worker-id: the lease owner (default
            host:pid).
  submit    Queue a run of the agent named AGENT_NAME (the `name:` a worker
            serves) and print its id (--run-id: this one; an id already
            queued changes nothing).
  approve   Decide a pending call of a suspended fleet run (reject with
            --reject, optionally with a reason for the model; CALL_ID `all`:
            every pending call). The run resumes, and the workers wake,
            once every pending call is decided (approvers may decide one
            call each). A run whose checkpoint is suspended while its
            worker still holds it (it died before marking the run) is
            waited for, up to --wait seconds (60). Unknown run: exit 11; a
            call (or a run) not awaiting a decision: exit 13.

--store of worker, submit and approve (and of every other command) takes a
PostgreSQL database: a URI (postgresql://, postgres://) or a libpq
conninfo (host=... dbname=...); anything else is a SQLite file. Passwords
are never printed. --scope: the tenant, global (the default), ORG, orgORG,
domDOM or orgORG:domDOM; runs and show take it too, for a fleet's runs.

Options of runs and show: --store PATH, --json (runs: one object per line;
show: one document).

Options of run and resume:
  --json            One JSON object per line on stdout for every event, then
                    {"type":"result",...} (with "error_code" when the run
                    stopped early); nothing else goes to stdout.
  --store PATH      The state database (default $AGENTKIT_HOME/state.db,
                    else ~/.agentkit/state.db).
  --session ID      Continue this conversation (overrides `session:`).
  --yes             Approve every call that asks for approval.
  --approve all|ID  Approve all pending calls, or one by id (repeatable).
  --reject ID[:why] Reject a pending call, with an optional reason for the model.

Exit codes: (a failed run's error code picks its class)
  0  answered                          7  unauthenticated, permission_denied, a guardrail tripped
  1  failed: internal or unclassified  8  rate_limited, quota_exceeded, overloaded
  2  usage, configuration or setup     9  unavailable, timeout
  3  suspended (awaiting approval)    10  protocol, truncated
  4  max_iterations reached           11  invalid_argument, not_found, already_exists
  5  budget exhausted                 12  aborted, data_loss (the run's stored state)
  6  cancelled (Ctrl-C)                13  approve: the call is not awaiting a decision

Definition (the README lists every field):
  name: support
  model: openai/gpt-4o-mini          # anthropic/<m>, ollama/<m>, gemini/<m>; base_url: for compatible servers
  api_key_env: MY_KEY                # default OPENAI_API_KEY / ANTHROPIC_API_KEY
  prompt: You handle refunds for damaged orders.
  autonomy: gated                    # manual | gated | automatic
  limits: {max_iterations: 10, max_repairs: 3}
  budget: {steps: 20, tool_calls: 40, tokens: 200000, cost_usd: 1.5, wall_time_s: 300}
  pricing: {input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6}   # needed by cost_usd
  egress: [https://api.example.com]
  tools:
    - rest: {name: ..., description: ..., url: ..., side_effecting: false, params: [...]}
    - mcp: {name: fs, command: npx, args: [...]}      # or url: for Streamable HTTP
    - memory: {dir: ./memories}
    - skills: {dir: ./skills}
    - agent: {file: researcher.yaml, description: ..., side_effecting: false}

Environment: AGENTKIT_HOME (state directory), AGENTKIT_LOG (trace, debug,
info, warn (default), error, off). OTEL_EXPORTER_OTLP_ENDPOINT (and the
other OTEL_* variables): send each run's spans to that collector;
TRACEPARENT: join that W3C trace.
)";

// A bad command line: the message, then a pointer to the help.
int usage_error(const std::string& message) {
  std::cerr << "agentkit: " << message << "\nRun 'agentkit --help' for usage.\n";
  return static_cast<int>(Exit::usage);
}

// Options shared by run and resume.
void add_output_options(CLI::App& command, OutputOptions& output, std::string& store) {
  command.add_flag("--json", output.json, "One JSON object per line on stdout for every event, then the result");
  command.add_option("--store", store, "The state database (default $AGENTKIT_HOME/state.db)");
  command.add_flag("--yes", output.yes, "Approve every call that asks for approval");
}

// An argument CLI11 left over (allow_extras): an option the command does
// not take, or one positional too many.
std::optional<std::string> leftover(const CLI::App& command) {
  const auto rest = command.remaining();
  if (rest.empty()) return std::nullopt;
  const std::string& arg = rest.front();
  if (arg.size() > 1 && arg[0] == '-') return "unknown option '" + arg + "' for '" + command.get_name() + "'";
  return "unexpected argument '" + arg + "' for '" + command.get_name() + "'";
}

// Library logs go to stderr (stdout carries the run's text or JSON), at the
// level AGENTKIT_LOG names (warn by default). A name that is not one of the
// levels is an error rather than silence: spdlog reads any unknown name as
// "off".
std::optional<std::string> configure_logging() {
  static constexpr std::pair<std::string_view, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug}, {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},   {"error", spdlog::level::err},   {"off", spdlog::level::off}};
  spdlog::level::level_enum level = spdlog::level::warn;
  if (const char* name = std::getenv("AGENTKIT_LOG"); name && *name) {
    const auto it = std::find_if(std::begin(kLevels), std::end(kLevels), [&](const auto& l) { return l.first == name; });
    if (it == std::end(kLevels)) {
      std::string accepted;
      for (const auto& l : kLevels) accepted += (accepted.empty() ? "" : ", ") + std::string(l.first);
      std::string shown(name);
      if (shown.size() > 20) shown = shown.substr(0, 20) + "...";
      for (char& c : shown) c = std::isprint(static_cast<unsigned char>(c)) ? c : '?';
      return "AGENTKIT_LOG='" + shown + "' is not a log level; use one of: " + accepted;
    }
    level = it->second;
  }
  auto logger = spdlog::stderr_color_mt("agentkit");
  logger->set_level(level);
  spdlog::set_default_logger(std::move(logger));
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("agentkit: run agents defined in YAML.", "agentkit");
  app.footer(std::string(kFooter));
  app.set_version_flag("--version", "agentkit " AGENTKIT_VERSION);
  app.require_subcommand(1);

  RunArgs run_args;
  std::string run_store;
  CLI::App* run = app.add_subcommand("run", "Start a run of the agent on the task");
  run->add_option("AGENT.yaml", run_args.agent_file, "The agent's definition")->required();
  run->add_option("task", run_args.task, "What the agent should do")->required();
  run->add_option("--session", run_args.session, "Continue this conversation (overrides `session:`)");
  add_output_options(*run, run_args.output, run_store);

  ResumeArgs resume_args;
  std::string resume_store;
  std::string agent_file;
  std::vector<std::string> approve;
  std::vector<std::string> reject;
  CLI::App* resume = app.add_subcommand("resume", "Continue a suspended or interrupted run");
  resume->add_option("RUN_ID", resume_args.run_id, "The run to continue")->required();
  resume->add_option("AGENT.yaml", agent_file, "The definition (default: the one the run was started from)");
  resume->add_option("--approve", approve, "Approve all pending calls, or one by id (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  resume->add_option("--reject", reject, "Reject a pending call, ID[:reason] (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  add_output_options(*resume, resume_args.output, resume_store);

  std::string validate_file;
  CLI::App* validate = app.add_subcommand("validate", "Check a definition without running anything");
  validate->add_option("AGENT.yaml", validate_file, "The agent's definition")->required();

  RunsArgs runs_args;
  std::string runs_store;
  CLI::App* runs = app.add_subcommand("runs", "List the stored runs, newest first");
  runs->add_option("--status", runs_args.status, "Only runs with this status")
      ->check(CLI::IsMember({"answered", "suspended", "failed", "cancelled", "max_iterations", "budget_exhausted",
                             "guardrail_tripped", "running"}));
  runs->add_flag("--json", runs_args.json, "One JSON object per run, one per line");
  runs->add_option("--store", runs_store, "The state database (default $AGENTKIT_HOME/state.db)");
  std::string runs_scope;
  runs->add_option("--scope", runs_scope, "The tenant whose runs to list (default global)");

  ShowArgs show_args;
  std::string show_store, show_html;
  CLI::App* show = app.add_subcommand("show", "Show one run as a timeline, as JSON or as an HTML page");
  show->add_option("RUN_ID", show_args.run_id, "The run to show")->required();
  auto* show_json = show->add_flag("--json", show_args.json, "The run as one JSON document");
  show->add_option("--html", show_html, "Write the run as a self-contained HTML page to this file ('-': stdout)")
      ->excludes(show_json);
  show->add_option("--store", show_store, "The state database (default $AGENTKIT_HOME/state.db)");
  std::string show_scope;
  show->add_option("--scope", show_scope, "The tenant the run belongs to (default global)");
  std::string show_against;
  show->add_option("--against", show_against, "Compare with this run, step by step (with the timeline, --json or --html)");

  std::string diff_a, diff_b;
  CLI::App* diff = app.add_subcommand("diff", "Compare two recorded runs (cassettes) step by step");
  diff->add_option("A.json", diff_a, "The first cassette")->required();
  diff->add_option("B.json", diff_b, "The second cassette")->required();
  std::string diff_html_file;
  diff->add_option("--html", diff_html_file, "Write the differences as an HTML page to this file ('-': stdout)");

  ServeArgs serve_args;
  std::string serve_store;
  bool serve_stdio = true;
  CLI::App* serve = app.add_subcommand("serve", "Serve the agent and its tools over MCP (stdio or HTTP)");
  serve->add_option("AGENT.yaml", serve_args.agent_file, "The agent's definition")->required();
  auto* serve_stdio_flag = serve->add_flag("--stdio", serve_stdio, "Newline-delimited JSON-RPC on stdin/stdout (the default)");
  serve->add_option("--http", serve_args.http, "Streamable HTTP on HOST:PORT (endpoint /mcp)")->excludes(serve_stdio_flag);
  serve->add_option("--store", serve_store, "The state database (default $AGENTKIT_HOME/state.db)");

  WorkerArgs worker_args;
  std::string worker_scope;
  CLI::App* worker = app.add_subcommand("worker", "Serve the agent's runs from a PostgreSQL fleet queue");
  worker->add_option("AGENT.yaml", worker_args.agent_file, "The agent's definition")->required();
  worker->add_option("--store", worker_args.store, "The PostgreSQL database (URI or conninfo)")->required();
  worker->add_option("--scope", worker_scope, "The tenant whose runs to serve (default global)");
  worker->add_option("--worker-id", worker_args.worker_id, "The worker's name in the queue (default host:pid)");

  SubmitArgs submit_args;
  std::string submit_scope;
  CLI::App* submit = app.add_subcommand("submit", "Queue a run for the fleet's workers; prints its id");
  submit->add_option("AGENT_NAME", submit_args.agent, "The agent's name")->required();
  submit->add_option("task", submit_args.task, "What the agent should do")->required();
  submit->add_option("--store", submit_args.store, "The PostgreSQL database (URI or conninfo)")->required();
  submit->add_option("--scope", submit_scope, "The tenant (default global)");
  submit->add_option("--run-id", submit_args.run_id, "The run's id (default: a new one)");

  ApproveArgs approve_args;
  std::string approve_scope;
  std::string approve_reject;
  CLI::App* approve_cmd = app.add_subcommand("approve", "Decide a pending call of a suspended fleet run");
  approve_cmd->add_option("RUN_ID", approve_args.run_id, "The suspended run")->required();
  approve_cmd->add_option("CALL_ID", approve_args.call_id, "The pending call's id, or all")->required();
  auto* reject_flag = approve_cmd->add_option("--reject", approve_reject, "Reject the call, with an optional reason")
                          ->expected(0, 1);
  approve_cmd->add_option("--store", approve_args.store, "The PostgreSQL database (URI or conninfo)")->required();
  approve_cmd->add_option("--scope", approve_scope, "The tenant (default global)");
  int approve_wait = 60;
  approve_cmd
      ->add_option("--wait", approve_wait,
                   "Seconds to wait for a run still held by a worker that has not marked it suspended (default 60)")
      ->check(CLI::NonNegativeNumber);

  const std::vector<CLI::App*> commands = {run, resume, validate, runs, show, diff, serve, worker, submit, approve_cmd};
  for (CLI::App* command : commands) command->allow_extras();
  if (argc == 2 && std::string_view(argv[1]) == "help") {
    std::cout << app.help();
    return 0;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (argc < 2) return usage_error("no command given");
    const std::string first = argv[1];
    const bool known = std::any_of(commands.begin(), commands.end(), [&](const CLI::App* c) { return c->get_name() == first; });
    if (first[0] != '-' && !known) {
      return usage_error("unknown command '" + first + "'");
    }
    return usage_error(e.what());
  }
  for (CLI::App* command : commands) {
    if (!command->parsed()) continue;
    if (auto problem = leftover(*command)) return usage_error(*problem);
  }
  if (auto error = configure_logging()) {
    std::cerr << "agentkit: " << *error << "\n";
    return static_cast<int>(Exit::usage);
  }
  install_interrupt_handler();
  if (run->parsed()) {
    if (run_args.task.empty()) return usage_error("the task is empty");
    if (!run_store.empty()) run_args.output.store = run_store;
    return run_command(run_args);
  }
  if (resume->parsed()) {
    if (!agent_file.empty()) resume_args.agent_file = agent_file;
    for (const auto& id : approve) {
      if (id == "all") {
        resume_args.approve_all = true;
      } else {
        resume_args.approve.push_back(id);
      }
    }
    for (const auto& spec : reject) {
      const auto colon = spec.find(':');
      resume_args.reject.emplace_back(spec.substr(0, colon), colon == std::string::npos ? "" : spec.substr(colon + 1));
    }
    if (!resume_store.empty()) resume_args.output.store = resume_store;
    return resume_command(resume_args);
  }
  if (runs->parsed() || show->parsed()) {
    const std::string& text = runs->parsed() ? runs_scope : show_scope;
    const auto scope = parse_scope(text);
    if (!scope) return usage_error("--scope wants global, ORG, orgORG, domDOM or orgORG:domDOM, not '" + text + "'");
    (runs->parsed() ? runs_args.scope : show_args.scope) = *scope;
  }
  if (runs->parsed()) {
    if (!runs_store.empty()) runs_args.store = runs_store;
    return runs_command(runs_args);
  }
  if (show->parsed()) {
    if (!show_store.empty()) show_args.store = show_store;
    if (!show_html.empty()) show_args.html = show_html;
    if (!show_against.empty()) show_args.against = show_against;
    return show_command(show_args);
  }
  if (diff->parsed()) {
    return diff_command(diff_a, diff_b, diff_html_file.empty() ? std::nullopt : std::optional<std::filesystem::path>(diff_html_file));
  }
  if (serve->parsed()) {
    if (!serve_store.empty()) serve_args.store = serve_store;
    return serve_command(serve_args);
  }
  if (worker->parsed() || submit->parsed() || approve_cmd->parsed()) {
    const std::string& text = worker->parsed() ? worker_scope : submit->parsed() ? submit_scope : approve_scope;
    const auto scope = parse_scope(text);
    if (!scope) return usage_error("--scope wants global, ORG, orgORG, domDOM or orgORG:domDOM, not '" + text + "'");
    if (worker->parsed()) {
      worker_args.scope = *scope;
      return worker_command(worker_args);
    }
    if (submit->parsed()) {
      if (submit_args.task.empty()) return usage_error("the task is empty");
      submit_args.scope = *scope;
      return submit_command(submit_args);
    }
    approve_args.scope = *scope;
    if (reject_flag->count() > 0) approve_args.reject = approve_reject;
    approve_args.wait = std::chrono::seconds(approve_wait);
    return approve_command(approve_args);
  }
  return validate_command(validate_file);
}
