// The OpenAI chat adapter's stream accumulator and body parser; see
// fuzz_provider.h for the input layout and the properties.
#include <agentkit/providers/openai.h>

#include "fuzz_provider.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::string_view body = agentkit::fuzz::as_text(data + 2, size - 2);
  if (data[0] % 2 == 0) {
    agentkit::fuzz::fuzz_stream<agentkit::providers::OpenAIStreamAccumulator>(body, data[1], true);
  } else {
    agentkit::fuzz::fuzz_body("OpenAI", body, agentkit::providers::openai_chat_response);
  }
  return 0;
}
