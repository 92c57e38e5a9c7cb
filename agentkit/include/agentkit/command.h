#pragma once
// Running programs in a workspace: an allowlist of programs, argument arrays
// (no shell unless enabled), a timeout, capped output, a scrubbed
// environment, and optional isolation through bubblewrap (spec 003's
// CommandRunner / BubblewrapSandbox).
//
// A command runs as a child in its own process group, with stdin from
// /dev/null, the environment exactly CommandOptions::env (nothing of the
// host's: no API keys), and its working directory inside the workspace
// (opened without following links). On timeout or cancellation the whole
// process group is killed with SIGKILL and the child is reaped; a run never
// blocks past its timeout plus a short drain, and leaves no zombie.
//
// Isolation::bubblewrap runs the program under bwrap: the host's / mounted
// read-only, the workspace root bind-mounted writable, a private /tmp, fresh
// /dev and /proc, new network (loopback only, so no network), PID and IPC
// namespaces, and --die-with-parent. It is NOT a full sandbox: no seccomp
// filter, no resource limits beyond the timeout and output caps, the same
// uid, and everything the host can read stays readable. See the README.
//
// Example:
//   auto ws = std::make_shared<agentkit::Workspace>(agentkit::WorkspaceOptions{.root = "/srv/project"});
//   agentkit::CommandOptions options;
//   options.programs = {"make", "git"};
//   options.timeout = std::chrono::seconds(60);
//   agentkit::ToolPtr run = agentkit::command_tool(ws, options);
//   // the model calls {"program": "make", "args": ["test"], "cwd": "build"}
//   // and sees {"exit_code": 0, "stdout": "...", "stderr": "", ...}
#include <agentkit/workspace.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace agentkit {

enum class Isolation {
  none,        // a plain child process: confinement is only the working directory
  bubblewrap,  // under bwrap; construction throws OptionsError when bwrap cannot run here
  automatic,   // bubblewrap when it runs on this machine, none otherwise
};

std::string_view to_string(Isolation isolation) noexcept;

struct CommandOptions {
  // The allowlist: program names (looked up in env's PATH at construction) or
  // absolute paths. The model names a program as written here.
  std::vector<std::string> programs;
  // Also accept {"shell": "..."} run by /bin/sh -c. Off: with it the
  // allowlist no longer limits what runs.
  bool allow_shell = false;
  // The whole environment of a command. Nothing is inherited from the host.
  std::map<std::string, std::string> env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"LANG", "C.UTF-8"}};
  std::chrono::milliseconds timeout{30000};
  std::size_t max_output_bytes = 64u << 10;  // each of stdout and stderr; the rest is read and dropped
  Isolation isolation = Isolation::automatic;
  // Every call waits for a human decision (Effects::requires_approval).
  bool requires_approval = true;
  std::string tool_name = "run_command";

  // {"programs": [...], "allow_shell": false, "env": {...}, "timeout_ms": 30000,
  // "max_output_bytes": 65536, "isolation": "none" | "bubblewrap" | "automatic",
  // "requires_approval": true, "tool_name": "run_command"}. from_json takes any
  // subset and throws OptionsError for an unknown key, a wrong type or an
  // unknown isolation.
  Json to_json() const;
  static CommandOptions from_json(const Json& j);
  friend bool operator==(const CommandOptions&, const CommandOptions&) = default;
};

// What one command did. `exit_code` is the program's status, or -1 when it
// was killed (by `signal`, by the timeout, or by cancellation).
struct CommandResult {
  int exit_code = -1;
  int signal = 0;
  bool timed_out = false;
  bool cancelled = false;
  std::string stdout_text;
  std::string stderr_text;
  std::size_t stdout_bytes = 0;  // produced, including what the cap dropped
  std::size_t stderr_bytes = 0;

  // {"exit_code", "stdout", "stderr"} plus "timed_out"/"cancelled"/"signal"
  // when set; a capped stream ends with a "[... truncated: N bytes in all]" note.
  Json to_json() const;
};

// Runs allowlisted programs in a workspace. Thread-safe; each run is its own
// child process.
class CommandRunner {
 public:
  // Throws OptionsError when a program is not found or not executable, a cap
  // or the timeout is 0, or Isolation::bubblewrap is asked for and bwrap
  // cannot run; agentkit::Error (invalid_argument) if `ws` is null.
  CommandRunner(std::shared_ptr<const Workspace> ws, CommandOptions options);

  // Runs `program` (a name from the allowlist; "/bin/sh" is reserved for
  // run_shell) with `args` in the workspace directory `cwd`. Polls `stop`
  // (when given) and kills the command once it returns true. Throws
  // WorkspaceError for a program outside the allowlist or a bad `cwd`;
  // std::system_error when the child cannot be started.
  CommandResult run(const std::string& program, const std::vector<std::string>& args, const std::string& cwd = "",
                    const std::function<bool()>& stop = {}) const;
  // `/bin/sh -c script`; throws WorkspaceError unless allow_shell.
  CommandResult run_shell(const std::string& script, const std::string& cwd = "",
                          const std::function<bool()>& stop = {}) const;

  // The isolation in force (never automatic).
  Isolation isolation() const noexcept { return isolation_; }
  const CommandOptions& options() const noexcept { return options_; }
  // The allowlist resolved: name -> absolute path.
  const std::map<std::string, std::string>& programs() const noexcept { return programs_; }

 private:
  CommandResult spawn(const std::string& path, const std::vector<std::string>& args, const std::string& cwd,
                      const std::function<bool()>& stop) const;

  std::shared_ptr<const Workspace> ws_;
  CommandOptions options_;
  Isolation isolation_ = Isolation::none;
  std::string bwrap_;
  std::map<std::string, std::string> programs_;
};

// True when bwrap is installed and can create its namespaces here (a probe
// run, cached after the first call).
bool bubblewrap_available();

// The command tool: {"program": name, "args"?: [..], "cwd"?: dir} (and
// {"shell": "..."} instead of program/args when allow_shell), returning
// CommandResult::to_json(). Side-effecting, not idempotent, and
// requires_approval unless the options opt out. The run's cancellation
// (ctx.cancelled()) kills the command.
ToolPtr command_tool(std::shared_ptr<const Workspace> ws, CommandOptions options);

}  // namespace agentkit
