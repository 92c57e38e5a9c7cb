// agentkit's MCP server driven by the official TypeScript SDK client
// (sdk_client.mjs on @modelcontextprotocol/sdk from tests/mcp/package-lock.json):
// `agentkit serve AGENT.yaml` over stdio and over Streamable HTTP (with a
// bearer token), and an in-process McpServer + McpHttpListener for progress,
// cancellation and tools/list_changed. The agent's model and its REST tools'
// service are loopback WireServers; what ran is counted on their side.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "../helpers/paths.h"
#include "../helpers/wire_replies.h"
#include "sdk_client_support.h"
#include "server_support.h"

#ifdef AGENTKIT_CLI
#include "../core/cli_support.h"
#endif

namespace {

using nlohmann::json;
using agentkit::testing::WireServer;
namespace fs = std::filesystem;

using mcp_test::run_sdk_client;
using mcp_test::SdkRun;
using mcp_test::sdk_available;

json tool_named(const json& tools, const std::string& name) {
  for (const auto& t : tools)
    if (t.value("name", "") == name) return t;
  return json();
}

std::string text_of(const json& result) {
  std::string out;
  if (result.contains("content"))
    for (const auto& block : result["content"])
      if (block.value("type", "") == "text") out += block.value("text", "");
  return out;
}

#ifdef AGENTKIT_CLI

using agentkit_test::json_reply;

// The offline world of the served agent: its model (OpenAI Chat Completions,
// streamed or not as asked: first a call of weather(city: Lisbon), then an
// answer from the tool's result) and the weather/orders service its REST tools call.
struct World {
  WireServer model, service;
  agentkit_test::cli::TempDir dir;
  fs::path yaml;

  World() {
    model.set_handler([](const WireServer::Request& request) {
      const agentkit::Json body = agentkit::Json::parse(request.body);
      const bool stream = body.value("stream", false);
      const bool after_tool = body["messages"].back().value("role", "") == "tool";
      if (body["messages"].dump().find("Refund order A-3") != std::string::npos) {
        if (after_tool) return stream ? agentkit_test::cli::answer({"Refunded ", "order A-3."}) : agentkit_test::openai_text("Refunded order A-3.");
        const agentkit::Json args = {{"order_id", "A-3"}};
        return stream ? agentkit_test::cli::calls({{"r1", "refund", args}}) : agentkit_test::openai_call("r1", "refund", args);
      }
      if (after_tool) {
        const std::string text = "It is 21 degrees in Lisbon.";
        return stream ? agentkit_test::cli::answer({"It is 21 ", "degrees in Lisbon."}) : agentkit_test::openai_text(text);
      }
      const agentkit::Json args = {{"city", "Lisbon"}};
      return stream ? agentkit_test::cli::calls({{"w1", "weather", args}})
                    : agentkit_test::openai_call("w1", "weather", args);
    });
    service.set_handler([](const WireServer::Request& request) {
      if (request.path.rfind("/weather/Atlantis", 0) == 0) return json_reply({{"error", "no such city"}}, 404);
      if (request.path.rfind("/weather/", 0) == 0) return json_reply({{"temp_c", 21}, {"city", "Lisbon"}});
      if (request.path.find("/refund") != std::string::npos) return json_reply({{"refund", "R-9"}, {"status", "done"}});
      if (request.path.find("/status") != std::string::npos) return json_reply({{"status", "shipped"}});
      return json_reply({{"error", "not found"}}, 404);
    });
    const std::string svc = service.base_url();
    yaml = dir.write("atlas.yaml",
                     "name: atlas\n"
                     "description: Answers questions about the weather in cities from the weather service.\n"
                     "model: openai/gpt-test\n"
                     "base_url: " + model.base_url() + "/v1\n"
                     "api_key_env: AGENTKIT_TEST_KEY\n"
                     "prompt: You answer questions about cities.\n"
                     "tools:\n"
                     "  - rest:\n"
                     "      name: weather\n"
                     "      description: Current weather for a named city, in degrees Celsius.\n"
                     "      url: " + svc + "/weather/{city}\n"
                     "      side_effecting: false\n"
                     "      idempotent: false\n"
                     "      params:\n"
                     "        - {name: city, description: The city}\n"
                     "  - rest:\n"
                     "      name: set_status\n"
                     "      description: Set the status of a customer order and return the new status.\n"
                     "      method: PUT\n"
                     "      url: " + svc + "/orders/{order_id}/status\n"
                     "      side_effecting: true\n"
                     "      idempotent: true\n"
                     "      params:\n"
                     "        - {name: order_id, description: The order}\n"
                     "  - rest:\n"
                     "      name: refund\n"
                     "      description: Refund a damaged customer order in full and return the refund record.\n"
                     "      method: POST\n"
                     "      url: " + svc + "/orders/{order_id}/refund\n"
                     "      side_effecting: true\n"
                     "      idempotent: false\n"
                     "      requires_approval: true\n"
                     "      params:\n"
                     "        - {name: order_id, description: The order to refund}\n"
                     "egress: [\"" + svc + "\"]\n");
  }

