// agentkit::state::Checkpoint on its own: a RunState saved with sealed
// history segments and a content blob loads back equal, without an Agent; a
// lost compare-and-set is false. Binary parts of a suspended batch's outcomes
// are blobs too. Transient blob and segment write failures are retried with
// the one Backoff; the run document's compare-and-set never is, and a save
// that fails leaves the last good checkpoint in place.
#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/state/checkpoint.h>
#include <agentkit/state/keys.h>
#include <agentkit/state/store.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

using namespace agentkit;
using agentkit::state::Checkpoint;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;

namespace {

// 10 000 bytes that are not UTF-8 (every byte value, repeated).
std::string frame_bytes() {
  std::string bytes;
  for (int i = 0; i < 10000; ++i) bytes += static_cast<char>((i * 7) & 0xFF);
  return bytes;
}

// A run in the middle of acting: a long history (more than kSealBytes, so a
// save seals a segment), an image over kBlobBytes, one call in flight.
RunState acting_run() {
  RunState s;
  s.run_id = "r1";
  s.agent = "guard";
  s.task = "Watch the gate.";
  s.phase = Phase::act;
  s.history.push_back(Message::user(s.task));
  for (int i = 0; i < 40; ++i) {
    s.history.push_back(Message::assistant("note " + std::to_string(i) + ": " + std::string(600, 'x')));
  }
  s.history.push_back(Message::user(std::vector<ContentPart>{TextPart{"the gate"}, ImagePart{"image/png", frame_bytes(), ""}}));
  s.batch = {ToolCall{"c1", "open_gate", Json::object(), {}}};
  s.outcomes = {std::nullopt};
  s.iterations = 3;
  return s;
}

std::size_t count_under(state::Store& store, const std::string& prefix) { return store.list(prefix).size(); }

// A store that refuses blob writes (as unavailable) a set number of times,
// or every time, and counts the document writes it sees. With
// outcome_unknown, a failed blob write is applied before it throws: the
// connection broke after the server had it.
class FlakyStore final : public state::Store {
 public:
  explicit FlakyStore(int blob_failures, ErrorCode code = ErrorCode::unavailable)
      : blob_failures_(blob_failures), code_(code) {}

  std::optional<state::Entry> get(std::string_view key) override { return inner_.get(key); }
  std::int64_t put(std::string_view key, std::string value, Ttl ttl) override {
    if (key.find("/run-blobs/") != std::string_view::npos) {
      ++blob_attempts_;
      if (blob_failures_ < 0 || blob_failures_-- > 0) {
        if (code_ == ErrorCode::outcome_unknown) inner_.put(key, value, ttl);
        throw state::StoreError("flaky.db: database is locked", code_);
      }
    }
    return inner_.put(key, std::move(value), ttl);
  }
  std::optional<std::int64_t> compare_and_set(std::string_view key, std::int64_t expected, std::string value,
                                              Ttl ttl) override {
    if (key.find("/runs/") != std::string_view::npos) {
      ++cas_attempts_;
      if (cas_failures_ > 0) {
        --cas_failures_;
        throw state::StoreError("flaky.db: disk I/O error");
      }
    }
    return inner_.compare_and_set(key, expected, std::move(value), ttl);
  }
  bool erase(std::string_view key) override { return inner_.erase(key); }
  std::vector<std::pair<std::string, state::Entry>> list(std::string_view prefix) override {
    return inner_.list(prefix);
  }

  void fail_documents(int times) { cas_failures_ = times; }
  int blob_attempts() const { return blob_attempts_; }
  int cas_attempts() const { return cas_attempts_; }

 private:
  state::InMemoryStore inner_;
  std::atomic<int> blob_failures_;  // < 0: always
  ErrorCode code_;
  std::atomic<int> cas_failures_{0};
  std::atomic<int> blob_attempts_{0};
  std::atomic<int> cas_attempts_{0};
};

ToolPtr camera() {
  return tool("camera_frame").doc("Grab the current frame of the gate camera.").side_effecting(false).fn([](RunContext&) {
    return ToolOutput{"frame 7", {ImagePart{"image/png", frame_bytes(), ""}}};
  });
}

ToolPtr gate() {
  return tool("open_gate")
      .doc("Open the front gate for a visitor who is waiting.")
      .side_effecting(true)
      .requires_approval()
      .fn([] { return std::string("opened"); });
}

Agent guard() {
  return Agent("guard", "fake", "You guard the gate.",
               std::make_shared<cognition::ReActCognition>(std::vector<ToolPtr>{camera(), gate()}));
}

}  // namespace

