#include <agentkit/testing/wire_server.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <deque>
#include <list>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace agentkit::testing {
namespace {

// Every blocking wait is a poll() with this timeout in a loop that checks the
// stop flag, so the destructor never waits longer than a tick per thread.
constexpr int kTickMs = 10;
constexpr std::size_t kMaxHeaderBytes = 1 << 20;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return {};
  const auto end = s.find_last_not_of(" \t");
  return s.substr(begin, end - begin + 1);
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 529: return "Overloaded";
    default: return "Status";
  }
}

bool has_header(const WireServer::Response& r, const std::string& name) {
  return std::any_of(r.headers.begin(), r.headers.end(), [&](const auto& h) { return lower(h.first) == name; });
}

}  // namespace

std::string WireServer::Request::header(const std::string& name) const {
  const std::string wanted = lower(name);
  for (const auto& [key, value] : headers) {
    if (key == wanted) return value;
  }
  return {};
}

std::vector<std::string> WireServer::split(const std::string& body, std::size_t size) {
  std::vector<std::string> chunks;
  if (size == 0) size = body.size();
  for (std::size_t pos = 0; pos < body.size(); pos += size) chunks.push_back(body.substr(pos, size));
  return chunks;
}

struct WireServer::Impl {
  int listen_fd = -1;
  std::uint16_t port = 0;
  std::atomic<bool> stopping{false};

  mutable std::mutex mutex;  // guards everything below
  std::deque<Response> queue;
  Handler handler;
  std::vector<Request> requests;
  bool recording = true;
  std::size_t request_count = 0;
  std::size_t connections = 0;
  struct Connection {
    int fd = -1;
    bool open = true;  // the socket is closed by its own thread, after clearing this
    std::atomic<bool> done{false};
    std::thread thread;
  };
  std::list<Connection> live;  // finished ones are joined by the accept thread as it goes
  std::thread accept_thread;

  void accept_loop();
  void serve(Connection& c);

  // Waits until `fd` is readable (true) or the server stops (false).
  bool wait_readable(int fd) const {
    while (!stopping.load()) {
      pollfd p{fd, POLLIN, 0};
      const int rc = ::poll(&p, 1, kTickMs);
      if (rc > 0) return true;
      if (rc < 0 && errno != EINTR) return false;
    }
    return false;
  }

  // Sleeps up to `d`, waking early when the server stops. Returns false if stopped.
  bool pause(std::chrono::milliseconds d) const {
    const auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) {
      if (stopping.load()) return false;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(kTickMs)));
    }
    return !stopping.load();
  }

  // MSG_NOSIGNAL: a client that hung up must not raise SIGPIPE in the test process.
  static bool send_all(int fd, const std::string& data) {
    std::size_t sent = 0;
    while (sent < data.size()) {
      const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }

  // Reads more bytes into `buffer`; false on EOF, error or stop.
  bool read_more(int fd, std::string& buffer) const {
    if (!wait_readable(fd)) return false;
    char tmp[16 * 1024];
    for (;;) {
      const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buffer.append(tmp, static_cast<std::size_t>(n));
      return true;
    }
  }

  // Reads exactly `n` bytes starting at buffer[pos] (reading more as needed).
  bool need(int fd, std::string& buffer, std::size_t pos, std::size_t n) const {
    while (buffer.size() < pos + n) {
      if (!read_more(fd, buffer)) return false;
    }
    return true;
  }

  // Reads a CRLF-terminated line starting at buffer[pos]; returns it and advances pos.
  std::optional<std::string> line(int fd, std::string& buffer, std::size_t& pos) const {
    for (;;) {
      const auto eol = buffer.find("\r\n", pos);
      if (eol != std::string::npos) {
        std::string out = buffer.substr(pos, eol - pos);
        pos = eol + 2;
        return out;
      }
      if (buffer.size() - pos > kMaxHeaderBytes || !read_more(fd, buffer)) return std::nullopt;
    }
  }

  Response next_response(const Request& request) {
    Handler h;
    std::size_t number = 0;
    {
      std::lock_guard lock(mutex);
      if (recording) requests.push_back(request);
      number = ++request_count;
      h = handler;
      if (!h && !queue.empty()) {
        Response r = std::move(queue.front());
        queue.pop_front();
        return r;
      }
    }
    if (h) {
      try {
        return h(request);
      } catch (const std::exception& e) {
        Response r;
        r.status = 500;
        r.body = std::string("WireServer: handler threw: ") + e.what();
        return r;
      }
    }
    Response r;
    r.status = 500;
    r.body = "WireServer: no response scripted for request #" + std::to_string(number);
    return r;
  }

  void forget(Connection& c) {
    std::lock_guard lock(mutex);
    c.open = false;
  }
};

