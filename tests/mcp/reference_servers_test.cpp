// The MCP client over stdio against the real reference servers from npm
// (@modelcontextprotocol/server-everything, -filesystem, -memory), pinned by
// tests/mcp/package-lock.json and installed by the mcp.npm_ci fixture.
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include <agentkit/errors.h>
#include <agentkit/invoker.h>
#include <agentkit/testing/test_context.h>

#include "mcp_support.h"

using namespace agentkit;
using namespace agentkit::providers;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

McpStdioServer reference(const std::string& name, std::vector<std::string> args = {}) {
  McpStdioServer server{.command = mcp_test::node(), .args = {mcp_test::reference_server(name)}};
  server.args.insert(server.args.end(), args.begin(), args.end());
  return server;
}

ToolPtr find_tool(const McpClient& client, const std::string& name) {
  for (const auto& tool : client.tools()) {
    if (tool->name() == name) return tool;
  }
  FAIL("no tool " << name);
  return nullptr;
}

class ProgressRecorder final : public Observer {
 public:
  void on_event(const Event& event) override {
    if (auto* p = std::get_if<McpProgress>(&event)) {
      std::lock_guard lock(mutex_);
      seen_.push_back(*p);
    }
  }
  std::vector<McpProgress> seen() const {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<McpProgress> seen_;
};

// A fresh directory under the system temp dir, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "agentkit-mcp-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string uri() const { return "file://" + path.string(); }
};

}  // namespace

TEST_CASE("everything: handshake, tools/list counts and every content type") {
  auto client = mcp_test::connect(reference("everything"), {.server_name = "everything"});
  CHECK(client->server().name == "mcp-servers/everything");
  CHECK(client->server().protocol_version == "2025-11-25");
  CHECK_FALSE(client->server().instructions.empty());
  // Without roots, sampling or elicitation capabilities the conditional tools stay hidden.
  CHECK(client->tools().size() == 13);
  CHECK(client->list_tools().size() == 13);

  auto ctx = testing::make_test_ctx();
  CHECK(find_tool(*client, "echo")->run({{"message", "hi \u2028 there"}}, ctx) == "Echo: hi \u2028 there");
  CHECK(find_tool(*client, "get-sum")->run({{"a", 2}, {"b", 40}}, ctx) == "The sum of 2 and 40 is 42.");

  const McpCallResult image = client->call_tool("get-tiny-image", Json::object());
  REQUIRE(image.content.size() >= 2);
  CHECK(image.content[1]["type"] == "image");
  CHECK_THAT(image.text(), Catch::Matches("(.|\\n)*\\[image image/png, [0-9]+ bytes\\](.|\\n)*"));
  CHECK(image.text().find(image.content[1]["data"].get<std::string>().substr(0, 40)) == std::string::npos);

  const McpCallResult links = client->call_tool("get-resource-links", {{"count", 2}});
  CHECK_THAT(links.text(), Catch::Contains("[resource_link demo://resource/dynamic/blob/1 \"Blob Resource 1\" text/plain]") &&
                               Catch::Contains("[resource_link demo://resource/dynamic/text/2"));

  const McpCallResult embedded = client->call_tool("get-resource-reference", {{"resourceType", "Text"}, {"resourceId", 3}});
  CHECK_THAT(embedded.text(), Catch::Contains("[resource demo://resource/dynamic/text/3 text/plain]\n"));

  const Json weather = find_tool(*client, "get-structured-content")->run({{"location", "New York"}}, ctx);
  CHECK(weather.is_object());
  CHECK(weather.contains("temperature"));
  CHECK(weather.contains("conditions"));
}

TEST_CASE("everything: invalid arguments and unknown tools end as errors the model sees") {
  auto client = mcp_test::connect(reference("everything"));
  auto ctx = testing::make_test_ctx();
  Invoker invoker({error_boundary()});

  // Caught by the client against the inputSchema, before sending.
  auto sum = find_tool(*client, "get-sum");
  const ToolResult local = invoker.invoke_tool({.call_id = "c1", .name = "get-sum", .arguments = {{"a", "x"}}, .tool = sum}, ctx);
  CHECK(local.status == ToolResult::Status::error);
  CHECK_THAT(local.model_text(), Catch::Contains("missing required argument(s) ['b']") &&
                                     Catch::Contains("a: expected number, got string 'x'"));

  // Caught by the server (its isError shape for -32602).
  const McpCallResult remote = client->call_tool("get-sum", {{"a", "x"}});
  CHECK(remote.is_error);
  CHECK_THAT(remote.text(), Catch::Contains("-32602") && Catch::Contains("Input validation error"));
  auto reference_tool = find_tool(*client, "get-resource-reference");
  const ToolResult server_side = invoker.invoke_tool(
      {.call_id = "c2", .name = "get-resource-reference", .arguments = {{"resourceType", "text"}, {"resourceId", 1}},
       .tool = reference_tool},
      ctx);
  // The client's schema check (the validator every tool shares) refuses the
  // enum before the server sees the call.
  CHECK(server_side.status == ToolResult::Status::error);
  CHECK_THAT(server_side.model_text(), Catch::Contains("resourceType: expected one of ['Text', 'Blob'], got 'text'"));

  const McpCallResult unknown = client->call_tool("no-such-tool", Json::object());
  CHECK(unknown.is_error);
  CHECK_THAT(unknown.text(), Catch::Contains("Tool no-such-tool not found"));
}