  std::size_t service_calls(const std::string& path_part) const {
    std::size_t n = 0;
    for (const auto& r : service.requests())
      if (r.path.find(path_part) != std::string::npos) ++n;
    return n;
  }
};

// The scenario both transports run, and what must come of it.
const json& serve_steps() {
  static const json steps = json::parse(R"([
    {"op": "list_tools"},
    {"op": "call_tool", "name": "weather", "arguments": {"city": "Lisbon"}},
    {"op": "call_tool", "name": "weather", "arguments": {"city": "Atlantis"}},
    {"op": "call_tool", "name": "weather", "arguments": {}},
    {"op": "call_tool", "name": "no_such_tool", "arguments": {}},
    {"op": "call_tool", "name": "atlas", "arguments": {"task": "What is the weather in Lisbon?"}},
    {"op": "expect_elicitation", "action": "accept", "content": {}},
    {"op": "call_tool", "name": "refund", "arguments": {"order_id": "A-1"}},
    {"op": "call_tool", "name": "refund", "arguments": {"order_id": "A-2"}},
    {"op": "expect_elicitation", "action": "accept", "content": {}},
    {"op": "call_tool", "name": "atlas", "arguments": {"task": "Refund order A-3"}},
    {"op": "ping"}
  ])");
  return steps;
}

void check_serve_run(const SdkRun& run, const World& world) {
  INFO("sdk client stderr: " << run.err);
  REQUIRE(run.exit_code == 0);
  const json connect = run.op("connect");
  CHECK(connect["protocolVersion"] == "2025-11-25");
  CHECK(connect["serverInfo"]["name"] == "atlas");
  CHECK(connect["capabilities"].contains("tools"));

  // tools/list: the definition's tools and the agent, annotated from the declared effects.
  const json tools = run.step(0)["tools"];
  REQUIRE(tools.is_array());
  std::vector<std::string> names;
  for (const auto& t : tools) names.push_back(t["name"]);
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"atlas", "refund", "set_status", "weather"});
  const auto hints = [&](const std::string& name) {
    const json a = tool_named(tools, name)["annotations"];
    return std::vector<json>{a["readOnlyHint"], a["destructiveHint"], a["idempotentHint"]};
  };
  // side_effecting: false -> read-only; idempotent -> not destructive; else destructive.
  CHECK(hints("weather") == std::vector<json>{true, false, false});
  CHECK(hints("set_status") == std::vector<json>{false, false, true});
  CHECK(hints("refund") == std::vector<json>{false, true, false});
  CHECK(hints("atlas") == std::vector<json>{false, true, false});  // its tools write
  CHECK(tool_named(tools, "atlas")["inputSchema"]["properties"].contains("task"));
  CHECK(tool_named(tools, "weather")["inputSchema"]["properties"].contains("city"));

  // A value.
  const json lisbon = run.step(1)["result"];
  CHECK(lisbon.value("isError", true) == false);
  CHECK(text_of(lisbon).find("21") != std::string::npos);
  // The service's error, bad arguments: results with isError; an unknown tool: a JSON-RPC error.
  const json atlantis = run.step(2)["result"];
  CHECK(atlantis.value("isError", false) == true);
  CHECK_FALSE(text_of(atlantis).empty());
  const json missing = run.step(3)["result"];
  CHECK(missing.value("isError", false) == true);
  CHECK(text_of(missing).find("city") != std::string::npos);
  CHECK(run.step(4)["error"]["code"] == -32602);
  // Nothing reached the service for the bad call; one request each for Lisbon and Atlantis,
  // and one more for the agent's own weather call.
  CHECK(world.service_calls("/weather/Atlantis") == 1);

  // The agent as a tool: the model asked for weather(Lisbon), then answered from it.
  const json agent = run.step(5)["result"];
  CHECK(agent.value("isError", true) == false);
  CHECK(text_of(agent).find("It is 21 degrees in Lisbon.") != std::string::npos);
  CHECK(world.model.requests().size() == 4);  // two for this task, two for the refund below
  CHECK(world.service_calls("/weather/Lisbon") == 2);

  // Approval by elicitation: accepted -> ran once; declined -> not run.
  const auto elicitations = run.all("elicitation");
  REQUIRE(elicitations.size() == 3);
  CHECK(elicitations[0]["answered"] == "accept");
  CHECK(elicitations[1]["answered"] == "decline");
  CHECK(elicitations[0]["params"]["message"].get<std::string>().find("refund") != std::string::npos);
  CHECK(elicitations[0]["params"]["message"].get<std::string>().find("A-1") != std::string::npos);
  const json accepted = run.step(7)["result"];
  CHECK(accepted.value("isError", true) == false);
  CHECK(text_of(accepted).find("R-9") != std::string::npos);
  const json declined = run.step(8)["result"];
  CHECK(declined.value("isError", false) == true);
  CHECK(text_of(declined).find("denied") != std::string::npos);
  CHECK(world.service_calls("/orders/A-1/refund") == 1);
  CHECK(world.service_calls("/orders/A-2/refund") == 0);
  // The agent's own refund: its sub-run paused, the client's user was asked
  // (naming the agent), and the sub-run resumed to run it once and answer.
  CHECK(elicitations[2]["answered"] == "accept");
  const std::string asked = elicitations[2]["params"]["message"];
  CHECK_THAT(asked, Catch::Contains("Tool: refund") && Catch::Contains("A-3") &&
                        Catch::Contains("Asked by: agent atlas, inside tool 'atlas'"));
  const json refunded = run.step(10)["result"];
  CHECK(refunded.value("isError", true) == false);
  CHECK(text_of(refunded) == "Refunded order A-3.");
  CHECK(world.service_calls("/orders/A-3/refund") == 1);
  CHECK(run.step(11)["ok"] == true);
}

