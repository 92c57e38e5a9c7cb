// Tools as data (spec 002's Serialization): every kind saves to a JSON entry
// and loads back into an equivalent tool. REST tools send the same requests
// to a loopback WireServer; function tools rebind by name (or load as a
// skeleton whose call is a model-visible error); MCP entries connect to a
// stdio server the test writes; agent entries name a registered agent.
// Bad descriptions are ToolDataErrors naming the JSON path.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/agent_data.h>
#include <agentkit/function_tool.h>
#include <agentkit/invoker.h>
#include <agentkit/providers/tool_data.h>
#include <agentkit/testing/wire_server.h>
#include <agentkit/tool_data.h>

using agentkit::ErrorCode;
using agentkit::Json;
using agentkit::RunContext;
using agentkit::ToolCatalog;
using agentkit::ToolDataError;
using agentkit::ToolDataReader;
using agentkit::expand_env;
using agentkit::is_valid_utf8;
using agentkit::ToolPtr;
using agentkit::ToolRequest;
using agentkit::ToolResult;
using agentkit::providers::ParamIn;
using agentkit::providers::ParamType;
using agentkit::providers::RestParam;
using agentkit::providers::RestToolDefinition;
using agentkit::testing::WireServer;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct EnvVar {
  EnvVar(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~EnvVar() { ::unsetenv(name_); }
  const char* name_;
};

ToolResult invoke(const ToolPtr& tool, Json arguments) {
  RunContext ctx;
  const agentkit::Invoker invoker({agentkit::error_boundary()});
  return invoker.invoke_tool(ToolRequest{.call_id = "c1", .name = tool->name(), .arguments = std::move(arguments), .tool = tool},
                             ctx);
}

// What the model and the middleware see of a tool.
void check_same_spec(const agentkit::Tool& a, const agentkit::Tool& b) {
  CHECK(a.name() == b.name());
  CHECK(a.description() == b.description());
  REQUIRE(a.spec().parameters.has_value() == b.spec().parameters.has_value());
  // Compared as plain JSON: a saved schema's keys come back sorted.
  if (a.spec().parameters) CHECK(Json::parse(a.spec().parameters->dump()) == Json::parse(b.spec().parameters->dump()));
  CHECK(a.side_effecting() == b.side_effecting());
  CHECK(a.idempotent() == b.idempotent());
  CHECK(a.requires_approval() == b.requires_approval());
}

// Every field of a definition set away from its default.
RestToolDefinition refund_definition(const WireServer& server) {
  RestToolDefinition d;
  d.name = "refund_order";
  d.description = "Refund part or all of a customer order; returns the refund record.";
  d.side_effecting = true;
  d.idempotent = true;
  d.approve_if = "amount_cents > 10000";
  d.tags = {"billing", "refunds"};
  d.method = "POST";
  d.url = server.base_url() + "/v1/orders/{order_id}/refunds";
  d.params = {
      RestParam{"order_id", ParamIn::path, "The order to refund", {}},
      RestParam{"amount_cents", ParamIn::body, "How much to refund, in cents", {.type = ParamType::integer}},
      RestParam{"reason", ParamIn::body, "Why", {.required = false, .allowed = {"damaged", "late"}}},
      RestParam{"notify", ParamIn::query, "Email the customer", {.type = ParamType::boolean, .default_value = true}},
      RestParam{"skus", ParamIn::body, "Items", {.type = ParamType::array, .items = ParamType::string, .required = false}},
  };
  d.headers = {{"Authorization", "Bearer ${TOOL_DATA_TOKEN}"}, {"X-Client", "agentkit"}};
  d.timeout = 2500ms;
  d.retries = 2;
  d.retry_delay = 10ms;
  d.max_retry_delay = 1s;
  d.max_redirects = 3;
  d.max_response_bytes = 4096;
  return d;
}

ToolCatalog& catalog_with_kinds(ToolCatalog& catalog) {
  agentkit::providers::register_provider_kinds(catalog);
  return catalog;
}

}  // namespace

