// Traces: W3C ids and traceparent, and the spans a run makes (invoke_agent,
// chat, execute_tool) with their GenAI attributes, parentage across a
// sub-run and a suspend/resume, errors, and content only when opted in.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/run_state.h>
#include <agentkit/state/keys.h>
#include <agentkit/state/store.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/span_recorder.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/trace.h>

#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::Decision;
using agentkit::Json;
using agentkit::RunContext;
using agentkit::StopReason;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::SpanRecorder;
using agentkit::testing::Turn;
using agentkit::trace::AttributeValue;
using agentkit::trace::Span;
using agentkit_test::call;

namespace {

std::string str(const Span& span, std::string_view key) {
  const AttributeValue* v = span.attribute(key);
  if (!v) FAIL("span '" << span.name << "' has no attribute " << key);
  return std::get<std::string>(*v);
}
std::int64_t num(const Span& span, std::string_view key) {
  const AttributeValue* v = span.attribute(key);
  if (!v) FAIL("span '" << span.name << "' has no attribute " << key);
  return std::get<std::int64_t>(*v);
}

Span only(const std::vector<Span>& spans) {
  REQUIRE(spans.size() == 1);
  return spans[0];
}

agentkit::ToolPtr add_tool() {
  return agentkit::tool("add")
      .doc("Add two integers and return their sum to the caller.")
      .side_effecting(false)
      .params("a", "b")
      .fn([](int a, int b) { return a + b; });
}

agentkit::ToolPtr refund_tool() {
  return agentkit::tool("refund")
      .doc("Refund an order in full; a human approves every refund first.")
      .side_effecting(true)
      .requires_approval()
      .params("order")
      .fn([](const std::string& order) { return "refunded " + order; });
}

}  // namespace

TEST_CASE("trace ids are W3C ids: lowercase hex, never all zeros, unique", "[trace]") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string t = agentkit::trace::new_trace_id().str();
    const std::string s = agentkit::trace::new_span_id().str();
    CHECK(agentkit::trace::valid_trace_id(t));
    CHECK(agentkit::trace::valid_span_id(s));
    CHECK(seen.insert(t).second);
    CHECK(seen.insert(s).second);
  }
  CHECK_FALSE(agentkit::trace::valid_trace_id(std::string(32, '0')));
  CHECK_FALSE(agentkit::trace::valid_span_id("00f067aa0BA902b7"));  // upper case
  CHECK_FALSE(agentkit::trace::valid_span_id("00f067aa0ba902b"));   // short
}

