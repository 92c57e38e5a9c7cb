// Durable runs: checkpoints at every step boundary, resume by run id (once),
// recovery after a crash with the exactly-once ledger, and sessions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <optional>
#include <utility>
#include <thread>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/session.h>
#include <agentkit/state/keys.h>
#include <agentkit/state/ledger.h>
#include <agentkit/state/store.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/claimed_first_store.h"
#include "../helpers/cut_store.h"
#include "../helpers/ledger_left.h"
#include "../helpers/recording_store.h"
#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::Decision;
using agentkit::Json;
using agentkit::Message;
using agentkit::Phase;
using agentkit::Role;
using agentkit::RunState;
using agentkit::StopReason;
using agentkit::ToolCall;
using agentkit::cognition::react;
using agentkit::state::InMemoryStore;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using agentkit_test::call;

namespace {

// The first checkpoint written for `key` at `phase`, or "".
std::string checkpoint_at(agentkit_test::RecordingStore& store, const std::string& key, const std::string& phase) {
  const auto found = store.checkpoints_at(key, phase);
  return found.empty() ? std::string() : found.front();
}
// The first checkpoint written for `key` at `phase` that lists sealed history.
std::string first_sealed_checkpoint_at(agentkit_test::RecordingStore& store, const std::string& key,
                                       const std::string& phase) {
  for (const auto& doc : store.checkpoints_at(key, phase)) {
    if (Json::parse(doc).contains("history_segments")) return doc;
  }
  return {};
}
std::size_t largest_write(agentkit_test::RecordingStore& store, const std::string& key) {
  std::size_t largest = 0;
  for (const auto& [k, v] : store.writes()) largest = k == key ? std::max(largest, v.size()) : largest;
  return largest;
}

struct Counter {
  std::atomic<int> runs{0};
  agentkit::ToolPtr tool(std::string name, bool side_effecting, bool idempotent = false, bool approval = false) {
    auto b = agentkit::tool(std::move(name))
                 .doc("Record one thing in the outside world and return a receipt for it.")
                 .side_effecting(side_effecting);
    if (idempotent) b = std::move(b).idempotent();
    if (approval) b = std::move(b).requires_approval();
    return std::move(b).params("what").fn([this](const std::string& what) {
      ++runs;
      return "done: " + what;
    });
  }
};

}  // namespace

TEST_CASE("a durable run checkpoints at every step boundary", "[durable]") {
  auto store = std::make_shared<agentkit_test::RecordingStore>();
  Counter counter;
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "note", {{"what", "a"}})}},
      Turn{.content = "noted"},
  });
  Agent agent("clerk", "fake", "You take notes.", react({counter.tool("note", true)}));
  auto ctx = make_test_ctx({.llm = llm, .store = store});
  auto result = agent.run("take a note", ctx, {.run_id = "r1"});
  REQUIRE(result.stop_reason == StopReason::answered);
  // claim, after the model asked for a call, after the call, the end
  CHECK(store->phases() == std::vector<std::string>{"ask_model", "act", "ask_model", "done"});
  auto stored = agentkit::load_run(*store, ctx.scope, "r1");
  REQUIRE(stored);
  CHECK(stored->phase == Phase::done);
  CHECK(stored->output == "noted");
  CHECK(stored->history.size() == 4);
  // The ledger records are dropped once the run is over.
  CHECK(agentkit_test::only_finished_owner_left(*store, agentkit::state::keys::ledger(ctx.scope, "r1")));
  CHECK(agentkit::interrupted_runs(*store, ctx.scope).empty());
}

TEST_CASE("a run id that already exists is refused before anything runs", "[durable]") {
  auto llm = FakeLLM::script({Turn{.content = "one"}, Turn{.content = "two"}});
  Agent agent("a", "fake", "You answer.", react({}));
  auto ctx = make_test_ctx({.llm = llm});
  agent.run("q", ctx, {.run_id = "same"});
  CHECK_THROWS_AS(agent.run("q", ctx, {.run_id = "same"}), agentkit::RunError);
  CHECK(llm->calls() == 1);
}

TEST_CASE("resume by run id in a fresh runtime: approve, and only once", "[durable][approval]") {
  auto store = std::make_shared<InMemoryStore>();
  Counter counter;
  const auto make_agent = [&] {
    return Agent("billing", "fake", "You handle refunds.", react({counter.tool("refund", true, false, true)}));
  };
  std::string run_id;
  {
    auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "refund", {{"what", "A-1"}})}}});
    auto ctx = make_test_ctx({.llm = llm, .store = store});
    auto result = make_agent().run("refund A-1", ctx);
    REQUIRE(result.stop_reason == StopReason::suspended);
    run_id = result.state.run_id;
  }
  CHECK(counter.runs == 0);
  // Everything below knows only the store and the run id.
  auto llm = FakeLLM::script({Turn{.content = "Refund issued."}, Turn{.content = "again"}});
  auto ctx = make_test_ctx({.llm = llm, .store = store});
  const Agent agent = make_agent();

  SECTION("the first resume proceeds, a second is refused") {
    auto resumed = agent.resume(run_id, {{"c1", Decision::approve()}}, ctx);
    CHECK(resumed.stop_reason == StopReason::answered);
    CHECK(resumed.output == "Refund issued.");
    CHECK(counter.runs == 1);
    CHECK_THROWS_AS(agent.resume(run_id, {{"c1", Decision::approve()}}, ctx), agentkit::RunAlreadyResumed);
    CHECK(counter.runs == 1);
  }
  SECTION("two concurrent resumes: exactly one proceeds") {
    std::atomic<int> proceeded{0}, refused{0};
    std::atomic<bool> go{false};
    auto attempt = [&] {
      auto local = make_test_ctx({.llm = FakeLLM::script({Turn{.content = "ok"}}), .store = store});
      while (!go) std::this_thread::yield();
      try {
        agent.resume(run_id, {{"c1", Decision::approve()}}, local);
        ++proceeded;
      } catch (const agentkit::RunAlreadyResumed&) {
        ++refused;
      }
    };
    std::thread a(attempt), b(attempt);
    go = true;
    a.join();
    b.join();
    CHECK(proceeded == 1);
    CHECK(refused == 1);
    CHECK(counter.runs == 1);
  }
  SECTION("a stale in-memory state cannot resume a run already resumed from the store") {
    auto stale = agentkit::load_run(*store, ctx.scope, run_id);
    REQUIRE(stale);
    agent.resume(run_id, {{"c1", Decision::reject("no")}}, ctx);
    CHECK_THROWS_AS(agent.resume(*stale, {{"c1", Decision::approve()}}, ctx), agentkit::RunAlreadyResumed);
    CHECK(counter.runs == 0);
  }
  SECTION("a fresh budget charged with what the run spent keeps the run's limits") {
    const auto stored = agentkit::load_run(*store, ctx.scope, run_id);
    REQUIRE(stored);
    auto next = FakeLLM::script({Turn{.tool_calls = {call("c2", "refund", {{"what", "A-2"}})}}});
    auto local = make_test_ctx({.llm = next, .store = store});
    local.budget = std::make_shared<agentkit::Budget>(agentkit::BudgetLimits{.model_steps = 2});
    agentkit::charge_spent(*local.budget, *stored);
    CHECK(local.budget->model_steps() == 1);
    CHECK(local.budget->tokens() == 15);    // the first turn's 10 + 5
    CHECK(local.budget->tool_calls() == 1);  // the refund, sent once to find it needs approval
    // The approved call runs and the model takes the second and last step;
    // counted from zero, its new call would suspend for approval instead.
    auto resumed = agent.resume(run_id, {{"c1", Decision::approve()}}, local);
    CHECK(resumed.stop_reason == StopReason::budget_exhausted);
    CHECK(counter.runs == 1);
    CHECK(next->calls() == 1);
    agentkit::Budget after;
    agentkit::charge_spent(after, resumed.state);
    CHECK(after.model_steps() == 2);
    CHECK(after.tool_calls() == 2);  // the refund again, approved; the second call never ran
  }
  SECTION("recovering a suspended run leaves it suspended: no approval is bypassed") {
    auto recovered = agent.recover(run_id, ctx);
    CHECK(recovered.stop_reason == StopReason::suspended);
    REQUIRE(recovered.suspended);
    CHECK(recovered.suspended->pending.at(0).id == "c1");
    CHECK(counter.runs == 0);
    CHECK(llm->calls() == 0);
  }
}