// -------------------------------------------------------------------- REST

TEST_CASE("tool data: a REST tool saved and loaded again is the same tool and sends the same requests",
          "[tool_data][rest]") {
  WireServer server;
  ToolCatalog catalog;
  catalog_with_kinds(catalog);
  auto original = std::make_shared<const agentkit::providers::RestTool>(refund_definition(server));

  const Json saved = catalog.save(*original);
  const Json& body = saved.at("rest");
  CHECK(body.at("headers").at("Authorization") == "Bearer ${TOOL_DATA_TOKEN}");  // not expanded
  CHECK(body.at("approve_if") == "amount_cents > 10000");
  CHECK(body.at("timeout_s") == 2.5);
  CHECK(body.at("params").at(1).at("type") == "integer");

  const std::vector<ToolPtr> loaded = catalog.load(saved);
  REQUIRE(loaded.size() == 1);
  check_same_spec(*original, *loaded[0]);
  CHECK(catalog.save(*loaded[0]) == saved);  // canonical: a second round trip changes nothing
  RunContext ctx;
  CHECK(loaded[0]->requires_approval_for({{"order_id", "A-1"}, {"amount_cents", 20000}}, ctx));
  CHECK_FALSE(loaded[0]->requires_approval_for({{"order_id", "A-1"}, {"amount_cents", 500}}, ctx));

  const EnvVar token("TOOL_DATA_TOKEN", "s3cret-token");
  const Json arguments = {{"order_id", "A 1"}, {"amount_cents", 1200}, {"reason", "late"}, {"skus", {"x", "y"}}};
  server.enqueue({.status = 200, .headers = {{"content-type", "application/json"}}, .body = R"({"ok":true})"});
  server.enqueue({.status = 200, .headers = {{"content-type", "application/json"}}, .body = R"({"ok":true})"});
  CHECK(invoke(original, arguments).status == ToolResult::Status::ok);
  CHECK(invoke(loaded[0], arguments).status == ToolResult::Status::ok);
  const auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].method == requests[1].method);
  CHECK(requests[0].path == requests[1].path);
  CHECK(requests[1].path == "/v1/orders/A%201/refunds?notify=true");
  CHECK(Json::parse(requests[0].body) == Json::parse(requests[1].body));
  CHECK(requests[1].header("authorization") == "Bearer s3cret-token");
  CHECK(requests[1].header("x-client") == "agentkit");
}

TEST_CASE("tool data: a canonical REST entry loads and saves back to the same JSON", "[tool_data][rest]") {
  ToolCatalog catalog;
  catalog_with_kinds(catalog);
  const Json entry = Json::parse(R"({"rest": {
      "name": "get_weather", "description": "Current weather for a city, as JSON from the weather API.",
      "method": "GET", "url": "https://api.example.com/v1/weather/{city}",
      "side_effecting": false, "idempotent": false, "requires_approval": true,
      "params": [{"name": "city", "in": "path", "description": "City name", "type": "string", "required": true},
                 {"name": "units", "in": "query", "description": "Units", "type": "string", "required": false,
                  "enum": ["metric", "imperial"], "default": "metric"}],
      "headers": {"X-Key": "${WEATHER_KEY}"},
      "timeout_s": 30, "retries": 1, "retry_delay_s": 0.2, "max_retry_delay_s": 10,
      "max_redirects": 5, "max_response_bytes": 1048576}})");
  const auto tools = catalog.load(entry);
  REQUIRE(tools.size() == 1);
  CHECK(tools[0]->requires_approval());
  CHECK(catalog.save(*tools[0]) == entry);
}