WireServer::WireServer() : impl_(std::make_unique<Impl>()) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "WireServer: socket");
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::system_error(err, std::generic_category(), "WireServer: bind/listen");
  }
  impl_->listen_fd = fd;
  impl_->port = ntohs(addr.sin_port);
  impl_->accept_thread = std::thread([impl = impl_.get()] { impl->accept_loop(); });
}

WireServer::~WireServer() {
  impl_->stopping.store(true);
  ::shutdown(impl_->listen_fd, SHUT_RDWR);
  if (impl_->accept_thread.joinable()) impl_->accept_thread.join();
  ::close(impl_->listen_fd);
  std::list<Impl::Connection> live;
  {
    // Wakes connection threads blocked in send(); each closes its own socket.
    std::lock_guard lock(impl_->mutex);
    for (const auto& c : impl_->live) {
      if (c.open) ::shutdown(c.fd, SHUT_RDWR);
    }
    live.splice(live.end(), impl_->live);
  }
  for (auto& c : live) c.thread.join();
}

std::uint16_t WireServer::port() const noexcept { return impl_->port; }

std::string WireServer::base_url() const { return "http://127.0.0.1:" + std::to_string(impl_->port); }

void WireServer::enqueue(Response response) {
  std::lock_guard lock(impl_->mutex);
  impl_->queue.push_back(std::move(response));
}

void WireServer::set_handler(Handler handler) {
  std::lock_guard lock(impl_->mutex);
  impl_->handler = std::move(handler);
}

std::vector<WireServer::Request> WireServer::requests() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->requests;
}

void WireServer::record_requests(bool on) {
  std::lock_guard lock(impl_->mutex);
  impl_->recording = on;
}

std::size_t WireServer::connections_accepted() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->connections;
}

void WireServer::Impl::accept_loop() {
  while (wait_readable(listen_fd)) {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
      if (stopping.load()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(kTickMs));  // e.g. out of descriptors
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard lock(mutex);
    if (stopping.load()) {
      ::close(fd);
      return;
    }
    ++connections;
    for (auto it = live.begin(); it != live.end();) {
      if (it->done.load()) {
        it->thread.join();
        it = live.erase(it);
      } else {
        ++it;
      }
    }
    Connection& c = live.emplace_back();
    c.fd = fd;
    c.thread = std::thread([this, &c] {
      serve(c);
      c.done.store(true);
    });
  }
}

