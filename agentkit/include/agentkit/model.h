#pragma once
// Models are an interface: FakeLLM and the provider adapters implement it.
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <agentkit/messages.h>
#include <agentkit/tool.h>

namespace agentkit {

class RunContext;

// What one model call sees. Views into the run's own state: a model MUST NOT
// keep these spans past `complete` (copy what you need).
struct ModelRequest {
  std::string_view model;                  // e.g. "fake", "openai/gpt-4o-mini"
  std::string_view system;                 // the agent's prompt
  std::span<const Message> messages;       // history, oldest first
  std::span<const ToolSpec* const> tools;  // advertised tools, sorted by name
  const Schema* output_schema = nullptr;   // the agent's declared output type, if any
};

struct ModelResponse {
  Message message;                   // role assistant
  Usage usage;
  std::string finish_reason = "stop";  // normalised: stop, tool_calls, length, content_filter, error
};

// A model. `complete` may block (network); agentkit calls it on the run's
// executor, never on a non-blocking host's thread unless the host chose an
// inline executor. Implementations MUST be safe to call from several runs at
// once. Failures throw (provider errors are typed in agentkit::providers).
class Model {
 public:
  virtual ~Model() = default;
  virtual ModelResponse complete(const ModelRequest& request, RunContext& ctx) = 0;
};

// Resolves an agent's model name to a model.
using ModelResolver = std::function<std::shared_ptr<Model>(std::string_view name)>;

}  // namespace agentkit