TEST_CASE("tool data: a REST tool whose approval rule is C++ code cannot be saved", "[tool_data][rest]") {
  WireServer server;
  ToolCatalog catalog;
  catalog_with_kinds(catalog);
  RestToolDefinition d = refund_definition(server);
  d.approve_if.clear();
  d.approval_when = [](const Json&, const RunContext&) { return true; };
  const agentkit::providers::RestTool tool(d);
  try {
    catalog.save(tool);
    FAIL("saved a tool whose rule is a C++ function");
  } catch (const ToolDataError& e) {
    CHECK(e.code() == ErrorCode::unimplemented);
    CHECK_THAT(e.what(), Catch::Contains("approval rule written in C++"));
  }
}

TEST_CASE("tool data: a bad description is refused with the JSON path of the value at fault", "[tool_data][errors]") {
  ToolCatalog catalog;
  catalog_with_kinds(catalog);
  const auto error_of = [&](const Json& entries) -> std::string {
    try {
      catalog.load_all(entries, "/tools");
    } catch (const ToolDataError& e) {
      CHECK(e.code() == ErrorCode::invalid_argument);
      return e.what();
    }
    return "(loaded)";
  };
  const Json ok = {{"rest",
                    {{"name", "ping"},
                     {"description", "Checks that the service answers and returns its status."},
                     {"url", "https://api.example.com/ping"},
                     {"side_effecting", false}}}};
  Json bad_type = ok;
  bad_type["rest"]["params"] = {{{"name", "n"}, {"description", "A number"}, {"type", "integr"}}};
  CHECK(error_of(Json::array({ok, ok, bad_type})) ==
        "/tools/2/rest/params/0/type: must be one of string, integer, number, boolean, array, object, not 'integr'");
  Json unknown = ok;
  unknown["rest"]["colour"] = "red";
  CHECK_THAT(error_of(Json::array({unknown})), Catch::StartsWith("/tools/0/rest/colour: unknown key; accepted keys: approve_if,"));
  Json no_effects = ok;
  no_effects["rest"].erase("side_effecting");
  CHECK_THAT(error_of(Json::array({no_effects})), Catch::StartsWith("/tools/0/rest: missing required key 'side_effecting'"));
  Json rule = ok;
  rule["rest"]["approve_if"] = "amount >";
  CHECK(error_of(Json::array({rule})) == "/tools/0/rest/approve_if: at column 9: expected a value after '>'");
  Json bad_url = ok;
  bad_url["rest"]["url"] = "https://{host}/ping";
  CHECK_THAT(error_of(Json::array({bad_url})), Catch::Contains("/tools/0/rest: REST tool 'ping': placeholders are allowed only after"));
  CHECK_THAT(error_of(Json::array({Json{{"soap", Json::object()}}})),
             Catch::StartsWith("/tools/0/soap: unknown tool kind; known kinds: function, mcp, rest"));
  CHECK_THAT(error_of(Json::array({Json{{"rest", ok["rest"]}, {"mcp", Json::object()}}})),
             Catch::StartsWith("/tools/0: a tool entry is an object with exactly one key"));
  CHECK_THAT(error_of(Json{{"rest", ok["rest"]}}), Catch::StartsWith("/tools: must be a list of tool entries, not {"));
  Json mcp = {{"mcp", {{"name", "fs"}, {"command", "npx"}, {"url", "http://127.0.0.1:1/mcp"}}}};
  CHECK(error_of(Json::array({mcp})) == "/tools/0/mcp: needs exactly one of 'command' (a stdio server) and 'url' (Streamable HTTP)");
  mcp = {{"mcp", {{"name", "fs"}, {"command", "npx"}, {"args", {"-y", 8080}}}}};
  CHECK(error_of(Json::array({mcp})) == "/tools/0/mcp/args/1: must be a string, not 8080");
}

