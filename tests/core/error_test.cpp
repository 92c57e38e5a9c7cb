// One error vocabulary: every public agentkit exception is an agentkit::Error
// with its canonical code, and a run that stops early carries its failure as
// a value (RunResult::failure) with that code and the provider's details.
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/egress.h>
#include <agentkit/error.h>
#include <agentkit/errors.h>
#include <agentkit/executor.h>
#include <agentkit/function_tool.h>
#include <agentkit/json.h>
#include <agentkit/providers/mcp.h>
#include <agentkit/providers/transport.h>
#include <agentkit/skills.h>
#include <agentkit/state/memory_tool.h>
#include <agentkit/state/store.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

using agentkit::Error;
using agentkit::ErrorCode;
using agentkit::StopReason;
using agentkit::testing::FakeLLM;
using agentkit::testing::Turn;
namespace providers = agentkit::providers;

namespace {

struct Case {
  const char* type;
  std::function<void()> raise;
  ErrorCode code;
};

// A model whose every call throws what `raise` throws.
class ThrowingModel final : public agentkit::Model {
 public:
  explicit ThrowingModel(std::function<void()> raise) : raise_(std::move(raise)) {}
  agentkit::ModelResponse complete(const agentkit::ModelRequest&, agentkit::RunContext&) override {
    raise_();
    return {};
  }

 private:
  std::function<void()> raise_;
};

agentkit::RunResult run_with(std::function<void()> raise, std::optional<agentkit::RunResult>* recovered = nullptr) {
  agentkit::Agent agent("a", "openai/gpt-4o-mini", "p", agentkit::cognition::react({}));
  auto ctx = agentkit::testing::make_test_ctx({.llm = std::make_shared<ThrowingModel>(std::move(raise))});
  auto result = agent.run("go", ctx);
  // A finished run comes back from its checkpoint as it ended.
  if (recovered) *recovered = agent.recover(result.state.run_id, ctx);
  return result;
}

}  // namespace

TEST_CASE("every public agentkit exception is an agentkit::Error with its code", "[error]") {
  using namespace agentkit;
  const std::vector<Case> cases = {
      {"ToolDefinitionError", [] { throw ToolDefinitionError("x"); }, ErrorCode::invalid_argument},
      {"ToolArgumentError", [] { throw ToolArgumentError("t", {"a"}, {}, {}, {"a"}); }, ErrorCode::invalid_argument},
      {"ToolShapeError", [] { throw ToolShapeError("t", Json(1), "Quote"); }, ErrorCode::protocol},
      {"JsonError", [] { parse_json("{", {}, "test"); }, ErrorCode::invalid_argument},
      {"UrlError", [] { parse_url("not a url"); }, ErrorCode::invalid_argument},
      {"EgressDenied", [] { throw EgressDenied("no"); }, ErrorCode::permission_denied},
      {"ModelError", [] { throw ModelError(ErrorCode::timeout, "slow"); }, ErrorCode::timeout},
      {"RetryableToolError", [] { throw RetryableToolError("again"); }, ErrorCode::unavailable},
      {"OutcomeUnknownError", [] { throw OutcomeUnknownError("maybe"); }, ErrorCode::outcome_unknown},
      {"DepthLimitExceeded", [] { throw DepthLimitExceeded("deep"); }, ErrorCode::budget_exhausted},
      {"ProviderError", [] { throw providers::ProviderError(ErrorCode::rate_limited, "429", 429, true); },
       ErrorCode::rate_limited},
      {"McpError rpc -32601", [] { throw providers::McpError(providers::McpError::Kind::rpc, "m", -32601); },
       ErrorCode::not_found},
      {"McpError rpc -32602", [] { throw providers::McpError(providers::McpError::Kind::rpc, "m", -32602); },
       ErrorCode::invalid_argument},
      {"McpError rpc other", [] { throw providers::McpError(providers::McpError::Kind::rpc, "m", -32000); },
       ErrorCode::internal},
      {"McpError timeout", [] { throw providers::McpError(providers::McpError::Kind::timeout, "m"); },
       ErrorCode::timeout},
      {"McpError cancelled", [] { throw providers::McpError(providers::McpError::Kind::cancelled, "m"); },
       ErrorCode::cancelled},
      {"McpError disconnected", [] { throw providers::McpError(providers::McpError::Kind::disconnected, "m"); },
       ErrorCode::unavailable},
      {"McpError session_expired", [] { throw providers::McpError(providers::McpError::Kind::session_expired, "m"); },
       ErrorCode::unavailable},
      {"McpError protocol", [] { throw providers::McpError(providers::McpError::Kind::protocol, "m"); },
       ErrorCode::protocol},
      {"McpToolError", [] { throw providers::McpToolError("t", "failed", Json::object()); }, ErrorCode::internal},
      {"StoreError", [] { throw state::StoreError("disk full"); }, ErrorCode::unavailable},
      {"MemoryError", [] { throw state::MemoryError("The path /x does not exist."); }, ErrorCode::invalid_argument},
      {"RunError", [] { throw RunError("exists"); }, ErrorCode::already_exists},
      {"RunNotFound", [] { throw RunNotFound("none"); }, ErrorCode::not_found},
      {"RunAlreadyResumed", [] { throw RunAlreadyResumed("first"); }, ErrorCode::aborted},
      {"InvalidDecision", [] { throw InvalidDecision("c1", "not pending"); }, ErrorCode::invalid_argument},
      {"CheckpointError", [] { throw CheckpointError("unreadable"); }, ErrorCode::data_loss},
      {"StateIntegrityError", [] { throw StateIntegrityError("bad"); }, ErrorCode::unauthenticated},
      {"StateTampered", [] { throw StateTampered("altered"); }, ErrorCode::unauthenticated},
      {"StateUnsigned", [] { throw StateUnsigned("unsigned"); }, ErrorCode::unauthenticated},
      {"SkillError", [] { throw SkillError("bad skill"); }, ErrorCode::invalid_argument},
      {"ScriptExhausted", [] { throw testing::ScriptExhausted("out"); }, ErrorCode::internal},
      {"RunState::from_json", [] { RunState::from_json(Json("x")); }, ErrorCode::invalid_argument},
      {"ThreadPoolExecutor(0)", [] { ThreadPoolExecutor pool(0); }, ErrorCode::invalid_argument},
  };
  for (const auto& c : cases) {
    CAPTURE(c.type);
    bool caught = false;
    try {
      c.raise();
    } catch (const Error& e) {
      caught = true;
      CHECK(e.code() == c.code);
    }
    CHECK(caught);
    // One std::exception base: a generic handler still matches every one.
    CHECK_THROWS_AS(c.raise(), std::exception);
    CHECK_THROWS_AS(c.raise(), std::runtime_error);
  }
}

