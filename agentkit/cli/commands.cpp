#include "commands.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <thread>

#include <spdlog/spdlog.h>

#include <agentkit/agent.h>
#include <agentkit/replay.h>
#include <agentkit/description.h>
#include <agentkit/providers/mcp_server.h>
#include <agentkit/state/keys.h>
#include <agentkit/state/ledger.h>
#include <agentkit/fleet.h>
#include <agentkit/state/postgres_run_queue.h>
#include <agentkit/state/postgres_store.h>
#include <agentkit/state/sqlite_store.h>
#include <agentkit/state/store.h>

#include "assembly.h"
#include "config.h"
#include "inspect.h"
#include "terminal.h"

namespace agentkit::cli {
namespace {

namespace fs = std::filesystem;

// How long the driving loop sleeps when a poll made no progress: short
// enough for text to stream smoothly, long enough to leave the CPU alone.
constexpr auto kPollInterval = std::chrono::milliseconds(2);

volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void on_interrupt(int) { g_interrupted = 1; }

// Blocks SIGINT on this thread while alive. Threads started meanwhile (the
// tool workers, MCP connections) keep it blocked, so an interrupt reaches the
// main thread and cuts short a read there (the approval prompt).
class InterruptsBlocked {
 public:
  InterruptsBlocked() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    ::pthread_sigmask(SIG_BLOCK, &set, &previous_);
  }
  ~InterruptsBlocked() { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  InterruptsBlocked(const InterruptsBlocked&) = delete;
  InterruptsBlocked& operator=(const InterruptsBlocked&) = delete;

 private:
  sigset_t previous_;
};

// The runtime for `config`, its threads started with SIGINT blocked.
std::unique_ptr<const AgentRuntime> start_runtime(const AgentConfig& config) {
  InterruptsBlocked blocked;
  return std::make_unique<const AgentRuntime>(config);
}

// A usage or setup problem: printed as it is, exit code Exit::usage.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(ErrorCode::invalid_argument, message) {}
};

// Asks on the terminal only when a person is there to answer.
bool interactive(const OutputOptions& output) { return !output.json && ::isatty(0) && ::isatty(1); }

Terminal make_terminal(const OutputOptions& output) {
  return Terminal({.json = output.json, .styled = !output.json && ::isatty(2), .text_on_terminal = ::isatty(1) != 0});
}

// Where the CLI remembers which definition a run was started from.
std::string run_record_key(const std::string& run_id) { return state::keys::cli_run(Scope{}, run_id); }

// A --store value that names a PostgreSQL database (a libpq URI or a
// key=value conninfo) rather than a SQLite file.
bool is_postgres(const std::string& store) {
  return store.rfind("postgresql://", 0) == 0 || store.rfind("postgres://", 0) == 0 ||
         store.find("host=") != std::string::npos || store.find("dbname=") != std::string::npos;
}

// `store` for messages: a PostgreSQL conninfo with its password replaced by
// "***" (URI "user:secret@" and key=value "password=secret" alike); a path
// as it is.
std::string redacted_conninfo(const std::string& store) {
  if (!is_postgres(store)) return store;
  std::string out = store;
  if (const auto scheme = out.find("://"); scheme != std::string::npos) {
    const auto authority = scheme + 3;
    const auto end = out.find_first_of("/?", authority);
    const auto at = out.rfind('@', end == std::string::npos ? std::string::npos : end);
    if (at != std::string::npos && at >= authority) {
      const auto colon = out.find(':', authority);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
    // ?password=... in the query string
    for (auto p = out.find("password="); p != std::string::npos; p = out.find("password=", p + 1)) {
      const auto value = p + 9;
      const auto stop = out.find('&', value);
      out.replace(value, (stop == std::string::npos ? out.size() : stop) - value, "***");
    }
    return out;
  }
  for (auto p = out.find("password"); p != std::string::npos; p = out.find("password", p + 1)) {
    auto eq = out.find_first_not_of(' ', p + 8);
    if (eq == std::string::npos || out[eq] != '=') continue;
    auto value = out.find_first_not_of(' ', eq + 1);
    if (value == std::string::npos) break;
    std::size_t stop = value;
    if (out[value] == '\'') {
      stop = value + 1;
      while (stop < out.size() && out[stop] != '\'') stop += out[stop] == '\\' ? 2 : 1;
      stop = std::min(stop + 1, out.size());
    } else {
      stop = out.find(' ', value);
      if (stop == std::string::npos) stop = out.size();
    }
    out.replace(value, stop - value, "***");
  }
  return out;
}

std::shared_ptr<state::Store> open_postgres(const std::string& conninfo) {
  try {
    return std::make_shared<state::PostgresStore>(conninfo);
  } catch (const std::exception& e) {
    // PostgresStore's messages are redacted already; the conninfo is not repeated here.
    throw UsageError(std::string("cannot open the PostgreSQL store ") + redacted_conninfo(conninfo) + ": " + e.what());
  }
}

std::shared_ptr<state::Store> open_store(const OutputOptions& output) {
  if (output.store && is_postgres(output.store->string())) return open_postgres(output.store->string());
  const fs::path path = output.store.value_or(default_store_path());
  if (path.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
  }
  try {
    return std::make_shared<state::SqliteStore>(path);
  } catch (const std::exception& e) {
    throw UsageError(std::string("cannot open the state database: ") + e.what());
  }
}

// The state database at `path` for reading, or null when there is none
// (nothing is created).
std::shared_ptr<state::Store> open_existing_store(const fs::path& path) {
  if (is_postgres(path.string())) return open_postgres(path.string());
  std::error_code ec;
  if (!fs::exists(path, ec)) return nullptr;
  try {
    return std::make_shared<state::SqliteStore>(path);
  } catch (const std::exception& e) {
    throw UsageError("cannot open the state database " + path.string() + ": " + e.what());
  }
}

// "run-" and 64 random bits: unique across processes sharing one database.
std::string new_run_id() {
  std::random_device random;
  const std::uint64_t bits = (std::uint64_t(random()) << 32) ^ random();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(bits));
  return std::string("run-") + hex;
}

// `text` quoted for a POSIX shell when it needs it.
std::string shell_quoted(const std::string& text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("-_./:=@%+,").find(static_cast<char>(c)) != std::string_view::npos;
  });
  if (plain) return text;
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string resume_command_for(const std::string& run_id, const OutputOptions& output) {
  std::string command = "agentkit resume " + shell_quoted(run_id);
  if (output.store && is_postgres(output.store->string())) {
    command += " --store " + shell_quoted(redacted_conninfo(output.store->string()));
  } else if (output.store) {
    command += " --store " + shell_quoted(fs::absolute(*output.store).string());
  }
  return command;
}

