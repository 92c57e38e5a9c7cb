#pragma once
// An MCP (Model Context Protocol, revision 2025-11-25; older revisions
// accepted) client. It speaks JSON-RPC 2.0 to one server over stdio (a child
// process) or Streamable HTTP, and turns the server's tools into agentkit
// Tools that any ToolRegistry or ReActCognition can use.
//
// Example:
//   using namespace agentkit::providers;
//   McpClient fs(make_stdio_transport({.command = "npx",
//                                      .args = {"-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"}}),
//                {.server_name = "fs"});
//   fs.connect();                     // handshake and first tools/list
//   agentkit::ToolRegistry registry;
//   registry.add_plugin("fs", fs);    // fs_read_text_file, fs_list_directory, ...
//   agentkit::Agent agent("docs", model, prompt, std::make_shared<const ReActCognition>(registry));
//
//   McpCallResult r = fs.call_tool("list_directory", {{"path", "/srv/docs"}});  // or directly
//   std::cout << r.text();
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/fwd.h>

#include <agentkit/context.h>
#include <agentkit/json.h>
#include <agentkit/providers/transport.h>
#include <agentkit/tool.h>

namespace agentkit::providers {

// The revision this client asks for.
inline constexpr std::string_view kMcpProtocolVersion = "2025-11-25";
// Every revision the client accepts from a server, newest first.
const std::vector<std::string>& mcp_supported_versions();

// A failed MCP exchange. The message names the server (never a secret).
// Its ErrorCode (code()) follows from the kind: rpc -> not_found for
// -32601 (method not found), invalid_argument for -32600 / -32602, internal
// for any other JSON-RPC error; timeout -> timeout; cancelled -> cancelled;
// disconnected and session_expired -> unavailable; protocol -> protocol.
class McpError : public Error {
 public:
  enum class Kind {
    rpc,              // the server answered with a JSON-RPC error: see code() and data()
    timeout,          // no answer within the request timeout; notifications/cancelled was sent
    cancelled,        // the caller's CancellationToken fired; notifications/cancelled was sent
    disconnected,     // the server exited or closed its stream, the HTTP request failed, or the client closed
    protocol,         // a malformed handshake or a protocol version this client does not speak
    session_expired,  // HTTP: the server no longer knows the session (the client re-initialises and retries once)
  };

  McpError(Kind kind, std::string message, int code = 0, Json data = nullptr);
  Kind kind() const noexcept { return kind_; }
  // The JSON-RPC error code (Kind::rpc), e.g. -32601 method not found, -32602 invalid params.
  int rpc_code() const noexcept { return rpc_code_; }
  const Json& data() const noexcept { return data_; }

 private:
  Kind kind_;
  int rpc_code_;
  Json data_;
};
std::string_view to_string(McpError::Kind kind) noexcept;

// Thrown by a tool from McpClient::tools() when the server's tools/call
// result has isError set. The message is the result's rendered content, so
// the model sees what the server said. Code internal: the server's tool
// failed.
class McpToolError : public Error {
 public:
  McpToolError(std::string tool, const std::string& text, Json result);
  const std::string& tool() const noexcept { return tool_; }
  // The whole tools/call result.
  const Json& result() const noexcept { return result_; }

 private:
  std::string tool_;
  Json result_;
};

// ------------------------------------------------------------- transports

// How a stdio server is started. The child gets a minimal environment: PATH,
// HOME, LANG, LC_*, TMPDIR, the host variables named in `inherit_env`, and
// `env`. Nothing else of the host's environment (API keys included) leaks.
struct McpStdioServer {
  std::string command;  // looked up on PATH when it has no '/'
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // set explicitly (wins over inherited values)
  std::vector<std::string> inherit_env;                  // more host variables to pass through
  std::string working_directory;                         // empty: the host's
  // close() closes the child's stdin and waits this long, then sends SIGTERM
  // to its process group and waits again, then SIGKILL; the child is reaped.
  std::chrono::milliseconds shutdown_grace{2'000};
};

// How a Streamable HTTP server is reached. `headers` (e.g. Authorization)
// go with every request and are never logged or put in errors.
struct McpHttpServer {
  std::string url;  // the MCP endpoint, e.g. http://127.0.0.1:3001/mcp
  Headers headers;
  // Opens the standalone GET stream after the handshake, for requests and
  // notifications the server sends outside any call (a 405 is fine).
  bool standalone_stream = true;
  // Retries are always off (a replayed POST could repeat a tools/call).
  TransportOptions transport;
};

// How a client reaches its server: one JSON-RPC message at a time, each way.
// Implementations are thread-safe; callbacks may run on transport threads,
// concurrently for HTTP.
class McpTransport {
 public:
  struct Callbacks {
    // One incoming message (a request, response or notification).
    std::function<void(Json message)> message;
    // The connection is over (the server exited or closed its stream).
    std::function<void(const std::string& reason)> closed;
    // `message` (sent earlier) was not delivered or its HTTP exchange failed;
    // Kind::session_expired asks the client to re-initialise.
    std::function<void(const Json& message, const McpError& error)> failed;
  };

