// One argument validator: the same bad call against a function tool, a REST
// tool and an MCP tool gives the same ToolArgumentError, and nothing runs.
#include <catch2/catch.hpp>

#include <atomic>
#include <string>

#include <agentkit/errors.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/mcp.h>
#include <agentkit/providers/rest_tool.h>
#include <agentkit/testing/wire_server.h>

using namespace agentkit;
using namespace agentkit::providers;
using agentkit::testing::WireServer;

namespace {

const Json kInputSchema = {{"type", "object"},
                           {"properties", {{"city", {{"type", "string"}}}, {"days", {{"type", "integer"}}}}},
                           {"required", {"city", "days"}},
                           {"additionalProperties", false}};

// A Streamable HTTP MCP server offering one tool, "forecast"; counts tools/call requests.
struct ForecastServer {
  std::atomic<int> calls{0};
  WireServer server;
  ForecastServer() {
    server.set_handler([this](const WireServer::Request& http) {
      WireServer::Response r;
      if (http.method != "POST") {
        r.status = 405;
        return r;
      }
      const Json request = Json::parse(http.body);
      const std::string method = request.value("method", "");
      Json result;
      if (method == "initialize") {
        result = {{"protocolVersion", "2025-11-25"}, {"capabilities", {{"tools", Json::object()}}},
                  {"serverInfo", {{"name", "forecast"}, {"version", "1"}}}};
      } else if (method == "tools/list") {
        result = {{"tools", {{{"name", "forecast"}, {"description", "Weather forecast for a city, day by day."},
                              {"inputSchema", kInputSchema}}}}};
      } else if (method == "tools/call") {
        ++calls;
        result = {{"content", {{{"type", "text"}, {"text", "sunny"}}}}};
      } else {
        r.status = 202;  // notifications
        return r;
      }
      r.headers = {{"content-type", "application/json"}};
      r.body = Json{{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", result}}.dump();
      return r;
    });
  }
};

ToolArgumentError error_of(const ToolPtr& tool, const Json& arguments, bool run) {
  RunContext ctx;
  try {
    if (run) {
      tool->run(arguments, ctx);
    } else {
      tool->check_arguments(arguments);
    }
  } catch (const ToolArgumentError& e) {
    return e;
  }
  FAIL("no ToolArgumentError from " << tool->name());
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("Function, REST and MCP tools reject the same bad call with the same ToolArgumentError", "[validation]") {
  std::atomic<int> function_runs{0};
  ToolPtr function = agentkit::tool("forecast")
                         .doc("Weather forecast for a city, day by day.")
                         .side_effecting(false)
                         .params("city", "days")
                         .fn([&](const std::string&, int) {
                           ++function_runs;
                           return std::string("sunny");
                         });
  WireServer rest_server;
  ToolPtr rest = rest_tool("forecast")
                     .description("Weather forecast for a city, from the forecast service.")
                     .side_effecting(false)
                     .endpoint("GET", rest_server.base_url() + "/forecast/{city}")
                     .path("city", "City name")
                     .query("days", "How many days", {.type = ParamType::integer})
                     .build();
  ForecastServer mcp_server;
  McpClient client(make_http_transport(McpHttpServer{.url = mcp_server.server.base_url() + "/mcp"}));
  client.connect();
  REQUIRE(client.tools().size() == 1);
  ToolPtr mcp = client.tools()[0];

  for (const Json& bad : {Json{{"city", 3}, {"verbose", true}},     // wrong type, unknown key, "days" missing
                          Json{{"city", "Lisbon"}, {"days", "3"}},  // "3" is not 3
                          Json::array({"Lisbon", 3})}) {            // not an object
    INFO(bad.dump());
    for (bool run : {false, true}) {
      const auto expected = error_of(function, bad, run);
      for (const ToolPtr& other : {rest, mcp}) {
        const auto got = error_of(other, bad, run);
        CHECK(got.missing() == expected.missing());
        CHECK(got.unexpected() == expected.unexpected());
        CHECK(got.invalid() == expected.invalid());
        CHECK(std::string(got.what()) == expected.what());
      }
    }
  }
  CHECK(function_runs == 0);
  CHECK(rest_server.requests().empty());
  CHECK(mcp_server.calls == 0);
}