// An event of a sub-agent's run: its agent path names a parent.
bool nested(const Event& event) { return info_of(event).agent_path().find('/') != std::string_view::npos; }

// One invocation's run: the agent, its context and the terminal.
struct Driver {
  const AgentRuntime& runtime;
  RunContext& ctx;
  Terminal& ui;
  const OutputOptions& output;
  std::string resume_command;

  // Advances `handle` until it ends, showing events as they arrive. The
  // first SIGINT cancels the run.
  RunResult drive(RunHandle& handle) {
    bool cancelled = false;
    while (true) {
      // Sub-runs' events come through the run's own queue, in order.
      const bool done = handle.poll();
      for (const Event& event : handle.drain_events()) ui.show(event, nested(event));
      if (done) return handle.wait();  // its end is in the store before a resume reads it
      if (g_interrupted && !cancelled) {
        handle.cancel();
        cancelled = true;
      }
      std::this_thread::sleep_for(kPollInterval);
    }
  }

  // Drives `handle` to its end; a suspension is decided here (--yes, or
  // asked on a terminal) and continued in-process, or left for `resume`.
  int finish(RunHandle handle) {
    while (true) {
      const RunResult result = drive(handle);
      if (result.stop_reason == StopReason::suspended && result.suspended) {
        std::optional<Decisions> decisions;
        if (output.yes) {
          decisions = approve_all(result.suspended->pending);
        } else if (interactive(output)) {
          decisions = ask_decisions(result.suspended->pending, std::cin, stderr);
        }
        if (decisions) {
          handle = runtime.agent().start_resume(result.state.run_id, std::move(*decisions), ctx);
          continue;
        }
        if (g_interrupted) {
          ui.note("interrupted; run " + result.state.run_id + " stays suspended: " + resume_command);
          return static_cast<int>(Exit::cancelled);
        }
      }
      ui.outcome(result, resume_command);
      return static_cast<int>(exit_code(result));
    }
  }

