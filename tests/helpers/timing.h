// Latency bounds in tests.
//
// A latency promise ("a cancel ends the stream within 50 ms") is checked at
// its stated value in a normal build. Sanitizer builds run several times
// slower while ctest runs other tests beside them on a small machine, so
// there the same check allows kTimingSlack times the bound. Every scaled bound
// must stay well below the delay a broken implementation would show, so the
// check still fails when the promise is broken.
#pragma once

#include <chrono>

namespace agentkit_test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr int kTimingSlack = 4;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr int kTimingSlack = 4;
#else
inline constexpr int kTimingSlack = 1;
#endif
#else
inline constexpr int kTimingSlack = 1;
#endif

// `bound` in a normal build, kTimingSlack times it under sanitizers.
constexpr double latency_bound_ms(double bound) { return bound * kTimingSlack; }
constexpr std::chrono::milliseconds latency_bound(std::chrono::milliseconds bound) { return bound * kTimingSlack; }

}  // namespace agentkit_test
