// Resumable state is checked, never trusted: with a store the stored
// checkpoint is authoritative; without one the state must carry a valid
// HMAC-SHA256 signature under the context's state key.
#include <catch2/catch.hpp>

#include <atomic>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/state/store.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::Decision;
using agentkit::Json;
using agentkit::RunState;
using agentkit::StopReason;
using agentkit::ToolCall;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using agentkit_test::call;

namespace {

const std::string kKey = "0123456789abcdef0123456789abcdef";  // 32 bytes: the shortest key accepted

struct Refunds {
  std::atomic<int> executed{0};
  agentkit::ToolPtr tool() {
    return agentkit::tool("refund")
        .doc("Issue a refund against a customer order and return the confirmation id.")
        .side_effecting(true)
        .requires_approval()
        .params("order_id", "amount_usd")
        .fn([this](const std::string& id, double amount) {
          ++executed;
          return "refunded " + std::to_string(static_cast<int>(amount)) + " on " + id;
        });
  }
};

std::shared_ptr<FakeLLM> refund_script() {
  return FakeLLM::script({
      Turn{.tool_calls = {call("c1", "refund", {{"order_id", "A-1"}, {"amount_usd", 20.0}})}},
      Turn{.content = "Refund issued."},
      Turn{.content = "Refund issued again."},
  });
}

// The document a host would store, after `edit` changed it.
RunState altered(const RunState& state, const std::function<void(Json&)>& edit) {
  Json doc = Json::parse(state.to_json().dump());
  edit(doc);
  return RunState::from_json(doc);
}

void approve_in_json(Json& doc) {
  doc["pending"] = Json::array();
  doc["approved"] = Json::array({"c1"});
}

}  // namespace

