// The MCP client: JSON-RPC request/response matching, the handshake, server
// requests and notifications, and the tools it exposes.
//
// Threads: transports deliver messages on their own threads. Responses and
// progress go straight to the waiting caller (each request has its own
// condition variable); server requests are answered on a dispatch worker and
// tools/list_changed is followed on a relist worker, so a slow handler or a
// re-listing never stalls the delivery of responses. Every wait is bounded
// by the request's deadline and checks the caller's cancellation token.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include <agentkit/detail/enum_table.h>
#include <agentkit/errors.h>
#include <agentkit/detail/logging.h>
#include <agentkit/invoker.h>
#include <agentkit/providers/mcp.h>

#include "mcp_detail.h"

namespace agentkit::providers {

namespace {

ErrorCode mcp_error_code(McpError::Kind kind, int rpc_code) noexcept {
  switch (kind) {
    case McpError::Kind::rpc:
      if (rpc_code == -32601) return ErrorCode::not_found;
      if (rpc_code == -32600 || rpc_code == -32602) return ErrorCode::invalid_argument;
      return ErrorCode::internal;
    case McpError::Kind::timeout: return ErrorCode::timeout;
    case McpError::Kind::cancelled: return ErrorCode::cancelled;
    case McpError::Kind::disconnected:
    case McpError::Kind::session_expired: return ErrorCode::unavailable;
    case McpError::Kind::protocol: return ErrorCode::protocol;
  }
  return ErrorCode::internal;
}

}  // namespace

McpError::McpError(Kind kind, std::string message, int code, Json data)
    : Error(mcp_error_code(kind, code), message), kind_(kind), rpc_code_(code), data_(std::move(data)) {}

namespace {
constexpr EnumValue<McpError::Kind> kMcpErrorKinds[] = {
    {McpError::Kind::rpc, "rpc"},
    {McpError::Kind::timeout, "timeout"},
    {McpError::Kind::cancelled, "cancelled"},
    {McpError::Kind::disconnected, "disconnected"},
    {McpError::Kind::protocol, "protocol"},
    {McpError::Kind::session_expired, "session_expired"},
};
}  // namespace

std::string_view to_string(McpError::Kind kind) noexcept { return agentkit::detail::enum_text(kMcpErrorKinds, kind); }

McpToolError::McpToolError(std::string tool, const std::string& text, Json result)
    : Error(ErrorCode::internal, text.empty() ? "MCP tool '" + tool + "' reported an error without details" : text),
      tool_(std::move(tool)),
      result_(std::move(result)) {}

const std::vector<std::string>& mcp_supported_versions() {
  static const std::vector<std::string> versions{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
  return versions;
}

namespace detail {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kCancelTick{10};  // how often a waiting call looks at its cancellation token
constexpr int kMaxPages = 1000;          // tools/list pages followed before giving up on a cursor loop

// Runs jobs one at a time, in order, on its own thread.
class McpWorker {
 public:
  ~McpWorker() { stop(); }

  void start() { thread_ = std::thread([this] { loop(); }); }

  void post(std::function<void()> job) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }

  // Finishes the job in progress, drops the rest.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (!thread_.joinable()) return;
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();  // a job closed its own client
    } else {
      thread_.join();
    }
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (stopping_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

struct McpProgressNote {
  double progress = 0;
  std::optional<double> total;
  std::string message;
};

// One request waiting for its response.
struct McpPending {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  Json response;
  std::optional<McpError> error;
  std::deque<McpProgressNote> progress;
};

struct McpCallOptions {
  const RunContext* ctx = nullptr;
  milliseconds timeout{0};
  std::string progress_tool;  // non-empty: ask for progress, report it as this tool's
};

namespace {

std::string string_field(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

class McpSession : public std::enable_shared_from_this<McpSession> {
 public:
  McpSession(std::unique_ptr<McpTransport> transport, McpClientOptions options)
      : transport_(std::move(transport)),
        options_(std::move(options)),
        logger_(agentkit::detail::logger_or_null(options_.logger)),
        where_("MCP server '" + options_.server_name + "'") {
    if (!transport_) throw Error(ErrorCode::invalid_argument, "McpClient: the transport is null");
    if (options_.roots) roots_ = *options_.roots;
  }

  ~McpSession() { close(); }

  void connect();
  bool connected() const noexcept {
    std::lock_guard lock(mutex_);
    return initialized_ && !closed_ && !transport_closed_;
  }
  const McpServerInfo& server() const { return server_; }

  std::vector<McpToolInfo> list_tools();
  std::vector<ToolPtr> tools() const {
    std::lock_guard lock(tools_mutex_);
    return tools_;
  }
  McpCallResult call_tool(const std::string& name, const Json& arguments, const RunContext* ctx,
                          std::optional<milliseconds> timeout);
  Json request(const std::string& method, const Json& params, const McpCallOptions& options);
  milliseconds timeout_or_default(std::optional<milliseconds> timeout) const {
    return timeout.value_or(options_.request_timeout);
  }
  void notify(const std::string& method, const Json& params);
  void set_roots(std::vector<McpRoot> roots);
  void close();

 private:
  Json request_once(const std::string& method, const Json& params, const McpCallOptions& options);
  Json wait_for(std::int64_t id, McpPending& pending, const std::string& method, const McpCallOptions& options);
  void abandon(std::int64_t id, const std::string& method, const std::string& reason);
  void forget(std::int64_t id);
  McpError unavailable() const;
  void handshake(bool first);
  void reinitialize(std::uint64_t generation);
  Json capabilities() const;
  void refresh_tools(bool announce);
  void schedule_relist();

  // Incoming traffic, on transport threads.
  void on_message(Json message);
  void on_one(Json message);
  void on_response(const Json& message);
  void on_notification(const std::string& method, const Json& params);
  void on_progress(const Json& params);
  void on_server_log(const Json& params);
  void on_closed(const std::string& reason);
  void on_failed(const Json& message, const McpError& error);
  void answer(const Json& request);
  Json handle_server_request(const std::string& method, const Json& params);
  void send_quietly(const Json& message);
  void fail_all(const McpError& error);

  std::unique_ptr<McpTransport> transport_;
  McpClientOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  std::string where_;

  mutable std::mutex mutex_;  // guards the flags, ids and pending_
  bool started_ = false;
  bool initialized_ = false;
  bool closed_ = false;
  bool transport_closed_ = false;
  std::string closed_reason_;
  std::int64_t next_id_ = 1;
  std::map<std::int64_t, std::shared_ptr<McpPending>> pending_;

  McpServerInfo server_;
  std::mutex handshake_mutex_;
  std::atomic<std::uint64_t> generation_{0};  // bumped by each re-initialisation

  mutable std::mutex tools_mutex_;
  std::vector<ToolPtr> tools_;
  std::atomic<bool> relist_pending_{false};

  std::mutex roots_mutex_;
  std::vector<McpRoot> roots_;

  McpWorker requests_worker_;
  McpWorker relist_worker_;
};

namespace {

// An agentkit Tool over one MCP tool.
class McpTool final : public Tool {
 public:
  McpTool(std::weak_ptr<McpSession> session, McpToolInfo info, ToolSpec spec)
      : session_(std::move(session)), info_(std::move(info)), spec_(std::move(spec)) {}

  const ToolSpec& spec() const noexcept override { return spec_; }

  // The result as text (image blocks as notes), or structuredContent.
  Json run(const Json& arguments, RunContext& ctx) const override { return call(arguments, ctx).value(); }

  // What the invoker calls: an image block reaches the model as an
  // ImagePart; a result of text blocks alone is what run() returns.
  ToolOutput run_output(const Json& arguments, RunContext& ctx) const override {
    const McpCallResult result = call(arguments, ctx);
    std::vector<ContentPart> parts = result.parts();
    const bool typed = std::any_of(parts.begin(), parts.end(),
                                   [](const ContentPart& p) { return !std::holds_alternative<TextPart>(p); });
    if (!typed) return {result.value(), {}};
    if (result.structured.is_null()) return {Json(nullptr), std::move(parts)};
    std::erase_if(parts, [](const ContentPart& p) { return std::holds_alternative<TextPart>(p); });
    return {result.structured, std::move(parts)};
  }

 private:
  McpCallResult call(const Json& arguments, RunContext& ctx) const {
    check_arguments(arguments);  // Tool::check_arguments: the schema validator every tool without typed decoding shares
    auto session = session_.lock();
    if (!session) {
      throw McpError(McpError::Kind::disconnected, "MCP tool '" + info_.name + "' is unavailable: its client was closed");
    }
    McpCallResult result;
    try {
      result = session->call_tool(info_.name, arguments, &ctx, std::nullopt);
    } catch (const McpError& e) {
      // The server has the call and may have acted on it before going quiet.
      if (e.kind() == McpError::Kind::timeout && side_effecting_for(arguments)) {
        throw OutcomeUnknownError(std::string(e.what()) + "; it may or may not have taken effect, so it was not retried");
      }
      throw;
    }
    if (result.is_error) throw McpToolError(info_.name, result.text(), result.raw);
    return result;
  }

  std::weak_ptr<McpSession> session_;
  McpToolInfo info_;
  ToolSpec spec_;
};

McpError rpc_error(const McpTransport& transport, const std::string& where, const std::string& method,
                   const Json& error) {
  if (!error.is_object()) {
    return McpError(McpError::Kind::rpc,
                    where + " answered " + method + " with a malformed error: " + transport.redact(preview(error)));
  }
  const int code = error.contains("code") && error["code"].is_number_integer() ? error["code"].get<int>() : 0;
  const std::string message = string_field(error, "message");
  return McpError(McpError::Kind::rpc,
                  where + " answered " + method + " with error " + std::to_string(code) + ": " +
                      transport.redact(mcp_detail::preview_text(message, 400)),
                  code, error.value("data", Json()));
}

}  // namespace

// ------------------------------------------------------------- lifecycle

void McpSession::connect() {
  {
    std::lock_guard lock(mutex_);
    if (closed_) throw unavailable();
    if (started_) return;
    started_ = true;
  }
  requests_worker_.start();
  relist_worker_.start();
  try {
    transport_->start({.message = [this](Json m) { on_message(std::move(m)); },
                       .closed = [this](const std::string& reason) { on_closed(reason); },
                       .failed = [this](const Json& m, const McpError& e) { on_failed(m, e); }});
    handshake(true);
    if (server_.capabilities.contains("tools")) refresh_tools(false);
  } catch (...) {
    close();
    throw;
  }
}

Json McpSession::capabilities() const {
  Json caps = Json::object();
  if (options_.roots) caps["roots"] = {{"listChanged", true}};
  if (options_.sampling) caps["sampling"] = Json::object();
  if (options_.elicitation) caps["elicitation"] = Json::object();
  return caps;
}

void McpSession::handshake(bool first) {
  const Json params = {{"protocolVersion", options_.protocol_version},
                       {"capabilities", capabilities()},
                       {"clientInfo", {{"name", options_.client_name}, {"version", options_.client_version}}}};
  const Json result =
      request_once("initialize", params, {.timeout = options_.connect_timeout.value_or(options_.request_timeout)});
  const std::string version = result.is_object() ? string_field(result, "protocolVersion") : std::string();
  if (version.empty()) {
    throw McpError(McpError::Kind::protocol, where_ + " answered initialize without a protocolVersion: " + preview(result));
  }
  const auto& supported = mcp_supported_versions();
  if (std::find(supported.begin(), supported.end(), version) == supported.end()) {
    std::string list;
    for (const auto& v : supported) list += (list.empty() ? "" : ", ") + v;
    throw McpError(McpError::Kind::protocol, where_ + " speaks MCP revision '" + mcp_detail::preview_text(version, 40) +
                                                 "', which this client does not support (supported: " + list + ")");
  }
  if (first) {
    const Json info = result.value("serverInfo", Json::object());
    server_.name = info.is_object() ? string_field(info, "name") : std::string();
    server_.version = info.is_object() ? string_field(info, "version") : std::string();
    server_.protocol_version = version;
    server_.instructions = string_field(result, "instructions");
    if (auto it = result.find("capabilities"); it != result.end() && it->is_object()) server_.capabilities = *it;
  }
  transport_->initialized(version);
  notify("notifications/initialized", nullptr);
  std::lock_guard lock(mutex_);
  initialized_ = true;
}

// Several calls may see the same expiry; the first re-initialises, the
// others find the generation moved on and just retry.
void McpSession::reinitialize(std::uint64_t generation) {
  std::lock_guard lock(handshake_mutex_);
  if (generation_.load() != generation) return;
  logger_->info("{}: the session expired; starting a new one", where_);
  handshake(false);
  ++generation_;
  schedule_relist();
}

void McpSession::close() {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
  }
  fail_all(McpError(McpError::Kind::disconnected, where_ + ": the client was closed"));
  requests_worker_.stop();
  relist_worker_.stop();
  bool started = false;
  {
    std::lock_guard lock(mutex_);
    started = started_;
  }
  if (started) transport_->close();
}

McpError McpSession::unavailable() const {
  // mutex_ held by the caller or not needed: reads of settled flags.
  if (transport_closed_) return McpError(McpError::Kind::disconnected, where_ + ": " + closed_reason_);
  if (closed_) return McpError(McpError::Kind::disconnected, where_ + ": the client was closed");
  return McpError(McpError::Kind::disconnected, where_ + ": not connected (call connect() first)");
}

// -------------------------------------------------------------- requests

Json McpSession::request(const std::string& method, const Json& params, const McpCallOptions& options) {
  for (int attempt = 0;; ++attempt) {
    const std::uint64_t generation = generation_.load();
    try {
      return request_once(method, params, options);
    } catch (const McpError& e) {
      if (e.kind() != McpError::Kind::session_expired || attempt > 0) throw;
      reinitialize(generation);
    }
  }
}

Json McpSession::request_once(const std::string& method, const Json& params, const McpCallOptions& options) {
  auto pending = std::make_shared<McpPending>();
  std::int64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (closed_ || transport_closed_ || !started_) throw unavailable();
    id = next_id_++;
    pending_.emplace(id, pending);
  }
  Json message = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) message["params"] = params;
  if (!options.progress_tool.empty() && message["params"].is_object()) message["params"]["_meta"]["progressToken"] = id;
  try {
    transport_->send(message);
  } catch (...) {
    forget(id);
    throw;
  }
  return wait_for(id, *pending, method, options);
}

Json McpSession::wait_for(std::int64_t id, McpPending& pending, const std::string& method, const McpCallOptions& options) {
  const auto deadline = Clock::now() + options.timeout;
  std::unique_lock lock(pending.mutex);
  for (;;) {
    while (!pending.progress.empty()) {
      McpProgressNote note = std::move(pending.progress.front());
      pending.progress.pop_front();
      lock.unlock();
      if (options.ctx) {
        options.ctx->emit(McpProgress{options_.server_name, options.progress_tool, note.progress, note.total, note.message});
      }
      lock.lock();
    }
    if (pending.done) break;
    const auto now = Clock::now();
    if (options.ctx && options.ctx->cancelled()) {
      lock.unlock();
      abandon(id, method, "cancelled by the caller");
      throw McpError(McpError::Kind::cancelled, where_ + ": " + method + " was cancelled");
    }
    if (now >= deadline) {
      lock.unlock();
      abandon(id, method, "timed out");
      throw McpError(McpError::Kind::timeout, where_ + ": no answer to " + method + " within " +
                                                  std::to_string(options.timeout.count()) + " ms");
    }
    pending.cv.wait_until(lock, options.ctx ? std::min(deadline, now + kCancelTick) : deadline);
  }
  lock.unlock();
  forget(id);
  if (pending.error) throw *pending.error;
  const Json& response = pending.response;
  if (auto error = response.find("error"); error != response.end()) throw rpc_error(*transport_, where_, method, *error);
  return response.value("result", Json::object());
}

// Forgets the request (a late response is then dropped) and tells the
// server, except for initialize, which must never be cancelled.
void McpSession::abandon(std::int64_t id, const std::string& method, const std::string& reason) {
  forget(id);
  if (method == "initialize") return;
  logger_->debug("{}: {} (id {}) {}; sending notifications/cancelled", where_, method, id, reason);
  send_quietly({{"jsonrpc", "2.0"},
                {"method", "notifications/cancelled"},
                {"params", {{"requestId", id}, {"reason", reason}}}});
}

void McpSession::forget(std::int64_t id) {
  std::lock_guard lock(mutex_);
  pending_.erase(id);
}

void McpSession::notify(const std::string& method, const Json& params) {
  {
    std::lock_guard lock(mutex_);
    if (closed_ || transport_closed_ || !started_) throw unavailable();
  }
  Json message = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) message["params"] = params;
  transport_->send(message);
}

void McpSession::send_quietly(const Json& message) {
  try {
    transport_->send(message);
  } catch (const std::exception& e) {
    logger_->debug("{}: could not send {}: {}", where_, string_field(message, "method"), transport_->redact(e.what()));
  }
}

// ----------------------------------------------------------------- tools

std::vector<McpToolInfo> McpSession::list_tools() {
  std::vector<McpToolInfo> tools;
  Json cursor;
  for (int page = 0; page < kMaxPages; ++page) {
    Json params = Json::object();
    if (!cursor.is_null()) params["cursor"] = cursor;
    const Json result = request("tools/list", params, {.timeout = options_.request_timeout});
    const Json entries = result.is_object() ? result.value("tools", Json::array()) : Json::array();
    if (!entries.is_array()) throw McpError(McpError::Kind::protocol, where_ + " answered tools/list without a tools array");
    for (const auto& entry : entries) tools.push_back(mcp_detail::tool_info(entry));
    const auto next = result.find("nextCursor");
    if (next == result.end() || !next->is_string() || next->get_ref<const std::string&>().empty()) return tools;
    cursor = *next;
  }
  throw McpError(McpError::Kind::protocol, where_ + " kept returning tools/list cursors past " +
                                               std::to_string(kMaxPages) + " pages");
}

void McpSession::refresh_tools(bool announce) {
  std::vector<ToolPtr> tools;
  for (auto& info : list_tools()) {
    ToolSpec spec = mcp_detail::tool_spec(info, options_.server_name);
    tools.push_back(std::make_shared<McpTool>(weak_from_this(), std::move(info), std::move(spec)));
  }
  {
    std::lock_guard lock(tools_mutex_);
    tools_ = tools;
  }
  if (announce && options_.on_tools_changed) options_.on_tools_changed(tools);
}

// list_changed often comes in bursts: one re-listing covers every
// notification that arrived before it started.
void McpSession::schedule_relist() {
  if (relist_pending_.exchange(true)) return;
  relist_worker_.post([this] {
    relist_pending_ = false;
    try {
      refresh_tools(true);
    } catch (const std::exception& e) {
      std::lock_guard lock(mutex_);
      if (!closed_) logger_->warn("{}: re-listing tools after list_changed failed: {}", where_, transport_->redact(e.what()));
    }
  });
}

McpCallResult McpSession::call_tool(const std::string& name, const Json& arguments, const RunContext* ctx,
                                    std::optional<milliseconds> timeout) {
  Json params = {{"name", name}, {"arguments", arguments.is_null() ? Json::object() : arguments}};
  // W3C trace context goes in _meta under its W3C names, unprefixed (MCP
  // SEP-414; the OpenTelemetry MCP conventions).
  if (ctx) {
    if (std::string traceparent = ctx->traceparent(); !traceparent.empty()) {
      params["_meta"]["traceparent"] = std::move(traceparent);
    }
  }
  const Json result = request("tools/call", params, {.ctx = ctx, .timeout = timeout_or_default(timeout), .progress_tool = name});
  return mcp_detail::call_result(result);
}

void McpSession::set_roots(std::vector<McpRoot> roots) {
  if (!options_.roots) {
    throw std::logic_error("McpClient::set_roots: set McpClientOptions::roots (even empty) to declare the roots capability");
  }
  {
    std::lock_guard lock(roots_mutex_);
    roots_ = std::move(roots);
  }
  bool live = false;
  {
    std::lock_guard lock(mutex_);
    live = initialized_ && !closed_ && !transport_closed_;
  }
  if (live) notify("notifications/roots/list_changed", nullptr);
}

// -------------------------------------------------------------- incoming

void McpSession::on_message(Json message) {
  if (!message.is_array()) return on_one(std::move(message));
  for (auto& one : message) on_one(std::move(one));  // a JSON-RPC batch (2025-03-26)
}

// Routing is by shape: a method and an id make a request, a method alone a
// notification, a result or error a response. An id alone never decides.
void McpSession::on_one(Json message) {
  if (!message.is_object()) {
    logger_->warn("{}: skipping a message that is not a JSON-RPC object: {}", where_, transport_->redact(preview(message)));
    return;
  }
  const auto method = message.find("method");
  if (method != message.end() && method->is_string()) {
    const auto id = message.find("id");
    if (id == message.end()) {
      return on_notification(method->get<std::string>(), message.value("params", Json::object()));
    }
    if (!id->is_string() && !id->is_number_integer()) {
      logger_->warn("{}: skipping a request with an invalid id: {}", where_, transport_->redact(preview(message)));
      return;
    }
    requests_worker_.post([this, request = std::move(message)] { answer(request); });
    return;
  }
  if (message.contains("result") || message.contains("error")) return on_response(message);
  logger_->warn("{}: skipping a message that is neither request, response nor notification: {}", where_,
                transport_->redact(preview(message)));
}

void McpSession::on_response(const Json& message) {
  const auto id = message.find("id");
  std::shared_ptr<McpPending> pending;
  if (id != message.end() && id->is_number_integer()) {
    std::lock_guard lock(mutex_);
    if (auto it = pending_.find(id->get<std::int64_t>()); it != pending_.end()) pending = it->second;
  }
  if (!pending) {
    // Late (cancelled or timed out), duplicated, or for an id of another type.
    logger_->debug("{}: dropping a response for no pending request: id {}", where_,
                   id == message.end() ? std::string("(none)") : preview(*id));
    return;
  }
  {
    std::lock_guard lock(pending->mutex);
    if (pending->done) return;
    pending->response = message;
    pending->done = true;
  }
  pending->cv.notify_all();
}

void McpSession::on_notification(const std::string& method, const Json& params) {
  if (method == "notifications/progress") return on_progress(params);
  if (method == "notifications/tools/list_changed") return schedule_relist();
  if (method == "notifications/message") return on_server_log(params);
  logger_->debug("{}: notification {}", where_, method);
}

void McpSession::on_progress(const Json& params) {
  if (!params.is_object()) return;
  const auto token = params.find("progressToken");
  std::shared_ptr<McpPending> pending;
  if (token != params.end() && token->is_number_integer()) {
    std::lock_guard lock(mutex_);
    if (auto it = pending_.find(token->get<std::int64_t>()); it != pending_.end()) pending = it->second;
  }
  if (!pending) return;
  McpProgressNote note;
  if (auto p = params.find("progress"); p != params.end() && p->is_number()) note.progress = p->get<double>();
  if (auto t = params.find("total"); t != params.end() && t->is_number()) note.total = t->get<double>();
  note.message = string_field(params, "message");
  {
    std::lock_guard lock(pending->mutex);
    pending->progress.push_back(std::move(note));
  }
  pending->cv.notify_all();
}

void McpSession::on_server_log(const Json& params) {
  if (!params.is_object()) return;
  const std::string level = string_field(params, "level");
  const Json data = params.value("data", Json());
  const std::string text = data.is_string() ? mcp_detail::preview_text(data.get<std::string>(), 400) : preview(data, 400);
  const std::string source = string_field(params, "logger");
  auto lvl = spdlog::level::info;
  if (level == "debug") lvl = spdlog::level::debug;
  if (level == "warning") lvl = spdlog::level::warn;
  if (level == "error" || level == "critical" || level == "alert" || level == "emergency") lvl = spdlog::level::err;
  logger_->log(lvl, "{} log{}: {}", where_, source.empty() ? std::string() : " (" + source + ")", text);
}

void McpSession::on_closed(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (transport_closed_) return;
    transport_closed_ = true;
    closed_reason_ = reason;
  }
  bool closing = false;
  {
    std::lock_guard lock(mutex_);
    closing = closed_;
  }
  if (!closing) logger_->warn("{}: {}", where_, transport_->redact(reason));
  fail_all(McpError(McpError::Kind::disconnected, where_ + ": " + reason));
}