TEST_CASE("TraceId and SpanId hold only W3C ids, inline, and refuse anything else typed", "[trace]") {
  using agentkit::trace::SpanId;
  using agentkit::trace::TraceId;
  const SpanId none;
  CHECK(none.empty());
  CHECK(none.view().empty());
  CHECK(SpanId("").empty());  // empty is no id
  const TraceId t("4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(t.size() == 32);
  CHECK(t == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(t.str() == "4bf92f3577b34da6a3ce929d0e0e4736");
  TraceId copy = t;
  CHECK(copy == t);
  copy.clear();
  CHECK(copy.empty());
  CHECK(copy != t);
  CHECK(SpanId("00f067aa0ba902b7") != SpanId("00f067aa0ba902b8"));
  for (const char* bad : {"00f067aa0BA902b7", "00f067aa0ba902b", "00f067aa0ba902b77", "0000000000000000",
                          "00f067aa0ba902g7", "span-1"}) {
    INFO(bad);
    CHECK_FALSE(SpanId::parse(bad));
    try {
      SpanId id(bad);
      FAIL("accepted");
    } catch (const agentkit::Error& e) {
      CHECK(e.code() == agentkit::ErrorCode::invalid_argument);
    }
  }
  CHECK_FALSE(TraceId::parse("00f067aa0ba902b7"));  // a span id is no trace id
  CHECK_FALSE(SpanId::parse(""));
  CHECK(SpanId::parse("00f067aa0ba902b7")->view() == "00f067aa0ba902b7");
  // A span as JSON keeps its ids; a tampered one is refused.
  agentkit::trace::Span span;
  span.trace_id = t;
  span.span_id = SpanId("00f067aa0ba902b7");
  Json j = agentkit::trace::to_json(span);
  CHECK(j["parent_span_id"] == "");
  CHECK(agentkit::trace::span_from_json(j).span_id == span.span_id);
  CHECK(agentkit::trace::span_from_json(j).parent_span_id.empty());
  for (const char* field : {"trace_id", "span_id", "parent_span_id"}) {
    Json tampered = j;
    tampered[field] = "0000000000000000";
    CHECK_THROWS_AS(agentkit::trace::span_from_json(tampered), agentkit::Error);
  }
}

TEST_CASE("traceparent: parsed as the W3C standard says, anything else refused", "[trace]") {
  using agentkit::trace::parse_traceparent;
  const auto p = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  REQUIRE(p);
  CHECK(p->trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(p->span_id == "00f067aa0ba902b7");
  CHECK(p->sampled);
  CHECK_FALSE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")->sampled);
  // A later version: its first four fields, whatever follows a '-'.
  CHECK(parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds"));
  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",   // version 00 has no more
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",         // version ff is invalid
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",         // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",         // zero span id
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",         // upper case
           "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",         // separators
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",         // flags not hex
           "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",          // short trace id
       }) {
    INFO(bad);
    CHECK_FALSE(parse_traceparent(bad));
  }
  CHECK(agentkit::trace::format_traceparent("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7") ==
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");

  RunContext ctx;
  CHECK(ctx.traceparent().empty());
  CHECK_FALSE(ctx.continue_trace("garbage"));
  CHECK(ctx.trace_id.empty());
  CHECK(ctx.parent_span_id.empty());
}

TEST_CASE("a traced run: invoke_agent over chat and execute_tool, in the GenAI conventions", "[trace]") {
  Agent agent("calculator", "fake", "You add numbers with the add tool.", react({add_tool()}));
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "add", {{"a", 2}, {"b", 3}})}, .usage = {100, 20, 0}},
      Turn{.content = "5", .usage = {130, 4, 0}},
  });
  auto ctx = make_test_ctx({.llm = llm});
  auto spans = std::make_shared<SpanRecorder>();
  ctx.tracer = spans;
  const auto result = agent.run("2 + 3?", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);

  const Span run = only(spans->named("invoke_agent calculator"));
  const auto chats = spans->named("chat fake");
  REQUIRE(chats.size() == 2);
  const Span tool = only(spans->named("execute_tool add"));
  CHECK(spans->spans().size() == 4);

  // One trace; the run is the root; everything else hangs under it.
  CHECK(agentkit::trace::valid_trace_id(run.trace_id));
  CHECK(run.parent_span_id.empty());
  for (const Span& s : {chats[0], chats[1], tool}) {
    CHECK(s.trace_id == run.trace_id);
    CHECK(s.parent_span_id == run.span_id);
    CHECK(agentkit::trace::valid_span_id(s.span_id));
    CHECK(s.start <= s.end);
  }
  CHECK(result.state.trace_id == run.trace_id);
  CHECK(result.state.trace_span_id == run.span_id);

  CHECK(str(run, "gen_ai.operation.name") == "invoke_agent");
  CHECK(str(run, "gen_ai.agent.name") == "calculator");
  CHECK(str(run, "agentkit.run.id") == result.state.run_id);
  CHECK(str(run, "agentkit.run.stop_reason") == "answered");
  CHECK(num(run, "gen_ai.usage.input_tokens") == 230);
  CHECK(num(run, "gen_ai.usage.output_tokens") == 24);
  CHECK(run.status == agentkit::trace::SpanStatus::unset);

  CHECK(chats[0].kind == agentkit::trace::SpanKind::client);
  CHECK(str(chats[0], "gen_ai.operation.name") == "chat");
  CHECK(str(chats[0], "gen_ai.request.model") == "fake");
  CHECK(str(chats[0], "gen_ai.response.id") == "fake_1");
  CHECK(str(chats[1], "gen_ai.response.id") == "fake_2");
  CHECK(std::get<std::vector<std::string>>(*chats[0].attribute("gen_ai.response.finish_reasons")) ==
        std::vector<std::string>{"tool_calls"});
  CHECK(num(chats[0], "gen_ai.usage.input_tokens") == 100);
  CHECK(num(chats[1], "gen_ai.usage.output_tokens") == 4);
  CHECK(chats[0].attribute("gen_ai.provider.name") == nullptr);  // FakeLLM is no provider's

  CHECK(str(tool, "gen_ai.operation.name") == "execute_tool");
  CHECK(str(tool, "gen_ai.tool.name") == "add");
  CHECK(str(tool, "gen_ai.tool.call.id") == "c1");
  CHECK(str(tool, "gen_ai.tool.description") == "Add two integers and return their sum to the caller.");
  CHECK(str(tool, "agentkit.tool.outcome") == "ok");

  // Each model request carried its own chat span as traceparent.
  const auto requests = llm->requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].traceparent == agentkit::trace::format_traceparent(run.trace_id, chats[0].span_id));
  CHECK(requests[1].traceparent == agentkit::trace::format_traceparent(run.trace_id, chats[1].span_id));

  // Content is the host's to opt into: none by default.
  for (const Span& s : spans->spans()) {
    CHECK(s.attribute("gen_ai.input.messages") == nullptr);
    CHECK(s.attribute("gen_ai.output.messages") == nullptr);
    CHECK(s.attribute("gen_ai.tool.call.arguments") == nullptr);
  }
}

