// CommandRunner: allowlisted programs as children of their own session,
// optionally under bubblewrap.
//
// The child is forked, not spawned through a shell: between fork and execve
// it only calls async-signal-safe functions (setsid, dup2, fchdir, execve),
// since the host is multi-threaded. Its exit is observed with
// waitid(WNOWAIT) so the process group is killed while the child's pid still
// pins the group id (no recycled pid can be hit), and only then reaped.
#include <agentkit/command.h>
#include <agentkit/context.h>
#include <agentkit/detail/confined_fs.h>
#include <agentkit/function_tool.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace agentkit {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kDrain = std::chrono::milliseconds(500);  // reading left-over output after the child is gone

using Fd = detail::UniqueFd;

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// `name` resolved against `search_path`, or "".
std::string resolve(const std::string& name, const std::string& search_path) {
  if (name.find('/') != std::string::npos) return name.front() == '/' && executable_file(name) ? name : "";
  std::string_view rest = search_path;
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    if (dir.empty() || dir.front() != '/') continue;
    if (const std::string candidate = dir + "/" + name; executable_file(candidate)) return candidate;
  }
  return "";
}

// A started child. Unless reaped, destruction kills its group and reaps it:
// a throw mid-run leaves neither a running command nor a zombie.
struct Child {
  pid_t pid = -1;
  Fd out, err;

  Child() = default;
  Child(Child&& other) noexcept
      : pid(std::exchange(other.pid, -1)), out(std::move(other.out)), err(std::move(other.err)) {}
  ~Child() {
    if (pid > 0) {
      ::kill(-pid, SIGKILL);
      reap();
    }
  }
  // Waits for the child to end: its wait status.
  int reap() noexcept {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    pid = -1;
    return status;
  }
};

// Forks `argv` with `envp` in `cwd_fd`, stdin /dev/null, in a new session.
Child start(const std::vector<std::string>& argv, const std::vector<std::string>& env, int cwd_fd) {
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "command: pipe");
  Child child;
  child.out = Fd(out[0]);
  Fd out_w(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "command: pipe");
  child.err = Fd(err[0]);
  Fd err_w(err[1]);
  Fd null_in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  sigset_t no_signals;
  ::sigemptyset(&no_signals);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  if (null_in.get() < 0) throw std::system_error(errno, std::generic_category(), "command: /dev/null");
  child.pid = ::fork();
  if (child.pid < 0) throw std::system_error(errno, std::generic_category(), "command: fork");
  if (child.pid == 0) {
    ::sigprocmask(SIG_SETMASK, &no_signals, nullptr);  // the host's mask and ignored SIGPIPE are not inherited
    ::sigaction(SIGPIPE, &default_action, nullptr);
    ::setsid();  // a new session and process group: killable as one, no controlling terminal
    if (::dup2(null_in.get(), 0) < 0 || ::dup2(out_w.get(), 1) < 0 || ::dup2(err_w.get(), 2) < 0 ||
        ::fchdir(cwd_fd) != 0) {
      ::_exit(126);
    }
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);  // nothing of the host's leaks, CLOEXEC or not
    ::execve(args[0], args.data(), envp.data());
    static const char msg[] = "command: execve failed\n";
    [[maybe_unused]] auto ignored = ::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  return child;
}

// Appends what `fd` has to `kept` up to `cap`; false at end of file.
bool pump(int fd, std::string& kept, std::size_t& total, std::size_t cap) {
  char buf[16384];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  total += static_cast<std::size_t>(n);
  if (kept.size() < cap) kept.append(buf, std::min<std::size_t>(static_cast<std::size_t>(n), cap - kept.size()));
  return true;
}

std::string with_note(const std::string& text, std::size_t total, const char* stream) {
  std::string out = sanitize_utf8(text);
  if (total > text.size()) {
    out += "\n[" + std::string(stream) + " truncated: " + std::to_string(total) + " bytes in all, the first " +
           std::to_string(text.size()) + " shown]";
  }
  return out;
}

}  // namespace

