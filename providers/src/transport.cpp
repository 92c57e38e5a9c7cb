// Transport over libcurl. This is the only file that includes <curl/curl.h>.
//
// Every transfer, blocking or streamed, is an AsyncRequest: a state machine
// over a multi handle that its owner advances with poll() (never waiting)
// and, when it may block, wait() (curl_multi_poll() for at most 10 ms, or the
// retry deadline). The blocking calls loop over poll()/wait(), so a cancelled
// token or an idle stream is noticed within one tick instead of at libcurl's
// roughly once-a-second progress callback, and retries are scheduled, not
// slept. Each pooled slot pairs an easy handle with its own multi handle
// because libcurl keeps the connection cache in the multi handle: reusing the
// pair reuses the keep-alive connection.
#include <agentkit/providers/transport.h>

#include <agentkit/backoff.h>
#include <agentkit/redact.h>

#include <curl/curl.h>

#include "scrub.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

namespace agentkit::providers {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kTick{10};
constexpr milliseconds kMaxRetryAfter{60'000};
constexpr std::size_t kMaxPooled = 8;
constexpr std::size_t kMaxErrorBody = 1 << 20;  // a non-2xx body only feeds an error message
constexpr std::size_t kMaxBody = std::size_t{64} << 20;  // a 2xx body read whole: a hostile server's cannot grow without end

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

// An easy handle with its multi handle, and what the easy handle was last
// set up with: a handle that served a POST keeps the options every request
// of its Transport shares (set once), its URL and its header list, so the
// next POST sets only what differs (Slot::configure in AsyncRequest::State).
struct Slot {
  CURLM* multi = nullptr;
  CURL* easy = nullptr;
  bool primed = false;          // the shared options are set and the last request was a POST
  std::string url;              // the URL it was last given
  Headers headers;              // the request headers `header_list` was built from
  curl_slist* header_list = nullptr;  // owned; outlives the transfer that uses it
};

void destroy(Slot& slot) {
  curl_easy_cleanup(slot.easy);
  curl_multi_cleanup(slot.multi);
  curl_slist_free_all(slot.header_list);
}

// What one attempt saw; the curl callbacks write here.
struct Attempt {
  const std::function<bool(std::string_view)>* on_data = nullptr;  // null for send()
  const Transport::HeadersCallback* on_headers = nullptr;
  bool any_status = false;     // HttpRequest::any_status
  bool headers_shown = false;  // on_headers ran
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

// Hands the status and headers to on_headers, once per request.
void show_headers(Attempt& a) {
  if (a.on_headers && *a.on_headers && !a.headers_shown) {
    a.headers_shown = true;
    (*a.on_headers)(a.response);
  }
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto& a = *static_cast<Attempt*>(user);
  const std::size_t n = size * count;
  a.last_byte = Clock::now();
  const bool success = a.any_status || (a.response.status >= 200 && a.response.status < 300);
  if (a.on_data && success) {
    a.delivered += n;
    try {
      show_headers(a);
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
  if (success && a.response.body.size() + n > kMaxBody) {
    a.callback_error = std::make_exception_ptr(ProviderError(
        ErrorCode::protocol, "the response body is over " + std::to_string(kMaxBody >> 20) + " MiB; not read further"));
    return 0;  // aborts the transfer
  }
  a.response.body.append(data, n);
  return n;
}

// The scheme and authority of a URL: never the path or query, which may carry a key.
std::string origin_of(const std::string& url) {
  std::string shown = url_for_messages(url);
  const auto authority = shown.find("://");
  if (authority != std::string::npos) shown.erase(std::min(shown.find('/', authority + 3), shown.size()));
  return shown;
}

// The idle slots a Transport and its requests in flight share.
struct Pool {
  std::mutex mutex;  // guards idle
  std::vector<Slot> idle;

  ~Pool() {
    for (auto& slot : idle) destroy(slot);
  }

  Slot take() {
    {
      std::lock_guard lock(mutex);
      if (!idle.empty()) {
        Slot slot = std::move(idle.back());
        idle.pop_back();
        return slot;
      }
    }
    Slot slot;
    slot.multi = curl_multi_init();
    slot.easy = curl_easy_init();
    if (!slot.multi || !slot.easy) {
      if (slot.easy) curl_easy_cleanup(slot.easy);
      if (slot.multi) curl_multi_cleanup(slot.multi);
      throw ProviderError(ErrorCode::unavailable, "libcurl could not create a handle");
    }
    return slot;
  }

  void give(Slot slot) {
    // Drops the pointers into the finished request (its error buffer, its
    // attempt, its body); keeps the connection and the shared options.
    curl_easy_setopt(slot.easy, CURLOPT_ERRORBUFFER, nullptr);
    curl_easy_setopt(slot.easy, CURLOPT_HEADERDATA, nullptr);
    curl_easy_setopt(slot.easy, CURLOPT_WRITEDATA, nullptr);
    curl_easy_setopt(slot.easy, CURLOPT_POSTFIELDS, nullptr);
    std::lock_guard lock(mutex);
    if (idle.size() < kMaxPooled) {
      idle.push_back(std::move(slot));
      return;
    }
    destroy(slot);
  }

};

}  // namespace

struct Transport::Impl : Pool {};

struct AsyncRequest::State {
  State(std::shared_ptr<Pool> pool, const TransportOptions& options, HttpRequest request,
        std::function<bool(std::string_view)> on_data, const CancellationToken* cancel,
        Transport::HeadersCallback on_headers = nullptr)
      : pool_(std::move(pool)),
        options_(options),
        request_(std::move(request)),
        on_data_(std::move(on_data)),
        on_headers_(std::move(on_headers)),
        secrets_(detail::secrets_of(request_.headers)) {
    if (cancel) token_ = *cancel;
    for (const auto& [name, value] : request_.headers) {
      if (name.find_first_of("\r\n") != std::string::npos || value.find_first_of("\r\n") != std::string::npos) {
        throw ProviderError(ErrorCode::invalid_argument, "request header '" + name.substr(0, name.find_first_of("\r\n")) +
                                                    "' contains a line break");
      }
    }
  }

  ~State() { release(); }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  bool poll() {
    if (phase_ == Phase::done) return true;
    if (cancel_requested_.load(std::memory_order_acquire) || (token_ && token_->cancelled())) {
      release();  // removing an unfinished transfer aborts it and closes its connection
      fail(ProviderError(ErrorCode::cancelled, "request cancelled"));
      return true;
    }
    if (phase_ == Phase::backoff) {
      if (Clock::now() < retry_at_) return false;
      phase_ = Phase::ready;
    }
    if (phase_ == Phase::ready) {
      try {
        begin_attempt();
      } catch (...) {
        release();
        error_ = std::current_exception();
        phase_ = Phase::done;
        return true;
      }
    }
    int running = 0;
    CURLcode result = CURLE_OK;
    bool finished = false;
    const bool multi_ok = curl_multi_perform(slot_.multi, &running) == CURLM_OK;
    if (multi_ok) {
      int queued = 0;
      while (CURLMsg* msg = curl_multi_info_read(slot_.multi, &queued)) {
        if (msg->msg == CURLMSG_DONE && msg->easy_handle == slot_.easy) {
          result = msg->data.result;
          finished = true;
        }
      }
    }
    if (!multi_ok || finished || running == 0) {
      end_attempt(finished, result, false);
    } else if (const auto now = Clock::now();
               options_.idle_timeout.count() > 0 && now - attempt_.last_byte >= options_.idle_timeout &&
               !(options_.total_timeout.count() > 0 && now - started_ >= options_.total_timeout)) {
      // Idle, and not past the total timeout too: once both have passed (an
      // idle limit as long as the total one), curl reports the total one.
      end_attempt(false, CURLE_OK, true);
    }
    return phase_ == Phase::done;
  }

  void wait(milliseconds max) {
    const milliseconds limit = std::min(max, kTick);
    if (limit.count() <= 0) return;
    switch (phase_) {
      case Phase::running:
        curl_multi_poll(slot_.multi, nullptr, 0, static_cast<int>(limit.count()), nullptr);
        return;
      case Phase::backoff: {
        const auto now = Clock::now();
        if (retry_at_ <= now) return;
        const auto pause = std::min<Clock::duration>(retry_at_ - now, limit);
        if (token_) {
          token_->sleep_for(pause);  // a cancellation ends the wait at once
        } else {
          std::this_thread::sleep_for(pause);
        }
        return;
      }
      case Phase::ready:
      case Phase::done:
        return;
    }
  }

  void cancel() noexcept { cancel_requested_.store(true, std::memory_order_release); }
  bool done() const noexcept { return phase_ == Phase::done; }

  HttpResponse take() {
    if (phase_ != Phase::done) throw std::logic_error("AsyncRequest::take() before poll() returned true");
    if (error_) std::rethrow_exception(error_);
    return std::move(response_);
  }

 private:
  enum class Phase { ready, running, backoff, done };

  void begin_attempt() {
    slot_ = pool_->take();
    has_slot_ = true;
    attempt_ = Attempt{};
    attempt_.on_data = on_data_ ? &on_data_ : nullptr;
    attempt_.on_headers = &on_headers_;
    attempt_.any_status = request_.any_status;
    error_buffer_[0] = '\0';
    configure(slot_);
    curl_multi_add_handle(slot_.multi, slot_.easy);
    started_ = Clock::now();
    attempt_.last_byte = started_;
    phase_ = Phase::running;
  }

  // Detaches the transfer (aborting it if unfinished) and returns the slot.
  void release() noexcept {
    if (!has_slot_) return;
    has_slot_ = false;
    curl_multi_remove_handle(slot_.multi, slot_.easy);
    pool_->give(std::move(slot_));
  }

  void fail(const ProviderError& error) {
    error_ = std::make_exception_ptr(error);
    phase_ = Phase::done;
  }

  // Classifies the attempt just over, then finishes the request or schedules the next attempt.
  void end_attempt(bool finished, CURLcode result, bool idle) {
    curl_multi_remove_handle(slot_.multi, slot_.easy);
    long status = 0;
    curl_easy_getinfo(slot_.easy, CURLINFO_RESPONSE_CODE, &status);
    const std::string detail = error_buffer_[0] ? error_buffer_ : curl_easy_strerror(result);
    has_slot_ = false;
    pool_->give(std::move(slot_));

    Attempt& a = attempt_;
    if (a.callback_error) {
      error_ = a.callback_error;
      phase_ = Phase::done;
      return;
    }
    const std::string where = " (" + request_.method + " " + origin_of(request_.url) + ")";
    std::optional<ProviderError> error;
    bool retry = false;
    std::optional<milliseconds> after;
    if (idle) {
      error.emplace(ErrorCode::timeout,
                    "no data received for " + std::to_string(options_.idle_timeout.count()) + " ms" +
                        (a.delivered ? " mid-stream" : "") + where,
                    0, true);
    } else if (!finished) {
      error.emplace(ErrorCode::unavailable, "libcurl multi interface failed" + where);
    } else if (result == CURLE_OK || (a.stopped_by_caller && result == CURLE_WRITE_ERROR)) {
      if (status > 0) a.response.status = static_cast<int>(status);
      if (a.stopped_by_caller || request_.any_status || (a.response.status >= 200 && a.response.status < 300)) {
        try {
          show_headers(a);  // a response without a body
        } catch (...) {
          error_ = std::current_exception();
          phase_ = Phase::done;
          return;
        }
        response_ = std::move(a.response);
        phase_ = Phase::done;
        return;
      }
      ProviderError e = error_from_response(a.response);
      const RetryAdvice advice = retry_advice(a.response.status, a.response);
      retry = advice.retry && e.code() != ErrorCode::quota_exceeded;
      after = advice.after;
      error.emplace(std::move(e));
    } else if (a.delivered > 0) {
      error.emplace(ErrorCode::unavailable,
                    "stream interrupted after " + std::to_string(a.delivered) + " bytes: " + detail + where);
    } else {
      switch (result) {
        case CURLE_OPERATION_TIMEDOUT:
          // One code for both limits: a total timeout means the server got the request
          // and went slow, so only a connect timeout is worth another attempt.
          if (options_.total_timeout.count() > 0 && Clock::now() - started_ >= options_.total_timeout) {
            error.emplace(ErrorCode::timeout, "request timed out: " + detail + where, 0, true);
          } else {
            error.emplace(ErrorCode::timeout, "connect timed out: " + detail + where, 0, true);
            retry = true;
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
          error.emplace(ErrorCode::unavailable, "connection failed: " + detail + where, 0, true);
          retry = true;
          break;
        case CURLE_WEIRD_SERVER_REPLY:
        case CURLE_BAD_CONTENT_ENCODING:
          error.emplace(ErrorCode::protocol, "malformed response: " + detail + where);
          break;
        case CURLE_URL_MALFORMAT:
        case CURLE_UNSUPPORTED_PROTOCOL:
          error.emplace(ErrorCode::invalid_argument, "bad request URL: " + detail);
          break;
        default:
          error.emplace(ErrorCode::unavailable, "transfer failed: " + detail + where);
          break;
      }
    }

    // Nothing a caller has seen may be sent twice: a stream that delivered bytes is final.
    if (!retry || a.delivered > 0 || attempts_ >= options_.max_retries) {
      fail(detail::scrubbed(*error, secrets_));
      return;
    }
    milliseconds backoff;
    if (after) {
      backoff = std::min(*after, kMaxRetryAfter);
    } else {
      backoff = Backoff{.base = options_.base_backoff, .max = options_.max_backoff}.delay(attempts_ + 1);
    }
    ++attempts_;
    retry_at_ = Clock::now() + backoff;
    phase_ = Phase::backoff;
  }

  // Sets `slot` up for this attempt. A handle that last served a POST of
  // this Transport keeps every option but the ones naming this request (its
  // buffers, URL, headers and body); any other gets a reset and everything.
  void configure(Slot& slot) {
    CURL* easy = slot.easy;
    const std::string& method = request_.method;
    if (!slot.primed || method != "POST") {
      curl_easy_reset(easy);
      slot.url.clear();
      slot.headers.clear();
      curl_slist_free_all(slot.header_list);
      slot.header_list = nullptr;
      slot.primed = false;
      set_shared_options(easy);
    }
    if (slot.url != request_.url || slot.url.empty()) {
      curl_easy_setopt(easy, CURLOPT_URL, request_.url.c_str());  // libcurl copies it
      slot.url = request_.url;
    }
    if (!slot.header_list || slot.headers != request_.headers) {
      curl_slist* list = nullptr;
      std::string line;
      for (const auto& [name, value] : request_.headers) {
        line.assign(name).append(": ").append(value);
        list = curl_slist_append(list, line.c_str());
      }
      list = curl_slist_append(list, "Expect:");  // no 100-continue round trip for large bodies
      curl_easy_setopt(easy, CURLOPT_HTTPHEADER, list);
      curl_slist_free_all(slot.header_list);
      slot.header_list = list;
      slot.headers = request_.headers;
    }
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error_buffer_);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, &attempt_);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &attempt_);
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
    slot.primed = method == "POST";
  }

  // The options every request of a Transport shares.
  void set_shared_options(CURL* easy) {
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.total_timeout.count()));
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, options_.verify_tls ? 1L : 0L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, options_.verify_tls ? 2L : 0L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_USERAGENT, "agentkit/0.1");
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &on_header);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &on_body);
  }

  std::shared_ptr<Pool> pool_;
  TransportOptions options_;
  HttpRequest request_;
  std::function<bool(std::string_view)> on_data_;
  Transport::HeadersCallback on_headers_;
  Redactor secrets_;
  std::optional<CancellationToken> token_;
  std::atomic<bool> cancel_requested_{false};

  Phase phase_ = Phase::ready;
  int attempts_ = 0;  // retries scheduled so far
  Clock::time_point retry_at_{};
  Slot slot_;
  bool has_slot_ = false;
  Attempt attempt_;
  Clock::time_point started_{};
  char error_buffer_[CURL_ERROR_SIZE] = {0};
  HttpResponse response_;
  std::exception_ptr error_;
};

