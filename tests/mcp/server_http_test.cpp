// The MCP server over Streamable HTTP (McpHttpListener): agentkit's own
// client end to end, and the transport's rules checked with raw requests
// (sessions, Origin, bearer auth, protocol version, sizes).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>

#include "mcp_support.h"
#include "server_support.h"

using namespace agentkit;
using namespace agentkit::providers;
using mcp_test::eventually;
using mcp_test::lambda_tool;
using mcp_test::spec;

namespace {

struct RawResponse {
  int status = 0;
  std::string head;
  std::string body;
};

// A connection to 127.0.0.1:`port` with `method` /mcp sent on it (`close`:
// asking the server to close it after the answer).
int send_request(int port, const std::string& method, const std::vector<std::string>& headers, const std::string& body,
                 bool close) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  std::string request = method + " /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + (close ? "Connection: close\r\n" : "") +
                        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n";
  for (const auto& h : headers) request += h + "\r\n";
  request += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  for (std::size_t done = 0; done < request.size();) {
    const ssize_t n = ::send(fd, request.data() + done, request.size() - done, MSG_NOSIGNAL);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  return fd;
}

// One request on its own connection (Connection: close), read to EOF.
RawResponse raw(int port, const std::string& method, const std::vector<std::string>& headers, const std::string& body = "") {
  const int fd = send_request(port, method, headers, body, true);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) {
    text.append(buf, static_cast<std::size_t>(n));
    // An SSE answer to one request ends with its response event; stop there.
    if (text.find("\"result\"") != std::string::npos && text.size() > 4 && text.find("\n\n", text.find("\"result\"")) != std::string::npos) break;
  }
  ::close(fd);
  RawResponse r;
  if (text.size() > 12) r.status = std::stoi(text.substr(9, 3));
  const auto end = text.find("\r\n\r\n");
  r.head = text.substr(0, end);
  if (end != std::string::npos) r.body = text.substr(end + 4);
  return r;
}

// A request whose answer is read as it streams: the connection stays open
// until the object goes.
class OpenStream {
 public:
  OpenStream(int port, const std::vector<std::string>& headers, const std::string& body)
      : fd_(send_request(port, "POST", headers, body, false)) {
    timeval tv{0, 50'000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~OpenStream() { ::close(fd_); }
  OpenStream(const OpenStream&) = delete;
  OpenStream& operator=(const OpenStream&) = delete;

  // Reads until `needle` has arrived (true) or `limit` passed (false).
  bool wait_for(const std::string& needle, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    return eventually([&] {
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) text_.append(buf, static_cast<std::size_t>(n));
      return text_.find(needle) != std::string::npos;
    }, limit);
  }
  const std::string& text() const { return text_; }

 private:
  int fd_ = -1;
  std::string text_;
};

const std::string kInit =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}})";

// The Mcp-Session-Id of a response head.
std::string session_of(const RawResponse& r) {
  std::string lower = r.head;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto at = lower.find("mcp-session-id: ");
  if (at == std::string::npos) return {};
  return r.head.substr(at + 16, r.head.find("\r\n", at) - at - 16);
}

ToolRegistry tools(std::atomic<int>& payments) {
  ToolRegistry r;
  r.add(lambda_tool(spec("echo", false), [](const Json& args, RunContext& ctx) {
    ctx.emit(Progress{"echoing"});
    return ToolOutput{args.value("text", std::string("?")), {}};
  }));
  auto pay = spec("pay", true);
  pay.effects.requires_approval = true;
  r.add(lambda_tool(pay, [&payments](const Json&, RunContext&) {
    ++payments;
    return ToolOutput{"paid", {}};
  }));
  return r;
}

class ProgressCount final : public Observer {
 public:
  void on_event(const Event& event) override {
    if (std::holds_alternative<McpProgress>(event)) ++count;
  }
  std::atomic<int> count{0};
};

}  // namespace