TEST_CASE("a run with neither a tracer nor a store has no trace and sends no traceparent", "[trace]") {
  Agent agent("calculator", "fake", "p", react({add_tool()}));
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "add", {{"a", 1}, {"b", 1}})}}, Turn{.content = "2"}});
  auto ctx = make_test_ctx({.llm = llm});
  ctx.store = nullptr;
  const auto result = agent.run("1 + 1?", ctx);
  CHECK(result.stop_reason == StopReason::answered);
  for (const auto& r : llm->requests()) CHECK(r.traceparent.empty());
  CHECK(result.state.trace_id.empty());
  CHECK_FALSE(result.state.to_json().contains("trace"));
}

TEST_CASE("a host's traceparent: the run joins the caller's trace under its span", "[trace]") {
  Agent agent("echo", "fake", "p");
  auto llm = FakeLLM::script({Turn{.content = "hi"}});
  auto ctx = make_test_ctx({.llm = llm});
  auto spans = std::make_shared<SpanRecorder>();
  ctx.tracer = spans;
  REQUIRE(ctx.continue_trace("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
  agent.run("hello", ctx);
  const Span run = only(spans->named("invoke_agent echo"));
  CHECK(run.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(run.parent_span_id == "00f067aa0ba902b7");
  CHECK(only(spans->named("chat fake")).trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
}

TEST_CASE("content is captured only when the sink opts in", "[trace]") {
  Agent agent("calculator", "fake", "You add numbers.", react({add_tool()}));
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "add", {{"a", 2}, {"b", 3}})}}, Turn{.content = "5"}});
  auto ctx = make_test_ctx({.llm = llm});
  auto spans = std::make_shared<SpanRecorder>(/*capture_content=*/true);
  ctx.tracer = spans;
  agent.run("What is 2 + 3?", ctx);
  const auto chats = spans->named("chat fake");
  REQUIRE(chats.size() == 2);
  const Json input = Json::parse(str(chats[0], "gen_ai.input.messages"));
  CHECK(input == Json::parse(R"([{"role":"user","parts":[{"type":"text","content":"What is 2 + 3?"}]}])"));
  const Json output = Json::parse(str(chats[0], "gen_ai.output.messages"));
  CHECK(output[0]["role"] == "assistant");
  CHECK(output[0]["finish_reason"] == "tool_calls");
  CHECK(output[0]["parts"][0] == Json::parse(R"({"type":"tool_call","id":"c1","name":"add","arguments":{"a":2,"b":3}})"));
  const Json second = Json::parse(str(chats[1], "gen_ai.input.messages"));
  CHECK(second[2]["parts"][0] == Json::parse(R"({"type":"tool_call_response","id":"c1","response":"5"})"));
  CHECK(Json::parse(str(chats[0], "gen_ai.system_instructions"))[0]["content"] == "You add numbers.");
  const Span tool = only(spans->named("execute_tool add"));
  CHECK(Json::parse(str(tool, "gen_ai.tool.call.arguments")) == Json{{"a", 2}, {"b", 3}});
  CHECK(str(tool, "gen_ai.tool.call.result") == "5");
}

