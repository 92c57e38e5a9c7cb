// REST tools against loopback WireServers: request mapping, argument
// validation, environment secrets, statuses, timeouts, retries, redirects and
// the egress allowlist on every hop.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <agentkit/egress.h>
#include <agentkit/errors.h>
#include <agentkit/invoker.h>
#include <agentkit/providers/rest_tool.h>
#include <agentkit/testing/wire_server.h>

using agentkit::EgressAllowlist;
using agentkit::Json;
using agentkit::RunContext;
using agentkit::ToolArgumentError;
using agentkit::ToolDefinitionError;
using agentkit::ToolPtr;
using agentkit::ToolRequest;
using agentkit::ToolResult;
using agentkit::providers::ParamType;
using agentkit::providers::rest_tool;
using agentkit::providers::RestParam;
using agentkit::providers::RestToolDefinition;
using agentkit::testing::WireServer;
using Status = agentkit::ToolResult::Status;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kDescription = "Look up the current weather for a city from the weather service.";

WireServer::Response reply(int status, std::string body = "", std::vector<std::pair<std::string, std::string>> headers = {}) {
  WireServer::Response r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

WireServer::Response json_reply(int status, const Json& body) {
  return reply(status, body.dump(), {{"content-type", "application/json"}});
}

WireServer::Response redirect(int status, std::string location) {
  return reply(status, "", {{"location", std::move(location)}});
}

// error_boundary outermost, then the allowlist (when given), as a host would chain them.
struct Harness {
  explicit Harness(std::vector<std::string> allowed = {}) {
    std::vector<agentkit::Middleware> chain{agentkit::error_boundary()};
    if (!allowed.empty()) {
      std::vector<agentkit::EgressRule> rules;
      for (const auto& origin : allowed) rules.push_back(agentkit::EgressRule::parse(origin));
      chain.push_back(agentkit::egress_allowlist(std::make_shared<const EgressAllowlist>(std::move(rules))));
    }
    invoker = std::make_shared<agentkit::Invoker>(std::move(chain));
    ctx.logger = std::make_shared<spdlog::logger>("rest_tool_test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
    ctx.logger->set_level(spdlog::level::debug);
  }

  ToolResult invoke(const ToolPtr& tool, Json arguments) {
    return invoker->invoke_tool(
        ToolRequest{.call_id = "c1", .name = tool->name(), .arguments = std::move(arguments), .tool = tool}, ctx);
  }

  std::shared_ptr<agentkit::Invoker> invoker;
  RunContext ctx;
  std::ostringstream log;
};

// A read-only GET on `server` with one path parameter.
std::shared_ptr<const agentkit::providers::RestTool> weather(const WireServer& server, int retries = 0) {
  return rest_tool("weather")
      .description(kDescription)
      .side_effecting(false)
      .endpoint("GET", server.base_url() + "/v1/cities/{city}")
      .path("city", "City name")
      .retries(retries, 1ms)
      .timeout(5s)
      .build();
}

// A side-effecting POST on `server`.
auto refund(const WireServer& server, bool idempotent = false, int retries = 0) {
  return rest_tool("refund")
      .description("Refund part or all of a customer order and return the refund record.")
      .side_effecting(true)
      .idempotent(idempotent)
      .endpoint("POST", server.base_url() + "/v1/orders/{order_id}/refunds")
      .path("order_id", "The order to refund")
      .body("amount_cents", "Amount to refund, in cents", {.type = ParamType::integer})
      .body("note", "A note for the customer", {.required = false})
      .retries(retries, 1ms)
      .timeout(5s)
      .build();
}

struct EnvVar {
  EnvVar(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~EnvVar() { ::unsetenv(name_); }
  const char* name_;
};

}  // namespace

// ------------------------------------------------------------ request mapping

TEST_CASE("REST tool: path values are percent-encoded, query parameters mapped with defaults and arrays",
          "[rest]") {
  WireServer server;
  server.enqueue(json_reply(200, {{"temp_c", 21.5}}));
  auto tool = rest_tool("forecast")
                  .description(kDescription)
                  .side_effecting(false)
                  .endpoint("get", server.base_url() + "/v1/cities/{city}/forecast?source=station")
                  .path("city", "City name")
                  .query("units", "Temperature units", {.allowed = {"metric", "imperial"}})
                  .query("days", "How many days", {.type = ParamType::integer, .default_value = 3})
                  .query("tag", "Filters", {.type = ParamType::array, .required = false})
                  .query("verbose", "More detail", {.type = ParamType::boolean, .required = false})
                  .build();
  Harness h;
  auto result = h.invoke(tool, {{"city", "São Paulo/../x"}, {"units", "metric"}, {"tag", {"a b", "c&d=e"}}});
  REQUIRE(result.status == Status::ok);
  auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].method == "GET");
  CHECK(requests[0].path ==
        "/v1/cities/S%C3%A3o%20Paulo%2F..%2Fx/forecast?source=station&units=metric&days=3&tag=a%20b&tag=c%26d%3De");
  CHECK(requests[0].body.empty());
  CHECK(result.value["output"] == Json{{"temp_c", 21.5}});
  CHECK(result.value["metadata"]["status"] == 200);
  CHECK(result.value["metadata"]["content_type"] == "application/json");
  CHECK(result.value["metadata"]["attempts"] == 1);
  CHECK(result.value["metadata"]["redirects"] == 0);
  CHECK(result.value["metadata"]["url"] == server.base_url() + requests[0].path);
}

