#pragma once
// FakeLLM: a scripted model for offline tests. It plays its turns in order,
// records every request, and fails loudly, naming the call number, when the
// script runs out.
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <agentkit/error.h>
#include <agentkit/model.h>

namespace agentkit::testing {

// One scripted model turn: text, tool calls, or both, and any other parts.
// The reply's content is `parts`, then `content` as a text part (when not
// empty): Turn{.content = "Done.", .parts = {ReasoningPart{...}}} replies
// with the reasoning, then the text.
struct Turn {
  std::string content;
  std::vector<ContentPart> parts;
  std::vector<ToolCall> tool_calls;
  Usage usage{10, 5, 0};
  std::string finish_reason;  // empty: "tool_calls" when calls are present, else "stop"
  std::string throws;         // non-empty: the call throws std::runtime_error(throws)
};

// Thrown when the model is called more times than its script has turns.
// Code internal (a test's script is wrong).
class ScriptExhausted : public Error {
 public:
  explicit ScriptExhausted(const std::string& message) : Error(ErrorCode::internal, message) {}
};

// Example:
//   auto llm = agentkit::testing::FakeLLM::script({
//       Turn{.tool_calls = {{"c1", "city_population", {{"city", "Lisbon"}}}}},
//       Turn{.content = "Lisbon has about 545,000 residents."}});
//   // Scripted reasoning and a refusal:
//   Turn{.content = "42", .parts = {ReasoningPart{.text = "6 * 7", .signature = "sig", .provider = "anthropic"}}};
//   Turn{.parts = {RefusalPart{"I can't help with that."}}};
//   // Asserting what reached the model:
//   CHECK(llm->requests()[1].images().at(0).data == frame_bytes);
class FakeLLM final : public Model {
 public:
  // One request as the model saw it.
  struct Request {
    std::string model;
    std::string system;
    std::vector<Message> messages;
    std::vector<std::string> tools;  // advertised tool names, in order
    ModelSettings settings;          // ModelRequest::settings (empty when null)
    std::string traceparent;         // ModelRequest::traceparent: set when the run is traced

    // Every part of type P in `messages`, oldest first: images() shows
    // whether a camera frame reached the model.
    template <class P>
    std::vector<P> parts() const {
      std::vector<P> out;
      for (const auto& m : messages) {
        for (const auto& part : m.content) {
          if (const auto* p = std::get_if<P>(&part)) out.push_back(*p);
        }
      }
      return out;
    }
    std::vector<ImagePart> images() const { return parts<ImagePart>(); }
  };

  FakeLLM() = default;
  explicit FakeLLM(std::vector<Turn> turns) : turns_(std::move(turns)) {}
  static std::shared_ptr<FakeLLM> script(std::vector<Turn> turns) { return std::make_shared<FakeLLM>(std::move(turns)); }

  ModelResponse complete(const ModelRequest& request, RunContext& ctx) override;

  std::vector<Request> requests() const;
  std::size_t calls() const;
  std::size_t remaining() const;
  // Recording copies each request's history; benchmarks turn it off.
  void record_requests(bool on);
  // Replays the script from the start (benchmarks reuse one script).
  void rewind();
  // Off by default. On: each turn streams before it replies, as a streaming
  // adapter does, through ctx.emit in reply order: a ReasoningDelta per
  // ReasoningPart's text and a TextDelta per TextPart, then `content` as
  // TextDeltas, then each tool call as ToolCallDeltas (the first carrying
  // its id and name with empty arguments, then its arguments text —
  // `arguments_text`, or `arguments` dumped — in fragments). Text is split
  // into up to three fragments on UTF-8 boundaries; joined, the fragments
  // are the reply's. A turn that throws streams nothing.
  //
  // Example:
  //   auto llm = FakeLLM::script({Turn{.content = "Lisbon has about 545,000 residents."}});
  //   llm->streaming(true);  // the run's events now carry TextDeltas
  void streaming(bool on);

 private:
  mutable std::mutex mutex_;
  std::vector<Turn> turns_;
  std::size_t next_ = 0;
  bool record_ = true;
  bool streaming_ = false;
  std::vector<Request> requests_;
};

}  // namespace agentkit::testing
