// The command tool: allowlist, argument arrays, scrubbed environment,
// timeout and cancellation (the whole group killed, nothing left behind),
// output caps, working directory, approval, options as data, and the
// bubblewrap backend (spec 003).
#include <catch2/catch.hpp>

#include <agentkit/command.h>
#include <agentkit/testing/test_context.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <atomic>

namespace fs = std::filesystem;
using agentkit::CommandOptions;
using agentkit::CommandRunner;
using agentkit::Isolation;
using agentkit::Json;
using agentkit::Workspace;
using agentkit::WorkspaceOptions;
using Clock = std::chrono::steady_clock;

namespace {

struct TempDir {
  fs::path path;
  explicit TempDir(const fs::path& under = fs::temp_directory_path()) {
    std::string tmpl = (under / "ak-cmd-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::shared_ptr<Workspace> workspace(const fs::path& root) {
  fs::create_directories(root / "sub");
  return std::make_shared<Workspace>(WorkspaceOptions{.root = root});
}

CommandOptions plain(std::vector<std::string> programs) {
  CommandOptions o;
  o.programs = std::move(programs);
  o.isolation = Isolation::none;
  return o;
}

// True when `pid` is gone (or a zombie that is not ours to reap).
bool gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && (line[close + 2] == 'Z' || line[close + 2] == 'X');
}

void put_marker(const fs::path& p) { std::ofstream(p) << "here"; }

bool no_children() {
  int status = 0;
  return ::waitpid(-1, &status, WNOHANG) == -1 && errno == ECHILD;
}

// A TCP listener on 127.0.0.1, port chosen by the kernel.
struct Listener {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int port = 0;
  Listener() {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd, 8) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  ~Listener() { ::close(fd); }
};

}  // namespace

TEST_CASE("command runs allowlisted programs with argument arrays, no shell", "[command]") {
  TempDir tmp;
  CommandRunner runner(workspace(tmp.path), plain({"echo", "false"}));
  const auto r = runner.run("echo", {"$HOME; rm -rf *", "`id`"});
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_text == "$HOME; rm -rf * `id`\n");
  CHECK(runner.run("false", {}).exit_code == 1);
  CHECK(runner.programs().at("echo").front() == '/');
  CHECK_THROWS_WITH(runner.run("rm", {"-rf", "/"}), Catch::Contains("not allowed"));
  CHECK_THROWS_WITH(runner.run("/bin/echo", {}), Catch::Contains("not allowed"));
  CHECK_THROWS_WITH(runner.run_shell("echo hi"), Catch::Contains("not enabled"));
  CHECK_THROWS_AS(CommandRunner(workspace(tmp.path), plain({"no-such-program-xyz"})), agentkit::OptionsError);
  CHECK(no_children());
}

TEST_CASE("command environment is only what the options list", "[command]") {
  TempDir tmp;
  ::setenv("OPENAI_API_KEY", "sk-host-secret", 1);
  auto options = plain({"env"});
  options.env["GREETING"] = "hi";
  CommandRunner runner(workspace(tmp.path), options);
  const auto r = runner.run("env", {});
  ::unsetenv("OPENAI_API_KEY");
  CHECK(r.stdout_text.find("sk-host-secret") == std::string::npos);
  CHECK(r.stdout_text.find("GREETING=hi\n") != std::string::npos);
  CHECK(r.stdout_text.find("PATH=/usr/local/bin:/usr/bin:/bin\n") != std::string::npos);
  CHECK(r.stdout_text.find("HOME=") == std::string::npos);
}

TEST_CASE("command working directory is confined to the workspace", "[command]") {
  TempDir tmp;
  auto ws = workspace(tmp.path / "ws");
  fs::create_directories(tmp.path / "outside");
  fs::create_symlink("../outside", tmp.path / "ws" / "out");
  CommandRunner runner(ws, plain({"pwd"}));
  CHECK(runner.run("pwd", {}, "sub").stdout_text == (ws->root() / "sub").string() + "\n");
  CHECK(runner.run("pwd", {}).stdout_text == ws->root().string() + "\n");
  CHECK_THROWS_AS(runner.run("pwd", {}, "out"), agentkit::WorkspaceError);
  CHECK_THROWS_AS(runner.run("pwd", {}, ".."), agentkit::WorkspaceError);
  CHECK_THROWS_AS(runner.run("pwd", {}, "/tmp"), agentkit::WorkspaceError);
}