void McpSession::on_failed(const Json& message, const McpError& error) {
  const auto id = message.find("id");
  const bool is_request = message.contains("method") && id != message.end() && id->is_number_integer();
  std::shared_ptr<McpPending> pending;
  if (is_request) {
    std::lock_guard lock(mutex_);
    if (auto it = pending_.find(id->get<std::int64_t>()); it != pending_.end()) pending = it->second;
  }
  if (!pending) {
    logger_->warn("{}: {} was not delivered: {}", where_, string_field(message, "method"), transport_->redact(error.what()));
    return;
  }
  {
    std::lock_guard lock(pending->mutex);
    if (pending->done) return;
    pending->error = error;
    pending->done = true;
  }
  pending->cv.notify_all();
}

void McpSession::fail_all(const McpError& error) {
  std::map<std::int64_t, std::shared_ptr<McpPending>> failing;
  {
    std::lock_guard lock(mutex_);
    failing = pending_;
  }
  for (auto& [id, pending] : failing) {
    {
      std::lock_guard lock(pending->mutex);
      if (pending->done) continue;
      pending->error = error;
      pending->done = true;
    }
    pending->cv.notify_all();
  }
}

// The id is echoed exactly as it came (string or number).
void McpSession::answer(const Json& request) {
  Json reply = {{"jsonrpc", "2.0"}, {"id", request["id"]}};
  const std::string method = request["method"].get<std::string>();
  try {
    reply["result"] = handle_server_request(method, request.value("params", Json::object()));
  } catch (const McpError& e) {
    reply["error"] = {{"code", e.kind() == McpError::Kind::rpc && e.rpc_code() != 0 ? e.rpc_code() : -32603}, {"message", e.what()}};
  } catch (const std::exception& e) {
    reply["error"] = {{"code", -32603}, {"message", std::string("Internal error: ") + e.what()}};
  }
  send_quietly(reply);
}

