#pragma once
// The shared half of the provider targets: bytes go through the adapter's
// real decoding path, as the transport hands them over, and must end in
// either a typed ProviderError or a response the run loop can use.
//
// Input: byte 0 even = a streamed reply (the bytes fed to the adapter's
// ReplyReader with its accumulator, in chunks seeded by byte 1, then compared
// with the same bytes fed at once); odd = a whole body answering a
// non-streaming request. Bits 1-2 of byte 0 pick the content type the reply
// claims (the right one, JSON, HTML, none), so a mislabelled reply is fuzzed
// too. The rest is the reply.
//
// A complete response from a stream is only possible when the adapter's
// terminal event is in the bytes: a reply cut before it must be an error.
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <agentkit/messages.h>
#include <agentkit/model.h>
#include <agentkit/providers/sse.h>
#include <agentkit/providers/transport.h>

#include <agentkit/providers/reply.h>
#include "fuzz_support.h"

namespace agentkit::fuzz {

// A response the loop can take: an assistant message, a normalised finish
// reason, and a history entry that serialises and reads back unchanged.
inline void check_response(const ModelResponse& r) {
  static const std::set<std::string> reasons = {"stop", "tool_calls", "length", "content_filter", "error"};
  AGENTKIT_FUZZ_CHECK(r.message.role == Role::assistant);
  AGENTKIT_FUZZ_CHECK(reasons.count(r.finish_reason) == 1);
  for (const auto& call : r.message.tool_calls) {
    AGENTKIT_FUZZ_CHECK(call.arguments.is_object());
  }
  const Json entry = to_json(r.message);
  const std::string text = entry.dump();
  AGENTKIT_FUZZ_CHECK(message_from_json(Json::parse(text)) == r.message);
}

inline const char* content_type(std::uint8_t selector, bool streaming, const providers::ReplyFormat& format) {
  switch ((selector >> 1) % 4) {
    case 0:
      if (!streaming) return "application/json";
      return format.framing == providers::Framing::ndjson ? "application/x-ndjson" : "text/event-stream";
    case 1:
      return "application/json";
    case 2:
      return "text/html; charset=utf-8";
    default:
      return nullptr;
  }
}

struct Outcome {
  std::optional<ModelResponse> response;
  std::optional<providers::ErrorCode> error;
  std::string text;  // the TextDeltas received, in order
};

template <class Accumulator>
Outcome read_reply(const providers::ReplyFormat& format, std::string_view body, const char* type, bool streaming,
                   const std::vector<std::size_t>& cuts) {
  Outcome out;
  std::unique_ptr<providers::StreamAccumulator> accumulator;
  if (streaming) {
    accumulator = std::make_unique<Accumulator>([&](providers::StreamDelta d) {
      if (const auto* t = std::get_if<TextDelta>(&d)) out.text.append(t->text);
    });
  }
  providers::ReplyReader reader(format, "http://fuzz.invalid/v1", std::move(accumulator));
  providers::HttpResponse head;
  head.status = 200;
  if (type) head.headers = {{"content-type", type}};
  try {
    reader.on_headers(head);
    feed_in_chunks(body, cuts, [&](std::string_view chunk) { reader.feed(chunk); });
    out.response = reader.finish();
  } catch (const providers::ProviderError& e) {
    out.error = e.code();
  } catch (const std::exception& e) {
    untyped(e);
  }
  return out;
}

template <class Accumulator>
void fuzz_reply(const providers::ReplyFormat& format, const std::uint8_t* data, std::size_t size,
                bool text_is_content) {
  if (size < 2) return;
  const bool streaming = data[0] % 2 == 0;
  const char* type = content_type(data[0], streaming, format);
  const std::string_view body = as_text(data + 2, size - 2);
  const std::vector<std::size_t> cuts = chunk_cuts(data[1], body.size(), 13);
  const Outcome whole = read_reply<Accumulator>(format, body, type, streaming, {});
  const Outcome chunked = read_reply<Accumulator>(format, body, type, streaming, cuts);
  AGENTKIT_FUZZ_CHECK(whole.response.has_value() != whole.error.has_value());
  AGENTKIT_FUZZ_CHECK(whole.error == chunked.error);
  AGENTKIT_FUZZ_CHECK(whole.response.has_value() == chunked.response.has_value());
  if (!whole.response) return;
  check_response(*whole.response);
  AGENTKIT_FUZZ_CHECK(whole.response->message == chunked.response->message);
  AGENTKIT_FUZZ_CHECK(whole.response->usage == chunked.response->usage);
  AGENTKIT_FUZZ_CHECK(whole.response->finish_reason == chunked.response->finish_reason);
  AGENTKIT_FUZZ_CHECK(whole.text == chunked.text);
  // Streamed text came from events; a JSON completion answering the request
  // streams none. Either way nothing is accepted without its terminal event.
  if (!whole.text.empty()) {
    const char* terminal = format.framing == providers::Framing::ndjson ? "\"done\""
                           : format.terminal_event == "data: [DONE]"      ? "[DONE]"
                           : format.terminal_event.starts_with("response.") ? "complete"  // Responses: *.completed / *.incomplete
                           : format.terminal_event.ends_with("finishReason") ? "finishReason"  // Gemini
                                                                          : "message_stop";
    AGENTKIT_FUZZ_CHECK(body.find(terminal) != std::string_view::npos);
    if (text_is_content) AGENTKIT_FUZZ_CHECK(whole.text == whole.response->message.text());
  }
}

}  // namespace agentkit::fuzz