TEST_CASE("resume and recover report unknown, unreadable and newer checkpoints", "[durable]") {
  auto store = std::make_shared<InMemoryStore>();
  auto ctx = make_test_ctx({.llm = FakeLLM::script({}), .store = store});
  Agent agent("a", "fake", "You answer.", react({}));
  CHECK_THROWS_AS(agent.resume("nope", {}, ctx), agentkit::RunNotFound);
  CHECK_THROWS_AS(agent.recover("nope", ctx), agentkit::RunNotFound);

  store->put(agentkit::state::scoped_key(ctx.scope, "runs/garbled"), "{not json");
  CHECK_THROWS_AS(agent.recover("garbled", ctx), agentkit::CheckpointError);

  RunState newer;
  newer.run_id = "newer";
  Json doc = newer.to_json();
  doc["version"] = RunState::kVersion + 1;
  store->put(agentkit::state::scoped_key(ctx.scope, "runs/newer"), doc.dump());
  CHECK_THROWS_WITH(agent.recover("newer", ctx), Catch::Contains("newer agentkit"));

  auto no_store = make_test_ctx({.llm = FakeLLM::script({})});
  no_store.store = nullptr;
  CHECK_THROWS_AS(agent.resume("x", {}, no_store), agentkit::Error);
}

TEST_CASE("a version-1 checkpoint still resumes", "[durable][state]") {
  auto store = std::make_shared<InMemoryStore>();
  Counter counter;
  Agent agent("billing", "fake", "You handle refunds.", react({counter.tool("refund", true, false, true)}));
  auto first = make_test_ctx({.llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "refund", {{"what", "x"}})}}}),
                              .store = store});
  auto suspended = agent.run("refund x", first);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  Json v1 = suspended.state.to_json();
  v1["version"] = 1;
  for (const char* field : {"approved", "session", "session_base", "tool_calls", "cost_usd"}) v1.erase(field);
  const std::string key = agentkit::state::scoped_key(first.scope, "runs/" + suspended.state.run_id);
  store->put(key, v1.dump());

  auto ctx = make_test_ctx({.llm = FakeLLM::script({Turn{.content = "ok"}}), .store = store});
  auto resumed = agent.resume(suspended.state.run_id, {{"c1", Decision::approve()}}, ctx);
  CHECK(resumed.stop_reason == StopReason::answered);
  CHECK(counter.runs == 1);
  CHECK(Json::parse(store->get(key)->value).at("version") == RunState::kVersion);
}

