// The Anthropic messages adapter's stream accumulator and body parser; see
// fuzz_provider.h for the input layout and the properties.
#include <agentkit/providers/anthropic.h>

#include "fuzz_provider.h"

// Text deltas of several blocks arrive interleaved, so the streamed text need
// not equal the content joined in block order.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using agentkit::providers::AnthropicStreamAccumulator;
  agentkit::fuzz::fuzz_reply<AnthropicStreamAccumulator>(agentkit::providers::anthropic_reply(), data, size, false);
  return 0;
}
