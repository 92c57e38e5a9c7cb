#pragma once
// replay(): a recorded run (a production one included) as an offline test in
// one line. See <agentkit/replay.h> for recording, replay classes and fork.
#include <utility>
#include <vector>

#include <agentkit/invoker.h>
#include <agentkit/replay.h>

namespace agentkit::testing {

// Points `ctx` at `cassette`: ctx.models answers every model name from it
// (checking each request against the recorded one; a difference or a
// missing step fails the run with ReplayMismatch, never a network call) and
// ctx.invoker runs read-only tools and injects the recorded results of the
// others, ahead of `chain`. Returns the Replayer, for its counts.
//
// Example:
//   auto ctx = agentkit::testing::make_test_ctx();
//   auto replayer = agentkit::testing::replay(ctx, agentkit::Cassette::load("refund.cassette.json"));
//   CHECK(agent.run("Refund order A-1", ctx).output == "Refunded.");
inline Replayer replay(RunContext& ctx, Cassette cassette, ReplayOptions options = {},
                       std::vector<Middleware> chain = default_middleware()) {
  Replayer replayer(std::move(cassette), std::move(options));
  replayer.attach(ctx, std::move(chain));
  return replayer;
}

}  // namespace agentkit::testing
