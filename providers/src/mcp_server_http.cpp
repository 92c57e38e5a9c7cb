// The Streamable HTTP binding of McpServer: POST/GET/DELETE on one
// endpoint, sessions by Mcp-Session-Id, answers as SSE streams.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <random>

#include <agentkit/error.h>
#include <agentkit/providers/mcp_server.h>

#include "http_server.h"
#include "mcp_detail.h"

namespace agentkit::providers {
namespace {


using detail::HttpResponder;

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool loopback_host(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

// The host of an Origin value (scheme://host[:port]), lower-cased; "" when malformed.
std::string origin_host(const std::string& origin) {
  const auto scheme = origin.find("://");
  if (scheme == std::string::npos) return {};
  std::string rest = lower(origin.substr(scheme + 3));
  if (rest.empty()) return {};
  if (rest.front() == '[') {
    const auto close = rest.find(']');
    return close == std::string::npos ? std::string() : rest.substr(0, close + 1);
  }
  return rest.substr(0, rest.find_first_of(":/"));
}

// Compares in time independent of where the strings differ (the length aside).
bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  volatile unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff = diff | static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string new_session_id() {
  std::random_device device;
  std::string id;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) id += kHex[device() % 16];
  return id;
}

Json rpc_error(int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", nullptr}, {"error", {{"code", code}, {"message", message}}}};
}

const detail::HttpHeaders kJson = {{"Content-Type", "application/json"}};

}  // namespace

// One HTTP session: the MCP session and where its messages go.
struct McpHttpListener::Session {
  std::string id;
  std::shared_ptr<McpServerSession> mcp;
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<HttpResponder>> requests;  // request id (dumped) -> its POST stream
  std::map<std::string, std::string> progress;                     // progress token (dumped) -> request id
  std::shared_ptr<HttpResponder> standalone;                        // the GET stream
  std::atomic<std::int64_t> last_used{0};                           // steady clock ticks of its last request

  void route(const Json& message);
  // Nothing in flight and no stream open: safe to end when room is needed.
  bool idle() {
    std::lock_guard lock(mutex);
    return requests.empty() && !(standalone && standalone->open()) && mcp->calls_in_flight() == 0;
  }
};

namespace {
std::int64_t now_ticks() { return std::chrono::steady_clock::now().time_since_epoch().count(); }
}  // namespace

void McpHttpListener::Session::route(const Json& message) {
  const std::string data = message.dump(-1, ' ', false, Json::error_handler_t::replace);
  const bool response = message.contains("id") && !message.contains("method");
  const bool ours = message.contains("id") && message.contains("method");  // a request of the server's
  // Asked before taking this session's lock: the MCP session has its own.
  const std::optional<Json> origin = ours ? mcp->origin_of(message["id"]) : std::nullopt;
  std::shared_ptr<HttpResponder> target;
  bool last = false;
  {
    std::lock_guard lock(mutex);
    std::string request;
    if (response) {
      request = message["id"].dump();
    } else if (message.value("method", "") == "notifications/progress") {
      const auto it = progress.find(message["params"].value("progressToken", Json()).dump());
      if (it != progress.end()) request = it->second;
    }
    if (auto it = requests.find(request); !request.empty() && it != requests.end()) {
      target = it->second;
      if (response) {
        last = true;
        requests.erase(it);
        std::erase_if(progress, [&](const auto& p) { return p.second == request; });
      }
    } else if (ours && origin) {
      // An elicitation goes on the stream of the call it asks about.
      if (auto it = requests.find(origin->dump()); it != requests.end() && it->second->open()) target = it->second;
    }
    if (!target && !response && (!ours || (standalone && standalone->open()))) target = standalone;
    if (!target && ours && !requests.empty()) {
      target = requests.begin()->second;  // its own stream is gone and no GET stream is open: any stream, not none
    }
  }
  if (!target) return;  // nobody listening: a notification for no stream, an answer after its client left
  target->send_event(data);
  if (last) target->end();
}

struct McpHttpListener::Impl {
  Impl(McpServer& s, McpHttpListenerOptions o) : server(s), options(std::move(o)) {}
  McpServer& server;
  McpHttpListenerOptions options;
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Session>> sessions;
  std::unique_ptr<detail::HttpServer> http;

