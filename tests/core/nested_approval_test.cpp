// Sub-runs that suspend (as_tool): a sub-agent's call that needs approval
// surfaces on the parent run under a qualified id ("<parent call>/<its
// call>") with its agent path; the decisions route down; the sub-run resumes
// where it stopped, in whichever process resumes the parent; nothing runs
// before its decision and nothing runs twice.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/errors.h>
#include <agentkit/function_tool.h>
#include <agentkit/registry.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::Decision;
using agentkit::InvalidDecision;
using agentkit::Json;
using agentkit::Phase;
using agentkit::Role;
using agentkit::RunState;
using agentkit::StopReason;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using agentkit_test::call;

namespace {

// boss runs billing as a tool; billing's refund needs a human.
struct Office {
  std::shared_ptr<std::atomic<int>> refunds = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<std::vector<double>> amounts = std::make_shared<std::vector<double>>();
  std::shared_ptr<const Agent> billing;
  std::shared_ptr<const Agent> boss;

  Office() {
    auto refund = agentkit::tool("refund")
                      .doc("Issue a refund against a customer order and return the confirmation id.")
                      .side_effecting(true)
                      .requires_approval()
                      .params("order_id", "amount_usd")
                      .fn([refunds = refunds, amounts = amounts](const std::string& order_id, double amount) {
                        ++*refunds;
                        amounts->push_back(amount);
                        return "refunded " + std::to_string(static_cast<int>(amount)) + " on " + order_id;
                      });
    billing = std::make_shared<const Agent>("billing", "fake", "You issue refunds.", react({refund}));
    auto as_billing = agentkit::as_tool(billing, {.name = "billing",
                                                  .description = "Billing: refunds and invoices.",
                                                  .side_effecting = true});
    boss = std::make_shared<const Agent>("boss", "fake", "You delegate.", react({as_billing}));
  }
};

Json refund_args(double amount) { return {{"order_id", "A-1"}, {"amount_usd", amount}}; }

// The parent asks billing once; billing asks for a refund; both answer.
std::vector<Turn> refund_script() {
  return {
      Turn{.tool_calls = {call("b1", "billing", {{"task", "refund A-1, $20"}})}},
      Turn{.tool_calls = {call("r1", "refund", refund_args(20))}},
      Turn{.content = "billing: done"},
      Turn{.content = "boss: billing says done"},
  };
}

std::vector<std::string> ids(const agentkit::Suspended& s) {
  std::vector<std::string> out;
  for (const auto& c : s.pending) out.push_back(c.id);
  return out;
}

// The text of the parent's tool result for `call_id`.
std::string result_text(const RunState& state, const std::string& call_id) {
  for (const auto& m : state.history) {
    if (m.role == Role::tool && m.tool_call_id == call_id) return m.text();
  }
  return "<none>";
}

}  // namespace

