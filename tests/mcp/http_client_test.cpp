// The MCP client over Streamable HTTP: against a scripted loopback server
// (WireServer) for the wire details, and against server-everything's
// streamableHttp mode bound to 127.0.0.1.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include <agentkit/testing/test_context.h>
#include <agentkit/testing/wire_server.h>

#include "mcp_support.h"

using namespace agentkit;
using namespace agentkit::providers;
using namespace std::chrono_literals;
using agentkit::testing::WireServer;

namespace {

constexpr const char* kSecret = "sk-mcp-test-9f8e7d";

WireServer::Response json_reply(const Json& message, std::vector<std::pair<std::string, std::string>> headers = {}) {
  WireServer::Response r;
  r.headers = std::move(headers);
  r.headers.emplace_back("content-type", "application/json");
  r.body = message.dump();
  return r;
}

WireServer::Response sse_reply(const std::vector<Json>& messages) {
  WireServer::Response r;
  r.headers = {{"content-type", "text/event-stream"}};
  for (std::size_t i = 0; i < messages.size(); ++i) {
    r.chunks.push_back("id: e" + std::to_string(i) + "\ndata: " + messages[i].dump() + "\n\n");
  }
  return r;
}

WireServer::Response status_only(int status, std::string body = {}) {
  WireServer::Response r;
  r.status = status;
  r.body = std::move(body);
  if (!r.body.empty()) r.headers = {{"content-type", "application/json"}};
  return r;
}

Json result_for(const Json& request, Json result) {
  return {{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", std::move(result)}};
}

Json text_result(const std::string& text) { return {{"content", {{{"type", "text"}, {"text", text}}}}}; }

// A scripted Streamable HTTP MCP server. `on_call` answers tools/call; the
// rest of the protocol is answered here. Sessions are "s1", "s2", ...
class ScriptedServer {
 public:
  using OnCall = std::function<WireServer::Response(const Json& request, const WireServer::Request& http)>;
  using OnGet = std::function<WireServer::Response(const WireServer::Request& http)>;

  // `on_get`, when given, answers every GET (the standalone stream).
  explicit ScriptedServer(OnCall on_call, bool get_stream = false, OnGet on_get = nullptr)
      : on_call_(std::move(on_call)), on_get_(std::move(on_get)), get_stream_(get_stream) {
    server_.set_handler([this](const WireServer::Request& http) { return handle(http); });
  }

  std::string url() const { return server_.base_url() + "/mcp"; }
  std::vector<WireServer::Request> requests() const { return server_.requests(); }
  int sessions() const { return sessions_; }
  // Requests whose JSON-RPC method (or "GET"/"DELETE") is `name`.
  std::vector<WireServer::Request> requests_for(const std::string& name) const {
    std::vector<WireServer::Request> out;
    for (const auto& r : server_.requests()) {
      if (r.method != "POST" ? r.method == name : Json::parse(r.body).value("method", "") == name) out.push_back(r);
    }
    return out;
  }
  std::vector<Json> posted_responses() const {
    std::vector<Json> out;
    for (const auto& r : server_.requests()) {
      if (r.method != "POST") continue;
      const Json body = Json::parse(r.body);
      if (!body.contains("method")) out.push_back(body);
    }
    return out;
  }

 private:
  WireServer::Response handle(const WireServer::Request& http) {
    if (http.method == "DELETE") return status_only(200);
    if (http.method == "GET") {
      if (on_get_) return on_get_(http);
      if (get_stream_ && !get_served_.exchange(true)) {
        return sse_reply({{{"jsonrpc", "2.0"}, {"id", "g-1"}, {"method", "ping"}}});
      }
      return status_only(405);
    }
    const Json request = Json::parse(http.body);
    const std::string method = request.value("method", "");
    if (method == "initialize") {
      const std::string session = "s" + std::to_string(++sessions_);
      return json_reply(result_for(request, {{"protocolVersion", "2025-11-25"},
                                             {"capabilities", {{"tools", Json::object()}}},
                                             {"serverInfo", {{"name", "scripted"}, {"version", "1"}}}}),
                        {{"Mcp-Session-Id", session}});
    }
    if (!request.contains("id") || !request.contains("method")) return status_only(202);  // notifications, replies
    if (method == "tools/list") {
      return json_reply(result_for(request, {{"tools", {{{"name", "echo"}, {"inputSchema", {{"type", "object"}}}}}}}));
    }
    return on_call_(request, http);
  }

  OnCall on_call_;
  OnGet on_get_;
  bool get_stream_;
  std::atomic<bool> get_served_{false};
  std::atomic<int> sessions_{0};
  WireServer server_;
};

std::unique_ptr<McpClient> connect_http(const std::string& url, McpClientOptions options = {}, bool stream = true) {
  McpHttpServer server{.url = url, .headers = {{"Authorization", std::string("Bearer ") + kSecret}}};
  server.standalone_stream = stream;
  auto client = std::make_unique<McpClient>(make_http_transport(server, options.logger), std::move(options));
  client->connect();
  return client;
}

class ProgressRecorder final : public Observer {
 public:
  void on_event(const Event& event) override {
    if (std::holds_alternative<McpProgress>(event)) ++count;
  }
  std::atomic<int> count{0};
};

}  // namespace

TEST_CASE("http: handshake, session and version headers, JSON and SSE answers, DELETE on close") {
  mcp_test::LogCapture log;
  ScriptedServer server([](const Json& request, const WireServer::Request&) {
    const Json progress = {{"jsonrpc", "2.0"},
                           {"method", "notifications/progress"},
                           {"params", {{"progressToken", request["params"]["_meta"]["progressToken"]}, {"progress", 1}}}};
    return sse_reply({progress, result_for(request, text_result("echoed over SSE"))});
  });
  auto client = connect_http(server.url(), {.server_name = "scripted", .logger = log.logger()});
  CHECK(client->server().name == "scripted");
  REQUIRE(client->tools().size() == 1);

  auto recorder = std::make_shared<ProgressRecorder>();
  auto ctx = agentkit::testing::make_test_ctx({.observer = recorder});
  CHECK(client->tools()[0]->run(Json::object(), ctx) == "echoed over SSE");
  CHECK(recorder->count == 1);
  // The standalone stream is tried in the background (405 here: none offered).
  REQUIRE(mcp_test::eventually([&] { return !server.requests_for("GET").empty(); }));
  client->close();

  const auto initialize = server.requests_for("initialize");
  REQUIRE(initialize.size() == 1);
  CHECK(initialize[0].header("accept") == "application/json, text/event-stream");
  CHECK(initialize[0].header("content-type") == "application/json");
  CHECK(initialize[0].header("mcp-session-id").empty());
  for (const char* name : {"notifications/initialized", "tools/list", "tools/call"}) {
    const auto requests = server.requests_for(name);
    REQUIRE(requests.size() == 1);
    CHECK(requests[0].header("mcp-session-id") == "s1");
    CHECK(requests[0].header("mcp-protocol-version") == "2025-11-25");
    CHECK(requests[0].header("accept") == "application/json, text/event-stream");
  }
  const auto gets = server.requests_for("GET");
  CHECK(gets[0].header("accept") == "text/event-stream");
  CHECK(gets[0].header("mcp-session-id") == "s1");
  const auto deletes = server.requests_for("DELETE");
  REQUIRE(deletes.size() == 1);
  CHECK(deletes[0].header("mcp-session-id") == "s1");
  for (const auto& r : server.requests()) CHECK(r.header("authorization") == std::string("Bearer ") + kSecret);
  CHECK(log.text().find(kSecret) == std::string::npos);
}

TEST_CASE("http: an expired session (404, or a 400 naming it) starts a new session and retries once") {
  const int expired_status = GENERATE(404, 400);
  std::atomic<int> calls{0};
  ScriptedServer server([&](const Json& request, const WireServer::Request& http) {
    ++calls;
    if (http.header("mcp-session-id") == "s1") {
      return status_only(expired_status,
                         R"({"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null})");
    }
    return json_reply(result_for(request, text_result("served by " + http.header("mcp-session-id"))));
  });
  auto client = connect_http(server.url(), {}, false);
  CHECK(client->call_tool("echo", Json::object()).text() == "served by s2");
  CHECK(calls == 2);
  CHECK(server.sessions() == 2);
  const auto initialize = server.requests_for("initialize");
  REQUIRE(initialize.size() == 2);
  CHECK(initialize[1].header("mcp-session-id").empty());  // a new session starts without the old id
  CHECK(client->call_tool("echo", Json::object()).text() == "served by s2");
}

TEST_CASE("http: a 400 that does not name the session is an ordinary error, not an expiry") {
  ScriptedServer server([](const Json&, const WireServer::Request&) { return status_only(400, R"({"detail":"bad body"})"); });
  auto client = connect_http(server.url(), {}, false);
  try {
    client->call_tool("echo", Json::object());
    FAIL("no error");
  } catch (const McpError& e) {
    CHECK(e.kind() == McpError::Kind::disconnected);
    CHECK(e.data()["http_status"] == 400);
  }
  CHECK(server.sessions() == 1);
}

TEST_CASE("http: an HTTP error is a typed error that never carries the credentials") {
  ScriptedServer server([](const Json&, const WireServer::Request& http) {
    return status_only(500, "upstream rejected " + http.header("authorization"));  // a careless server echoes it
  });
  mcp_test::LogCapture log;
  auto client = connect_http(server.url(), {.logger = log.logger()}, false);
  try {
    client->call_tool("echo", Json::object());
    FAIL("no error");
  } catch (const McpError& e) {
    CHECK(e.kind() == McpError::Kind::disconnected);
    CHECK_THAT(e.what(), Catch::Contains("HTTP 500"));
    CHECK(std::string(e.what()).find(kSecret) == std::string::npos);
  }
  CHECK(log.text().find(kSecret) == std::string::npos);
}

TEST_CASE("http: an API key, a Bearer header and an x-api-key header never reach errors or logs", "[redact]") {
  constexpr const char* kApiKey = "xk-mcp-api-key-1234";
  ScriptedServer server([&](const Json& request, const WireServer::Request& http) {
    if (request.value("params", Json::object()).value("name", "") == "warn") {
      // A malformed message (logged as a warning, skipped), then an error echoing everything it was sent.
      return sse_reply({{{"jsonrpc", "2.0"}, {"method", 7}, {"echo", http.header("authorization") + " " +
                                                                             http.header("x-api-key")}},
                        {{"jsonrpc", "2.0"}, {"id", request["id"]}, {"error", {{"code", -32000},
                                                                              {"message", "bad key " + http.header("x-api-key") + " and " + http.header("authorization")}}}}});
    }
    return status_only(500, "upstream rejected " + http.header("authorization") + " " + http.header("x-api-key"));
  });
  mcp_test::LogCapture log;
  McpHttpServer config{.url = server.url(),
                       .headers = {{"Authorization", std::string("Bearer ") + kSecret}, {"X-Api-Key", kApiKey}}};
  config.standalone_stream = false;
  McpClient client(make_http_transport(config, log.logger()), {.logger = log.logger()});
  client.connect();
  std::string errors;
  for (const char* tool : {"fail", "warn"}) {
    try {
      client.call_tool(tool, Json::object());
      FAIL("no error");
    } catch (const std::exception& e) {
      errors += std::string(e.what()) + "\n";
    }
  }
  const std::string everything = errors + log.text();
  INFO(everything);
  CHECK_THAT(everything, Catch::Contains("[redacted]"));
  CHECK_THAT(everything, !Catch::Contains(kSecret));
  CHECK_THAT(everything, !Catch::Contains(kApiKey));
}

TEST_CASE("http: a JSON-RPC error in a non-2xx body still answers the request") {
  ScriptedServer server([](const Json& request, const WireServer::Request&) {
    WireServer::Response r = status_only(
        500, Json{{"jsonrpc", "2.0"}, {"id", request["id"]}, {"error", {{"code", -32603}, {"message", "boom"}}}}.dump());
    return r;
  });
  auto client = connect_http(server.url(), {}, false);
  try {
    client->call_tool("echo", Json::object());
    FAIL("no error");
  } catch (const McpError& e) {
    CHECK(e.kind() == McpError::Kind::rpc);
    CHECK(e.rpc_code() == -32603);
  }
}

TEST_CASE("http: an SSE answer that ends without the response fails the call at once") {
  ScriptedServer server([](const Json&, const WireServer::Request&) {
    return sse_reply({{{"jsonrpc", "2.0"}, {"method", "notifications/message"}, {"params", {{"level", "info"}, {"data", "x"}}}}});
  });
  auto client = connect_http(server.url(), {}, false);
  const auto start = std::chrono::steady_clock::now();
  try {
    client->call_tool("echo", Json::object());
    FAIL("no error");
  } catch (const McpError& e) {
    CHECK(e.kind() == McpError::Kind::disconnected);
    CHECK_THAT(e.what(), Catch::Contains("ended without an answer"));
  }
  CHECK(std::chrono::steady_clock::now() - start < 10s);
}

TEST_CASE("http: a request the server never answers times out and is cancelled by notification") {
  ScriptedServer server([](const Json&, const WireServer::Request&) {
    WireServer::Response r;
    r.fault = WireServer::Fault::stall;
    return r;
  });
  auto client = connect_http(server.url(), {}, false);
  try {
    client->call_tool("echo", Json::object(), nullptr, 200ms);
    FAIL("no timeout");
  } catch (const McpError& e) {
    CHECK(e.kind() == McpError::Kind::timeout);
  }
  REQUIRE(mcp_test::eventually([&] { return !server.requests_for("notifications/cancelled").empty(); }));
  const Json cancelled = Json::parse(server.requests_for("notifications/cancelled")[0].body);
  CHECK(cancelled["params"]["reason"] == "timed out");
  CHECK(cancelled["params"]["requestId"] == Json::parse(server.requests_for("tools/call")[0].body)["id"]);
  const auto start = std::chrono::steady_clock::now();
  client->close();  // the stalled POST is abandoned promptly
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}

TEST_CASE("http: a server request on the standalone GET stream is answered by POST with its id") {
  ScriptedServer server([](const Json& request, const WireServer::Request&) {
    return json_reply(result_for(request, text_result("ok")));
  }, true);
  auto client = connect_http(server.url());
  REQUIRE(mcp_test::eventually([&] { return !server.posted_responses().empty(); }));
  const Json reply = server.posted_responses()[0];
  CHECK(reply["id"] == "g-1");
  CHECK(reply["result"] == Json::object());
}

TEST_CASE("http: the GET stream's backoff ends at once on a new session and on close") {
  // Every GET fails, so the stream backs off 0.5 s, 1 s, 2 s, 4 s, ...
  ScriptedServer server(
      [](const Json& request, const WireServer::Request& http) {
        if (http.header("mcp-session-id") == "s1") return status_only(404);  // expire s1
        return json_reply(result_for(request, text_result("ok")));
      },
      false, [](const WireServer::Request&) { return status_only(500); });
  auto client = connect_http(server.url());
  const auto gets = [&](const std::string& session) {
    int n = 0;
    for (const auto& r : server.requests_for("GET")) n += r.header("mcp-session-id") == session;
    return n;
  };
  REQUIRE(mcp_test::eventually([&] { return gets("s1") == 3; }));  // now waiting 2 s
  const auto renewed = std::chrono::steady_clock::now();
  CHECK(client->call_tool("echo", Json::object()).text() == "ok");  // s1 expires: session s2
  REQUIRE(mcp_test::eventually([&] { return gets("s2") == 1; }));
  CHECK(std::chrono::steady_clock::now() - renewed < 1200ms);  // not the 2 s backoff
  std::this_thread::sleep_for(50ms);  // the s2 GET failed too: now waiting 4 s
  const auto closing = std::chrono::steady_clock::now();
  client.reset();  // close(): ends the wait
  CHECK(std::chrono::steady_clock::now() - closing < 2s);
  CHECK(gets("s2") == 1);
}

// ----------------------------------------------- server-everything over HTTP

namespace {

// server-everything in streamableHttp mode, bound to 127.0.0.1 by the
// loopback_only.cjs preload. Output goes to a file, where the preload
// reports the port.
class EverythingHttp {
 public:
  explicit EverythingHttp(int port = 0) {
    log_ = (std::filesystem::temp_directory_path() / ("agentkit-mcp-http-" + std::to_string(::getpid()) + "-" +
                                                       std::to_string(counter_++) + ".log"))
               .string();
    std::vector<std::string> args{mcp_test::node(), "--require", mcp_test::loopback_preload(),
                                  mcp_test::reference_server("everything"), "streamableHttp"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::string port_var = "PORT=" + std::to_string(port);
    std::string path_var = std::string("PATH=") + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
    std::vector<char*> envp{port_var.data(), path_var.data(), nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    const int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE(rc == 0);
    const std::regex listening("AGENTKIT_LISTENING (\\S+) (\\d+)");
    std::smatch match;
    const bool up = mcp_test::eventually([&] {
      std::ifstream in(log_);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (!std::regex_search(text, match, listening)) return false;
      address_ = match[1];
      port_ = std::stoi(match[2]);
      return true;
    });
    REQUIRE(up);
  }
  ~EverythingHttp() { stop(); }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    std::filesystem::remove(log_);
  }

  int port() const { return port_; }
  const std::string& address() const { return address_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/mcp"; }

 private:
  static inline std::atomic<int> counter_{0};
  pid_t pid_ = -1;
  std::string log_;
  std::string address_;
  int port_ = 0;
};

}  // namespace

TEST_CASE("everything over HTTP: loopback only, tools, SSE progress, roots and a restart that expires the session") {
  auto server = std::make_unique<EverythingHttp>();
  CHECK(server->address() == "127.0.0.1");
  McpClientOptions options;
  options.server_name = "everything-http";
  options.roots = std::vector<McpRoot>{{"file:///srv/http-root", "http-root"}};
  auto client = connect_http(server->url(), std::move(options));
  CHECK(client->server().name == "mcp-servers/everything");
  CHECK(client->tools().size() == 14);  // the 13 plus get-roots-list
  CHECK(client->call_tool("echo", {{"message", "over http \u2028"}}).text() == "Echo: over http \u2028");

  auto recorder = std::make_shared<ProgressRecorder>();
  auto ctx = agentkit::testing::make_test_ctx({.observer = recorder});
  CHECK_THAT(client->call_tool("trigger-long-running-operation", {{"duration", 0.2}, {"steps", 2}}, &ctx).text(),
             Catch::Contains("completed"));
  CHECK(recorder->count == 2);
  CHECK_THAT(client->call_tool("get-roots-list", Json::object()).text(), Catch::Contains("file:///srv/http-root"));

  // A new server process on the same port knows nothing of the session: it
  // answers 400 "No valid session ID"; the client starts a new session.
  const int port = server->port();
  server.reset();
  server = std::make_unique<EverythingHttp>(port);
  CHECK(client->call_tool("echo", {{"message", "again"}}).text() == "Echo: again");
  CHECK(client->call_tool("get-sum", {{"a", 1}, {"b", 2}}).text() == "The sum of 1 and 2 is 3.");
}

TEST_CASE("http: a traced call carries its traceparent in _meta and as a header, an untraced one in neither",
          "[trace]") {
  ScriptedServer server([](const Json& request, const WireServer::Request&) {
    return json_reply(result_for(request, text_result("ok")));
  });
  auto client = connect_http(server.url(), {}, false);
  auto traced = agentkit::testing::make_test_ctx();
  traced.trace_id = agentkit::trace::TraceId("4bf92f3577b34da6a3ce929d0e0e4736");
  traced.span_id = agentkit::trace::SpanId("00f067aa0ba902b7");
  const std::string expected = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  REQUIRE(traced.traceparent() == expected);
  auto untraced = agentkit::testing::make_test_ctx();
  REQUIRE(client->tools().size() == 1);
  CHECK(client->tools()[0]->run(Json::object(), traced) == "ok");
  CHECK(client->tools()[0]->run(Json::object(), untraced) == "ok");
  client->close();

  const auto traceparents = [](const WireServer::Request& r) {
    std::vector<std::string> out;
    for (const auto& [name, value] : r.headers) {
      if (name == "traceparent") out.push_back(value);
    }
    return out;
  };
  const auto calls = server.requests_for("tools/call");
  REQUIRE(calls.size() == 2);
  CHECK(Json::parse(calls[0].body)["params"]["_meta"]["traceparent"] == expected);
  CHECK(traceparents(calls[0]) == std::vector<std::string>{expected});
  CHECK_FALSE(Json::parse(calls[1].body)["params"]["_meta"].contains("traceparent"));
  CHECK(traceparents(calls[1]).empty());
  // Nothing else the client sent was traced.
  for (const auto& r : server.requests()) {
    if (r.method == "POST" && Json::parse(r.body).value("method", "") == "tools/call") continue;
    CHECK(traceparents(r).empty());
  }
}
