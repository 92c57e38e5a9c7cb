// Record and replay (spec 002's Agent Replay): cassettes, replay classes,
// mismatches, sub-runs, approvals, fork and diff.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/errors.h>
#include <agentkit/executor.h>
#include <agentkit/function_tool.h>
#include <agentkit/replay.h>
#include <agentkit/state/store.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/replay.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::Cassette;
using agentkit::CassetteError;
using agentkit::Decision;
using agentkit::Json;
using agentkit::Recorder;
using agentkit::ReplayClass;
using agentkit::ReplayMismatch;
using agentkit::StopReason;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using agentkit_test::call;

namespace {

struct Counts {
  std::atomic<int> lookups{0};
  std::atomic<int> refunds{0};
  std::atomic<int> upserts{0};
};

agentkit::ToolPtr lookup(Counts& n) {
  return agentkit::tool("city_population")
      .doc("Look up the most recent census population for a named city.")
      .side_effecting(false)
      .params("city")
      .fn([&n](const std::string& city) {
        ++n.lookups;
        return city == "Lisbon" ? 545000 : 231000;
      });
}

agentkit::ToolPtr refund(Counts& n, bool approval = false) {
  auto b = agentkit::tool("refund").doc("Issue a refund against a customer order and return its id.").side_effecting(true);
  if (approval) b = std::move(b).requires_approval();
  return std::move(b).params("order_id").fn([&n](const std::string& id) {
    ++n.refunds;
    return "refund R-" + id;
  });
}

agentkit::ToolPtr upsert(Counts& n) {
  return agentkit::tool("upsert_user")
      .doc("Create or update a user record by id; repeating it is safe.")
      .side_effecting(true)
      .idempotent()
      .params("user_id")
      .fn([&n](const std::string& id) {
        ++n.upserts;
        return "upserted " + id;
      });
}

std::vector<Turn> lisbon_script() {
  return {Turn{.tool_calls = {call("c1", "city_population", {{"city", "Lisbon"}}), call("c2", "refund", {{"order_id", "A-1"}}),
                              call("c3", "upsert_user", {{"user_id", "u7"}})}},
          Turn{.content = "Lisbon has 545,000 residents; A-1 refunded."}};
}

// Records the Lisbon run on a thread pool (calls finish in any order).
Cassette record_lisbon(Counts& n, agentkit::RunResult* out = nullptr) {
  Agent agent("atlas", "fake", "You answer questions about cities.", react({lookup(n), refund(n), upsert(n)}));
  auto pool = std::make_shared<agentkit::ThreadPoolExecutor>(3);
  auto ctx = make_test_ctx({.llm = FakeLLM::script(lisbon_script()), .executor = pool});
  Recorder recorder;
  recorder.attach(ctx);
  auto result = agent.run("How big is Lisbon? Also refund A-1.", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  if (out) *out = result;
  return recorder.cassette();
}

std::string temp_path(const char* name) { return (std::filesystem::temp_directory_path() / name).string(); }

}  // namespace

TEST_CASE("a recorded FakeLLM run replays offline: same answer, reads run again, effects injected",
          "[replay]") {
  Counts n;
  agentkit::RunResult recorded;
  const Cassette cassette = record_lisbon(n, &recorded);
  CHECK(n.refunds == 1);
  REQUIRE(cassette.model_steps.size() == 2);
  CHECK(cassette.model_steps[0].run == "run1");
  CHECK(cassette.model_steps[1].step == 2);
  REQUIRE(cassette.tool_steps.size() == 3);
  const auto* refund_step = cassette.find_tool("run1", "1/c2");
  REQUIRE(refund_step);
  CHECK(refund_step->replay_class == "side_effecting");
  CHECK(cassette.find_tool("run1", "1/c3")->replay_class == "idempotent");
  CHECK(cassette.find_tool("run1", "1/c1")->replay_class == "read_only");

  // Through a file and a store, then replayed with no model at all.
  const std::string path = temp_path("agentkit_replay_lisbon.json");
  cassette.save(path);
  auto store = std::make_shared<agentkit::state::InMemoryStore>();
  Cassette::load(path).save(*store, "cassettes/lisbon");
  Counts m;
  Agent agent("atlas", "fake", "You answer questions about cities.", react({lookup(m), refund(m), upsert(m)}));
  auto ctx = make_test_ctx({.executor = std::make_shared<agentkit::ThreadPoolExecutor>(3)});
  auto replayer = agentkit::testing::replay(ctx, Cassette::load(*store, "cassettes/lisbon"));
  auto result = agent.run("How big is Lisbon? Also refund A-1.", ctx);
  CHECK(result.stop_reason == StopReason::answered);
  CHECK(result.output == recorded.output);
  CHECK(m.lookups == 1);   // read_only: ran again
  CHECK(m.refunds == 0);   // side_effecting: never run
  CHECK(m.upserts == 0);   // idempotent: injected by default
  CHECK(replayer.injected() == 2);
  CHECK(replayer.ran() == 1);
  CHECK(result.state.history.at(3).text().find("R-A-1") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("a cassette holds no API key: requests are what agentkit saw, not HTTP", "[replay]") {
  Counts n;
  const std::string text = record_lisbon(n).to_json().dump();
  CHECK(text.find("authorization") == std::string::npos);
  CHECK(text.find("\"system\":\"You answer questions about cities.\"") != std::string::npos);
  CHECK(text.find("\"tools\":[{\"description\"") != std::string::npos);
}

TEST_CASE("replay class comes from the declaration: metadata, then reads, idempotent, side_effecting",
          "[replay][replay_class]") {
  Counts n;
  auto request = [](agentkit::ToolPtr tool, Json args = Json::object()) {
    agentkit::ToolRequest r;
    r.name = tool->name();
    r.tool = tool;
    r.arguments = std::move(args);
    return r;
  };
  CHECK(agentkit::replay_class(request(lookup(n))) == ReplayClass::read_only);
  CHECK(agentkit::replay_class(request(upsert(n))) == ReplayClass::idempotent);
  CHECK(agentkit::replay_class(request(refund(n))) == ReplayClass::side_effecting);
  auto marked = agentkit::tool("weather")
                    .doc("Fetch the current weather for a city from the weather service.")
                    .side_effecting(true)
                    .metadata({{"replay_class", "read_only"}})
                    .params("city")
                    .fn([](const std::string&) { return 1; });
  CHECK(agentkit::replay_class(request(marked)) == ReplayClass::read_only);
  auto bad = agentkit::tool("weather")
                 .doc("Fetch the current weather for a city from the weather service.")
                 .side_effecting(true)
                 .metadata({{"replay_class", "sometimes"}})
                 .params("city")
                 .fn([](const std::string&) { return 1; });
  CHECK_THROWS_AS(agentkit::replay_class(request(bad)), agentkit::ToolDefinitionError);
  CHECK(agentkit::to_string(ReplayClass::side_effecting) == "side_effecting");
}

TEST_CASE("ReplayOptions::run_idempotent lets idempotent tools run again, never side-effecting ones",
          "[replay][replay_class]") {
  Counts n;
  const Cassette cassette = record_lisbon(n);
  Counts m;
  Agent agent("atlas", "fake", "You answer questions about cities.", react({lookup(m), refund(m), upsert(m)}));
  auto ctx = make_test_ctx();
  agentkit::testing::replay(ctx, cassette, {.run_idempotent = true});
  CHECK(agent.run("How big is Lisbon? Also refund A-1.", ctx).stop_reason == StopReason::answered);
  CHECK(m.upserts == 1);
  CHECK(m.refunds == 0);
}

TEST_CASE("a replayed request that differs fails the run typed, naming the step and the first difference",
          "[replay][mismatch]") {
  Counts n;
  const Cassette cassette = record_lisbon(n);
  Counts m;
  Agent changed("atlas", "fake", "You answer questions about towns.", react({lookup(m), refund(m), upsert(m)}));
  auto ctx = make_test_ctx();
  agentkit::testing::replay(ctx, cassette);
  auto result = changed.run("How big is Lisbon? Also refund A-1.", ctx);
  CHECK(result.stop_reason == StopReason::failed);
  REQUIRE(result.failure);
  CHECK(result.failure->code == agentkit::ErrorCode::invalid_argument);
  CHECK_THAT(result.failure->message, Catch::Contains("run1#1") && Catch::Contains("/system") &&
                                          Catch::Contains("cities") && Catch::Contains("towns"));
  CHECK(m.refunds == 0);

  // The error itself, from the replay model: step() and difference().
  agentkit::Replayer replayer(cassette);
  auto model = replayer.models()("fake");
  std::vector<agentkit::Message> messages{agentkit::Message::user("How big is Porto?")};
  agentkit::ModelRequest request{"fake", "You answer questions about cities.", messages, {}};
  agentkit::RunContext plain;
  try {
    model->complete(request, plain);
    FAIL("a differing request was answered");
  } catch (const ReplayMismatch& e) {
    CHECK(e.step() == "run1#1");
    CHECK_THAT(e.difference(), Catch::Contains("/messages/0/content/0/text") && Catch::Contains("Lisbon") &&
                                   Catch::Contains("Porto"));
    CHECK(dynamic_cast<const agentkit::ModelError*>(&e));
  }
}

TEST_CASE("a step missing from the cassette fails typed, never a live call", "[replay][mismatch]") {
  Counts n;
  const Cassette cut = agentkit::fork(record_lisbon(n), 1);  // step 2 is gone
  CHECK(cut.model_steps.size() == 1);
  CHECK(cut.tool_steps.size() == 3);
  Counts m;
  Agent agent("atlas", "fake", "You answer questions about cities.", react({lookup(m), refund(m), upsert(m)}));
  auto ctx = make_test_ctx();
  agentkit::testing::replay(ctx, cut);
  auto result = agent.run("How big is Lisbon? Also refund A-1.", ctx);
  CHECK(result.stop_reason == StopReason::failed);
  REQUIRE(result.failure);
  CHECK_THAT(result.failure->message, Catch::Contains("run1#2") && Catch::Contains("no such step"));
  CHECK(m.refunds == 0);
}

TEST_CASE("a side-effecting call the cassette lacks is an error result, never a run", "[replay][mismatch]") {
  Counts n;
  Cassette cassette = record_lisbon(n);
  std::erase_if(cassette.tool_steps, [](const agentkit::ToolStep& s) { return s.call == "1/c2"; });
  Counts m;
  Agent agent("atlas", "fake", "You answer questions about cities.", react({lookup(m), refund(m), upsert(m)}));
  auto ctx = make_test_ctx();
  agentkit::testing::replay(ctx, cassette);
  auto result = agent.run("How big is Lisbon? Also refund A-1.", ctx);
  CHECK(m.refunds == 0);
  // The refund's error reaches the next request, which the cassette does not have.
  CHECK(result.stop_reason == StopReason::failed);
  CHECK_THAT(result.failure->message, Catch::Contains("run1#2") && Catch::Contains("no result for call '1/c2'"));
}

TEST_CASE("tampered or garbled cassettes are typed errors, never a crash", "[replay][cassette]") {
  const std::string path = temp_path("agentkit_replay_garbled.json");
  auto write = [&](const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  };
  write("{\"format\": \"agentkit-cassette\", \"version\": 1, \"model_steps\": [");
  CHECK_THROWS_AS(Cassette::load(path), CassetteError);
  write("\x01\x02 not json");
  CHECK_THROWS_AS(Cassette::load(path), CassetteError);
  write("[1, 2, 3]");
  CHECK_THROWS_WITH(Cassette::load(path), Catch::Contains("not an agentkit cassette"));
  write(R"({"format": "agentkit-cassette", "version": 9, "model_steps": [], "tool_steps": []})");
  CHECK_THROWS_WITH(Cassette::load(path), Catch::Contains("version"));
  CHECK_THROWS_AS(Cassette::load(temp_path("agentkit_replay_absent.json")), CassetteError);

  Counts n;
  Json doc = record_lisbon(n).to_json();
  Json bad_step = doc;
  bad_step["model_steps"][1]["step"] = "two";
  CHECK_THROWS_WITH(Cassette::from_json(bad_step), Catch::Contains("model_steps[1].step") && Catch::Contains("integer"));
  Json bad_message = doc;
  bad_message["model_steps"][0]["response"]["message"]["role"] = "wizard";
  CHECK_THROWS_AS(Cassette::from_json(bad_message), CassetteError);
  Json bad_result = doc;
  bad_result["tool_steps"][0]["results"][0]["status"] = "fine";
  CHECK_THROWS_WITH(Cassette::from_json(bad_result), Catch::Contains("tool_steps[0].results"));
  Json bad_part = doc;
  bad_part["tool_steps"][0]["results"][0]["parts"] = Json::array({{{"type", "image"}}});
  CHECK_THROWS_AS(Cassette::from_json(bad_part), CassetteError);
  agentkit::state::InMemoryStore store;
  CHECK_THROWS_AS(Cassette::load(store, "nothing/here"), CassetteError);
  store.put("cassettes/junk", "{{{");
  CHECK_THROWS_AS(Cassette::load(store, "cassettes/junk"), CassetteError);
  try {
    Cassette::load(store, "cassettes/junk");
  } catch (const CassetteError& e) {
    CHECK(e.code() == agentkit::ErrorCode::data_loss);
  }
  std::remove(path.c_str());
}

TEST_CASE("sub-runs through as_tool are recorded and replayed under their parent's call", "[replay][as_tool]") {
  auto researcher = std::make_shared<Agent>("researcher", "fake", "You summarise a topic in one sentence.");
  auto script = [] {
    return FakeLLM::script({
        Turn{.tool_calls = {call("c1", "researcher", {{"task", "octopus tool use"}}),
                            call("c2", "researcher", {{"task", "octopus dens"}})}},
        Turn{.content = "Octopuses carry coconut shells."},
        Turn{.content = "Octopuses build dens."},
        Turn{.content = "They carry shells and build dens."},
    });
  };
  for (bool side_effecting : {false, true}) {
    auto tool = agentkit::as_tool(researcher, {.name = "researcher",
                                               .description = "Delegate a research sub-task and get a summary back.",
                                               .side_effecting = side_effecting});
    Agent lead("lead", "fake", "You answer by delegating research.", react({tool}));
    auto ctx = make_test_ctx({.llm = script()});
    Recorder recorder;
    recorder.attach(ctx);
    auto recorded = lead.run("Do octopuses use tools?", ctx);
    REQUIRE(recorded.stop_reason == StopReason::answered);
    const Cassette cassette = recorder.cassette();
    REQUIRE(cassette.model_steps.size() == 4);
    const auto* sub1 = cassette.find_model("run1/1/c1", 1);
    const auto* sub2 = cassette.find_model("run1/1/c2", 1);
    REQUIRE(sub1);
    REQUIRE(sub2);
    CHECK(sub1->agent == "lead/researcher");
    CHECK(sub1->request["messages"][0]["content"][0]["text"] == "octopus tool use");

    auto replay_ctx = make_test_ctx();
    auto replayer = agentkit::testing::replay(replay_ctx, cassette);
    auto replayed = lead.run("Do octopuses use tools?", replay_ctx);
    CHECK(replayed.output == recorded.output);
    CHECK(replayed.state.history == recorded.state.history);
    // read_only: the sub-runs ran again (against the cassette); side_effecting: injected.
    CHECK(replayer.ran() == (side_effecting ? 0 : 2));
    CHECK(replayer.injected() == (side_effecting ? 2 : 0));
  }
}

TEST_CASE("a run that suspended for approval and was resumed replays: the gate asks again, nothing runs",
          "[replay][approval]") {
  Counts n;
  Agent agent("clerk", "fake", "You issue refunds.", react({refund(n, true)}));
  auto ctx = make_test_ctx({.llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "refund", {{"order_id", "A-1"}})}},
                                                    Turn{.content = "Refunded A-1."}})});
  Recorder recorder;
  recorder.attach(ctx);
  auto suspended = agent.run("Refund A-1", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  auto done = agent.resume(suspended.state, {{"c1", Decision::approve()}}, ctx);
  REQUIRE(done.stop_reason == StopReason::answered);
  CHECK(n.refunds == 1);
  const Cassette cassette = recorder.cassette();
  REQUIRE(cassette.find_tool("run1", "1/c1"));
  CHECK(cassette.find_tool("run1", "1/c1")->results.size() == 2);  // awaiting_approval, then ok

  Counts m;
  Agent again("clerk", "fake", "You issue refunds.", react({refund(m, true)}));
  auto replay_ctx = make_test_ctx();
  auto replayer = agentkit::testing::replay(replay_ctx, cassette);
  auto paused = again.run("Refund A-1", replay_ctx);
  CHECK(paused.stop_reason == StopReason::suspended);  // no decision made up
  CHECK(replayer.injected() == 0);
  auto finished = again.resume(paused.state, {{"c1", Decision::approve()}}, replay_ctx);
  CHECK(finished.stop_reason == StopReason::answered);
  CHECK(finished.output == "Refunded A-1.");
  CHECK(m.refunds == 0);
  CHECK(replayer.injected() == 1);
}