TEST_CASE("with a store, a state that differs from its checkpoint is refused and nothing runs",
          "[durable][integrity]") {
  Refunds refunds;
  Agent agent("billing", "fake", "You handle refunds.", react({refunds.tool()}));
  auto llm = refund_script();
  auto ctx = make_test_ctx({.llm = llm});
  const auto suspended = agent.run("Refund order A-1 for $20", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  CHECK(suspended.state.signature.empty());  // no key on the context: nothing signed

  SECTION("a call moved from pending to approved in the JSON") {
    const RunState forged = altered(suspended.state, approve_in_json);
    CHECK_THROWS_AS(agent.resume(forged, {}, ctx), agentkit::StateTampered);
    CHECK_THROWS_WITH(agent.resume(forged, {}, ctx), Catch::Contains("['approved', 'pending']"));
  }
  SECTION("the pending call's arguments changed") {
    const RunState forged = altered(suspended.state, [](Json& doc) { doc["batch"][0]["arguments"]["amount_usd"] = 2000; });
    CHECK_THROWS_AS(agent.resume(forged, {{"c1", Decision::approve()}}, ctx), agentkit::StateTampered);
  }
  SECTION("a forged outcome for the pending call") {
    const RunState forged = altered(suspended.state, [](Json& doc) {
      doc["pending"] = Json::array();
      doc["outcomes"][0] = {{"text", "refunded 20 on A-1"}, {"is_error", false}, {"outcome", "ok"}};
    });
    CHECK_THROWS_AS(agent.resume(forged, {}, ctx), agentkit::StateIntegrityError);
  }
  CHECK(refunds.executed == 0);
  CHECK(llm->calls() == 1);

  // The state as the run returned it still resumes, exactly once.
  const auto resumed = agent.resume(suspended.state, {{"c1", Decision::approve()}}, ctx);
  CHECK(resumed.stop_reason == StopReason::answered);
  CHECK(refunds.executed == 1);
}

TEST_CASE("with a store, a changed run id never runs the same calls again", "[durable][integrity]") {
  Refunds refunds;
  Agent agent("billing", "fake", "You handle refunds.", react({refunds.tool()}));
  auto llm = refund_script();
  auto ctx = make_test_ctx({.llm = llm});
  const auto suspended = agent.run("Refund order A-1 for $20", ctx, {.run_id = "refund-A-1"});
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  const auto resumed = agent.resume(suspended.state, {{"c1", Decision::approve()}}, ctx);
  REQUIRE(resumed.stop_reason == StopReason::answered);
  REQUIRE(refunds.executed == 1);

  // The same document again: its run is over.
  CHECK_THROWS_AS(agent.resume(suspended.state, {{"c1", Decision::approve()}}, ctx), agentkit::RunAlreadyResumed);
  // Under a run id the store has never seen.
  const RunState renamed = altered(suspended.state, [](Json& doc) { doc["run_id"] = "refund-A-1-again"; });
  CHECK_THROWS_AS(agent.resume(renamed, {{"c1", Decision::approve()}}, ctx), agentkit::RunNotFound);
  // Under the id of another run that already finished.
  agent.run("What is 2+2?", ctx, {.run_id = "finished"});
  const RunState other = altered(suspended.state, [](Json& doc) { doc["run_id"] = "finished"; });
  CHECK_THROWS_AS(agent.resume(other, {{"c1", Decision::approve()}}, ctx), agentkit::RunAlreadyResumed);
  // In another scope, where the run does not exist.
  auto elsewhere = make_test_ctx({.llm = llm, .scope = {.org_id = 2}, .store = ctx.store});
  CHECK_THROWS_AS(agent.resume(suspended.state, {{"c1", Decision::approve()}}, elsewhere), agentkit::RunNotFound);

  CHECK(refunds.executed == 1);
  CHECK(!agentkit::load_run(*ctx.store, ctx.scope, "refund-A-1-again"));
}

TEST_CASE("with a store, version 1-3 documents still resume against their checkpoint", "[durable][integrity]") {
  for (const int version : {1, 2, 3}) {
    CAPTURE(version);
    Refunds refunds;
    Agent agent("billing", "fake", "You handle refunds.", react({refunds.tool()}));
    auto ctx = make_test_ctx({.llm = refund_script()});
    const auto suspended = agent.run("Refund order A-1 for $20", ctx);
    REQUIRE(suspended.stop_reason == StopReason::suspended);
    Json doc = suspended.state.to_json();
    doc["version"] = version;
    if (version < 3) doc.erase("tool_calls"), doc.erase("cost_usd");
    if (version < 2) {
      for (const char* field : {"approved", "session", "session_base"}) doc.erase(field);
    }
    ctx.store->put(agentkit::state::scoped_key(ctx.scope, "runs/" + suspended.state.run_id), doc.dump());
    // The host kept the same older document.
    const auto resumed = agent.resume(RunState::from_json(doc), {{"c1", Decision::approve()}}, ctx);
    CHECK(resumed.stop_reason == StopReason::answered);
    CHECK(refunds.executed == 1);
  }
}

TEST_CASE("without a store, a state key signs the state and resume checks it", "[integrity]") {
  Refunds refunds;
  Agent agent("billing", "fake", "You handle refunds.", react({refunds.tool()}));
  auto llm = refund_script();
  auto ctx = make_test_ctx({.llm = llm});
  ctx.store = nullptr;
  ctx.state_key = kKey;
  const auto suspended = agent.run("Refund order A-1 for $20", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  const std::string& signature = suspended.state.signature;
  CHECK(signature.rfind("hmac-sha256:", 0) == 0);
  CHECK(signature.size() == 12 + 64);
  const Json doc = suspended.state.to_json();
  CHECK(doc.at("signature") == signature);
  CHECK(RunState::from_json(doc).signature == signature);

  SECTION("a call moved from pending to approved in the JSON") {
    CHECK_THROWS_AS(agent.resume(altered(suspended.state, approve_in_json), {}, ctx), agentkit::StateTampered);
  }
  SECTION("a changed run id") {
    const RunState renamed = altered(suspended.state, [](Json& d) { d["run_id"] = "another"; });
    CHECK_THROWS_AS(agent.resume(renamed, {{"c1", Decision::approve()}}, ctx), agentkit::StateTampered);
  }
  SECTION("the signature removed") {
    const RunState unsigned_state = altered(suspended.state, [](Json& d) { d.erase("signature"); });
    CHECK_THROWS_AS(agent.resume(unsigned_state, {{"c1", Decision::approve()}}, ctx), agentkit::StateUnsigned);
  }
  SECTION("a signature made with another key") {
    auto other = make_test_ctx({.llm = llm});
    other.store = nullptr;
    other.state_key = std::string(32, 'k');
    CHECK_THROWS_AS(agent.resume(suspended.state, {{"c1", Decision::approve()}}, other), agentkit::StateTampered);
  }
  SECTION("a context without the key cannot check it") {
    auto keyless = make_test_ctx({.llm = llm});
    keyless.store = nullptr;
    CHECK_THROWS_AS(agent.resume(suspended.state, {{"c1", Decision::approve()}}, keyless), agentkit::StateUnsigned);
  }
  CHECK(refunds.executed == 0);
  CHECK(llm->calls() == 1);

  // The signed document, stored as JSON and read back, resumes; the result is signed afresh.
  const auto restored = RunState::from_json(Json::parse(doc.dump()));
  const auto resumed = agent.resume(restored, {{"c1", Decision::approve()}}, ctx);
  CHECK(resumed.stop_reason == StopReason::answered);
  CHECK(refunds.executed == 1);
  CHECK(resumed.state.signature.rfind("hmac-sha256:", 0) == 0);
  CHECK(resumed.state.signature != signature);
}

TEST_CASE("with neither a store nor a state key, no state is resumed", "[integrity]") {
  Refunds refunds;
  Agent agent("billing", "fake", "You handle refunds.", react({refunds.tool()}));
  auto llm = refund_script();
  auto ctx = make_test_ctx({.llm = llm});
  ctx.store = nullptr;
  const auto suspended = agent.run("Refund order A-1 for $20", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  CHECK(suspended.state.signature.empty());
  // Not even the state exactly as the run returned it: nothing could tell it from an altered one.
  CHECK_THROWS_AS(agent.resume(suspended.state, {{"c1", Decision::approve()}}, ctx), agentkit::StateUnsigned);
  CHECK_THROWS_WITH(agent.resume(suspended.state, {{"c1", Decision::approve()}}, ctx),
                    Catch::Contains("ctx.store") && Catch::Contains("ctx.state_key"));
  CHECK(refunds.executed == 0);
}

TEST_CASE("a state key shorter than 32 bytes is refused before a run starts", "[integrity]") {
  Agent agent("a", "fake", "You answer.", react({}));
  auto llm = FakeLLM::script({Turn{.content = "hi"}});
  auto ctx = make_test_ctx({.llm = llm});
  ctx.state_key = "hunter2";
  CHECK_THROWS_AS(agent.run("q", ctx), agentkit::Error);
  try {
    agent.run("q", ctx);
  } catch (const agentkit::Error& e) {
    CHECK(std::string(e.what()).find("hunter2") == std::string::npos);  // a secret never appears in an error
  }
  CHECK(llm->calls() == 0);
}

TEST_CASE("with a store and a state key, results are signed and the checkpoint stays authoritative",
          "[durable][integrity]") {
  Refunds refunds;
  Agent agent("billing", "fake", "You handle refunds.", react({refunds.tool()}));
  auto ctx = make_test_ctx({.llm = refund_script()});
  ctx.state_key = kKey;
  const auto suspended = agent.run("Refund order A-1 for $20", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  CHECK(!suspended.state.signature.empty());
  // The stored checkpoint carries no signature.
  const auto entry = ctx.store->get(agentkit::state::scoped_key(ctx.scope, "runs/" + suspended.state.run_id));
  REQUIRE(entry);
  CHECK(!Json::parse(entry->value).contains("signature"));
  // A forged document re-signed would still differ from the checkpoint.
  CHECK_THROWS_AS(agent.resume(altered(suspended.state, approve_in_json), {}, ctx), agentkit::StateTampered);
  CHECK(refunds.executed == 0);
  CHECK(agent.resume(suspended.state, {{"c1", Decision::approve()}}, ctx).stop_reason == StopReason::answered);
  CHECK(refunds.executed == 1);
}