TEST_CASE("tool data: a value of ill-formed UTF-8 in an error message is shown, not thrown as a JSON error",
          "[tool_data][errors]") {
  // A YAML or JSON reader may hand over any bytes; the message shows them
  // replaced (nlohmann's dump() of them throws type_error 316).
  ToolCatalog catalog;
  catalog_with_kinds(catalog);
  const std::string bad = "order \xFF\xFE to re\x9D" + std::string(60, 'x');
  const Json base = {{"rest",
                      {{"name", "refund"},
                       {"description", "Refunds an order and returns the refund record."},
                       {"url", "https://pay.example.com/refunds"},
                       {"side_effecting", true}}}};
  for (const auto& [key, value] : std::vector<std::pair<std::string, Json>>{
           {"params", bad}, {"requires_approval", bad}, {"approve_if", Json::array({bad})}, {"name", Json::array({bad})}}) {
    Json entry = base;
    entry["rest"][key] = value;
    try {
      catalog.load_all(Json::array({entry}), "/tools");
      FAIL("loaded with " << key);
    } catch (const ToolDataError& e) {
      const std::string message = e.what();
      CHECK_THAT(message, Catch::StartsWith("/tools/0/rest/" + key + ": "));
      CHECK(is_valid_utf8(message));
    }
  }
  // A cut at the length limit never splits a character.
  const std::string shown = ToolDataReader::shown(Json(std::string(31, 'a') + "\u00e9\u00e9\u00e9\u00e9\u00e9"));
  CHECK(shown.size() <= 40);
  CHECK(is_valid_utf8(shown));
  CHECK_THAT(shown, Catch::EndsWith("..."));
}

TEST_CASE("tool data: expand_env reads each variable and names, never shows, a missing one", "[tool_data][env]") {
  const EnvVar token("AGENTKIT_TEST_ENV_TOKEN", "s3cret");
  const EnvVar host("AGENTKIT_TEST_ENV_HOST", "shop.local");
  ::unsetenv("AGENTKIT_TEST_ENV_MISSING");
  CHECK(expand_env("Bearer ${AGENTKIT_TEST_ENV_TOKEN} at ${AGENTKIT_TEST_ENV_HOST}!", "/h") ==
        "Bearer s3cret at shop.local!");
  CHECK(expand_env("no placeholders, a lone $ and ${unterminated", "/h") == "no placeholders, a lone $ and ${unterminated");
  try {
    expand_env("${AGENTKIT_TEST_ENV_TOKEN}:${AGENTKIT_TEST_ENV_MISSING}", "/tools/0/mcp/env/KEY");
    FAIL("expanded a missing variable");
  } catch (const ToolDataError& e) {
    CHECK(e.path() == "/tools/0/mcp/env/KEY");
    CHECK(e.problem() == "environment variable 'AGENTKIT_TEST_ENV_MISSING' is not set");
    CHECK(std::string(e.what()).find("s3cret") == std::string::npos);
  }
  const EnvVar empty("AGENTKIT_TEST_ENV_MISSING", "");
  CHECK_THROWS_AS(expand_env("${AGENTKIT_TEST_ENV_MISSING}", "/h"), ToolDataError);
}

// --------------------------------------------------------------- functions

TEST_CASE("tool data: a function tool rebinds by its registered name", "[tool_data][function]") {
  ToolCatalog catalog;
  ToolPtr lookup = agentkit::tool("lookup_order")
                       .doc("Look up an order's current status and its total amount.")
                       .side_effecting(false)
                       .params("order_id")
                       .fn([](const std::string& id) { return "order " + id + ": shipped"; });
  catalog.add_function(lookup);

  const Json saved = catalog.save(*lookup);
  CHECK(saved.at("function").at("name") == "lookup_order");
  CHECK(saved.at("function").at("parameters") == Json::parse(lookup->spec().parameters->dump()));
  CHECK(catalog.load(saved).at(0) == lookup);  // the live tool, callable
  CHECK(catalog.load(Json{{"function", {{"name", "lookup_order"}}}}).at(0) == lookup);
  CHECK(invoke(catalog.load(saved).at(0), {{"order_id", "A-1"}}).value == "order A-1: shipped");
  CHECK_THROWS_AS(catalog.add_function(lookup), agentkit::ToolDefinitionError);
}

