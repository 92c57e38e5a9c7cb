#pragma once
// Messages and text helpers shared by the memory backends, the tool and
// FileMemory. Internal to the state component.
#include <agentkit/state/memory_tool.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace agentkit::state::memory_detail {

// The longest prefix of `text` of at most `max_bytes` that ends on a UTF-8
// character boundary.
std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) noexcept;

// Model-fixable refusals with the contract's wording.
MemoryError not_found(const MemoryPath& path);
MemoryError not_a_directory(const MemoryPath& path);
MemoryError is_a_directory(const MemoryPath& path);
MemoryError already_exists(const MemoryPath& path);
MemoryError symlink_refused(const MemoryPath& path);
MemoryError too_large(const MemoryPath& path, std::size_t bytes);

}  // namespace agentkit::state::memory_detail