TEST_CASE("mcp server over HTTP: agentkit's client lists, calls with progress, approves by elicitation, sees list_changed") {
  std::atomic<int> payments{0};
  McpServer server(tools(payments), RunContext{});
  McpHttpListener http(server);
  http.listen();
  http.run_in_thread();

  std::atomic<int> changes{0};
  McpClientOptions options;
  options.elicitation = [](const Json&) { return Json{{"action", "accept"}}; };
  options.on_tools_changed = [&](const std::vector<ToolPtr>&) { ++changes; };
  McpClient client(make_http_transport({.url = http.url()}), options);
  client.connect();
  CHECK(client.server().protocol_version == "2025-11-25");
  CHECK(client.list_tools().size() == 2);

  auto progress = std::make_shared<ProgressCount>();
  RunContext ctx;
  ctx.observer = progress;
  CHECK(client.call_tool("echo", {{"text", "hi"}}, &ctx).text() == "hi");
  CHECK(progress->count == 1);

  const auto paid = client.call_tool("pay", Json::object());
  CHECK_FALSE(paid.is_error);
  CHECK(payments == 1);

  ToolRegistry next;
  next.add(lambda_tool(spec("late", false), [](const Json&, RunContext&) { return ToolOutput{"here", {}}; }));
  // The standalone GET stream opens after the handshake; wait for it.
  REQUIRE(eventually([&] {
    server.set_tools(ToolRegistry(next));
    return changes.load() > 0;
  }));
  CHECK(client.call_tool("late", Json::object()).text() == "here");
  client.close();
  http.stop();
}

TEST_CASE("mcp server over HTTP: an elicitation goes on the stream of the call it asks about") {
  std::atomic<int> payments{0};
  std::atomic<bool> release{false};
  ToolRegistry registry = tools(payments);
  registry.add(lambda_tool(spec("wait", false), [&](const Json&, RunContext&) {
    eventually([&] { return release.load(); });
    return ToolOutput{"waited", {}};
  }));
  McpServer server(std::move(registry), RunContext{});
  McpHttpListener http(server);
  http.listen();
  http.run_in_thread();
  const int port = http.port();
  const auto init = raw(port, "POST", {},
                        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
                        R"("capabilities":{"elicitation":{}}}})");
  const std::string session = "Mcp-Session-Id: " + session_of(init);
  REQUIRE(raw(port, "POST", {session}, R"({"jsonrpc":"2.0","method":"notifications/initialized"})").status == 202);

  // Two calls in flight on two POST streams: "a" (id 10, first in any
  // order of ids) waits; "b" (id 20) needs approval.
  OpenStream a(port, {session}, R"({"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"wait"}})");
  REQUIRE(a.wait_for("text/event-stream"));
  OpenStream b(port, {session}, R"({"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"pay"}})");
  REQUIRE(b.wait_for("elicitation/create"));
  CHECK(a.text().find("elicitation/create") == std::string::npos);
  // The answer (a POST of its own) runs the call; its result ends b's stream.
  const auto at = b.text().find("\"id\":", b.text().find("elicitation/create") - 60);
  REQUIRE(at != std::string::npos);
  const std::string asked = b.text().substr(at + 5, b.text().find_first_not_of("0123456789", at + 5) - at - 5);
  CHECK(raw(port, "POST", {session}, R"({"jsonrpc":"2.0","id":)" + asked + R"(,"result":{"action":"accept"}})").status == 202);
  CHECK(b.wait_for("paid"));
  CHECK(payments == 1);
  release = true;
  CHECK(a.wait_for("waited"));
  CHECK(a.text().find("elicitation/create") == std::string::npos);
  http.stop();
}

