#pragma once
// Models are an interface: FakeLLM and the provider adapters implement it.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <agentkit/error.h>
#include <agentkit/messages.h>
#include <agentkit/tool.h>

namespace agentkit {

class RunContext;

// Which tool the model may or must call: any or none (automatic), at least
// one (required), none (none), or exactly the named tool (tool).
struct ToolChoice {
  enum class Mode { automatic, required, none, tool };
  Mode mode = Mode::automatic;
  std::string tool;  // Mode::tool: the tool's name (an advertised tool of the agent)

  static ToolChoice automatic() { return {}; }
  static ToolChoice required() { return {Mode::required, {}}; }
  static ToolChoice none() { return {Mode::none, {}}; }
  static ToolChoice named(std::string name) { return {Mode::tool, std::move(name)}; }
  friend bool operator==(const ToolChoice&, const ToolChoice&) = default;
};

// How hard an OpenAI reasoning model thinks before answering.
enum class ReasoningEffort { minimal, low, medium, high };
// "minimal", "low", "medium", "high".
std::string_view to_string(ReasoningEffort effort) noexcept;

// A setting or value a model settings object cannot carry: out of range
// (a NaN or negative temperature, top_p above 1, max_output_tokens 0, an
// empty stop string), `extra` that is not an object or that names a key the
// request itself writes, or a tool_choice naming a tool the agent lacks.
// Thrown where the settings are given: Agent's constructor (AgentOptions),
// Agent::start (RunOptions), ModelSettings::from_json (the CLI's YAML).
// `setting()` is the field's name ("temperature", "extra.messages").
class ModelSettingsError : public Error {
 public:
  ModelSettingsError(std::string setting, const std::string& problem)
      : Error(ErrorCode::invalid_argument, "model setting '" + setting + "' " + problem), setting_(std::move(setting)) {}
  const std::string& setting() const noexcept { return setting_; }

 private:
  std::string setting_;
};

// How the model is asked to generate: every field is optional, and an unset
// field is left to the provider (or to the adapter's own options, such as
// AnthropicOptions::max_tokens). Set on AgentOptions::model_settings for
// every run of an agent and on RunOptions::model_settings for one run (the
// run's fields override the agent's one by one, see merged()); the run
// engine hands the result to the model on ModelRequest::settings.
//
// A run's own settings are kept in RunState::model_settings, so they apply
// again after Agent::resume or Agent::recover (which take no RunOptions).
//
// Each adapter maps every field it supports onto its wire format and throws
// providers::UnsupportedSetting (a ProviderError, code invalid) naming the
// setting and the provider, before anything is sent, for one it does not: Anthropic has no seed and no
// reasoning_effort, OpenAI chat no thinking_budget_tokens. Nothing is
// silently dropped. A model that is not a provider adapter (FakeLLM, a
// host's own) may ignore them.
//
// `extra` is a JSON object merged last into the provider's request body:
// objects merge key by key, recursively; any other value replaces what is
// there. It MUST NOT name the keys agentkit writes from the request itself
// (model, messages, system, tools, stream, stream_options): those are
// refused with a ModelSettingsError, so `extra` can add provider-specific
// fields ({"service_tier": "flex"}, {"metadata": {...}}) but never rewrite
// the conversation.
//
// Example:
//   agentkit::AgentOptions options;
//   options.model_settings.temperature = 0.2;
//   options.model_settings.max_output_tokens = 800;
//   options.model_settings.tool_choice = agentkit::ToolChoice::named("lookup");
//   options.model_settings.extra = {{"service_tier", "flex"}};
struct ModelSettings {
  std::optional<double> temperature;               // finite, 0..2 (Anthropic: 0..1)
  std::optional<double> top_p;                     // finite, 0..1
  std::optional<int> max_output_tokens;            // >= 1
  std::optional<std::vector<std::string>> stop;    // each non-empty; set and empty: none
  std::optional<std::int64_t> seed;                // OpenAI only
  std::optional<ToolChoice> tool_choice;
  std::optional<bool> parallel_tool_calls;         // false: at most one tool call per turn
  std::optional<ReasoningEffort> reasoning_effort; // OpenAI only
  std::optional<int> thinking_budget_tokens;       // Anthropic extended thinking: >= 1024, < max tokens
  Json extra;                                      // null or an object; see above

  // These settings with every field `over` sets taking its place (`extra`:
  // deep-merged, `over`'s keys winning).
  ModelSettings merged(const ModelSettings& over) const;
  // True when no field is set (and `extra` is null or empty).
  bool empty() const noexcept;
  // Throws ModelSettingsError for the first value out of range (see the
  // fields); `tools`, when given, are the names tool_choice may name.
  void validate(const std::vector<std::string>* tools = nullptr) const;

  // {"temperature": 0.2, "tool_choice": "auto" | "required" | "none" |
  // {"tool": "name"}, "reasoning_effort": "low", "extra": {...}, ...}: unset
  // fields are left out. from_json refuses unknown keys and values of the
  // wrong type with a ModelSettingsError naming the key, and validates.
  Json to_json() const;
  static ModelSettings from_json(const Json& j);

