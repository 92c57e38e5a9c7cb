// `agentkit serve AGENT.yaml --stdio` as a child process, driven by
// agentkit's own McpClient over its stdio transport.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../helpers/paths.h"
#include "mcp_support.h"

using namespace agentkit;
using namespace agentkit::providers;

#ifdef AGENTKIT_CLI

namespace {

// An agent keeping notes in a memory tool; its model is never asked.
void write_atlas(const std::filesystem::path& dir) {
  std::ofstream(dir / "atlas.yaml") << "name: atlas\n"
                                       "description: Answers questions from the notes it keeps.\n"
                                       "model: ollama/llama3.2\n"
                                       "prompt: Answer from your notes.\n"
                                       "tools:\n"
                                       "  - memory: {dir: ./notes}\n";
}

}  // namespace

TEST_CASE("agentkit serve --stdio: lists the agent's tools and the agent, and answers calls") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("agentkit_serve_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  write_atlas(dir);
  McpStdioServer child{.command = AGENTKIT_CLI,
                       .args = {"serve", (dir / "atlas.yaml").string(), "--stdio", "--store", (dir / "state.db").string()},
                       .env = {{"HOME", dir.string()}, {"AGENTKIT_LOG", "off"}}};
  {
    auto client = mcp_test::connect(child, {.server_name = "atlas"});
    CHECK(client->server().name == "atlas");
    CHECK(client->server().protocol_version == "2025-11-25");
    const auto tools = client->list_tools();
    std::vector<std::string> names;
    for (const auto& t : tools) names.push_back(t.name);
    CHECK(names == std::vector<std::string>{"atlas", "memory"});
    for (const auto& t : tools) {
      if (t.name != "atlas") continue;
      CHECK(t.input_schema["properties"].contains("task"));
      CHECK(t.annotations["readOnlyHint"] == false);  // its memory tool writes
      CHECK(t.description == "Answers questions from the notes it keeps.");
    }
    const auto bad = client->call_tool("memory", {{"no_such_argument", 1}});
    CHECK(bad.is_error);
    CHECK_FALSE(bad.text().empty());
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("agentkit serve --http: serves Streamable HTTP on loopback until SIGINT") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("agentkit_serve_http_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  write_atlas(dir);
  const std::string err_file = (dir / "stderr.txt").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> args = {AGENTKIT_CLI, "serve", (dir / "atlas.yaml").string(), "--http", "127.0.0.1:0",
                                   "--store", (dir / "state.db").string()};
  std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=" + dir.string(), "AGENTKIT_LOG=warn"};
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  for (auto& e : env) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, AGENTKIT_CLI, &actions, nullptr, argv.data(), envp.data()) == 0);
  posix_spawn_file_actions_destroy(&actions);

  const std::string url = mcp_test::served_url(err_file);
  const bool up = !url.empty();
  if (up) {
    McpClient client(make_http_transport({.url = url}), {.server_name = "atlas"});
    client.connect();
    CHECK(client.list_tools().size() == 2);
    CHECK(client.call_tool("memory", {{"no_such_argument", 1}}).is_error);
    client.close();
  }
  const auto status = mcp_test::interrupt_and_reap(pid);
  CHECK(up);
  CHECK(url.rfind("http://127.0.0.1:", 0) == 0);
  CHECK((status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

#endif
