#pragma once
// OpenAI's Responses API (POST /v1/responses, SSE streaming with `event:`
// lines and no [DONE]). Translation only: HTTP goes through Transport.
// Routed as "openai-responses/<model>"; "openai/<model>" stays Chat
// Completions, which compatible servers speak.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include <agentkit/model.h>
#include <agentkit/providers/reply.h>
#include <agentkit/providers/sse.h>
#include <agentkit/providers/transport.h>

namespace agentkit::providers {

struct OpenAIResponsesOptions {
  std::string base_url = "https://api.openai.com/v1";  // OPENAI_BASE_URL through make_model
  std::string api_key;  // sent as "Authorization: Bearer"; never logged, never in errors
  std::string model;    // e.g. "gpt-5"
  bool stream = true;
  // Sent as "store". false (the default): OpenAI keeps nothing, every request
  // carries the whole conversation, and a run resumed from a checkpoint
  // needs nothing that lives on OpenAI's side.
  bool store = false;
  // When set, sent as "previous_response_id": the conversation up to and
  // including that (stored) response lives on OpenAI's side, and the
  // request's messages are taken as everything after it (they are all sent,
  // as `input`; the adapter never drops any). So a run started with it
  // continues a stored conversation, and its own turns follow in full.
  std::string previous_response_id;
  // Sends include: ["reasoning.encrypted_content"], so reasoning items come
  // back with their encrypted content; with store false that is how a
  // reasoning model's reasoning crosses turns (it is sent back in the next
  // request's input).
  bool include_encrypted_reasoning = true;
  // With reasoning_effort set: reasoning.summary ("auto", "concise",
  // "detailed"); empty asks for no summary (OpenAI asks an organisation to
  // be verified before it gives any).
  std::string reasoning_summary;
  // Tools (and an output_schema) go strict, through openai_strict_schema
  // (<agentkit/providers/tool_format.h>), whenever strict mode can express
  // their schema; one it cannot (an open map, an untyped value) goes
  // non-strict with its schema as written. false: every tool non-strict.
  bool strict_tools = true;
  Headers extra_headers;  // e.g. {"openai-organization", ...}, {"openai-project", ...}
  // Checked before a request is built: ContentTooLarge (InvalidContent for a
  // malformed part), and nothing goes on the wire.
  ContentLimits content_limits;
};

// The request body for `request`.
//
// `instructions` is the system prompt; `input` the history as items:
// user and system messages {"role", "content"} (a string when all text, else
// `input_text`, `input_image` with a data: URL for bytes or the URL, and
// `input_file` with base64 `file_data` and `filename`, or `file_url`); an
// assistant turn as its reasoning items, then a `message` with `output_text`
// (and `refusal`) content, then one `function_call` item per tool call
// (call_id, name, and the call's arguments text as the model sent it); a
// tool result as `function_call_output` {call_id, output}, output being its
// text. Images or files where the API takes none (assistant turns, system
// messages, tool results) become text notes (omitted_note), never dropped.
//
// Reasoning: only ReasoningParts of provider "openai" are sent (another
// provider's never). Such a part is one summary entry of a reasoning item:
// `signature` holds the item's id ("rs_..."), `redacted` its encrypted
// content (on the item's first part), `text` that summary entry's text;
// consecutive parts with one id make one item
// {"type": "reasoning", "id", "summary": [{"type": "summary_text", "text"}...],
// "encrypted_content"}, placed where it was: before the message and the
// function calls it preceded. With store false, an item without encrypted
// content is left out (OpenAI would look its id up and not find it).
//
// Tools are flat: {"type": "function", "name", "description", "parameters",
// "strict"} (see OpenAIResponsesOptions::strict_tools). Settings:
// temperature, top_p, max_output_tokens, parallel_tool_calls and tool_choice
// ("auto", "none", "required", {"type": "function", "name"}) with tools;
// reasoning_effort as reasoning.effort; an output_schema as text.format
// {"type": "json_schema", "name": "final_answer", "schema", "strict"};
// `extra` merged last. The Responses API has no seed and no stop sequences,
// and thinking_budget_tokens is Anthropic's: those, a required tool_choice
// without tools and a tool_choice naming a tool the request does not
// advertise throw UnsupportedSetting (<agentkit/providers/settings.h>), never
// dropped. Throws ContentTooLarge / InvalidContent (check_content) before
// anything is built.
Schema openai_responses_body(const ModelRequest& request, const OpenAIResponsesOptions& options, bool stream);

// Decodes a whole response object: `output` items in order (`message`
// output_text as text and refusal as a RefusalPart; `function_call` as a
// ToolCall whose id is the call_id and whose arguments text is kept for the
// engine to parse; `reasoning` as ReasoningParts of provider "openai", see
// openai_responses_body), `usage` (input_tokens, output_tokens,
// input_tokens_details.cached_tokens; reasoning tokens are within
// output_tokens), and `status`: "completed" (finish "tool_calls" with
// function calls, else "stop"), "incomplete" (finish "length" for
// max_output_tokens, "content_filter" for content_filter, with what was
// generated); its `id` and `model` (for a stream, those of the terminal
// event's response). Throws the mapped ProviderError for a body with `error`
// or a "failed" status, and ProviderError(protocol) for any other status (a
// background response still in progress) or JSON of the wrong shape.
ModelResponse openai_responses_response(const Json& body);

// Accumulates a streamed reply from its SSE events, dispatched on the
// data's `type`. The reply itself is the response carried by the terminal
// event, `response.completed` or `response.incomplete`, decoded as
// openai_responses_response does (when its `output` is empty, the items of
// the `response.output_item.done` events stand in); the deltas only feed
// the DeltaSink. `error` events and `response.failed` throw the mapped
// ProviderError; unknown event types, `sequence_number` and `obfuscation`
// are ignored. A stream that ends before its terminal event is refused by
// ReplyReader as truncated.
class OpenAIResponsesStreamAccumulator final : public StreamAccumulator {
 public:
  // `deltas`, when set, receives response.output_text.delta as TextDelta,
  // response.reasoning_summary_text.delta (and reasoning_text.delta) as
  // ReasoningDelta, and for each function call one ToolCallDelta when its
  // item is added (call_id and name, no arguments) and one per
  // response.function_call_arguments.delta; ToolCallDelta::index counts
  // function calls, not output items. An arguments delta for a call never
  // announced, more than 1024 calls, or more than kMaxStreamedReplyBytes of
  // fragments and items is ProviderError(protocol).
  explicit OpenAIResponsesStreamAccumulator(DeltaSink deltas = {}) : deltas_(std::move(deltas)) {}
  void on_event(const SseEvent& event) override;
  bool done() const noexcept override { return done_; }
  ModelResponse finish() override;

