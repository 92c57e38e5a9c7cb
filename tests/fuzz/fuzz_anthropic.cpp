// The Anthropic messages adapter's stream accumulator and body parser; see
// fuzz_provider.h for the input layout and the properties.
#include <agentkit/providers/anthropic.h>

#include "fuzz_provider.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::string_view body = agentkit::fuzz::as_text(data + 2, size - 2);
  if (data[0] % 2 == 0) {
    // Text deltas of several blocks arrive interleaved, so the streamed text
    // need not equal the content joined in block order.
    agentkit::fuzz::fuzz_stream<agentkit::providers::AnthropicStreamAccumulator>(body, data[1], false);
  } else {
    agentkit::fuzz::fuzz_body("Anthropic", body, agentkit::providers::anthropic_response);
  }
  return 0;
}
