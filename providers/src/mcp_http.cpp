// The Streamable HTTP transport over agentkit's Transport. Each POST runs on
// its own short-lived thread (a tools/call answered as a long SSE stream must
// not hold up other calls or their cancellations); the standalone GET stream
// has one thread that reconnects with Last-Event-ID. Statuses are read, not
// thrown (HttpRequest::any_status), so 202, 404 and 400 can be interpreted.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>

#include <spdlog/spdlog.h>

#include <agentkit/providers/mcp.h>
#include <agentkit/detail/logging.h>
#include <agentkit/backoff.h>
#include <agentkit/redact.h>
#include <agentkit/providers/sse.h>

#include "mcp_detail.h"
#include "trace_header.h"

namespace agentkit::providers {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kPollWait{50};
constexpr milliseconds kDeleteTimeout{1'000};
constexpr milliseconds kNotificationTimeout{5'000};  // a notification or reply POST (normally a quick 202)
constexpr milliseconds kStreamRetryMin{250};
constexpr milliseconds kStreamRetryMax{10'000};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool is_request(const Json& message) { return message.contains("method") && message.contains("id"); }

// The `traceparent` in a request's params._meta, for the HTTP header that
// carries it too (so HTTP middleboxes see the trace); empty when none.
std::string_view traceparent_of(const Json& message) {
  const auto params = message.find("params");
  if (params == message.end() || !params->is_object()) return {};
  const auto meta = params->find("_meta");
  if (meta == params->end() || !meta->is_object()) return {};
  const auto value = meta->find("traceparent");
  if (value == meta->end() || !value->is_string()) return {};
  return value->get_ref<const std::string&>();
}

// What one HTTP exchange produced.
struct Reply {
  int status = 0;
  std::string content_type;
  std::string body;  // a non-SSE body
  bool answered = false;  // a response for the request's id was delivered
};

class HttpTransport final : public McpTransport {
 public:
  HttpTransport(McpHttpServer server, std::shared_ptr<spdlog::logger> logger)
      : server_(std::move(server)),
        logger_(agentkit::detail::logger_or_null(logger)),
        where_("HTTP server " + url_for_messages(server_.url)),
        transport_([&] {
          TransportOptions options = server_.transport;
          options.max_retries = 0;  // a replayed POST could run a tools/call twice
          return options;
        }()) {
    for (const auto& [name, value] : server_.headers) secrets_.add(value);
  }

  ~HttpTransport() override { close(); }

  void start(Callbacks callbacks) override {
    std::lock_guard lock(mutex_);
    if (server_.url.empty()) throw McpError(McpError::Kind::disconnected, "MCP HTTP server: the URL is empty");
    callbacks_ = std::move(callbacks);
    started_ = true;
  }

  void send(const Json& message) override;
  void initialized(const std::string& protocol_version) override;
  void close() override;
  std::string describe() const override { return where_; }
  std::string redact(std::string text) const override;

 private:
  HttpRequest make_request(const std::string& method, bool initialize) const;
  // POSTs one message and interprets the answer; gives up at `deadline`.
  void post(const Json& message, std::optional<Clock::time_point> deadline);
  // `watch`, when given, is the session generation a GET stream belongs to:
  // the stream is dropped as soon as the session changes.
  Reply exchange(HttpRequest request, const Json* request_message, std::optional<std::uint64_t> watch,
                 std::optional<Clock::time_point> deadline = std::nullopt);
  void deliver(std::string_view text, const Json* request_message, Reply& reply);
  void interpret(const Json& message, const std::string& session_sent, Reply& reply);
  void expire(const std::string& session_sent);
  void stream_loop();
  // Waits up to `duration`; true once closed. Returns early on a new session
  // (one after `generation`) or on close.
  bool wait_stop(milliseconds duration, std::uint64_t generation);
  // Bumps the session generation and wakes wait_stop. Under mutex_.
  void new_session();

  McpHttpServer server_;
  Redactor secrets_;
  std::shared_ptr<spdlog::logger> logger_;
  std::string where_;
  Transport transport_;
  CancellationToken cancel_;  // fires on close: every exchange stops within a poll tick

  mutable std::mutex mutex_;
  std::mutex order_mutex_;  // serialises the POSTs of notifications and replies
  std::stop_source session_changed_;  // stopped (and replaced) when the session changes: wakes wait_stop
  Callbacks callbacks_;
  bool started_ = false;
  bool closed_ = false;
  std::string session_id_;
  std::string protocol_version_;
  std::string last_event_id_;
  std::uint64_t session_generation_ = 0;  // bumped when the session changes: the GET stream reconnects

  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<Worker> workers_;
  std::thread stream_thread_;
};

// Every header value the host configured is treated as a credential.
std::string HttpTransport::redact(std::string text) const { return secrets_.redact(std::move(text)); }

HttpRequest HttpTransport::make_request(const std::string& method, bool initialize) const {
  HttpRequest request;
  request.method = method;
  request.url = server_.url;
  request.any_status = true;
  request.headers = server_.headers;
  std::lock_guard lock(mutex_);
  if (method == "GET") {
    request.headers.emplace_back("Accept", "text/event-stream");
    if (!last_event_id_.empty()) request.headers.emplace_back("Last-Event-ID", last_event_id_);
  } else {
    request.headers.emplace_back("Accept", "application/json, text/event-stream");
    request.headers.emplace_back("Content-Type", "application/json");
  }
  if (!initialize && !session_id_.empty()) request.headers.emplace_back("Mcp-Session-Id", session_id_);
  if (!initialize && !protocol_version_.empty()) request.headers.emplace_back("MCP-Protocol-Version", protocol_version_);
  return request;
}

// A request gets its own thread (its answer may stream for long). Anything
// else (a notification, a reply to a server request) is posted right here,
// one at a time: the server sees them in order, and before any request sent
// after them (notifications/initialized before tools/list).
void HttpTransport::send(const Json& message) {
  if (!is_request(message)) {
    {
      std::lock_guard lock(mutex_);
      if (!started_ || closed_) throw McpError(McpError::Kind::disconnected, where_ + ": the transport is closed");
    }
    std::lock_guard order(order_mutex_);
    post(message, Clock::now() + kNotificationTimeout);
    return;
  }
  std::lock_guard lock(mutex_);
  if (!started_ || closed_) throw McpError(McpError::Kind::disconnected, where_ + ": the transport is closed");
  auto done = std::make_shared<std::atomic<bool>>(false);
  workers_.push_back({std::thread([this, message, done] {
                        post(message, std::nullopt);
                        *done = true;
                      }),
                      done});
  // Finished POST threads are joined as new ones start.
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (*it->done) {
      it->thread.join();
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
}

void HttpTransport::post(const Json& message, std::optional<Clock::time_point> deadline) {
  if (logger_->should_log(spdlog::level::trace)) logger_->trace("{} <- {}", where_, redact(preview(message, 300)));
  const bool initialize = message.value("method", "") == "initialize";
  HttpRequest request = make_request("POST", initialize);
  detail::set_traceparent(request.headers, traceparent_of(message));
  request.body = message.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string session_sent;
  for (const auto& [name, value] : request.headers) {
    if (name == "Mcp-Session-Id") session_sent = value;
  }
  Reply reply;
  try {
    reply = exchange(std::move(request), &message, std::nullopt, deadline);
  } catch (const std::exception& e) {
    if (cancel_.cancelled()) return;
    if (callbacks_.failed) callbacks_.failed(message, McpError(McpError::Kind::disconnected, where_ + ": " + redact(e.what())));
    return;
  }
  interpret(message, session_sent, reply);
}

// Runs one request to its end. SSE events are delivered as they arrive;
// any other body is returned whole.
Reply HttpTransport::exchange(HttpRequest request, const Json* request_message, std::optional<std::uint64_t> watch,
                             std::optional<Clock::time_point> deadline) {
  Reply reply;
  bool sse = false;
  SseDecoder decoder(mcp_detail::kMaxMessageBytes);
  const auto on_event = [&](const SseEvent& event) {
    if (watch && !event.id.empty()) {  // the GET stream resumes from its own events only
      std::lock_guard lock(mutex_);
      last_event_id_ = event.id;
    }
    if (!event.data.empty()) deliver(event.data, request_message, reply);
  };
  const auto on_headers = [&](const HttpResponse& response) {
    reply.status = response.status;
    reply.content_type = lower(response.header("content-type").value_or(""));
    sse = reply.status / 100 == 2 && reply.content_type.starts_with("text/event-stream");
    const auto session = response.header("mcp-session-id");
    if (session && reply.status / 100 == 2) {
      std::lock_guard lock(mutex_);
      if (session_id_ != *session) {
        session_id_ = std::string(*session);
        new_session();
      }
    }
  };
  const auto on_data = [&](std::string_view bytes) {
    if (sse) {
      decoder.feed(bytes, on_event);
      return true;
    }
    if (reply.body.size() + bytes.size() > mcp_detail::kMaxMessageBytes) {
      throw McpError(McpError::Kind::protocol, where_ + " sent a body larger than " +
                                                   std::to_string(mcp_detail::kMaxMessageBytes) + " bytes");
    }
    reply.body.append(bytes);
    return true;
  };
  AsyncRequest call = transport_.start_stream(std::move(request), on_data, &cancel_, on_headers);
  while (!call.poll()) {
    if (watch) {
      std::lock_guard lock(mutex_);
      if (session_generation_ != *watch) call.cancel();  // a new session: reconnect the GET stream
    }
    if (deadline && Clock::now() >= *deadline) call.cancel();
    call.wait(kPollWait);
  }
  const HttpResponse response = call.take();
  if (reply.status == 0) reply.status = response.status;
  if (sse) decoder.finish(on_event);
  return reply;
}

void HttpTransport::deliver(std::string_view text, const Json* request_message, Reply& reply) {
  if (logger_->should_log(spdlog::level::trace)) {
    logger_->trace("{} sent: {}", where_, redact(mcp_detail::preview_text(text, 300)));
  }
  std::string problem;
  auto message = mcp_detail::parse_message(text, problem);
  if (!message) {
    logger_->warn("{} sent a message that {}; skipped: {}", where_, problem, redact(mcp_detail::preview_text(text)));
    return;
  }
  if (request_message && message->is_object() && !message->contains("method") && message->contains("id") &&
      (*message)["id"] == (*request_message)["id"]) {
    reply.answered = true;
  }
  if (callbacks_.message) callbacks_.message(std::move(*message));
}

void HttpTransport::interpret(const Json& message, const std::string& session_sent, Reply& reply) {
  const std::string method = message.value("method", std::string("a response"));
  if (reply.status / 100 == 2) {
    if (!reply.body.empty() && reply.content_type.find("json") != std::string::npos) deliver(reply.body, &message, reply);
    // A request answered by 202 gets its response on the GET stream.
    if (is_request(message) && !reply.answered && reply.status != 202 && callbacks_.failed) {
      callbacks_.failed(message, McpError(McpError::Kind::disconnected,
                                          where_ + ": the response to " + method + " ended without an answer"));
    }
    return;
  }
  // The server forgot the session: 404 per the spec, or a 400 that says so.
  const bool names_session = lower(reply.body).find("session") != std::string::npos;
  if (!session_sent.empty() && (reply.status == 404 || (reply.status == 400 && names_session))) {
    expire(session_sent);
    if (callbacks_.failed) {
      callbacks_.failed(message, McpError(McpError::Kind::session_expired,
                                          where_ + ": the session expired (HTTP " + std::to_string(reply.status) + ")"));
    }
    return;
  }
  // A JSON-RPC error for this request still answers it.
  std::string problem;
  if (auto body = mcp_detail::parse_message(reply.body, problem);
      body && body->is_object() && body->contains("error") && body->value("id", Json()) == message.value("id", Json())) {
    if (callbacks_.message) callbacks_.message(std::move(*body));
    return;
  }
  if (callbacks_.failed) {
    callbacks_.failed(message, McpError(McpError::Kind::disconnected,
                                        where_ + " answered " + method + " with HTTP " + std::to_string(reply.status) +
                                            (reply.body.empty() ? "" : ": " + redact(mcp_detail::preview_text(reply.body, 200))),
                                        0, Json{{"http_status", reply.status}}));
  }
}

void HttpTransport::expire(const std::string& session_sent) {
  std::lock_guard lock(mutex_);
  if (session_id_ == session_sent) {
    session_id_.clear();
    last_event_id_.clear();
    new_session();
  }
}

void HttpTransport::initialized(const std::string& protocol_version) {
  std::lock_guard lock(mutex_);
  protocol_version_ = protocol_version;
  if (server_.standalone_stream && !stream_thread_.joinable() && !closed_) {
    stream_thread_ = std::thread([this] { stream_loop(); });
  }
}

// The standalone GET stream: server requests and notifications outside any
// call. 405 means the server offers none. Other endings reconnect with
// backoff, or at once for a new session. An expired session is left for the
// next POST to discover (it re-initialises; clearing it here would make that
// POST look like a request without a session).
void HttpTransport::stream_loop() {
  const Backoff backoff{.base = kStreamRetryMin, .max = kStreamRetryMax, .jitter = false};
  int failures = 0;  // in a row; a stream that was served resets them
  for (;;) {
    std::uint64_t generation = 0;
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
      generation = session_generation_;
    }
    Reply reply;
    try {
      reply = exchange(make_request("GET", false), nullptr, generation);
    } catch (const std::exception& e) {
      if (cancel_.cancelled()) return;
      logger_->debug("{}: the GET stream ended: {}", where_, e.what());
    }
    if (reply.status == 405) {
      logger_->debug("{} offers no standalone GET stream", where_);
      return;
    }
    failures = reply.status / 100 == 2 ? 0 : failures + 1;
    if (wait_stop(backoff.delay(failures + 1), generation)) return;
  }
}

void HttpTransport::new_session() {
  ++session_generation_;
  session_changed_.request_stop();
  session_changed_ = std::stop_source();
}

bool HttpTransport::wait_stop(milliseconds duration, std::uint64_t generation) {
  std::stop_token session_changed;
  {
    std::lock_guard lock(mutex_);
    if (closed_ || session_generation_ != generation) return closed_;
    session_changed = session_changed_.get_token();
  }
  cancel_.sleep_for(duration, session_changed);  // close() cancels cancel_
  std::lock_guard lock(mutex_);
  return closed_;
}

// Stops every exchange, then DELETEs the session (briefly; errors ignored).
void HttpTransport::close() {
  std::vector<Worker> workers;
  std::thread stream;
  std::string session;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    workers = std::move(workers_);
    stream = std::move(stream_thread_);
    session = session_id_;
  }
  cancel_.cancel();  // wakes wait_stop too
  for (auto& worker : workers) worker.thread.join();
  if (stream.joinable()) stream.join();
  if (session.empty()) return;
  HttpRequest request = make_request("DELETE", false);
  try {
    AsyncRequest call = transport_.start(std::move(request));
    const auto deadline = Clock::now() + kDeleteTimeout;
    while (!call.poll() && Clock::now() < deadline) call.wait(kPollWait);
    if (call.done()) call.take();
  } catch (const std::exception& e) {
    logger_->debug("{}: ending the session failed: {}", where_, e.what());
  }
}

}  // namespace

std::unique_ptr<McpTransport> make_http_transport(McpHttpServer server, std::shared_ptr<spdlog::logger> logger) {
  return std::make_unique<HttpTransport>(std::move(server), std::move(logger));
}

}  // namespace agentkit::providers
