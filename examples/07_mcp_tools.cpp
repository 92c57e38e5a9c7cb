// 07 — an agent using an MCP server's tools. The MCP reference filesystem
// server runs as a child process over stdio; its tools join the agent's
// registry as fs_* tools, and the run calls them like any other tool. The
// model is a scripted FakeLLM, so this runs offline; the tool results are
// the real server's.
//
// Usage: example_07_mcp_tools [path/to/server-filesystem/dist/index.js]
// (by default the copy the MCP tests install into the build tree).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/providers/mcp.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

namespace {

// Prints each tool call and what the model gets back.
class PrintSteps final : public agentkit::Observer {
 public:
  void on_event(const agentkit::Event& event) override {
    if (auto* e = std::get_if<agentkit::ToolCallStarted>(&event)) {
      std::cout << "  [tool]  " << e->call.name << " " << e->call.arguments.dump() << "\n";
    } else if (auto* e = std::get_if<agentkit::ToolCallFinished>(&event)) {
      std::cout << "  [tool]  " << e->name << " -> " << agentkit::to_string(e->outcome) << ": " << e->text << "\n";
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  using agentkit::testing::Turn;

  const std::string server_js = argc > 1 ? argv[1]
                                         : std::string(AGENTKIT_MCP_SERVERS_DIR) +
                                               "/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js";
  if (!fs::exists(server_js)) {
    std::cerr << "server-filesystem not found at " << server_js
              << "\nRun `ctest -R mcp.npm_ci` in the build tree (it installs the MCP servers), or pass its path.\n";
    return 1;
  }

  // A folder for the agent to work in.
  const fs::path dir = fs::temp_directory_path() / ("agentkit-example-07-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "census.txt") << "Lisbon: 545,000 residents (2021 census)\n";

  // The server may touch only the roots the client gives it.
  agentkit::providers::McpClientOptions options;
  options.server_name = "fs";
  options.roots = std::vector<agentkit::providers::McpRoot>{{"file://" + dir.string(), "workspace"}};
  agentkit::providers::McpClient filesystem(
      agentkit::providers::make_stdio_transport({.command = AGENTKIT_NODE, .args = {server_js, dir.string()}}), options);
  filesystem.connect();
  std::cout << "connected to " << filesystem.server().name << " (MCP " << filesystem.server().protocol_version << "), "
            << filesystem.tools().size() << " tools\n";

  agentkit::ToolRegistry tools;
  tools.add_plugin("fs", filesystem);  // fs_read_text_file, fs_list_directory, ...
  const auto read_only = tools.find("fs_read_text_file")->side_effecting() ? "no" : "yes";
  std::cout << "fs_read_text_file read-only: " << read_only
            << ", fs_write_file read-only: " << (tools.find("fs_write_file")->side_effecting() ? "no" : "yes") << "\n";

  const std::string census = (dir / "census.txt").string();
  auto llm = agentkit::testing::FakeLLM::script({
      Turn{.tool_calls = {{"c1", "fs_list_directory", {{"path", dir.string()}}}}},
      Turn{.tool_calls = {{"c2", "fs_read_text_file", {{"path", census}}}}},
      Turn{.content = "Lisbon has about 545,000 residents, according to census.txt."},
  });
  agentkit::Agent agent("researcher", "fake", "Answer from the files in the workspace.",
                        std::make_shared<const agentkit::cognition::ReActCognition>(tools));
  auto ctx = agentkit::testing::make_test_ctx({.llm = llm, .observer = std::make_shared<PrintSteps>()});

  std::cout << "task: How many people live in Lisbon?\n";
  const auto result = agent.run("How many people live in Lisbon?", ctx);
  std::cout << "stop: " << to_string(result.stop_reason) << "\n";
  std::cout << "answer: " << result.output << "\n";

  filesystem.close();
  fs::remove_all(dir);
  return result.stop_reason == agentkit::StopReason::answered ? 0 : 1;
}