TEST_CASE("a sub-agent's call needing approval suspends the parent with the call and its agent path",
          "[nested][approval]") {
  Office office;
  auto llm = FakeLLM::script(refund_script());
  auto ctx = make_test_ctx({.llm = llm});
  auto suspended = office.boss->run("Refund order A-1", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  REQUIRE(suspended.suspended);
  CHECK(ids(*suspended.suspended) == std::vector<std::string>{"b1/r1"});
  CHECK(suspended.suspended->agents == std::vector<std::string>{"boss/billing"});
  CHECK(suspended.suspended->pending[0].name == "refund");
  CHECK(suspended.suspended->pending[0].arguments == refund_args(20));
  CHECK(*office.refunds == 0);
  // The parent's own state names the call that runs the sub-agent; the
  // sub-run's suspension is recorded with it, and the document round-trips.
  CHECK(suspended.state.pending == std::vector<std::string>{"b1"});
  REQUIRE(suspended.state.nested.count("b1") == 1);
  const RunState reloaded = RunState::from_json(suspended.state.to_json());
  CHECK(reloaded.to_json() == suspended.state.to_json());
  // A load (what a host or another process sees) expands it the same way.
  const auto stored = agentkit::load_run(*ctx.store, ctx.scope, suspended.state.run_id);
  REQUIRE(stored);
  CHECK(stored->phase == Phase::suspended);

  SECTION("approved: the sub-run resumes where it stopped and the parent continues") {
    auto resumed = office.boss->resume(suspended.state.run_id, {{"b1/r1", Decision::approve()}}, ctx);
    REQUIRE(resumed.stop_reason == StopReason::answered);
    CHECK(resumed.output == "boss: billing says done");
    CHECK(*office.refunds == 1);
    CHECK(result_text(resumed.state, "b1") == "billing: done");
    // The sub-agent's model saw its refund's result, not a fresh task.
    const auto requests = llm->requests();
    REQUIRE(requests.size() == 4);
    CHECK(requests[2].system == "You issue refunds.");
    CHECK(requests[2].messages.back().text() == "refunded 20 on A-1");
  }
  SECTION("rejected: the sub-agent's model reads the rejection and the parent continues") {
    auto resumed =
        office.boss->resume(suspended.state.run_id, {{"b1/r1", Decision::reject("over the limit")}}, ctx);
    REQUIRE(resumed.stop_reason == StopReason::answered);
    CHECK(*office.refunds == 0);
    const auto requests = llm->requests();
    REQUIRE(requests.size() == 4);
    CHECK_THAT(requests[2].messages.back().text(), Catch::Contains("rejected") && Catch::Contains("over the limit"));
  }
  SECTION("no decision for it: rejected, as for the run's own calls") {
    auto resumed = office.boss->resume(suspended.state.run_id, {}, ctx);
    REQUIRE(resumed.stop_reason == StopReason::answered);
    CHECK(*office.refunds == 0);
  }
  SECTION("edited: the refund runs with the human's arguments") {
    auto resumed = office.boss->resume(suspended.state.run_id, {{"b1/r1", Decision::edit(refund_args(15))}}, ctx);
    REQUIRE(resumed.stop_reason == StopReason::answered);
    CHECK(*office.amounts == std::vector<double>{15});
  }
}

TEST_CASE("decisions on a sub-agent's calls are checked before anything runs", "[nested][approval]") {
  Office office;
  auto llm = FakeLLM::script(refund_script());
  auto ctx = make_test_ctx({.llm = llm});
  auto suspended = office.boss->run("Refund order A-1", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  const std::string run = suspended.state.run_id;

  const auto refused = [&](agentkit::Decisions decisions, const std::string& id, const std::string& says) {
    try {
      office.boss->resume(run, std::move(decisions), ctx);
      FAIL("resume accepted decisions it should refuse");
    } catch (const InvalidDecision& e) {
      CHECK(e.call_id() == id);
      CHECK_THAT(e.what(), Catch::Contains(says));
    }
  };
  refused({{"b1/r9", Decision::approve()}}, "b1/r9", "b1/r1");         // no such nested call; the pending one named
  refused({{"x9/r1", Decision::approve()}}, "x9/r1", "no such call is pending");   // no such parent call
  refused({{"b1", Decision::approve()}}, "b1", "b1/");                // the parent call awaits its sub-agent's
  refused({{"b1/r1", Decision::edit({{"order_id", "A-1"}, {"amount_usd", "lots"}})}}, "b1/r1", "amount_usd");
  CHECK(*office.refunds == 0);
  CHECK(llm->requests().size() == 2);  // nothing asked, nothing run
  const auto stored = agentkit::load_run(*ctx.store, ctx.scope, run);
  REQUIRE(stored);
  CHECK(stored->phase == Phase::suspended);

  // Still suspended, so a corrected decision goes through.
  auto resumed = office.boss->resume(run, {{"b1/r1", Decision::approve()}}, ctx);
  CHECK(resumed.stop_reason == StopReason::answered);
  CHECK(*office.refunds == 1);
}

TEST_CASE("a nested approval resumes in another process: fresh agents, a fresh context, the same store",
          "[nested][approval][durable]") {
  auto llm = FakeLLM::script(refund_script());
  auto first = make_test_ctx({.llm = llm});
  std::string run;
  {
    Office office;
    auto suspended = office.boss->run("Refund order A-1", first);
    REQUIRE(suspended.stop_reason == StopReason::suspended);
    run = suspended.state.run_id;
  }
  Office office;  // the next process builds its agents again
  auto again = make_test_ctx({.llm = llm});
  again.store = first.store;
  auto resumed = office.boss->resume(run, {{"b1/r1", Decision::approve()}}, again);
  REQUIRE(resumed.stop_reason == StopReason::answered);
  CHECK(*office.refunds == 1);
  // Resuming twice never runs the refund twice.
  CHECK_THROWS_AS(office.boss->resume(run, {{"b1/r1", Decision::approve()}}, again), agentkit::RunAlreadyResumed);
  CHECK(*office.refunds == 1);
}

TEST_CASE("two levels: a decision routes down through every sub-run", "[nested][approval]") {
  Office office;
  auto as_boss = agentkit::as_tool(office.boss, {.name = "boss", .description = "The boss delegates the work to billing.",
                                                 .side_effecting = true});
  auto owner = std::make_shared<const Agent>("owner", "fake", "You own the shop.", react({as_boss}));
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("o1", "boss", {{"task", "sort out A-1"}})}},
      Turn{.tool_calls = {call("b1", "billing", {{"task", "refund A-1, $20"}})}},
      Turn{.tool_calls = {call("r1", "refund", refund_args(20))}},
      Turn{.content = "billing: done"},
      Turn{.content = "boss: done"},
      Turn{.content = "owner: done"},
  });
  auto ctx = make_test_ctx({.llm = llm});
  auto suspended = owner->run("Handle A-1", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  CHECK(ids(*suspended.suspended) == std::vector<std::string>{"o1/b1/r1"});
  CHECK(suspended.suspended->agents == std::vector<std::string>{"owner/boss/billing"});
  // An edit three levels down is checked against billing's refund.
  CHECK_THROWS_AS(owner->resume(suspended.state.run_id, {{"o1/b1/r1", Decision::edit({{"order_id", 7}})}}, ctx),
                  InvalidDecision);
  auto resumed = owner->resume(suspended.state.run_id, {{"o1/b1/r1", Decision::edit(refund_args(12))}}, ctx);
  REQUIRE(resumed.stop_reason == StopReason::answered);
  CHECK(resumed.output == "owner: done");
  CHECK(*office.amounts == std::vector<double>{12});
}