TEST_CASE("command timeout kills the whole process group and reports it", "[command]") {
  TempDir tmp;
  auto options = plain({"sh"});
  options.timeout = std::chrono::milliseconds(300);
  CommandRunner runner(workspace(tmp.path), options);
  const auto start = Clock::now();
  // A grandchild in the background, and the child waiting on it.
  const auto r = runner.run("sh", {"-c", "sleep 30 & echo $!; wait"});
  CHECK(Clock::now() - start < std::chrono::seconds(3));
  CHECK(r.timed_out);
  CHECK(r.exit_code == -1);
  CHECK(r.to_json().value("timed_out", false));
  const pid_t grandchild = std::atoi(r.stdout_text.c_str());
  REQUIRE(grandchild > 0);
  for (int i = 0; i < 100 && !gone(grandchild); ++i) ::usleep(10000);
  CHECK(gone(grandchild));
  CHECK(no_children());
}

TEST_CASE("command cancellation kills the child", "[command]") {
  TempDir tmp;
  CommandRunner runner(workspace(tmp.path), plain({"sleep"}));
  const auto start = Clock::now();
  const auto r = runner.run("sleep", {"30"}, "", [&] { return Clock::now() - start > std::chrono::milliseconds(200); });
  CHECK(r.cancelled);
  CHECK_FALSE(r.timed_out);
  CHECK(Clock::now() - start < std::chrono::seconds(3));
  CHECK(no_children());

  // Through the tool: the run's cancellation.
  auto ctx = agentkit::testing::make_test_ctx();
  auto tool = agentkit::command_tool(workspace(tmp.path), plain({"sleep"}));
  ctx.cancellation.cancel();
  const Json out = tool->run(Json{{"program", "sleep"}, {"args", {"30"}}}, ctx);
  CHECK(out.value("cancelled", false));
}

TEST_CASE("command output is capped per stream with a note, never held whole", "[command]") {
  TempDir tmp;
  auto options = plain({"head", "sh"});
  options.max_output_bytes = 1000;
  CommandRunner runner(workspace(tmp.path), options);
  const auto r = runner.run("head", {"-c", "3000000", "/dev/zero"});
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_bytes == 3000000);
  CHECK(r.stdout_text.size() == 1000);
  const std::string shown = r.to_json()["stdout"].get<std::string>();
  CHECK(shown.find("[stdout truncated: 3000000 bytes in all, the first 1000 shown]") != std::string::npos);
  const auto e = runner.run("sh", {"-c", "echo oops >&2; exit 3"});
  CHECK(e.exit_code == 3);
  CHECK(e.stderr_text == "oops\n");
}

TEST_CASE("command tool requires approval by default and is side-effecting", "[command]") {
  TempDir tmp;
  auto ws = workspace(tmp.path);
  auto tool = agentkit::command_tool(ws, plain({"echo"}));
  CHECK(tool->side_effecting());
  CHECK(tool->requires_approval());
  CHECK_FALSE(tool->idempotent());
  auto options = plain({"echo"});
  options.requires_approval = false;
  CHECK_FALSE(agentkit::command_tool(ws, options)->requires_approval());
  auto ctx = agentkit::testing::make_test_ctx();
  const Json out = tool->run(Json{{"program", "echo"}, {"args", {"a", "b"}}}, ctx);
  CHECK(out["exit_code"] == 0);
  CHECK(out["stdout"] == "a b\n");
  CHECK_THROWS_AS(tool->run(Json{{"program", "sh"}}, ctx), agentkit::ToolArgumentError);
  CHECK_THROWS_AS(tool->run(Json{{"shell", "echo hi"}}, ctx), agentkit::ToolArgumentError);
}