  virtual ~McpTransport() = default;
  // Connects (spawns the process) and delivers incoming messages until close().
  // Throws McpError(disconnected) when the server cannot be started.
  virtual void start(Callbacks callbacks) = 0;
  // Sends one message without waiting for its answer. Messages that are not
  // requests reach the server in the order they were sent, before any later
  // request. Throws McpError(disconnected) once the connection is over.
  virtual void send(const Json& message) = 0;
  // The server answered initialize with `protocol_version`; called before
  // notifications/initialized is sent (HTTP: from now on every request
  // carries MCP-Protocol-Version; the standalone stream opens).
  virtual void initialized(const std::string& protocol_version) { (void)protocol_version; }
  // Ends the connection and stops every transport thread. Idempotent.
  virtual void close() = 0;
  // The peer for messages and logs, e.g. "stdio server 'node'" (no secrets).
  virtual std::string describe() const = 0;
  // `text` from the server with any credential the transport sends replaced
  // by "[redacted]", for logs and errors (a server may echo what it got).
  virtual std::string redact(std::string text) const { return text; }
};

// A child process speaking newline-delimited JSON-RPC on stdin/stdout. Its
// stderr is drained continuously and logged at debug level; lines that are
// not JSON-RPC (or exceed 32 MiB, or nest deeper than 256 levels) are logged
// and skipped. `logger` null: nothing is logged.
std::unique_ptr<McpTransport> make_stdio_transport(McpStdioServer server,
                                                   std::shared_ptr<spdlog::logger> logger = nullptr);
// Streamable HTTP: POSTs accept JSON or SSE answers; Mcp-Session-Id is kept
// and sent back; a 404 (or a 400 naming the session) for a known session is
// reported as Kind::session_expired; close() DELETEs the session. A request
// whose params._meta holds a `traceparent` is POSTed with that value as the
// `traceparent` header too.
std::unique_ptr<McpTransport> make_http_transport(McpHttpServer server,
                                                  std::shared_ptr<spdlog::logger> logger = nullptr);

// ------------------------------------------------------------------ client

// A filesystem root the host exposes to servers (answered to roots/list).
struct McpRoot {
  std::string uri;  // file:// URI
  std::string name;
};

// What the server said about itself in the handshake.
struct McpServerInfo {
  std::string name;
  std::string version;
  std::string protocol_version;  // the negotiated revision
  std::string instructions;
  Json capabilities = Json::object();
};

// One entry of tools/list, as the server sent it.
struct McpToolInfo {
  std::string name;
  std::string title;
  std::string description;
  Json input_schema = Json::object();
  Json output_schema;  // null when absent
  Json annotations = Json::object();
};

// A tools/call result.
struct McpCallResult {
  Json content = Json::array();  // the content blocks
  Json structured;               // structuredContent, null when absent
  bool is_error = false;
  Json raw = Json::object();  // the whole result object