TEST_CASE("a sub-agent that asks again after its first approval suspends the parent again", "[nested][approval]") {
  Office office;
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("b1", "billing", {{"task", "refund A-1 twice"}})}},
      Turn{.tool_calls = {call("r1", "refund", refund_args(20))}},
      Turn{.tool_calls = {call("r2", "refund", refund_args(5))}},
      Turn{.content = "billing: both done"},
      Turn{.content = "boss: done"},
  });
  auto ctx = make_test_ctx({.llm = llm});
  auto first = office.boss->run("Refund order A-1", ctx);
  REQUIRE(first.stop_reason == StopReason::suspended);
  CHECK(ids(*first.suspended) == std::vector<std::string>{"b1/r1"});
  auto second = office.boss->resume(first.state.run_id, {{"b1/r1", Decision::approve()}}, ctx);
  REQUIRE(second.stop_reason == StopReason::suspended);
  CHECK(ids(*second.suspended) == std::vector<std::string>{"b1/r2"});
  CHECK(*office.amounts == std::vector<double>{20});
  // The first decision does not carry over to the second call.
  CHECK_THROWS_AS(office.boss->resume(first.state.run_id, {{"b1/r1", Decision::approve()}}, ctx), InvalidDecision);
  auto done = office.boss->resume(first.state.run_id, {{"b1/r2", Decision::approve()}}, ctx);
  REQUIRE(done.stop_reason == StopReason::answered);
  CHECK(*office.amounts == std::vector<double>{20, 5});
}

