#pragma once
// Helpers shared by the SQL Store backends. Internal to the state component.
#include <optional>
#include <string>
#include <string_view>

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

}  // namespace agentkit::state::store_detail
