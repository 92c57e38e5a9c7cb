#pragma once
// A model call over one AsyncRequest, shared by the adapters: streamed (SSE
// fed to an accumulator inside poll()) or whole (parsed in take()). complete()
// is begin() driven to the end, so both paths run the same code.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <agentkit/context.h>
#include <agentkit/model.h>
#include <agentkit/providers/sse.h>
#include <agentkit/providers/transport.h>

namespace agentkit::providers::detail {

using TextSink = std::function<void(std::string_view)>;

// Emits each streamed text fragment as a TextDelta event of the run (queued
// for the driving thread, or handed to the observer).
inline TextSink text_deltas(const RunContext& ctx) {
  return [ctx](std::string_view text) { ctx.emit(TextDelta{std::string(text)}); };
}

// Decodes an SSE body into `Accumulator` as it arrives; `on_text` receives
// the text fragments the accumulator decodes.
template <class Accumulator>
class StreamedCompletion final : public PendingCompletion {
 public:
  StreamedCompletion(Transport& transport, HttpRequest http, const CancellationToken& cancel, TextSink on_text = {})
      : decoded_(std::make_unique<Decoded>(std::move(on_text))),
        // Reads to the end even after the final event, so the connection
        // stays reusable (an aborted transfer closes it).
        request_(transport.start_stream(
            std::move(http),
            [d = decoded_.get()](std::string_view bytes) {
              d->decoder.feed(bytes, d->sink);
              return true;
            },
            &cancel)) {}

  bool poll() override { return request_.poll(); }
  void wait(std::chrono::milliseconds max) override { request_.wait(max); }
  void cancel() override { request_.cancel(); }
  ModelResponse take() override {
    request_.take();  // throws the transport's error, or one the accumulator raised mid-stream
    decoded_->decoder.finish(decoded_->sink);
    return decoded_->accumulator.finish();
  }

 private:
  struct Decoded {
    explicit Decoded(TextSink on_text) : accumulator(std::move(on_text)) {}
    Accumulator accumulator;
    SseDecoder decoder;
    SseDecoder::Sink sink = [this](const SseEvent& e) { accumulator.on_event(e); };
  };
  std::unique_ptr<Decoded> decoded_;  // before request_: the request's callback points into it
  AsyncRequest request_;
};

// Reads the whole body, then `parse`s it.
class WholeCompletion final : public PendingCompletion {
 public:
  using Parse = std::function<ModelResponse(const HttpResponse&)>;
  WholeCompletion(Transport& transport, HttpRequest http, const CancellationToken& cancel, Parse parse)
      : parse_(std::move(parse)), request_(transport.start(std::move(http), &cancel)) {}

  bool poll() override { return request_.poll(); }
  void wait(std::chrono::milliseconds max) override { request_.wait(max); }
  void cancel() override { request_.cancel(); }
  ModelResponse take() override { return parse_(request_.take()); }

 private:
  Parse parse_;
  AsyncRequest request_;
};

// A whole response body as JSON; `provider` names the adapter in the error.
inline Json parse_body(std::string_view provider, const HttpResponse& response) {
  try {
    return Json::parse(response.body);
  } catch (const Json::exception&) {
    throw ProviderError(ErrorCode::protocol, std::string(provider) + " response body is not JSON", response.status);
  }
}

// A blocking call: `pending` driven to the end on this thread.
inline ModelResponse complete_now(PendingCompletion& pending) {
  while (!pending.poll()) pending.wait(std::chrono::milliseconds(10));
  return pending.take();
}

}  // namespace agentkit::providers::detail