TEST_CASE("REST tool: body parameters become one JSON object, absent optional ones are left out", "[rest]") {
  WireServer server;
  server.enqueue(json_reply(201, {{"refund_id", "r-1"}}));
  server.enqueue(json_reply(201, {{"refund_id", "r-2"}}));
  auto tool = refund(server);
  Harness h;
  auto first = h.invoke(tool, {{"order_id", "o-7"}, {"amount_cents", 500}});
  auto second = h.invoke(tool, {{"order_id", "o-8"}, {"amount_cents", 1}, {"note", "sorry"}});
  REQUIRE(first.status == Status::ok);
  REQUIRE(second.status == Status::ok);
  auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].method == "POST");
  CHECK(requests[0].path == "/v1/orders/o-7/refunds");
  CHECK(Json::parse(requests[0].body) == Json{{"amount_cents", 500}});
  CHECK(requests[0].header("content-type") == "application/json");
  CHECK(Json::parse(requests[1].body) == Json{{"amount_cents", 1}, {"note", "sorry"}});
  CHECK(first.value["output"]["refund_id"] == "r-1");
  CHECK(first.value["metadata"]["status"] == 201);
}

TEST_CASE("REST tool: text and mislabelled bodies come back as text, an empty body as null", "[rest]") {
  WireServer server;
  server.enqueue(reply(200, "sunny", {{"content-type", "text/plain"}}));
  server.enqueue(reply(200, "{not json", {{"content-type", "application/json"}}));
  server.enqueue(reply(204));
  server.enqueue(reply(200, "caf\xe9", {{"content-type", "text/plain; charset=latin1"}}));
  auto tool = weather(server);
  Harness h;
  CHECK(h.invoke(tool, {{"city", "Lisbon"}}).value["output"] == "sunny");
  CHECK(h.invoke(tool, {{"city", "Lisbon"}}).value["output"] == "{not json");
  auto empty = h.invoke(tool, {{"city", "Lisbon"}});
  CHECK(empty.value["output"].is_null());
  CHECK(empty.value["metadata"]["status"] == 204);
  // Invalid UTF-8 is replaced, so the result can always be serialised.
  auto latin1 = h.invoke(tool, {{"city", "Lisbon"}});
  CHECK(latin1.value["output"] == "caf\xef\xbf\xbd");
  CHECK_NOTHROW(latin1.value.dump());
}

TEST_CASE("REST tool: the advertised schema and spec come from the declaration", "[rest]") {
  WireServer server;
  auto tool = rest_tool("forecast")
                  .description(kDescription)
                  .side_effecting(false)
                  .idempotent()
                  .endpoint("GET", server.base_url() + "/v1/{city}")
                  .path("city", "City name")
                  .query("units", "Temperature units", {.default_value = "metric", .allowed = {"metric", "imperial"}})
                  .query("ids", "Station ids", {.type = ParamType::array, .items = ParamType::integer, .required = false})
                  .build();
  const auto& spec = tool->spec();
  CHECK(spec.name == "forecast");
  CHECK(spec.description == kDescription);
  CHECK_FALSE(spec.effects.side_effecting);
  CHECK(spec.effects.idempotent);
  CHECK(spec.metadata["url"] == server.base_url());
  CHECK(spec.metadata["method"] == "GET");
  REQUIRE(spec.parameters);
  const auto params = Json(*spec.parameters);
  CHECK(params["type"] == "object");
  CHECK(params["required"] == Json::array({"city"}));
  CHECK(params["properties"]["city"] == Json{{"type", "string"}, {"description", "City name"}});
  CHECK(params["properties"]["units"]["enum"] == Json::array({"metric", "imperial"}));
  CHECK(params["properties"]["units"]["default"] == "metric");
  CHECK(params["properties"]["ids"]["items"] == Json{{"type", "integer"}});
}