AsyncRequest::AsyncRequest(std::unique_ptr<State> state) : state_(std::move(state)) {}
AsyncRequest::~AsyncRequest() = default;
AsyncRequest::AsyncRequest(AsyncRequest&&) noexcept = default;
AsyncRequest& AsyncRequest::operator=(AsyncRequest&&) noexcept = default;

bool AsyncRequest::poll() { return !state_ || state_->poll(); }
void AsyncRequest::wait(std::chrono::milliseconds max) {
  if (state_) state_->wait(max);
}
void AsyncRequest::cancel() noexcept {
  if (state_) state_->cancel();
}
bool AsyncRequest::done() const noexcept { return !state_ || state_->done(); }
HttpResponse AsyncRequest::take() {
  if (!state_) throw std::logic_error("AsyncRequest::take() on a moved-from request");
  return state_->take();
}

Transport::Transport(TransportOptions options) : options_(options), impl_(std::make_shared<Impl>()) { global_init(); }

Transport::~Transport() = default;

AsyncRequest Transport::start(HttpRequest request, const CancellationToken* cancel) {
  return AsyncRequest(std::make_unique<AsyncRequest::State>(impl_, options_, std::move(request), nullptr, cancel));
}

AsyncRequest Transport::start_stream(HttpRequest request, std::function<bool(std::string_view)> on_data,
                                     const CancellationToken* cancel, HeadersCallback on_headers) {
  return AsyncRequest(std::make_unique<AsyncRequest::State>(impl_, options_, std::move(request), std::move(on_data),
                                                            cancel, std::move(on_headers)));
}


namespace {

// The blocking calls: one request driven to the end on this thread.
HttpResponse run_to_end(AsyncRequest request) {
  while (!request.poll()) request.wait(kTick);
  return request.take();
}

}  // namespace

HttpResponse Transport::send(const HttpRequest& request, const CancellationToken* cancel) {
  return run_to_end(start(request, cancel));
}

void Transport::stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_data,
                       const CancellationToken* cancel) {
  run_to_end(start_stream(request, on_data, cancel));
}

}  // namespace agentkit::providers
