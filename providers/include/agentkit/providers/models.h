#pragma once
// Model strings -> provider adapters.
//
//   "openai/<model>"                 OpenAI Chat Completions
//   "anthropic/<model>"              Anthropic Messages
//   "openai/<model>@<base URL>"      any OpenAI-compatible server (Ollama /v1,
//                                    vLLM, llama.cpp server, a loopback stub)
//   "anthropic/<model>@<base URL>"   an Anthropic-compatible server or proxy
//   "ollama/<model>"                 Ollama's native chat API (/api/chat)
//   "ollama/<model>@<base URL>"      an Ollama server elsewhere
//   "gemini/<model>"                 Google's Gemini API (generateContent)
//   "gemini/<model>@<base URL>"      a Gemini API elsewhere (a proxy; the base
//                                    URL includes the version, e.g. .../v1beta)
//   "openai-responses/<model>"       OpenAI's Responses API (/v1/responses),
//                                    with OpenAI's key and base URL
//   "openai-responses/<model>@<base URL>"  a Responses API elsewhere (a proxy)
//
// Keys come from ProviderSettings or, when empty, OPENAI_API_KEY /
// ANTHROPIC_API_KEY / OLLAMA_API_KEY (optional); base URLs from
// OPENAI_BASE_URL / ANTHROPIC_BASE_URL / OLLAMA_HOST as the official SDKs
// and Ollama's client read them (OLLAMA_HOST may be "host" or "host:port":
// no scheme means http, no port 11434). Keys are never logged or put in
// errors.
//
// Every base URL (after '@' or from the settings) must be an absolute http
// or https URL that agentkit::parse_url accepts: "127.0.0.1:8080/v1" (no
// scheme, which libcurl would read as plain http and so send the key in
// clear) and URLs with credentials are refused with agentkit::Error (invalid_argument).
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
  std::string ollama_api_key;      // none by default: a local server takes none
  std::string ollama_base_url;     // default http://localhost:11434
  std::string gemini_api_key;      // GEMINI_API_KEY, else GOOGLE_API_KEY
  std::string gemini_base_url;     // default https://generativelanguage.googleapis.com/v1beta
  bool stream = true;
};

// `overrides`, with the fields left empty read from OPENAI_API_KEY,
// ANTHROPIC_API_KEY, OLLAMA_API_KEY, OPENAI_BASE_URL, ANTHROPIC_BASE_URL,
// OLLAMA_HOST, GEMINI_API_KEY (or, when unset, GOOGLE_API_KEY) and
// GEMINI_BASE_URL.
ProviderSettings settings_from_environment(ProviderSettings overrides = {});

// What a model string resolves to under `settings`, without building an
// adapter (e.g. to check a definition, or that a key is there, before any
// request).
struct ModelTarget {
  std::string provider;                // "openai", "openai-responses", "anthropic", "ollama" or "gemini"
  std::string model;                   // the provider's model name
  std::string base_url;                // checked; empty: the provider's own API
  std::string api_key;                 // from `settings`; may be empty
  std::string_view api_key_variable;   // where settings_from_environment reads it: OPENAI_API_KEY, ...
  bool api_key_required = true;        // false for Ollama: a local server takes none
};

// Parses and checks `spec` (see the forms above). Throws agentkit::Error:
// not_found, naming the accepted forms, for an unknown provider or a
// missing model name; invalid_argument, saying what is wrong with a base
// URL (never repeating it).
ModelTarget resolve_model(std::string_view spec, const ProviderSettings& settings);

// The adapter for `spec`; throws agentkit::Error as resolve_model().
std::shared_ptr<Model> make_model(std::string_view spec, const ProviderSettings& settings,
                                  std::shared_ptr<Transport> transport);

// A resolver for RunContext::models that builds each adapter once and shares
// one transport (and its connections) between them.
ModelResolver model_resolver(ProviderSettings settings, std::shared_ptr<Transport> transport = nullptr);

}  // namespace agentkit::providers