  static Decisions approve_all(const std::vector<ToolCall>& pending) {
    Decisions decisions;
    for (const auto& call : pending) decisions[call.id] = Decision::approve();
    return decisions;
  }
};

// Decisions for a stored run's pending calls from --approve / --reject, plus
// --yes or the terminal for the rest; nullopt when the terminal's input ended
// first. Throws UsageError for an id that is not pending, or for undecided
// calls with nobody to ask.
std::optional<Decisions> decisions_for(const ResumeArgs& args, const std::vector<ToolCall>& pending) {
  Decisions decisions;
  auto require_pending = [&](const std::string& id) {
    if (std::none_of(pending.begin(), pending.end(), [&](const ToolCall& c) { return c.id == id; })) {
      std::string ids;
      for (const auto& call : pending) ids += (ids.empty() ? "" : ", ") + call.id;
      throw UsageError("call '" + id + "' is not awaiting a decision in run " + args.run_id + "; pending: " + ids);
    }
  };
  for (const auto& id : args.approve) {
    require_pending(id);
    decisions[id] = Decision::approve();
  }
  for (const auto& [id, reason] : args.reject) {
    require_pending(id);
    decisions[id] = Decision::reject(reason);
  }
  std::vector<ToolCall> undecided;
  for (const auto& call : pending) {
    if (args.approve_all || args.output.yes) decisions.try_emplace(call.id, Decision::approve());
    if (!decisions.contains(call.id)) undecided.push_back(call);
  }
  if (undecided.empty()) return decisions;
  if (interactive(args.output)) {
    auto asked = ask_decisions(undecided, std::cin, stderr);
    if (!asked) return std::nullopt;
    decisions.merge(*asked);
    return decisions;
  }
  std::string list;
  for (const auto& call : undecided) list += "\n  " + call.id + "  " + call_preview(call);
  throw UsageError("run " + args.run_id + " awaits a decision on:" + list +
                   "\npass --approve all, --approve ID or --reject ID[:reason]");
}

fs::path agent_file_of(state::Store& store, const ResumeArgs& args) {
  if (args.agent_file) return *args.agent_file;
  const auto record = store.get(run_record_key(args.run_id));
  if (!record) {
    if (load_run(store, Scope{}, args.run_id)) {
      throw UsageError("run " + args.run_id + " was not started by this CLI; name its definition: agentkit resume " +
                       args.run_id + " AGENT.yaml");
    }
    throw UsageError("no run '" + args.run_id + "' in the state database");
  }
  try {
    return Json::parse(record->value).at("agent_file").get<std::string>();
  } catch (const Json::exception&) {
    throw UsageError("the record of run " + args.run_id + " is unreadable; name its definition: agentkit resume " +
                     args.run_id + " AGENT.yaml");
  }
}

