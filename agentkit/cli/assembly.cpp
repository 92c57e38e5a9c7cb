#include "assembly.h"

#include <cstdlib>

#include <spdlog/spdlog.h>

#include <agentkit/cognition/react.h>
#include <agentkit/egress.h>
#include <agentkit/errors.h>
#include <agentkit/invoker.h>
#include <agentkit/providers/models.h>
#include <agentkit/providers/otlp.h>
#include <agentkit/state/memory_tool.h>

namespace agentkit::cli {
namespace {

// Tool calls of one turn run concurrently on this many workers, so a slow
// tool never blocks the terminal.
constexpr std::size_t kToolWorkers = 4;

std::string env_value(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

void expand_all(std::vector<std::pair<std::string, std::string>>& pairs, const AgentConfig& config, int line) {
  try {
    for (auto& pair : pairs) pair.second = expand_env(pair.second, "");
  } catch (const ToolDataError& e) {
    throw ConfigError(config.file, line, e.problem());
  }
}

// The key a definition's model is resolved by: its model string, plus the
// variable its key comes from (two agents may use one model with two keys).
std::string model_key(const AgentConfig& config) {
  return config.api_key_env.empty() ? config.model : config.model + " (key from $" + config.api_key_env + ")";
}

}  // namespace

AgentRuntime::AgentRuntime(const AgentConfig& config, Options options)
    : options_(options),
      config_(config),
      transport_(std::make_shared<providers::Transport>()),
      executor_(std::make_shared<ThreadPoolExecutor>(kToolWorkers, spdlog::default_logger())),
      agent_(build(config_)) {
  if (!options_.connect) return;
  const auto set = [](const char* name) { return std::getenv(name) && *std::getenv(name); };
  if (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) {
    providers::OtlpOptions otlp;
    otlp.logger = spdlog::default_logger();
    otlp.service_name = "agentkit";  // OTEL_SERVICE_NAME overrides it
    tracer_ = providers::make_otlp_exporter_from_env(std::move(otlp));
  }
}

AgentRuntime::~AgentRuntime() = default;

std::vector<std::string> AgentRuntime::tool_names() const {
  std::vector<std::string> names;
  for (const ToolSpec* spec : agent_->cognition().tools().schemas()) names.push_back(spec->name);
  return names;
}

RunContext AgentRuntime::context(std::shared_ptr<state::Store> store, std::shared_ptr<Observer> observer) const {
  RunContext ctx;
  ctx.logger = spdlog::default_logger();  // the CLI's own logger (main.cpp); library code never falls back to it
  ctx.store = std::move(store);
  ctx.tracer = tracer_;
  if (const char* parent = std::getenv("TRACEPARENT"); parent && *parent && !ctx.continue_trace(parent)) {
    spdlog::default_logger()->warn("TRACEPARENT is not a W3C traceparent; the run starts a trace of its own");
  }
  ctx.observer = std::move(observer);
  ctx.executor = executor_;
  ctx.autonomy = config_.autonomy;
  ctx.budget = std::make_shared<Budget>(config_.budget);
  ctx.models = [models = models_](std::string_view name) -> std::shared_ptr<Model> {
    auto it = models.find(name);
    return it == models.end() ? nullptr : it->second;
  };
  std::vector<Middleware> chain = default_middleware();
  if (!config_.egress.empty()) {
    std::vector<EgressRule> rules;
    for (const auto& rule : config_.egress) rules.push_back(EgressRule::parse(rule));
    // Inside error_boundary (the first layer), so a refusal is a denied
    // result rather than a plain error.
    chain.insert(chain.begin() + 1, egress_allowlist(std::make_shared<const EgressAllowlist>(std::move(rules))));
  }
  ctx.invoker = std::make_shared<const Invoker>(std::move(chain));
  return ctx;
}

void AgentRuntime::add_model(const AgentConfig& config, const std::string& key) {
  if (models_.contains(key)) return;
  providers::ProviderSettings settings;
  if (options_.connect) {
    if (!config.api_key_env.empty()) {
      const std::string key_value = env_value(config.api_key_env.c_str());
      if (key_value.empty()) {
        throw ConfigError(config.file, config.api_key_line,
                          "environment variable '" + config.api_key_env + "' (api_key_env) is not set");
      }
      settings.openai_api_key = key_value;
      settings.anthropic_api_key = key_value;
      settings.ollama_api_key = key_value;
      settings.gemini_api_key = key_value;
    }
    settings = providers::settings_from_environment(settings);
  }
  providers::ModelTarget target;
  try {
    target = providers::resolve_model(config.model, settings);
  } catch (const agentkit::Error& e) {
    throw ConfigError(config.file, config.model_line, e.what());
  }
  // The provider's own API refuses every request without a key: say which
  // variable is missing now, before anything is sent. A server named by a
  // base URL (Ollama, vLLM, a proxy) may need none.
  if (options_.connect && target.api_key_required && target.api_key.empty() && target.base_url.empty()) {
    throw ConfigError(config.file, config.model_line,
                      "environment variable '" + std::string(target.api_key_variable) + "' is not set; " +
                          config.model + " needs its API key there (or name another variable with api_key_env)");
  }
  models_.emplace(key, providers::make_model(config.model, settings, transport_));
}

namespace {

// The server's tools the agent gets (include / exclude), with the approvals
// the file asks for; a pattern that names none of them is an error.
std::vector<ToolPtr> server_tools(const AgentConfig& config, const McpServerConfig& server,
                                  const std::vector<ToolPtr>& offered) {
  try {
    return providers::mcp_server_tools(server, offered);
  } catch (const ToolDataError& e) {
    throw ConfigError(config.file, server.line, e.problem());
  }
}

}  // namespace

const providers::McpClient& AgentRuntime::connect(const AgentConfig& config, const McpServerConfig& server) {
  std::unique_ptr<providers::McpTransport> transport;
  if (server.stdio) {
    providers::McpStdioServer stdio = *server.stdio;
    expand_all(stdio.env, config, server.line);
    transport = providers::make_stdio_transport(std::move(stdio), spdlog::default_logger());
  } else {
    providers::McpHttpServer http = *server.http;
    expand_all(http.headers, config, server.line);
    transport = providers::make_http_transport(std::move(http), spdlog::default_logger());
  }
  providers::McpClientOptions options;
  options.server_name = server.name;
  options.logger = spdlog::default_logger();
  options.request_timeout = server.timeout;
  auto client = std::make_unique<providers::McpClient>(std::move(transport), std::move(options));
  try {
    client->connect();
  } catch (const std::exception& e) {
    throw ConfigError(config.file, server.line, "MCP server '" + server.name + "' is not usable: " + e.what());
  }
  mcp_.push_back(std::move(client));
  return *mcp_.back();
}

std::shared_ptr<const Agent> AgentRuntime::build(const AgentConfig& config) {
  const std::string key = model_key(config);
  add_model(config, key);
  std::vector<ToolPtr> tools = config.rest_tools;
  tools.insert(tools.end(), config.local_tools.begin(), config.local_tools.end());
  std::string prompt = config.prompt;
  if (config.memory) {
    std::shared_ptr<state::Files> files = std::make_shared<state::InMemoryFiles>();
    try {
      if (options_.connect && config.memory->dir) files = std::make_shared<state::DirectoryFiles>(*config.memory->dir);
    } catch (const std::exception& e) {
      throw ConfigError(config.file, config.memory->line,
                        std::string("the memory directory cannot be used: ") + e.what());
    }
    tools.push_back(state::memory_tool(files));
  }
  if (config.skills) {
    tools.push_back(skill_tool(config.skills));
    if (const std::string listing = config.skills->render_prompt(); !listing.empty()) prompt += "\n\n" + listing;
  }
  for (const auto& sub : config.agents) {
    try {
      tools.push_back(as_tool(
          build(*sub.agent), {.name = sub.name, .description = sub.description, .side_effecting = sub.side_effecting}));
    } catch (const ToolDefinitionError& e) {
      throw ConfigError(config.file, sub.line, std::string("sub-agent '") + sub.name + "': " + e.what());
    }
  }
  ToolRegistry registry;
  try {
    registry = ToolRegistry::from_tools(tools);
  } catch (const ToolDefinitionError& e) {
    throw ConfigError(config.file, 0, e.what());
  }
  for (const auto& server : config.mcp) {
    if (!options_.connect) break;
    const auto& client = connect(config, server);
    try {
      registry.add_plugin(server.name, server_tools(config, server, client.tools()));
    } catch (const ToolDefinitionError& e) {
      throw ConfigError(config.file, server.line, e.what());
    }
  }
  AgentOptions agent_options;
  agent_options.max_iterations = config.max_iterations;
  agent_options.max_repairs = config.max_repairs;
  agent_options.pricing = config.pricing;
  agent_options.model_settings = config.model_settings;
  try {
    return std::make_shared<const Agent>(
        config.name, key, prompt, std::make_shared<const cognition::ReActCognition>(std::move(registry)), agent_options);
  } catch (const ModelSettingsError& e) {
    throw ConfigError(config.file, config.model_settings_line, e.what());  // a tool_choice naming no tool of the agent
  }
}

}  // namespace agentkit::cli
