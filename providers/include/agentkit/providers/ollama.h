#pragma once
// Ollama's native chat API (POST /api/chat, NDJSON streaming). Translation
// only: HTTP goes through Transport. (Ollama's OpenAI-compatible /v1 is the
// OpenAI chat adapter with "openai/<model>@http://host:11434/v1".)
#include <memory>
#include <optional>
#include <string>

#include <agentkit/model.h>
#include <agentkit/providers/reply.h>
#include <agentkit/providers/transport.h>

namespace agentkit::providers {

struct OllamaOptions {
  std::string base_url = "http://localhost:11434";  // the server, without /api; OLLAMA_HOST through make_model
  std::string api_key;  // optional (a proxy or a hosted Ollama): sent as "Authorization: Bearer"; never logged
  std::string model;    // e.g. "llama3.2"
  bool stream = true;
  Headers extra_headers;
  // Checked before a request is built: ContentTooLarge (InvalidContent for a
  // malformed part), and nothing goes on the wire.
  ContentLimits content_limits;
};

// The request body for `request`.
//
// Messages: {"role", "content"} with, for a user or tool message, its images
// as base64 `images` (an image given by URL, and any file, becomes a text
// note: Ollama takes image bytes only); an assistant message's tool calls go
// back with their arguments as an object, and its Ollama reasoning as
// `thinking` (reasoning from another provider is never sent); a tool result
// carries `tool_name`. Tools take the OpenAI function shape. Settings map to
// `options` (temperature, top_p, num_predict from max_output_tokens, stop,
// seed) and reasoning_effort to `think` (the level's name); tool_choice
// "none" sends no tools; `extra` is merged last. An output_schema becomes
// `format` (Ollama's structured output). Ollama cannot enforce a required or
// named tool_choice, parallel_tool_calls false, a thinking budget nor the
// effort "minimal" (its levels are low, medium, high): those throw
// UnsupportedSetting (<agentkit/providers/settings.h>) rather than being
// dropped. Throws ContentTooLarge / InvalidContent (check_content)
// before anything is built.
Schema ollama_chat_body(const ModelRequest& request, const OllamaOptions& options, bool stream);

// Decodes a whole /api/chat reply: message content, `thinking` (a
// ReasoningPart of provider "ollama"), tool calls (arguments an object; a
// string is kept as the call's text, for the engine to parse; the `id` when
// the server sends one), done_reason, prompt_eval_count / eval_count, and
// `model` as the response's model (Ollama gives a reply no id: it stays empty).
// Throws the mapped error for {"error": "..."} and ProviderError(protocol)
// for JSON of the wrong shape, or a reply without "done": true.
ModelResponse ollama_chat_response(const Json& body);

// Accumulates a streamed reply, one NDJSON line per event: content and
// thinking fragments, tool calls (each arrives whole, in any line; the last
// line, "done": true, carries none and ends the stream), the counts of the
// last line, the first line's `model`, and {"error": "..."} lines (thrown as
// ProviderError: Ollama reports a failure mid-stream that way, under HTTP 200).
class OllamaStreamAccumulator final : public StreamAccumulator {
 public:
  // `deltas`, when set, receives content as TextDelta, thinking as
  // ReasoningDelta and each tool call as one ToolCallDelta carrying its
  // whole arguments. More than kMaxStreamedReplyBytes of fragments is
  // ProviderError(protocol).
  explicit OllamaStreamAccumulator(DeltaSink deltas = {}) : deltas_(std::move(deltas)) {}
  void on_event(const SseEvent& event) override;  // event.data: one NDJSON line
  bool done() const noexcept override { return done_; }
  ModelResponse finish() override;

 private:
  void count(std::size_t bytes);

  DeltaSink deltas_;
  std::size_t streamed_ = 0;
  ModelResponse response_;
  std::string content_;
  std::string thinking_;
  bool done_ = false;
};

// How a ReplyReader reads /api/chat replies: NDJSON lines, "done": true
// ending a stream.
const ReplyFormat& ollama_chat_reply();

class OllamaChatModel final : public Model {
 public:
  OllamaChatModel(std::shared_ptr<Transport> transport, OllamaOptions options);
  ModelResponse complete(const ModelRequest& request, RunContext& ctx) override;
  // The same call without blocking: the run loop advances it from RunHandle::poll().
  std::unique_ptr<PendingCompletion> begin(const ModelRequest& request, RunContext& ctx) override;
  // Compiles the tools (and output schema) in this provider's dialect
  // (<agentkit/providers/tool_format.h>); throws ToolDefinitionError.
  void check_schemas(std::span<const ToolSpec* const> tools, const Schema* output_schema) const override;
  // "ollama" (gen_ai.provider.name: not one of the convention's well-known
  // values, which a provider without one may add).
  std::string_view provider() const noexcept override { return "ollama"; }
  const OllamaOptions& options() const noexcept { return options_; }

 private:
  std::shared_ptr<Transport> transport_;
  OllamaOptions options_;
};

}  // namespace agentkit::providers