TEST_CASE("a sub-run's spans hang under the tool call that started it, in the parent's trace", "[trace][as_tool]") {
  auto researcher = std::make_shared<Agent>("researcher", "fake", "You summarise.");
  auto research_tool = agentkit::as_tool(
      researcher, {.name = "researcher", .description = "Delegate a research sub-task and get a summary back.",
                   .side_effecting = false});
  Agent lead("lead", "fake", "You delegate.", react({research_tool}));
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "researcher", {{"task", "octopus tool use"}})}},
      Turn{.content = "They carry shells."},
      Turn{.content = "Yes: they carry shells."},
  });
  auto ctx = make_test_ctx({.llm = llm});
  auto spans = std::make_shared<SpanRecorder>();
  ctx.tracer = spans;
  lead.run("Do octopuses use tools?", ctx);

  const Span lead_run = only(spans->named("invoke_agent lead"));
  const Span call_span = only(spans->named("execute_tool researcher"));
  const Span sub_run = only(spans->named("invoke_agent researcher"));
  CHECK(call_span.parent_span_id == lead_run.span_id);
  CHECK(sub_run.parent_span_id == call_span.span_id);
  CHECK(sub_run.trace_id == lead_run.trace_id);
  CHECK(str(sub_run, "agentkit.agent.path") == "lead/researcher");
  const auto chats = spans->named("chat fake");
  REQUIRE(chats.size() == 3);
  CHECK(chats[1].parent_span_id == sub_run.span_id);  // the researcher's own model call
  // The sub-run lies within the call that started it.
  CHECK(call_span.start <= sub_run.start);
  CHECK(sub_run.end <= call_span.end);
}

TEST_CASE("suspend and resume: one trace, the approval wait and the decision as span events", "[trace][approval]") {
  Agent agent("support", "fake", "You refund orders.", react({refund_tool()}));
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("r1", "refund", {{"order", "A-1"}}), call("r2", "refund", {{"order", "B-2"}})}},
      Turn{.content = "A-1 refunded; B-2 was not."},
  });
  auto ctx = make_test_ctx({.llm = llm});
  auto first = std::make_shared<SpanRecorder>();
  ctx.tracer = first;
  const auto suspended = agent.run("Refund A-1 and B-2.", ctx);
  REQUIRE(suspended.stop_reason == StopReason::suspended);

  const Span run1 = only(first->named("invoke_agent support"));
  CHECK(str(run1, "agentkit.run.stop_reason") == "suspended");
  const auto waits = first->named("execute_tool refund");
  REQUIRE(waits.size() == 2);
  for (const Span& w : waits) {
    CHECK(str(w, "agentkit.tool.outcome") == "awaiting_approval");
    REQUIRE(w.events.size() == 1);
    CHECK(w.events[0].name == "agentkit.approval.requested");
    CHECK(w.status == agentkit::trace::SpanStatus::unset);
  }

  // Another "process": a fresh context and sink, the run found by id in the store.
  auto later = make_test_ctx({.llm = llm, .store = ctx.store});
  auto second = std::make_shared<SpanRecorder>();
  later.tracer = second;
  const auto done = agent.resume(suspended.state.run_id,
                                 {{"r1", Decision::approve()}, {"r2", Decision::reject("over the limit")}}, later);
  REQUIRE(done.stop_reason == StopReason::answered);

  const Span run2 = only(second->named("invoke_agent support"));
  CHECK(run2.trace_id == run1.trace_id);
  CHECK(run2.parent_span_id == run1.span_id);
  CHECK(run2.attribute("agentkit.run.resumed") != nullptr);
  const auto calls = second->named("execute_tool refund");
  REQUIRE(calls.size() == 2);
  for (const Span& c : calls) {
    CHECK(c.trace_id == run1.trace_id);
    CHECK(c.parent_span_id == run2.span_id);
    REQUIRE(c.events.size() == 1);
    CHECK(c.events[0].name == "agentkit.approval.decided");
    const auto& decision = std::get<std::string>(c.events[0].attributes.at(0).value);
    if (str(c, "gen_ai.tool.call.id") == "r1") {
      CHECK(decision == "approved");
      CHECK(str(c, "agentkit.tool.outcome") == "ok");
    } else {
      CHECK(decision == "rejected");
      CHECK(str(c, "agentkit.tool.outcome") == "denied");
      CHECK(str(c, "error.type") == "denied");
      CHECK(c.status == agentkit::trace::SpanStatus::error);
    }
  }
  // The chat span after the resume joins the same trace.
  CHECK(only(second->named("chat fake")).parent_span_id == run2.span_id);
}