TEST_CASE("fork continues a recorded run from a step with another tool result and model, and diff shows it",
          "[replay][fork][diff]") {
  Counts n;
  const Cassette original = record_lisbon(n);
  auto other = FakeLLM::script({Turn{.content = "Lisbon has 9 residents."}});
  Counts m;
  Agent agent("atlas", "fake", "You answer questions about cities, briefly.", react({lookup(m), refund(m), upsert(m)}));
  auto ctx = make_test_ctx();
  agentkit::Replayer replayer(agentkit::fork(original, 1),
                              {.compare_system = false,
                               .tool_overrides = {{"c1", agentkit::ToolResult::ok(9)}},
                               .after = other});
  Recorder recorder;  // records the fork, to compare it with the original
  ctx.models = replayer.models();
  recorder.attach(ctx, {replayer.middleware(), agentkit::error_boundary(), agentkit::metering()});
  auto result = agent.run("How big is Lisbon? Also refund A-1.", ctx);
  CHECK(result.output == "Lisbon has 9 residents.");
  CHECK(m.refunds == 0);
  REQUIRE(other->requests().size() == 1);
  CHECK(other->requests()[0].messages.at(2).text() == "9");  // the overridden result reached the new model

  const Cassette forked = recorder.cassette();
  const auto differences = agentkit::diff(original, forked);
  REQUIRE(differences.size() == 3);  // the prompt of steps 1 and 2, c1's result
  CHECK(differences[0].where == "run1#1");
  CHECK(differences[0].what == "request");
  CHECK(differences[0].path == "/system");
  CHECK(differences[1].where == "run1#2");
  CHECK(differences[2].where == "run1 call 1/c1");
  CHECK(differences[2].what == "result");
  CHECK(differences[2].a == "545000");
  CHECK(differences[2].b == "9");
  const std::string text = agentkit::render(differences);
  CHECK_THAT(text, Catch::Contains("run1 call 1/c1 result /0/value: a 545000, b 9"));
  CHECK(agentkit::diff(original, original).empty());
  CHECK(agentkit::render({}) == "no differences\n");
}