  void handle(const detail::HttpRequest& request, const std::shared_ptr<HttpResponder>& responder);
  void post(const detail::HttpRequest& request, const std::shared_ptr<HttpResponder>& responder);
  void get(const std::shared_ptr<Session>& session, const std::shared_ptr<HttpResponder>& responder);
  // The session a request names: null after answering 400 (none named) or 404 (unknown).
  std::shared_ptr<Session> session_of(const detail::HttpRequest& request, HttpResponder& responder);
  void refuse(HttpResponder& responder, int status, const std::string& message, detail::HttpHeaders headers = kJson) {
    responder.respond(status, std::move(headers), rpc_error(-32600, message).dump());
  }
};

std::shared_ptr<McpHttpListener::Session> McpHttpListener::Impl::session_of(const detail::HttpRequest& request,
                                                                        HttpResponder& responder) {
  const std::string id = request.header("Mcp-Session-Id").value_or("");
  if (id.empty()) {
    refuse(responder, 400, "Bad Request: Mcp-Session-Id header is required");
    return nullptr;
  }
  std::lock_guard lock(mutex);
  auto it = sessions.find(id);
  if (it == sessions.end()) {
    responder.respond(404, kJson, rpc_error(-32001, "Session not found").dump());
    return nullptr;
  }
  it->second->last_used = now_ticks();
  return it->second;
}

void McpHttpListener::Impl::handle(const detail::HttpRequest& request, const std::shared_ptr<HttpResponder>& responder) {
  const std::string path = request.target.substr(0, request.target.find('?'));
  if (path != options.path) return responder->respond(404, {{"Content-Type", "text/plain"}}, "not found");
  // DNS rebinding: a browser page's request carries its Origin; only
  // loopback pages and the allowlist may reach the server.
  if (const std::string origin = request.header("Origin").value_or(""); !origin.empty()) {
    const bool listed = std::find(options.allowed_origins.begin(), options.allowed_origins.end(), origin) !=
                        options.allowed_origins.end();
    if (!listed && !loopback_host(origin_host(origin))) return refuse(*responder, 403, "Forbidden: Origin not allowed");
  }
  if (!options.bearer_token.empty()) {
    const std::string auth = request.header("Authorization").value_or("");
    const bool ok = auth.size() > 7 && lower(auth.substr(0, 7)) == "bearer " && same_secret(auth.substr(7), options.bearer_token);
    if (!ok) {
      return responder->respond(401, {{"Content-Type", "application/json"}, {"WWW-Authenticate", "Bearer realm=\"mcp\""}},
                                rpc_error(-32600, "Unauthorized").dump());
    }
  }
  if (const std::string version = request.header("MCP-Protocol-Version").value_or(""); !version.empty()) {
    const auto& supported = mcp_supported_versions();
    if (std::find(supported.begin(), supported.end(), version) == supported.end()) {
      return refuse(*responder, 400, "Bad Request: unsupported MCP-Protocol-Version");
    }
  }
  if (request.method == "POST") return post(request, responder);
  if (request.method == "GET") {
    if (auto session = session_of(request, *responder)) get(session, responder);
    return;
  }
  if (request.method == "DELETE") {
    auto session = session_of(request, *responder);
    if (!session) return;
    {
      std::lock_guard lock(mutex);
      sessions.erase(session->id);
    }
    session->mcp->close();
    std::shared_ptr<HttpResponder> standalone;
    {
      std::lock_guard lock(session->mutex);
      standalone = std::move(session->standalone);
    }
    if (standalone) standalone->end();
    return responder->respond(204, {}, "");
  }
  responder->respond(405, {{"Allow", "GET, POST, DELETE"}, {"Content-Type", "text/plain"}}, "method not allowed");
}

void McpHttpListener::Impl::post(const detail::HttpRequest& request, const std::shared_ptr<HttpResponder>& responder) {
  std::string problem;
  auto message = mcp_detail::parse_message(request.body, problem);
  if (!message) return responder->respond(400, kJson, rpc_error(-32700, "Parse error: the body " + problem).dump());
  if (!message->is_object()) return refuse(*responder, 400, "Invalid Request: one JSON-RPC message object per POST");
  const auto id = message->find("id");
  const bool has_method = message->contains("method");
  const bool is_request = has_method && id != message->end();
  const bool is_notification = has_method && id == message->end();
  const bool is_response = !has_method && id != message->end() && (message->contains("result") || message->contains("error"));
  if (!is_request && !is_notification && !is_response) return refuse(*responder, 400, "Invalid Request: not a JSON-RPC message");
  if (is_request && !id->is_string() && !id->is_number_integer()) {
    return refuse(*responder, 400, "Invalid Request: id must be a string or an integer");
  }
  const bool initialize = is_request && message->value("method", Json()) == "initialize";

  std::shared_ptr<Session> session;
  if (initialize && !request.header("Mcp-Session-Id")) {
    session = std::make_shared<Session>();
    session->id = new_session_id();
    std::weak_ptr<Session> weak = session;
    session->mcp = server.open_session([weak](const Json& m) {
      if (auto s = weak.lock()) s->route(m);
    });
    session->last_used = now_ticks();
    std::shared_ptr<Session> evicted;
    {
      std::lock_guard lock(mutex);
      if (sessions.size() >= options.max_sessions) {
        // Clients that never DELETE must not lock others out: the least
        // recently used idle session makes room.
        for (auto& entry : sessions) {
          if (entry.second->idle() && (!evicted || entry.second->last_used < evicted->last_used)) evicted = entry.second;
        }
        if (!evicted) return responder->respond(503, kJson, rpc_error(-32603, "too many sessions").dump());
        sessions.erase(evicted->id);
      }
      sessions.emplace(session->id, session);
    }
    if (evicted) evicted->mcp->close();
  } else if (!(session = session_of(request, *responder))) {
    return;
  }
  if (!is_request) {
    session->mcp->receive(*message);
    return responder->respond(202, {}, "");
  }
  const std::string key = id->dump();
  {
    std::lock_guard lock(session->mutex);
    if (session->requests.count(key)) {
      return responder->respond(200, kJson,
                                Json{{"jsonrpc", "2.0"}, {"id", *id}, {"error", {{"code", -32600}, {"message", "request id already in flight"}}}}.dump());
    }
    session->requests.emplace(key, responder);
    const Json params = message->value("params", Json());
    if (params.is_object() && params.contains("_meta") && params["_meta"].is_object()) {
      const Json token = params["_meta"].value("progressToken", Json());
      if (!token.is_null()) session->progress[token.dump()] = key;
    }
  }
  detail::HttpHeaders headers = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};
  if (initialize) headers.emplace_back("Mcp-Session-Id", session->id);
  responder->start_stream(200, std::move(headers));
  session->mcp->receive(*message);
}