TEST_CASE("recovery mid-batch: recorded calls are not re-run, unknown ones are reported", "[durable][ledger]") {
  auto store = std::make_shared<InMemoryStore>();
  Counter pay, refresh, lookup;
  Agent agent("ops", "fake", "You operate.",
              react({pay.tool("pay", true), refresh.tool("refresh", true, /*idempotent=*/true),
                     lookup.tool("lookup", false)}));
  auto ctx = make_test_ctx({.llm = FakeLLM::script({}), .store = store});

  // What a process killed in the middle of a batch leaves behind: the
  // checkpoint taken after the model asked for the calls, and ledger records
  // for the calls that had started.
  RunState st;
  st.run_id = "crashed";
  st.agent = "ops";
  st.task = "do it";
  st.phase = Phase::act;
  st.iterations = 1;
  st.batch = {call("c1", "pay", {{"what", "done-before"}}), call("c2", "pay", {{"what", "in-flight"}}),
              call("c3", "pay", {{"what", "not-started"}}), call("c4", "refresh", {{"what", "cache"}}),
              call("c5", "lookup", {{"what", "status"}})};
  st.outcomes.resize(st.batch.size());
  st.history = {Message::user("do it"), Message::assistant("", st.batch)};
  store->put(agentkit::state::scoped_key(ctx.scope, "runs/crashed"), st.to_json().dump());
  const agentkit::state::StoreLedger ledger(store, agentkit::state::scoped_key(ctx.scope, "ledger/crashed/"));
  agentkit::ToolRequest c1{.call_id = "c1", .name = "pay", .ledger_key = "1/c1"};
  ledger.end(c1, agentkit::ToolResult::ok("receipt 17"));
  store->put(agentkit::state::scoped_key(ctx.scope, "ledger/crashed/1/c2"), R"({"state":"intent","attempt":1})");
  store->put(agentkit::state::scoped_key(ctx.scope, "ledger/crashed/1/c4"), R"({"state":"intent","attempt":1})");
  CHECK(agentkit::interrupted_runs(*store, ctx.scope) == std::vector<std::string>{"crashed"});

  auto llm = FakeLLM::script({Turn{.content = "finished"}});
  ctx.models = [llm](std::string_view) { return llm; };
  auto result = agent.recover("crashed", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(pay.runs == 1);      // only c3, which never started
  CHECK(refresh.runs == 1);  // idempotent: an unfinished call runs again
  CHECK(lookup.runs == 1);   // read-only calls may re-run
  const auto seen = llm->requests().at(0).messages;
  REQUIRE(seen.size() == 7);
  CHECK(seen[2].text() == "receipt 17");
  CHECK(seen[3].text().find("outcome of this call is unknown") != std::string::npos);
  CHECK(seen[3].is_error);
  CHECK(seen[4].text() == "done: not-started");
  CHECK(seen[5].text() == "done: cache");
  CHECK(agentkit::interrupted_runs(*store, ctx.scope).empty());
  CHECK_FALSE(result.output.empty());
}

namespace {

// A read-only tool whose every answer is 3000 characters long.
agentkit::ToolPtr long_read() {
  return agentkit::tool("read_page")
      .doc("Read one page of the archive and return its full text.")
      .side_effecting(false)
      .params("page")
      .fn([](int page) { return std::string(3000, static_cast<char>('a' + page % 26)); });
}

std::vector<Turn> reading_turns(int pages) {
  std::vector<Turn> turns;
  for (int i = 0; i < pages; ++i) turns.push_back(Turn{.tool_calls = {call("p" + std::to_string(i), "read_page", {{"page", i}})}});
  return turns;
}

std::size_t stored_segments(agentkit::state::Store& store, const agentkit::Scope& scope, const std::string& run_id) {
  return store.list(agentkit::state::scoped_key(scope, "run-history/" + run_id + "#")).size();
}

}  // namespace

TEST_CASE("a long run's history is sealed into segments: each save writes only the new part", "[durable][history]") {
  auto store = std::make_shared<agentkit_test::RecordingStore>();
  auto turns = reading_turns(30);  // 30 results of 3000 characters: about 90 KB of history
  turns.push_back(Turn{.content = "read them all"});
  Agent agent("reader", "fake", "You read.", react({long_read()}), {.max_iterations = 40});
  auto ctx = make_test_ctx({.llm = FakeLLM::script(turns), .store = store});
  const auto result = agent.run("read the archive", ctx, {.run_id = "long"});
  REQUIRE(result.stop_reason == StopReason::answered);

  // Every document stays near the seal size although the history grows to 90 KB.
  const std::string key = agentkit::state::scoped_key(ctx.scope, "runs/long");
  CHECK(largest_write(*store, key) < 2 * agentkit::Checkpoint::kSealBytes);
  CHECK(stored_segments(store->inner, ctx.scope, "long") >= 4);
  const Json doc = Json::parse(store->get(key)->value);
  CHECK(doc.at("history_segments").size() == stored_segments(store->inner, ctx.scope, "long"));

  const auto loaded = agentkit::load_run(*store, ctx.scope, "long");
  REQUIRE(loaded);
  CHECK(loaded->history == result.state.history);
  CHECK(loaded->history.size() == 62);

  SECTION("recovering from a mid-run checkpoint reads the sealed part back and continues") {
    // A fresh store holding what a process killed mid-run leaves: the
    // document it last wrote and the segments that document lists.
    auto restarted = std::make_shared<InMemoryStore>();
    const std::string mid = first_sealed_checkpoint_at(*store, key, "act");
    REQUIRE_FALSE(mid.empty());
    restarted->put(key, mid);
    for (const auto& [k, entry] : store->inner.list(agentkit::state::scoped_key(ctx.scope, "run-history/"))) {
      restarted->put(k, entry.value);
    }
    const auto before = agentkit::load_run(*restarted, ctx.scope, "long");
    REQUIRE(before);
    REQUIRE(stored_segments(*restarted, ctx.scope, "long") > Json::parse(mid).at("history_segments").size());
    const std::size_t done_turns = static_cast<std::size_t>(before->iterations);
    std::vector<Turn> rest(turns.begin() + static_cast<std::ptrdiff_t>(done_turns), turns.end());
    auto again = make_test_ctx({.llm = FakeLLM::script(rest), .store = restarted});
    const auto recovered = agent.recover("long", again);
    REQUIRE(recovered.stop_reason == StopReason::answered);
    CHECK(recovered.state.history == result.state.history);
    CHECK(agentkit::load_run(*restarted, ctx.scope, "long")->history == result.state.history);
    // The segments the killed process wrote after that document are strays
    // for the recovered run, dropped when it ends; the listed ones remain.
    const Json final_doc = Json::parse(restarted->get(key)->value);
    CHECK(stored_segments(*restarted, ctx.scope, "long") == final_doc.at("history_segments").size());
  }
  SECTION("a listed segment that is missing makes the checkpoint unreadable, naming it") {
    const auto segments = store->inner.list(agentkit::state::scoped_key(ctx.scope, "run-history/long#"));
    store->erase(segments.front().first);
    try {
      agentkit::load_run(*store, ctx.scope, "long");
      FAIL("no error");
    } catch (const agentkit::CheckpointError& e) {
      CHECK_THAT(e.what(), Catch::Contains("checkpoint of run 'long' is unreadable") &&
                               Catch::Contains("history segment '" + segments.front().first + "' is missing"));
    }
  }
}

TEST_CASE("a suspended run with sealed history resumes by id in a fresh runtime", "[durable][history][approval]") {
  auto store = std::make_shared<InMemoryStore>();
  Counter counter;
  const auto make_agent = [&] {
    return Agent("reader", "fake", "You read, then file.", react({long_read(), counter.tool("file", true, false, true)}),
                 {.max_iterations = 20});
  };
  auto turns = reading_turns(12);
  turns.push_back(Turn{.tool_calls = {call("f1", "file", {{"what", "summary"}})}});
  auto first = make_test_ctx({.llm = FakeLLM::script(turns), .store = store});
  const auto suspended = make_agent().run("read and file", first, {.run_id = "filing"});
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  REQUIRE(stored_segments(*store, first.scope, "filing") >= 1);

  auto ctx = make_test_ctx({.llm = FakeLLM::script({Turn{.content = "filed"}}), .store = store});
  const auto resumed = make_agent().resume("filing", {{"f1", Decision::approve()}}, ctx);
  REQUIRE(resumed.stop_reason == StopReason::answered);
  CHECK(counter.runs == 1);
  REQUIRE(resumed.state.history.size() == suspended.state.history.size() + 2);
  CHECK(std::equal(suspended.state.history.begin(), suspended.state.history.end(), resumed.state.history.begin()));
  CHECK(agentkit::load_run(*store, ctx.scope, "filing")->history == resumed.state.history);
}

TEST_CASE("two writers sealing the same run: the loser's segment never replaces the winner's", "[durable][history]") {
  auto store = std::make_shared<InMemoryStore>();
  const agentkit::Scope scope;
  RunState st;
  st.run_id = "raced";
  st.agent = "a";
  st.task = "t";
  st.history = {Message::user("t")};
  agentkit::Checkpoint first(store, scope, "raced", 0);
  REQUIRE(first.save(st));

  // Two processes continue from the same version, each with its own long tail.
  const auto grown = [&](char fill) {
    RunState s = st;
    for (int i = 0; i < 8; ++i) s.history.push_back(Message::assistant(std::string(3000, fill)));
    return s;
  };
  agentkit::Checkpoint a(store, scope, "raced", first.version());
  agentkit::Checkpoint b(store, scope, "raced", first.version());
  CHECK(a.save(grown('a')));
  CHECK_FALSE(b.save(grown('b')));  // it wrote a segment, but the document did not move to it
  CHECK(stored_segments(*store, scope, "raced") == 2);
  const auto loaded = agentkit::load_run(*store, scope, "raced");
  REQUIRE(loaded);
  CHECK(loaded->history == grown('a').history);
}

TEST_CASE("idempotent() holds across processes: an identical call after a resume gets the first result",
          "[durable][ledger][idempotent]") {
  auto store = std::make_shared<InMemoryStore>();
  Counter send, refund;
  const auto make_agent = [&] {
    return Agent("clerk", "fake", "You send and refund.",
                 react({send.tool("send", true), refund.tool("refund", true, false, true)}));
  };
  auto first = make_test_ctx({.llm = FakeLLM::script({Turn{.tool_calls = {call("s1", "send", {{"what", "hello"}})}},
                                                      Turn{.tool_calls = {call("r1", "refund", {{"what", "A-1"}})}}}),
                              .store = store});
  const auto suspended = make_agent().run("send, then refund", first, {.run_id = "twice"});
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  REQUIRE(send.runs == 1);

  // Another process (its own invoker, so its own idempotent() table): the
  // model asks for the same send again, under a new call id.
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("s2", "send", {{"what", "hello"}})}}, Turn{.content = "sent"}});
  auto second = make_test_ctx({.llm = llm, .store = store});
  const auto resumed = make_agent().resume("twice", {{"r1", Decision::approve()}}, second);
  REQUIRE(resumed.stop_reason == StopReason::answered);
  CHECK(refund.runs == 1);
  CHECK(send.runs == 1);  // answered from the run's ledger, not sent twice
  CHECK(llm->requests().at(1).messages.back().text() == "done: hello");
  // dropped at the end
  CHECK(agentkit_test::only_finished_owner_left(*store, agentkit::state::keys::ledger(second.scope, "twice")));
}

