#pragma once
// Turning a validated definition into a runnable agent: tools, sub-agents,
// models, MCP connections, and the context a run gets.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/context.h>
#include <agentkit/executor.h>
#include <agentkit/providers/mcp.h>

#include "config.h"

namespace agentkit::cli {

// A definition made runnable. It owns what the agent's tools use while it
// runs (MCP connections, the worker pool), so it must outlive every run.
//
// Example:
//   AgentRuntime runtime(load_agent_config("support.yaml"));
//   RunContext ctx = runtime.context(store);
//   RunHandle handle = runtime.agent().start("Where is order A-1?", ctx);
class AgentRuntime {
 public:
  struct Options {
    // Start MCP servers and read API keys. Off: everything else is built and
    // checked (what `agentkit validate` does), nothing is contacted.
    bool connect = true;
  };

  // Throws ConfigError naming the file and line of what failed: an MCP
  // server that does not start, an API key variable that is not set, a tool
  // the definition cannot make (e.g. a sub-agent description too short).
  explicit AgentRuntime(const AgentConfig& config, Options options);
  explicit AgentRuntime(const AgentConfig& config) : AgentRuntime(config, Options{}) {}
  ~AgentRuntime();
  AgentRuntime(const AgentRuntime&) = delete;
  AgentRuntime& operator=(const AgentRuntime&) = delete;

  const Agent& agent() const noexcept { return *agent_; }
  // Every tool the agent sees, by name.
  std::vector<std::string> tool_names() const;

  // A context for a run of the agent: the store, the models, the autonomy
  // tier and budget of the definition, the egress allowlist, a worker pool
  // for tool calls, and `observer` (for blocking runs; a sub-agent's events
  // come through its parent run's, like the parent's own). When an OTLP
  // endpoint is configured (OTEL_EXPORTER_OTLP_ENDPOINT or
  // OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), its spans go there; TRACEPARENT
  // (the OpenTelemetry convention for a trace handed down through the
  // environment) makes the run join that trace.
  RunContext context(std::shared_ptr<state::Store> store, std::shared_ptr<Observer> observer = nullptr) const;

 private:
  std::shared_ptr<const Agent> build(const AgentConfig& config);
  const providers::McpClient& connect(const AgentConfig& config, const McpServerConfig& server);
  void add_model(const AgentConfig& config, const std::string& key);

  Options options_;
  AgentConfig config_;
  // Declared before the agent: destroyed after it.
  std::vector<std::unique_ptr<providers::McpClient>> mcp_;
  std::map<std::string, std::shared_ptr<Model>, std::less<>> models_;
  std::shared_ptr<providers::Transport> transport_;
  std::shared_ptr<Executor> executor_;
  std::shared_ptr<trace::SpanSink> tracer_;  // null: no collector configured
  std::shared_ptr<const Agent> agent_;
};

}  // namespace agentkit::cli