// ------------------------------------------------------------ argument errors

TEST_CASE("REST tool: every argument problem is reported at once and nothing is sent", "[rest]") {
  WireServer server;
  auto tool = rest_tool("forecast")
                  .description(kDescription)
                  .side_effecting(false)
                  .endpoint("GET", server.base_url() + "/v1/{city}/{day}")
                  .path("city", "City name")
                  .path("day", "Day offset", {.type = ParamType::integer})
                  .query("units", "Temperature units", {.allowed = {"metric", "imperial"}})
                  .query("limit", "At most this many", {.type = ParamType::integer, .required = false})
                  .build();
  RunContext ctx;
  try {
    tool->run({{"city", ".."}, {"units", "kelvin"}, {"limit", "3"}, {"colour", "red"}}, ctx);
    FAIL("expected ToolArgumentError");
  } catch (const ToolArgumentError& e) {
    CHECK(e.tool() == "forecast");
    CHECK(e.missing() == std::vector<std::string>{"day"});
    CHECK(e.unexpected() == std::vector<std::string>{"colour"});
    REQUIRE(e.invalid().size() == 3);
    CHECK(e.invalid()[0] == ToolArgumentError::Invalid{"city", "'..' is not allowed as a path segment"});
    CHECK(e.invalid()[1].name == "units");
    CHECK_THAT(e.invalid()[1].reason, Catch::Contains("expected one of ['metric', 'imperial'], got 'kelvin'"));
    CHECK(e.invalid()[2].name == "limit");
    CHECK_THAT(e.invalid()[2].reason, Catch::Contains("expected integer, got string '3'"));
    CHECK(e.accepted() == std::vector<std::string>{"city", "day", "units", "limit"});
  }
  CHECK_THROWS_AS(tool->run(Json::array({1}), ctx), ToolArgumentError);
  CHECK_THROWS_WITH(tool->run({{"city", ""}, {"day", 1}, {"units", "metric"}}, ctx), Catch::Contains("must not be empty"));
  CHECK(server.requests().empty());
}

// ---------------------------------------------------------- definition errors

TEST_CASE("REST tool: wiring mistakes are refused when the tool is built", "[rest]") {
  const std::string base = "http://127.0.0.1:9";
  auto error_of = [](auto&& build) -> std::string {
    try {
      build();
    } catch (const ToolDefinitionError& e) {
      return e.what();
    }
    return "";
  };
  auto get = [&](std::string url) {
    return rest_tool("t").description(kDescription).side_effecting(false).endpoint("GET", std::move(url));
  };
  CHECK_THAT(error_of([&] { get(base + "/v1/{id}").build(); }), Catch::Contains("'{id}' is not declared"));
  CHECK_THAT(error_of([&] { get(base + "/v1").path("id", "x").build(); }), Catch::Contains("has no '{id}'"));
  CHECK_THAT(error_of([&] { get("http://{host}.example.com/").build(); }), Catch::Contains("only after the host"));
  CHECK_THAT(error_of([&] { get("http://a@evil.example/").build(); }), Catch::Contains("credentials"));
  CHECK_THAT(error_of([&] { get("ftp://files.example/").build(); }), Catch::Contains("scheme 'ftp'"));
  CHECK_THAT(error_of([&] { get(base + "/v1{").build(); }), Catch::Contains("unterminated '{'"));
  CHECK_THAT(error_of([&] { get(base + "/v1").body("x", "y").build(); }), Catch::Contains("a GET has none"));
  CHECK_THAT(error_of([&] { get(base + "/{id}").path("id", "x", {.required = false}).build(); }),
             Catch::Contains("needs a value or a default"));
  CHECK_THAT(error_of([&] { get(base + "/").query("o", "x", {.type = ParamType::object}).build(); }),
             Catch::Contains("cannot be an object"));
  CHECK_THAT(error_of([&] { get(base + "/").query("n", "x", {.type = ParamType::integer, .default_value = "3"}).build(); }),
             Catch::Contains("default does not fit"));
  CHECK_THAT(error_of([&] { get(base + "/").header("Authorization", "Bearer ${1TOKEN}").build(); }),
             Catch::Contains("invalid environment variable name"));
  CHECK_THAT(error_of([&] { get(base + "/").header("X-A", "a\r\nX-B: b").build(); }), Catch::Contains("line break"));
  CHECK_THAT(error_of([&] { get(base + "/").header("Bad Name", "v").build(); }), Catch::Contains("invalid header name"));
  CHECK_THAT(error_of([&] {
               rest_tool("t").description(kDescription).side_effecting(false).endpoint("TRACE", base + "/").build();
             }),
             Catch::Contains("method 'TRACE'"));
  CHECK_THAT(error_of([&] { rest_tool("t").description("short").side_effecting(false).endpoint("GET", base).build(); }),
             Catch::Contains("30"));
  CHECK_THAT(error_of([&] { get(base + "/").query("a", "x").query("a", "y").build(); }), Catch::Contains("twice"));
  // A side-effecting, non-idempotent call must never be re-sent.
  CHECK_THAT(error_of([&] {
               rest_tool("t").description(kDescription).side_effecting(true).endpoint("POST", base).retries(1).build();
             }),
             Catch::Contains("retries would repeat a side-effecting call"));
  CHECK(error_of([&] {
          rest_tool("t").description(kDescription).side_effecting(true).idempotent().endpoint("POST", base).retries(1).build();
        }).empty());
}