TEST_CASE("a model call that failed is recorded and fails the replay the same way", "[replay]") {
  Counts n;
  Agent agent("atlas", "fake", "You answer questions about cities.", react({lookup(n)}));
  auto ctx = make_test_ctx({.llm = FakeLLM::script({Turn{.throws = "provider fell over"}})});
  Recorder recorder;
  recorder.attach(ctx);
  auto recorded = agent.run("How big is Lisbon?", ctx);
  REQUIRE(recorded.stop_reason == StopReason::failed);
  const Cassette cassette = recorder.cassette();
  REQUIRE(cassette.model_steps.size() == 1);
  CHECK(cassette.model_steps[0].response.is_null());
  CHECK(cassette.model_steps[0].error["message"] == "provider fell over");

  auto replay_ctx = make_test_ctx();
  agentkit::testing::replay(replay_ctx, Cassette::from_json(cassette.to_json()));
  auto replayed = agent.run("How big is Lisbon?", replay_ctx);
  CHECK(replayed.stop_reason == StopReason::failed);
  REQUIRE(replayed.failure);
  CHECK(replayed.failure->code == recorded.failure->code);
  CHECK_THAT(replayed.failure->message, Catch::Contains("provider fell over"));
}

TEST_CASE("turns_from makes a recorded run a FakeLLM script: same answer, the tools run, parts kept",
          "[replay][fake_llm]") {
  Counts n;
  agentkit::RunResult recorded;
  const Cassette cassette = record_lisbon(n, &recorded);
  const std::string path = temp_path("agentkit_turns_from_lisbon.json");
  cassette.save(path);

  // One line: the recorded run's decisions drive the tools under test.
  auto llm = FakeLLM::script(agentkit::testing::turns_from(Cassette::load(path)));
  std::remove(path.c_str());
  Counts m;
  Agent agent("atlas", "fake", "You answer questions about cities.", react({lookup(m), refund(m), upsert(m)}));
  auto ctx = make_test_ctx({.llm = llm});
  auto result = agent.run("How big is Lisbon? Also refund A-1.", ctx);
  CHECK(result.stop_reason == StopReason::answered);
  CHECK(result.output == recorded.output);
  CHECK(m.lookups == 1);
  CHECK(m.refunds == 1);  // a FakeLLM script is no replay: every tool runs
  CHECK(m.upserts == 1);
  CHECK(llm->remaining() == 0);
  REQUIRE(llm->requests().size() == 2);
  CHECK(llm->requests()[1].messages.size() == cassette.model_steps[1].request["messages"].size());
  CHECK(result.usage.input_tokens == recorded.usage.input_tokens);

  SECTION("reasoning with its signature, a refusal, usage and finish reason survive the cassette") {
    auto source = FakeLLM::script({Turn{.content = "42",
                                        .parts = {agentkit::ReasoningPart{.text = "6 * 7", .signature = "sig-1",
                                                                          .provider = "anthropic"}},
                                        .usage = {31, 7, 0},
                                        .finish_reason = "content_filter"}});
    Agent plain("plain", "fake", "You answer in one word.");
    auto record_ctx = make_test_ctx({.llm = source});
    Recorder recorder;
    recorder.attach(record_ctx);
    REQUIRE(plain.run("What is six times seven?", record_ctx).stop_reason != StopReason::failed);
    const auto turns = agentkit::testing::turns_from(Cassette::from_json(recorder.cassette().to_json()));
    REQUIRE(turns.size() == 1);
    REQUIRE(turns[0].parts.size() == 2);
    const auto* reasoning = std::get_if<agentkit::ReasoningPart>(&turns[0].parts[0]);
    REQUIRE(reasoning);
    CHECK(reasoning->signature == "sig-1");
    CHECK(reasoning->provider == "anthropic");
    CHECK(std::get<agentkit::TextPart>(turns[0].parts[1]).text == "42");
    CHECK(turns[0].usage.input_tokens == 31);
    CHECK(turns[0].usage.output_tokens == 7);
    CHECK(turns[0].finish_reason == "content_filter");
  }

  SECTION("a run's steps alone, sub-runs apart, every step in recording order") {
    auto researcher = std::make_shared<Agent>("researcher", "fake", "You summarise a topic in one sentence.");
    auto tool = agentkit::as_tool(researcher, {.name = "researcher",
                                               .description = "Delegate a research sub-task and get a summary back.",
                                               .side_effecting = false});
    Agent lead("lead", "fake", "You answer by delegating research.", react({tool}));
    auto record_ctx = make_test_ctx({.llm = FakeLLM::script({
                                         Turn{.tool_calls = {call("c1", "researcher", {{"task", "octopus dens"}})}},
                                         Turn{.content = "Octopuses build dens."},
                                         Turn{.content = "They build dens."},
                                     })});
    Recorder recorder;
    recorder.attach(record_ctx);
    REQUIRE(lead.run("Do octopuses build?", record_ctx).stop_reason == StopReason::answered);
    const Cassette octopus = recorder.cassette();
    CHECK(agentkit::testing::turns_from(octopus, "run1").size() == 2);
    const auto sub = agentkit::testing::turns_from(octopus, "run1/1/c1");
    REQUIRE(sub.size() == 1);
    CHECK(std::get<agentkit::TextPart>(sub[0].parts.at(0)).text == "Octopuses build dens.");
    const auto all = agentkit::testing::turns_from(octopus);
    REQUIRE(all.size() == 3);
    CHECK(all[0].tool_calls.at(0).name == "researcher");
    CHECK(std::get<agentkit::TextPart>(all[1].parts.at(0)).text == "Octopuses build dens.");

    auto again = FakeLLM::script(all);
    auto again_ctx = make_test_ctx({.llm = again});
    CHECK(lead.run("Do octopuses build?", again_ctx).output == "They build dens.");
  }

  SECTION("a recorded failure throws again, no steps or an unreadable reply is a CassetteError") {
    auto failing_ctx = make_test_ctx({.llm = FakeLLM::script({Turn{.throws = "provider fell over"}})});
    Recorder recorder;
    recorder.attach(failing_ctx);
    Agent failing("atlas", "fake", "You answer questions about cities.", react({lookup(m)}));
    REQUIRE(failing.run("How big is Lisbon?", failing_ctx).stop_reason == StopReason::failed);
    Cassette failed = recorder.cassette();
    const auto turns = agentkit::testing::turns_from(failed);
    REQUIRE(turns.size() == 1);
    CHECK(turns[0].throws == "provider fell over");
    auto again_ctx = make_test_ctx({.llm = FakeLLM::script(turns)});
    auto again = failing.run("How big is Lisbon?", again_ctx);
    CHECK(again.stop_reason == StopReason::failed);
    REQUIRE(again.failure);
    CHECK_THAT(again.failure->message, Catch::Contains("provider fell over"));

    CHECK_THROWS_WITH(agentkit::testing::turns_from(cassette, "run9"),
                      Catch::Contains("the cassette records no model step of run 'run9'"));
    CHECK_THROWS_AS(agentkit::testing::turns_from(Cassette{}), CassetteError);
    Cassette tampered = cassette;
    tampered.model_steps[1].response["message"] = 5;
    CHECK_THROWS_WITH(agentkit::testing::turns_from(tampered), Catch::Contains("the reply at run1#2 cannot be read"));
  }
}
