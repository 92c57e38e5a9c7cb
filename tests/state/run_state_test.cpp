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
    throw agentkit::ModelError("unavailable", "upstream went away", agentkit::Usage{7, 3, 0});
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
    CHECK_THROWS_AS(RunState::from_json(doc), std::invalid_argument);
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
  CHECK(result.error_code == "unavailable");
  CHECK_THAT(result.error, Catch::Contains("upstream went away"));
  CHECK(result.usage.input_tokens == 7);
  CHECK(result.state.usage.output_tokens == 3);
  CHECK(ctx.budget->tokens() == 10);
  const RunState back = RunState::from_json(result.state.to_json());
  CHECK(back.error_code == "unavailable");
  // A run that did not fail writes no code.
  CHECK_FALSE(saved_run().contains("error_code"));
}
