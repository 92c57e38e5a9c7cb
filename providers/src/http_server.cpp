#include "http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include <agentkit/error.h>

namespace agentkit::providers::detail {
namespace {

using Clock = std::chrono::steady_clock;

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool is_tchar(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar); }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Decimal digits only, no sign, no overflow past `limit`; nullopt otherwise.
std::optional<std::size_t> parse_length(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  std::size_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::size_t>(c - '0');
  }
  return v;
}

std::string peer_name(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(a->sin_port));
  }
  if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  return "unknown";
}

bool header_safe(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

bool server_owned(std::string_view name) {
  return iequals(name, "content-length") || iequals(name, "transfer-encoding") || iequals(name, "connection");
}

bool has_header(const HttpHeaders& headers, std::string_view name) {
  return std::any_of(headers.begin(), headers.end(), [&](const auto& h) { return iequals(h.first, name); });
}

std::string chunk(std::string_view data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out = size;
  out.append(data);
  out += "\r\n";
  return out;
}

}  // namespace

std::optional<std::string> HttpRequest::header(std::string_view name) const {
  for (const auto& h : headers)
    if (iequals(h.first, name)) return h.second;
  return std::nullopt;
}

std::string_view http_reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

// What a responder and the connection share about one request/response.
struct HttpExchange {
  std::uint64_t conn_id = 0;
  bool head_request = false;
  bool keep_alive = true;
  bool http11 = true;
  bool answered = false;   // respond() or start_stream() took effect
  bool streaming = false;
  bool ended = false;      // the response is complete
  bool gone = false;       // the client went away (or the server stopped) before the end
  std::vector<std::function<void()>> on_close;
};

struct Connection {
  enum class Phase { headers, body_length, chunk_size, chunk_data, chunk_crlf, trailers, waiting, draining };
  int fd = -1;
  std::uint64_t id = 0;
  std::string peer;
  std::string in;
  std::string out;
  std::size_t out_off = 0;
  Phase phase = Phase::headers;
  HttpRequest req;
  std::size_t remaining = 0;     // body bytes (or chunk bytes) still to come
  std::size_t trailer_bytes = 0;
  bool keep_alive = true;
  bool close_after_write = false;
  bool peer_eof = false;
  bool doomed = false;           // close at the next chance (output overflow, write error)
  Clock::time_point request_start{};
  Clock::time_point last_activity{};
  Clock::time_point drain_deadline{};
  std::shared_ptr<HttpExchange> exchange;

  std::size_t pending() const { return out.size() - out_off; }
};

struct HttpServerCore {
  std::mutex mu;
  HttpServerOptions options;
  int wake_fd = -1;
  bool stopped = false;
  std::map<std::uint64_t, std::unique_ptr<Connection>> conns;

  ~HttpServerCore() {
    if (wake_fd >= 0) ::close(wake_fd);
  }
  void wake() const {
    if (wake_fd < 0) return;
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd, &one, sizeof one);
  }
  // Writes as much of c's output as the socket takes now (mu held).
  void flush(Connection& c) {
    while (c.pending() > 0 && !c.doomed) {
      ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.pending(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.out_off += static_cast<std::size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        break;
      } else {
        c.doomed = true;
      }
    }
    if (c.out_off == c.out.size()) {
      c.out.clear();
      c.out_off = 0;
    } else if (c.out_off > 64 * 1024) {
      c.out.erase(0, c.out_off);
      c.out_off = 0;
    }
  }
  // Queues bytes for c (mu held); false (and the connection doomed) past max_output_bytes.
  bool queue(Connection& c, std::string_view bytes) {
    if (c.doomed) return false;
    if (c.pending() + bytes.size() > options.max_output_bytes) {
      c.doomed = true;
      return false;
    }
    c.out.append(bytes);
    flush(c);
    return !c.doomed;
  }
  Connection* find(const HttpExchange& ex) {
    auto it = conns.find(ex.conn_id);
    if (it == conns.end() || it->second->exchange.get() != &ex) return nullptr;
    return it->second.get();
  }
  // The response of c's exchange is complete (mu held): go on with the next request or close.
  void finish(Connection& c) {
    if (c.exchange) c.exchange->ended = true;
    c.exchange.reset();
    if (!c.keep_alive) {
      c.close_after_write = true;
    } else {
      c.phase = Connection::Phase::headers;
      c.req = HttpRequest{};
      c.last_activity = c.request_start = Clock::now();
    }
  }
};