TEST_CASE("StoreLedger: intent, outcome, replay", "[durable][ledger]") {
  auto store = std::make_shared<InMemoryStore>();
  const agentkit::state::StoreLedger ledger(store, "L/");
  Counter c;
  agentkit::ToolRequest once{.call_id = "a", .name = "pay", .tool = c.tool("pay", true), .ledger_key = "1/a"};
  agentkit::ToolRequest again{.call_id = "b", .name = "sync", .tool = c.tool("sync", true, true), .ledger_key = "1/b"};

  CHECK_FALSE(ledger.begin(once).has_value());  // first time: run it
  auto unknown = ledger.begin(once);            // started, never ended
  REQUIRE(unknown);
  CHECK(unknown->status == agentkit::ToolResult::Status::outcome_unknown);
  ledger.end(once, agentkit::ToolResult::error("Tool failed: card declined"));
  auto failed = ledger.begin(once);
  REQUIRE(failed);
  CHECK(failed->status == agentkit::ToolResult::Status::error);
  CHECK(failed->text == "Tool failed: card declined");

  CHECK_FALSE(ledger.begin(again).has_value());
  CHECK_FALSE(ledger.begin(again).has_value());  // idempotent: may run again
  ledger.end(again, agentkit::ToolResult::ok(Json{{"synced", 3}}));
  auto replay = ledger.begin(again);
  REQUIRE(replay);
  CHECK(replay->value == Json{{"synced", 3}});

  // An unknown outcome is replayed as unknown, not as an error.
  agentkit::ToolRequest lost{.call_id = "c", .name = "pay", .tool = c.tool("pay", true), .ledger_key = "1/c"};
  CHECK_FALSE(ledger.begin(lost).has_value());
  ledger.end(lost, agentkit::ToolResult::outcome_unknown("timed out; it may or may not have taken effect"));
  auto still_unknown = ledger.begin(lost);
  REQUIRE(still_unknown);
  CHECK(still_unknown->status == agentkit::ToolResult::Status::outcome_unknown);
  CHECK(still_unknown->text == "timed out; it may or may not have taken effect");

  // Results by what the call did: ok results only, and only for that exact call.
  CHECK_FALSE(ledger.recall("pay|{\"amount\":5}").has_value());
  ledger.remember("pay|{\"amount\":5}", agentkit::ToolResult::ok(Json{{"receipt", 9}}));
  ledger.remember("pay|{\"amount\":6}", agentkit::ToolResult::error("declined"));
  auto kept = ledger.recall("pay|{\"amount\":5}");
  REQUIRE(kept);
  CHECK(kept->value == Json{{"receipt", 9}});
  CHECK_FALSE(ledger.recall("pay|{\"amount\":6}").has_value());
  // A record whose call differs (a hash collision) reads as nothing remembered.
  for (const auto& [key, entry] : store->list("L/same/")) {
    Json record = Json::parse(entry.value);
    record["call"] = "something else";
    store->put(key, record.dump());
  }
  CHECK_FALSE(ledger.recall("pay|{\"amount\":5}").has_value());

  ledger.clear();
  CHECK(store->list("L/").empty());
}

TEST_CASE("a checkpoint's ledger is fenced: a holder that lost the run never runs a call the new one ran", "[durable][ledger]") {
  // A fleet worker paused past its lease (A) while another (B) took its run
  // over, ran its calls and finished it, which drops the ledger's records.
  auto store = std::make_shared<InMemoryStore>();
  Counter c;
  agentkit::ToolRequest pay{.call_id = "a", .name = "pay", .tool = c.tool("pay", true), .ledger_key = "1/a"};
  agentkit::ToolRequest ship{.call_id = "b", .name = "ship", .tool = c.tool("ship", true), .ledger_key = "1/b"};
  RunState state;
  state.run_id = "r1";
  agentkit::Checkpoint a(store, {}, "r1", 0);
  REQUIRE(a.save(state));
  CHECK_FALSE(a.ledger()->begin(ship).has_value());  // A starts `ship` while it holds the run

  agentkit::Checkpoint b(store, {}, "r1", a.version());  // B recovers the run
  REQUIRE(b.save(state));
  // `ship` may have happened: B does not run it again.
  const auto unknown = b.ledger()->begin(ship);
  REQUIRE(unknown);
  CHECK(unknown->status == agentkit::ToolResult::Status::outcome_unknown);
  // A wakes and reaches `pay`: the run is B's, so A gives the call back unrun...
  const auto refused = a.ledger()->begin(pay);
  REQUIRE(refused);
  CHECK(refused->status == agentkit::ToolResult::Status::error);
  CHECK_THAT(refused->text, Catch::Contains("taken over"));
  // ...and B, which owns it, runs it once.
  CHECK_FALSE(b.ledger()->begin(pay).has_value());
  b.ledger()->end(pay, agentkit::ToolResult::ok(Json("paid")));

  // B finishes: the ledger's records are dropped, but the owner's, marked
  // finished. A, still paused at `pay`, finds its key free but the run not
  // its own.
  b.tidy();
  CHECK(agentkit_test::only_finished_owner_left(*store, agentkit::state::keys::ledger({}, "r1")));
  const auto after_tidy = a.ledger()->begin(pay);
  REQUIRE(after_tidy);
  CHECK(after_tidy->status == agentkit::ToolResult::Status::error);

  // A call given back unrun counts as never started: the run's next holder runs it.
  agentkit::ToolRequest refund{.call_id = "d", .name = "refund", .tool = c.tool("refund", true), .ledger_key = "2/d"};
  agentkit::Checkpoint c1(store, {}, "r2", 0);
  REQUIRE(c1.save(state));
  agentkit::Checkpoint c2(store, {}, "r2", c1.version());
  REQUIRE(c2.save(state));
  REQUIRE(c1.ledger()->begin(refund));  // fenced out
  CHECK_FALSE(c2.ledger()->begin(refund).has_value());
}

