// FakeLLM streaming: a scripted turn streams its reasoning, text and tool
// calls as delta events, so hosts test their delta handling offline.
#include <catch2/catch.hpp>

#include <mutex>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

using agentkit::Event;
using agentkit::Json;
using agentkit::ReasoningDelta;
using agentkit::TextDelta;
using agentkit::ToolCall;
using agentkit::ToolCallDelta;
using agentkit::testing::FakeLLM;
using agentkit::testing::Turn;

namespace {

class Recorder final : public agentkit::Observer {
 public:
  void on_event(const Event& event) override {
    std::lock_guard lock(mutex_);
    events_.push_back(event);
  }
  std::vector<Event> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  template <class T>
  std::vector<T> all() const {
    std::lock_guard lock(mutex_);
    std::vector<T> out;
    for (const auto& e : events_) {
      if (const auto* p = std::get_if<T>(&e)) out.push_back(*p);
    }
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Event> events_;
};

bool starts_a_character(const std::string& fragment) {
  return !fragment.empty() && (static_cast<unsigned char>(fragment[0]) & 0xC0) != 0x80;
}

std::vector<Turn> script() {
  return {Turn{.content = "Looking it up.",
               .parts = {agentkit::ReasoningPart{.text = "Lisbon: ask the census tool.", .signature = "sig-secret",
                                                 .provider = "anthropic"}},
               .tool_calls = {ToolCall{"c1", "city_population", {{"city", "Lisbon"}}, {}},
                              ToolCall{"c2", "city_population", {{"city", "Évora"}}, {}}}},
          Turn{.content = "Lisbon has about 545,000 residents — Évora far fewer."}};
}

agentkit::RunResult run(const std::shared_ptr<FakeLLM>& llm, const std::shared_ptr<Recorder>& recorder) {
  auto population = agentkit::tool("city_population")
                        .doc("Look up the most recent census population for a named city.")
                        .side_effecting(false)
                        .params("city")
                        .fn([](const std::string& city) { return city == "Lisbon" ? 545000 : 53000; });
  agentkit::Agent agent("atlas", "fake", "You answer questions about cities.", agentkit::cognition::react({population}));
  auto ctx = agentkit::testing::make_test_ctx({.llm = llm, .observer = recorder});
  return agent.run("How big are Lisbon and Évora?", ctx);
}

}  // namespace

TEST_CASE("FakeLLM streams nothing unless streaming is on", "[fake_llm][deltas]") {
  auto llm = FakeLLM::script(script());
  auto recorder = std::make_shared<Recorder>();
  REQUIRE(run(llm, recorder).stop_reason == agentkit::StopReason::answered);
  CHECK(recorder->all<TextDelta>().empty());
  CHECK(recorder->all<ToolCallDelta>().empty());
  CHECK(recorder->all<ReasoningDelta>().empty());
}

TEST_CASE("FakeLLM streaming: reasoning, text and tool calls as deltas that join to the reply", "[fake_llm][deltas]") {
  auto llm = FakeLLM::script(script());
  llm->streaming(true);
  auto recorder = std::make_shared<Recorder>();
  const auto result = run(llm, recorder);
  REQUIRE(result.stop_reason == agentkit::StopReason::answered);
  CHECK(result.output == "Lisbon has about 545,000 residents — Évora far fewer.");

  std::string reasoning;
  for (const auto& d : recorder->all<ReasoningDelta>()) {
    CHECK(starts_a_character(d.text));
    CHECK(d.text.find("sig-secret") == std::string::npos);
    reasoning += d.text;
  }
  CHECK(reasoning == "Lisbon: ask the census tool.");
  CHECK(recorder->all<ReasoningDelta>().size() > 1);

  std::string text;
  for (const auto& d : recorder->all<TextDelta>()) {
    CHECK(starts_a_character(d.text));
    text += d.text;
  }
  CHECK(text == "Looking it up.Lisbon has about 545,000 residents — Évora far fewer.");

  const auto calls = recorder->all<ToolCallDelta>();
  REQUIRE(calls.size() > 2);
  CHECK(calls[0].index == 0);
  CHECK(calls[0].id == "c1");
  CHECK(calls[0].name == "city_population");
  CHECK(calls[0].arguments.empty());
  std::string first, second;
  for (const auto& d : calls) {
    CHECK(starts_a_character(d.arguments) == !d.arguments.empty());
    (d.index == 0 ? first : second) += d.arguments;
    CHECK(d.id == (d.index == 0 ? "c1" : "c2"));
  }
  CHECK(Json::parse(first) == Json({{"city", "Lisbon"}}));
  CHECK(Json::parse(second) == Json({{"city", "Évora"}}));

  // Reply order within the turn, all before the call ends and the tools start.
  std::vector<std::string> kinds;
  for (const auto& e : recorder->events()) {
    if (std::holds_alternative<ReasoningDelta>(e)) kinds.push_back("reasoning");
    if (std::holds_alternative<TextDelta>(e)) kinds.push_back("text");
    if (std::holds_alternative<ToolCallDelta>(e)) kinds.push_back("tool");
    if (std::holds_alternative<agentkit::ModelCallFinished>(e)) kinds.push_back("finished");
    if (std::holds_alternative<agentkit::ToolCallStarted>(e)) kinds.push_back("started");
    if (!kinds.empty() && kinds.size() > 1 && kinds.back() == kinds[kinds.size() - 2]) kinds.pop_back();
  }
  CHECK(kinds == std::vector<std::string>{"reasoning", "text", "tool", "finished", "started", "text", "finished"});
}

TEST_CASE("FakeLLM streaming: a turn that throws streams nothing, short text is one fragment", "[fake_llm][deltas]") {
  auto llm = FakeLLM::script({Turn{.throws = "boom"}});
  llm->streaming(true);
  auto recorder = std::make_shared<Recorder>();
  CHECK(run(llm, recorder).stop_reason == agentkit::StopReason::failed);
  CHECK(recorder->all<TextDelta>().empty());

  auto one = FakeLLM::script({Turn{.content = "é"}});
  one->streaming(true);
  auto seen = std::make_shared<Recorder>();
  REQUIRE(run(one, seen).output == "é");
  REQUIRE(seen->all<TextDelta>().size() == 1);
  CHECK(seen->all<TextDelta>()[0].text == "é");
}
