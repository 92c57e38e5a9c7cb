#pragma once
// Google's Gemini API (generateContent, and streamGenerateContent?alt=sse for
// streaming). Translation only: HTTP goes through Transport.
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <agentkit/model.h>
#include <agentkit/providers/reply.h>
#include <agentkit/providers/transport.h>

namespace agentkit::providers {

namespace detail {
struct GeminiTurn;
}  // namespace detail

struct GeminiOptions {
  std::string base_url = "https://generativelanguage.googleapis.com/v1beta";  // GEMINI_BASE_URL through make_model
  // Sent as the "x-goog-api-key" header, never in the URL (where Google's
  // own examples put it as ?key=); never logged, never in an error.
  std::string api_key;
  std::string model;  // e.g. "gemini-2.5-flash"; the URL is <base_url>/models/<model>:generateContent
  bool stream = true;
  Headers extra_headers;
  // Checked before a request is built: ContentTooLarge (InvalidContent for a
  // malformed part), and nothing goes on the wire.
  ContentLimits content_limits;
};

// The prefix of the ids the adapter gives calls Gemini sent without one
// ("gemini_call_<responseId>_<n>", or "gemini_call_<n>" when the reply has no
// responseId): the run engine needs an id per call, and such an id is never
// sent back to Gemini (its functionCall and functionResponse go without one
// and match by order, as Gemini matches them). An id Gemini did send goes
// back as it came.
inline constexpr std::string_view kGeminiSyntheticIdPrefix = "gemini_call_";

// The generateContent body for `request` (streaming uses the same body).
//
// The agent's prompt is `systemInstruction`; messages are `contents` with
// roles "user" and "model" (a system message in the history is a user turn).
// User parts: text, images and files as `inlineData` (base64 bytes with
// their media type; files of type application/pdf, text/*, image/*, audio/*
// and video/*), an image or file URL of Google's Files API (or gs://) as
// `fileData`; any other URL or file type becomes a text note
// (omitted_note), never dropped. An assistant turn becomes "model" parts:
// its text, its Gemini thought summaries (`thought: true`), the images it
// generated (as `inlineData`, as they came; a file becomes a note), then one
// `functionCall` part per call ({name, args object, id when the call's id
// came from Gemini}). The tool results answering one turn go in ONE "user"
// content, in call order, as `functionResponse` parts ({name, response:
// {"output": text} or {"error": text} for an error result, id as the call's});
// images a tool returned follow them as `inlineData`.
//
// Thought signatures: every `thoughtSignature` a reply carried goes back
// verbatim on the same part. They live in the assistant message as
// ReasoningParts of provider "gemini" (so they survive RunState documents
// and never reach another provider): one with text is a thought summary,
// its signature its own; one without text carries the signature of the part
// after it (a text or image part); the ones without text at the end of the content
// carry the signatures of the tool calls, in call order (an empty one for
// an unsigned call before a signed one). Reasoning of any other provider is
// never sent.
//
// Tools: `tools: [{functionDeclarations: [{name, description, parameters}]}]`,
// the parameters compiled for SchemaDialect::gemini (a tool without
// arguments has no `parameters`). Settings: `toolConfig.functionCallingConfig`
// mode AUTO / ANY / NONE (a named tool_choice is ANY with
// `allowedFunctionNames`); `generationConfig` temperature, topP,
// maxOutputTokens, stopSequences (at most 5), seed; thinking_budget_tokens as
// thinkingConfig.thinkingBudget and reasoning_effort as
// thinkingConfig.thinkingLevel (the Gemini 3 levels, by name; a model without
// levels answers 400), each with includeThoughts, so thought summaries come
// back as reasoning; an output_schema as responseMimeType "application/json"
// with responseSchema (gemini dialect). `extra` is merged last. Gemini cannot
// take parallel_tool_calls = false, both a budget and an effort, more than 5
// stop sequences, nor a tool_choice naming an unadvertised tool or requiring
// a call with no tools: UnsupportedSetting (<agentkit/providers/settings.h>),
// never dropped. Throws ToolDefinitionError for a schema the dialect cannot
// express, and ContentTooLarge / InvalidContent (check_content) before
// anything is built.
Schema gemini_generate_body(const ModelRequest& request, const GeminiOptions& options);

// Decodes a whole generateContent reply (candidates[0]): text parts, thought
// parts (`thought: true`) as ReasoningParts of provider "gemini", images the
// model generated (`inlineData` of an image/* type) as ImageParts (any other
// inlineData, or data that is not base64, is ProviderError(protocol)), function
// calls (args an object; any other value is kept as the call's text, for the
// engine to refuse; no id: a kGeminiSyntheticIdPrefix one), the thought
// signatures as described at gemini_generate_body. finishReason: STOP is
// "stop" or, with calls, "tool_calls"; MAX_TOKENS "length"; SAFETY,
// RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, IMAGE_SAFETY and the like
// "content_filter", with a RefusalPart saying so. usageMetadata:
// promptTokenCount as input, candidatesTokenCount + thoughtsTokenCount as
// output (thoughts are billed as output), cachedContentTokenCount as cached.
// `responseId` and `modelVersion` are the response's id and model.
// Throws ProviderError: permission_denied for a prompt Gemini blocked
// (promptFeedback.blockReason, no candidates); protocol for a malformed call
// Gemini reports (MALFORMED_FUNCTION_CALL and the like), a reply with no
// candidate, or JSON of the wrong shape; the mapped error for {"error": ...}.
ModelResponse gemini_generate_response(const Json& body);

// Accumulates a streamed reply: each SSE event (data only, CRLF, no [DONE]
// sentinel) is a whole GenerateContentResponse. Text fragments concatenate,
// calls arrive whole, usageMetadata repeats (the last is kept), and the
// chunk that carries a finishReason ends the stream: a stream that ends
// before it is truncated (ReplyReader). An {"error": ...} event is thrown as
// that error; a blocked prompt as at gemini_generate_response.
class GeminiStreamAccumulator final : public StreamAccumulator {
 public:
  // `deltas`, when set, receives text as TextDelta, thought summaries as
  // ReasoningDelta and each call as one ToolCallDelta with its whole
  // arguments. More than kMaxStreamedReplyBytes of fragments is
  // ProviderError(protocol).
  explicit GeminiStreamAccumulator(DeltaSink deltas = {});
  ~GeminiStreamAccumulator() override;
  void on_event(const SseEvent& event) override;
  bool done() const noexcept override { return done_; }
  ModelResponse finish() override;

