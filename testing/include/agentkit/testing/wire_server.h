#pragma once
// WireServer: a loopback HTTP/1.1 server for tests and the demo. It serves
// scripted responses (whole or streamed in chunks), records the requests it
// received, and injects faults. It binds 127.0.0.1 on an ephemeral port and
// stops in its destructor.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace agentkit::testing {

class WireServer {
 public:
  struct Request {
    std::string method;
    std::string path;  // including the query string
    std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
    std::string body;
    std::string header(const std::string& name) const;  // "" when absent
  };

  enum class Fault {
    none,
    reset_mid_stream,  // send `chunks` up to `fault_after_chunks`, then reset the connection (RST)
    truncate,          // send some chunks, then close cleanly without finishing the body
    stall,             // read the request, never answer (until the client gives up or the server stops)
  };

  struct Response {
    int status = 200;
    std::vector<std::pair<std::string, std::string>> headers;  // e.g. {"content-type", "text/event-stream"}
    std::string body;                                          // sent whole when `chunks` is empty
    std::vector<std::string> chunks;                           // streamed with chunked encoding, flushed one by one
    std::chrono::milliseconds delay{0};                        // before the status line
    std::chrono::milliseconds chunk_delay{0};                  // between chunks (a slow trickle)
    Fault fault = Fault::none;
    std::size_t fault_after_chunks = 1;
    // No Content-Length and no chunked encoding: `body` or `chunks` are sent
    // as they are and the body ends when the server closes the connection
    // (HTTP/1.0 style). A body that stops early is then indistinguishable,
    // on the wire, from a complete one: a clean cut.
    bool unframed = false;
  };

  using Handler = std::function<Response(const Request&)>;

  WireServer();
  ~WireServer();
  WireServer(const WireServer&) = delete;
  WireServer& operator=(const WireServer&) = delete;

  std::uint16_t port() const noexcept;
  std::string base_url() const;  // "http://127.0.0.1:<port>"

  // Responses are served in order, one per request; past the end, 500 with a
  // body naming the request number. A handler, when set, answers instead.
  void enqueue(Response response);
  void set_handler(Handler handler);

  // Every request so far, bodies included. record_requests(false) keeps
  // none (requests() stays empty; request numbers still count): a benchmark
  // sending megabytes must not grow the process by what it sends.
  std::vector<Request> requests() const;
  void record_requests(bool on);
  std::size_t connections_accepted() const;  // keep-alive reuse shows as fewer connections than requests

  // Splits an SSE/NDJSON body into chunks of `size` bytes (for streamed responses).
  static std::vector<std::string> split(const std::string& body, std::size_t size);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace agentkit::testing