TEST_CASE("tool data: an unregistered function name loads as a skeleton whose call is a model-visible error",
          "[tool_data][function]") {
  ToolPtr lookup = agentkit::tool("lookup_order")
                       .doc("Look up an order's current status and its total amount.")
                       .side_effecting(false)
                       .params("order_id")
                       .fn([](const std::string& id) { return "order " + id + ": shipped"; });
  ToolCatalog writer;
  writer.add_function(lookup);
  const Json saved = writer.save(*lookup);

  ToolCatalog reader;  // another process: nothing registered
  const std::vector<ToolPtr> tools = reader.load(saved);
  REQUIRE(tools.size() == 1);
  check_same_spec(*lookup, *tools[0]);
  const ToolResult result = invoke(tools[0], {{"order_id", "A-1"}});
  CHECK(result.status == ToolResult::Status::error);
  CHECK_THAT(result.text, Catch::Contains("No function attached to tool 'lookup_order'"));
  CHECK(reader.save(*tools[0]) == saved);

  ToolCatalog strict({.strict = true});
  try {
    strict.load(saved, "/tools/0");
    FAIL("a strict catalog loaded an unregistered function");
  } catch (const ToolDataError& e) {
    CHECK(e.code() == ErrorCode::not_found);
    CHECK(e.path() == "/tools/0/function/name");
  }
}

TEST_CASE("tool data: a tool with no description cannot be saved", "[tool_data][function]") {
  ToolCatalog catalog;
  ToolPtr lookup = agentkit::tool("lookup_order")
                       .doc("Look up an order's current status and its total amount.")
                       .side_effecting(false)
                       .params("order_id")
                       .fn([](const std::string& id) { return id; });
  try {
    catalog.save(*lookup);
    FAIL("saved an unregistered C++ tool");
  } catch (const ToolDataError& e) {
    CHECK(e.code() == ErrorCode::unimplemented);
    CHECK_THAT(e.what(), Catch::Contains("ToolCatalog::add_function"));
  }
}

// --------------------------------------------------------------------- MCP

namespace {

// A stdio MCP server in POSIX sh with three tools.
const char* const kShopServer = R"(while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/^{"id":\([0-9][0-9]*\),.*/\1/p')
  [ -z "$id" ] && continue
  case "$line" in
    *'"method":"initialize"'*) result='{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"shop","version":"1.0"}}' ;;
    *'"method":"tools/list"'*) result='{"tools":[{"name":"get_order","description":"Look up a customer order by id.","inputSchema":{"type":"object","properties":{"order_id":{"type":"string"}}}},{"name":"refund","description":"Refund part of a customer order.","inputSchema":{"type":"object","properties":{"amount_usd":{"type":"number"}}}},{"name":"delete_everything","description":"Delete every order in the shop.","inputSchema":{"type":"object","properties":{}}}]}' ;;
    *'"method":"tools/call"'*) result='{"content":[{"type":"text","text":"done"}]}' ;;
    *) result='{}' ;;
  esac
  printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$id" "$result"
done
)";

struct ScriptFile {
  fs::path path = fs::temp_directory_path() / ("agentkit_tool_data_" + std::to_string(::getpid()) + ".sh");
  ScriptFile() { std::ofstream(path) << kShopServer; }
  ~ScriptFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

}  // namespace

TEST_CASE("tool data: canonical MCP entries read and write back unchanged", "[tool_data][mcp]") {
  const Json stdio = Json::parse(R"({"name": "shop", "command": "node", "args": ["shop.mjs"],
      "env": {"TOKEN": "${SHOP_TOKEN}"}, "inherit_env": ["LANG"], "cwd": "/srv/shop", "timeout_s": 20,
      "include": ["get_*", "refund"], "exclude": ["delete_*"], "requires_approval": ["get_order"],
      "approve_if": {"refund": "amount_usd > 100"}})");
  const auto server = agentkit::providers::mcp_from_json(stdio);
  REQUIRE(server.stdio);
  CHECK(server.stdio->env.at(0).second == "${SHOP_TOKEN}");
  CHECK(agentkit::providers::mcp_to_json(server) == stdio);
  const Json http = Json::parse(R"({"name": "search", "url": "http://127.0.0.1:3001/mcp",
      "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}, "timeout_s": 60})");
  CHECK(agentkit::providers::mcp_to_json(agentkit::providers::mcp_from_json(http)) == http);
  // true: every tool waits, written back as the pattern that says so.
  const Json all = {{"name", "fs"}, {"command", "fs-server"}, {"requires_approval", true}};
  CHECK(agentkit::providers::mcp_to_json(agentkit::providers::mcp_from_json(all)).at("requires_approval") ==
        Json::array({"*"}));
}