void McpHttpListener::Impl::get(const std::shared_ptr<Session>& session, const std::shared_ptr<HttpResponder>& responder) {
  {
    std::lock_guard lock(session->mutex);
    if (session->standalone && session->standalone->open()) {
      return refuse(*responder, 409, "Conflict: the session's GET stream is already open");
    }
    session->standalone = responder;
  }
  responder->start_stream(200, {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}});
}

// ------------------------------------------------------------------ server

McpHttpListener::McpHttpListener(McpServer& server, McpHttpListenerOptions options)
    : impl_(std::make_unique<Impl>(server, std::move(options))) {
  Impl& impl = *impl_;
  if (!loopback_host(lower(impl.options.host)) && impl.options.bearer_token.empty()) {
    throw Error(ErrorCode::invalid_argument, "MCP over HTTP on " + impl.options.host +
                                                 " (not loopback) needs a bearer token: anyone who reaches the port "
                                                 "could call the tools");
  }
  detail::HttpServerOptions http;
  http.host = impl.options.host;
  http.port = impl.options.port;
  http.max_body_bytes = impl.options.max_body_bytes;
  http.max_connections = impl.options.max_connections;
  impl.http = std::make_unique<detail::HttpServer>(http, [&impl](const detail::HttpRequest& request, std::shared_ptr<HttpResponder> responder) {
    impl.handle(request, responder);
  });
}

McpHttpListener::~McpHttpListener() {
  stop();
  std::map<std::string, std::shared_ptr<Session>> sessions;
  {
    std::lock_guard lock(impl_->mutex);
    sessions.swap(impl_->sessions);
  }
  for (auto& entry : sessions) entry.second->mcp->close();
}

void McpHttpListener::listen() { impl_->http->listen(); }
int McpHttpListener::port() const { return impl_->http->port(); }
std::string McpHttpListener::url() const { return impl_->http->url() + impl_->options.path; }
void McpHttpListener::run_in_thread() { impl_->http->run_in_thread(); }
void McpHttpListener::stop() { impl_->http->stop(); }

bool McpHttpListener::poll() {
  bool busy = impl_->http->poll();
  std::vector<std::shared_ptr<Session>> sessions;
  {
    std::lock_guard lock(impl_->mutex);
    for (auto& entry : impl_->sessions) sessions.push_back(entry.second);
  }
  for (auto& session : sessions) busy = session->mcp->poll() > 0 || busy;
  return busy;
}

}  // namespace agentkit::providers
