#include <agentkit/providers/models.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>

#include <agentkit/egress.h>
#include <agentkit/providers/anthropic.h>
#include <agentkit/providers/gemini.h>
#include <agentkit/providers/ollama.h>
#include <agentkit/providers/openai.h>
#include <agentkit/providers/openai_responses.h>

namespace agentkit::providers {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

// A base URL goes through the one strict URL parser before any key is sent
// to it: without a scheme libcurl would guess http and send the key in
// clear. The message never repeats the URL (it may carry credentials).
void check_base_url(const std::string& url, const std::string& what) {
  if (url.find("://") == std::string::npos) {
    throw Error(ErrorCode::invalid_argument, what + " is not usable: it must start with https:// (or http://)");
  }
  try {
    parse_url(url);
  } catch (const UrlError& e) {
    throw Error(ErrorCode::invalid_argument, what + " is not usable: " + e.what());
  }
}

// OLLAMA_HOST as Ollama's own client reads it: "host", "host:port" or a
// URL; without a scheme it is http, and without a port 11434.
std::string ollama_host(std::string host) {
  if (host.empty() || host.find("://") != std::string::npos) return host;
  const std::string authority = host.substr(0, host.find('/'));
  const auto colon = authority.rfind(':');
  const auto bracket = authority.rfind(']');  // [::1]
  const bool has_port = colon != std::string::npos && (bracket == std::string::npos || colon > bracket);
  return "http://" + authority + (has_port ? "" : ":11434") + host.substr(authority.size());
}

}  // namespace

ProviderSettings settings_from_environment(ProviderSettings s) {
  if (s.openai_api_key.empty()) s.openai_api_key = env("OPENAI_API_KEY");
  if (s.anthropic_api_key.empty()) s.anthropic_api_key = env("ANTHROPIC_API_KEY");
  if (s.openai_base_url.empty()) s.openai_base_url = env("OPENAI_BASE_URL");
  if (s.anthropic_base_url.empty()) s.anthropic_base_url = env("ANTHROPIC_BASE_URL");
  if (s.ollama_api_key.empty()) s.ollama_api_key = env("OLLAMA_API_KEY");
  if (s.ollama_base_url.empty()) s.ollama_base_url = ollama_host(env("OLLAMA_HOST"));
  if (s.gemini_api_key.empty()) s.gemini_api_key = env("GEMINI_API_KEY");
  if (s.gemini_api_key.empty()) s.gemini_api_key = env("GOOGLE_API_KEY");  // what Google's SDKs also read
  if (s.gemini_base_url.empty()) s.gemini_base_url = env("GEMINI_BASE_URL");
  return s;
}

ModelTarget resolve_model(std::string_view spec, const ProviderSettings& settings) {
  const std::string_view named = spec.substr(0, spec.find('@'));  // never echo the URL
  const auto slash = spec.find('/');
  ModelTarget t;
  t.provider = std::string(spec.substr(0, slash));
  std::string_view model = slash == std::string_view::npos ? std::string_view() : spec.substr(slash + 1);
  std::string base_url;
  bool from_spec = false;
  if (auto at = model.find('@'); at != std::string_view::npos) {
    base_url = std::string(model.substr(at + 1));
    model = model.substr(0, at);
    from_spec = true;
  }
  t.model = std::string(model);
  struct Provider {
    std::string_view name, shown, key_variable, url_variable;
    const std::string& key;
    const std::string& base_url;
    bool key_required;
  };
  const Provider providers[] = {
      {"openai", "OpenAI", "OPENAI_API_KEY", "OPENAI_BASE_URL", settings.openai_api_key, settings.openai_base_url,
       true},
      {"openai-responses", "OpenAI", "OPENAI_API_KEY", "OPENAI_BASE_URL", settings.openai_api_key,
       settings.openai_base_url, true},  // the same account and endpoint as openai/
      {"anthropic", "Anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", settings.anthropic_api_key,
       settings.anthropic_base_url, true},
      {"ollama", "Ollama", "OLLAMA_API_KEY", "OLLAMA_HOST", settings.ollama_api_key, settings.ollama_base_url,
       false},  // a local server takes none
      {"gemini", "Gemini", "GEMINI_API_KEY", "GEMINI_BASE_URL", settings.gemini_api_key, settings.gemini_base_url,
       true},
  };
  const auto* provider = std::find_if(std::begin(providers), std::end(providers),
                                      [&](const Provider& p) { return p.name == t.provider; });
  if (t.model.empty() || provider == std::end(providers)) {
    throw Error(ErrorCode::not_found, "unknown model '" + std::string(named) + (from_spec ? "@..." : "") +
                                "': use openai/<model>, openai-responses/<model>, anthropic/<model>, ollama/<model>, "
                                "gemini/<model> or <provider>/<model>@<base URL>");
  }
  t.api_key_variable = provider->key_variable;
  t.api_key_required = provider->key_required;
  t.api_key = provider->key;
  if (from_spec) {
    if (base_url.empty()) throw Error(ErrorCode::invalid_argument, "model '" + std::string(named) + "@': the base URL is empty");
    check_base_url(base_url, "model '" + std::string(named) + "': the base URL after '@'");
  } else {
    base_url = provider->base_url;
    if (!base_url.empty()) {
      check_base_url(base_url, "the " + std::string(provider->shown) + " base URL (" + std::string(provider->url_variable) + ")");
    }
  }
  t.base_url = std::move(base_url);
  return t;
}

namespace {

// The options both adapters share, filled from a resolved model string.
template <class Options>
Options options_for(ModelTarget target, const ProviderSettings& settings) {
  Options o;
  o.model = std::move(target.model);
  o.api_key = std::move(target.api_key);
  o.stream = settings.stream;
  if (!target.base_url.empty()) o.base_url = std::move(target.base_url);
  return o;
}

}  // namespace

std::shared_ptr<Model> make_model(std::string_view spec, const ProviderSettings& settings,
                                  std::shared_ptr<Transport> transport) {
  ModelTarget t = resolve_model(spec, settings);
  if (!transport) transport = std::make_shared<Transport>();
  if (t.provider == "openai") {
    return std::make_shared<OpenAIChatModel>(std::move(transport), options_for<OpenAIOptions>(std::move(t), settings));
  }
  if (t.provider == "openai-responses") {
    return std::make_shared<OpenAIResponsesModel>(std::move(transport),
                                                  options_for<OpenAIResponsesOptions>(std::move(t), settings));
  }
  if (t.provider == "gemini") {
    return std::make_shared<GeminiModel>(std::move(transport), options_for<GeminiOptions>(std::move(t), settings));
  }
  if (t.provider == "ollama") {
    return std::make_shared<OllamaChatModel>(std::move(transport), options_for<OllamaOptions>(std::move(t), settings));
  }
  return std::make_shared<AnthropicModel>(std::move(transport), options_for<AnthropicOptions>(std::move(t), settings));
}

ModelResolver model_resolver(ProviderSettings settings, std::shared_ptr<Transport> transport) {
  if (!transport) transport = std::make_shared<Transport>();
  struct Cache {
    std::mutex mutex;
    std::map<std::string, std::shared_ptr<Model>, std::less<>> models;
  };
  auto cache = std::make_shared<Cache>();
  return [settings = std::move(settings), transport, cache](std::string_view spec) -> std::shared_ptr<Model> {
    std::lock_guard lock(cache->mutex);
    auto it = cache->models.find(spec);
    if (it == cache->models.end()) it = cache->models.emplace(std::string(spec), make_model(spec, settings, transport)).first;
    return it->second;
  };
}

}  // namespace agentkit::providers