#endif

}  // namespace

#ifdef AGENTKIT_CLI

TEST_CASE("sdk client: agentkit serve --stdio lists, calls, errs and asks approval by elicitation",
          "[mcp][sdk_client][serve]") {
  if (!sdk_available()) return;
  World world;
  // The SDK's stdio transport passes the child only a few variables; env sets the rest.
  std::vector<std::string> transport = {"--stdio", "/usr/bin/env", "-i"};
  for (const auto& e : agentkit_test::cli::child_environment(world.dir, {})) transport.push_back(e);
  for (const std::string& a : {std::string(AGENTKIT_CLI), std::string("serve"), world.yaml.string(),
                              std::string("--stdio"), std::string("--store"), world.dir.store()})
    transport.push_back(a);
  const SdkRun run = run_sdk_client(serve_steps(), transport);
  check_serve_run(run, world);
}

TEST_CASE("sdk client: agentkit serve --http with a bearer token: refused without it, served with it",
          "[mcp][sdk_client][serve]") {
  if (!sdk_available()) return;
  World world;
  const std::string token = "mcp-token-5521-secret";
  const pid_t pid = agentkit_test::cli::spawn_cli(
      world.dir, {"serve", world.yaml.string(), "--http", "127.0.0.1:0", "--store", world.dir.store()},
      {"AGENTKIT_MCP_TOKEN=" + token, "AGENTKIT_LOG=warn"}, "serve");
  const fs::path err_file = world.dir.path / "serve.err";
  const std::string url = mcp_test::served_url(err_file.string());
  const bool up = !url.empty();
  SdkRun without, wrong, with;
  if (up) {
    const json ping = json::array({{{"op", "ping"}}});
    without = run_sdk_client(ping, {"--http", url});
    wrong = run_sdk_client(ping, {"--http", url, "--header", "Authorization: Bearer not-the-token"});
    with = run_sdk_client(serve_steps(), {"--http", url, "--header", "Authorization: Bearer " + token});
  }
  const auto status = mcp_test::interrupt_and_reap(pid);
  REQUIRE(up);
  CHECK(url.rfind("http://127.0.0.1:", 0) == 0);
  // Without the token (or with another) the SDK client cannot connect.
  CHECK(without.exit_code == 2);
  CHECK(without.op("connect").contains("error"));
  INFO("without the token: " << without.op("connect").dump());
  CHECK(wrong.exit_code == 2);
  CHECK(wrong.op("connect").contains("error"));
  check_serve_run(with, world);
  REQUIRE(status);
  CHECK(WIFEXITED(*status));
  std::stringstream serve_err;
  serve_err << std::ifstream(err_file).rdbuf();
  CHECK(serve_err.str().find(token) == std::string::npos);
}