TEST_CASE("command options round-trip as data and bad data is a typed error", "[command]") {
  CommandOptions o;
  o.programs = {"make", "/usr/bin/git"};
  o.allow_shell = true;
  o.env = {{"PATH", "/bin"}};
  o.timeout = std::chrono::milliseconds(1234);
  o.max_output_bytes = 99;
  o.isolation = Isolation::bubblewrap;
  o.requires_approval = false;
  o.tool_name = "sh";
  CHECK(CommandOptions::from_json(o.to_json()) == o);
  CHECK(CommandOptions::from_json(Json::object()) == CommandOptions{});
  const auto key_of = [](const Json& j) {
    try {
      CommandOptions::from_json(j);
    } catch (const agentkit::OptionsError& e) {
      return e.key();
    }
    return std::string("<accepted>");
  };
  CHECK(key_of(Json{{"programz", {"ls"}}}) == "programz");
  CHECK(key_of(Json{{"programs", "ls"}}) == "programs");
  CHECK(key_of(Json{{"programs", {1}}}) == "programs");
  CHECK(key_of(Json{{"isolation", "docker"}}) == "isolation");
  CHECK(key_of(Json{{"timeout_ms", "5s"}}) == "timeout_ms");
  CHECK(key_of(Json{{"env", {{"A", 1}}}}) == "env.A");
  CHECK(key_of(Json{{"allow_shell", "yes"}}) == "allow_shell");
}

TEST_CASE("bubblewrap: workspace writable, the rest read-only, no network", "[command][bwrap]") {
  if (!agentkit::bubblewrap_available()) {
    WARN("SKIPPED: bwrap is not installed or cannot create namespaces on this machine");
    return;
  }
  TempDir tmp;
  // Outside the workspace, and outside /tmp (which bwrap replaces): beside the test's working directory.
  TempDir host(fs::current_path());
  auto ws = workspace(tmp.path);
  Listener listener;
  const std::string probe = (host.path / "escaped.txt").string();
  const std::string write_out = "echo x > " + probe + " && echo WROTE";
  const std::string connect = "exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(listener.port) + " && echo CONNECTED";

  auto options = plain({"sh", "bash"});
  options.isolation = Isolation::bubblewrap;
  CommandRunner jail(ws, options);
  REQUIRE(jail.isolation() == Isolation::bubblewrap);
  CHECK(jail.run("sh", {"-c", "echo inside > made.txt && cat made.txt"}).stdout_text == "inside\n");
  CHECK(fs::exists(tmp.path / "made.txt"));
  const auto blocked = jail.run("sh", {"-c", write_out});
  CHECK(blocked.exit_code != 0);
  CHECK(blocked.stdout_text.find("WROTE") == std::string::npos);
  CHECK_FALSE(fs::exists(probe));
  const auto offline = jail.run("bash", {"-c", connect});
  CHECK(offline.exit_code != 0);
  CHECK(offline.stdout_text.find("CONNECTED") == std::string::npos);
  CHECK(std::atoi(jail.run("sh", {"-c", "echo $$"}).stdout_text.c_str()) < 10);  // a new pid namespace
  TempDir host_tmp;  // in the host's /tmp, which the command must not see
  put_marker(host_tmp.path / "marker");
  const std::string look = "test -e " + (host_tmp.path / "marker").string() + " && echo SEEN";
  CHECK(jail.run("sh", {"-c", look}).stdout_text.empty());

  // The same commands without isolation do escape: the checks above can fail.
  CommandRunner open(ws, plain({"sh", "bash"}));
  CHECK(open.run("sh", {"-c", write_out}).stdout_text == "WROTE\n");
  CHECK(fs::exists(probe));
  CHECK(open.run("bash", {"-c", connect}).stdout_text == "CONNECTED\n");
  CHECK(open.run("sh", {"-c", look}).stdout_text == "SEEN\n");
  CHECK(no_children());
}

TEST_CASE("command runs from several threads at once", "[command]") {
  TempDir tmp;
  CommandRunner runner(workspace(tmp.path), plain({"echo"}));
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&runner, &ok, t] {
      for (int i = 0; i < 10; ++i) {
        const std::string word = std::to_string(t) + "-" + std::to_string(i);
        if (runner.run("echo", {word}).stdout_text == word + "\n") ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(ok == 60);
  CHECK(no_children());
}

TEST_CASE("bubblewrap: a timeout still kills everything inside", "[command][bwrap]") {
  if (!agentkit::bubblewrap_available()) {
    WARN("SKIPPED: bwrap is not installed or cannot create namespaces on this machine");
    return;
  }
  TempDir tmp;
  auto options = plain({"sleep"});
  options.isolation = Isolation::automatic;
  options.timeout = std::chrono::milliseconds(300);
  CommandRunner runner(workspace(tmp.path), options);
  REQUIRE(runner.isolation() == Isolation::bubblewrap);
  const auto start = Clock::now();
  const auto r = runner.run("sleep", {"30"});
  CHECK(r.timed_out);
  CHECK(Clock::now() - start < std::chrono::seconds(3));
  CHECK(no_children());
}