TEST_CASE("Checkpoint and load_run from agentkit::state, without an Agent", "[checkpoint]") {
  auto store = std::make_shared<state::InMemoryStore>();
  const Scope scope{.org_id = 7, .domain_id = 1};
  RunState s = acting_run();

  Checkpoint first(store, scope, s.run_id, 0);
  REQUIRE(first.save(s));
  CHECK(first.version() == 1);
  // The layout, spelled out on purpose.
  CHECK(state::keys::run(scope, "r1") == "org7:dom1/runs/r1");
  CHECK(state::keys::history_segments(scope, "r1") == "org7:dom1/run-history/r1#");
  CHECK(state::keys::blobs(scope, "r1") == "org7:dom1/run-blobs/r1/");
  CHECK(state::keys::ledger(scope, "r1") == "org7:dom1/ledger/r1/");
  CHECK(state::keys::session(scope, "s1") == "org7:dom1/sessions/s1");
  CHECK(store->get("org7:dom1/runs/r1"));
  CHECK(count_under(*store, "org7:dom1/run-history/r1#") == 1);  // sealed
  CHECK(count_under(*store, "org7:dom1/run-blobs/r1/") == 1);    // the image, once
  CHECK(store->get("org7:dom1/runs/r1")->value.find(base64_encode(frame_bytes()).substr(0, 200)) == std::string::npos);

  const auto loaded = state::load_run(*store, scope, s.run_id);
  REQUIRE(loaded);
  CHECK(loaded->to_json() == s.to_json());
  CHECK(state::interrupted_runs(*store, scope) == std::vector<std::string>{"r1"});
  CHECK_FALSE(state::load_run(*store, Scope{.org_id = 8}, s.run_id));  // another tenant sees nothing

  // A second writer continues the stored run; the first is now behind.
  auto stored = state::load_stored_run(*store, scope, s.run_id);
  REQUIRE(stored);
  CHECK(stored->version == 1);
  CHECK(stored->sealed.segments.size() == 1);
  Checkpoint second(store, scope, s.run_id, stored->version, stored->sealed);
  s.history.push_back(Message::tool_result("c1", "open_gate", "opened"));
  s.outcomes = {CallOutcome{"opened", false, CallStatus::ok, {}}};
  REQUIRE(second.save(s));

  RunState stale = s;
  stale.iterations = 99;
  CHECK_FALSE(first.save(stale));  // lost the compare-and-set: nothing written
  CHECK_FALSE(Checkpoint(store, scope, s.run_id, 0).save(stale));  // a "new" run whose id exists
  CHECK(state::load_run(*store, scope, s.run_id)->to_json() == s.to_json());

  s.phase = Phase::done;
  REQUIRE(second.save(s));
  CHECK(state::interrupted_runs(*store, scope).empty());
  CHECK(count_under(*store, "org7:dom1/run-history/r1#") == 2);  // the "new" run's segment, unlisted
  second.tidy();
  CHECK(count_under(*store, "org7:dom1/run-history/r1#") == 1);
  CHECK(state::load_run(*store, scope, s.run_id)->to_json() == s.to_json());
}

