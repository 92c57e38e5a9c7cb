#pragma once
// Internal (agentkit::detail): the pieces of RunState's document that the
// store layer (<agentkit/state/checkpoint.h>) assembles itself, so that a
// checkpoint and RunState::to_json() write the same format. Never API.
#include <cstddef>
#include <vector>

#include <agentkit/json.h>
#include <agentkit/run_state.h>

namespace agentkit::detail {

// messages[from..] as a JSON array of message documents.
Json messages_json(const std::vector<Message>& messages, std::size_t from = 0);
// The state as a document whose "history" is `history` (message documents),
// without "signature" and without sanitize_utf8: RunState::to_json() is this
// over the whole history, plus the signature, sanitised.
Json run_state_document(const RunState& state, Json history);

}  // namespace agentkit::detail
