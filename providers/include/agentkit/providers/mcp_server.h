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
#include <string>

#include <spdlog/fwd.h>

#include <agentkit/context.h>
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

}  // namespace agentkit::providers