TEST_CASE("ErrorCode names round-trip through the one enum table", "[error]") {
  for (int i = 0; i <= static_cast<int>(ErrorCode::internal); ++i) {
    const auto code = static_cast<ErrorCode>(i);
    CAPTURE(i);
    const auto name = agentkit::to_string(code);
    CHECK(name != "unknown");
    CHECK(agentkit::error_code_from_string(name) == code);
  }
  CHECK(agentkit::to_string(ErrorCode::rate_limited) == "rate_limited");
  CHECK_FALSE(agentkit::error_code_from_string("Rate_Limited").has_value());
  CHECK_FALSE(agentkit::error_code_from_string("").has_value());
  for (auto reason : {StopReason::answered, StopReason::suspended, StopReason::max_iterations,
                      StopReason::budget_exhausted, StopReason::cancelled, StopReason::failed}) {
    CHECK(agentkit::stop_reason_from_string(agentkit::to_string(reason)) == reason);
  }
  CHECK(agentkit::to_string(agentkit::CallStatus::outcome_unknown) == "outcome_unknown");
  CHECK(agentkit::call_status_from_string("interrupted") == agentkit::CallStatus::interrupted);
  CHECK(agentkit::to_string(agentkit::ApprovalVerdict::edited) == "edited");
  CHECK(agentkit::role_from_string("assistant") == agentkit::Role::assistant);
  CHECK_FALSE(agentkit::role_from_string("robot").has_value());
}

