// RunState documents: numbers read into integers are range-checked (never a
// float cast into an int), and a run failed by a model error keeps its code.
#include <catch2/catch.hpp>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/state/store.h>
#include <agentkit/testing/test_context.h>

using agentkit::Json;
using agentkit::RunState;

namespace {

Json saved_run() {
  RunState s;
  s.run_id = "run_1";
  s.agent = "a";
  s.task = "t";
  s.history.push_back(agentkit::Message::user("t"));
  s.iterations = 2;
  s.usage = {10, 5, 0};
  return s.to_json();
}

// A model whose every call fails with a typed error after spending tokens.
class FailingModel final : public agentkit::Model {
 public:
  agentkit::ModelResponse complete(const agentkit::ModelRequest&, agentkit::RunContext&) override {
    throw agentkit::ModelError(agentkit::ErrorCode::unavailable, "upstream went away", agentkit::Usage{7, 3, 0});
  }
};

}  // namespace

TEST_CASE("RunState::from_json refuses numbers an integer cannot hold", "[run_state]") {
  CHECK(RunState::from_json(saved_run()).iterations == 2);
  for (const auto& [field, value] : std::vector<std::pair<std::string, Json>>{
           {"version", Json(4294967297LL)},  // would read as 1 through get<int>
           {"version", Json(3.5)},
           {"iterations", Json(5.7e21)},
           {"iterations", Json(-1)},
           {"repairs", Json(1e300)},
           {"tool_calls", Json(-1.5)},
           {"session_base", Json(1e19)},
       }) {
    CAPTURE(field, value.dump());
    Json doc = saved_run();
    doc[field] = value;
    CHECK_THROWS_AS(RunState::from_json(doc), agentkit::Error);
    CHECK_THROWS_WITH(RunState::from_json(doc), Catch::Contains(field));
  }
  Json doc = saved_run();
  doc["usage"]["input_tokens"] = 5.7e21;
  CHECK_THROWS_WITH(RunState::from_json(doc), Catch::Contains("usage.input_tokens"));
}

TEST_CASE("a stored run document with an out-of-range count is a CheckpointError", "[run_state]") {
  agentkit::state::InMemoryStore store;
  Json doc = saved_run();
  doc["iterations"] = 5.7e21;
  store.put(agentkit::state::scoped_key({}, "runs/run_1"), doc.dump());
  CHECK_THROWS_AS(agentkit::load_run(store, {}, "run_1"), agentkit::CheckpointError);
  doc = saved_run();
  store.put(agentkit::state::scoped_key({}, "runs/run_1"), doc.dump());
  CHECK(agentkit::load_run(store, {}, "run_1").has_value());
}

TEST_CASE("a run failed by a ModelError carries its code and is charged its usage", "[run_state]") {
  agentkit::Agent agent("a", "m", "p", agentkit::cognition::react({}));
  auto ctx = agentkit::testing::make_test_ctx({.llm = std::make_shared<FailingModel>()});
  const auto result = agent.run("go", ctx);
  CHECK(result.stop_reason == agentkit::StopReason::failed);
  CHECK(result.failure.value().code == agentkit::ErrorCode::unavailable);
  CHECK(result.failure->model == "m");
  CHECK_THAT(result.failure.value().message, Catch::Contains("upstream went away"));
  CHECK(result.usage.input_tokens == 7);
  CHECK(result.state.usage.output_tokens == 3);
  CHECK(ctx.budget->tokens() == 10);
  const RunState back = RunState::from_json(result.state.to_json());
  CHECK(back.failure == result.failure);
  CHECK(result.state.to_json()["error_code"] == "unavailable");
  // A run that did not fail writes no code.
  CHECK_FALSE(saved_run().contains("error_code"));
}

TEST_CASE("RunState keeps a failure's code and provider details, and reads v3 documents' codes", "[run_state]") {
  RunState s = RunState::from_json(saved_run());
  s.phase = agentkit::Phase::done;
  s.stop_reason = agentkit::StopReason::failed;
  s.failure = agentkit::Failure{.code = agentkit::ErrorCode::rate_limited,
                                .message = "model call failed: HTTP 429",
                                .model = "openai/gpt-4o-mini",
                                .http_status = 429,
                                .retryable = true,
                                .retry_after = std::chrono::milliseconds(1500)};
  const Json doc = s.to_json();
  CHECK(doc["error"] == "model call failed: HTTP 429");
  CHECK(doc["error_code"] == "rate_limited");
  CHECK(doc["failure"] == Json{{"model", "openai/gpt-4o-mini"}, {"http_status", 429}, {"retryable", true},
                               {"retry_after_ms", 1500}});
  CHECK(RunState::from_json(doc).failure == s.failure);

  SECTION("a v3 document's provider names for two codes") {
    Json old = doc;
    old.erase("failure");
    old["error_code"] = "invalid";
    CHECK(RunState::from_json(old).failure.value().code == agentkit::ErrorCode::invalid_argument);
    old["error_code"] = "permission";
    CHECK(RunState::from_json(old).failure.value().code == agentkit::ErrorCode::permission_denied);
    old["error_code"] = "no_such_code";
    CHECK_THROWS_WITH(RunState::from_json(old), Catch::Contains("unknown error code 'no_such_code'"));
  }
  SECTION("a v1 document without a code takes the stop reason's") {
    Json old = doc;
    old.erase("failure");
    old.erase("error_code");
    old["version"] = 1;
    CHECK(RunState::from_json(old).failure.value().code == agentkit::ErrorCode::internal);
    old["stop_reason"] = "budget_exhausted";
    CHECK(RunState::from_json(old).failure.value().code == agentkit::ErrorCode::budget_exhausted);
    old["stop_reason"] = "cancelled";
    CHECK(RunState::from_json(old).failure.value().code == agentkit::ErrorCode::cancelled);
    old["stop_reason"] = "answered";
    CHECK_FALSE(RunState::from_json(old).failure.has_value());
  }
  SECTION("a call outcome's status round-trips by name, and an unknown one is refused") {
    Json with_batch = saved_run();
    with_batch["phase"] = "act";
    with_batch["batch"] = Json::array({Json{{"id", "c1"}, {"name", "t"}, {"arguments", Json::object()}}});
    with_batch["outcomes"] = Json::array({Json{{"text", "x"}, {"is_error", true}, {"outcome", "interrupted"}}});
    const RunState read = RunState::from_json(with_batch);
    CHECK(read.outcomes.at(0)->outcome == agentkit::CallStatus::interrupted);
    CHECK(read.to_json()["outcomes"][0]["outcome"] == "interrupted");
    with_batch["outcomes"][0]["outcome"] = "exploded";
    CHECK_THROWS_WITH(RunState::from_json(with_batch), Catch::Contains("unknown call outcome 'exploded'"));
  }
}