int guarded(const std::function<int()>& command) {
  try {
    return command();
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
  } catch (const UsageError& e) {
    std::cerr << "agentkit: " << e.what() << "\n";
  } catch (const RunError& e) {
    std::cerr << "agentkit: " << e.what() << "\n";
  } catch (const Error& e) {
    std::cerr << "agentkit: error [" << to_string(e.code()) << "]: " << e.what() << "\n";
    return static_cast<int>(exit_code(e.code()));
  } catch (const std::exception& e) {
    std::cerr << "agentkit: error: " << e.what() << "\n";
    return static_cast<int>(Exit::failed);
  }
  return static_cast<int>(Exit::usage);
}

}  // namespace

fs::path default_store_path() {
  if (const char* home = std::getenv("AGENTKIT_HOME"); home && *home) return fs::path(home) / "state.db";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".agentkit" / "state.db";
  throw UsageError("neither AGENTKIT_HOME nor HOME is set; pass --store PATH");
}

void install_interrupt_handler() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  // No SA_RESTART: a pending read (the approval prompt) returns at once.
  // SA_RESETHAND: a second SIGINT ends the process.
  action.sa_flags = SA_RESETHAND;
  ::sigaction(SIGINT, &action, nullptr);
}

int run_command(const RunArgs& args) {
  return guarded([&] {
    const AgentConfig config = load_agent_config(args.agent_file);
    Terminal ui = make_terminal(args.output);
    for (const auto& warning : config.warnings) ui.note(warning);
    auto store = open_store(args.output);
    const auto runtime = start_runtime(config);
    RunContext ctx = runtime->context(store);
    const std::string run_id = new_run_id();
    store->put(run_record_key(run_id), Json{{"agent_file", config.file.string()}}.dump());
    Driver driver{*runtime, ctx, ui, args.output, resume_command_for(run_id, args.output)};
    const std::string session = args.session.empty() ? config.session : args.session;
    ui.started(run_id, config.name, false);
    return driver.finish(runtime->agent().start(args.task, ctx, {.run_id = run_id, .session = session}));
  });
}