namespace {

// A store that runs `meanwhile` once, just before the first write (put or
// compare-and-set) of a key holding `key_part` goes through: what another
// process does while this one is paused just before that write.
class MeanwhileStore final : public agentkit::state::Store {
 public:
  MeanwhileStore(std::shared_ptr<agentkit::state::Store> inner, std::string key_part, std::function<void()> meanwhile)
      : inner_(std::move(inner)), key_part_(std::move(key_part)), meanwhile_(std::move(meanwhile)) {}
  std::optional<agentkit::state::Entry> get(std::string_view key) override { return inner_->get(key); }
  std::int64_t put(std::string_view key, std::string value, Ttl ttl) override {
    before(key);
    return inner_->put(key, std::move(value), ttl);
  }
  std::optional<std::int64_t> compare_and_set(std::string_view key, std::int64_t expected, std::string value,
                                              Ttl ttl) override {
    before(key);
    return inner_->compare_and_set(key, expected, std::move(value), ttl);
  }
  bool erase(std::string_view key) override { return inner_->erase(key); }
  std::vector<std::pair<std::string, agentkit::state::Entry>> list(std::string_view prefix) override {
    return inner_->list(prefix);
  }

 private:
  void before(std::string_view key) {
    if (key.find(key_part_) == std::string_view::npos || !meanwhile_) return;
    std::exchange(meanwhile_, nullptr)();
  }

  std::shared_ptr<agentkit::state::Store> inner_;
  std::string key_part_;
  std::function<void()> meanwhile_;
};

}  // namespace

TEST_CASE("a holder paused between its first save and its owner record never takes the run back", "[durable][ledger]") {
  // A's save claims the run; before A names itself in the ledger's owner
  // record, it is paused past its lease and B takes the run over. A's late
  // write must not make the run A's again.
  auto store = std::make_shared<InMemoryStore>();
  Counter c;
  agentkit::ToolRequest pay{.call_id = "a", .name = "pay", .tool = c.tool("pay", true), .ledger_key = "1/a"};
  agentkit::ToolRequest ship{.call_id = "b", .name = "ship", .tool = c.tool("ship", true), .ledger_key = "1/b"};
  RunState state;
  state.run_id = "r1";
  std::optional<agentkit::Checkpoint> b;
  const auto b_takes_over = [&] {
    b.emplace(store, agentkit::Scope{}, "r1", agentkit::state::load_stored_run(*store, {}, "r1").value().version);
    REQUIRE(b->save(state));
  };

  SECTION("B ran a call and finished the run: A finds the call's key free, but the run no one's") {
    agentkit::Checkpoint a(std::make_shared<MeanwhileStore>(store, "/owner",
                                                            [&] {
                                                              b_takes_over();
                                                              REQUIRE_FALSE(b->ledger()->begin(pay).has_value());
                                                              b->ledger()->end(pay, agentkit::ToolResult::ok(Json("paid")));
                                                              b->tidy();
                                                            }),
                           {}, "r1", 0);
    REQUIRE(a.save(state));  // A's document landed before B's
    REQUIRE(b);
    const auto again = a.ledger()->begin(pay);
    REQUIRE(again);  // not run a second time
    CHECK(again->status == agentkit::ToolResult::Status::error);
    CHECK_THAT(again->text, Catch::Contains("taken over"));
  }
  SECTION("B holds the run: its calls run, A's are given back") {
    agentkit::Checkpoint a(std::make_shared<MeanwhileStore>(store, "/owner", b_takes_over), {}, "r1", 0);
    REQUIRE(a.save(state));
    REQUIRE(b);
    CHECK_FALSE(b->ledger()->begin(ship).has_value());
    const auto refused = a.ledger()->begin(pay);
    REQUIRE(refused);
    CHECK(refused->status == agentkit::ToolResult::Status::error);
    CHECK_FALSE(b->ledger()->begin(pay).has_value());
  }
  SECTION("an owner record edited by hand names no holder: the next save claims the run again") {
    agentkit::Checkpoint a(store, {}, "r1", 0);
    REQUIRE(a.save(state));
    const std::string owner = agentkit::state::keys::ledger({}, "r1") + "owner";
    int step = 1;
    for (const char* edited : {"not json", R"({"finished":"yes","writer":7,"version":"9"})", "[]"}) {
      store->put(owner, edited);
      ship.ledger_key = std::to_string(step++) + "/b";
      REQUIRE(a.ledger()->begin(ship));  // no longer A's: given back
      agentkit::Checkpoint next(store, {}, "r1", agentkit::state::load_stored_run(*store, {}, "r1").value().version);
      REQUIRE(next.save(state));
      CHECK_FALSE(next.ledger()->begin(ship).has_value());
      next.ledger()->end(ship, agentkit::ToolResult::ok(Json("shipped")));
    }
  }
  CHECK(c.runs == 0);  // begin() decides; no tool body ran here
}