TEST_CASE("spans not yet written ride in the document, even when the history is stored whole again",
          "[checkpoint][trace]") {
  auto store = std::make_shared<state::InMemoryStore>();
  const Scope scope{.org_id = 7};
  RunState s = acting_run();
  trace::Span span;
  span.trace_id = trace::new_trace_id();
  span.span_id = trace::new_span_id();
  span.name = "chat fake";

  Checkpoint checkpoint(store, scope, s.run_id, 0);
  REQUIRE(checkpoint.save(s, {span}));  // seals the history; the span waits in the document
  auto stored = state::load_stored_run(*store, scope, s.run_id);
  REQUIRE(stored);
  REQUIRE(stored->sealed.segments.size() == 1);
  REQUIRE(stored->sealed.spans.size() == 1);

  s.history.resize(2);  // shorter than what is sealed: stored whole again
  trace::Span second = span;
  second.span_id = trace::new_span_id();
  REQUIRE(checkpoint.save(s, {second}));
  stored = state::load_stored_run(*store, scope, s.run_id);
  REQUIRE(stored);
  CHECK(stored->sealed.segments.empty());
  CHECK(stored->state.history.size() == 2);
  REQUIRE(stored->sealed.spans.size() == 2);  // neither span lost
  CHECK(stored->sealed.spans[0].at("span_id") == span.span_id);
  CHECK(stored->sealed.spans[1].at("span_id") == second.span_id);
  CHECK(store->list(state::keys::trace_spans(scope, span.trace_id)).empty());

  s.phase = Phase::done;  // a rested run writes its spans to the trace
  REQUIRE(checkpoint.save(s));
  CHECK(store->list(state::keys::trace_spans(scope, span.trace_id)).size() == 1);
  CHECK(state::load_stored_run(*store, scope, s.run_id)->sealed.spans.empty());
}

