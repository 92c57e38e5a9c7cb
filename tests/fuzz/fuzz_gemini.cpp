// The Gemini adapter's stream accumulator and body parser; see
// fuzz_provider.h for the input layout and the properties.
#include <agentkit/providers/gemini.h>

#include "fuzz_provider.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using agentkit::providers::GeminiStreamAccumulator;
  agentkit::fuzz::fuzz_reply<GeminiStreamAccumulator>(agentkit::providers::gemini_reply(), data, size, true);
  return 0;
}
