// The stdio transport: a child process in its own process group, three
// CLOEXEC pipes and one I/O thread that polls them. The I/O thread does all
// reading and writing, so send() never blocks on a server that stopped
// reading, and SIGPIPE (blocked on that thread only) never reaches the host.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include <agentkit/providers/mcp.h>
#include <agentkit/detail/logging.h>

#include "mcp_detail.h"

extern char** environ;  // NOLINT: POSIX

namespace agentkit::providers {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kPollTickMs = 50;
constexpr std::size_t kMaxStderrLine = 4096;
constexpr milliseconds kExitStatusWait{100};  // after stdout closes, how long to wait for an exit status
constexpr milliseconds kKillWait{5'000};      // after SIGKILL

bool inherited_by_default(std::string_view name) {
  return name == "PATH" || name == "HOME" || name == "LANG" || name == "TMPDIR" || name.starts_with("LC_");
}

// The child's environment: the allow-list, the host's named extras, then
// the explicit variables (which win).
std::vector<std::string> child_environment(const McpStdioServer& server) {
  std::vector<std::string> out;
  const auto overridden = [&](std::string_view name) {
    return std::any_of(server.env.begin(), server.env.end(), [&](const auto& kv) { return kv.first == name; });
  };
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = entry.substr(0, eq);
    const bool named = std::find(server.inherit_env.begin(), server.inherit_env.end(), name) != server.inherit_env.end();
    if ((inherited_by_default(name) || named) && !overridden(name)) out.emplace_back(entry);
  }
  for (const auto& [name, value] : server.env) out.push_back(name + "=" + value);
  return out;
}

std::string exit_text(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped";
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The three pipe pairs and spawn attributes, released on every path.
struct SpawnSetup {
  int in[2] = {-1, -1};
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;

  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    for (int* fd : {&in[0], &in[1], &out[0], &out[1], &err[0], &err[1]}) close_fd(*fd);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

class StdioTransport final : public McpTransport {
 public:
  StdioTransport(McpStdioServer server, std::shared_ptr<spdlog::logger> logger)
      : server_(std::move(server)), logger_(agentkit::detail::logger_or_null(logger)) {}

  ~StdioTransport() override { close(); }

  void start(Callbacks callbacks) override;
  void send(const Json& message) override;
  void close() override;
  std::string describe() const override { return "stdio server '" + server_.command + "'"; }

 private:
  void spawn();
  void io_loop();
  bool read_from(int& fd, bool is_stdout);
  void on_stdout(std::string_view bytes);
  void on_line(std::string_view line);
  void on_stderr(std::string_view bytes);
  void flush_stdin();
  void report_closed();
  void wake();
  bool try_reap();
  bool wait_exit(milliseconds within);
  void signal_group(int sig);

  McpStdioServer server_;
  std::shared_ptr<spdlog::logger> logger_;
  Callbacks callbacks_;

  std::mutex mutex_;  // guards outbox_ and the stdin flags
  std::string outbox_;
  bool stdin_open_ = false;
  bool close_stdin_ = false;
  std::string stdin_problem_;

  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<bool> closing_{false};
  std::thread io_;

  std::mutex reap_mutex_;  // guards pid_ / status_: a reaped pid is never signalled
  pid_t pid_ = -1;
  std::optional<int> status_;

  // I/O thread only.
  std::string line_;
  bool discarding_ = false;
  std::string err_line_;
  bool closed_reported_ = false;
};

void StdioTransport::start(Callbacks callbacks) {
  if (io_.joinable() || closing_) throw McpError(McpError::Kind::disconnected, describe() + " was already started");
  callbacks_ = std::move(callbacks);
  spawn();
  io_ = std::thread([this] { io_loop(); });
}

void StdioTransport::spawn() {
  if (server_.command.empty()) throw McpError(McpError::Kind::disconnected, "MCP stdio server: the command is empty");
  SpawnSetup s;
  if (pipe2(s.in, O_CLOEXEC) != 0 || pipe2(s.out, O_CLOEXEC) != 0 || pipe2(s.err, O_CLOEXEC) != 0) {
    throw McpError(McpError::Kind::disconnected, "cannot start " + describe() + ": pipe: " + std::strerror(errno));
  }
  // dup2 clears CLOEXEC on the child's 0/1/2; every other descriptor of the
  // host (these pipes included) closes on exec.
  posix_spawn_file_actions_adddup2(&s.actions, s.in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&s.actions, s.out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&s.actions, s.err[1], STDERR_FILENO);
  if (!server_.working_directory.empty()) {
    posix_spawn_file_actions_addchdir_np(&s.actions, server_.working_directory.c_str());
  }
  // Own process group (so shutdown signals reach the server's children and a
  // terminal's ^C does not), an empty signal mask and default dispositions.
  sigset_t empty;
  sigset_t defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2}) sigaddset(&defaults, sig);
  posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&s.attr, 0);
  posix_spawnattr_setsigmask(&s.attr, &empty);
  posix_spawnattr_setsigdefault(&s.attr, &defaults);