TEST_CASE("a failed model call: error.type from the typed error on chat and invoke_agent", "[trace]") {
  class RateLimited final : public agentkit::Model {
   public:
    agentkit::ModelResponse complete(const agentkit::ModelRequest&, RunContext&) override {
      throw agentkit::ModelError(agentkit::ErrorCode::rate_limited, "slow down", {7, 0, 0}, 429, true);
    }
    std::string_view provider() const noexcept override { return "openai"; }
  };
  Agent agent("echo", "openai/gpt-4o-mini@http://127.0.0.1:1", "p");
  auto ctx = make_test_ctx({.llm = std::make_shared<RateLimited>()});
  auto spans = std::make_shared<SpanRecorder>();
  ctx.tracer = spans;
  const auto result = agent.run("hello", ctx);
  REQUIRE(result.stop_reason == StopReason::failed);
  const Span chat = only(spans->named("chat gpt-4o-mini"));
  CHECK(str(chat, "gen_ai.provider.name") == "openai");
  CHECK(str(chat, "gen_ai.request.model") == "gpt-4o-mini");
  CHECK(str(chat, "error.type") == "rate_limited");
  CHECK(chat.status == agentkit::trace::SpanStatus::error);
  CHECK(num(chat, "gen_ai.usage.input_tokens") == 7);
  const Span run = only(spans->named("invoke_agent echo"));
  CHECK(str(run, "error.type") == "rate_limited");
  CHECK(str(run, "agentkit.run.stop_reason") == "failed");
  CHECK(run.status == agentkit::trace::SpanStatus::error);
}

TEST_CASE("a tool that fails: its span carries the outcome as error.type", "[trace]") {
  auto broken = agentkit::tool("broken")
                    .doc("Always fails, to show how a failing tool is traced.")
                    .side_effecting(false)
                    .params("x")
                    .fn([](int) -> int { throw std::runtime_error("disk on fire"); });
  Agent agent("a", "fake", "p", react({broken}));
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "broken", {{"x", 1}})}}, Turn{.content = "sorry"}});
  auto ctx = make_test_ctx({.llm = llm});
  auto spans = std::make_shared<SpanRecorder>();
  ctx.tracer = spans;
  agent.run("go", ctx);
  const Span tool = only(spans->named("execute_tool broken"));
  CHECK(str(tool, "error.type") == "error");
  CHECK(tool.status == agentkit::trace::SpanStatus::error);
  CHECK_THAT(tool.status_message, Catch::Contains("disk on fire"));
}

