#pragma once
// Anthropic Messages adapter. Translation only: HTTP goes through Transport.
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

struct AnthropicOptions {
  std::string base_url = "https://api.anthropic.com";
  std::string api_key;  // sent as "x-api-key"; never logged
  std::string model;    // e.g. "claude-sonnet-4-5"
  std::string version = "2023-06-01";
  bool stream = true;
  int max_tokens = 4096;  // ModelSettings::max_output_tokens wins
  // Interleaved thinking (thinking between tool calls of one turn, Claude 4
  // models): with a thinking budget set, sends the beta header
  // "anthropic-beta: interleaved-thinking-2025-05-14", and the budget may
  // then exceed max_tokens (it spans every thinking block of the turn).
  bool interleaved_thinking = false;
  Headers extra_headers;
  // Checked before a request is built: ContentTooLarge (InvalidContent for a
  // malformed part), and nothing goes on the wire.
  ContentLimits content_limits;
};

// The request body: `input_schema` tools; tool results first in the next user
// turn (`tool_result` blocks, `is_error` for failures); consecutive results
// share one user message.
//
// Content parts: text-only content is sent as a string, as before; otherwise
// blocks: `text`, `image` and `document` (a base64 or url `source`) in user
// turns and tool results; an image that is not JPEG/PNG/GIF/WebP, a
// document that is not a PDF, or either in an assistant turn becomes a text
// note naming what was left out, never silently dropped. Anthropic
// ReasoningParts in assistant turns go back verbatim as `thinking` (with its
// `signature`) or `redacted_thinking` (its `data`), in their place before
// the turn's tool_use blocks, as the API requires across tool-use turns
// with extended thinking; reasoning from another provider is never sent.
// Throws ContentTooLarge / InvalidContent (options.content_limits,
// check_content) before anything is built.

// ModelRequest::settings map to temperature (0..1), top_p, max_tokens
// (max_output_tokens over AnthropicOptions::max_tokens), stop_sequences,
// tool_choice ({"type": "auto" | "any" | "none" | "tool", "name"}) with
// disable_parallel_tool_use inside it, and thinking {"type": "enabled",
// "budget_tokens": N}; `extra` is merged last. seed, reasoning_effort, a
// budget below 1024 or (without interleaved_thinking) not below
// max_tokens, a temperature above 1, a temperature other than 1 or a top_p
// below 0.95 under thinking, and forced tool use under thinking throw
// UnsupportedSetting
// (<agentkit/providers/settings.h>) before anything is sent.
//
// An output_schema adds the tool kFinalAnswerTool ("final_answer") with the
// schema as input_schema (a non-object schema wrapped as {"value": ...}),
// and, unless the settings choose otherwise, forces it: {"type": "tool"}
// without other tools, {"type": "any"} with them (so they can be called
// first), "auto" under thinking. AnthropicModel turns a response whose only
// tool call is final_answer into the answer: its input as JSON text, no tool
// calls, finish reason "stop"; beside other calls it is dropped (the model
// answers again after their results). An agent tool named final_answer is
// refused.
Schema anthropic_body(const ModelRequest& request, const AnthropicOptions& options, bool stream);

// Decodes a non-streaming response body: `text` blocks as text, `thinking`
// (with its signature) and `redacted_thinking` (its data) as ReasoningParts
// of provider "anthropic", `tool_use` as calls, in reply order. Block types
// agentkit does not know are ignored, as Anthropic documents that new ones
// appear; they never fail or crash a reply. {"type":"error"} bodies throw the
// mapped ProviderError, a malformed body (wrong shape, a count that is not an
// integer in range) ProviderError(protocol).
ModelResponse anthropic_response(const Json& body);

