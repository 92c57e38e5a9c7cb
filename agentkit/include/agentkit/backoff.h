#pragma once
// The one backoff policy: how long to wait before a retry. Used by the
// retry() middleware, the provider transport, the REST tool and the MCP HTTP
// stream's reconnects. Waiting itself is CancellationToken::sleep_for
// (<agentkit/context.h>), the one wait that ends early on cancellation or a
// deadline.
//
// Example:
//   agentkit::Backoff backoff{.base = std::chrono::milliseconds(100), .max = std::chrono::seconds(5)};
//   backoff.ceiling(1);  // 100 ms
//   backoff.ceiling(3);  // 400 ms
//   backoff.delay(3);    // uniform in [0, 400] ms (full jitter)
//   ctx.cancellation.sleep_for(backoff.delay(3, retry_after));  // a server's Retry-After wins, up to max
#include <chrono>
#include <optional>

namespace agentkit {

struct Backoff {
  // The first retry's ceiling; each later retry doubles it.
  std::chrono::milliseconds base{100};
  // No wait is longer than this (a server's Retry-After included).
  std::chrono::milliseconds max{5000};
  // Full jitter: the wait is uniform in [0, ceiling], which spreads retries
  // from many callers instead of synchronising them. Without it the wait is
  // the ceiling itself.
  bool jitter = true;

  // base * 2^(retry - 1), at most max, never negative; retry 1 is the first
  // retry. Never overflows.
  std::chrono::milliseconds ceiling(int retry) const noexcept;
  // The wait before retry number `retry`. When the server said how long to
  // wait (`retry_after`), that wins, capped at max.
  std::chrono::milliseconds delay(int retry, std::optional<std::chrono::milliseconds> retry_after = std::nullopt) const;
};

}  // namespace agentkit
