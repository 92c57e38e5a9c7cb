// A run's trace as a collector receives it: an agent (with a sub-agent)
// traced through OtlpExporter, and a run suspended in one process and
// resumed in another (example 03), each decoded by tests/otel/receiver.mjs
// with the OpenTelemetry project's own OTLP definitions.
#include <catch2/catch.hpp>

#include <spawn.h>
#include <sys/wait.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/otlp.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/paths.h"
#include "../helpers/otlp_receiver.h"
#include "../helpers/tool_calls.h"

extern char** environ;

using agentkit::Agent;
using agentkit::Json;
using agentkit::StopReason;
using agentkit::providers::OtlpExporter;
using agentkit::providers::OtlpOptions;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using agentkit_test::attribute;
using agentkit_test::call;
using agentkit_test::eventually;
using agentkit_test::Receiver;
using namespace std::chrono_literals;

namespace {

// The decoded spans by name (a name may repeat).
std::multimap<std::string, Json> by_name(const std::vector<Json>& spans) {
  std::multimap<std::string, Json> out;
  for (const auto& s : spans) out.emplace(s["name"].get<std::string>(), s);
  return out;
}

Json one(const std::multimap<std::string, Json>& spans, const std::string& name) {
  REQUIRE(spans.count(name) == 1);
  return spans.find(name)->second;
}

std::string string_attribute(const Json& span, std::string_view key) {
  const Json v = attribute(span["attributes"], key);
  if (!v.contains("stringValue")) FAIL("span " << span["name"] << " has no string attribute " << key);
  return v["stringValue"];
}

}  // namespace

TEST_CASE("otlp run: a traced run with a sub-agent reaches a collector as one GenAI trace", "[otlp][trace]") {
  Receiver receiver;
  OtlpOptions options;
  options.endpoint = receiver.base();
  options.service_name = "otlp-run-test";
  auto exporter = std::make_shared<OtlpExporter>(options);

  auto researcher = std::make_shared<Agent>("researcher", "fake", "You summarise.");
  auto research_tool = agentkit::as_tool(
      researcher, {.name = "researcher", .description = "Delegate a research sub-task and get a summary back.",
                   .side_effecting = false});
  Agent lead("lead", "fake", "You delegate.", agentkit::cognition::react({research_tool}));
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "researcher", {{"task", "octopus tool use"}})}, .usage = {100, 10, 0}},
      Turn{.content = "They carry shells.", .usage = {40, 5, 0}},
      Turn{.content = "Yes: they carry shells.", .usage = {150, 8, 0}},
  });
  auto ctx = make_test_ctx({.llm = llm});
  ctx.tracer = exporter;
  REQUIRE(lead.run("Do octopuses use tools?", ctx).stop_reason == StopReason::answered);
  REQUIRE(exporter->flush(5s));

  const auto spans = by_name(receiver.spans());
  const Json lead_run = one(spans, "invoke_agent lead");
  const Json call_span = one(spans, "execute_tool researcher");
  const Json sub_run = one(spans, "invoke_agent researcher");
  REQUIRE(spans.count("chat fake") == 3);
  CHECK(spans.size() == 6);
  CHECK(lead_run.value("parentSpanId", std::string()).empty());  // the root: no parent
  CHECK(call_span["parentSpanId"] == lead_run["spanId"]);
  CHECK(sub_run["parentSpanId"] == call_span["spanId"]);
  for (const auto& [name, s] : spans) CHECK(s["traceId"] == lead_run["traceId"]);
  CHECK(string_attribute(call_span, "gen_ai.tool.name") == "researcher");
  CHECK(string_attribute(call_span, "gen_ai.tool.call.id") == "c1");
  CHECK(string_attribute(sub_run, "gen_ai.agent.name") == "researcher");
  std::int64_t input_tokens = 0;
  for (auto [it, end] = spans.equal_range("chat fake"); it != end; ++it) {
    CHECK(it->second["kind"] == 3);  // SPAN_KIND_CLIENT
    CHECK(string_attribute(it->second, "gen_ai.operation.name") == "chat");
    input_tokens += std::stoll(attribute(it->second["attributes"], "gen_ai.usage.input_tokens")["intValue"].get<std::string>());
  }
  CHECK(input_tokens == 290);

  // The GenAI metrics from the three model calls.
  REQUIRE(eventually([&] { return !receiver.requests("/v1/metrics").empty(); }));
  std::set<std::string> metrics;
  for (const auto& r : receiver.requests("/v1/metrics")) {
    for (const auto& rm : r["request"]["resourceMetrics"]) {
      for (const auto& sm : rm["scopeMetrics"]) {
        for (const auto& m : sm["metrics"]) metrics.insert(m["name"].get<std::string>());
      }
    }
  }
  CHECK(metrics == std::set<std::string>{"gen_ai.client.operation.duration", "gen_ai.client.token.usage"});
}

TEST_CASE("otlp run: a run suspended in one process and resumed in another is one trace", "[otlp][trace]") {
#ifndef AGENTKIT_EXAMPLE_03
  WARN("example 03 is not built (AGENTKIT_BUILD_EXAMPLES=OFF): skipped");
  return;
#else
  Receiver receiver;
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string_view v(*e);
    if (!v.starts_with("OTEL_")) env_strings.emplace_back(v);
  }
  env_strings.push_back("OTEL_EXPORTER_OTLP_ENDPOINT=" + receiver.base());
  env_strings.push_back("OTEL_SERVICE_NAME=refund-example");
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string program = AGENTKIT_EXAMPLE_03;
  char* argv[] = {program.data(), nullptr};
  // Its output goes to this test's own (ctest shows it on failure).
  pid_t pid = -1;
  REQUIRE(::posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv, envp.data()) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);

  // Both processes flushed their exporters as they ended.
  const auto spans = by_name(receiver.spans());
  REQUIRE(spans.count("invoke_agent support") == 2);
  auto runs = spans.equal_range("invoke_agent support");
  Json first = runs.first->second;
  Json second = std::next(runs.first)->second;
  if (attribute(first["attributes"], "agentkit.run.resumed").contains("boolValue")) std::swap(first, second);
  CHECK(string_attribute(first, "agentkit.run.stop_reason") == "suspended");
  CHECK(string_attribute(second, "agentkit.run.stop_reason") == "answered");
  CHECK(second["traceId"] == first["traceId"]);
  CHECK(second["parentSpanId"] == first["spanId"]);
  CHECK(string_attribute(second, "agentkit.run.id") == string_attribute(first, "agentkit.run.id"));

  // The refund: awaiting approval under the first part, run under the second.
  std::vector<Json> refunds;
  for (auto [it, end] = spans.equal_range("execute_tool refund"); it != end; ++it) refunds.push_back(it->second);
  REQUIRE(refunds.size() == 2);
  for (const auto& r : refunds) {
    CHECK(r["traceId"] == first["traceId"]);
    const std::string outcome = string_attribute(r, "agentkit.tool.outcome");
    REQUIRE(r["events"].size() == 1);
    if (outcome == "awaiting_approval") {
      CHECK(r["parentSpanId"] == first["spanId"]);
      CHECK(r["events"][0]["name"] == "agentkit.approval.requested");
    } else {
      CHECK(outcome == "ok");
      CHECK(r["parentSpanId"] == second["spanId"]);
      CHECK(r["events"][0]["name"] == "agentkit.approval.decided");
    }
  }
  for (const auto& [name, s] : spans) CHECK(s["traceId"] == first["traceId"]);
#endif
}