  friend bool operator==(const ModelSettings&, const ModelSettings&) = default;
};

// What one model call sees. Views into the run's own state: a model MUST NOT
// keep these spans past `complete` (copy what you need).
struct ModelRequest {
  std::string_view model;                  // e.g. "fake", "openai/gpt-4o-mini"
  std::string_view system;                 // the agent's prompt
  std::span<const Message> messages;       // history, oldest first
  std::span<const ToolSpec* const> tools;  // advertised tools, sorted by name
  // The agent's declared output type, if any. Provider adapters ask for it
  // natively (OpenAI response_format json_schema; Anthropic a forced
  // `final_answer` tool turned back into the answer text), and the run
  // engine still validates the answer and repairs a mismatch.
  const Schema* output_schema = nullptr;
  // The run's settings (the agent's, overridden by the run's); null: none.
  const ModelSettings* settings = nullptr;
  // The W3C `traceparent` of this call's `chat` span when the run is traced
  // (RunContext::trace_id); empty otherwise. HTTP adapters send it as the
  // `traceparent` header, so the provider's side joins the run's trace.
  std::string_view traceparent;
};

struct ModelResponse {
  Message message;                   // role assistant
  Usage usage;
  std::string finish_reason = "stop";  // normalised: stop, tool_calls, length, content_filter, error
  // The provider's id of this response and the model that produced it, as
  // the provider reported them; empty when it did not. Traces carry them
  // (gen_ai.response.id, gen_ai.response.model).
  std::string id;
  std::string model;
};

// A failed model call as the run engine sees it: a canonical code naming why
// (truncated, rate_limited, protocol, ...), the provider's HTTP status,
// retry advice and Retry-After when a provider answered, and the usage the
// provider reported before it failed (a stream cut short has spent tokens).
// The engine charges that usage to the run's budget, usage meter and
// RunState, stops the run `failed`, and puts the code and the details in
// RunResult::failure. Provider adapters throw providers::ProviderError,
// which derives from this; any other model may throw it too. A model that
// throws another agentkit::Error fails the run with that error's code; one
// that throws anything else, with ErrorCode::internal.
class ModelError : public Error {
 public:
  ModelError(ErrorCode code, const std::string& message, Usage usage = {}, int http_status = 0,
             bool retryable = false, std::optional<std::chrono::milliseconds> retry_after = std::nullopt)
      : Error(code, message),
        usage_(usage),
        http_status_(http_status),
        retryable_(retryable),
        retry_after_(retry_after) {}
  const Usage& usage() const noexcept { return usage_; }
  // The provider's HTTP status; 0 when there was no HTTP response.
  int http_status() const noexcept { return http_status_; }
  // Whether the provider says trying again later may succeed.
  bool retryable() const noexcept { return retryable_; }
  std::optional<std::chrono::milliseconds> retry_after() const noexcept { return retry_after_; }

 private:
  Usage usage_;
  int http_status_;
  bool retryable_;
  std::optional<std::chrono::milliseconds> retry_after_;
};

// A model call in flight, advanced by its owner without blocking.
class PendingCompletion {
 public:
  virtual ~PendingCompletion() = default;
  // Advances the call without blocking (no sleeping, no waiting on the
  // network); true once the response or an error is ready.
  virtual bool poll() = 0;
  // Blocks up to `max` until poll() may make progress (for blocking drivers).
  virtual void wait(std::chrono::milliseconds max) = 0;
  // The response, or throws the call's error. Valid once poll() returned true.
  virtual ModelResponse take() = 0;
  // Aborts the call; poll() then returns true and take() throws.
  virtual void cancel() = 0;
};

// A model. `complete` may block (network). A model that can also run a call
// without blocking returns it from `begin`; the run loop then advances it
// from RunHandle::poll() on the host's thread. Otherwise the loop runs
// `complete` on the run's executor (inline when the context has none).
// Implementations MUST be safe to call from several runs at once. Failures
// throw, preferably a ModelError (provider errors are typed in
// agentkit::providers and derive from it).
class Model {
 public:
  virtual ~Model() = default;
  virtual ModelResponse complete(const ModelRequest& request, RunContext& ctx) = 0;
  // A non-blocking call, or nullptr when this model has none. MUST copy what
  // it needs from `request` before returning.
  virtual std::unique_ptr<PendingCompletion> begin(const ModelRequest& request, RunContext& ctx) {
    (void)request;
    (void)ctx;
    return nullptr;
  }
  // Throws ToolDefinitionError when this model's provider cannot take one
  // of `tools` or `output_schema` as declared (a schema construct its
  // dialect cannot express), naming the tool, the field and the dialect. A
  // run calls it once, when it resolves its model, and fails before its
  // first model call; Agent::check_model lets a host check when it builds
  // the agent. The default accepts everything.
  virtual void check_schemas(std::span<const ToolSpec* const> tools, const Schema* output_schema) const {
    (void)tools;
    (void)output_schema;
  }
  // The provider's name in the OpenTelemetry GenAI conventions
  // (gen_ai.provider.name: "openai", "anthropic", "gcp.gemini", "ollama"),
  // or empty for a model that is not a provider's (FakeLLM, a host's own).
  virtual std::string_view provider() const noexcept { return {}; }
};

// Resolves an agent's model name to a model.
using ModelResolver = std::function<std::shared_ptr<Model>(std::string_view name)>;

}  // namespace agentkit