Json McpSession::handle_server_request(const std::string& method, const Json& params) {
  if (method == "ping") return Json::object();
  if (method == "roots/list" && options_.roots) {
    Json list = Json::array();
    std::lock_guard lock(roots_mutex_);
    for (const auto& root : roots_) {
      Json entry = {{"uri", root.uri}};
      if (!root.name.empty()) entry["name"] = root.name;
      list.push_back(std::move(entry));
    }
    return {{"roots", std::move(list)}};
  }
  if (method == "sampling/createMessage" && options_.sampling) return options_.sampling(params);
  if (method == "elicitation/create" && options_.elicitation) return options_.elicitation(params);
  throw McpError(McpError::Kind::rpc, "Method not found: " + method, -32601);
}

}  // namespace detail

// ---------------------------------------------------------------- client

McpClient::McpClient(std::unique_ptr<McpTransport> transport, McpClientOptions options)
    : session_(std::make_shared<detail::McpSession>(std::move(transport), std::move(options))) {}

McpClient::~McpClient() { close(); }

void McpClient::connect() { session_->connect(); }
bool McpClient::connected() const noexcept { return session_->connected(); }
const McpServerInfo& McpClient::server() const { return session_->server(); }
std::vector<McpToolInfo> McpClient::list_tools() { return session_->list_tools(); }
std::vector<ToolPtr> McpClient::tools() const { return session_->tools(); }

McpCallResult McpClient::call_tool(const std::string& name, const Json& arguments, const RunContext* ctx,
                                   std::optional<std::chrono::milliseconds> timeout) {
  return session_->call_tool(name, arguments, ctx, timeout);
}

Json McpClient::request(const std::string& method, const Json& params, const RunContext* ctx,
                        std::optional<std::chrono::milliseconds> timeout) {
  return session_->request(method, params, {.ctx = ctx, .timeout = session_->timeout_or_default(timeout)});
}

void McpClient::notify(const std::string& method, const Json& params) { session_->notify(method, params); }
void McpClient::set_roots(std::vector<McpRoot> roots) { session_->set_roots(std::move(roots)); }
void McpClient::close() { session_->close(); }

}  // namespace agentkit::providers
