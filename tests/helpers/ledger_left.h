// What a finished run's ledger leaves in the store: its owner record alone,
// marked finished (see StoreLedger's Fencing in <agentkit/state/ledger.h>).
#pragma once

#include <string>

#include <agentkit/json.h>
#include <agentkit/state/store.h>

namespace agentkit_test {

// `prefix`: the run's ledger prefix (agentkit::state::keys::ledger).
inline bool only_finished_owner_left(agentkit::state::Store& store, const std::string& prefix) {
  const auto left = store.list(prefix);
  return left.size() == 1 && left.front().first == prefix + "owner" &&
         agentkit::Json::parse(left.front().second.value, nullptr, false) == agentkit::Json{{"finished", true}};
}

}  // namespace agentkit_test