TEST_CASE("a sub-run's holder paused before its owner record never runs a call after its parent finished",
          "[durable][ledger]") {
  // As above, for as_tool's sub-run "p/1/w", whose ledger lies under its
  // parent's: A claims the sub-run and is paused before its owner record;
  // meanwhile B runs the sub-run's call, finishes the sub-run and then the
  // parent, whose tidy must not drop the sub-run's finished owner record.
  auto store = std::make_shared<InMemoryStore>();
  Counter c;
  agentkit::ToolRequest pay{.call_id = "t", .name = "pay", .tool = c.tool("pay", true), .ledger_key = "3/t"};
  RunState parent_state, state;
  parent_state.run_id = "p";
  state.run_id = "p/1/w";
  agentkit::Checkpoint parent(store, {}, "p", 0);
  REQUIRE(parent.save(parent_state));
  std::optional<agentkit::Checkpoint> b;
  agentkit::Checkpoint a(std::make_shared<MeanwhileStore>(
                             store, "p/1/w/owner",
                             [&] {
                               b.emplace(store, agentkit::Scope{}, "p/1/w",
                                         agentkit::state::load_stored_run(*store, {}, "p/1/w").value().version);
                               REQUIRE(b->save(state));
                               REQUIRE_FALSE(b->ledger()->begin(pay).has_value());
                               b->ledger()->end(pay, agentkit::ToolResult::ok(Json("paid")));
                               b->tidy();
                               parent.tidy();
                             }),
                         {}, "p/1/w", 0);
  REQUIRE(a.save(state));
  REQUIRE(b);
  const std::string owner = agentkit::state::keys::ledger({}, "p/1/w") + "owner";
  CHECK(store->get(owner).value().value == R"({"finished":true})");
  const auto again = a.ledger()->begin(pay);
  REQUIRE(again);  // not run a second time
  CHECK(again->status == agentkit::ToolResult::Status::error);
  CHECK_THAT(again->text, Catch::Contains("taken over"));

  // The parent's tidy drops the sub-run's other records, and fences a
  // sub-run's owner record it finds unfinished (its parent is over).
  store->put(owner, R"({"version":9,"writer":"x"})");
  store->put(agentkit::state::keys::ledger({}, "p/1/w") + "4/u", R"({"state":"intent","attempt":1})");
  parent.tidy();
  CHECK(store->get(owner).value().value == R"({"finished":true})");
  std::vector<std::string> left;
  for (const auto& [key, entry] : store->list(agentkit::state::keys::ledger({}, "p"))) {
    if (entry.value == R"({"finished":true})") left.push_back(key);
  }
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{owner, agentkit::state::keys::ledger({}, "p") + "owner"});
  CHECK(store->list(agentkit::state::keys::ledger({}, "p")).size() == 2);
  CHECK(c.runs == 0);
}

TEST_CASE("a run is resumed and recovered only by the agent it started under", "[durable][approval]") {
  // A second agent with a tool of the same name that needs no approval: had
  // it driven the run, the refund awaiting a decision would run unapproved.
  auto store = std::make_shared<InMemoryStore>();
  Counter billing_tools, support_tools;
  const Agent billing("billing", "fake", "You handle refunds.", react({billing_tools.tool("refund", true, false, true)}));
  const Agent support("support", "fake", "You help.", react({support_tools.tool("refund", true)}));
  auto script = [] {
    return FakeLLM::script({Turn{.tool_calls = {call("c1", "refund", {{"what", "A-1"}})}}, Turn{.content = "done"}});
  };
  const auto refused = [](const auto& attempt) {
    try {
      attempt();
    } catch (const agentkit::Error& e) {
      CHECK(e.code() == agentkit::ErrorCode::invalid_argument);
      CHECK_THAT(e.what(), Catch::Contains("started by agent 'billing', not 'support'"));
      return true;
    }
    return false;
  };

  SECTION("a suspended run, by id and as a state handed back") {
    auto ctx = make_test_ctx({.llm = script(), .store = store});
    auto suspended = billing.run("refund A-1", ctx, {.run_id = "r1"});
    REQUIRE(suspended.stop_reason == StopReason::suspended);
    const std::string before = store->get(agentkit::state::keys::run({}, "r1")).value().value;
    CHECK(refused([&] { support.resume("r1", {{"c1", Decision::approve()}}, ctx); }));
    CHECK(refused([&] { support.resume(suspended.state, {{"c1", Decision::approve()}}, ctx); }));
    CHECK(refused([&] { support.recover("r1", ctx); }));
    CHECK(store->get(agentkit::state::keys::run({}, "r1")).value().value == before);  // nothing ran or was saved
    CHECK(billing.resume("r1", {{"c1", Decision::approve()}}, ctx).output == "done");
  }
  SECTION("a signed state without a store") {
    auto ctx = make_test_ctx({.llm = script()});
    ctx.store = nullptr;
    ctx.state_key = std::string(32, 'k');
    auto suspended = billing.run("refund A-1", ctx);
    REQUIRE(suspended.stop_reason == StopReason::suspended);
    CHECK(refused([&] { support.resume(suspended.state, {{"c1", Decision::approve()}}, ctx); }));
    CHECK(billing.resume(suspended.state, {{"c1", Decision::approve()}}, ctx).output == "done");
  }
  SECTION("an interrupted run") {
    auto ctx = make_test_ctx({.llm = script(), .store = store});
    auto handle = billing.start("refund A-1", ctx, {.run_id = "r2"});  // claimed, not yet advanced
    auto other = make_test_ctx({.llm = script(), .store = store});
    CHECK(refused([&] { support.recover("r2", other); }));
    CHECK(billing.recover("r2", other).stop_reason == StopReason::suspended);
    CHECK(handle.wait().stop_reason == StopReason::failed);  // taken over
  }
  CHECK(billing_tools.runs + support_tools.runs <= 1);
  CHECK(support_tools.runs == 0);
}

TEST_CASE("a run that another process took over stops advancing", "[durable]") {
  auto store = std::make_shared<InMemoryStore>();
  Counter counter;
  Agent agent("clerk", "fake", "You take notes.", react({counter.tool("note", true)}));
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "note", {{"what", "a"}})}}, Turn{.content = "noted"}});
  auto ctx = make_test_ctx({.llm = llm, .store = store});
  auto handle = agent.start("note", ctx, {.run_id = "r"});  // claimed, not yet advanced
  {
    auto other = make_test_ctx({.llm = FakeLLM::script({Turn{.content = "recovered"}}), .store = store});
    CHECK(agent.recover("r", other).output == "recovered");
  }
  const auto result = handle.wait();
  CHECK(result.stop_reason == StopReason::failed);
  CHECK_THAT(result.failure.value().message, Catch::Contains("taken over by another process"));
  CHECK(result.failure->code == agentkit::ErrorCode::aborted);
  CHECK(counter.runs == 0);
}

TEST_CASE("sessions: a new run continues the conversation", "[session]") {
  auto store = std::make_shared<InMemoryStore>();
  Agent agent("pal", "fake", "You chat.", react({}));
  auto llm = FakeLLM::script({Turn{.content = "Hello Ada."}, Turn{.content = "Your name is Ada."}});
  auto ctx = make_test_ctx({.llm = llm, .store = store});
  agent.run("My name is Ada.", ctx, {.session = "u1"});
  auto second = agent.run("What is my name?", ctx, {.session = "u1"});
  CHECK(second.output == "Your name is Ada.");
  const auto seen = llm->requests().at(1).messages;
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].text() == "My name is Ada.");
  CHECK(seen[1].text() == "Hello Ada.");
  CHECK(seen[2].text() == "What is my name?");
  CHECK(agentkit::session_history(*store, ctx.scope, "u1").size() == 4);
  // Sessions are per scope, and can be forgotten.
  CHECK(agentkit::session_history(*store, agentkit::Scope{.org_id = 9}, "u1").empty());
  agentkit::clear_session(*store, ctx.scope, "u1");
  CHECK(agentkit::session_history(*store, ctx.scope, "u1").empty());
}

