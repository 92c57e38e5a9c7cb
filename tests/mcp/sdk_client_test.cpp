// sdk_client.mjs, the official-TypeScript-SDK client harness the MCP server
// tests drive, against @modelcontextprotocol/server-everything over stdio:
// it negotiates 2025-11-25, lists tools with annotations, calls tools (with
// progress, cancellation, an elicitation answered by the scenario) and exits
// non-zero when the transport fails.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sdk_client_support.h"

namespace {

using nlohmann::json;

using mcp_test::run_sdk_client;
using mcp_test::SdkRun;

std::vector<std::string> everything_stdio() {
  return {"--stdio", mcp_test::node(), mcp_test::reference_server("everything"), "stdio"};
}

}  // namespace

TEST_CASE("sdk client: lists and calls server-everything's tools over stdio at protocol 2025-11-25",
          "[mcp][sdk_client]") {
  const json steps = json::parse(R"([
    {"op": "list_tools"},
    {"op": "call_tool", "name": "get-sum", "arguments": {"a": 2, "b": 40}},
    {"op": "call_tool", "name": "get-structured-content", "arguments": {"location": "Chicago"}},
    {"op": "call_tool", "name": "trigger-long-running-operation", "arguments": {"duration": 0.4, "steps": 4}, "progress": true},
    {"op": "call_tool", "name": "get-sum", "arguments": {"a": "two"}},
    {"op": "ping"}
  ])");
  const SdkRun run = run_sdk_client(steps, everything_stdio());
  REQUIRE(run.exit_code == 0);
  const json connect = run.op("connect");
  CHECK(connect["protocolVersion"] == "2025-11-25");
  CHECK(connect["serverInfo"]["name"] == "mcp-servers/everything");

  const json tools = run.step(0)["tools"];
  REQUIRE(tools.is_array());
  json sum;
  for (const auto& t : tools)
    if (t["name"] == "get-sum") sum = t;
  REQUIRE(sum.is_object());
  CHECK(sum["annotations"]["readOnlyHint"] == true);
  CHECK(sum["inputSchema"]["properties"].contains("a"));

  CHECK(run.step(1)["result"]["content"][0]["text"] == "The sum of 2 and 40 is 42.");
  CHECK(run.step(2)["result"]["structuredContent"].contains("temperature"));
  const json progress = run.step(3)["progress"];
  REQUIRE(progress.is_array());
  CHECK(progress.size() >= 1);
  CHECK(progress[0]["total"] == 4);
  CHECK(run.step(3)["result"]["content"][0]["text"].get<std::string>().find("completed") != std::string::npos);
  // Invalid arguments: an error the harness reports, not a crash.
  const json bad = run.step(4);
  CHECK((bad.contains("error") || bad["result"].value("isError", false)));
  CHECK(run.step(5)["ok"] == true);
}

TEST_CASE("sdk client: answers an elicitation, waits for list_changed, cancels a call", "[mcp][sdk_client]") {
  const json steps = json::parse(R"([
    {"op": "wait_list_changed", "timeout_ms": 10000},
    {"op": "expect_elicitation", "action": "accept", "content": {"name": "Ada"}},
    {"op": "call_tool", "name": "trigger-elicitation-request"},
    {"op": "call_tool", "name": "trigger-long-running-operation", "arguments": {"duration": 3, "steps": 3}, "cancel_after_ms": 200}
  ])");
  const SdkRun run = run_sdk_client(steps, everything_stdio());
  REQUIRE(run.exit_code == 0);
  // server-everything registers its elicitation tool once it sees the client's capability.
  CHECK(run.step(0)["received"] == true);
  const json elicitation = run.op("elicitation");
  CHECK(elicitation["answered"] == "accept");
  CHECK(elicitation["params"]["requestedSchema"]["properties"].contains("name"));
  CHECK(run.step(2)["result"].dump().find("Ada") != std::string::npos);
  CHECK(run.step(3)["cancelled"] == true);
  CHECK(run.step(3)["error"]["code"] == -32001);
}

TEST_CASE("sdk client: a server it cannot reach or that dies is a non-zero exit", "[mcp][sdk_client]") {
  const json steps = json::array({{{"op", "ping"}}});
  const SdkRun unreachable = run_sdk_client(steps, {"--http", "http://127.0.0.1:1/mcp"});
  CHECK(unreachable.exit_code == 2);
  CHECK(unreachable.op("connect").contains("error"));
  const SdkRun dead = run_sdk_client(steps, {"--stdio", mcp_test::node(), "-e", "process.exit(3)"});
  CHECK(dead.exit_code == 2);
  const SdkRun usage = run_sdk_client(steps, {});
  CHECK(usage.exit_code == 1);
}