  std::vector<std::string> env = child_environment(server_);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args{server_.command};
  args.insert(args.end(), server_.args.begin(), server_.args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, server_.command.c_str(), &s.actions, &s.attr, argv.data(), envp.data());
  if (rc != 0) {
    throw McpError(McpError::Kind::disconnected, "cannot start " + describe() + ": " + std::strerror(rc));
  }
  {
    std::lock_guard lock(reap_mutex_);
    pid_ = pid;
  }
  stdin_fd_ = std::exchange(s.in[1], -1);
  stdout_fd_ = std::exchange(s.out[0], -1);
  stderr_fd_ = std::exchange(s.err[0], -1);
  for (int fd : {stdin_fd_, stdout_fd_, stderr_fd_}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  std::lock_guard lock(mutex_);
  stdin_open_ = true;
}

void StdioTransport::send(const Json& message) {
  std::string line = message.dump(-1, ' ', false, Json::error_handler_t::replace);
  line += '\n';  // dump() never emits a raw newline: one message per line
  {
    std::lock_guard lock(mutex_);
    if (!stdin_open_ || close_stdin_) {
      throw McpError(McpError::Kind::disconnected,
                     describe() + " is not accepting input" + (stdin_problem_.empty() ? "" : ": " + stdin_problem_));
    }
    outbox_ += line;
  }
  wake();
}

void StdioTransport::wake() {
  if (wake_fd_ < 0) return;
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(wake_fd_, &one, sizeof one);
}

void StdioTransport::io_loop() {
  // A write to a dead server raises SIGPIPE on this thread: keep it pending
  // here (it dies with the thread) and see EPIPE instead.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  while (!stop_) {
    pollfd fds[4];
    nfds_t n = 0;
    fds[n++] = {wake_fd_, POLLIN, 0};
    const nfds_t out_at = stdout_fd_ >= 0 ? n : 99;
    if (stdout_fd_ >= 0) fds[n++] = {stdout_fd_, POLLIN, 0};
    const nfds_t err_at = stderr_fd_ >= 0 ? n : 99;
    if (stderr_fd_ >= 0) fds[n++] = {stderr_fd_, POLLIN, 0};
    bool want_write = false;
    {
      std::lock_guard lock(mutex_);
      want_write = stdin_fd_ >= 0 && !outbox_.empty();
    }
    const nfds_t in_at = want_write ? n : 99;
    if (want_write) fds[n++] = {stdin_fd_, POLLOUT, 0};
    if (::poll(fds, n, kPollTickMs) < 0 && errno != EINTR) break;
    if (fds[0].revents) {
      std::uint64_t count;
      [[maybe_unused]] const auto r = ::read(wake_fd_, &count, sizeof count);
    }
    if (out_at != 99 && fds[out_at].revents && !read_from(stdout_fd_, true)) report_closed();
    if (err_at != 99 && fds[err_at].revents) read_from(stderr_fd_, false);
    if (in_at != 99 && fds[in_at].revents) flush_stdin();
    std::lock_guard lock(mutex_);
    if (close_stdin_ && stdin_fd_ >= 0 && outbox_.empty()) {
      close_fd(stdin_fd_);
      stdin_open_ = false;
    }
  }
}

// Reads what is there; false once the stream is at its end (fd closed).
bool StdioTransport::read_from(int& fd, bool is_stdout) {
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      const std::string_view bytes(buffer, static_cast<std::size_t>(got));
      is_stdout ? on_stdout(bytes) : on_stderr(bytes);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    close_fd(fd);
    return false;
  }
}

void StdioTransport::on_stdout(std::string_view bytes) {
  while (!bytes.empty()) {
    const auto newline = bytes.find('\n');
    const std::string_view chunk = bytes.substr(0, newline);
    if (!discarding_ && line_.size() + chunk.size() > mcp_detail::kMaxMessageBytes) {
      logger_->warn("{} wrote a line longer than {} bytes; skipped", describe(), mcp_detail::kMaxMessageBytes);
      discarding_ = true;
      line_.clear();
    }
    if (!discarding_) line_.append(chunk);
    if (newline == std::string_view::npos) return;
    if (!discarding_) on_line(line_);
    line_.clear();
    discarding_ = false;
    bytes.remove_prefix(newline + 1);
  }
}

