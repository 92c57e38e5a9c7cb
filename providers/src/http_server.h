#pragma once
// A small embeddable HTTP/1.1 server (internal to the providers library): POSIX
// sockets and poll(2), one thread (the host's, through poll(), or its own,
// through run_in_thread()). It exists so agentkit can serve MCP over
// Streamable HTTP without a new dependency; it is not a general web server.
//
// What it does: keep-alive; Content-Length and chunked request bodies, both
// bounded; pipelined requests, answered in order (the next request is parsed
// only after the previous response ended); `Expect: 100-continue`; whole
// responses and text/event-stream responses (chunked, one write per event);
// responses buffered and written on POLLOUT, so a slow reader never blocks the
// loop; a responder usable from any thread (it wakes the loop through an
// eventfd); client disconnects reported through on_close.
//
// What it refuses: 400 for a malformed request (bad request line, header
// syntax, obsolete line folding, a missing or repeated Host on HTTP/1.1, a bad
// or conflicting Content-Length, Content-Length together with
// Transfer-Encoding, a Transfer-Encoding other than `chunked`, a bad chunk),
// 413 for a body over max_body_bytes, 431 for a header block over
// max_header_bytes, 417 for an Expect other than 100-continue, 408 (then
// close) when a started request stalls past header_timeout, 503 (then close)
// for a connection beyond max_connections, 500 when the handler throws or
// drops its responder without answering. Every refusal closes the connection.
//
// Limits: an idle keep-alive connection closes after idle_timeout; a request
// whose handler is still working (or a stream) has no timeout, the host ends
// it. A client that half-closes its socket counts as gone. Response headers
// named Content-Length, Transfer-Encoding or Connection are the server's: the
// handler's are dropped. Nothing is logged (so no Authorization value can be).
//
// Example:
//   using namespace agentkit::providers::detail;
//   HttpServer server({.port = 0}, [](const HttpRequest& req, std::shared_ptr<HttpResponder> res) {
//     if (req.target == "/events") {
//       res->start_stream(200, {});
//       std::thread([res] { res->send_event("{\"n\":1}", "1"); res->end(); }).detach();
//       return;
//     }
//     res->respond(200, {{"Content-Type", "text/plain"}}, "hello");
//   });
//   server.listen();
//   server.run_in_thread();           // or call server.poll() from the host's loop
//   // ... http://127.0.0.1:<server.port()>/ ...
//   server.stop();
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentkit::providers::detail {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// One parsed request. `target` is the request-target as sent (path + query).
// `headers` keep the client's order and spelling (values trimmed); `body` is
// the decoded body (chunked bodies de-chunked, trailers dropped).
struct HttpRequest {
  std::string method;
  std::string target;
  HttpHeaders headers;
  std::string body;
  // The first header named `name` (case-insensitive), or nullopt.
  std::optional<std::string> header(std::string_view name) const;
  // The client's address, "127.0.0.1:54321" or "[::1]:54321".
  std::string peer;
  // "HTTP/1.1" or "HTTP/1.0".
  std::string version;
};

struct HttpExchange;
struct HttpServerCore;

// The answer side of one request. Thread-safe; may outlive the handler call
// (a stream, or an answer computed on a worker thread). Exactly one of
// respond() or start_stream() takes effect; later calls are ignored. Dropping
// the last reference before answering answers 500 (before start_stream) or
// ends the stream.
class HttpResponder {
 public:
  HttpResponder(std::shared_ptr<HttpServerCore> core, std::shared_ptr<HttpExchange> exchange);
  ~HttpResponder();
  HttpResponder(const HttpResponder&) = delete;
  HttpResponder& operator=(const HttpResponder&) = delete;

  // A whole response; Content-Length is added. Header names and values must
  // not contain CR, LF or NUL (throws agentkit::Error, invalid_argument).
  void respond(int status, HttpHeaders headers, std::string body);
  // Starts a text/event-stream response (Content-Type and Cache-Control are
  // added unless given; chunked on HTTP/1.1, so the connection survives end()).
  void start_stream(int status, HttpHeaders headers);
  // One SSE event: an `id:` line when id is not empty, one `data:` line per
  // line of data, a blank line; written (flushed) at once. False when the
  // stream is not open: not started, ended, or the client is gone, or the
  // client stopped reading and over max_output_bytes are waiting.
  bool send_event(std::string_view data, std::string_view id = {});
  // A `retry:` field (the client's reconnection delay) as its own event;
  // `id`, when given, is sent with it (MCP primes a resumable stream so).
  bool send_retry(std::chrono::milliseconds delay, std::string_view id = {});
  // An SSE comment line (": text"), a keep-alive clients ignore.
  bool send_comment(std::string_view text);
  // Ends the response: ends a stream; without any response sends 500.
  void end();
  // True while the client is connected and the response has not ended.
  bool open() const;
  // `f` runs once if the client goes away (or the server stops) before
  // end(); at once, on this thread, when that already happened. It runs on
  // the loop's thread, without locks held: it may call the responder.
  void on_close(std::function<void()> f);

 private:
  std::shared_ptr<HttpServerCore> core_;
  std::shared_ptr<HttpExchange> exchange_;
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // numeric address or name; loopback by default
  int port = 0;                    // 0: the system picks one, read it with port()
  std::size_t max_header_bytes = 64 * 1024;       // request line + headers (and chunk trailers)
  std::size_t max_body_bytes = 4 * 1024 * 1024;   // decoded body
  int max_connections = 64;                       // open connections; more get 503
  std::chrono::milliseconds header_timeout{10'000};  // a started request must stall no longer
  std::chrono::milliseconds idle_timeout{60'000};    // an idle keep-alive connection closes after
  std::size_t max_output_bytes = 16 * 1024 * 1024;   // unsent bytes per connection before it is dropped
};

// Called on the loop's thread for each complete request. It may answer at
// once or keep the responder and answer later from any thread; it must not
// block for long (the loop waits for it). An exception answers 500.
using HttpHandler = std::function<void(const HttpRequest&, std::shared_ptr<HttpResponder>)>;

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, HttpHandler handler);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens; throws agentkit::Error (unavailable) when it cannot.
  void listen();
  // The bound port (valid after listen()).
  int port() const;
  // "http://127.0.0.1:<port>" (IPv6 hosts in brackets).
  std::string url() const;
  // Advances every connection without blocking: accepts, reads, writes,
  // calls the handler for complete requests, applies timeouts. Returns
  // whether anything happened. Not while run_in_thread() runs.
  bool poll();
  // Runs the loop on its own thread until stop().
  void run_in_thread();
  // Closes the listener and every connection (on_close runs for unanswered
  // exchanges); joins the thread. Idempotent. Responders stay safe to call.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The reason phrase for a status code ("Not Found"); "Unknown" when unknown.
std::string_view http_reason(int status);

}  // namespace agentkit::providers::detail