// ---- HttpResponder ----

HttpResponder::HttpResponder(std::shared_ptr<HttpServerCore> core, std::shared_ptr<HttpExchange> exchange)
    : core_(std::move(core)), exchange_(std::move(exchange)) {}

HttpResponder::~HttpResponder() {
  bool answered = false;
  {
    std::lock_guard lock(core_->mu);
    answered = exchange_->answered;
    if (exchange_->ended || exchange_->gone) return;
  }
  try {
    if (answered)
      end();
    else
      respond(500, {{"Content-Type", "text/plain"}}, "the handler dropped the request without answering\n");
  } catch (...) {
  }
}

void HttpResponder::respond(int status, HttpHeaders headers, std::string body) {
  for (const auto& h : headers)
    if (!header_safe(h.first) || !header_safe(h.second) || !is_token(h.first))
      throw Error(ErrorCode::invalid_argument, "http server: a response header name or value is malformed");
  std::lock_guard lock(core_->mu);
  if (exchange_->answered || exchange_->gone) return;
  exchange_->answered = true;
  Connection* c = core_->find(*exchange_);
  if (c == nullptr) return;
  const bool no_body = exchange_->head_request || status == 204 || status == 304 || (status >= 100 && status < 200);
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + std::string(http_reason(status)) + "\r\n";
  for (const auto& h : headers)
    if (!server_owned(h.first)) head += h.first + ": " + h.second + "\r\n";
  if (status != 204 && status != 304 && status >= 200) head += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  if (!c->keep_alive) head += "Connection: close\r\n";
  head += "\r\n";
  if (!no_body) head += body;
  core_->queue(*c, head);
  core_->finish(*c);
  core_->wake();
}

void HttpResponder::start_stream(int status, HttpHeaders headers) {
  for (const auto& h : headers)
    if (!header_safe(h.first) || !header_safe(h.second) || !is_token(h.first))
      throw Error(ErrorCode::invalid_argument, "http server: a response header name or value is malformed");
  std::lock_guard lock(core_->mu);
  if (exchange_->answered || exchange_->gone) return;
  exchange_->answered = true;
  exchange_->streaming = true;
  Connection* c = core_->find(*exchange_);
  if (c == nullptr) return;
  if (!exchange_->http11) c->keep_alive = false;
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + std::string(http_reason(status)) + "\r\n";
  if (!has_header(headers, "content-type")) head += "Content-Type: text/event-stream\r\n";
  if (!has_header(headers, "cache-control")) head += "Cache-Control: no-cache\r\n";
  for (const auto& h : headers)
    if (!server_owned(h.first)) head += h.first + ": " + h.second + "\r\n";
  if (exchange_->http11) head += "Transfer-Encoding: chunked\r\n";
  if (!c->keep_alive) head += "Connection: close\r\n";
  head += "\r\n";
  core_->queue(*c, head);
  core_->wake();
}

namespace {
// Writes one SSE block on the exchange's stream (mu held by the caller's lock).
bool send_block(HttpServerCore& core, HttpExchange& ex, std::string_view block) {
  if (!ex.streaming || ex.ended || ex.gone) return false;
  Connection* c = core.find(ex);
  if (c == nullptr || c->doomed) return false;
  if (ex.head_request) return true;
  bool ok = core.queue(*c, ex.http11 ? chunk(block) : std::string(block));
  core.wake();
  return ok;
}
}  // namespace