  // The content as model text: text blocks verbatim; image and audio as
  // "[image image/png, 1234 bytes]" (base64 is never put in model text);
  // resource links as "[resource_link <uri> "<name>" <mime>] <description>";
  // embedded resources as "[resource <uri> <mime>]" followed by their text,
  // or their size for a blob. Blocks are joined with newlines.
  std::string text() const;
  // The content as parts: an image block with a valid base64 payload is an
  // ImagePart (its bytes decoded); every other block is a TextPart holding
  // what text() renders for it (audio and resources stay text notes).
  std::vector<ContentPart> parts() const;
  // What a tool returns: structuredContent when present, else text().
  Json value() const;
};

// Answers a server-to-client request (sampling/createMessage,
// elicitation/create): gets its params, returns its result. Throwing
// McpError(Kind::rpc, message, code) answers with that JSON-RPC error; any
// other exception answers -32603.
using McpRequestHandler = std::function<Json(const Json& params)>;

struct McpClientOptions {
  // A label for logs, events (McpProgress::server) and tool metadata.
  std::string server_name = "mcp";
  std::string client_name = "agentkit";
  std::string client_version = "0.1.0";
  // The revision asked for; the server's answer must be one of
  // mcp_supported_versions() or connect() fails.
  std::string protocol_version = std::string(kMcpProtocolVersion);
  // How long any request waits for its answer.
  std::chrono::milliseconds request_timeout{60'000};
  // How long the handshake (initialize) waits; unset: request_timeout. A
  // server that is slow to start (npx, node under load) gets longer than
  // its calls do.
  std::optional<std::chrono::milliseconds> connect_timeout;
  // Set: the roots capability is declared and roots/list answered with these.
  std::optional<std::vector<McpRoot>> roots;
  // Set: the capability is declared and server requests go to the handler.
  // Unset: those requests are refused with -32601. Handlers run on the
  // client's dispatch thread, one at a time.
  McpRequestHandler sampling;
  McpRequestHandler elicitation;
  // Called (on the client's relist thread) with the new tools after a
  // notifications/tools/list_changed has been followed by a fresh tools/list.
  std::function<void(const std::vector<ToolPtr>&)> on_tools_changed;
  std::shared_ptr<spdlog::logger> logger;  // null: nothing is logged
};

namespace detail {
class McpSession;
}

// A connection to one MCP server. Thread-safe: calls from several threads
// run concurrently over the one connection.
//
// Tools from tools() map annotations to effects: a tool is side-effecting
// unless it declares readOnlyHint; idempotentHint and destructiveHint are
// kept in spec().metadata["mcp"] (annotations are hints from the server,
// never trusted for retries). Names outside [A-Za-z0-9_-]{1,64} are
// rewritten with '_' (the original is in metadata). A tool checks the
// arguments against the inputSchema's required keys, top-level types and
// additionalProperties:false before sending (ToolArgumentError); a server's
// own refusal or an isError result throws (McpError, McpToolError), which
// the invoker's error boundary turns into a model-visible error. A call
// honours ctx.cancellation (sending notifications/cancelled) and emits an
// McpProgress event through ctx.emit() for each progress notification.
//
// The tools hold the session weakly: once the client is closed or destroyed
// they fail with McpError(disconnected). Keep the client alive as long as an
// agent uses its tools.
class McpClient {
 public:
  explicit McpClient(std::unique_ptr<McpTransport> transport, McpClientOptions options = {});
  // close()
  ~McpClient();
  McpClient(const McpClient&) = delete;
  McpClient& operator=(const McpClient&) = delete;

  // Starts the transport, runs initialize / notifications/initialized, and
  // lists the tools (following cursors). Throws McpError; a failed connect
  // leaves the client closed.
  void connect();
  bool connected() const noexcept;
  const McpServerInfo& server() const;

  // A fresh tools/list (every page). Does not change tools().
  std::vector<McpToolInfo> list_tools();
  // The server's tools as agentkit tools, from the last listing (refreshed
  // after each notifications/tools/list_changed).
  std::vector<ToolPtr> tools() const;

  // Calls a tool by its MCP name. `ctx`, when given, cancels the call and
  // receives McpProgress events; when it is traced (ctx->traceparent() not
  // empty) the call's params carry `_meta.traceparent` (W3C Trace Context,
  // unprefixed as MCP's SEP-414 and the OpenTelemetry MCP conventions have
  // it). `timeout` overrides request_timeout. An isError result is returned,
  // not thrown; a JSON-RPC error throws McpError.
  McpCallResult call_tool(const std::string& name, const Json& arguments, const RunContext* ctx = nullptr,
                          std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  // Any request, e.g. request("resources/list"). Returns its result.
  Json request(const std::string& method, const Json& params = nullptr, const RunContext* ctx = nullptr,
               std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  void notify(const std::string& method, const Json& params = nullptr);

  // Replaces the roots and tells the server (notifications/roots/list_changed).
  void set_roots(std::vector<McpRoot> roots);

  // Fails calls in flight (McpError disconnected), stops the client's
  // threads, and shuts the transport down. Idempotent.
  void close();

 private:
  std::shared_ptr<detail::McpSession> session_;
};

}  // namespace agentkit::providers
