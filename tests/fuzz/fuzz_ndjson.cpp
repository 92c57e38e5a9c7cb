// NdjsonDecoder: any bytes, in any chunking, give the same lines (or the
// same length_error) as the whole body fed at once; no line is blank or
// holds a newline; no crash, no UB.
//
// Input: one byte picks the line size limit, one seeds the chunk sizes, the
// rest is the body.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <agentkit/providers/sse.h>

#include "fuzz_support.h"

namespace {

using agentkit::providers::NdjsonDecoder;

struct Decoded {
  std::vector<std::string> lines;
  bool too_big = false;
};

Decoded decode(std::string_view body, std::size_t limit, const std::vector<std::size_t>& cuts) {
  Decoded out;
  NdjsonDecoder decoder(limit);
  const NdjsonDecoder::Sink sink = [&](std::string_view line) {
    AGENTKIT_FUZZ_CHECK(line.find('\n') == std::string_view::npos);
    AGENTKIT_FUZZ_CHECK(line.find_first_not_of(" \t\r") != std::string_view::npos);
    out.lines.emplace_back(line);
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
  AGENTKIT_FUZZ_CHECK(whole.lines == chunked.lines);
  return 0;
}