int serve_command(const ServeArgs& args) {
  return guarded([&] {
    const AgentConfig config = load_agent_config(args.agent_file);
    for (const auto& warning : config.warnings) std::cerr << "agentkit: " << warning << "\n";
    auto store = open_store({.store = args.store});
    const auto runtime = start_runtime(config);
    ToolRegistry tools = runtime->agent().cognition().tools();
    bool side_effecting = false;
    for (const auto& tool : tools.tools()) side_effecting = side_effecting || tool->side_effecting();
    if (tools.contains(config.name)) {
      spdlog::warn("the agent is not served as a tool: a tool is already called '{}'", config.name);
    } else {
      std::string description = config.description;
      if (description.size() < kMinDescriptionChars) {
        description = "Run the agent '" + config.name + "' on a task and return its answer.";
      }
      tools.add(as_tool(std::make_shared<const Agent>(runtime->agent()),
                        {.name = config.name, .description = description, .side_effecting = side_effecting}));
    }
    // Clients that send an idempotency key get each call once, across retries and restarts.
    providers::McpServer server(std::move(tools), runtime->context(store),
                                {.name = config.name,
                                 .version = AGENTKIT_VERSION,
                                 .logger = spdlog::default_logger(),
                                 .ledger = std::make_shared<state::StoreLedger>(store, "mcp/calls/")});
    std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write ends its session, not the process
    if (args.http.empty()) {
      providers::serve_stdio(server);
      return static_cast<int>(Exit::answered);
    }
    providers::McpHttpListenerOptions options;
    const auto colon = args.http.rfind(':');
    try {
      if (colon == std::string::npos) throw std::invalid_argument("no port");
      options.host = args.http.substr(0, colon);
      options.port = std::stoi(args.http.substr(colon + 1));
    } catch (const std::exception&) {
      throw UsageError("--http wants HOST:PORT, e.g. 127.0.0.1:8931, not '" + args.http + "'");
    }
    if (options.host.size() > 2 && options.host.front() == '[') options.host = options.host.substr(1, options.host.size() - 2);
    if (const char* token = std::getenv("AGENTKIT_MCP_TOKEN"); token && *token) options.bearer_token = token;
    providers::McpHttpListener http(server, std::move(options));
    http.listen();
    std::cerr << "agentkit: serving MCP on " << http.url() << "\n";
    while (!g_interrupted) {
      if (!http.poll()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return static_cast<int>(Exit::answered);
  });
}

int resume_command(const ResumeArgs& args) {
  return guarded([&] {
    auto store = open_store(args.output);
    const AgentConfig config = load_agent_config(agent_file_of(*store, args));
    const auto stored = load_run(*store, Scope{}, args.run_id);
    if (!stored) throw UsageError("no run '" + args.run_id + "' in the state database");
    if (stored->agent != config.name) {
      throw UsageError("run " + args.run_id + " belongs to agent '" + stored->agent + "', but " + config.file.string() +
                       " defines '" + config.name + "'");
    }
    const bool has_flags = args.approve_all || !args.approve.empty() || !args.reject.empty();
    if (stored->phase == Phase::done) {
      throw UsageError("run " + args.run_id + " already ended (" + std::string(to_string(stored->stop_reason)) +
                       "); nothing to resume");
    }
    if (stored->phase != Phase::suspended && has_flags) {
      throw UsageError("run " + args.run_id + " is not waiting for a decision; resume it without --approve/--reject");
    }
    Terminal ui = make_terminal(args.output);
    for (const auto& warning : config.warnings) ui.note(warning);
    const auto runtime = start_runtime(config);
    RunContext ctx = runtime->context(store);
    charge_spent(*ctx.budget, *stored);  // the budget covers the whole run, not each invocation
    Driver driver{*runtime, ctx, ui, args.output, resume_command_for(args.run_id, args.output)};
    ui.started(args.run_id, config.name, true);
    if (stored->phase == Phase::suspended) {
      auto decisions = decisions_for(args, suspension_of(*stored).pending);
      if (!decisions) {
        ui.note("no decision given; run " + args.run_id + " stays suspended");
        return static_cast<int>(g_interrupted ? Exit::cancelled : Exit::suspended);
      }
      return driver.finish(runtime->agent().start_resume(args.run_id, std::move(*decisions), ctx));
    }
    // Its process died mid-step: continue from the last checkpoint.
    ui.note("recovering run " + args.run_id + " from its last checkpoint");
    return driver.finish(runtime->agent().start_recover(args.run_id, ctx));
  });
}

int runs_command(const RunsArgs& args) {
  return guarded([&] {
    const fs::path path = args.store.value_or(default_store_path());
    std::vector<RunSummary> runs;
    if (auto store = open_existing_store(path)) runs = list_runs(*store, args.scope);
    bool unreadable = false;
    for (const auto& run : runs) {
      if (run.problem.empty()) continue;
      unreadable = true;
      std::cerr << "agentkit: run " << first_line(run.run_id, 80) << ": " << first_line(run.problem, 300) << "\n";
    }
    if (!args.status.empty()) {
      std::erase_if(runs, [&](const RunSummary& run) { return run.status() != args.status; });
    }
    if (args.json) {
      for (const auto& run : runs) std::cout << canonical_dump(run_summary_json(run)) << "\n";
    } else if (runs.empty()) {
      std::cerr << "no " << (args.status.empty() ? "" : args.status + " ") << "runs in " << redacted_conninfo(path.string()) << "\n";
    } else {
      std::fflush(stdout);
      print_runs(runs, stdout);
    }
    std::cout.flush();
    return static_cast<int>(unreadable ? Exit::state : Exit::answered);
  });
}

int show_command(const ShowArgs& args) {
  return guarded([&] {
    const fs::path path = args.store.value_or(default_store_path());
    auto store = open_existing_store(path);
    const auto view_of = [&](const std::string& run_id) {
      std::optional<RunView> view;
      if (store) {
        try {
          view = load_view(*store, args.scope, run_id);
        } catch (const CheckpointError& e) {
          throw Error(ErrorCode::data_loss, "run " + first_line(run_id, 80) + " is unreadable: " + e.what());
        }
      }
      if (!view) throw Error(ErrorCode::not_found, "no run '" + first_line(run_id, 80) + "' in " + redacted_conninfo(path.string()));
      for (const auto& problem : view->problems) std::cerr << "agentkit: warning: " << first_line(problem, 300) << "\n";
      return std::move(*view);
    };
    const RunView view = view_of(args.run_id);
    std::optional<RunComparison> against;
    if (args.against) against = RunComparison{*args.against, compare_runs(view, view_of(*args.against))};
    if (args.html) {
      const std::string page = view_html(view, against);
      if (*args.html == "-") {
        std::cout << page;
      } else {
        std::ofstream file(*args.html, std::ios::binary | std::ios::trunc);
        file << page;
        file.close();
        if (!file) throw UsageError("cannot write " + args.html->string());
        std::cerr << "wrote " << args.html->string() << "\n";
      }
    } else if (args.json) {
      Json doc = view_json(view);
      if (against) {
        Json differences = Json::array();
        for (const StepDifference& d : against->differences) {
          differences.push_back({{"where", d.where}, {"what", d.what}, {"path", d.path}, {"a", d.a}, {"b", d.b}});
        }
        doc["against"] = {{"run_id", against->run_id}, {"differences", std::move(differences)}};
      }
      std::cout << doc.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
    } else {
      std::fflush(stdout);
      print_view(view, stdout);
      if (against) {
        std::cout << "\ncompared with run " << first_line(against->run_id, 80) << ": " << render(against->differences);
      }
    }
    std::cout.flush();
    return static_cast<int>(view.problems.empty() ? Exit::answered : Exit::state);
  });
}

int diff_command(const fs::path& a, const fs::path& b, const std::optional<fs::path>& html) {
  return guarded([&] {
    const auto differences = diff(Cassette::load(a.string()), Cassette::load(b.string()));
    if (!html) {
      std::cout << render(differences);
    } else if (*html == "-") {
      std::cout << diff_html(differences, a.string(), b.string());
    } else {
      std::ofstream out(*html, std::ios::binary | std::ios::trunc);
      out << diff_html(differences, a.string(), b.string());
      if (!out.flush()) throw Error(ErrorCode::unavailable, "cannot write " + html->string());
    }
    return static_cast<int>(differences.empty() ? Exit::answered : Exit::failed);
  });
}

int validate_command(const fs::path& agent_file) {
  return guarded([&] {
    const AgentConfig config = load_agent_config(agent_file);
    for (const auto& warning : config.warnings) std::cerr << warning << "\n";
    const AgentRuntime runtime(config, {.connect = false});
    std::string tools;
    for (const auto& name : runtime.tool_names()) tools += (tools.empty() ? "" : ", ") + name;
    for (const auto& server : config.mcp) tools += (tools.empty() ? "" : ", ") + server.name + "_* (MCP, not started)";
    std::cout << config.file.string() << ": ok: agent '" << config.name << "', model " << config.model
              << ", tools: " << (tools.empty() ? "none" : tools) << "\n";
    return static_cast<int>(Exit::answered);
  });
}

std::optional<Scope> parse_scope(const std::string& text) {
  Scope scope;
  if (text.empty() || text == "global") return scope;
  const auto number = [](const std::string& digits) -> std::optional<std::int64_t> {
    if (digits.empty() || digits.size() > 18 ||
        !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) {
      return std::nullopt;
    }
    return std::stoll(digits);
  };
  std::string org = text, dom;
  if (const auto colon = text.find(':'); colon != std::string::npos) {
    org = text.substr(0, colon);
    dom = text.substr(colon + 1);
    if (dom.rfind("dom", 0) != 0) return std::nullopt;
  } else if (text.rfind("dom", 0) == 0) {
    org.clear();
    dom = text;
  }
  if (!org.empty()) {
    const auto id = number(org.rfind("org", 0) == 0 ? org.substr(3) : org);
    if (!id) return std::nullopt;
    scope.org_id = *id;
  }
  if (!dom.empty()) {
    const auto id = number(dom.substr(3));
    if (!id) return std::nullopt;
    scope.domain_id = *id;
  }
  return scope;
}

namespace {

// The queue of a fleet, on the database `store` names.
std::shared_ptr<state::PostgresRunQueue> open_queue(const std::string& store) {
  if (!is_postgres(store)) {
    throw UsageError("--store must name a PostgreSQL database (postgresql://... or a libpq conninfo), not '" +
                     store + "'");
  }
  try {
    return std::make_shared<state::PostgresRunQueue>(store);
  } catch (const std::exception& e) {
    throw UsageError("cannot open the run queue on " + redacted_conninfo(store) + ": " + e.what());
  }
}

std::string host_and_pid() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || !*host) std::snprintf(host, sizeof host, "localhost");
  return std::string(host) + ":" + std::to_string(::getpid());
}

}  // namespace

