// The Ollama native chat adapter's NDJSON stream accumulator and body
// parser; see fuzz_provider.h for the input layout and the properties.
#include <agentkit/providers/ollama.h>

#include "fuzz_provider.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using agentkit::providers::OllamaStreamAccumulator;
  agentkit::fuzz::fuzz_reply<OllamaStreamAccumulator>(agentkit::providers::ollama_chat_reply(), data, size, true);
  return 0;
}