void StdioTransport::on_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos) return;
  std::string problem;
  auto message = mcp_detail::parse_message(line, problem);
  if (!message) {
    logger_->warn("{} wrote a line that {}; skipped: {}", describe(), problem, mcp_detail::preview_text(line));
    return;
  }
  try {
    callbacks_.message(std::move(*message));
  } catch (const std::exception& e) {
    logger_->error("{}: handling a message failed: {}", describe(), e.what());
  }
}

// stderr is drained as it comes (a full pipe would stall the server) and
// logged line by line at debug level.
void StdioTransport::on_stderr(std::string_view bytes) {
  while (!bytes.empty()) {
    const auto newline = bytes.find('\n');
    const std::string_view chunk = bytes.substr(0, newline);
    if (err_line_.size() < kMaxStderrLine) err_line_.append(chunk.substr(0, kMaxStderrLine - err_line_.size()));
    if (newline == std::string_view::npos) return;
    logger_->debug("{} stderr: {}", describe(), mcp_detail::preview_text(err_line_, 400));
    err_line_.clear();
    bytes.remove_prefix(newline + 1);
  }
}

void StdioTransport::flush_stdin() {
  std::lock_guard lock(mutex_);
  while (!outbox_.empty() && stdin_fd_ >= 0) {
    const ssize_t wrote = ::write(stdin_fd_, outbox_.data(), outbox_.size());
    if (wrote > 0) {
      outbox_.erase(0, static_cast<std::size_t>(wrote));
      continue;
    }
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    stdin_problem_ = std::string("its stdin is closed (") + std::strerror(errno) + ")";
    outbox_.clear();
    close_fd(stdin_fd_);
    stdin_open_ = false;
  }
}

// stdout is the protocol channel: once it ends, the connection is over.
void StdioTransport::report_closed() {
  if (closed_reported_) return;
  closed_reported_ = true;
  const auto deadline = Clock::now() + kExitStatusWait;
  while (!try_reap() && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(2));
  std::string reason = "closed its stdout";
  {
    std::lock_guard lock(reap_mutex_);
    if (status_) reason = exit_text(*status_);
  }
  {
    std::lock_guard lock(mutex_);
    stdin_open_ = false;
    if (stdin_problem_.empty()) stdin_problem_ = "the server " + reason;
  }
  if (callbacks_.closed) callbacks_.closed("the server " + reason);
}

bool StdioTransport::try_reap() {
  std::lock_guard lock(reap_mutex_);
  if (pid_ <= 0) return true;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    if (r == pid_) status_ = status;
    pid_ = -1;
    return true;
  }
  return false;
}

bool StdioTransport::wait_exit(milliseconds within) {
  const auto deadline = Clock::now() + within;
  for (;;) {
    if (try_reap()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
}

void StdioTransport::signal_group(int sig) {
  std::lock_guard lock(reap_mutex_);
  if (pid_ <= 0) return;
  if (::kill(-pid_, sig) != 0) ::kill(pid_, sig);
}

// close stdin -> wait -> SIGTERM -> wait -> SIGKILL -> reap.
void StdioTransport::close() {
  if (closing_.exchange(true)) return;
  if (!io_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    close_stdin_ = true;
  }
  wake();
  if (!wait_exit(server_.shutdown_grace)) {
    logger_->debug("{} is still running after stdin closed; sending SIGTERM", describe());
    signal_group(SIGTERM);
    if (!wait_exit(server_.shutdown_grace)) {
      logger_->warn("{} ignored SIGTERM; sending SIGKILL", describe());
      signal_group(SIGKILL);
      wait_exit(kKillWait);
    }
  }
  stop_ = true;
  wake();
  io_.join();
  std::lock_guard lock(mutex_);
  for (int* fd : {&stdin_fd_, &stdout_fd_, &stderr_fd_, &wake_fd_}) close_fd(*fd);
  stdin_open_ = false;
}

}  // namespace

std::unique_ptr<McpTransport> make_stdio_transport(McpStdioServer server, std::shared_ptr<spdlog::logger> logger) {
  return std::make_unique<StdioTransport>(std::move(server), std::move(logger));
}

}  // namespace agentkit::providers