TEST_CASE("a trace id in a stored state is checked like every field", "[trace][run_state]") {
  agentkit::RunState s;
  s.run_id = "r";
  s.trace_id = agentkit::trace::new_trace_id().str();
  s.trace_span_id = agentkit::trace::new_span_id().str();
  Json doc = s.to_json();
  CHECK(agentkit::RunState::from_json(doc).trace_id == s.trace_id);
  CHECK(agentkit::RunState::from_json(doc).trace_span_id == s.trace_span_id);
  doc["trace"]["trace_id"] = "not-a-trace-id";
  CHECK_THROWS_WITH(agentkit::RunState::from_json(doc), Catch::Contains("trace"));
  doc.erase("trace");
  CHECK(agentkit::RunState::from_json(doc).trace_id.empty());  // older documents have none
}

TEST_CASE("a durable run stores its spans with its checkpoints, tracer or not", "[trace][durable]") {
  Agent agent("calculator", "fake", "p", react({add_tool()}));
  for (const bool traced : {false, true}) {
    DYNAMIC_SECTION((traced ? "with" : "without") << " a tracer") {
      auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "add", {{"a", 1}, {"b", 1}})}}, Turn{.content = "2"}});
      auto ctx = make_test_ctx({.llm = llm});
      auto spans = std::make_shared<SpanRecorder>();
      if (traced) ctx.tracer = spans;
      const auto result = agent.run("1 + 1?", ctx);
      REQUIRE(result.stop_reason == StopReason::answered);
      REQUIRE(agentkit::trace::valid_trace_id(result.state.trace_id));
      // Every request carries the run's trace: the record and the wire agree.
      for (const auto& r : llm->requests()) CHECK(r.traceparent.substr(3, 32) == result.state.trace_id);

      // One segment: the steps' spans rode in the checkpoints until the run ended.
      const auto stored = ctx.store->list(agentkit::state::keys::trace_spans(ctx.scope, result.state.trace_id));
      REQUIRE(stored.size() == 1);
      CHECK(stored[0].first.find("/" + result.state.run_id + "#") != std::string::npos);
      std::map<std::string, Span> by_id;
      for (const Json& j : Json::parse(stored[0].second.value)) {
        Span s = agentkit::trace::span_from_json(j);
        by_id.emplace(s.span_id.str(), std::move(s));
      }
      REQUIRE(by_id.size() == 4);  // invoke_agent, two chats, one execute_tool
      const auto doc = Json::parse(ctx.store->get(agentkit::state::keys::run(ctx.scope, result.state.run_id))->value);
      CHECK_FALSE(doc.contains("spans"));  // all in the trace once the run rests
      const Span& root = by_id.at(result.state.trace_span_id);
      CHECK(root.name == "invoke_agent calculator");
      for (const auto& [id, s] : by_id) {
        if (id != root.span_id) CHECK(s.parent_span_id == root.span_id);
      }
      if (traced) {
        // The sink saw exactly what the store keeps.
        for (const Span& s : spans->spans()) {
          REQUIRE(by_id.count(s.span_id.str()) == 1);
          CHECK(agentkit::trace::to_json(by_id.at(s.span_id.str())) == agentkit::trace::to_json(s));
        }
      }
    }
  }
}

