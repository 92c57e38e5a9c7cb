// SseDecoder: any bytes, in any chunking, decode to the same events (or the
// same length_error) as the whole body fed at once; no crash, no UB.
//
// Input: one byte picks the event size limit, one seeds the chunk sizes, the
// rest is the body.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <agentkit/providers/sse.h>

#include "fuzz_support.h"

namespace {

using agentkit::providers::SseDecoder;
using agentkit::providers::SseEvent;

struct Decoded {
  std::vector<std::string> events;  // each event rendered field by field
  bool too_big = false;
};

std::string render(const SseEvent& e) {
  std::string out = e.event + '\0' + e.data + '\0' + e.id + '\0';
  if (e.retry) out += std::to_string(*e.retry);
  return out;
}

Decoded decode(std::string_view body, std::size_t limit, const std::vector<std::size_t>& cuts) {
  Decoded out;
  SseDecoder decoder(limit);
  const SseDecoder::Sink sink = [&](const SseEvent& e) {
    out.events.push_back(render(e));
  };
  try {
    agentkit::fuzz::feed_in_chunks(body, cuts, [&](std::string_view chunk) { decoder.feed(chunk, sink); });
    decoder.finish(sink);
  } catch (const std::length_error&) {
    out.too_big = true;
  } catch (const std::exception& e) {
    agentkit::fuzz::untyped(e);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t limit = data[0] < 128 ? 16u << 20 : 1 + (data[0] & 63);
  const std::string_view body = agentkit::fuzz::as_text(data + 2, size - 2);
  const std::vector<std::size_t> cuts = agentkit::fuzz::chunk_cuts(data[1], body.size(), 7);
  const Decoded whole = decode(body, limit, {});
  const Decoded chunked = decode(body, limit, cuts);
  AGENTKIT_FUZZ_CHECK(whole.too_big == chunked.too_big);
  AGENTKIT_FUZZ_CHECK(whole.events == chunked.events);
  return 0;
}