TEST_CASE("tool data: an MCP entry yields the server's tools, and each of them saves as the server's entry",
          "[tool_data][mcp]") {
  const ScriptFile script;
  ToolCatalog catalog;
  catalog_with_kinds(catalog);
  const Json entry = {{"mcp",
                       {{"name", "shop"},
                        {"command", "sh"},
                        {"args", {script.path.string()}},
                        {"timeout_s", 20},
                        {"exclude", {"delete_*"}},
                        {"approve_if", {{"refund", "amount_usd > 100"}}}}}};
  const std::vector<ToolPtr> tools = catalog.load(entry);
  REQUIRE(tools.size() == 2);
  CHECK(tools[0]->name() == "shop_get_order");
  CHECK(tools[1]->name() == "shop_refund");
  RunContext ctx;
  CHECK(tools[1]->requires_approval_for({{"amount_usd", 250}}, ctx));
  CHECK_FALSE(tools[1]->requires_approval_for({{"amount_usd", 40}}, ctx));
  CHECK(invoke(tools[0], {{"order_id", "A-1"}}).status == ToolResult::Status::ok);

  CHECK(catalog.save(*tools[0]) == entry);
  CHECK(catalog.save(*tools[1]) == entry);
  CHECK(catalog.save_all(tools) == Json::array({entry}));

  Json typo = entry;
  typo["mcp"]["approve_if"] = {{"refnd", "amount_usd > 100"}};
  try {
    catalog.load(typo, "/tools/3");
    FAIL("a pattern naming no tool was accepted");
  } catch (const ToolDataError& e) {
    CHECK(std::string(e.what()) == "/tools/3/mcp: MCP server 'shop': approve_if 'refnd' names none of the tools the "
                                   "agent gets (get_order, refund)");
  }
}

// ------------------------------------------------------------------- agent

TEST_CASE("tool data: an agent entry names a registered agent and saves back unchanged", "[tool_data][agent]") {
  auto researcher = std::make_shared<const agentkit::Agent>("researcher", "fake", "You research cities.");
  ToolCatalog catalog;
  agentkit::register_agent_kind(catalog, {.agents = {{"researcher", researcher}}});
  const Json entry = Json::parse(R"({"agent": {"agent": "researcher", "name": "research",
      "description": "Delegate a research sub-task and get a summary back.", "side_effecting": false}})");
  const auto tools = catalog.load(entry);
  REQUIRE(tools.size() == 1);
  CHECK(tools[0]->name() == "research");
  CHECK_FALSE(tools[0]->side_effecting());
  CHECK(tools[0]->spec().parameters->at("required") == Json::array({"task"}));
  CHECK(catalog.save(*tools[0]) == entry);

  Json unknown = entry;
  unknown["agent"]["agent"] = "reseacher";
  CHECK_THROWS_WITH(catalog.load(unknown), "/agent/agent: no agent named 'reseacher' is registered");
  Json no_effects = entry;
  no_effects["agent"].erase("side_effecting");
  CHECK_THROWS_WITH(catalog.load(no_effects), Catch::StartsWith("/agent: missing required key 'side_effecting'"));
  Json file = entry;
  file["agent"].erase("agent");
  file["agent"]["file"] = "researcher.yaml";
  CHECK_THROWS_WITH(catalog.load(file), "/agent/file: agent files are not read here (AgentKindOptions::load_file)");
}
