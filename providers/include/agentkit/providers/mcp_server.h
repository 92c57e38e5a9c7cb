#pragma once
// An MCP server (revision 2025-11-25; a client asking for an older revision the
// client side speaks, mcp_supported_versions(), gets it):
// serves a ToolRegistry's advertised tools (function tools, agents through
// as_tool, REST and MCP tools alike) to MCP clients. The core is
// transport-independent: a session takes JSON-RPC messages in (receive())
// and hands messages out through a function the host gives. serve_stdio()
// binds a session to a pair of file descriptors.
//
// Every tools/call runs through the base context's invoker (its middleware,
// budget, egress and logger apply) on a RunContext made per call: a child of
// the base, with its own run id and a cancellation token under the base's
// (notifications/cancelled cancels it). Calls run on the base context's
// executor when it is not inline, else on the server's own pool; receive()
// never waits for a tool.
//
// Approval: a call the invoker answers with awaiting_approval (the tool
// requires approval, or the base context's autonomy tier asks for one) is
// put to the human behind the client with elicitation/create when the client
// declared the elicitation capability: "accept" runs the call once, with an
// approval of exactly that call; "decline" or "cancel" answers a tool error
// ("denied"). A client without elicitation gets a tool error saying the
// call needs approval; the tool does not run. The server never approves a
// call on its own.
//
// Example:
//   agentkit::RunContext base;                      // invoker, budget, logger...
//   base.invoker = std::make_shared<agentkit::Invoker>(agentkit::default_middleware());
//   agentkit::providers::McpServer server(agentkit::ToolRegistry::from_tools({forecast}), base,
//                                         {.name = "weather"});
//   agentkit::providers::serve_stdio(server);      // until stdin ends
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/fwd.h>

#include <agentkit/context.h>
#include <agentkit/invoker.h>
#include <agentkit/json.h>
#include <agentkit/registry.h>

namespace agentkit::providers {

struct McpServerOptions {
  // serverInfo in the initialize answer.
  std::string name = "agentkit";
  std::string version = "0.1.0";
  std::string title;         // empty: not sent
  std::string instructions;  // empty: not sent
  // tools/list pages hold at most this many tools (nextCursor beyond).
  std::size_t page_size = 100;
  // Worker threads for calls when the base context has no pooled executor.
  std::size_t threads = 4;
  // The message of the elicitation/create sent for a call awaiting approval
  // is this prefix, then the tool's name and its arguments.
  std::string approval_prompt = "Allow this tool call?";
  // Off (the default): a session's outgoing messages are handed to its send
  // function as soon as they exist, from whichever thread made them (the
  // receiving thread or a call's worker). On: they wait in the session until
  // the host calls McpServerSession::poll() on its own thread (a game or
  // robot loop that must never be called back from elsewhere).
  bool deliver_on_poll = false;
  std::shared_ptr<spdlog::logger> logger;  // null: nothing is logged
  // Exactly once across a client's retries, for clients that ask: a
  // tools/call whose params._meta carries "agentkit.dev/idempotency-key" (a
  // string of 1 to 256 bytes) is recorded in this ledger (e.g.
  // state::StoreLedger over the host's store) under the key, the tool and
  // its arguments. The same call again returns the recorded result without
  // running; while the first is still running, or when it never recorded an
  // outcome (a crash), a side-effecting tool is not run again and the
  // answer is an isError result saying the outcome is unknown. An agent
  // served as a tool resumes its sub-run instead. Calls without the key, or
  // with no ledger set, are not recorded (a key with no ledger is refused).
  std::shared_ptr<const CallLedger> ledger;
};

// Delivers one outgoing message (a response, a notification or a request to
// the client). Never called concurrently for one session.
using McpSendFunction = std::function<void(const Json& message)>;

namespace detail {
struct McpServerState;
struct McpSessionState;
}  // namespace detail

// One client's connection. Thread-safe.
class McpServerSession {
 public:
  // Handles one incoming JSON-RPC message (a request, a notification or a
  // response to a request this server sent). Never blocks on a tool call.
  // Malformed messages are answered with JSON-RPC errors: -32600 invalid
  // request (not an object, jsonrpc not "2.0", an id that is not a string or
  // integer, a request id already in flight, any request but initialize and
  // ping before initialize), -32601 unknown method, -32602 invalid params
  // (params not an object, unknown tool, bad cursor).
  void receive(const Json& message);
  // A message that was not JSON (a transport's parse failure): answered
  // with -32700 parse error, id null.
  void parse_error(const std::string& problem);
  // With deliver_on_poll: hands the waiting outgoing messages to the send
  // function on this thread; returns how many. Otherwise returns 0.
  std::size_t poll();
  // Whether initialize has been answered.
  bool initialized() const;
  // The negotiated revision ("" before initialize).
  std::string protocol_version() const;
  // How many tools/call requests are in flight (running or awaiting a
  // human's answer).
  std::size_t calls_in_flight() const;
  // The id of the client's request that a request of this server belongs
  // to (an elicitation/create asking about that tools/call), while it awaits
  // its answer; nullopt for any other id. A transport with a stream per
  // request (Streamable HTTP) sends it on that request's stream.
  std::optional<Json> origin_of(const Json& server_request_id) const;
  // Cancels every call in flight and sends nothing more. Idempotent.
  void close();

