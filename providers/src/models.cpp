#include <agentkit/providers/models.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>

#include <agentkit/providers/anthropic.h>
#include <agentkit/providers/openai.h>

namespace agentkit::providers {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

}  // namespace

ProviderSettings settings_from_environment(ProviderSettings s) {
  if (s.openai_api_key.empty()) s.openai_api_key = env("OPENAI_API_KEY");
  if (s.anthropic_api_key.empty()) s.anthropic_api_key = env("ANTHROPIC_API_KEY");
  if (s.openai_base_url.empty()) s.openai_base_url = env("OPENAI_BASE_URL");
  if (s.anthropic_base_url.empty()) s.anthropic_base_url = env("ANTHROPIC_BASE_URL");
  return s;
}

std::shared_ptr<Model> make_model(std::string_view spec, const ProviderSettings& settings,
                                  std::shared_ptr<Transport> transport) {
  const auto slash = spec.find('/');
  const std::string_view provider = spec.substr(0, slash);
  std::string_view model = slash == std::string_view::npos ? std::string_view() : spec.substr(slash + 1);
  std::string base_url;
  if (auto at = model.find('@'); at != std::string_view::npos) {
    base_url = std::string(model.substr(at + 1));
    model = model.substr(0, at);
  }
  if (!transport) transport = std::make_shared<Transport>();
  if (!model.empty() && provider == "openai") {
    OpenAIOptions o;
    o.model = std::string(model);
    o.api_key = settings.openai_api_key;
    o.stream = settings.stream;
    if (!base_url.empty()) {
      o.base_url = base_url;
    } else if (!settings.openai_base_url.empty()) {
      o.base_url = settings.openai_base_url;
    }
    return std::make_shared<OpenAIChatModel>(std::move(transport), std::move(o));
  }
  if (!model.empty() && provider == "anthropic") {
    AnthropicOptions o;
    o.model = std::string(model);
    o.api_key = settings.anthropic_api_key;
    o.stream = settings.stream;
    if (!base_url.empty()) {
      o.base_url = base_url;
    } else if (!settings.anthropic_base_url.empty()) {
      o.base_url = settings.anthropic_base_url;
    }
    return std::make_shared<AnthropicModel>(std::move(transport), std::move(o));
  }
  throw std::invalid_argument("unknown model '" + std::string(spec) +
                              "': use openai/<model>, anthropic/<model> or openai/<model>@<base URL>");
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