TEST_CASE("sessions: a suspended run joins its session when it ends", "[session][approval]") {
  auto store = std::make_shared<InMemoryStore>();
  Counter counter;
  Agent agent("billing", "fake", "You handle refunds.", react({counter.tool("refund", true, false, true)}));
  auto ctx = make_test_ctx({.llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "refund", {{"what", "x"}})}},
                                                    Turn{.content = "refunded"}}),
                            .store = store});
  auto suspended = agent.run("refund x", ctx, {.session = "s"});
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  CHECK(agentkit::session_history(*store, ctx.scope, "s").empty());
  auto done = agent.resume(suspended.state.run_id, {{"c1", Decision::approve()}}, ctx);
  REQUIRE(done.stop_reason == StopReason::answered);
  const auto history = agentkit::session_history(*store, ctx.scope, "s");
  REQUIRE(history.size() == 4);
  CHECK(history[2].role == Role::tool);
  // Appending the same run again (a recovery replaying its end) changes nothing.
  agentkit::append_to_session(*store, ctx.scope, done.state, nullptr);
  CHECK(agentkit::session_history(*store, ctx.scope, "s").size() == 4);
}

TEST_CASE("sessions: concurrent runs of one session both land", "[session]") {
  auto store = std::make_shared<InMemoryStore>();
  Agent agent("pal", "fake", "You chat.", react({}));
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto ctx = make_test_ctx({.llm = FakeLLM::script({Turn{.content = "a" + std::to_string(i)}}), .store = store});
      agent.run("q" + std::to_string(i), ctx, {.session = "shared"});
    });
  }
  for (auto& t : threads) t.join();
  CHECK(agentkit::session_history(*store, agentkit::Scope{}, "shared").size() == 16);
}

TEST_CASE("history policies cut at user turns and keep tool calls with their results", "[session]") {
  std::vector<Message> history;
  for (int turn = 0; turn < 4; ++turn) {
    const std::string n = std::to_string(turn);
    history.push_back(Message::user("q" + n));
    history.push_back(Message::assistant("", {call("c" + n, "t", Json::object())}));
    history.push_back(Message::tool_result("c" + n, "t", "r" + n));
    history.push_back(Message::assistant("a" + n));
  }
  auto kept = agentkit::keep_last_turns(2)(history);
  REQUIRE(kept.size() == 8);
  CHECK(kept.front().text() == "q2");
  CHECK(kept[1].tool_calls.at(0).id == "c2");
  CHECK(kept[2].tool_call_id == "c2");
  CHECK(agentkit::keep_last_turns(10)(history).size() == 16);

  std::size_t summarised = 0;
  auto folded = agentkit::summarize_older(1, [&](const std::vector<Message>& older) {
    summarised = older.size();
    return "Ada asked three questions.";
  })(history);
  CHECK(summarised == 12);
  REQUIRE(folded.size() == 4);
  CHECK(folded.front().role == Role::user);
  CHECK(folded.front().text() == "Summary of the earlier conversation: Ada asked three questions.\n\nq3");
  CHECK(folded[2].tool_call_id == "c3");

  // The agent applies its policy when the run's messages join the session.
  auto store = std::make_shared<InMemoryStore>();
  Agent agent("pal", "fake", "You chat.", react({}), {.history_policy = agentkit::keep_last_turns(1)});
  auto ctx = make_test_ctx({.llm = FakeLLM::script({Turn{.content = "one"}, Turn{.content = "two"}}), .store = store});
  agent.run("first", ctx, {.session = "p"});
  agent.run("second", ctx, {.session = "p"});
  const auto stored = agentkit::session_history(*store, ctx.scope, "p");
  REQUIRE(stored.size() == 2);
  CHECK(stored[0].text() == "second");
}

TEST_CASE("a recovered parent finds its sub-run again: the sub-run's effects happen once", "[durable][as_tool]") {
  auto store = std::make_shared<agentkit_test::RecordingStore>();
  Counter counter;
  auto researcher = std::make_shared<const Agent>("researcher", "fake", "You research.",
                                                  react({counter.tool("order_sample", true)}));
  Agent lead("lead", "fake", "You lead.",
             // Declared read-only so the lead's ledger does not answer the call:
             // what is pinned here is the sub-run found again by its id.
             react({agentkit::as_tool(researcher, {.name = "research",
                                                   .description = "Delegate a research task to the researcher.",
                                                   .side_effecting = false})}));
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "research", {{"task", "find a kit"}})}},  // lead
      Turn{.tool_calls = {call("s1", "order_sample", {{"what", "kit"}})}},     // researcher
      Turn{.content = "sample ordered"},                                       // researcher
      Turn{.content = "all done"},                                             // lead
  });
  auto ctx = make_test_ctx({.llm = llm, .store = store});
  REQUIRE(lead.run("go", ctx, {.run_id = "lead-1"}).output == "all done");
  REQUIRE(counter.runs == 1);
  CHECK(agentkit::load_run(*store, ctx.scope, "lead-1/1/c1"));  // the sub-run's id follows from the call

  // The lead's process dies right after the checkpoint that asked for the
  // call; the sub-run had finished.
  const std::string key = agentkit::state::scoped_key(ctx.scope, "runs/lead-1");
  const std::string act = checkpoint_at(*store, key, "act");
  REQUIRE_FALSE(act.empty());
  store->inner.put(key, act);

  auto llm2 = FakeLLM::script({Turn{.content = "all done again"}});
  auto later = make_test_ctx({.llm = llm2, .store = store});
  auto again = lead.recover("lead-1", later);
  CHECK(again.output == "all done again");
  CHECK(counter.runs == 1);  // the sub-run was found, not started over
  CHECK(llm2->calls() == 1);
  CHECK(llm2->requests().at(0).messages.back().text() == "sample ordered");
}

namespace {

// A lead that delegates to a researcher through a side-effecting as_tool
// call; the researcher's order_sample tool counts its runs on `counter`.
Agent research_lead(Counter& counter) {
  auto researcher = std::make_shared<const Agent>("researcher", "fake", "You research.",
                                                  react({counter.tool("order_sample", true)}));
  return Agent("lead", "fake", "You lead.",
               react({agentkit::as_tool(researcher, {.name = "research",
                                                     .description = "Delegate a research task to the researcher.",
                                                     .side_effecting = true})}));
}

// The lead ("lead-1") stopped, interrupted, because its sub-run was not
// this attempt's (`why`), with its call still asked and not answered: not a
// run that ended with the call's error.
void check_lead_stopped(const agentkit::RunResult& stopped, agentkit::state::Store& store, const char* why) {
  CHECK(stopped.stop_reason == StopReason::failed);
  REQUIRE(stopped.failure);
  CHECK(stopped.failure->code == agentkit::ErrorCode::aborted);
  CHECK_THAT(stopped.failure->message, Catch::Contains("interrupted") && Catch::Contains(why));
  const auto kept = agentkit::load_run(store, {}, "lead-1");
  REQUIRE(kept);
  CHECK(kept->phase == Phase::act);
  CHECK_FALSE(kept->outcomes.at(0).has_value());
}

}  // namespace