 private:
  DeltaSink deltas_;
  std::unique_ptr<detail::GeminiTurn> turn_;  // the parts, usage and finish reason so far
  bool done_ = false;
};

// How a ReplyReader reads Gemini replies: SSE, a chunk with a finishReason
// ending a stream.
const ReplyFormat& gemini_reply();

class GeminiModel final : public Model {
 public:
  GeminiModel(std::shared_ptr<Transport> transport, GeminiOptions options);
  ModelResponse complete(const ModelRequest& request, RunContext& ctx) override;
  // The same call without blocking: the run loop advances it from RunHandle::poll().
  std::unique_ptr<PendingCompletion> begin(const ModelRequest& request, RunContext& ctx) override;
  // Compiles every tool's parameters and the output schema for the gemini
  // dialect: a construct Gemini cannot take fails the run before its first call.
  void check_schemas(std::span<const ToolSpec* const> tools, const Schema* output_schema) const override;
  // "gcp.gemini" (gen_ai.provider.name: the Gemini API, as opposed to
  // Vertex AI's "gcp.vertex_ai").
  std::string_view provider() const noexcept override { return "gcp.gemini"; }
  const GeminiOptions& options() const noexcept { return options_; }

 private:
  std::shared_ptr<Transport> transport_;
  GeminiOptions options_;
};

}  // namespace agentkit::providers