TEST_CASE("write_failure and read_failure spell a failure one way, both ways", "[error][failure]") {
  using agentkit::ErrorCode;
  using agentkit::Failure;
  using agentkit::Json;
  const Failure full{ErrorCode::rate_limited, "slow down", "openai:gpt-4o", 429, true, std::chrono::milliseconds(1500)};
  Json doc = Json::object();
  agentkit::write_failure(doc, full);
  CHECK(doc == Json{{"error", "slow down"},
                    {"error_code", "rate_limited"},
                    {"failure", {{"model", "openai:gpt-4o"}, {"http_status", 429}, {"retryable", true}, {"retry_after_ms", 1500}}}});
  CHECK(agentkit::read_failure(doc, ErrorCode::internal, "doc") == full);

  Json plain = Json::object();
  agentkit::write_failure(plain, Failure{ErrorCode::cancelled, "stopped"});
  CHECK(plain == Json{{"error", "stopped"}, {"error_code", "cancelled"}});  // no empty "failure" object
  CHECK(agentkit::read_failure(plain, ErrorCode::internal, "doc") == Failure{ErrorCode::cancelled, "stopped"});

  Json none = Json::object();
  agentkit::write_failure(none, std::nullopt);
  CHECK(none == Json{{"error", ""}});

  // No code written (an old document): the caller's default.
  CHECK(agentkit::read_failure(Json{{"error", "x"}}, ErrorCode::budget_exhausted, "doc").code == ErrorCode::budget_exhausted);
  CHECK(agentkit::read_failure(Json{{"error", "x"}, {"error_code", "invalid"}}, ErrorCode::internal, "doc").code ==
        ErrorCode::invalid_argument);
  CHECK_THROWS_WITH(agentkit::read_failure(Json{{"error", "x"}, {"error_code", "nope"}}, ErrorCode::internal, "doc"),
                    "doc: unknown error code 'nope'");
  CHECK_THROWS_AS(agentkit::read_failure(Json{{"error", "x"}, {"failure", {{"http_status", "429"}}}}, ErrorCode::internal, "doc"),
                  agentkit::Error);
  CHECK_THROWS_WITH(agentkit::read_failure(Json{{"error", "x"}, {"failure", {{"retry_after_ms", 1.5}}}}, ErrorCode::internal, "doc"),
                    Catch::Contains("doc: failure.retry_after_ms"));
}

TEST_CASE("a provider failure reaches RunResult::failure with its code and details", "[error][failure]") {
  std::optional<agentkit::RunResult> recovered;
  const auto result = run_with(
      [] {
        throw providers::ProviderError(ErrorCode::rate_limited, "HTTP 429 from https://api.example/v1", 429, true,
                                       std::chrono::milliseconds(2000));
      },
      &recovered);
  CHECK(result.stop_reason == StopReason::failed);
  REQUIRE(result.failure.has_value());
  CHECK(result.failure->code == ErrorCode::rate_limited);
  CHECK(result.failure->http_status == 429);
  CHECK(result.failure->retryable);
  CHECK(result.failure->retry_after == std::chrono::milliseconds(2000));
  CHECK(result.failure->model == "openai/gpt-4o-mini");
  CHECK(result.failure->message == "model call failed: HTTP 429 from https://api.example/v1");
  CHECK(result.state.failure == result.failure);
  REQUIRE(recovered.has_value());
  CHECK(recovered->stop_reason == StopReason::failed);
  CHECK(recovered->failure == result.failure);
}

TEST_CASE("a model failure that is not a ModelError still gets a code", "[error][failure]") {
  SECTION("another agentkit::Error keeps its code") {
    const auto result = run_with([] { throw agentkit::state::StoreError("cache backend down"); });
    REQUIRE(result.failure.has_value());
    CHECK(result.failure->code == ErrorCode::unavailable);
    CHECK(result.failure->http_status == 0);
  }
  SECTION("a foreign exception is internal") {
    const auto result = run_with([] { throw std::out_of_range("bug"); });
    REQUIRE(result.failure.has_value());
    CHECK(result.failure->code == ErrorCode::internal);
    CHECK(result.failure->message == "model call failed: bug");
  }
}

