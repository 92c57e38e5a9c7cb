// `agentkit serve AGENT.yaml --stdio` as a child process, driven by
// agentkit's own McpClient over its stdio transport.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "mcp_support.h"

using namespace agentkit;
using namespace agentkit::providers;

#ifdef AGENTKIT_CLI

TEST_CASE("agentkit serve --stdio: lists the agent's tools and the agent, and answers calls") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("agentkit_serve_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "atlas.yaml") << "name: atlas\n"
                                       "description: Answers questions from the notes it keeps.\n"
                                       "model: ollama/llama3.2\n"
                                       "prompt: Answer from your notes.\n"
                                       "tools:\n"
                                       "  - memory: {dir: ./notes}\n";
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

#endif
