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
#include <agentkit/providers/reply.h>
#include <agentkit/providers/sse.h>
#include <agentkit/providers/transport.h>

namespace agentkit::providers {

struct OpenAIOptions {
  std::string base_url = "https://api.openai.com/v1";
  std::string api_key;  // sent as "Authorization: Bearer"; never logged
  std::string model;    // e.g. "gpt-4o-mini"
  bool stream = true;
  bool strict_tools = false;
  std::optional<int> max_tokens;           // sent as max_tokens (compatible servers); ModelSettings::max_output_tokens wins
  std::optional<std::string> tool_choice;  // "auto", "required", "none"; ModelSettings::tool_choice wins
  Headers extra_headers;
  // Checked before a request is built: ContentTooLarge (InvalidContent for a
  // malformed part), and nothing goes on the wire.
  ContentLimits content_limits;
};

// The request body for `request` (deterministic: the system prompt and tools
// serialise byte-identically on every turn of a run).
//
// Content parts: user messages that are all text send a string; otherwise a
// list of `text`, `image_url` (a data: URL for bytes, or the URL) and `file`
// parts (base64 `file_data` and `filename`; a file given by URL becomes a
// text note). Assistant and tool messages take text only: an image or file
// there becomes a text note naming what was left out ("[image image/png,
// 1234 bytes omitted: ...]"), never silently dropped. A RefusalPart goes back
// as the assistant's `refusal`; ReasoningParts are never sent. Throws
// ContentTooLarge / InvalidContent (options.content_limits, check_content)
// before anything is built.
//
// ModelRequest::settings map to temperature, top_p, max_completion_tokens (which then replaces
// OpenAIOptions::max_tokens), stop (at most 4), seed, tool_choice (over
// OpenAIOptions::tool_choice), parallel_tool_calls and reasoning_effort; tool
// fields only with tools; `extra` merged last. thinking_budget_tokens, a
// required or named tool_choice the request cannot satisfy, and more than 4
// stop sequences throw UnsupportedSetting (<agentkit/providers/settings.h>).
// An output_schema becomes response_format {"type": "json_schema",
// "json_schema": {"name": "final_answer", "schema": ..., "strict": ...}},
// strict when openai_strict_compatible(schema).
Schema openai_chat_body(const ModelRequest& request, const OpenAIOptions& options, bool stream);
// The same body as the text that goes on the wire (openai_chat_body's dump,
// byte for byte), written without building a tree; what OpenAIChatModel sends.
std::string openai_chat_body_text(const ModelRequest& request, const OpenAIOptions& options, bool stream);

// Decodes a non-streaming response body; the message's `refusal` becomes a
// RefusalPart after its text (streamed `refusal` deltas too). The body's
// `id` and `model` become the response's (in a stream, the first chunk's). Throws ProviderError(protocol) on a
// malformed body (JSON of the wrong shape, a count or index that is not an
// integer in range) and the mapped error for an {"error": ...} body.
ModelResponse openai_chat_response(const Json& body);

// Accumulates a streamed response from SSE events: content deltas, tool-call
// deltas keyed by index, finish reason, usage (the `choices: []` chunk),
// `[DONE]` (the terminal event: done()), and errors inside a 200 stream
// (thrown as ProviderError, as is an event of the wrong shape). Events are
// parsed under the default JsonLimits.
class OpenAIStreamAccumulator final : public StreamAccumulator {
 public:
  // `deltas`, when set, receives each fragment as it is decoded: content as
  // TextDelta; `tool_calls[]` as ToolCallDelta (one when a call's index
  // first appears, carrying its id and name, then one per non-empty
  // `arguments` fragment). A refusal streams no delta (it is a RefusalPart
  // of the message), nor does a compatible server's `reasoning` /
  // `reasoning_content` (this adapter does not read reasoning). A tool call
  // index past 1024 or negative, an `arguments` fragment that is not a
  // string, or more than kMaxStreamedReplyBytes of fragments is
  // ProviderError(protocol).
  explicit OpenAIStreamAccumulator(DeltaSink deltas = {}) : deltas_(std::move(deltas)) {}
  void on_event(const SseEvent& event) override;
  bool done() const noexcept override { return done_; }
  // The response so far, also for a stream cut short: ReplyReader refuses
  // that as truncated.
  ModelResponse finish() override;

 private:
  struct PartialCall {
    std::string id;
    std::string name;
    std::string arguments;
    bool announced = false;  // its first ToolCallDelta went out
  };
  void count(std::size_t bytes);

  DeltaSink deltas_;
  std::size_t streamed_ = 0;  // fragment bytes so far, against kMaxStreamedReplyBytes
  std::string content_;
  std::string refusal_;
  std::vector<PartialCall> calls_;  // by index
  std::string finish_reason_;
  Usage usage_;
  std::string id_;     // the chunks' `id`
  std::string model_;  // the chunks' `model`
  bool done_ = false;
};

// How a ReplyReader reads Chat Completions replies: openai_chat_response for
// whole bodies, `data: [DONE]` ending a stream.
const ReplyFormat& openai_chat_reply();

// The normalised finish reason for an OpenAI `finish_reason`.
std::string openai_finish_reason(std::string_view reason);

class OpenAIToolCache;  // internal: the tools' JSON text, per model

class OpenAIChatModel final : public Model {
 public:
  OpenAIChatModel(std::shared_ptr<Transport> transport, OpenAIOptions options);
  ModelResponse complete(const ModelRequest& request, RunContext& ctx) override;
  // The same call without blocking: the run loop advances it from RunHandle::poll().
  std::unique_ptr<PendingCompletion> begin(const ModelRequest& request, RunContext& ctx) override;
  // Compiles the tools (and output schema) in this provider's dialect
  // (<agentkit/providers/tool_format.h>); throws ToolDefinitionError.
  void check_schemas(std::span<const ToolSpec* const> tools, const Schema* output_schema) const override;
  // "openai" (gen_ai.provider.name), also for a compatible server reached
  // through openai/<model>@<base URL>: the value names the API spoken; the
  // response's model and the server's address tell servers apart.
  std::string_view provider() const noexcept override { return "openai"; }
  const OpenAIOptions& options() const noexcept { return options_; }

 private:
  std::shared_ptr<Transport> transport_;
  OpenAIOptions options_;
  std::shared_ptr<OpenAIToolCache> tool_cache_;
};

}  // namespace agentkit::providers
