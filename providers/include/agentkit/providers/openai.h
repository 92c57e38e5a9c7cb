#pragma once
// OpenAI Chat Completions adapter, also for compatible servers (Ollama /v1,
// vLLM, llama.cpp server, any base URL). Translation only: HTTP goes
// through Transport.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <agentkit/model.h>
#include <agentkit/providers/sse.h>
#include <agentkit/providers/transport.h>

namespace agentkit::providers {

struct OpenAIOptions {
  std::string base_url = "https://api.openai.com/v1";
  std::string api_key;  // sent as "Authorization: Bearer"; never logged
  std::string model;    // e.g. "gpt-4o-mini"
  bool stream = true;
  bool strict_tools = false;
  std::optional<int> max_tokens;
  std::optional<std::string> tool_choice;  // "auto", "required", "none"
  Headers extra_headers;
};

// The request body for `request` (deterministic: the system prompt and tools
// serialise byte-identically on every turn of a run).
Schema openai_chat_body(const ModelRequest& request, const OpenAIOptions& options, bool stream);

// Decodes a non-streaming response body. Throws ProviderError(protocol) on a
// malformed body and the mapped error for an {"error": ...} body.
ModelResponse openai_chat_response(const Json& body);

// Accumulates a streamed response from SSE events: content deltas, tool-call
// deltas keyed by index, finish reason, usage (the `choices: []` chunk),
// `[DONE]`, and errors inside a 200 stream (thrown as ProviderError).
class OpenAIStreamAccumulator {
 public:
  // `on_text`, when set, receives each content fragment as it is decoded.
  explicit OpenAIStreamAccumulator(std::function<void(std::string_view)> on_text = {}) : on_text_(std::move(on_text)) {}
  void on_event(const SseEvent& event);
  bool done() const noexcept { return done_; }
  ModelResponse finish();  // the response so far (also for a stream cut short)

 private:
  struct PartialCall {
    std::string id;
    std::string name;
    std::string arguments;
  };
  std::function<void(std::string_view)> on_text_;
  std::string content_;
  std::vector<PartialCall> calls_;  // by index
  std::string finish_reason_;
  Usage usage_;
  bool done_ = false;
};

// The normalised finish reason for an OpenAI `finish_reason`.
std::string openai_finish_reason(std::string_view reason);

class OpenAIChatModel final : public Model {
 public:
  OpenAIChatModel(std::shared_ptr<Transport> transport, OpenAIOptions options);
  ModelResponse complete(const ModelRequest& request, RunContext& ctx) override;
  // The same call without blocking: the run loop advances it from RunHandle::poll().
  std::unique_ptr<PendingCompletion> begin(const ModelRequest& request, RunContext& ctx) override;
  const OpenAIOptions& options() const noexcept { return options_; }

 private:
  std::shared_ptr<Transport> transport_;
  OpenAIOptions options_;
};

}  // namespace agentkit::providers