// One connection: read requests and answer them until the client closes, asks
// to close, a fault ends the connection, or the server stops. With a whole
// body (no `chunks`), reset/truncate faults fire after the headers and the
// first half of the body.
void WireServer::Impl::serve(Connection& c) {
  const int fd = c.fd;
  std::string buffer;
  bool keep_alive = true;
  bool reset = false;
  while (keep_alive && !stopping.load()) {
    std::size_t pos = 0;
    Request request;
    const auto request_line = line(fd, buffer, pos);
    if (!request_line) break;
    if (request_line->empty()) {  // stray CRLF between requests
      buffer.erase(0, pos);
      continue;
    }
    const auto sp1 = request_line->find(' ');
    const auto sp2 = request_line->rfind(' ');
    if (sp1 == std::string::npos || sp2 == sp1) break;
    request.method = request_line->substr(0, sp1);
    request.path = request_line->substr(sp1 + 1, sp2 - sp1 - 1);
    const std::string version = request_line->substr(sp2 + 1);

    bool headers_ok = true;
    for (;;) {
      const auto header_line = line(fd, buffer, pos);
      if (!header_line) {
        headers_ok = false;
        break;
      }
      if (header_line->empty()) break;
      const auto colon = header_line->find(':');
      if (colon == std::string::npos) continue;
      request.headers.emplace_back(lower(trim(header_line->substr(0, colon))), trim(header_line->substr(colon + 1)));
    }
    if (!headers_ok) break;

    const std::string connection = lower(request.header("connection"));
    keep_alive = version == "HTTP/1.0" ? connection == "keep-alive" : connection != "close";
    if (lower(request.header("expect")) == "100-continue" && !send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n")) break;

    bool body_ok = true;
    if (lower(request.header("transfer-encoding")).find("chunked") != std::string::npos) {
      for (;;) {
        const auto size_line = line(fd, buffer, pos);
        if (!size_line) {
          body_ok = false;
          break;
        }
        const std::size_t size = std::strtoul(size_line->c_str(), nullptr, 16);
        if (size == 0) {  // trailers until the blank line
          for (;;) {
            const auto trailer = line(fd, buffer, pos);
            if (!trailer) body_ok = false;
            if (!trailer || trailer->empty()) break;
          }
          break;
        }
        if (!need(fd, buffer, pos, size + 2)) {
          body_ok = false;
          break;
        }
        request.body.append(buffer, pos, size);
        pos += size + 2;
      }
    } else if (const std::string length = request.header("content-length"); !length.empty()) {
      const std::size_t size = std::strtoul(length.c_str(), nullptr, 10);
      body_ok = need(fd, buffer, pos, size);
      if (body_ok) {
        request.body = buffer.substr(pos, size);
        pos += size;
      }
    }
    if (!body_ok) break;
    buffer.erase(0, pos);

    Response response = next_response(request);
    if (!pause(response.delay)) break;

    if (response.fault == Fault::stall) {
      // Holds the connection open, unanswered, until the client hangs up or the server stops.
      std::string ignored;
      while (read_more(fd, ignored)) ignored.clear();
      keep_alive = false;
      break;
    }

    for (const auto& [k, v] : response.headers) {
      if (lower(k) == "connection" && lower(v) == "close") keep_alive = false;
    }
    if (response.unframed) keep_alive = false;  // the close ends the body
    const bool chunked = !response.chunks.empty() && !response.unframed;
    std::string head = "HTTP/1.1 " + std::to_string(response.status) + " " + reason_phrase(response.status) + "\r\n";
    for (const auto& [k, v] : response.headers) head += k + ": " + v + "\r\n";
    if (response.unframed) {
      if (!has_header(response, "connection")) head += "Connection: close\r\n";
      head += "\r\n";
      bool sent = send_all(fd, head + response.body);
      for (std::size_t i = 0; sent && i < response.chunks.size(); ++i) {
        sent = (i == 0 || pause(response.chunk_delay)) && send_all(fd, response.chunks[i]);
      }
      break;
    }
    if (chunked) {
      if (!has_header(response, "transfer-encoding")) head += "Transfer-Encoding: chunked\r\n";
    } else if (!has_header(response, "content-length")) {
      head += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
    }
    if (!keep_alive && !has_header(response, "connection")) head += "Connection: close\r\n";
    head += "\r\n";

    const bool faulty = response.fault == Fault::reset_mid_stream || response.fault == Fault::truncate;
    bool ok = true;
    if (!chunked) {
      if (faulty) {
        ok = send_all(fd, head + response.body.substr(0, response.body.size() / 2)) && pause(response.chunk_delay);
      } else {
        ok = send_all(fd, head + response.body);
      }
    } else {
      ok = send_all(fd, head);
      const std::size_t limit = faulty ? std::min(response.fault_after_chunks, response.chunks.size()) : response.chunks.size();
      for (std::size_t i = 0; ok && i < limit; ++i) {
        if (i > 0 && !pause(response.chunk_delay)) ok = false;
        if (!ok || response.chunks[i].empty()) continue;  // an empty chunk would end the body
        char size[32];
        std::snprintf(size, sizeof size, "%zx\r\n", response.chunks[i].size());
        ok = send_all(fd, size + response.chunks[i] + "\r\n");
      }
      // A fault fires after a further chunk_delay, so the client has read what was sent.
      if (ok && faulty) ok = pause(response.chunk_delay);
      if (ok && !faulty) ok = send_all(fd, "0\r\n\r\n");
    }
    if (!ok) break;
    if (response.fault == Fault::reset_mid_stream) {
      reset = true;
      break;
    }
    if (response.fault == Fault::truncate) break;
  }

  forget(c);
  if (reset) {
    const linger lg{1, 0};  // close() now sends RST instead of FIN
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  } else {
    ::shutdown(fd, SHUT_WR);
  }
  ::close(fd);
}

}  // namespace agentkit::testing