TEST_CASE("everything: progress notifications arrive as events, cancellation stops a long call") {
  auto client = mcp_test::connect(reference("everything"), {.server_name = "everything"});
  auto recorder = std::make_shared<ProgressRecorder>();
  auto ctx = testing::make_test_ctx({.observer = recorder});
  auto long_op = find_tool(*client, "trigger-long-running-operation");

  CHECK_THAT(long_op->run({{"duration", 0.3}, {"steps", 3}}, ctx).get<std::string>(),
             Catch::Contains("Long running operation completed"));
  const auto seen = recorder->seen();
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].server == "everything");
  CHECK(seen[0].tool == "trigger-long-running-operation");
  CHECK(seen[2].progress == 3);
  CHECK(seen[2].total == 3.0);

  std::thread canceller([&] {
    std::this_thread::sleep_for(100ms);
    ctx.cancellation.cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    long_op->run({{"duration", 30}, {"steps", 3}}, ctx);
    FAIL("not cancelled");
  } catch (const McpError& e) {
    CHECK(e.kind() == McpError::Kind::cancelled);
  }
  canceller.join();
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  // The server took the cancellation and still serves.
  CHECK(client->call_tool("echo", {{"message", "alive"}}).text() == "Echo: alive");
}

TEST_CASE("everything: roots, sampling and elicitation requests from the server") {
  McpClientOptions options;
  options.roots = std::vector<McpRoot>{{"file:///srv/project", "project"}};
  std::atomic<int> sampled{0};
  options.sampling = [&](const Json& params) {
    ++sampled;
    CHECK(params.contains("messages"));
    return Json{{"role", "assistant"}, {"content", {{"type", "text"}, {"text", "forty-two"}}}, {"model", "fake-model"},
                {"stopReason", "endTurn"}};
  };
  options.elicitation = [](const Json&) { return Json{{"action", "decline"}}; };
  auto client = mcp_test::connect(reference("everything"), std::move(options));
  // roots, sampling and elicitation unlock one conditional tool each.
  CHECK(client->tools().size() == 16);

  CHECK_THAT(client->call_tool("get-roots-list", Json::object()).text(),
             Catch::Contains("file:///srv/project") && Catch::Contains("project"));
  CHECK_THAT(client->call_tool("trigger-sampling-request", {{"prompt", "the answer?"}, {"maxTokens", 5}}).text(),
             Catch::Contains("forty-two"));
  CHECK(sampled == 1);
  CHECK_THAT(client->call_tool("trigger-elicitation-request", Json::object()).text(), Catch::Contains("decline"));
}

TEST_CASE("filesystem: roots decide the allowed directories, reads and writes round-trip") {
  TempDir allowed;
  TempDir other;
  McpClientOptions options;
  options.server_name = "fs";
  options.roots = std::vector<McpRoot>{{allowed.uri(), "work"}};
  // The server's own argument names `other`; a client with roots overrides it.
  auto client = mcp_test::connect(reference("filesystem", {other.path.string()}), std::move(options));
  CHECK(client->tools().size() == 14);
  auto ctx = testing::make_test_ctx();

  REQUIRE(mcp_test::eventually([&] {
    return client->call_tool("list_allowed_directories", Json::object()).text().find(allowed.path.string()) !=
           std::string::npos;
  }));
  auto write = find_tool(*client, "write_file");
  CHECK(write->side_effecting());
  CHECK(write->spec().metadata["mcp"]["destructive_hint"] == true);
  CHECK_FALSE(find_tool(*client, "read_text_file")->side_effecting());

  const std::string file = (allowed.path / "note.txt").string();
  write->run({{"path", file}, {"content", "hello\u2028world"}}, ctx);
  // The server's structuredContent is the tool's value.
  CHECK(find_tool(*client, "read_text_file")->run({{"path", file}}, ctx) == Json{{"content", "hello\u2028world"}});
  std::ifstream in(file);
  std::string on_disk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(on_disk == "hello\u2028world");

  const McpCallResult outside = client->call_tool("read_text_file", {{"path", (other.path / "x").string()}});
  CHECK(outside.is_error);
  CHECK_THAT(outside.text(), Catch::Contains("denied") || Catch::Contains("outside"));
}

TEST_CASE("memory: a knowledge graph kept in a file the host names") {
  TempDir dir;
  auto server = reference("memory");
  server.env = {{"MEMORY_FILE_PATH", (dir.path / "memory.jsonl").string()}};
  auto client = mcp_test::connect(server);
  CHECK(client->tools().size() == 9);
  auto ctx = testing::make_test_ctx();
  find_tool(*client, "create_entities")
      ->run({{"entities", Json::array({{{"name", "Lisbon"}, {"entityType", "city"}, {"observations", {"545k residents"}}}})}},
            ctx);
  const Json graph = find_tool(*client, "read_graph")->run(Json::object(), ctx);
  CHECK(graph.dump().find("545k residents") != std::string::npos);
  CHECK(fs::exists(dir.path / "memory.jsonl"));
}
