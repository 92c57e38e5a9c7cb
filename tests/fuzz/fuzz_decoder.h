#pragma once
// The shared half of the sse and ndjson targets: any bytes, in any chunking,
// must decode to the same items (or the same length_error) as the whole body
// fed at once.
//
// Input: one byte picks the decoder's size limit, one seeds the chunk sizes,
// the rest is the body.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_support.h"

namespace agentkit::fuzz {

// What a decoder made of a body: each item rendered as text, or that the
// body passed the decoder's limit.
struct Decoded {
  std::vector<std::string> items;
  bool too_big = false;
};

// Feeds `body` to a fresh Decoder(limit) in the chunks `cuts` makes; `render`
// turns each item the decoder's sink receives into text (and may check it).
template <class Decoder, class Render>
Decoded decode_in_chunks(std::string_view body, std::size_t limit, const std::vector<std::size_t>& cuts,
                         const Render& render) {
  Decoded out;
  Decoder decoder(limit);
  const typename Decoder::Sink sink = [&](const auto& item) { out.items.push_back(render(item)); };
  try {
    feed_in_chunks(body, cuts, [&](std::string_view chunk) { decoder.feed(chunk, sink); });
    decoder.finish(sink);
  } catch (const std::length_error&) {
    out.too_big = true;
  } catch (const std::exception& e) {
    untyped(e);
  }
  return out;
}

template <class Decoder, class Render>
void fuzz_decoder(const std::uint8_t* data, std::size_t size, const Render& render) {
  if (size < 2) return;
  const std::size_t limit = data[0] < 128 ? 16u << 20 : 1 + (data[0] & 63);
  const std::string_view body = as_text(data + 2, size - 2);
  const std::vector<std::size_t> cuts = chunk_cuts(data[1], body.size(), 7);
  const Decoded whole = decode_in_chunks<Decoder>(body, limit, {}, render);
  const Decoded chunked = decode_in_chunks<Decoder>(body, limit, cuts, render);
  AGENTKIT_FUZZ_CHECK(whole.too_big == chunked.too_big);
  AGENTKIT_FUZZ_CHECK(whole.items == chunked.items);
}

}  // namespace agentkit::fuzz