TEST_CASE("a run that crashes mid-run keeps its spans in its checkpoint, the run that continues it writes them out",
          "[trace][durable]") {
  Agent agent("calculator", "fake", "p", react({add_tool()}));
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "add", {{"a", 1}, {"b", 1}})}},
                              Turn{.tool_calls = {call("c2", "add", {{"a", 2}, {"b", 2}})}}, Turn{.content = "done"}});
  auto ctx = make_test_ctx({.llm = llm});
  {
    // Advance until the second model call is made, then "crash": the handle
    // is dropped mid-run (its queued saves are written; no end is).
    auto handle = agent.start("add twice", ctx, {.run_id = "crash-1"});
    for (int i = 0; i < 1000 && llm->calls() < 2; ++i) {
      handle.poll();
      handle.wait_ready(std::chrono::milliseconds(10));  // the step waits for its checkpoint
    }
    REQUIRE(llm->calls() == 2);
  }
  const Json doc = Json::parse(ctx.store->get(agentkit::state::keys::run(ctx.scope, "crash-1"))->value);
  REQUIRE(doc.contains("spans"));  // the first chat and tool spans, not yet in the trace
  REQUIRE(doc["spans"].size() == 2);
  const std::string trace_id = doc["trace"]["trace_id"];
  CHECK(ctx.store->list(agentkit::state::keys::trace_spans(ctx.scope, trace_id)).empty());

  const auto result = agent.recover("crash-1", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  std::set<std::string> names;
  std::size_t count = 0;
  for (const auto& [key, entry] : ctx.store->list(agentkit::state::keys::trace_spans(ctx.scope, trace_id))) {
    for (const Json& j : Json::parse(entry.value)) {
      names.insert(agentkit::trace::span_from_json(j).name);
      ++count;
    }
  }
  // The crashed part's chat and add (carried over from its checkpoint), then
  // the recovered part's invoke_agent and its model call (the script's next
  // turn answers).
  CHECK(count == 4);
  CHECK(names == std::set<std::string>{"chat fake", "execute_tool add", "invoke_agent calculator"});
}

TEST_CASE("span JSON: round trip keeps every type, malformed spans are refused", "[trace]") {
  Span s;
  s.trace_id = agentkit::trace::new_trace_id();
  s.span_id = agentkit::trace::new_span_id();
  s.name = "chat gpt-4o";
  s.kind = agentkit::trace::SpanKind::client;
  s.start = std::chrono::system_clock::time_point(std::chrono::microseconds(1'700'000'000'000'001));
  s.end = s.start + std::chrono::milliseconds(250);
  s.attributes = {{"b", true}, {"i", std::int64_t{42}}, {"d", 0.5}, {"s", std::string("x")},
                  {"a", std::vector<std::string>{"stop"}}};
  s.events = {{"agentkit.approval.decided", s.end, {{"agentkit.approval.decision", std::string("approved")}}}};
  s.status = agentkit::trace::SpanStatus::error;
  s.status_message = "boom";
  const Span back = agentkit::trace::span_from_json(agentkit::trace::to_json(s));
  CHECK(agentkit::trace::to_json(back) == agentkit::trace::to_json(s));
  CHECK(std::get<std::int64_t>(*back.attribute("i")) == 42);
  CHECK(std::get<double>(*back.attribute("d")) == 0.5);
  CHECK(back.start == s.start);

  Json bad = agentkit::trace::to_json(s);
  bad["span_id"] = "zz";
  CHECK_THROWS_AS(agentkit::trace::span_from_json(bad), agentkit::Error);
  bad = agentkit::trace::to_json(s);
  bad["attributes"]["nested"] = Json::object();
  CHECK_THROWS_WITH(agentkit::trace::span_from_json(bad), Catch::Contains("nested"));
  bad = agentkit::trace::to_json(s);
  bad["kind"] = "sideways";
  CHECK_THROWS_WITH(agentkit::trace::span_from_json(bad), Catch::Contains("sideways"));
  bad = agentkit::trace::to_json(s);
  bad.erase("start_us");
  CHECK_THROWS_AS(agentkit::trace::span_from_json(bad), agentkit::Error);
}

TEST_CASE("an attribute key holds a literal by reference and any other string by value", "[trace]") {
  static constexpr char literal[] = "gen_ai.usage.input_tokens";
  const agentkit::trace::AttributeKey from_literal = literal;
  CHECK(from_literal.view().data() == literal);  // not copied
  CHECK(from_literal == "gen_ai.usage.input_tokens");

  std::string buffer = "agentkit.custom.key";
  const agentkit::trace::AttributeKey owned = buffer;
  buffer.assign("overwritten");
  const agentkit::trace::AttributeKey copy = owned;  // NOLINT(performance-unnecessary-copy-initialization)
  CHECK(copy == "agentkit.custom.key");
  CHECK(copy.starts_with("agentkit."));
  CHECK_FALSE(copy == "agentkit.custom");
}
