// Transport over libcurl. This is the only file that includes <curl/curl.h>.
//
// Every transfer, blocking or streamed, runs through a multi handle that this
// thread drives itself: curl_multi_poll() wakes at least every 10 ms, so a
// cancelled token or an idle stream is noticed within one tick instead of at
// libcurl's roughly once-a-second progress callback. Each pooled slot pairs an
// easy handle with its own multi handle because libcurl keeps the connection
// cache in the multi handle: reusing the pair reuses the keep-alive connection.
#include <agentkit/providers/transport.h>

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <random>
#include <thread>

namespace agentkit::providers {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kTick{10};
constexpr milliseconds kMaxRetryAfter{60'000};
constexpr std::size_t kMaxPooled = 8;
constexpr std::size_t kMaxErrorBody = 1 << 20;  // a non-2xx body only feeds an error message

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

struct Slot {
  CURLM* multi = nullptr;
  CURL* easy = nullptr;
};

// What one attempt saw; the curl callbacks write here.
struct Attempt {
  const std::function<bool(std::string_view)>* on_data = nullptr;  // null for send()
  HttpResponse response;
  std::size_t delivered = 0;  // bytes handed to on_data
  bool stopped_by_caller = false;
  std::exception_ptr callback_error;
  Clock::time_point last_byte = Clock::now();
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto& a = *static_cast<Attempt*>(user);
  const std::size_t n = size * count;
  a.last_byte = Clock::now();
  const std::string_view line = trim(std::string_view(data, n));
  if (line.rfind("HTTP/", 0) == 0) {
    // A new status line: a 100 Continue or a proxy CONNECT answer came first.
    a.response.headers.clear();
    a.response.body.clear();
    const auto sp = line.find(' ');
    a.response.status = sp == std::string_view::npos ? 0 : std::atoi(std::string(line.substr(sp + 1, 3)).c_str());
    return n;
  }
  if (line.empty()) return n;
  if ((data[0] == ' ' || data[0] == '\t') && !a.response.headers.empty()) {  // obsolete line folding
    a.response.headers.back().second += " ";
    a.response.headers.back().second += line;
    return n;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  a.response.headers.emplace_back(lower(trim(line.substr(0, colon))), std::string(trim(line.substr(colon + 1))));
  return n;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto& a = *static_cast<Attempt*>(user);
  const std::size_t n = size * count;
  a.last_byte = Clock::now();
  const bool success = a.response.status >= 200 && a.response.status < 300;
  if (a.on_data && success) {
    a.delivered += n;
    try {
      if (!(*a.on_data)(std::string_view(data, n))) {
        a.stopped_by_caller = true;
        return 0;  // anything but n aborts the transfer
      }
    } catch (...) {
      a.callback_error = std::current_exception();
      return 0;
    }
    return n;
  }
  if (!success && a.response.body.size() >= kMaxErrorBody) return n;
  a.response.body.append(data, n);
  return n;
}

// Values that must never appear in an error message, even if a server echoes them.
std::vector<std::string> secrets_of(const Headers& headers) {
  std::vector<std::string> out;
  for (const auto& [name, value] : headers) {
    const std::string key = lower(name);
    if (key != "authorization" && key != "proxy-authorization" && key != "x-api-key" && key != "api-key" &&
        key != "x-goog-api-key") {
      continue;
    }
    const std::string_view v = trim(value);
    if (v.size() >= 6) out.emplace_back(v);
    if (const auto sp = v.find(' '); sp != std::string_view::npos && v.size() - sp - 1 >= 6) {
      out.emplace_back(trim(v.substr(sp + 1)));  // the token after "Bearer "
    }
  }
  return out;
}

ProviderError scrubbed(const ProviderError& e, const std::vector<std::string>& secrets) {
  std::string message = e.what();
  bool changed = false;
  for (const auto& secret : secrets) {
    for (auto pos = message.find(secret); pos != std::string::npos; pos = message.find(secret, pos)) {
      message.replace(pos, secret.size(), "[redacted]");
      changed = true;
    }
  }
  if (!changed) return e;
  return ProviderError(e.code(), std::move(message), e.http_status(), e.retryable(), e.retry_after());
}

// The scheme and authority of a URL: never the path or query, which may carry a key.
std::string origin_of(const std::string& url) {
  const auto scheme = url.find("://");
  const auto start = scheme == std::string::npos ? 0 : scheme + 3;
  const auto end = url.find_first_of("/?#", start);
  std::string authority = url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (const auto at = authority.rfind('@'); at != std::string::npos) authority.erase(0, at + 1);  // user:password@
  return url.substr(0, start) + authority;
}

}  // namespace

struct Transport::Impl {
  std::mutex mutex;  // guards idle and rng
  std::vector<Slot> idle;
  std::minstd_rand rng{std::random_device{}()};

  ~Impl() {
    for (auto& slot : idle) {
      curl_easy_cleanup(slot.easy);
      curl_multi_cleanup(slot.multi);
    }
  }

  Slot take() {
    {
      std::lock_guard lock(mutex);
      if (!idle.empty()) {
        Slot slot = idle.back();
        idle.pop_back();
        return slot;
      }
    }
    Slot slot{curl_multi_init(), curl_easy_init()};
    if (!slot.multi || !slot.easy) {
      if (slot.easy) curl_easy_cleanup(slot.easy);
      if (slot.multi) curl_multi_cleanup(slot.multi);
      throw ProviderError(ErrorCode::unavailable, "libcurl could not create a handle");
    }
    return slot;
  }

  void give(Slot slot) {
    curl_easy_reset(slot.easy);  // drops pointers into the finished request; keeps the connection
    std::lock_guard lock(mutex);
    if (idle.size() < kMaxPooled) {
      idle.push_back(slot);
      return;
    }
    curl_easy_cleanup(slot.easy);
    curl_multi_cleanup(slot.multi);
  }

  // The retry loop shared by send() (on_data null, fills *out) and stream().
  void execute(const TransportOptions& options, const HttpRequest& request,
               const std::function<bool(std::string_view)>* on_data, const CancellationToken* cancel,
               HttpResponse* out);

  milliseconds jitter(milliseconds cap) {
    std::lock_guard lock(mutex);
    return milliseconds(std::uniform_int_distribution<long long>(0, std::max<long long>(cap.count(), 0))(rng));
  }
};

namespace {

// Sleeps `d`, checking `cancel` every tick.
void sleep_cancellable(milliseconds d, const CancellationToken* cancel) {
  const auto until = Clock::now() + d;
  for (auto now = Clock::now(); now < until; now = Clock::now()) {
    if (cancel && cancel->cancelled()) return;
    std::this_thread::sleep_for(std::min<Clock::duration>(until - now, kTick));
  }
}

struct Outcome {
  bool done = false;                    // a complete response (any status), or the caller stopped
  std::optional<ProviderError> error;  // a transport-level failure
  bool retry = false;                  // the failure may be retried
};

class Call {
 public:
  Call(const TransportOptions& options, const HttpRequest& request) : options_(options), request_(request) {
    for (const auto& [name, value] : request.headers) {
      if ((name + value).find_first_of("\r\n") != std::string::npos) {
        curl_slist_free_all(headers_);
        throw ProviderError(ErrorCode::invalid, "request header '" + name.substr(0, name.find_first_of("\r\n")) +
                                                    "' contains a line break");
      }
      headers_ = curl_slist_append(headers_, (name + ": " + value).c_str());
    }
    headers_ = curl_slist_append(headers_, "Expect:");  // no 100-continue round trip for large bodies
  }
  ~Call() { curl_slist_free_all(headers_); }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  Outcome run(Slot slot, Attempt& a, const CancellationToken* cancel) {
    CURL* easy = slot.easy;
    char error_buffer[CURL_ERROR_SIZE] = {0};
    configure(easy, a, error_buffer);

    curl_multi_add_handle(slot.multi, easy);
    const auto started = Clock::now();
    a.last_byte = started;
    bool cancelled = false;
    bool idle = false;
    CURLcode result = CURLE_OK;
    bool finished = false;
    for (;;) {
      int running = 0;
      if (curl_multi_perform(slot.multi, &running) != CURLM_OK) break;
      int queued = 0;
      while (CURLMsg* msg = curl_multi_info_read(slot.multi, &queued)) {
        if (msg->msg == CURLMSG_DONE && msg->easy_handle == easy) {
          result = msg->data.result;
          finished = true;
        }
      }
      if (finished || running == 0) break;
      if (cancel && cancel->cancelled()) {
        cancelled = true;
        break;
      }
      if (options_.idle_timeout.count() > 0 && Clock::now() - a.last_byte >= options_.idle_timeout) {
        idle = true;
        break;
      }
      curl_multi_poll(slot.multi, nullptr, 0, static_cast<int>(kTick.count()), nullptr);
    }
    // Removing an unfinished transfer aborts it and closes its connection.
    curl_multi_remove_handle(slot.multi, easy);

    Outcome out;
    if (a.callback_error) std::rethrow_exception(a.callback_error);
    if (cancelled) {
      out.error.emplace(ErrorCode::cancelled, "request cancelled");
      return out;
    }
    const std::string where = " (" + request_.method + " " + origin_of(request_.url) + ")";
    if (idle) {
      out.error.emplace(ErrorCode::timeout,
                        "no data received for " + std::to_string(options_.idle_timeout.count()) + " ms" +
                            (a.delivered ? " mid-stream" : "") + where,
                        0, true);
      return out;
    }
    if (!finished) {
      out.error.emplace(ErrorCode::unavailable, "libcurl multi interface failed" + where);
      return out;
    }
    if (result == CURLE_OK || (a.stopped_by_caller && result == CURLE_WRITE_ERROR)) {
      long status = 0;
      curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
      if (status > 0) a.response.status = static_cast<int>(status);
      out.done = true;
      return out;
    }

    const std::string detail = error_buffer[0] ? error_buffer : curl_easy_strerror(result);
    if (a.delivered > 0) {
      out.error.emplace(ErrorCode::unavailable,
                        "stream interrupted after " + std::to_string(a.delivered) + " bytes: " + detail + where);
      return out;
    }
    switch (result) {
      case CURLE_OPERATION_TIMEDOUT:
        // One code for both limits: a total timeout means the server got the request
        // and went slow, so only a connect timeout is worth another attempt.
        if (options_.total_timeout.count() > 0 && Clock::now() - started >= options_.total_timeout) {
          out.error.emplace(ErrorCode::timeout, "request timed out: " + detail + where, 0, true);
        } else {
          out.error.emplace(ErrorCode::timeout, "connect timed out: " + detail + where, 0, true);
          out.retry = true;
        }
        break;
      case CURLE_COULDNT_CONNECT:
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_COULDNT_RESOLVE_PROXY:
      case CURLE_GOT_NOTHING:
      case CURLE_SEND_ERROR:
      case CURLE_RECV_ERROR:
      case CURLE_PARTIAL_FILE:
      case CURLE_SSL_CONNECT_ERROR:
      case CURLE_HTTP2:
      case CURLE_HTTP2_STREAM:
        out.error.emplace(ErrorCode::unavailable, "connection failed: " + detail + where, 0, true);
        out.retry = true;
        break;
      case CURLE_WEIRD_SERVER_REPLY:
      case CURLE_BAD_CONTENT_ENCODING:
        out.error.emplace(ErrorCode::protocol, "malformed response: " + detail + where);
        break;
      case CURLE_URL_MALFORMAT:
      case CURLE_UNSUPPORTED_PROTOCOL:
        out.error.emplace(ErrorCode::invalid, "bad request URL: " + detail);
        break;
      default:
        out.error.emplace(ErrorCode::unavailable, "transfer failed: " + detail + where);
        break;
    }
    return out;
  }

 private:
  void configure(CURL* easy, Attempt& a, char* error_buffer) {
    curl_easy_setopt(easy, CURLOPT_URL, request_.url.c_str());
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error_buffer);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.total_timeout.count()));
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, options_.verify_tls ? 1L : 0L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, options_.verify_tls ? 2L : 0L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_USERAGENT, "agentkit/0.1");
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers_);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &on_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, &a);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &a);
    const std::string& method = request_.method;
    if (method == "GET") {
      curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
    } else if (method == "HEAD") {
      curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
    } else {
      if (method != "POST") curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, method.c_str());
      if (method == "POST" || !request_.body.empty()) {
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request_.body.size()));
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, request_.body.data());
      }
    }
  }

  const TransportOptions& options_;
  const HttpRequest& request_;
  curl_slist* headers_ = nullptr;
};

}  // namespace