int worker_command(const WorkerArgs& args) {
  return guarded([&] {
    const AgentConfig config = load_agent_config(args.agent_file);
    for (const auto& warning : config.warnings) std::cerr << "agentkit: " << warning << "\n";
    auto queue = open_queue(args.store);
    auto store = open_postgres(args.store);
    // SIGTERM stops the worker like SIGINT (a supervisor's stop); a second
    // SIGINT ends the process at once (SA_RESETHAND, as for run).
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGTERM, &action, nullptr);
    action.sa_flags = SA_RESETHAND;
    ::sigaction(SIGINT, &action, nullptr);
    std::unique_ptr<const AgentRuntime> runtime;
    std::unique_ptr<FleetWorker> worker;
    {
      // The runtime's and the worker's threads leave the signals to this one.
      sigset_t set, previous;
      sigemptyset(&set);
      sigaddset(&set, SIGINT);
      sigaddset(&set, SIGTERM);
      ::pthread_sigmask(SIG_BLOCK, &set, &previous);
      runtime = std::make_unique<const AgentRuntime>(config);
      FleetWorker::Agents agents{{config.name, std::make_shared<const Agent>(runtime->agent())}};
      const std::string name = args.worker_id.empty() ? host_and_pid() : args.worker_id;
      FleetWorkerOptions options{.name = name, .scopes = {args.scope}};
      options.on_run = [](const FleetRunReport& report) {
        std::string line = "agentkit: run " + report.run_id + " (" + report.agent + ", attempt " +
                           std::to_string(report.attempt) + "): " + std::string(to_string(report.outcome));
        if (report.result) line += std::string(" ") + std::string(to_string(report.result->stop_reason));
        if (!report.error.empty()) line += ": " + first_line(report.error, 300);
        std::cerr << line + "\n" << std::flush;
      };
      worker = std::make_unique<FleetWorker>(queue, std::move(agents), runtime->context(store), std::move(options));
      worker->start();
      ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
      std::cerr << "agentkit: worker " << worker->name() << " serving agent '" << config.name << "' (scope "
                << args.scope.key() << ") from " << redacted_conninfo(args.store) << "\n"
                << std::flush;
    }
    while (!g_interrupted) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::cerr << "agentkit: worker " << worker->name() << " stopping\n" << std::flush;
    worker->stop();  // a run in progress goes back to the queue, runnable
    queue->interrupt();
    std::cerr << "agentkit: worker " << worker->name() << " stopped after " << worker->claims() << " run(s)\n"
              << std::flush;
    return static_cast<int>(Exit::answered);
  });
}