TEST_CASE("mcp server over HTTP: sessions, Origin, protocol version and sizes are enforced") {
  std::atomic<int> payments{0};
  McpServer server(tools(payments), RunContext{});
  McpHttpListenerOptions options;
  options.allowed_origins = {"https://app.example.com"};
  options.max_body_bytes = 64 * 1024;
  McpHttpListener http(server, options);
  http.listen();
  http.run_in_thread();
  const int port = http.port();

  const auto init = raw(port, "POST", {}, kInit);
  REQUIRE(init.status == 200);
  CHECK_THAT(init.body, Catch::Contains("\"protocolVersion\":\"2025-11-25\""));
  const std::string id = session_of(init);
  REQUIRE(id.size() >= 32);
  const std::string ping = R"({"jsonrpc":"2.0","id":2,"method":"ping"})";

  CHECK(raw(port, "POST", {}, ping).status == 400);                              // no session
  CHECK(raw(port, "POST", {"Mcp-Session-Id: nope"}, ping).status == 404);         // unknown session
  CHECK(raw(port, "POST", {"Mcp-Session-Id: " + id}, ping).status == 200);
  CHECK(raw(port, "POST", {"Mcp-Session-Id: " + id, "MCP-Protocol-Version: 1999-01-01"}, ping).status == 400);
  CHECK(raw(port, "POST", {"Mcp-Session-Id: " + id, "Origin: http://evil.example"}, ping).status == 403);
  CHECK(raw(port, "POST", {"Mcp-Session-Id: " + id, "Origin: http://localhost:5173"}, ping).status == 200);
  CHECK(raw(port, "POST", {"Mcp-Session-Id: " + id, "Origin: https://app.example.com"}, ping).status == 200);
  CHECK(raw(port, "POST", {"Mcp-Session-Id: " + id}, "not json").status == 400);
  CHECK(raw(port, "POST", {"Mcp-Session-Id: " + id}, "[" + ping + "]").status == 400);  // no batches
  CHECK(raw(port, "POST", {"Mcp-Session-Id: " + id}, R"({"jsonrpc":"2.0","method":"notifications/initialized"})").status == 202);
  CHECK(raw(port, "POST", {"Mcp-Session-Id: " + id}, std::string(70 * 1024, ' ')).status == 413);
  CHECK(raw(port, "PUT", {"Mcp-Session-Id: " + id}).status == 405);
  CHECK(raw(port, "DELETE", {"Mcp-Session-Id: " + id}).status == 204);
  CHECK(raw(port, "POST", {"Mcp-Session-Id: " + id}, ping).status == 404);  // ended
  http.stop();
}

TEST_CASE("mcp server over HTTP: at the session limit the least recently used idle session makes room") {
  std::atomic<int> payments{0};
  McpServer server(tools(payments), RunContext{});
  McpHttpListenerOptions options;
  options.max_sessions = 2;
  McpHttpListener http(server, options);
  http.listen();
  http.run_in_thread();
  const std::string ping = R"({"jsonrpc":"2.0","id":2,"method":"ping"})";
  const std::string first = session_of(raw(http.port(), "POST", {}, kInit));
  const std::string second = session_of(raw(http.port(), "POST", {}, kInit));
  CHECK(raw(http.port(), "POST", {"Mcp-Session-Id: " + first}, ping).status == 200);  // second is now the oldest
  const std::string third = session_of(raw(http.port(), "POST", {}, kInit));
  CHECK_FALSE(third.empty());
  CHECK(raw(http.port(), "POST", {"Mcp-Session-Id: " + second}, ping).status == 404);
  CHECK(raw(http.port(), "POST", {"Mcp-Session-Id: " + first}, ping).status == 200);
  CHECK(raw(http.port(), "POST", {"Mcp-Session-Id: " + third}, ping).status == 200);
  http.stop();
}

TEST_CASE("mcp server over HTTP: a bearer token is required when set, and a remote bind needs one") {
  std::atomic<int> payments{0};
  McpServer server(tools(payments), RunContext{});
  McpHttpListenerOptions options;
  options.bearer_token = "s3cret-token-value";
  McpHttpListener http(server, options);
  http.listen();
  http.run_in_thread();
  const auto none = raw(http.port(), "POST", {}, kInit);
  CHECK(none.status == 401);
  CHECK_THAT(none.head, Catch::Contains("WWW-Authenticate: Bearer"));
  CHECK(raw(http.port(), "POST", {"Authorization: Bearer s3cret-token-valuX"}, kInit).status == 401);
  CHECK(raw(http.port(), "POST", {"Authorization: Bearer s3cret-token-value"}, kInit).status == 200);

  McpClient client(make_http_transport({.url = http.url(), .headers = {{"Authorization", "Bearer s3cret-token-value"}}}));
  client.connect();
  CHECK(client.call_tool("echo", {{"text", "ok"}}).text() == "ok");
  client.close();
  http.stop();

  McpHttpListenerOptions remote;
  remote.host = "0.0.0.0";
  CHECK_THROWS_AS(McpHttpListener(server, remote), Error);
  remote.bearer_token = "another-token";
  CHECK_NOTHROW(McpHttpListener(server, remote));
}