std::string_view to_string(Isolation isolation) noexcept {
  switch (isolation) {
    case Isolation::none: return "none";
    case Isolation::bubblewrap: return "bubblewrap";
    case Isolation::automatic: return "automatic";
  }
  return "none";
}

bool bubblewrap_available() {
  static const bool available = [] {
    const std::string bwrap = resolve("bwrap", "/usr/bin:/bin:/usr/local/bin");
    if (bwrap.empty()) return false;
    Fd root(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    try {
      Child child = start({bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net",
                           "--unshare-pid", "--die-with-parent", "/bin/true"},
                          {}, root.get());
      const int status = child.reap();
      return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    } catch (const std::system_error&) {
      return false;
    }
  }();
  return available;
}

Json CommandResult::to_json() const {
  Json j{{"exit_code", exit_code},
         {"stdout", with_note(stdout_text, stdout_bytes, "stdout")},
         {"stderr", with_note(stderr_text, stderr_bytes, "stderr")}};
  if (signal != 0) j["signal"] = signal;
  if (timed_out) j["timed_out"] = true;
  if (cancelled) j["cancelled"] = true;
  return j;
}

CommandRunner::CommandRunner(std::shared_ptr<const Workspace> ws, CommandOptions options)
    : ws_(std::move(ws)), options_(std::move(options)) {
  if (!ws_) throw Error(ErrorCode::invalid_argument, "CommandRunner: the workspace is null");
  if (options_.timeout.count() <= 0) throw OptionsError("timeout_ms", "must be greater than 0");
  if (options_.max_output_bytes == 0) throw OptionsError("max_output_bytes", "must be greater than 0");
  const auto path = options_.env.find("PATH");
  const std::string search_path = path == options_.env.end() ? "/usr/local/bin:/usr/bin:/bin" : path->second;
  for (const auto& name : options_.programs) {
    const std::string found = resolve(name, search_path);
    if (found.empty()) throw OptionsError("programs", "names '" + name + "', which is not an executable file here");
    programs_[name] = found;
  }
  isolation_ = options_.isolation;
  if (isolation_ != Isolation::none) {
    const bool usable = bubblewrap_available();
    if (isolation_ == Isolation::bubblewrap && !usable) {
      throw OptionsError("isolation", "is bubblewrap, but bwrap is not installed or cannot create namespaces here");
    }
    isolation_ = usable ? Isolation::bubblewrap : Isolation::none;
    if (usable) bwrap_ = resolve("bwrap", "/usr/bin:/bin:/usr/local/bin");
  }
}

CommandResult CommandRunner::run(const std::string& program, const std::vector<std::string>& args,
                                 const std::string& cwd, const std::function<bool()>& stop) const {
  const auto it = programs_.find(program);
  if (it == programs_.end()) {
    std::vector<std::string> names;
    for (const auto& [name, path] : programs_) names.push_back(name);
    throw WorkspaceError("The program '" + program + "' is not allowed; allowed: " + quoted_list(names), "program");
  }
  std::vector<std::string> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  return spawn(it->second, argv, cwd, stop);
}

CommandResult CommandRunner::run_shell(const std::string& script, const std::string& cwd,
                                       const std::function<bool()>& stop) const {
  if (!options_.allow_shell) throw WorkspaceError("Shell commands are not enabled; name a program instead", "shell");
  return spawn("/bin/sh", {"sh", "-c", script}, cwd, stop);
}

CommandResult CommandRunner::spawn(const std::string& path, const std::vector<std::string>& argv,
                                   const std::string& cwd, const std::function<bool()>& stop) const {
  for (const auto& a : argv) {
    if (a.find('\0') != std::string::npos) throw WorkspaceError("An argument contains a NUL byte", "args");
  }
  Fd cwd_fd(ws_->open_directory(cwd));  // refuses links, "..", absolute paths
  std::vector<std::string> command;
  if (isolation_ == Isolation::bubblewrap) {
    const std::string root = ws_->root().string();
    const std::string dir = (ws_->root() / cwd).lexically_normal().string();
    command = {bwrap_,          "--ro-bind",       "/",           "/",          "--dev",          "/dev",
               "--proc",        "/proc",           "--tmpfs",     "/tmp",       "--bind",         root,
               root,            "--unshare-net",   "--unshare-pid", "--unshare-ipc", "--die-with-parent",
               "--chdir",       dir,               "--"};
  }
  command.push_back(path);
  command.insert(command.end(), argv.begin() + 1, argv.end());
  std::vector<std::string> env;
  for (const auto& [key, value] : options_.env) env.push_back(key + "=" + value);

  Child child = start(command, env, cwd_fd.get());
  CommandResult result;
  const auto deadline = Clock::now() + options_.timeout;
  std::optional<Clock::time_point> drain_until;
  bool exited = false, killed = false;
  const auto kill_group = [&] { ::kill(-child.pid, SIGKILL); };
  for (;;) {
    pollfd fds[2];
    nfds_t n = 0;
    if (child.out.get() >= 0) fds[n++] = {child.out.get(), POLLIN, 0};
    if (child.err.get() >= 0) fds[n++] = {child.err.get(), POLLIN, 0};
    if (exited && (n == 0 || (drain_until && Clock::now() >= *drain_until))) break;
    ::poll(fds, n, 20);
    for (nfds_t i = 0; i < n; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const bool is_out = fds[i].fd == child.out.get();
      const bool open = is_out ? pump(fds[i].fd, result.stdout_text, result.stdout_bytes, options_.max_output_bytes)
                               : pump(fds[i].fd, result.stderr_text, result.stderr_bytes, options_.max_output_bytes);
      if (!open) (is_out ? child.out : child.err).reset();
    }
    if (!exited) {
      siginfo_t info{};
      if (::waitid(P_PID, static_cast<id_t>(child.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0) {
        exited = true;
        kill_group();  // stragglers it left in its group; the pid still pins the group id
        drain_until = Clock::now() + kDrain;
        continue;
      }
      if (!killed && Clock::now() >= deadline) {
        result.timed_out = killed = true;
        kill_group();
      } else if (!killed && stop && stop()) {
        result.cancelled = killed = true;
        kill_group();
      }
    }
  }
  const int status = child.reap();
  if (WIFEXITED(status) && !killed) result.exit_code = WEXITSTATUS(status);  // killed: -1 whatever bwrap says
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

// ---- options as data and the tool ------------------------------------------------

namespace {

template <class T>
T typed(const Json& value, const std::string& key, bool (Json::*is)() const noexcept, const char* type) {
  if (!(value.*is)()) throw OptionsError(key, std::string("must be ") + type + ", not " + std::string(json_type_name(value)));
  return value.get<T>();
}

}  // namespace

Json CommandOptions::to_json() const {
  return Json{{"programs", programs},
              {"allow_shell", allow_shell},
              {"env", env},
              {"timeout_ms", timeout.count()},
              {"max_output_bytes", max_output_bytes},
              {"isolation", std::string(to_string(isolation))},
              {"requires_approval", requires_approval},
              {"tool_name", tool_name}};
}

CommandOptions CommandOptions::from_json(const Json& j) {
  if (!j.is_object()) throw OptionsError("command", "must be an object, not " + std::string(json_type_name(j)));
  CommandOptions o;
  for (const auto& [key, value] : j.items()) {
    if (key == "programs") {
      if (!value.is_array()) throw OptionsError(key, "must be an array of strings");
      o.programs.clear();
      for (const auto& p : value) o.programs.push_back(typed<std::string>(p, key, &Json::is_string, "strings"));
    } else if (key == "allow_shell") {
      o.allow_shell = typed<bool>(value, key, &Json::is_boolean, "a boolean");
    } else if (key == "env") {
      if (!value.is_object()) throw OptionsError(key, "must be an object of strings");
      o.env.clear();
      for (const auto& [name, v] : value.items()) o.env[name] = typed<std::string>(v, key + "." + name, &Json::is_string, "a string");
    } else if (key == "timeout_ms") {
      o.timeout = std::chrono::milliseconds(typed<std::int64_t>(value, key, &Json::is_number_integer, "an integer"));
    } else if (key == "max_output_bytes") {
      const auto bytes = typed<std::int64_t>(value, key, &Json::is_number_integer, "a non-negative integer");
      if (bytes < 0) throw OptionsError(key, "must be a non-negative integer, not " + std::to_string(bytes));
      o.max_output_bytes = static_cast<std::size_t>(bytes);
    } else if (key == "isolation") {
      const auto name = typed<std::string>(value, key, &Json::is_string, "a string");
      const Isolation all[] = {Isolation::none, Isolation::bubblewrap, Isolation::automatic};
      const auto* found = std::find_if(std::begin(all), std::end(all), [&](Isolation i) { return to_string(i) == name; });
      if (found == std::end(all)) throw OptionsError(key, "must be 'none', 'bubblewrap' or 'automatic', not '" + name + "'");
      o.isolation = *found;
    } else if (key == "requires_approval") {
      o.requires_approval = typed<bool>(value, key, &Json::is_boolean, "a boolean");
    } else if (key == "tool_name") {
      o.tool_name = typed<std::string>(value, key, &Json::is_string, "a string");
    } else {
      throw OptionsError(key, "is not a command option");
    }
  }
  return o;
}

ToolPtr command_tool(std::shared_ptr<const Workspace> ws, CommandOptions options) {
  // Its data description (<agentkit/tool_data.h>): the command entry.
  Json meta = options.to_json();
  if (ws) meta["root"] = ws->options().root.string();
  meta = Json{{"command", std::move(meta)}};
  auto runner = std::make_shared<const CommandRunner>(std::move(ws), options);
  std::vector<std::string> names;
  for (const auto& [name, path] : runner->programs()) names.push_back(name);
  const std::string doc = "Run a program in the workspace and get its exit code, stdout and stderr. Allowed programs: " +
                          quoted_list(names) + ". Arguments are an array, not a shell line. Times out after " +
                          std::to_string(options.timeout.count()) + " ms.";
  const auto stop_of = [](RunContext& ctx) { return [&ctx] { return ctx.cancelled(); }; };
  if (options.allow_shell) {
    return tool(options.tool_name)
        .metadata(meta)
        .doc(doc + " Alternatively pass `shell`, a /bin/sh command line, instead of program and args.")
        .side_effecting(true)
        .requires_approval(options.requires_approval)
        .params(opt("program", std::string()), opt("args", std::vector<std::string>{}), opt("cwd", std::string()),
                opt("shell", std::string()))
        .fn([runner, stop_of](RunContext& ctx, const std::string& program, const std::vector<std::string>& args,
                              const std::string& cwd, const std::string& shell) {
          if (shell.empty() == program.empty()) throw WorkspaceError("Pass either program (with args) or shell", "program");
          return (shell.empty() ? runner->run(program, args, cwd, stop_of(ctx)) : runner->run_shell(shell, cwd, stop_of(ctx)))
              .to_json();
        });
  }
  return tool(options.tool_name)
      .metadata(meta)
      .doc(doc)
      .side_effecting(true)
      .requires_approval(options.requires_approval)
      .params(param("program", "one of the allowed program names"),
              opt("args", std::vector<std::string>{}, "arguments, one per element"),
              opt("cwd", std::string(), "working directory relative to the workspace root"))
      .fn([runner, stop_of](RunContext& ctx, const std::string& program, const std::vector<std::string>& args,
                            const std::string& cwd) { return runner->run(program, args, cwd, stop_of(ctx)).to_json(); });
}

}  // namespace agentkit