bool HttpResponder::send_event(std::string_view data, std::string_view id) {
  std::string block;
  if (!id.empty()) {
    if (!header_safe(id)) return false;
    block += "id: " + std::string(id) + "\n";
  }
  std::size_t start = 0;
  while (true) {
    auto nl = data.find('\n', start);
    auto line = data.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    block += "data: ";
    block += line;
    block += "\n";
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  block += "\n";
  std::lock_guard lock(core_->mu);
  return send_block(*core_, *exchange_, block);
}

bool HttpResponder::send_retry(std::chrono::milliseconds delay, std::string_view id) {
  std::string block;
  if (!id.empty()) {
    if (!header_safe(id)) return false;
    block += "id: " + std::string(id) + "\n";
  }
  block += "retry: " + std::to_string(delay.count()) + "\n";
  if (!id.empty()) block += "data: \n";
  block += "\n";
  std::lock_guard lock(core_->mu);
  return send_block(*core_, *exchange_, block);
}

bool HttpResponder::send_comment(std::string_view text) {
  if (!header_safe(text)) return false;
  std::lock_guard lock(core_->mu);
  return send_block(*core_, *exchange_, ": " + std::string(text) + "\n\n");
}

void HttpResponder::end() {
  {
    std::lock_guard lock(core_->mu);
    if (exchange_->ended || exchange_->gone) return;
    if (exchange_->answered) {
      Connection* c = core_->find(*exchange_);
      exchange_->ended = true;
      if (c == nullptr) return;
      if (exchange_->streaming && exchange_->http11 && !exchange_->head_request) core_->queue(*c, "0\r\n\r\n");
      core_->finish(*c);
      core_->wake();
      return;
    }
  }
  respond(500, {{"Content-Type", "text/plain"}}, "the handler ended without a response\n");
}

bool HttpResponder::open() const {
  std::lock_guard lock(core_->mu);
  if (exchange_->ended || exchange_->gone) return false;
  const Connection* c = core_->find(*exchange_);
  return c != nullptr && !c->doomed;
}

void HttpResponder::on_close(std::function<void()> f) {
  {
    std::lock_guard lock(core_->mu);
    if (!exchange_->gone) {
      if (!exchange_->ended) exchange_->on_close.push_back(std::move(f));
      return;
    }
  }
  if (f) f();
}

// ---- HttpServer ----

struct HttpServer::Impl {
  std::shared_ptr<HttpServerCore> core = std::make_shared<HttpServerCore>();
  HttpHandler handler;
  int listen_fd = -1;
  int port = 0;
  std::uint64_t next_id = 1;
  std::thread thread;
  std::atomic<bool> running{false};
  std::mutex stop_mu;

  struct Dispatch {
    HttpRequest request;
    std::shared_ptr<HttpExchange> exchange;
  };
  std::vector<Dispatch> dispatches;
  std::vector<std::function<void()>> closes;

  const HttpServerOptions& opt() const { return core->options; }
  // Unparsed input a connection may hold (pipelined requests) before it is not read.
  std::size_t input_cap() const { return opt().max_header_bytes + opt().max_body_bytes + 64 * 1024; }

  // Refuses the request on c: an error response, then close (mu held).
  void refuse(Connection& c, int status) {
    c.keep_alive = false;
    std::string body = std::string(http_reason(status)) + "\n";
    std::string msg = "HTTP/1.1 " + std::to_string(status) + " " + std::string(http_reason(status)) +
                      "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
                      "\r\nConnection: close\r\n\r\n" + body;
    c.phase = Connection::Phase::waiting;
    core->queue(c, msg);
    c.close_after_write = true;
    c.in.clear();
  }

  // Parses the header block [0, end) of c.in into c.req; the status to refuse with, or 0.
  int parse_head(Connection& c, std::string_view block) {
    HttpRequest& r = c.req;
    auto line_end = block.find("\r\n");
    std::string_view line = block.substr(0, line_end);
    auto sp1 = line.find(' ');
    auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos) return 400;
    r.method = std::string(line.substr(0, sp1));
    r.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
    r.version = std::string(line.substr(sp2 + 1));
    if (!is_token(r.method) || r.target.empty()) return 400;
    for (char ch : r.target)
      if (static_cast<unsigned char>(ch) <= 0x20 || ch == 0x7f) return 400;
    if (r.version != "HTTP/1.1" && r.version != "HTTP/1.0") return 400;
    std::size_t pos = line_end == std::string_view::npos ? block.size() : line_end + 2;
    while (pos < block.size()) {
      auto e = block.find("\r\n", pos);
      if (e == std::string_view::npos) e = block.size();
      std::string_view h = block.substr(pos, e - pos);
      pos = e + 2;
      if (h.empty()) continue;
      if (h.front() == ' ' || h.front() == '\t') return 400;  // obsolete line folding
      auto colon = h.find(':');
      if (colon == std::string_view::npos || !is_token(h.substr(0, colon))) return 400;
      std::string_view value = trim(h.substr(colon + 1));
      for (char ch : value)
        if ((static_cast<unsigned char>(ch) < 0x20 && ch != '\t') || ch == 0x7f) return 400;
      r.headers.emplace_back(std::string(h.substr(0, colon)), std::string(value));
    }
    const bool http11 = r.version == "HTTP/1.1";
    std::optional<std::string> length;
    std::optional<std::string> encoding;
    int hosts = 0;
    bool close = !http11;
    for (const auto& [name, value] : r.headers) {
      if (iequals(name, "host")) ++hosts;
      if (iequals(name, "content-length")) {
        if (length && *length != value) return 400;
        length = value;
      }
      if (iequals(name, "transfer-encoding")) {
        if (encoding) return 400;
        encoding = value;
      }
      if (iequals(name, "connection")) {
        std::string_view v = value;
        while (!v.empty()) {
          auto comma = v.find(',');
          if (iequals(trim(v.substr(0, comma)), "close")) close = true;
          v = comma == std::string_view::npos ? std::string_view{} : v.substr(comma + 1);
        }
      }
    }
    if (http11 && hosts != 1) return 400;
    if (hosts > 1) return 400;
    if (length && encoding) return 400;
    c.keep_alive = !close;
    c.remaining = 0;
    c.trailer_bytes = 0;
    if (encoding) {
      if (!http11 || !iequals(*encoding, "chunked")) return 400;
      c.phase = Connection::Phase::chunk_size;
    } else if (length) {
      auto n = parse_length(*length);
      if (!n) return 400;
      if (*n > opt().max_body_bytes) return 413;
      c.remaining = *n;
      c.phase = Connection::Phase::body_length;
    } else {
      c.phase = Connection::Phase::body_length;
    }
    if (auto expect = r.header("expect")) {
      if (!iequals(*expect, "100-continue")) return 417;
      const bool body_to_come = c.phase != Connection::Phase::body_length || c.remaining > 0;
      if (http11 && body_to_come) core->queue(c, "HTTP/1.1 100 Continue\r\n\r\n");
    }
    return 0;
  }

  // Moves up to `remaining` buffered bytes into the body; true once all of
  // them have come.
  static bool take_body(Connection& c) {
    const std::size_t take = std::min(c.remaining, c.in.size());
    c.req.body.append(c.in, 0, take);
    c.in.erase(0, take);
    c.remaining -= take;
    return c.remaining == 0;
  }

  // Consumes what it can of c.in (mu held): completes requests into dispatches, or refuses.
  void advance(Connection& c) {
    using P = Connection::Phase;
    const auto& o = opt();
    while (!c.doomed && !c.close_after_write) {
      switch (c.phase) {
        case P::waiting:
        case P::draining:
          return;
        case P::headers: {
          while (c.in.size() >= 2 && c.in[0] == '\r' && c.in[1] == '\n') c.in.erase(0, 2);  // stray CRLFs between requests
          if (c.in.empty()) return;
          auto end = c.in.find("\r\n\r\n");
          if (end == std::string::npos) {
            if (c.in.size() > o.max_header_bytes) refuse(c, 431);
            return;
          }
          if (end + 4 > o.max_header_bytes) return refuse(c, 431);
          c.req = HttpRequest{};
          c.req.peer = c.peer;
          int status = parse_head(c, std::string_view(c.in).substr(0, end + 2));
          c.in.erase(0, end + 4);
          if (status != 0) return refuse(c, status);
          break;
        }
        case P::body_length:
          if (!take_body(c)) return;
          complete(c);
          return;
        case P::chunk_size: {
          auto e = c.in.find("\r\n");
          if (e == std::string::npos) {
            if (c.in.size() > 1024) refuse(c, 400);
            return;
          }
          std::string_view line = std::string_view(c.in).substr(0, e);
          line = line.substr(0, line.find(';'));
          line = trim(line);
          if (line.empty() || line.size() > 15) return refuse(c, 400);
          std::size_t size = 0;
          for (char ch : line) {
            int d = std::isxdigit(static_cast<unsigned char>(ch)) ? (std::isdigit(static_cast<unsigned char>(ch)) ? ch - '0' : (std::tolower(ch) - 'a' + 10)) : -1;
            if (d < 0) return refuse(c, 400);
            size = size * 16 + static_cast<std::size_t>(d);
          }
          c.in.erase(0, e + 2);
          if (size == 0) {
            c.phase = P::trailers;
          } else {
            if (c.req.body.size() + size > o.max_body_bytes) return refuse(c, 413);
            c.remaining = size;
            c.phase = P::chunk_data;
          }
          break;
        }
        case P::chunk_data:
          if (!take_body(c)) return;
          c.phase = P::chunk_crlf;
          break;
        case P::chunk_crlf: {
          if (c.in.size() < 2) return;
          if (c.in[0] != '\r' || c.in[1] != '\n') return refuse(c, 400);
          c.in.erase(0, 2);
          c.phase = P::chunk_size;
          break;
        }
        case P::trailers: {
          auto e = c.in.find("\r\n");
          if (e == std::string::npos) {
            if (c.trailer_bytes + c.in.size() > o.max_header_bytes) refuse(c, 431);
            return;
          }
          c.trailer_bytes += e + 2;
          if (c.trailer_bytes > o.max_header_bytes) return refuse(c, 431);
          c.in.erase(0, e + 2);
          if (e == 0) {
            complete(c);
            return;
          }
          break;
        }
      }
    }
  }

  void complete(Connection& c) {
    auto ex = std::make_shared<HttpExchange>();
    ex->conn_id = c.id;
    ex->head_request = c.req.method == "HEAD";
    ex->http11 = c.req.version == "HTTP/1.1";
    ex->keep_alive = c.keep_alive;
    c.exchange = ex;
    c.phase = Connection::Phase::waiting;
    dispatches.push_back({std::move(c.req), ex});
    c.req = HttpRequest{};
  }

  // Closes c (mu held); the exchange's on_close callbacks go to `closes`.
  void close_conn(Connection& c) {
    if (c.exchange && !c.exchange->ended && !c.exchange->gone) {
      c.exchange->gone = true;
      for (auto& f : c.exchange->on_close) closes.push_back(std::move(f));
      c.exchange->on_close.clear();
    }
    c.exchange.reset();
    if (c.fd >= 0) ::close(c.fd);
    c.fd = -1;
  }

  // Reads what is there (mu held); EOF sets peer_eof, a hard error dooms the connection.
  void read_from(Connection& c) {
    if (c.phase != Connection::Phase::draining && c.in.size() > input_cap()) return;  // pipelined too far ahead
    char buf[16 * 1024];
    for (int i = 0; i < 16; ++i) {
      ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        c.last_activity = Clock::now();
        if (c.phase == Connection::Phase::draining) continue;
        if (c.in.empty() && c.phase == Connection::Phase::headers) c.request_start = c.last_activity;
        c.in.append(buf, static_cast<std::size_t>(n));
        if (c.in.size() > input_cap()) return;
      } else if (n == 0) {
        c.peer_eof = true;
        return;
      } else if (errno == EINTR) {
        continue;
      } else {
        if (errno != EAGAIN && errno != EWOULDBLOCK) c.doomed = true;
        return;
      }
    }
  }

  void accept_all() {
    while (true) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // EAGAIN, or out of fds: try again on the next round
      }
      if (static_cast<int>(core->conns.size()) >= opt().max_connections) {
        static constexpr std::string_view busy =
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 20\r\n"
            "Connection: close\r\n\r\nService Unavailable\n";
        [[maybe_unused]] auto n = ::send(fd, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        ::shutdown(fd, SHUT_WR);
        ::close(fd);
        continue;
      }
      auto c = std::make_unique<Connection>();
      c->fd = fd;
      c->id = next_id++;
      c->peer = peer_name(addr);
      c->last_activity = c->request_start = Clock::now();
      core->conns.emplace(c->id, std::move(c));
    }
  }

  // Timeouts, parsing, writes and closes for every connection (mu held).
  void sweep(Clock::time_point now) {
    const auto& o = opt();
    for (auto it = core->conns.begin(); it != core->conns.end();) {
      Connection& c = *it->second;
      advance(c);
      core->flush(c);
      bool close = c.doomed || (core->stopped);
      using P = Connection::Phase;
      if (!close && c.phase == P::draining) {
        close = c.peer_eof || now >= c.drain_deadline;
      } else if (!close && c.close_after_write && c.pending() == 0) {
        ::shutdown(c.fd, SHUT_WR);
        c.phase = P::draining;
        c.drain_deadline = now + std::min<Clock::duration>(o.header_timeout, std::chrono::seconds(2));
        close = c.peer_eof;
      } else if (!close && c.peer_eof && !c.close_after_write) {
        close = true;  // the client is gone (or half-closed): nobody to answer
      } else if (!close && !c.close_after_write) {
        const bool idle = c.phase == P::headers && c.in.empty();
        if (idle && now - c.last_activity > o.idle_timeout) {
          close = true;
        } else if (c.phase == P::headers && !c.in.empty() && now - c.request_start > o.header_timeout) {
          refuse(c, 408);
          core->flush(c);
        } else if (c.phase != P::headers && c.phase != P::waiting && now - c.last_activity > o.header_timeout) {
          refuse(c, 408);
          core->flush(c);
        }
      }
      if (close) {
        close_conn(c);
        it = core->conns.erase(it);
      } else {
        ++it;
      }
    }
  }

  // Runs handlers and close callbacks collected under the lock (mu not held).
  bool run_callbacks(std::unique_lock<std::mutex>& lock) {
    if (dispatches.empty() && closes.empty()) return false;
    auto todo = std::move(dispatches);
    auto gone = std::move(closes);
    dispatches.clear();
    closes.clear();
    lock.unlock();
    for (auto& f : gone) {
      try {
        if (f) f();
      } catch (...) {
      }
    }
    for (auto& d : todo) {
      auto responder = std::make_shared<HttpResponder>(core, d.exchange);
      try {
        handler(d.request, responder);
      } catch (...) {
        try {
          responder->respond(500, {{"Content-Type", "text/plain"}}, "Internal Server Error\n");
        } catch (...) {
        }
      }
    }
    todo.clear();  // responders the handler did not keep answer 500 here
    lock.lock();
    return true;
  }

  // One round: wait up to `timeout` for activity, then advance everything.
  bool step(std::chrono::milliseconds timeout) {
    std::vector<pollfd> fds;
    std::vector<std::uint64_t> ids;
    {
      std::lock_guard lock(core->mu);
      if (core->stopped) return false;
      fds.push_back({core->wake_fd, POLLIN, 0});
      fds.push_back({listen_fd, POLLIN, 0});
      const std::size_t cap = input_cap();
      for (const auto& [id, c] : core->conns) {
        short events = POLLRDHUP;
        if (c->in.size() <= cap) events |= POLLIN;
        if (c->pending() > 0) events |= POLLOUT;
        fds.push_back({c->fd, events, 0});
        ids.push_back(id);
      }
    }
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
    bool happened = n > 0;
    std::unique_lock lock(core->mu);
    if (core->stopped) return happened;
    if (fds[0].revents & POLLIN) {
      std::uint64_t v;
      [[maybe_unused]] auto r = ::read(core->wake_fd, &v, sizeof v);
    }
    if (fds[1].revents & POLLIN) accept_all();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const short re = fds[i + 2].revents;
      if (re == 0) continue;
      auto it = core->conns.find(ids[i]);
      if (it == core->conns.end()) continue;
      Connection& c = *it->second;
      if (re & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) read_from(c);
      if (re & (POLLHUP | POLLERR)) c.peer_eof = true;
      if ((re & POLLRDHUP) && c.in.size() > input_cap()) c.peer_eof = true;
      if (re & POLLOUT) core->flush(c);
    }
    for (int round = 0; round < 8; ++round) {
      sweep(Clock::now());
      if (!run_callbacks(lock)) break;
      happened = true;
    }
    return happened;
  }

  std::chrono::milliseconds wait_time() {
    return std::chrono::milliseconds(std::clamp<long long>(
        std::min(opt().header_timeout, opt().idle_timeout).count() / 4, 5, 250));
  }
};

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler) : impl_(std::make_unique<Impl>()) {
  impl_->core->options = std::move(options);
  impl_->handler = std::move(handler);
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::listen() {
  auto& im = *impl_;
  if (im.listen_fd >= 0) return;
  const auto& o = im.opt();
  const std::string where = o.host + ":" + std::to_string(o.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(o.host.c_str(), std::to_string(o.port).c_str(), &hints, &res); rc != 0)
    throw Error(ErrorCode::unavailable, "http server: cannot resolve " + where + ": " + gai_strerror(rc));
  std::string why = "no address";
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      im.listen_fd = fd;
      break;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(res);
  if (im.listen_fd < 0) throw Error(ErrorCode::unavailable, "http server: cannot listen on " + where + ": " + why);
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(im.listen_fd, reinterpret_cast<sockaddr*>(&addr), &len);
  im.port = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                       : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  im.core->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (im.core->wake_fd < 0) {
    ::close(im.listen_fd);
    im.listen_fd = -1;
    throw Error(ErrorCode::unavailable, std::string("http server: eventfd: ") + std::strerror(errno));
  }
}

int HttpServer::port() const { return impl_->port; }

std::string HttpServer::url() const {
  const auto& host = impl_->opt().host;
  const bool v6 = host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(impl_->port);
}

bool HttpServer::poll() {
  if (impl_->listen_fd < 0) throw Error(ErrorCode::invalid_argument, "http server: poll() before listen()");
  if (impl_->running) throw Error(ErrorCode::invalid_argument, "http server: poll() while run_in_thread() runs");
  return impl_->step(std::chrono::milliseconds(0));
}

void HttpServer::run_in_thread() {
  auto& im = *impl_;
  if (im.listen_fd < 0) throw Error(ErrorCode::invalid_argument, "http server: run_in_thread() before listen()");
  std::lock_guard guard(im.stop_mu);
  if (im.running.exchange(true)) return;
  im.thread = std::thread([&im] {
    while (true) {
      {
        std::lock_guard lock(im.core->mu);
        if (im.core->stopped) return;
      }
      im.step(im.wait_time());
    }
  });
}

void HttpServer::stop() {
  auto& im = *impl_;
  std::lock_guard guard(im.stop_mu);
  {
    std::lock_guard lock(im.core->mu);
    if (im.core->stopped) return;
    im.core->stopped = true;
  }
  im.core->wake();
  if (im.thread.joinable()) im.thread.join();
  im.running = false;
  std::vector<std::function<void()>> gone;
  {
    std::lock_guard lock(im.core->mu);
    for (auto& [id, c] : im.core->conns) im.close_conn(*c);
    im.core->conns.clear();
    gone = std::move(im.closes);
    im.closes.clear();
    im.dispatches.clear();
  }
  if (im.listen_fd >= 0) ::close(im.listen_fd);
  im.listen_fd = -1;
  for (auto& f : gone) {
    try {
      if (f) f();
    } catch (...) {
    }
  }
}

}  // namespace agentkit::providers::detail