// Accumulates a streamed response: message_start, content_block_* (text,
// tool_use with input_json_delta, thinking with thinking_delta and
// signature_delta, redacted_thinking; other block types ignored), ping, message_delta (stop reason and
// cumulative usage), message_stop (the terminal event: done()), and
// `event: error` (thrown, as is an event of the wrong shape). The response's
// id and model are message_start's message `id` and `model`. A no-argument
// tool's empty partial JSON becomes {}; a tool input cut by max_tokens (in a
// stream that still ends with message_stop) stays unparsed in
// `arguments_text`, so the loop answers it with a repair message instead of
// running it. Events are parsed under the default JsonLimits.
class AnthropicStreamAccumulator final : public StreamAccumulator {
 public:
  // `deltas`, when set, receives each fragment as it is decoded: text_delta
  // as TextDelta; a tool_use block as ToolCallDelta (one at
  // content_block_start with its id and name, then one per non-empty
  // input_json_delta `partial_json`; `index` counts tool_use blocks only);
  // thinking_delta as ReasoningDelta. signature_delta and redacted_thinking
  // stream nothing. `hidden_tool`, when not empty, names a tool_use block
  // that streams no delta and is not counted: the final-answer tool of a
  // declared output type (kFinalAnswerTool), whose input is the answer, not
  // a call (it reaches the run whole, as the reply's text). More than
  // kMaxStreamedReplyBytes of fragments is ProviderError(protocol).
  explicit AnthropicStreamAccumulator(DeltaSink deltas = {}, std::string hidden_tool = {})
      : deltas_(std::move(deltas)), hidden_tool_(std::move(hidden_tool)) {}
  void on_event(const SseEvent& event) override;
  bool done() const noexcept override { return done_; }
  // The response so far, also for a stream cut short: ReplyReader refuses
  // that as truncated.
  ModelResponse finish() override;

 private:
  struct Block {
    std::string type;  // text, tool_use, thinking, redacted_thinking, or other (ignored)
    std::string text;  // text, or thinking
    std::string signature;  // thinking: signature_delta
    std::string data;       // redacted_thinking
    std::string id;
    std::string name;
    std::string partial_json;
    Json input;
    bool stopped = false;
    std::size_t call = 0;  // tool_use: its index among the streamed tool calls
    bool hidden = false;   // tool_use of hidden_tool_: streams no delta
  };
  void count(std::size_t bytes);

  DeltaSink deltas_;
  std::string hidden_tool_;
  std::size_t calls_ = 0;     // tool_use blocks started (not hidden)
  std::size_t streamed_ = 0;  // fragment bytes so far, against kMaxStreamedReplyBytes
  std::vector<Block> blocks_;  // by index
  std::string stop_reason_;
  Usage usage_;
  std::string id_;     // message_start's message.id
  std::string model_;  // message_start's message.model
  bool done_ = false;
};

// How a ReplyReader reads Messages replies: anthropic_response for whole
// bodies, `message_stop` ending a stream.
const ReplyFormat& anthropic_reply();

std::string anthropic_stop_reason(std::string_view reason);

class AnthropicModel final : public Model {
 public:
  AnthropicModel(std::shared_ptr<Transport> transport, AnthropicOptions options);
  ModelResponse complete(const ModelRequest& request, RunContext& ctx) override;
  // The same call without blocking: the run loop advances it from RunHandle::poll().
  std::unique_ptr<PendingCompletion> begin(const ModelRequest& request, RunContext& ctx) override;
  // Compiles the tools (and output schema) in this provider's dialect
  // (<agentkit/providers/tool_format.h>); throws ToolDefinitionError.
  void check_schemas(std::span<const ToolSpec* const> tools, const Schema* output_schema) const override;
  // "anthropic" (gen_ai.provider.name), also for an Anthropic-compatible
  // server reached through anthropic/<model>@<base URL>.
  std::string_view provider() const noexcept override { return "anthropic"; }
  const AnthropicOptions& options() const noexcept { return options_; }

 private:
  std::shared_ptr<Transport> transport_;
  AnthropicOptions options_;
};

}  // namespace agentkit::providers