TEST_CASE("an outcome's image in a suspended batch is a blob, checked on load", "[checkpoint][parts]") {
  auto store = std::make_shared<state::InMemoryStore>();
  // One batch: the camera runs, the gate waits for a human.
  auto llm = FakeLLM::script({Turn{.tool_calls = {{"c1", "camera_frame", Json::object()}, {"c2", "open_gate", Json::object()}}},
                              Turn{.content = "Gate open."}});
  auto ctx = make_test_ctx({.llm = llm, .store = store});
  const Agent agent = guard();
  const RunResult suspended = agent.run("Check the camera and open the gate.", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  REQUIRE(suspended.state.outcomes.size() == 2);
  REQUIRE(suspended.state.outcomes[0]);
  REQUIRE(suspended.state.outcomes[0]->parts.size() == 1);

  const auto blobs = store->list(state::keys::blobs(ctx.scope, suspended.state.run_id));
  REQUIRE(blobs.size() == 1);
  const std::string base64 = base64_encode(frame_bytes());
  CHECK(blobs[0].second.value == base64);
  const auto doc = store->get(state::keys::run(ctx.scope, suspended.state.run_id));
  REQUIRE(doc);
  CHECK(doc->value.find(base64.substr(0, 200)) == std::string::npos);  // not inline in the checkpoint

  const auto loaded = load_run(*store, ctx.scope, suspended.state.run_id);
  REQUIRE(loaded);
  REQUIRE(loaded->outcomes[0]);
  CHECK(std::get<ImagePart>(loaded->outcomes[0]->parts.at(0)).data == frame_bytes());
  CHECK(loaded->to_json() == suspended.state.to_json());

  SECTION("resumed from the store, the model sees the frame bit-exact") {
    const RunResult done = agent.resume(suspended.state.run_id, {{"c2", Decision::approve()}}, ctx);
    CHECK(done.stop_reason == StopReason::answered);
    REQUIRE_FALSE(llm->requests().back().images().empty());
    CHECK(llm->requests().back().images().at(0).data == frame_bytes());
  }
  SECTION("an altered outcome blob is a CheckpointError naming it") {
    std::string other = frame_bytes();
    other[1234] ^= 1;
    store->put(blobs[0].first, base64_encode(other));
    CHECK_THROWS_AS(load_run(*store, ctx.scope, suspended.state.run_id), CheckpointError);
    CHECK_THROWS_WITH(agent.resume(suspended.state.run_id, {{"c2", Decision::approve()}}, ctx),
                      Catch::Contains(blobs[0].first) && Catch::Contains("does not match"));
  }
  SECTION("a missing outcome blob is a CheckpointError naming it") {
    store->erase(blobs[0].first);
    CHECK_THROWS_WITH(load_run(*store, ctx.scope, suspended.state.run_id),
                      Catch::Contains(blobs[0].first) && Catch::Contains("missing"));
  }
}

TEST_CASE("a blob write refused once as unavailable is retried, and the run goes on", "[checkpoint][retry]") {
  auto store = std::make_shared<FlakyStore>(1);
  auto ctx = make_test_ctx(
      {.llm = FakeLLM::script({Turn{.tool_calls = {{"c1", "camera_frame", Json::object()}}}, Turn{.content = "Clear."}}),
       .store = store});
  const RunResult result = guard().run("Check the camera.", ctx);
  CHECK(result.stop_reason == StopReason::answered);
  CHECK_FALSE(result.failure);
  CHECK(store->blob_attempts() == 2);  // refused, then written; later saves know it is there
  const auto loaded = load_run(*store, ctx.scope, result.state.run_id);
  REQUIRE(loaded);
  CHECK(loaded->phase == Phase::done);
  CHECK(loaded->to_json() == result.state.to_json());
}

TEST_CASE("a blob write whose outcome is unknown is written again: the same bytes under the same key",
          "[checkpoint][retry]") {
  auto store = std::make_shared<FlakyStore>(1, ErrorCode::outcome_unknown);
  auto ctx = make_test_ctx(
      {.llm = FakeLLM::script({Turn{.tool_calls = {{"c1", "camera_frame", Json::object()}}}, Turn{.content = "Clear."}}),
       .store = store});
  const RunResult result = guard().run("Check the camera.", ctx);
  CHECK(result.stop_reason == StopReason::answered);
  CHECK_FALSE(result.failure);
  CHECK(store->blob_attempts() == 2);
  const auto loaded = load_run(*store, ctx.scope, result.state.run_id);
  REQUIRE(loaded);
  CHECK(loaded->to_json() == result.state.to_json());
}

TEST_CASE("a blob write that keeps failing fails the run, typed, and leaves the last good checkpoint",
          "[checkpoint][retry]") {
  auto store = std::make_shared<FlakyStore>(-1);
  std::atomic<int> frames{0};
  auto counting_camera = tool("camera_frame").doc("Grab the current frame of the gate camera.").side_effecting(false).fn(
      [&frames](RunContext&) {
        ++frames;
        return ToolOutput{"frame 7", {ImagePart{"image/png", frame_bytes(), ""}}};
      });
  const Agent agent("guard", "fake", "You guard the gate.",
                    std::make_shared<cognition::ReActCognition>(std::vector<ToolPtr>{counting_camera}));
  auto ctx = make_test_ctx(
      {.llm = FakeLLM::script({Turn{.tool_calls = {{"c1", "camera_frame", Json::object()}}}, Turn{.content = "Clear."}}),
       .store = store});
  const RunResult result = agent.run("Check the camera.", ctx);
  CHECK(result.stop_reason == StopReason::failed);
  REQUIRE(result.failure);
  CHECK(result.failure->code == ErrorCode::unavailable);
  CHECK_THAT(result.failure->message, Catch::Contains("checkpoint failed") && Catch::Contains("database is locked"));
  CHECK(store->blob_attempts() == Checkpoint::kWriteAttempts);  // bounded, then given up
  CHECK(frames == 1);

  // The stored run is the checkpoint before the failed save: it loads, it
  // names no blob, and recovery can take it from there.
  CHECK(store->list(state::keys::blobs(ctx.scope, result.state.run_id)).empty());
  const auto stored = load_run(*store, ctx.scope, result.state.run_id);
  REQUIRE(stored);
  CHECK(stored->phase == Phase::act);
  CHECK(stored->outcomes.size() == 1);
  CHECK_FALSE(stored->outcomes[0]);
}

TEST_CASE("the run document's compare-and-set is never retried", "[checkpoint][retry]") {
  auto store = std::make_shared<FlakyStore>(0);
  RunState s = acting_run();
  Checkpoint checkpoint(store, Scope{}, s.run_id, 0);
  store->fail_documents(1);
  CHECK_THROWS_AS(checkpoint.save(s), state::StoreError);
  CHECK(store->cas_attempts() == 1);
  CHECK(checkpoint.version() == 0);
  CHECK_FALSE(state::load_run(*store, Scope{}, s.run_id));  // the segment and blob written beside it are unlisted
  // The next save (the store is back) writes the document whole.
  REQUIRE(checkpoint.save(s));
  CHECK(state::load_run(*store, Scope{}, s.run_id)->to_json() == s.to_json());
}
