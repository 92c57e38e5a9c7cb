#include <agentkit/backoff.h>

#include <algorithm>
#include <random>

namespace agentkit {

using std::chrono::milliseconds;

milliseconds Backoff::ceiling(int retry) const noexcept {
  const auto low = std::max<milliseconds::rep>(base.count(), 0);
  const auto high = std::max<milliseconds::rep>(max.count(), 0);
  milliseconds::rep cap = low;
  for (int i = 1; i < retry && cap < high; ++i) cap *= 2;  // doubling, no overflow past max
  return milliseconds(std::min(cap, high));
}

milliseconds Backoff::delay(int retry, std::optional<milliseconds> retry_after) const {
  const auto high = std::max<milliseconds::rep>(max.count(), 0);
  if (retry_after) return milliseconds(std::clamp<milliseconds::rep>(retry_after->count(), 0, high));
  const milliseconds cap = ceiling(retry);
  if (!jitter || cap.count() == 0) return cap;
  // One generator per thread: no lock, and no state shared between runtimes.
  thread_local std::mt19937_64 rng(std::random_device{}());
  return milliseconds(std::uniform_int_distribution<milliseconds::rep>(0, cap.count())(rng));
}

}  // namespace agentkit
