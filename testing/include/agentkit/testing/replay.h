#pragma once
// replay() and turns_from(): a recorded run (a production one included) as an
// offline test in one line. See <agentkit/replay.h> for recording, replay
// classes and fork.
#include <string_view>
#include <utility>
#include <vector>

#include <agentkit/invoker.h>
#include <agentkit/replay.h>
#include <agentkit/testing/fake_llm.h>

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

// The recorded model replies of `cassette` as a FakeLLM script: every model
// step in recording order, or only run `run`'s ("run1": the first top-level
// run without its sub-runs; "run1/1/c2": one sub-run). Each reply keeps its
// parts (text, reasoning with its signature, refusal), tool calls, usage and
// finish reason; a step that recorded a failed call becomes a turn that
// throws its message (the run fails with code internal; a Replayer keeps the
// recorded code). Unlike replay(), nothing checks the requests and every
// tool runs: the recorded run's decisions drive the tools under test.
// Throws CassetteError when no step matches or a reply cannot be read.
//
// Example:
//   auto llm = FakeLLM::script(agentkit::testing::turns_from(agentkit::Cassette::load("refund.cassette.json")));
std::vector<Turn> turns_from(const Cassette& cassette, std::string_view run = {});

}  // namespace agentkit::testing
