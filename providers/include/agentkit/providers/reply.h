#pragma once
// Reading a model's reply off the wire, the same way for every adapter. An
// adapter supplies what is its own (a StreamAccumulator for its events, a
// parser for its whole JSON body, the name of its terminal event); the
// ReplyReader decides what the reply is and refuses one that is not what it
// claims:
//
// - a stream that ends before its terminal event (a clean close with no
//   length framing, at or between events) is ProviderError(truncated),
//   carrying the usage received so far (as does an error event mid-stream);
// - a 2xx body that is a JSON error object is the typed error it describes
//   (retryable when its type or x-should-retry says so);
// - a complete JSON completion answering a streaming request is accepted as
//   that completion;
// - anything else (an HTML proxy page, an event stream answering a
//   non-streaming request) is ProviderError(protocol) naming the URL and the
//   content type;
// - a stream whose text, reasoning and tool-call argument fragments together
//   pass kMaxStreamedReplyBytes is ProviderError(protocol), so a hostile
//   stream of endless tiny fragments cannot grow memory without bound;
// - bodies and stream events are parsed under JsonLimits, and JSON of the
//   wrong shape or range is ProviderError(protocol), never a raw nlohmann
//   exception.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include <agentkit/events.h>
#include <agentkit/json.h>
#include <agentkit/model.h>
#include <agentkit/providers/sse.h>
#include <agentkit/providers/transport.h>

namespace agentkit::providers {

// One fragment of a streamed reply, as an accumulator decodes it: text,
// a tool call's arguments, or reasoning (see <agentkit/events.h>).
using StreamDelta = std::variant<TextDelta, ToolCallDelta, ReasoningDelta>;

// Receives a streamed reply's deltas in stream order, on the thread feeding
// the ReplyReader, as each event is decoded (before the reply is judged
// complete: deltas are provisional). The adapters' models pass one that
// emits each delta as an event of the run. It must not throw.
using DeltaSink = std::function<void(StreamDelta)>;

// The most bytes of text, reasoning and tool-call arguments one streamed
// reply may carry in total: 16 MiB, far past any model's output limit.
inline constexpr std::size_t kMaxStreamedReplyBytes = 16u << 20;

// One adapter's decoder for the SSE events of one streamed reply.
class StreamAccumulator {
 public:
  virtual ~StreamAccumulator() = default;
  // One event, in order. Throws ProviderError for an error event or a
  // malformed one. Events after the terminal one are ignored.
  virtual void on_event(const SseEvent& event) = 0;
  // True once the stream's terminal event arrived: only then is the reply
  // complete.
  virtual bool done() const noexcept = 0;
  // The response assembled so far (for a stream cut short, its usage is
  // what the provider reported before the cut).
  virtual ModelResponse finish() = 0;
};

// How a stream's events are framed: Server-Sent Events (text/event-stream),
// or one JSON document per line (application/x-ndjson, Ollama), each line
// reaching the accumulator as an SseEvent whose `data` is the line.
enum class Framing { sse, ndjson };

// What a ReplyReader needs to know about one adapter's wire format.
struct ReplyFormat {
  std::string_view provider;        // names the adapter in messages: "OpenAI"
  std::string_view terminal_event;  // what ends a complete stream, as messages name it: "data: [DONE]"
  ModelResponse (*parse_body)(const Json& body) = nullptr;  // a whole JSON reply; throws ProviderError
  Framing framing = Framing::sse;
};

// Reads one 2xx reply: its status and headers, then its body bytes in any
// chunking, then the verdict: a complete ModelResponse, or a ProviderError
// (see the top of this header). Both the streamed and the whole-body paths
// of every adapter go through it. One thread at a time.
//
// Example (also the entry point for fuzzing an adapter's parsers):
//   ReplyReader reader(openai_chat_reply(), "https://api.openai.com/v1/chat/completions",
//                      std::make_unique<OpenAIStreamAccumulator>());
//   reader.on_headers(head);   // status and content type
//   reader.feed(bytes);        // as often as bytes arrive
//   ModelResponse response = reader.finish();
class ReplyReader {
 public:
  // `stream`: the accumulator of a streaming request; null for a
  // non-streaming one, whose reply must be JSON. `url` is named in errors
  // (without its query). `limits` bound a whole body (size, depth, strings)
  // and the size of one event; the adapters' accumulators parse each event
  // under the default JsonLimits.
  ReplyReader(const ReplyFormat& format, std::string_view url, std::unique_ptr<StreamAccumulator> stream = nullptr,
              JsonLimits limits = {});

  // The reply's status and headers; its content type decides how the body is
  // read (an absent one: by the body's first byte, except that a streaming
  // request of an NDJSON format is read as lines).
  void on_headers(const HttpResponse& head);
  // The next body bytes. May throw ProviderError before the end (an error
  // event, an event stream answering a non-streaming request, a body past the
  // size limit).
  void feed(std::string_view bytes);
  // At the end of the body: the response, or throws ProviderError.
  ModelResponse finish();

 private:
  enum class Mode { unknown, events, whole };

  void start(Mode mode);
  [[noreturn]] void fail(const ProviderError& error) const;
  ModelResponse finish_events();
  ModelResponse finish_whole();
  std::string content_type_shown() const;

  const ReplyFormat& format_;
  std::string url_;
  std::unique_ptr<StreamAccumulator> stream_;
  JsonLimits limits_;
  HttpResponse head_;
  std::string media_type_;  // lower-case, without parameters
  Mode mode_ = Mode::unknown;
  std::string body_;  // a whole body, or bytes held back until the mode is known
  SseDecoder decoder_;
  SseDecoder::Sink sink_;
  NdjsonDecoder lines_;
  NdjsonDecoder::Sink line_sink_;
  std::size_t events_ = 0;
};

// Parses provider JSON (a body or one stream event's data) under `limits`.
// Throws ProviderError(protocol) naming `what` for text past a limit or text
// that is not JSON.
Json parse_provider_json(std::string_view text, std::string_view what, const JsonLimits& limits = {});

}  // namespace agentkit::providers