TEST_CASE("a sub-run another caller claimed first stops its parent, never fails the call", "[durable][as_tool]") {
  auto inner = std::make_shared<InMemoryStore>();
  Counter counter;
  const Agent lead = research_lead(counter);
  // The sub-run's third write (after its call) is cut: the lead stops with
  // the sub-run mid-way in the store.
  auto ctx = make_test_ctx({.llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "research", {{"task", "find a kit"}})}},
                                                    Turn{.tool_calls = {call("s1", "order_sample", {{"what", "kit"}})}}}),
                            .store = std::make_shared<agentkit_test::CutStore>(inner, "runs/lead-1/1/c1", 3)});
  REQUIRE(lead.run("go", ctx, {.run_id = "lead-1"}).stop_reason == StopReason::failed);
  REQUIRE(counter.runs == 1);

  // The lead's recovery reaches the sub-run, whose claim another caller wins.
  auto racing = std::make_shared<agentkit_test::ClaimedFirstStore>(inner, "runs/lead-1/1/c1");
  auto llm = FakeLLM::script({Turn{.content = "the research failed"}});  // never asked
  auto later = make_test_ctx({.llm = llm, .store = racing});
  const auto stopped = lead.recover("lead-1", later);
  CHECK_FALSE(racing->armed);
  check_lead_stopped(stopped, *inner, "another caller");
  CHECK(llm->calls() == 0);  // the lead's model never read a failure that was not one

  // The next recovery finds the sub-run and finishes both, the sample ordered once.
  auto last = make_test_ctx({.llm = FakeLLM::script({Turn{.content = "sample ordered"}, Turn{.content = "all done"}}),
                            .store = inner});
  CHECK(lead.recover("lead-1", last).output == "all done");
  CHECK(counter.runs == 1);
}

TEST_CASE("a sub-run another attempt created first stops its parent, never fails the call", "[durable][as_tool]") {
  // The parent's stale attempt (paused past its lease) starts the sub-run
  // after the attempt that took the parent over created it: the stale one
  // stops, recording no error for the call that a recovery would read back.
  auto inner = std::make_shared<InMemoryStore>();
  Counter counter;
  const Agent lead = research_lead(counter);
  auto racing = std::make_shared<agentkit_test::ClaimedFirstStore>(inner, "runs/lead-1/1/c1");
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "research", {{"task", "find a kit"}})}},
                              Turn{.content = "the research failed"}});
  auto ctx = make_test_ctx({.llm = llm, .store = racing});
  const auto stopped = lead.run("go", ctx, {.run_id = "lead-1"});
  CHECK_FALSE(racing->armed);
  check_lead_stopped(stopped, *inner, "already exists");
  CHECK(llm->calls() == 1);  // the lead's model never read a failure that was not one
  const auto record = inner->get(agentkit::state::keys::ledger({}, "lead-1") + "1/c1");
  REQUIRE(record);  // the call's intent, no outcome
  CHECK(Json::parse(record->value).value("state", "") == "intent");
  CHECK(counter.runs == 0);
}

TEST_CASE("a sub-run whose store write is cut stops its parent, whose recovery finishes both with effects once",
          "[durable][as_tool]") {
  // Writes of the sub-run's document: its claim (1), after its model asked
  // for the call (2), after the call (3).
  const int cut_at = GENERATE(1, 3);
  INFO("the sub-run's write #" << cut_at << " is cut");
  auto inner = std::make_shared<InMemoryStore>();
  Counter counter;
  const Agent lead = research_lead(counter);
  std::vector<Turn> first{Turn{.tool_calls = {call("c1", "research", {{"task", "find a kit"}})}}};  // lead
  std::vector<Turn> rest{Turn{.tool_calls = {call("s1", "order_sample", {{"what", "kit"}})}},       // researcher
                         Turn{.content = "sample ordered"},                                          // researcher
                         Turn{.content = "all done"}};                                               // lead
  if (cut_at == 3) first.push_back(rest.front()), rest.erase(rest.begin());
  auto ctx = make_test_ctx({.llm = FakeLLM::script(first),
                            .store = std::make_shared<agentkit_test::CutStore>(inner, "runs/lead-1/1/c1", cut_at)});
  const auto stopped = lead.run("go", ctx, {.run_id = "lead-1"});
  REQUIRE(stopped.stop_reason == StopReason::failed);
  REQUIRE(stopped.failure);
  CHECK(stopped.failure->code == agentkit::ErrorCode::unavailable);
  CHECK_THAT(stopped.failure->message, Catch::Contains("interrupted"));
  CHECK(counter.runs == (cut_at == 3 ? 1 : 0));
  // What the result says of the call: it may have run (it did, at write #3).
  const auto answered = std::find_if(stopped.state.history.begin(), stopped.state.history.end(),
                                     [](const agentkit::Message& m) { return m.tool_call_id == "c1"; });
  REQUIRE(answered != stopped.state.history.end());
  CHECK(stopped.state.outcomes.empty());
  CHECK_THAT(answered->text(), !Catch::StartsWith("Not run"));
  // The lead stopped where its store has it, with the call asked and not
  // answered: not a run that ended with the call's error.
  const auto kept = agentkit::load_run(*inner, {}, "lead-1");
  REQUIRE(kept);
  CHECK(kept->phase == Phase::act);
  CHECK_FALSE(kept->outcomes.at(0).has_value());

  // A host recovering every interrupted run recovers the lead; the sub-run
  // is the lead's to recover (its run id names the lead's call).
  CHECK(agentkit::interrupted_runs(*inner, {}) == std::vector<std::string>{"lead-1"});
  auto later = make_test_ctx({.llm = FakeLLM::script(rest), .store = inner});
  if (cut_at == 3) CHECK_THROWS_AS(lead.recover("lead-1/1/c1", later), agentkit::Error);  // the researcher's run
  const auto again = lead.recover("lead-1", later);
  CHECK(again.output == "all done");
  CHECK(counter.runs == 1);  // the sub-run's call ran once: started afresh, or answered from its ledger
  const auto sub = agentkit::load_run(*inner, {}, "lead-1/1/c1");
  REQUIRE(sub);
  CHECK(sub->output == "sample ordered");
}
