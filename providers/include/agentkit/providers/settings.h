#pragma once
// How the provider adapters map ModelSettings and a declared output type
// onto their wire formats (see <agentkit/model.h> for the settings).
#include <string>
#include <string_view>

#include <agentkit/json.h>
#include <agentkit/model.h>
#include <agentkit/providers/transport.h>

namespace agentkit::providers {

// A model setting the provider cannot honour, or a value it refuses (seed or
// reasoning_effort for Anthropic, thinking_budget_tokens for OpenAI chat, a
// thinking budget of 1023 tokens, a tool_choice naming a tool the request
// does not advertise). Thrown by the adapter before anything is sent, so the
// run fails at its first model call with error code invalid_argument and a message
// naming the setting and the provider; never silently dropped.
class UnsupportedSetting : public ProviderError {
 public:
  UnsupportedSetting(std::string provider, std::string setting, const std::string& problem)
      : ProviderError(ErrorCode::invalid_argument, provider + ": model setting '" + setting + "' " + problem),
        provider_(std::move(provider)),
        setting_(std::move(setting)) {}
  const std::string& provider() const noexcept { return provider_; }  // "OpenAI chat", "Anthropic"
  const std::string& setting() const noexcept { return setting_; }    // "seed", "thinking_budget_tokens"

 private:
  std::string provider_;
  std::string setting_;
};

// The name under which a declared output type is asked for natively: the
// OpenAI `response_format.json_schema.name`, and the Anthropic tool the
// model calls with its final answer. An agent tool of this name is refused
// (UnsupportedSetting) by the Anthropic adapter when an output type is set.
inline constexpr std::string_view kFinalAnswerTool = "final_answer";

// True when `schema` meets OpenAI's strict structured-output rules as
// written: every object schema (in properties, items, anyOf/oneOf/allOf,
// $defs) lists `properties`, has "additionalProperties": false and requires
// every property. The OpenAI adapter sends "strict": true only then.
bool openai_strict_compatible(const Schema& schema);

// `extra` merged into `body`: objects key by key, recursively; any other
// value replaces the body's. Adapters call it last.
void merge_extra(Schema& body, const Json& extra);

}  // namespace agentkit::providers
