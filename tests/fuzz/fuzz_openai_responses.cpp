// The OpenAI Responses API adapter's stream accumulator and body parser;
// see fuzz_provider.h for the input layout and the properties. Text deltas
// need not equal the reply's text (the reply is response.completed's), so
// only their chunking independence is checked.
#include <agentkit/providers/openai_responses.h>

#include "fuzz_provider.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using agentkit::providers::OpenAIResponsesStreamAccumulator;
  agentkit::fuzz::fuzz_reply<OpenAIResponsesStreamAccumulator>(agentkit::providers::openai_responses_reply(), data,
                                                               size, false);
  return 0;
}
