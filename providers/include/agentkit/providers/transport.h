#pragma once
// The one HTTP transport every provider adapter uses (libcurl underneath;
// this header does not include curl). It owns connection reuse, timeouts,
// retries with backoff and Retry-After, streaming and cancellation. Adapters
// only translate payloads.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <agentkit/context.h>
#include <agentkit/model.h>
#include <agentkit/url.h>

namespace agentkit::providers {

// Every provider failure maps onto the core vocabulary (<agentkit/error.h>):
// timeout (connect / total / idle), unavailable (5xx, connection refused or
// reset, DNS), overloaded (529 or an "overloaded" body), rate_limited (a
// 429 a retry may fix), quota_exceeded (429 insufficient_quota),
// invalid_argument (400, 404, 409, 413, 422), unauthenticated (401),
// permission_denied (403), cancelled, protocol (a malformed body or stream,
// or a reply of the wrong kind), truncated (a stream that ended before its
// terminal event).
using agentkit::ErrorCode;
using agentkit::to_string;

// A typed provider failure: a ModelError (so an agentkit::Error) with the
// provider's HTTP status, retry advice and Retry-After (see ModelError).
// The message never contains API keys or auth headers. `usage` is what the
// provider reported before failing (a stream cut short has spent tokens);
// the run engine charges it.
class ProviderError : public ModelError {
 public:
  ProviderError(ErrorCode code, std::string message, int http_status = 0, bool retryable = false,
                std::optional<std::chrono::milliseconds> retry_after = std::nullopt, Usage usage = {})
      : ModelError(code, message, usage, http_status, retryable, retry_after) {}
  // The same error (code, status, retry advice, usage) with another message.
  ProviderError with_message(std::string message) const {
    return ProviderError(code(), std::move(message), http_status(), retryable(), retry_after(), usage());
  }
};

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method = "POST";
  std::string url;
  Headers headers;  // values of authorization / x-api-key / api-key are never logged or put in errors
  std::string body;
  // Every status is a response: a non-2xx one is returned (body and headers
  // whole, streamed to on_data for a stream) instead of thrown, and is never
  // retried. Connection failures and timeouts still throw. For callers that
  // interpret statuses themselves (REST tools, MCP).
  bool any_status = false;
};

struct HttpResponse {
  int status = 0;
  Headers headers;  // names lower-cased
  std::string body;
  // The first header called `name` (lower-case), if any.
  std::optional<std::string_view> header(std::string_view name) const;
};

struct TransportOptions {
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds total_timeout{600'000};
  // Fails a request when no byte arrives for this long (streams included).
  std::chrono::milliseconds idle_timeout{120'000};
  int max_retries = 2;  // retries after the first attempt
  std::chrono::milliseconds base_backoff{500};
  std::chrono::milliseconds max_backoff{8'000};
  bool verify_tls = true;  // never turned off by agentkit itself
};

// Whether a status/body should be retried, and after how long, following the
// official SDKs: `x-should-retry` overrides; then `retry-after-ms`, then
// `retry-after` (seconds, or an HTTP date in any of the three forms HTTP
// allows, read by libcurl's curl_getdate; a past date means now, garbage is
// ignored, anything beyond 24 hours reads as 24 hours); 408, 409, 429, 5xx
// retry. The transport and the REST tool cap the wait further.
struct RetryAdvice {
  bool retry = false;
  std::optional<std::chrono::milliseconds> after;
};
RetryAdvice retry_advice(int status, const HttpResponse& response);

// Maps a non-2xx response to a typed error (code from status and the
// provider's error body: OpenAI {"error":{...}}, Anthropic {"type":"error",...}).
ProviderError error_from_response(const HttpResponse& response);

// `url` as error messages may show it: scheme, host, port and path; never
// user info, the query or the fragment (which may carry a key). The one
// implementation, over libcurl's URL API, is in <agentkit/url.h>.
using agentkit::url_for_messages;

// One request in flight, advanced by its owner without blocking: the state
// machine behind every Transport call (the blocking calls loop over it).
// Retries happen only before the first body byte of a 2xx response was
// delivered; their backoff (Retry-After included) is a deadline poll()
// checks, never a sleep. Destroying an unfinished request aborts it (its
// connection is closed) and returns its pooled slot; it may outlive the
// Transport. One thread at a time; cancel() may come from any thread.
class AsyncRequest {
 public:
  ~AsyncRequest();
  AsyncRequest(AsyncRequest&&) noexcept;
  AsyncRequest& operator=(AsyncRequest&&) noexcept;

  // Runs libcurl once without waiting, finishes or schedules the attempt;
  // true once the request is over (response ready, failed or cancelled).
  bool poll();
  // Blocks until poll() may make progress: socket activity, the retry
  // deadline, or at most min(max, 10 ms) so cancellation is seen promptly.
  void wait(std::chrono::milliseconds max);
  // Aborts the request: the next poll() returns true and take() throws
  // ProviderError(cancelled).
  void cancel() noexcept;
  bool done() const noexcept;
  // Once done: the 2xx response (for a stream, its status and headers; the
  // body went to on_data), or throws the ProviderError (or the exception
  // on_data threw). Call once.
  HttpResponse take();

 private:
  friend class Transport;
  struct State;
  explicit AsyncRequest(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// HTTP over libcurl with keep-alive, blocking or not. Thread-safe: concurrent
// calls use separate connections from a small pool. Proxy variables
// (http_proxy, https_proxy, no_proxy) are honoured as libcurl honours them.
class Transport {
 public:
  explicit Transport(TransportOptions options = {});
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  const TransportOptions& options() const noexcept { return options_; }

  // Sends `request`, retrying retryable failures with exponential backoff and
  // jitter (honouring Retry-After). Returns 2xx responses; throws
  // ProviderError otherwise. Cancelling `cancel` aborts within 50 ms.
  HttpResponse send(const HttpRequest& request, const CancellationToken* cancel = nullptr);

  // Streams a response body. `on_data` receives body bytes as they arrive and
  // returns false to abort. `on_headers`, when given, sees the status and
  // headers once, before the first body byte (or at the end of a bodiless
  // response). Retries happen only before the first body byte of
  // a 2xx response reaches `on_data`; after that a failure throws. A non-2xx
  // status is read whole and thrown as ProviderError (after retries).
  void stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_data,
              const CancellationToken* cancel = nullptr);
  using HeadersCallback = std::function<void(const HttpResponse&)>;

  // The same calls without blocking: nothing is sent until the first poll().
  // `cancel`, when given, is shared (the token is copied, not referenced).
  // `on_data` runs inside poll().
  AsyncRequest start(HttpRequest request, const CancellationToken* cancel = nullptr);
  AsyncRequest start_stream(HttpRequest request, std::function<bool(std::string_view)> on_data,
                            const CancellationToken* cancel = nullptr, HeadersCallback on_headers = nullptr);

 private:
  struct Impl;
  TransportOptions options_;
  std::shared_ptr<Impl> impl_;  // shared with requests in flight, which return their slots to it
};

}  // namespace agentkit::providers