int submit_command(const SubmitArgs& args) {
  return guarded([&] {
    auto queue = open_queue(args.store);
    const std::string run_id = args.run_id.empty() ? new_run_id() : args.run_id;
    if (!queue->submit(args.scope, run_id, args.agent, args.task)) {
      std::cerr << "agentkit: run " << run_id << " was already submitted; nothing changed\n";
    }
    std::cout << run_id << "\n";
    return static_cast<int>(Exit::answered);
  });
}

int approve_command(const ApproveArgs& args) {
  return guarded([&] {
    auto queue = open_queue(args.store);
    auto store = open_postgres(args.store);
    const auto stored = load_run(*store, args.scope, args.run_id);
    if (!stored) throw Error(ErrorCode::not_found, "no run '" + first_line(args.run_id, 80) + "' in the store");
    // A sub-agent's pending call by its qualified id ("<call>/<its id>"), as resume routes it.
    const std::vector<ToolCall> pending =
        stored->phase == Phase::suspended ? suspension_of(*stored).pending : std::vector<ToolCall>{};
    std::string listed;
    for (const auto& call : pending) listed += "\n  " + call.id + "  " + call_preview(call);
    const bool all = args.call_id == "all";
    const bool known =
        all ? !pending.empty()
            : std::any_of(pending.begin(), pending.end(), [&](const ToolCall& call) { return call.id == args.call_id; });
    if (!known) {
      std::cerr << "agentkit: run " << args.run_id << " has no pending call '" << first_line(args.call_id, 80) << "'"
                << (pending.empty() ? std::string(" (it awaits no decision)") : "; it awaits a decision on:" + listed)
                << "\n";
      return static_cast<int>(Exit::not_pending);
    }
    Decisions decisions;
    for (const auto& call : pending) {
      if (!all && call.id != args.call_id) continue;
      decisions.emplace(call.id, args.reject ? Decision::reject(*args.reject) : Decision::approve());
    }
    // The run resumes only once every pending call has a decision: an
    // approver may decide one call and another the rest.
    std::vector<std::string> awaited;
    for (const auto& call : pending) awaited.push_back(call.id);
    const std::string json = decisions_to_json(decisions);
    auto decided = queue->submit_decisions(args.scope, args.run_id, json, awaited);
    // The checkpoint is suspended but the queue may still have the run
    // leased: its worker died after suspending it and before marking it (or
    // is marking it now). Once that lease ends a worker claims the run and
    // marks it suspended; wait for that, as long as the checkpoint still
    // shows this same suspension (a run resumed meanwhile moved on).
    const auto give_up = std::chrono::steady_clock::now() + args.wait;
    bool told = false;
    while (decided == state::PostgresRunQueue::Decided::not_suspended && std::chrono::steady_clock::now() < give_up) {
      const auto info = queue->info(args.scope, args.run_id);
      if (!info || info->status != state::PostgresRunQueue::Status::leased) break;
      const auto now = load_run(*store, args.scope, args.run_id);
      if (!now || now->phase != Phase::suspended || now->iterations != stored->iterations) break;
      if (!told) {
        std::cerr << "agentkit: run " << args.run_id << " is suspended but still held by worker "
                  << first_line(info->lease_owner, 80) << "; waiting until it is marked suspended (up to "
                  << args.wait.count() << " s)\n";
        told = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      decided = queue->submit_decisions(args.scope, args.run_id, json, awaited);
    }
    if (decided == state::PostgresRunQueue::Decided::not_suspended) {
      std::cerr << "agentkit: run " << args.run_id
                << " is not waiting for decisions in the queue (decided already, running, done, or not submitted)\n";
      return static_cast<int>(Exit::not_pending);
    }
    for (const auto& [id, decision] : decisions) {
      std::cerr << "agentkit: " << (args.reject ? "rejected " : "approved ") << id << " of run " << args.run_id << "\n";
    }
    if (decided == state::PostgresRunQueue::Decided::held) {
      std::cerr << "agentkit: run " << args.run_id << " resumes once every pending call is decided\n";
    }
    return static_cast<int>(Exit::answered);
  });
}

}  // namespace agentkit::cli