 private:
  friend class McpServer;
  explicit McpServerSession(std::shared_ptr<detail::McpSessionState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::McpSessionState> state_;
};

// Serves tools to any number of sessions.
class McpServer {
 public:
  // `base` is the context every call's context derives from; a null invoker
  // means default_middleware().
  McpServer(ToolRegistry tools, RunContext base, McpServerOptions options = {});
  // Closes every session (cancelling their calls) and waits for the
  // server's own workers.
  ~McpServer();
  McpServer(const McpServer&) = delete;
  McpServer& operator=(const McpServer&) = delete;

  // A new session whose outgoing messages go to `send`.
  std::shared_ptr<McpServerSession> open_session(McpSendFunction send);

  // Replaces the tools served and sends notifications/tools/list_changed to
  // every initialized session. Calls in flight finish with the tool they
  // started with.
  void set_tools(ToolRegistry tools);

 private:
  std::shared_ptr<detail::McpServerState> state_;
  std::shared_ptr<Executor> pool_;  // the server's own workers (null: the base's executor)
};

// How serve_stdio() reads and writes.
struct McpStdioServeOptions {
  int in_fd = 0;   // newline-delimited JSON-RPC messages in
  int out_fd = 1;  // protocol only: logs go to the server's logger
  // A longer line is answered with a parse error and skipped.
  std::size_t max_line_bytes = 16u << 20;
};

// Serves one session over newline-delimited JSON-RPC until `in_fd` ends (or
// fails), then closes the session (cancelling calls in flight). Blocks the
// calling thread.
void serve_stdio(McpServer& server, McpStdioServeOptions options = {});

// How an McpHttpListener listens and whom it lets in. The defaults are the
// safe ones: loopback only, browser pages from loopback origins only.
struct McpHttpListenerOptions {
  // Where to listen. A host that is not loopback (127.0.0.0/8, ::1,
  // localhost) needs a bearer_token: the constructor refuses it otherwise.
  std::string host = "127.0.0.1";
  int port = 0;  // 0: the system picks one (see port())
  std::string path = "/mcp";  // the MCP endpoint
  // Set: every request must carry "Authorization: Bearer <token>" (compared
  // in constant time; never logged); others get 401 with WWW-Authenticate.
  std::string bearer_token;
  // A request whose Origin header is neither a loopback origin nor one of
  // these (exactly, e.g. "https://app.example.com") gets 403 (DNS
  // rebinding). Requests without Origin (not from a browser) pass.
  std::vector<std::string> allowed_origins;
  std::size_t max_body_bytes = 4u << 20;  // a bigger POST gets 413
  // Sessions kept at once. At the limit, initialize ends the least recently
  // used idle session (no call in flight, no stream open), or gets 503.
  std::size_t max_sessions = 64;
  int max_connections = 64;
};

// MCP's Streamable HTTP transport for an McpServer: one endpoint where POST
// carries a client message (a request is answered on an SSE stream that
// also carries its progress and any elicitation/create the call needs;
// notifications and responses get 202), GET opens the session's standalone
// SSE stream (list_changed, and server requests when no POST stream is
// open), DELETE ends the session. initialize assigns Mcp-Session-Id; every
// later request must carry it (400 without, 404 for an unknown or ended
// session). An MCP-Protocol-Version header naming a revision the server
// does not speak gets 400. Batches (JSON arrays) get 400: 2025-11-25 has
// none. A client that drops a POST stream does not cancel its call (the
// spec's rule: only notifications/cancelled does); the answer is dropped.
//
// Example:
//   McpHttpListener http(server, {.port = 8931});
//   http.listen();
//   http.run_in_thread();     // or http.poll() from the host's loop
//   // clients connect to http://127.0.0.1:8931/mcp
class McpHttpListener {
 public:
  // Throws agentkit::Error (invalid_argument) for a non-loopback host
  // without a bearer token.
  McpHttpListener(McpServer& server, McpHttpListenerOptions options = {});
  ~McpHttpListener();  // stop(), then closes every session
  McpHttpListener(const McpHttpListener&) = delete;
  McpHttpListener& operator=(const McpHttpListener&) = delete;

  // Binds; throws agentkit::Error (unavailable) when it cannot.
  void listen();
  int port() const;
  // "http://127.0.0.1:<port>/mcp".
  std::string url() const;
  // Advances the server without blocking (and, with deliver_on_poll, hands
  // out every session's waiting messages). Returns whether anything happened.
  bool poll();
  // Serves on a thread of its own until stop().
  void run_in_thread();
  void stop();

 private:
  struct Session;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace agentkit::providers
