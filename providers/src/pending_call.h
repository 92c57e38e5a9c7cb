#pragma once
// A model call over one AsyncRequest, shared by the adapters: streamed (the
// body fed to a ReplyReader inside poll()) or whole (read in take()), both
// judged by ReplyReader. complete() is begin() driven to the end, so both
// paths run the same code.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <agentkit/context.h>
#include <agentkit/model.h>
#include <agentkit/providers/reply.h>
#include <agentkit/providers/transport.h>

#include "scrub.h"
#include "trace_header.h"

namespace agentkit::providers::detail {

// Emits each streamed fragment (text, tool-call arguments, reasoning) as
// the matching delta event of the run (queued for the driving thread, or
// handed to the observer).
inline DeltaSink run_deltas(const RunContext& ctx) {
  return [ctx](StreamDelta delta) { std::visit([&](auto& d) { ctx.emit(std::move(d)); }, delta); };
}

// The call's credentials, kept out of the errors its reply raises: a server
// may quote a key back, in a 2xx body's error object or an error event
// mid-stream, past the transport's own scrub.
class ScrubbedErrors {
 public:
  explicit ScrubbedErrors(const Headers& headers) : secrets_(secrets_of(headers)) {}
  // take(), its ProviderError with every credential redacted.
  template <class Take>
  ModelResponse operator()(Take&& take) const {
    try {
      return take();
    } catch (const ProviderError& e) {
      throw scrubbed(e, secrets_);
    }
  }

 private:
  Redactor secrets_;
};

// A streamed call: the body goes through a ReplyReader, fed as it arrives
// (so deltas reach the run as they are decoded); `accumulator` decodes the
// adapter's events.
class StreamedCompletion final : public PendingCompletion {
 public:
  StreamedCompletion(Transport& transport, HttpRequest http, const CancellationToken& cancel, const ReplyFormat& format,
                     std::unique_ptr<StreamAccumulator> accumulator)
      : scrub_(http.headers),
        reader_(std::make_unique<ReplyReader>(format, http.url, std::move(accumulator))),
        // Reads to the end even after the final event, so the connection
        // stays reusable (an aborted transfer closes it).
        request_(transport.start_stream(
            std::move(http),
            [r = reader_.get()](std::string_view bytes) {
              r->feed(bytes);
              return true;
            },
            &cancel, [r = reader_.get()](const HttpResponse& head) { r->on_headers(head); })) {}

  bool poll() override { return request_.poll(); }
  void wait(std::chrono::milliseconds max) override { request_.wait(max); }
  void cancel() override { request_.cancel(); }
  ModelResponse take() override {
    return scrub_([&] {
      request_.take();  // throws the transport's error, or one the reader raised mid-stream
      return reader_->finish();
    });
  }

 private:
  ScrubbedErrors scrub_;
  std::unique_ptr<ReplyReader> reader_;  // before request_: the request's callbacks point into it
  AsyncRequest request_;
};

// A non-streaming call: the whole body, then the same ReplyReader.
class WholeCompletion final : public PendingCompletion {
 public:
  WholeCompletion(Transport& transport, HttpRequest http, const CancellationToken& cancel, const ReplyFormat& format)
      : format_(format), url_(http.url), scrub_(http.headers), request_(transport.start(std::move(http), &cancel)) {}

  bool poll() override { return request_.poll(); }
  void wait(std::chrono::milliseconds max) override { request_.wait(max); }
  void cancel() override { request_.cancel(); }
  ModelResponse take() override {
    return scrub_([&] {
      const HttpResponse response = request_.take();
      ReplyReader reader(format_, url_);
      reader.on_headers(response);
      reader.feed(response.body);
      return reader.finish();
    });
  }

 private:
  const ReplyFormat& format_;
  std::string url_;
  ScrubbedErrors scrub_;
  AsyncRequest request_;
};

// An adapter's call of `http`: streamed through `accumulator`, or whole
// when there is none.
inline std::unique_ptr<PendingCompletion> start_call(Transport& transport, HttpRequest http,
                                                     const CancellationToken& cancel, const ReplyFormat& format,
                                                     std::unique_ptr<StreamAccumulator> accumulator) {
  if (accumulator) {
    return std::make_unique<StreamedCompletion>(transport, std::move(http), cancel, format, std::move(accumulator));
  }
  return std::make_unique<WholeCompletion>(transport, std::move(http), cancel, format);
}

// The JSON POST of `request` to `url`: content-type, `fixed` (e.g. a
// version header), the key as `key_header: <scheme><key>` (left out when
// there is no key), the host's extra headers, then the request's
// `traceparent` when the run is traced.
inline HttpRequest json_post(const ModelRequest& request, std::string url, std::string_view key_header,
                             std::string_view scheme, const std::string& key, const Headers& extra_headers,
                             Headers fixed = {}) {
  HttpRequest http;
  http.url = std::move(url);
  http.headers = std::move(fixed);
  http.headers.reserve(http.headers.size() + 3 + extra_headers.size());
  http.headers.insert(http.headers.begin(), {"content-type", "application/json"});
  if (!key.empty()) http.headers.emplace_back(std::string(key_header), std::string(scheme) + key);
  http.headers.insert(http.headers.end(), extra_headers.begin(), extra_headers.end());
  set_traceparent(http.headers, request.traceparent);
  return http;
}

// A base URL as the adapters join paths to it: without trailing slashes.
inline std::string without_trailing_slashes(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

// A blocking call: `pending` driven to the end on this thread.
inline ModelResponse complete_now(PendingCompletion& pending) {
  while (!pending.poll()) pending.wait(std::chrono::milliseconds(10));
  return pending.take();
}

}  // namespace agentkit::providers::detail