 private:
  struct Call {
    std::size_t index = 0;  // among the reply's function calls
    std::string call_id;
    std::string name;
  };
  void count(std::size_t bytes);

  DeltaSink deltas_;
  std::size_t streamed_ = 0;
  std::map<std::string, Call> calls_;            // by item id
  std::map<std::int64_t, std::string> call_at_;  // output_index -> item id
  std::map<std::int64_t, Json> items_;           // response.output_item.done, by output_index
  ModelResponse response_;
  bool done_ = false;
};

// How a ReplyReader reads Responses API replies: openai_responses_response
// for whole bodies, response.completed / response.incomplete ending a stream.
const ReplyFormat& openai_responses_reply();

class OpenAIResponsesModel final : public Model {
 public:
  OpenAIResponsesModel(std::shared_ptr<Transport> transport, OpenAIResponsesOptions options);
  ModelResponse complete(const ModelRequest& request, RunContext& ctx) override;
  // The same call without blocking: the run loop advances it from RunHandle::poll().
  std::unique_ptr<PendingCompletion> begin(const ModelRequest& request, RunContext& ctx) override;
  // Compiles every tool's parameters and the output schema for the openai
  // dialect (each goes strict where openai_strict can express it, else as
  // written): a schema the Responses API cannot take at all (no object at a
  // tool's root) fails the run before its first call.
  void check_schemas(std::span<const ToolSpec* const> tools, const Schema* output_schema) const override;
  // "openai" (gen_ai.provider.name), as for Chat Completions.
  std::string_view provider() const noexcept override { return "openai"; }
  const OpenAIResponsesOptions& options() const noexcept { return options_; }

 private:
  std::shared_ptr<Transport> transport_;
  OpenAIResponsesOptions options_;
};

}  // namespace agentkit::providers
