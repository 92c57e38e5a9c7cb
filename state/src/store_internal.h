#pragma once
// Helpers shared by the Store backends and their users in the state
// component. Internal to it.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <agentkit/backoff.h>
#include <agentkit/error.h>

namespace agentkit::state::store_detail {

// The smallest key above every key that starts with `prefix`, or nullopt when
// there is none (empty prefix, or only 0xff bytes): list(prefix) scans
// [prefix, prefix_end) so no byte of the prefix is a pattern character.
inline std::optional<std::string> prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (end.empty()) return std::nullopt;
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

// Runs `write` (a store call that is safe to repeat: the same bytes under
// the same key, or one that recognises its own earlier write) up to
// `attempts` times while it fails with a transient StoreError: the store is
// away (unavailable) or the write may or may not have landed
// (outcome_unknown). Any other error, or the last, is thrown.
template <class Write>
auto retry_transient(Write&& write, int attempts, const Backoff& backoff) {
  for (int attempt = 1;; ++attempt) {
    try {
      return write();
    } catch (const Error& e) {
      const bool transient = e.code() == ErrorCode::unavailable || e.code() == ErrorCode::outcome_unknown;
      if (!transient || attempt >= attempts) throw;
    }
    std::this_thread::sleep_for(backoff.delay(attempt));
  }
}

}  // namespace agentkit::state::store_detail
