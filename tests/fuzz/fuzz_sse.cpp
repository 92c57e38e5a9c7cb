// SseDecoder: any bytes, in any chunking, decode to the same events (or the
// same length_error) as the whole body fed at once; no crash, no UB. Input
// layout: fuzz_decoder.h.
#include <string>

#include <agentkit/providers/sse.h>

#include "fuzz_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using agentkit::providers::SseEvent;
  // Each event rendered field by field.
  agentkit::fuzz::fuzz_decoder<agentkit::providers::SseDecoder>(data, size, [](const SseEvent& e) {
    std::string out = e.event + '\0' + e.data + '\0' + e.id + '\0';
    if (e.retry) out += std::to_string(*e.retry);
    return out;
  });
  return 0;
}