void Transport::Impl::execute(const TransportOptions& options, const HttpRequest& request,
                              const std::function<bool(std::string_view)>* on_data, const CancellationToken* cancel,
                              HttpResponse* out) {
  const auto secrets = secrets_of(request.headers);
  Call call(options, request);
  for (int attempt = 0;; ++attempt) {
    if (cancel && cancel->cancelled()) throw ProviderError(ErrorCode::cancelled, "request cancelled");
    Attempt a;
    a.on_data = on_data;
    Slot slot = take();
    Outcome outcome;
    try {
      outcome = call.run(slot, a, cancel);
    } catch (...) {
      give(slot);
      throw;
    }
    give(slot);

    std::optional<milliseconds> wait;
    if (outcome.done) {
      if (a.stopped_by_caller) return;
      if (a.response.status >= 200 && a.response.status < 300) {
        if (out) *out = std::move(a.response);
        return;
      }
      ProviderError error = error_from_response(a.response);
      const RetryAdvice advice = retry_advice(a.response.status, a.response);
      if (!advice.retry || error.code() == ErrorCode::quota_exceeded || attempt >= options.max_retries) {
        throw scrubbed(error, secrets);
      }
      wait = advice.after;
    } else {
      // Nothing a caller has seen may be sent twice: a stream that delivered bytes is final.
      if (!outcome.retry || a.delivered > 0 || attempt >= options.max_retries) throw scrubbed(*outcome.error, secrets);
    }

    milliseconds backoff;
    if (wait) {
      backoff = std::min(*wait, kMaxRetryAfter);
    } else {
      const auto ceiling = options.base_backoff * (1LL << std::min(attempt, 20));
      backoff = jitter(std::min<milliseconds>(ceiling, options.max_backoff));  // full jitter
    }
    sleep_cancellable(backoff, cancel);
  }
}

Transport::Transport(TransportOptions options) : options_(options), impl_(std::make_unique<Impl>()) { global_init(); }

Transport::~Transport() = default;

HttpResponse Transport::send(const HttpRequest& request, const CancellationToken* cancel) {
  HttpResponse response;
  impl_->execute(options_, request, nullptr, cancel, &response);
  return response;
}

void Transport::stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_data,
                       const CancellationToken* cancel) {
  impl_->execute(options_, request, &on_data, cancel, nullptr);
}

}  // namespace agentkit::providers