TEST_CASE("a parent stopped while its sub-run awaits approval never says the sub-agent's call did not run",
          "[nested][approval][cancellation]") {
  Office office;
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("b1", "billing", {{"task", "refund A-1 twice"}})}},
      Turn{.tool_calls = {call("r1", "refund", refund_args(20))}},
      Turn{.tool_calls = {call("r2", "refund", refund_args(5))}},
  });
  auto ctx = make_test_ctx({.llm = llm});
  auto first = office.boss->run("Refund order A-1", ctx);
  REQUIRE(first.stop_reason == StopReason::suspended);
  // The sub-run runs the approved refund and suspends on the next within
  // one poll; the parent collects its batch on a later one. It is cancelled
  // in between.
  auto handle = office.boss->start_resume(first.state.run_id, {{"b1/r1", Decision::approve()}}, ctx);
  while (!handle.poll() && office.amounts->empty()) {
  }
  REQUIRE_FALSE(handle.done());
  REQUIRE(*office.amounts == std::vector<double>{20});
  handle.cancel();
  const agentkit::RunResult result = handle.wait();  // the end is in the store once it returns
  const RunState& state = result.state;
  CHECK(result.stop_reason == StopReason::cancelled);
  for (const RunState& seen : {state, *agentkit::load_run(*ctx.store, ctx.scope, state.run_id)}) {
    const std::string text = result_text(seen, "b1");
    CHECK_THAT(text, Catch::StartsWith("Outcome unknown") && Catch::Contains("awaited approval"));
    CHECK(seen.phase == Phase::done);
  }
  CHECK(*office.refunds == 1);
}

TEST_CASE("a run recovered after its resume, with the sub-run not yet resumed, resumes it with the decisions",
          "[nested][approval][recovery]") {
  Office office;
  auto llm = FakeLLM::script(refund_script());
  auto ctx = make_test_ctx({.llm = llm});
  auto suspended = office.boss->run("Refund order A-1", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  // What a crash right after the parent's resume checkpoint leaves: the
  // parent decided and back in `act`, the sub-run still suspended.
  RunState state = suspended.state;
  state.phase = Phase::act;
  state.nested.at("b1").decided = true;
  state.nested.at("b1").decisions = {{"r1", Decision::approve()}};
  state.pending.clear();
  auto stored = agentkit::state::load_stored_run(*ctx.store, ctx.scope, state.run_id);
  REQUIRE(stored);
  agentkit::state::Checkpoint checkpoint(ctx.store, ctx.scope, state.run_id, stored->version, stored->sealed);
  REQUIRE(checkpoint.save(state));
  auto recovered = office.boss->recover(state.run_id, ctx);
  REQUIRE(recovered.stop_reason == StopReason::answered);
  CHECK(*office.refunds == 1);
}

TEST_CASE("without a store a sub-run's suspension is the call's error, naming why, and nothing ran",
          "[nested][approval]") {
  Office office;
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("b1", "billing", {{"task", "refund A-1, $20"}})}},
      Turn{.tool_calls = {call("r1", "refund", refund_args(20))}},
      Turn{.content = "boss: billing could not"},
  });
  auto ctx = make_test_ctx({.llm = llm});
  ctx.store = nullptr;
  auto result = office.boss->run("Refund order A-1", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(*office.refunds == 0);
  CHECK_THAT(result_text(result.state, "b1"), Catch::Contains("suspended awaiting approval") &&
                                                  Catch::Contains("durable"));
}

TEST_CASE("a tampered nested suspension is refused on load", "[nested][approval][state]") {
  Office office;
  auto llm = FakeLLM::script(refund_script());
  auto ctx = make_test_ctx({.llm = llm});
  auto suspended = office.boss->run("Refund order A-1", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  const Json doc = suspended.state.to_json();
  REQUIRE(doc.contains("nested"));
  auto tampered = [&](auto&& edit) {
    Json d = doc;
    edit(d);
    CHECK_THROWS_AS(RunState::from_json(d), agentkit::Error);
  };
  tampered([](Json& d) { d["nested"]["zz"] = d["nested"]["b1"]; });                 // not a call of the batch
  tampered([](Json& d) { d["nested"]["b1"]["decided"] = true; });                   // decided, yet pending
  tampered([](Json& d) { d["nested"]["b1"]["agents"] = Json::array(); });           // a path per call
  tampered([](Json& d) { d["nested"]["b1"]["run_id"] = ""; });                      // no sub-run
  tampered([](Json& d) { d["nested"]["b1"]["decisions"]["r1"] = {{"kind", "approve"}}; });  // undecided
  tampered([](Json& d) {
    d["nested"]["b1"]["decided"] = true;
    d["nested"]["b1"]["decisions"]["r1"] = {{"kind", "yes please"}};
  });
}
