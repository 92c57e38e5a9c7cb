// One argument validator: the same bad call against a function tool, a REST
// tool and an MCP tool gives the same ToolArgumentError, and nothing runs.
#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <vector>

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

// A Streamable HTTP MCP server offering `tools` (by default one, "forecast");
// counts tools/call requests.
struct ForecastServer {
  std::atomic<int> calls{0};
  WireServer server;
  explicit ForecastServer(Json tools = Json::array({{{"name", "forecast"},
                                                     {"description", "Weather forecast for a city, day by day."},
                                                     {"inputSchema", kInputSchema}}})) {
    server.set_handler([this, tools](const WireServer::Request& http) {
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
        result = {{"tools", tools}};
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

ToolPtr mcp_tool(McpClient& client, const std::string& name) {
  for (const auto& t : client.tools()) {
    if (t->name() == name) return t;
  }
  FAIL("no MCP tool " << name);
  throw std::logic_error("unreachable");
}

// The same bad call against each of `tools` gives the first one's error, from
// check_arguments and from run().
void check_same_errors(const std::vector<ToolPtr>& tools, const Json& bad) {
  INFO(bad.dump());
  for (bool run : {false, true}) {
    const auto expected = error_of(tools[0], bad, run);
    for (std::size_t i = 1; i < tools.size(); ++i) {
      INFO(tools[i]->name() << " #" << i << (run ? " run" : " check_arguments"));
      const auto got = error_of(tools[i], bad, run);
      CHECK(got.missing() == expected.missing());
      CHECK(got.unexpected() == expected.unexpected());
      CHECK(got.invalid() == expected.invalid());
      CHECK(std::string(got.what()) == expected.what());
    }
  }
}

enum class Unit { celsius, fahrenheit };
struct Place {
  std::string city;
  double lat = 0;
};

}  // namespace

template <>
struct agentkit::Describe<Unit> {
  static constexpr std::string_view name = "Unit";
  static constexpr auto values = agentkit::enum_values<Unit>({{Unit::celsius, "celsius"}, {Unit::fahrenheit, "fahrenheit"}});
};
template <>
struct agentkit::Describe<Place> {
  static constexpr std::string_view name = "Place";
  static constexpr auto fields = std::tuple{agentkit::field("city", &Place::city), agentkit::field("lat", &Place::lat)};
};

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

TEST_CASE("Function, REST and MCP tools report bad enum values and nested fields alike", "[validation]") {
  // Property names sort in declaration order, so the MCP server's (sorted)
  // schema lists them as the function and REST tools declare them.
  std::atomic<int> function_runs{0};
  ToolPtr function = agentkit::tool("schedule")
                         .doc("Schedule readings in a unit on the given days.")
                         .side_effecting(false)
                         .params("days", "unit")
                         .fn([&](const std::vector<int>&, Unit) {
                           ++function_runs;
                           return std::string("ok");
                         });
  ToolPtr trip = agentkit::tool("trip")
                     .doc("Plan a trip to a place for a number of days.")
                     .side_effecting(false)
                     .params("days", "where")
                     .fn([&](int, const Place&) {
                       ++function_runs;
                       return std::string("ok");
                     });
  WireServer rest_server;
  ToolPtr rest = rest_tool("schedule")
                     .description("Schedule readings in a unit on the given days, from the service.")
                     .side_effecting(false)
                     .endpoint("GET", rest_server.base_url() + "/schedule")
                     .query("days", "Which days", {.type = ParamType::array, .items = ParamType::integer})
                     .query("unit", "The unit", {.allowed = {"celsius", "fahrenheit"}})
                     .build();
  const Json schedule_schema = {
      {"type", "object"},
      {"properties",
       {{"days", {{"type", "array"}, {"items", {{"type", "integer"}}}}},
        {"unit", {{"type", "string"}, {"enum", {"celsius", "fahrenheit"}}}}}},
      {"required", {"days", "unit"}},
      {"additionalProperties", false}};
  const Json trip_schema = {
      {"type", "object"},
      {"properties",
       {{"days", {{"type", "integer"}}},
        {"where",
         {{"type", "object"},
          {"properties", {{"city", {{"type", "string"}}}, {"lat", {{"type", "number"}}}}},
          {"required", {"city", "lat"}},
          {"additionalProperties", false}}}}},
      {"required", {"days", "where"}},
      {"additionalProperties", false}};
  ForecastServer mcp_server(Json::array(
      {{{"name", "schedule"}, {"description", "Schedule readings."}, {"inputSchema", schedule_schema}},
       {{"name", "trip"}, {"description", "Plan a trip."}, {"inputSchema", trip_schema}}}));
  McpClient client(make_http_transport(McpHttpServer{.url = mcp_server.server.base_url() + "/mcp"}));
  client.connect();
  const ToolPtr mcp_schedule = mcp_tool(client, "schedule");
  const ToolPtr mcp_trip = mcp_tool(client, "trip");

  SECTION("a bad enum value, a wrong-typed array item, a non-string enum") {
    for (const Json& bad : {Json{{"days", {1, "2", 3}}, {"unit", "kelvin"}},  // days[1], and the enum
                            Json{{"days", Json::array({1})}, {"unit", 3}},                  // an enum value of the wrong type
                            Json{{"days", "3"}, {"unit", "celsius"}}}) {      // not an array
      check_same_errors({function, rest, mcp_schedule}, bad);
    }
    const auto e = error_of(function, Json{{"days", {1, "2", 3}}, {"unit", "kelvin"}}, true);
    REQUIRE(e.invalid().size() == 2);
    CHECK(e.invalid()[0].name == "days[1]");
    CHECK(e.invalid()[0].reason == "expected integer, got string '2'");
    CHECK(e.invalid()[1].name == "unit");
    CHECK(e.invalid()[1].reason == "expected one of ['celsius', 'fahrenheit'], got 'kelvin'");
    CHECK(error_of(function, Json{{"days", Json::array({1})}, {"unit", 3}}, false).invalid().at(0).reason ==
          "expected string, got integer 3");
  }
  SECTION("nested fields: wrong type, unknown and missing, all at once") {
    for (const Json& bad : {Json{{"days", 2}, {"where", {{"city", 3}, {"zip", "1000"}}}},
                            Json{{"days", "2"}, {"where", "Lisbon"}},
                            Json{{"days", 2}, {"where", {{"city", "Lisbon"}, {"lat", "38.7"}}}}}) {
      check_same_errors({trip, mcp_trip}, bad);
    }
    const auto e = error_of(trip, Json{{"days", 2}, {"where", {{"city", 3}, {"zip", "1000"}}}}, true);
    REQUIRE(e.invalid().size() == 3);
    CHECK(e.invalid()[0].name == "where");
    CHECK(e.invalid()[0].reason == "unexpected field 'zip'");
    CHECK(e.invalid()[1].name == "where.city");
    CHECK(e.invalid()[1].reason == "expected string, got integer 3");
    CHECK(e.invalid()[2].name == "where");
    CHECK(e.invalid()[2].reason == "missing required field 'lat'");
    CHECK(error_of(trip, Json{{"days", "2"}, {"where", "Lisbon"}}, false).invalid().size() == 2);  // both at once
  }
  CHECK(function_runs == 0);
  CHECK(rest_server.requests().empty());
  CHECK(mcp_server.calls == 0);
}
