#pragma once
// The shared half of the provider targets: bytes go through the adapter's
// real decoding path, as the transport hands them over, and must end in
// either a typed ProviderError or a response the run loop can use.
//
// Input: byte 0 even = a streamed reply (SSE bytes fed to SseDecoder and the
// adapter's accumulator, in chunks seeded by byte 1, then compared with the
// same bytes fed at once); odd = a whole JSON body (parse_body and the
// adapter's body parser). The rest is the reply.
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

#include "../../providers/src/pending_call.h"
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

struct Outcome {
  std::optional<ModelResponse> response;
  std::optional<providers::ErrorCode> error;
  std::string text;  // what on_text received, in order
};

template <class Accumulator>
Outcome run_stream(std::string_view body, const std::vector<std::size_t>& cuts) {
  Outcome out;
  Accumulator accumulator([&](std::string_view t) { out.text.append(t); });
  providers::SseDecoder decoder;
  const providers::SseDecoder::Sink sink = [&](const providers::SseEvent& e) { accumulator.on_event(e); };
  try {
    // As detail::StreamedCompletion does: every chunk to the decoder, then
    // finish() on both at the end of the body.
    std::size_t at = 0;
    for (const std::size_t cut : cuts) {
      decoder.feed(body.substr(at, cut - at), sink);
      at = cut;
    }
    decoder.feed(body.substr(at), sink);
    decoder.finish(sink);
    out.response = accumulator.finish();
  } catch (const providers::ProviderError& e) {
    out.error = e.code();
  } catch (const std::exception& e) {
    untyped(e);
  }
  return out;
}

template <class Accumulator>
void fuzz_stream(std::string_view body, std::uint32_t seed, bool text_is_content) {
  std::vector<std::size_t> cuts;
  for (std::size_t at = 0; seed != 0;) {
    seed = seed * 1103515245u + 12345u;
    at += 1 + (seed >> 16) % 13;
    if (at >= body.size()) break;
    cuts.push_back(at);
  }
  const Outcome whole = run_stream<Accumulator>(body, {});
  const Outcome chunked = run_stream<Accumulator>(body, cuts);
  AGENTKIT_FUZZ_CHECK(whole.response.has_value() != whole.error.has_value());
  AGENTKIT_FUZZ_CHECK(whole.error == chunked.error);
  AGENTKIT_FUZZ_CHECK(whole.text == chunked.text);
  if (!whole.response) return;
  check_response(*whole.response);
  AGENTKIT_FUZZ_CHECK(whole.response->message == chunked.response->message);
  AGENTKIT_FUZZ_CHECK(whole.response->usage == chunked.response->usage);
  AGENTKIT_FUZZ_CHECK(whole.response->finish_reason == chunked.response->finish_reason);
  if (text_is_content) AGENTKIT_FUZZ_CHECK(whole.text == whole.response->message.content);
}

inline void fuzz_body(std::string_view provider, std::string_view body,
                      const std::function<ModelResponse(const Json&)>& parse) {
  providers::HttpResponse response;
  response.status = 200;
  response.headers = {{"content-type", "application/json"}};
  response.body = std::string(body);
  try {
    check_response(parse(providers::detail::parse_body(provider, response)));
  } catch (const providers::ProviderError&) {
  } catch (const std::exception& e) {
    untyped(e);
  }
}

}  // namespace agentkit::fuzz
