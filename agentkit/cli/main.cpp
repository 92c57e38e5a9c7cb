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

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "commands.h"
#include "terminal.h"

namespace {

using namespace agentkit::cli;

constexpr std::string_view kHelp = R"(agentkit: run agents defined in YAML.

Usage:
  agentkit run AGENT.yaml "task" [--json] [--store PATH] [--session ID] [--yes]
  agentkit resume RUN_ID [AGENT.yaml] [--approve all|ID]... [--reject ID[:reason]]...
                  [--json] [--store PATH] [--yes]
  agentkit validate AGENT.yaml
  agentkit --help | --version

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

Options:
  --json            One JSON object per line on stdout for every event, then
                    {"type":"result",...}; nothing else goes to stdout.
  --store PATH      The state database (default $AGENTKIT_HOME/state.db,
                    else ~/.agentkit/state.db).
  --session ID      Continue this conversation (overrides `session:`).
  --yes             Approve every call that asks for approval.
  --approve all|ID  Approve all pending calls, or one by id (repeatable).
  --reject ID[:why] Reject a pending call, with an optional reason for the model.

Exit codes:
  0  answered          3  suspended (awaiting approval)   6  cancelled (Ctrl-C)
  1  failed            4  max_iterations reached
  2  usage, configuration or setup error                  5  budget exhausted

Definition (the README lists every field):
  name: support
  model: openai/gpt-4o-mini          # anthropic/<m>; base_url: for compatible servers
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
info, warn (default), error, off).
)";

// A bad command line: the message, then a pointer to the help.
int usage_error(const std::string& message) {
  std::cerr << "agentkit: " << message << "\nRun 'agentkit --help' for usage.\n";
  return static_cast<int>(Exit::usage);
}

// A command's arguments: positionals, flags, and options with values (each
// value of a repeatable option kept in order).
struct Parsed {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> options;
  bool flag(const std::string& name) const { return options.contains(name); }
  std::optional<std::string> value(const std::string& name) const {
    auto it = options.find(name);
    if (it == options.end() || it->second.empty()) return std::nullopt;
    return it->second.back();
  }
};

// Parses `args` against the flags and valued options a command accepts;
// "--name=value" and "--name value" both work, "--" ends options.
std::optional<Parsed> parse(const std::vector<std::string>& args, const std::vector<std::string>& flags,
                            const std::vector<std::string>& valued, const std::string& command, std::string& error) {
  Parsed parsed;
  auto known = [](const std::vector<std::string>& list, const std::string& name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      parsed.positional.insert(parsed.positional.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      parsed.positional.push_back(arg);
      continue;
    }
    std::string name = arg;
    std::optional<std::string> value;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    if (known(flags, name) && !value) {
      parsed.options[name];
    } else if (known(valued, name)) {
      if (!value) {
        if (i + 1 == args.size()) {
          error = "option " + name + " needs a value";
          return std::nullopt;
        }
        value = args[++i];
      }
      parsed.options[name].push_back(*value);
    } else {
      error = "unknown option '" + arg + "' for '" + command + "'";
      return std::nullopt;
    }
  }
  return parsed;
}

OutputOptions output_options(const Parsed& parsed) {
  OutputOptions output;
  output.json = parsed.flag("--json");
  output.yes = parsed.flag("--yes");
  if (auto store = parsed.value("--store")) output.store = *store;
  return output;
}

int run(const std::vector<std::string>& args) {
  std::string error;
  const auto parsed = parse(args, {"--json", "--yes"}, {"--store", "--session"}, "run", error);
  if (!parsed) return usage_error(error);
  if (parsed->positional.size() != 2) return usage_error("run needs AGENT.yaml and a task");
  RunArgs run_args;
  run_args.agent_file = parsed->positional[0];
  run_args.task = parsed->positional[1];
  if (run_args.task.empty()) return usage_error("the task is empty");
  run_args.session = parsed->value("--session").value_or("");
  run_args.output = output_options(*parsed);
  return run_command(run_args);
}

int resume(const std::vector<std::string>& args) {
  std::string error;
  const auto parsed = parse(args, {"--json", "--yes"}, {"--store", "--approve", "--reject"}, "resume", error);
  if (!parsed) return usage_error(error);
  if (parsed->positional.empty() || parsed->positional.size() > 2)
    return usage_error("resume needs RUN_ID [AGENT.yaml]");
  ResumeArgs resume_args;
  resume_args.run_id = parsed->positional[0];
  if (parsed->positional.size() == 2) resume_args.agent_file = parsed->positional[1];
  if (auto it = parsed->options.find("--approve"); it != parsed->options.end()) {
    for (const auto& id : it->second) {
      if (id == "all") {
        resume_args.approve_all = true;
      } else {
        resume_args.approve.push_back(id);
      }
    }
  }
  if (auto it = parsed->options.find("--reject"); it != parsed->options.end()) {
    for (const auto& spec : it->second) {
      const auto colon = spec.find(':');
      resume_args.reject.emplace_back(spec.substr(0, colon), colon == std::string::npos ? "" : spec.substr(colon + 1));
    }
  }
  resume_args.output = output_options(*parsed);
  return resume_command(resume_args);
}

int validate(const std::vector<std::string>& args) {
  std::string error;
  const auto parsed = parse(args, {}, {}, "validate", error);
  if (!parsed) return usage_error(error);
  if (parsed->positional.size() != 1) return usage_error("validate needs AGENT.yaml");
  return validate_command(parsed->positional[0]);
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
  const std::vector<std::string> all(argv + 1, argv + argc);
  if (all.empty()) return usage_error("no command given");
  const std::string& command = all.front();
  const std::vector<std::string> args(all.begin() + 1, all.end());
  const bool help = std::find(args.begin(), args.end(), "--help") != args.end() ||
                    std::find(args.begin(), args.end(), "-h") != args.end();
  if (command == "--help" || command == "-h" || command == "help" || help) {
    std::cout << kHelp;
    return 0;
  }
  if (command == "--version") {
    std::cout << "agentkit " << AGENTKIT_VERSION << "\n";
    return 0;
  }
  if (auto error = configure_logging()) {
    std::cerr << "agentkit: " << *error << "\n";
    return static_cast<int>(Exit::usage);
  }
  install_interrupt_handler();
  if (command == "run") return run(args);
  if (command == "resume") return resume(args);
  if (command == "validate") return validate(args);
  return usage_error("unknown command '" + command + "'");
}