TEST_CASE("REST tool: a definition from data must declare side_effecting, a GET is not assumed read-only", "[rest]") {
  RestToolDefinition def{.name = "weather", .description = kDescription, .method = "GET", .url = "http://127.0.0.1:9/"};
  CHECK_THROWS_WITH(agentkit::providers::RestTool(def), Catch::Contains("declare side_effecting"));
  def.side_effecting = false;
  CHECK_FALSE(agentkit::providers::RestTool(def).side_effecting());
  def.side_effecting = true;
  CHECK(agentkit::providers::RestTool(def).side_effecting());
}

// ------------------------------------------------------------------- secrets

TEST_CASE("REST tool: header variables are resolved per call and never leak into results, errors, logs or audit",
          "[rest][secrets]") {
  EnvVar token("AGENTKIT_TEST_REST_TOKEN", "tok-3f9a8c1d77");
  EnvVar key("AGENTKIT_TEST_REST_KEY", "key-55e0c2b1");
  WireServer server;
  // A careless server that echoes the credentials it was sent.
  server.set_handler([](const WireServer::Request& r) {
    const Json echo{{"saw", r.header("authorization") + " " + r.header("x-api-key")}};
    return json_reply(r.path.find("fail") != std::string::npos ? 401 : 200, echo);
  });
  auto tool = rest_tool("account")
                  .description("Read the account profile from the billing service.")
                  .side_effecting(false)
                  .endpoint("GET", server.base_url() + "/v1/{which}")
                  .path("which", "ok or fail")
                  .header("Authorization", "Bearer ${AGENTKIT_TEST_REST_TOKEN}")
                  .header("X-Api-Key", "${AGENTKIT_TEST_REST_KEY}")
                  .build();
  std::vector<agentkit::AuditRecord> audit;
  Harness h;
  h.invoker = std::make_shared<agentkit::Invoker>(std::vector<agentkit::Middleware>{
      agentkit::audit([&](const agentkit::AuditRecord& r) { audit.push_back(r); }), agentkit::error_boundary()});

  auto ok = h.invoke(tool, {{"which", "ok"}});
  auto failed = h.invoke(tool, {{"which", "fail"}});

  auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].header("authorization") == "Bearer tok-3f9a8c1d77");
  CHECK(requests[0].header("x-api-key") == "key-55e0c2b1");
  REQUIRE(ok.status == Status::ok);
  CHECK(ok.value["output"]["saw"] == "Bearer [redacted] [redacted]");
  REQUIRE(failed.status == Status::error);
  CHECK_THAT(failed.text, Catch::StartsWith("Tool failed: HTTP 401 from " + server.base_url() + "/v1/fail: "));
  std::string everything = ok.model_text() + failed.model_text() + h.log.str();
  for (const auto& r : audit) everything += r.text + r.arguments.dump();
  CHECK(audit.size() == 2);
  CHECK_THAT(everything, Catch::Contains("[redacted]"));
  CHECK_THAT(everything, !Catch::Contains("tok-3f9a8c1d77"));
  CHECK_THAT(everything, !Catch::Contains("key-55e0c2b1"));
}

