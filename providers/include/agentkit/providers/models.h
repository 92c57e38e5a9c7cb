#pragma once
// Model strings -> provider adapters.
//
//   "openai/<model>"                 OpenAI Chat Completions
//   "anthropic/<model>"              Anthropic Messages
//   "openai/<model>@<base URL>"      any OpenAI-compatible server (Ollama /v1,
//                                    vLLM, llama.cpp server, a loopback stub)
//
// Keys come from ProviderSettings or, when empty, OPENAI_API_KEY /
// ANTHROPIC_API_KEY; base URLs from OPENAI_BASE_URL / ANTHROPIC_BASE_URL as
// the official SDKs read them. Keys are never logged or put in errors.
#include <memory>
#include <string>
#include <string_view>

#include <agentkit/model.h>
#include <agentkit/providers/transport.h>

namespace agentkit::providers {

struct ProviderSettings {
  std::string openai_api_key;
  std::string anthropic_api_key;
  std::string openai_base_url;     // default https://api.openai.com/v1
  std::string anthropic_base_url;  // default https://api.anthropic.com
  bool stream = true;
};

// `overrides`, with the fields left empty read from OPENAI_API_KEY,
// ANTHROPIC_API_KEY, OPENAI_BASE_URL and ANTHROPIC_BASE_URL.
ProviderSettings settings_from_environment(ProviderSettings overrides = {});

// The adapter for `spec`; throws std::invalid_argument naming the accepted
// forms for an unknown one.
std::shared_ptr<Model> make_model(std::string_view spec, const ProviderSettings& settings,
                                  std::shared_ptr<Transport> transport);

// A resolver for RunContext::models that builds each adapter once and shares
// one transport (and its connections) between them.
ModelResolver model_resolver(ProviderSettings settings, std::shared_ptr<Transport> transport = nullptr);

}  // namespace agentkit::providers