#endif

// ------------------------------------------------- in-process McpServer

TEST_CASE("sdk client: progress, cancellation and tools/list_changed from an in-process McpServer over HTTP",
          "[mcp][sdk_client]") {
  using namespace agentkit;
  using namespace agentkit::providers;
  if (!sdk_available()) return;
  std::atomic<bool> blocking{false}, block_cancelled{false};
  ToolRegistry tools;
  tools.add(mcp_test::lambda_tool(mcp_test::spec("count", false), [](const Json& args, RunContext& ctx) {
    const int n = args.value("n", 0);
    for (int i = 1; i <= n; ++i) ctx.emit(Progress{"step " + std::to_string(i) + " of " + std::to_string(n)});
    return ToolOutput{"counted to " + std::to_string(n), {}};
  }));
  tools.add(mcp_test::lambda_tool(mcp_test::spec("block", false), [&](const Json&, RunContext& ctx) {
    blocking = true;
    while (!ctx.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    block_cancelled = true;
    return ToolOutput{"stopped", {}};
  }));
  McpServer server(std::move(tools), RunContext{}, {.name = "inproc"});
  McpHttpListener http(server);
  http.listen();
  http.run_in_thread();

  // Replaces the tools, again and again, once the client has cancelled the
  // blocking call (so the client's standalone stream is surely open by then).
  std::atomic<bool> stop{false};
  std::thread changer([&] {
    while (!stop && !block_cancelled) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    while (!stop) {
      ToolRegistry next;
      next.add(mcp_test::lambda_tool(mcp_test::spec("late", false),
                                     [](const Json&, RunContext&) { return ToolOutput{"here late", {}}; }));
      server.set_tools(std::move(next));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  const json steps = json::parse(R"([
    {"op": "call_tool", "name": "count", "arguments": {"n": 3}, "progress": true},
    {"op": "call_tool", "name": "block", "cancel_after_ms": 300},
    {"op": "wait_list_changed", "timeout_ms": 10000},
    {"op": "list_tools"},
    {"op": "call_tool", "name": "late"},
    {"op": "ping"}
  ])");
  const SdkRun run = run_sdk_client(steps, {"--http", http.url()});
  stop = true;
  changer.join();
  http.stop();

  INFO("sdk client stderr: " << run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(run.op("connect")["protocolVersion"] == "2025-11-25");
  CHECK(run.op("connect")["serverInfo"]["name"] == "inproc");
  // Progress: one notification per Progress event, in order, before the result.
  const json counted = run.step(0);
  CHECK(text_of(counted["result"]) == "counted to 3");
  const json progress = counted["progress"];
  REQUIRE(progress.is_array());
  REQUIRE(progress.size() == 3);
  CHECK(progress[0]["message"] == "step 1 of 3");
  CHECK(progress[2]["message"] == "step 3 of 3");
  CHECK(progress[0]["progress"] < progress[2]["progress"]);
  // Cancellation: the SDK's abort reaches the tool's context.
  CHECK(run.step(1)["cancelled"] == true);
  CHECK(run.step(1).contains("error"));
  CHECK(blocking);
  CHECK(mcp_test::eventually([&] { return block_cancelled.load(); }));
  // list_changed on the standalone stream, and the new list is served.
  CHECK(run.step(2)["received"] == true);
  INFO("tools/list after the change: " << run.step(3).dump());
  std::vector<std::string> names;
  const json listed = run.step(3);
  for (const auto& t : listed["tools"]) names.push_back(t["name"]);
  CHECK(names == std::vector<std::string>{"late"});
  CHECK(text_of(run.step(4)["result"]) == "here late");
  CHECK(run.step(5)["ok"] == true);
}