TEST_CASE("REST tool: a missing variable is an error naming the variable, and nothing is sent", "[rest][secrets]") {
  ::unsetenv("AGENTKIT_TEST_REST_MISSING");
  EnvVar empty("AGENTKIT_TEST_REST_EMPTY", "");
  WireServer server;
  auto build = [&](const char* value) {
    return rest_tool("account")
        .description("Read the account profile from the billing service.")
        .side_effecting(false)
        .endpoint("GET", server.base_url() + "/v1/me")
        .header("Authorization", value)
        .build();
  };
  Harness h;
  auto missing = h.invoke(build("Bearer ${AGENTKIT_TEST_REST_MISSING}"), Json::object());
  CHECK(missing.status == Status::error);
  CHECK(missing.text ==
        "Tool failed: environment variable AGENTKIT_TEST_REST_MISSING (used in header 'Authorization' of tool "
        "'account') is not set");
  auto blank = h.invoke(build("Bearer ${AGENTKIT_TEST_REST_EMPTY}"), Json::object());
  CHECK_THAT(blank.text, Catch::Contains("AGENTKIT_TEST_REST_EMPTY"));
  CHECK(server.requests().empty());
}

// ------------------------------------------------------------------ statuses

TEST_CASE("REST tool: a non-2xx status is a model-visible error with the status and a bounded body preview",
          "[rest]") {
  WireServer server;
  server.enqueue(json_reply(404, {{"error", "no such city"}}));
  server.enqueue(reply(500, std::string(100'000, 'x'), {{"content-type", "text/html"}}));
  server.enqueue(json_reply(404, {{"error", "no such city"}}));
  auto tool = weather(server);
  Harness h;
  auto not_found = h.invoke(tool, {{"city", "Atlantis"}});
  CHECK(not_found.status == Status::error);
  CHECK(not_found.text == "Tool failed: HTTP 404 from " + server.base_url() + "/v1/cities/Atlantis: {'error': 'no such city'}");
  auto huge = h.invoke(tool, {{"city", "Lisbon"}});
  CHECK_THAT(huge.text, Catch::StartsWith("Tool failed: HTTP 500 from "));
  CHECK(huge.text.size() < 700);

  // call() hands the host the response whatever its status.
  auto response = tool->call({{"city", "Atlantis"}}, h.ctx);
  CHECK(response.status == 404);
  CHECK_FALSE(response.ok());
  CHECK(response.output == Json{{"error", "no such city"}});
  CHECK(response.metadata()["status"] == 404);
}

TEST_CASE("REST tool: a 2xx body over the size limit is an error, not a truncated answer", "[rest]") {
  WireServer server;
  server.enqueue(reply(200, std::string(2000, 'x')));
  auto tool = rest_tool("weather")
                  .description(kDescription)
                  .side_effecting(false)
                  .endpoint("GET", server.base_url() + "/")
                  .max_response_bytes(1000)
                  .build();
  Harness h;
  auto result = h.invoke(tool, Json::object());
  CHECK(result.text == "Tool failed: the response body of 2000 bytes exceeds the tool's limit of 1000 bytes");
}

// ------------------------------------------------------------------ timeouts

TEST_CASE("REST tool: a slow endpoint times out, a side-effecting call says its outcome is unknown", "[rest][timeout]") {
  WireServer server;
  auto slow = reply(200, "late");
  slow.delay = 1500ms;
  server.enqueue(slow);
  server.enqueue(slow);
  Harness h;
  auto read = rest_tool("weather")
                  .description(kDescription)
                  .side_effecting(false)
                  .endpoint("GET", server.base_url() + "/")
                  .timeout(200ms)
                  .build();
  auto write = rest_tool("refund")
                   .description("Refund part or all of a customer order and return the refund record.")
                   .side_effecting(true)
                   .endpoint("POST", server.base_url() + "/refunds")
                   .timeout(200ms)
                   .build();
  const auto start = Clock::now();
  auto r1 = h.invoke(read, Json::object());
  auto r2 = h.invoke(write, Json::object());
  CHECK(Clock::now() - start < 1400ms);
  CHECK(r1.status == Status::error);
  CHECK_THAT(r1.text, Catch::Contains("timed out"));
  CHECK_THAT(r1.text, !Catch::Contains("may or may not"));
  CHECK(r2.status == Status::outcome_unknown);
  CHECK_THAT(r2.text, Catch::Contains("timed out"));
  CHECK_THAT(r2.text, Catch::Contains("may or may not have taken effect, so it was not retried"));
  CHECK(server.requests().size() == 2);
}

TEST_CASE("REST tool: timeout() ends a slow request at the call's deadline, through the call's own token",
          "[rest][timeout]") {
  WireServer server;
  auto slow = reply(200, "late");
  slow.delay = 1500ms;
  server.enqueue(slow);
  auto invoker = std::make_shared<agentkit::Invoker>(
      std::vector<agentkit::Middleware>{agentkit::error_boundary(), agentkit::timeout(100ms)});
  auto refund = rest_tool("refund")
                    .description("Refund part or all of a customer order and return the refund record.")
                    .side_effecting(true)
                    .endpoint("POST", server.base_url() + "/refunds")
                    .timeout(10s)
                    .build();
  RunContext ctx;
  ctx.logger = std::make_shared<spdlog::logger>("rest_tool_test");
  const auto start = Clock::now();
  auto result = invoker->invoke_tool(
      ToolRequest{.call_id = "c1", .name = "refund", .arguments = Json::object(), .tool = refund}, ctx);
  // The transport saw the call's deadline; it did not wait for the server.
  CHECK(Clock::now() - start < 800ms);
  CHECK(result.status == Status::outcome_unknown);
  CHECK_FALSE(ctx.cancelled());  // only the call was cancelled
}

// ------------------------------------------------------------------- retries

TEST_CASE("REST tool: a read-only tool retries transient statuses", "[rest][retry]") {
  WireServer server;
  server.enqueue(reply(503, "busy"));
  server.enqueue(reply(429, "slow down", {{"retry-after", "0"}}));
  server.enqueue(json_reply(200, {{"temp_c", 18}}));
  Harness h;
  auto result = h.invoke(weather(server, 2), {{"city", "Porto"}});
  REQUIRE(result.status == Status::ok);
  CHECK(result.value["output"]["temp_c"] == 18);
  CHECK(result.value["metadata"]["attempts"] == 3);
  CHECK(server.requests().size() == 3);
}

TEST_CASE("REST tool: retries stop at the limit and a 4xx is never retried", "[rest][retry]") {
  WireServer server;
  for (int i = 0; i < 3; ++i) server.enqueue(reply(503, "busy"));
  server.enqueue(reply(400, "bad"));
  Harness h;
  auto tool = weather(server, 2);
  CHECK_THAT(h.invoke(tool, {{"city", "Porto"}}).text, Catch::Contains("HTTP 503"));
  CHECK(server.requests().size() == 3);
  CHECK_THAT(h.invoke(tool, {{"city", "Porto"}}).text, Catch::Contains("HTTP 400"));
  CHECK(server.requests().size() == 4);
}

TEST_CASE("REST tool: a side-effecting POST is sent once, whatever the failure", "[rest][retry]") {
  WireServer server;
  server.enqueue(reply(503, "busy"));
  WireServer::Response reset;
  reset.chunks = {"{\"partial\":"};
  reset.fault = WireServer::Fault::reset_mid_stream;
  reset.fault_after_chunks = 1;
  server.enqueue(reset);
  Harness h;
  h.invoker = std::make_shared<agentkit::Invoker>(agentkit::default_middleware());  // retry() included
  auto tool = refund(server);

  auto busy = h.invoke(tool, {{"order_id", "o-1"}, {"amount_cents", 100}});
  CHECK(busy.status == Status::error);
  CHECK_THAT(busy.text, Catch::Contains("HTTP 503"));
  CHECK(server.requests().size() == 1);

  auto broken = h.invoke(tool, {{"order_id", "o-2"}, {"amount_cents", 100}});
  CHECK(broken.status == Status::outcome_unknown);  // the server had the request when the connection broke
  CHECK_THAT(broken.text, Catch::Contains("may or may not have taken effect"));
  CHECK(server.requests().size() == 2);
}

TEST_CASE("REST tool: a side-effecting tool declared idempotent may retry", "[rest][retry]") {
  WireServer server;
  server.enqueue(reply(502, "gateway"));
  server.enqueue(json_reply(201, {{"refund_id", "r-9"}}));
  Harness h;
  auto result = h.invoke(refund(server, true, 1), {{"order_id", "o-1"}, {"amount_cents", 100}});
  REQUIRE(result.status == Status::ok);
  auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].body == requests[1].body);
}

// ----------------------------------------------------------------- redirects

TEST_CASE("REST tool: redirects within the allowlist are followed, credentials stay with their origin",
          "[rest][redirect][egress]") {
  EnvVar token("AGENTKIT_TEST_REST_TOKEN", "tok-3f9a8c1d77");
  WireServer first;
  WireServer second;
  first.enqueue(redirect(302, "/v2/cities/Lisbon?moved=1"));        // same origin: keeps the credentials
  first.enqueue(redirect(307, second.base_url() + "/v3/lisbon"));  // another origin: drops them
  second.enqueue(json_reply(200, {{"temp_c", 20}}));
  auto tool = rest_tool("weather")
                  .description(kDescription)
                  .side_effecting(false)
                  .endpoint("GET", first.base_url() + "/v1/cities/{city}")
                  .path("city", "City name")
                  .header("Authorization", "Bearer ${AGENTKIT_TEST_REST_TOKEN}")
                  .header("Accept", "application/json")
                  .build();
  Harness h({first.base_url(), second.base_url()});
  auto result = h.invoke(tool, {{"city", "Lisbon"}});
  REQUIRE(result.status == Status::ok);
  CHECK(result.value["output"]["temp_c"] == 20);
  CHECK(result.value["metadata"]["redirects"] == 2);
  CHECK(result.value["metadata"]["url"] == second.base_url() + "/v3/lisbon");

  auto at_first = first.requests();
  REQUIRE(at_first.size() == 2);
  CHECK(at_first[1].path == "/v2/cities/Lisbon?moved=1");
  CHECK(at_first[1].header("authorization") == "Bearer tok-3f9a8c1d77");
  auto at_second = second.requests();
  REQUIRE(at_second.size() == 1);
  CHECK(at_second[0].header("authorization").empty());
  CHECK(at_second[0].header("accept") == "application/json");
}

TEST_CASE("REST tool: 303 continues as a GET without a body, 307 and 308 keep the method and body",
          "[rest][redirect]") {
  WireServer server;
  server.enqueue(redirect(303, "/status/r-1"));
  server.enqueue(json_reply(200, {{"state", "done"}}));
  server.enqueue(redirect(308, "/v2/orders/o-2/refunds"));
  server.enqueue(json_reply(201, {{"refund_id", "r-2"}}));
  Harness h;
  auto tool = refund(server);
  CHECK(h.invoke(tool, {{"order_id", "o-1"}, {"amount_cents", 5}}).status == Status::ok);
  CHECK(h.invoke(tool, {{"order_id", "o-2"}, {"amount_cents", 6}}).status == Status::ok);
  auto requests = server.requests();
  REQUIRE(requests.size() == 4);
  CHECK(requests[1].method == "GET");
  CHECK(requests[1].path == "/status/r-1");
  CHECK(requests[1].body.empty());
  CHECK(requests[1].header("content-type").empty());
  CHECK(requests[3].method == "POST");
  CHECK(requests[3].path == "/v2/orders/o-2/refunds");
  CHECK(requests[3].body == requests[2].body);
}

TEST_CASE("REST tool: a redirect to another port, host or scheme is denied and never contacted",
          "[rest][redirect][egress]") {
  WireServer allowed;
  WireServer elsewhere;
  const std::string port = std::to_string(allowed.port());
  allowed.enqueue(redirect(302, elsewhere.base_url() + "/steal"));
  allowed.enqueue(redirect(302, "http://localhost:" + port + "/x"));
  allowed.enqueue(redirect(302, "https://127.0.0.1:" + port + "/x"));
  allowed.enqueue(redirect(302, "ftp://127.0.0.1:" + port + "/x"));
  allowed.enqueue(redirect(302, "http://127.0.0.1:" + port + "@" + elsewhere.base_url().substr(7) + "/x"));
  Harness h({allowed.base_url()});
  auto tool = weather(allowed);

  auto port_hop = h.invoke(tool, {{"city", "a"}});
  CHECK(port_hop.status == Status::denied);
  CHECK(port_hop.text == "call to tool 'weather' refused by the egress allowlist: " + elsewhere.base_url() +
                             " is not on the egress allowlist");
  auto host_hop = h.invoke(tool, {{"city", "b"}});
  CHECK(host_hop.status == Status::denied);
  CHECK_THAT(host_hop.text, Catch::Contains("http://localhost:" + port + " is not on the egress allowlist"));
  auto scheme_hop = h.invoke(tool, {{"city", "c"}});
  CHECK(scheme_hop.status == Status::denied);
  CHECK_THAT(scheme_hop.text, Catch::Contains("https://127.0.0.1:" + port + " is not on the egress allowlist"));
  auto ftp_hop = h.invoke(tool, {{"city", "d"}});
  CHECK(ftp_hop.status == Status::denied);
  CHECK_THAT(ftp_hop.text, Catch::Contains("scheme 'ftp' is not allowed"));
  auto userinfo_hop = h.invoke(tool, {{"city", "e"}});
  CHECK(userinfo_hop.status == Status::denied);
  CHECK_THAT(userinfo_hop.text, Catch::Contains("credentials"));

  CHECK(allowed.requests().size() == 5);
  CHECK(elsewhere.requests().empty());
  CHECK(elsewhere.connections_accepted() == 0);
}

TEST_CASE("REST tool: redirect hops are bounded", "[rest][redirect]") {
  WireServer server;
  server.set_handler([](const WireServer::Request&) { return redirect(302, "/again"); });
  auto tool = rest_tool("weather")
                  .description(kDescription)
                  .side_effecting(false)
                  .endpoint("GET", server.base_url() + "/")
                  .max_redirects(2)
                  .build();
  Harness h;
  auto result = h.invoke(tool, Json::object());
  CHECK(result.text == "Tool failed: too many redirects (more than 2)");
  CHECK(server.requests().size() == 3);
}

// -------------------------------------------------------------------- egress

TEST_CASE("REST tool: a tool whose own origin is not allowed is denied before it runs", "[rest][egress]") {
  WireServer allowed;
  WireServer other;
  Harness h({allowed.base_url()});
  auto result = h.invoke(weather(other), {{"city", "Lisbon"}});
  CHECK(result.status == Status::denied);
  CHECK_THAT(result.text, Catch::Contains(other.base_url() + " is not on the egress allowlist"));
  CHECK(other.connections_accepted() == 0);

  // Without the middleware, the context's list still binds the tool itself.
  RunContext ctx;
  ctx.egress = std::make_shared<const EgressAllowlist>(EgressAllowlist{allowed.base_url()});
  CHECK_THROWS_AS(weather(other)->run({{"city", "Lisbon"}}, ctx), agentkit::EgressDenied);
  CHECK(other.connections_accepted() == 0);
}

// ------------------------------------------------------------ trace context

namespace {

std::vector<std::string> traceparents_of(const WireServer::Request& request) {
  std::vector<std::string> out;
  for (const auto& [name, value] : request.headers) {
    if (name == "traceparent") out.push_back(value);
  }
  return out;
}

}  // namespace

TEST_CASE("REST tool: a traced call sends traceparent on every hop, in place of a declared one, an untraced call none",
          "[rest][trace]") {
  WireServer server;
  server.enqueue(redirect(302, "/v2/cities/Lisbon"));
  server.enqueue(json_reply(200, {{"temp_c", 20}}));
  server.enqueue(json_reply(200, {{"temp_c", 21}}));
  server.enqueue(json_reply(200, {{"temp_c", 22}}));
  const std::string declared = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  auto plain = weather(server);
  auto with_header = rest_tool("weather")
                         .description(kDescription)
                         .side_effecting(false)
                         .endpoint("GET", server.base_url() + "/v1/cities/{city}")
                         .path("city", "City name")
                         .header("Traceparent", declared)
                         .build();
  Harness h;
  h.ctx.trace_id = agentkit::trace::TraceId("4bf92f3577b34da6a3ce929d0e0e4736");
  h.ctx.span_id = agentkit::trace::SpanId("00f067aa0ba902b7");
  const std::string expected = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  REQUIRE(h.ctx.traceparent() == expected);
  REQUIRE(h.invoke(plain, {{"city", "Lisbon"}}).status == Status::ok);        // two hops
  REQUIRE(h.invoke(with_header, {{"city", "Lisbon"}}).status == Status::ok);  // the run's wins

  Harness untraced;
  REQUIRE(untraced.ctx.traceparent().empty());
  REQUIRE(untraced.invoke(plain, {{"city", "Lisbon"}}).status == Status::ok);

  const auto requests = server.requests();
  REQUIRE(requests.size() == 4);
  CHECK(traceparents_of(requests[0]) == std::vector<std::string>{expected});
  CHECK(requests[1].path == "/v2/cities/Lisbon");
  CHECK(traceparents_of(requests[1]) == std::vector<std::string>{expected});
  CHECK(traceparents_of(requests[2]) == std::vector<std::string>{expected});
  CHECK(traceparents_of(requests[3]).empty());
}
