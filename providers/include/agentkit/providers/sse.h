#pragma once
// Incremental decoders for streamed HTTP bodies: Server-Sent Events and
// newline-delimited JSON. Bytes go in as they arrive, in any chunking;
// complete events come out. No allocation per byte, no recursion.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace agentkit::providers {

// One dispatched SSE event (https://html.spec.whatwg.org/multipage/server-sent-events.html).
struct SseEvent {
  std::string event;  // the `event:` field; empty means "message"
  std::string data;   // `data:` lines joined with "\n"
  std::string id;     // the last `id:` seen (sticky across events, per spec)
  std::optional<long> retry;
};

// SSE framing: LF, CRLF or lone CR line ends (a CR and its LF may arrive in
// different chunks); `:` comment lines; one optional space after the colon;
// several `data:` lines joined with "\n"; events without data (`event: ping`)
// are dispatched too; unknown fields ignored. Bytes are split on line ends
// only, never decoded, so UTF-8 split across chunks (and U+2028) survives.
//
// Example:
//   SseDecoder decoder;
//   decoder.feed(chunk, [&](const SseEvent& e) { handle(e); });
//   decoder.finish([&](const SseEvent& e) { handle(e); });  // at end of body
class SseDecoder {
 public:
  using Sink = std::function<void(const SseEvent&)>;

  explicit SseDecoder(std::size_t max_event_bytes = 16u << 20) : max_event_bytes_(max_event_bytes) {}

  // Feeds the next bytes of the body; calls `sink` for each complete event.
  // Throws std::length_error when one event grows past max_event_bytes.
  void feed(std::string_view bytes, const Sink& sink);
  // End of body: a final event that lacks its closing blank line is still
  // dispatched (several providers end streams that way).
  void finish(const Sink& sink);

 private:
  void line(std::string_view text, const Sink& sink);
  void dispatch(const Sink& sink);

  std::size_t max_event_bytes_;
  std::string partial_;  // an unterminated line
  bool last_was_cr_ = false;
  bool has_fields_ = false;  // a field line was seen since the last dispatch
  bool has_data_ = false;
  SseEvent current_;
  std::string last_id_;
};

// NDJSON framing (Ollama): one JSON document per line; LF or CRLF; blank
// lines skipped; a final line without a newline is delivered by finish().
class NdjsonDecoder {
 public:
  using Sink = std::function<void(std::string_view line)>;

  explicit NdjsonDecoder(std::size_t max_line_bytes = 16u << 20) : max_line_bytes_(max_line_bytes) {}
  void feed(std::string_view bytes, const Sink& sink);
  void finish(const Sink& sink);

 private:
  std::size_t max_line_bytes_;
  std::string partial_;
};

}  // namespace agentkit::providers
