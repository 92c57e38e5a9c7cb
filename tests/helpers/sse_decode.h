// Decoding a recorded provider stream (an SSE body) with an adapter's
// accumulator, as the adapter does on the wire.
#pragma once

#include <string>

#include <agentkit/model.h>
#include <agentkit/providers/sse.h>

namespace agentkit_test {

template <class Accumulator>
agentkit::ModelResponse decode_stream(const std::string& body) {
  Accumulator acc;
  agentkit::providers::SseDecoder decoder;
  const agentkit::providers::SseDecoder::Sink sink = [&](const agentkit::providers::SseEvent& e) { acc.on_event(e); };
  decoder.feed(body, sink);
  decoder.finish(sink);
  return acc.finish();
}

}  // namespace agentkit_test
