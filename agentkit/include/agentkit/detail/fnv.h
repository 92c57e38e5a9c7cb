#pragma once
// FNV-1a, 64 bits, as 16 hex digits: a short, stable store key for a long
// key (stable across processes and builds, unlike std::hash). Not a MAC.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace agentkit::detail {

inline std::string fnv1a_hex(std::string_view text) {
  std::uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace agentkit::detail