TEST_CASE("every early stop carries a failure with its code, an answer and a suspension carry none",
          "[error][failure]") {
  auto echo = agentkit::tool("echo")
                  .doc("Echo the text it is given back, unchanged, for testing.")
                  .side_effecting(false)
                  .params("text")
                  .fn([](const std::string& text) { return text; });
  auto refund = agentkit::tool("refund")
                    .doc("Issue a refund against a customer order; a human approves it first.")
                    .side_effecting(true)
                    .requires_approval()
                    .params("order")
                    .fn([](const std::string& order) { return order; });

  SECTION("answered: none") {
    auto llm = FakeLLM::script({Turn{.content = "done"}});
    agentkit::Agent agent("a", "fake", "p", agentkit::cognition::react({}));
    auto ctx = agentkit::testing::make_test_ctx({.llm = llm});
    CHECK_FALSE(agent.run("go", ctx).failure.has_value());
  }
  SECTION("suspended: none") {
    auto llm = FakeLLM::script({Turn{.tool_calls = {{"c1", "refund", {{"order", "A-1"}}}}}});
    agentkit::Agent agent("a", "fake", "p", agentkit::cognition::react({refund}));
    auto ctx = agentkit::testing::make_test_ctx({.llm = llm, .autonomy = agentkit::Autonomy::gated});
    const auto r = agent.run("go", ctx);
    CHECK(r.stop_reason == StopReason::suspended);
    CHECK_FALSE(r.failure.has_value());
  }
  SECTION("max_iterations: budget_exhausted") {
    auto llm = FakeLLM::script({Turn{.tool_calls = {{"c1", "echo", {{"text", "x"}}}}}});
    agentkit::Agent agent("a", "fake", "p", agentkit::cognition::react({echo}), {.max_iterations = 1});
    auto ctx = agentkit::testing::make_test_ctx({.llm = llm});
    const auto r = agent.run("go", ctx);
    CHECK(r.stop_reason == StopReason::max_iterations);
    CHECK(r.failure.value().code == ErrorCode::budget_exhausted);
  }
  SECTION("budget_exhausted: budget_exhausted") {
    auto llm = FakeLLM::script({Turn{.tool_calls = {{"c1", "echo", {{"text", "x"}}}}}});
    agentkit::Agent agent("a", "fake", "p", agentkit::cognition::react({echo}));
    auto ctx = agentkit::testing::make_test_ctx({.llm = llm, .budget = {.model_steps = 1}});
    const auto r = agent.run("go", ctx);
    CHECK(r.stop_reason == StopReason::budget_exhausted);
    CHECK(r.failure.value().code == ErrorCode::budget_exhausted);
  }
  SECTION("cancelled: cancelled") {
    auto llm = FakeLLM::script({Turn{.content = "never"}});
    agentkit::Agent agent("a", "fake", "p", agentkit::cognition::react({}));
    auto ctx = agentkit::testing::make_test_ctx({.llm = llm});
    ctx.cancellation.cancel();
    const auto r = agent.run("go", ctx);
    CHECK(r.stop_reason == StopReason::cancelled);
    CHECK(r.failure.value().code == ErrorCode::cancelled);
  }
  SECTION("repairs exhausted: protocol") {
    std::vector<Turn> turns;
    for (int i = 0; i < 3; ++i) turns.push_back(Turn{.tool_calls = {{"c" + std::to_string(i), "nope", {}}}});
    auto llm = FakeLLM::script(turns);
    agentkit::Agent agent("a", "fake", "p", agentkit::cognition::react({echo}), {.max_repairs = 1});
    auto ctx = agentkit::testing::make_test_ctx({.llm = llm});
    const auto r = agent.run("go", ctx);
    CHECK(r.stop_reason == StopReason::failed);
    CHECK(r.failure.value().code == ErrorCode::protocol);
    CHECK_THAT(r.failure->message, Catch::Contains("bad tool calls"));
    CHECK(r.failure->model.empty());  // not a model call's failure
  }
  SECTION("no model for the agent: the resolver's code") {
    agentkit::Agent agent("a", "nowhere/model", "p", agentkit::cognition::react({}));
    auto ctx = agentkit::testing::make_test_ctx();
    ctx.models = [](std::string_view) -> std::shared_ptr<agentkit::Model> {
      throw Error(ErrorCode::not_found, "unknown model 'nowhere/model'");
    };
    const auto r = agent.run("go", ctx);
    CHECK(r.stop_reason == StopReason::failed);
    CHECK(r.failure.value().code == ErrorCode::not_found);
    CHECK(r.failure->message == "unknown model 'nowhere/model'");
  }
}

TEST_CASE("events carry enums, not strings", "[error][events]") {
  auto echo = agentkit::tool("echo")
                  .doc("Echo the text it is given back, unchanged, for testing.")
                  .side_effecting(false)
                  .params("text")
                  .fn([](const std::string& text) { return text; });
  auto llm = FakeLLM::script({Turn{.tool_calls = {{"c1", "echo", {{"text", "x"}}}}}, Turn{.content = "done"}});
  agentkit::Agent agent("a", "fake", "p", agentkit::cognition::react({echo}));
  auto ctx = agentkit::testing::make_test_ctx({.llm = llm});
  auto handle = agent.start("go", ctx);
  while (!handle.poll()) {
  }
  std::vector<agentkit::CallStatus> outcomes;
  std::vector<StopReason> stops;
  for (const auto& e : handle.drain_events()) {
    if (auto* f = std::get_if<agentkit::ToolCallFinished>(&e)) outcomes.push_back(f->outcome);
    if (auto* f = std::get_if<agentkit::RunFinished>(&e)) stops.push_back(f->stop_reason);
  }
  CHECK(outcomes == std::vector<agentkit::CallStatus>{agentkit::CallStatus::ok});
  CHECK(stops == std::vector<StopReason>{StopReason::answered});
}
