#pragma once

#include <cstdint>

namespace agentkit::detail {

// 64 random bits per process, drawn again in a forked child, so two
// processes never hand out the same ids (run ids, trace and span ids).
std::uint64_t process_salt() noexcept;

}  // namespace agentkit::detail
