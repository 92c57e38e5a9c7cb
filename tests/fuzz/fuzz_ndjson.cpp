// NdjsonDecoder: any bytes, in any chunking, give the same lines (or the
// same length_error) as the whole body fed at once; no line is blank or
// holds a newline; no crash, no UB. Input layout: fuzz_decoder.h.
#include <string>
#include <string_view>

#include <agentkit/providers/sse.h>

#include "fuzz_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  agentkit::fuzz::fuzz_decoder<agentkit::providers::NdjsonDecoder>(data, size, [](std::string_view line) {
    AGENTKIT_FUZZ_CHECK(line.find('\n') == std::string_view::npos);
    AGENTKIT_FUZZ_CHECK(line.find_first_not_of(" \t\r") != std::string_view::npos);
    return std::string(line);
  });
  return 0;
}
