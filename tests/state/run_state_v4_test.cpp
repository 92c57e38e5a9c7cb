// RunState v4: content parts in history. Large binary parts live once in the
// store as content-addressed blobs, checked against their hash on load;
// without a store they stay inline and under the signature; v1-v3 still load.
#include <catch2/catch.hpp>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/state/keys.h>
#include <agentkit/state/store.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

using namespace agentkit;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;

namespace {

const std::string kKey = "0123456789abcdef0123456789abcdef";

// 10 000 bytes that are not UTF-8 (every byte value, repeated).
std::string frame_bytes() {
  std::string bytes;
  for (int i = 0; i < 10000; ++i) bytes += static_cast<char>((i * 7) & 0xFF);
  return bytes;
}

ToolPtr camera() {
  return tool("camera_frame").doc("Grab the current frame of the gate camera.").side_effecting(false).fn([](RunContext&) {
    return ToolOutput{"frame 7", {ImagePart{"image/png", frame_bytes(), ""}}};
  });
}

ToolPtr gate() {
  return tool("open_gate").doc("Open the front gate for a visitor who is waiting.").side_effecting(true).requires_approval().fn([] { return std::string("opened"); });
}

std::shared_ptr<FakeLLM> script() {
  return FakeLLM::script({Turn{.tool_calls = {{"c1", "camera_frame", Json::object()}}},
                          Turn{.tool_calls = {{"c2", "open_gate", Json::object()}}}, Turn{.content = "Gate open."}});
}

Agent agent() {
  return Agent("guard", "fake", "You guard the gate.",
               std::make_shared<cognition::ReActCognition>(std::vector<ToolPtr>{camera(), gate()}));
}

// The store key of the run's one blob.
std::string blob_key(state::Store& store) {
  std::vector<std::string> keys;
  for (const auto& [key, entry] : store.list("")) {
    if (key.find("run-blobs/") != std::string::npos) keys.push_back(key);
  }
  REQUIRE(keys.size() == 1);
  return keys[0];
}

const ImagePart& image_in(const RunState& state) {
  for (const auto& m : state.history) {
    for (const auto& part : m.content) {
      if (const auto* image = std::get_if<ImagePart>(&part)) return *image;
    }
  }
  FAIL("no image in the history");
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("a large image in history is stored once as a blob and loads back bit-exact", "[run_state][parts]") {
  auto store = std::make_shared<state::InMemoryStore>();
  auto llm = script();
  auto ctx = make_test_ctx({.llm = llm, .store = store});
  const Agent guard = agent();
  const RunResult suspended = guard.run("Check the camera, then open the gate.", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);

  const std::string key = blob_key(*store);
  CHECK(key.find("run-blobs/" + suspended.state.run_id + "/") != std::string::npos);
  CHECK(key.size() - key.rfind('/') - 1 == 64);  // a SHA-256 in hex
  const std::string base64 = base64_encode(frame_bytes());
  CHECK(store->get(key)->value == base64);
  for (const auto& [k, entry] : store->list("")) {
    if (k != key) CHECK(entry.value.find(base64.substr(0, 200)) == std::string::npos);  // not inline anywhere else
  }

  const auto loaded = load_run(*store, ctx.scope, suspended.state.run_id);
  REQUIRE(loaded);
  CHECK(image_in(*loaded).data == frame_bytes());

  // Resumed from the store: the model sees the frame bit-exact.
  const RunResult done = guard.resume(suspended.state.run_id, {{"c2", Decision::approve()}}, ctx);
  CHECK(done.stop_reason == StopReason::answered);
  CHECK(llm->requests().back().images().at(0).data == frame_bytes());
  CHECK(blob_key(*store) == key);  // still one blob: written once
}

TEST_CASE("a tampered or missing blob is a CheckpointError naming it", "[run_state][parts]") {
  auto store = std::make_shared<state::InMemoryStore>();
  auto ctx = make_test_ctx({.llm = script(), .store = store});
  const RunResult suspended = agent().run("Check the camera, then open the gate.", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  const std::string key = blob_key(*store);
  SECTION("altered") {
    std::string other = frame_bytes();
    other[5000] ^= 1;
    store->put(key, base64_encode(other));
    CHECK_THROWS_AS(load_run(*store, ctx.scope, suspended.state.run_id), CheckpointError);
    CHECK_THROWS_WITH(load_run(*store, ctx.scope, suspended.state.run_id),
                      Catch::Contains(key) && Catch::Contains("does not match"));
  }
  SECTION("not base64") {
    store->put(key, "%%%");
    CHECK_THROWS_WITH(load_run(*store, ctx.scope, suspended.state.run_id), Catch::Contains(key));
  }
  SECTION("missing") {
    store->erase(key);
    CHECK_THROWS_WITH(load_run(*store, ctx.scope, suspended.state.run_id),
                      Catch::Contains(key) && Catch::Contains("missing"));
    CHECK_THROWS_AS(agent().resume(suspended.state.run_id, {{"c2", Decision::approve()}}, ctx), CheckpointError);
  }
}

TEST_CASE("a checkpoint whose spans were edited by hand is a CheckpointError, not a run whose saves all fail",
          "[run_state][integrity]") {
  auto store = std::make_shared<state::InMemoryStore>();
  auto ctx = make_test_ctx({.llm = script(), .store = store});
  const RunResult suspended = agent().run("Check the camera, then open the gate.", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  const std::string key = state::keys::run(ctx.scope, suspended.state.run_id);
  const auto stored = store->get(key);
  REQUIRE(stored);
  for (const Json& spans : {Json(3), Json::array({Json{{"name", "step"}}}), Json::array({Json{{"trace_id", 7}}}),
                            Json::array({Json{{"trace_id", "not-hex"}}})}) {
    CAPTURE(spans.dump());
    Json doc = Json::parse(stored->value);
    doc["spans"] = spans;
    store->put(key, doc.dump());
    CHECK_THROWS_AS(load_run(*store, ctx.scope, suspended.state.run_id), CheckpointError);
    CHECK_THROWS_AS(agent().resume(suspended.state.run_id, {{"c2", Decision::approve()}}, ctx), CheckpointError);
  }
}

TEST_CASE("without a store the parts stay inline and the signature covers them", "[run_state][parts][integrity]") {
  auto ctx = make_test_ctx({.llm = script()});
  ctx.store = nullptr;
  ctx.state_key = kKey;
  const Agent guard = agent();
  const RunResult suspended = guard.run("Check the camera, then open the gate.", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  const Json doc = suspended.state.to_json();
  CHECK(doc.at("version") == 4);
  CHECK(doc.dump().find(base64_encode(frame_bytes())) != std::string::npos);

  // Through JSON text and back: bit-exact.
  const RunState restored = RunState::from_json(Json::parse(doc.dump()));
  CHECK(image_in(restored).data == frame_bytes());

  // One byte of the image changed: the signature no longer matches.
  RunState altered = restored;
  for (auto& m : altered.history) {
    for (auto& part : m.content) {
      if (auto* image = std::get_if<ImagePart>(&part)) image->data[0] ^= 1;
    }
  }
  CHECK_THROWS_AS(guard.resume(altered, {{"c2", Decision::approve()}}, ctx), StateTampered);
  CHECK(guard.resume(restored, {{"c2", Decision::approve()}}, ctx).stop_reason == StopReason::answered);
}

TEST_CASE("a version 3 document, content as strings, still loads", "[run_state][parts]") {
  const Json v3 = Json::parse(R"({
    "version": 3, "run_id": "run_v3", "agent": "billing", "task": "Refund A-1", "phase": "suspended",
    "history": [
      {"role": "user", "content": "Refund A-1"},
      {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "refund", "arguments": {"order_id": "A-1"}}]},
      {"role": "tool", "content": "A-1: delivered", "tool_call_id": "c0", "tool_name": "lookup", "is_error": false}
    ],
    "iterations": 1, "tool_calls": 1, "cost_usd": 0, "repairs": 0,
    "batch": [{"id": "c1", "name": "refund", "arguments": {"order_id": "A-1"}}],
    "outcomes": [null], "pending": ["c1"], "approved": [], "proposed": {}, "session": "", "session_base": 0,
    "usage": {"input_tokens": 10, "output_tokens": 5, "cached_tokens": 0},
    "stop_reason": "suspended", "output": "", "error": ""})");
  const RunState s = RunState::from_json(v3);
  REQUIRE(s.history.size() == 3);
  CHECK(s.history[0] == Message::user("Refund A-1"));
  CHECK(s.history[1].content.empty());
  CHECK(s.history[1].tool_calls.size() == 1);
  CHECK(s.history[2].text() == "A-1: delivered");
  // Written again, it is a v4 document whose content is a list of parts.
  const Json v4 = s.to_json();
  CHECK(v4.at("version") == 4);
  CHECK(v4.at("history").at(0).at("content") == Json::parse(R"([{"type": "text", "text": "Refund A-1"}])"));
  CHECK(RunState::from_json(v4).history == s.history);
}
