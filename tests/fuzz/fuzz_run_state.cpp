// RunState::from_json on any JSON document: an agentkit::Error or a
// state that serialises (dump() included) and reads back to the same document.
#include <cstdint>
#include <stdexcept>
#include <string>

#include <agentkit/agent.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const agentkit::Json doc = agentkit::Json::parse(agentkit::fuzz::as_text(data, size), nullptr, false);
  if (doc.is_discarded()) return 0;
  agentkit::RunState state;
  try {
    state = agentkit::RunState::from_json(doc);
  } catch (const agentkit::Error&) {
    return 0;
  } catch (const std::exception& e) {
    agentkit::fuzz::untyped(e);
  }
  try {
    const agentkit::Json saved = state.to_json();
    const std::string text = saved.dump();
    const agentkit::Json again = agentkit::RunState::from_json(agentkit::Json::parse(text)).to_json();
    AGENTKIT_FUZZ_CHECK(again == saved);
  } catch (const std::exception& e) {
    agentkit::fuzz::fail(std::string("an accepted run state does not save and read back: ") + e.what());
  }
  return 0;
}
