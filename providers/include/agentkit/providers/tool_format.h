#pragma once
// Provider-neutral tool schemas exported in each provider's wire format.
#include <vector>

#include <agentkit/json.h>
#include <agentkit/registry.h>
#include <agentkit/tool.h>

namespace agentkit::providers {

struct OpenAIToolOptions {
  // Strict mode (structured outputs): every property required, optional
  // ones nullable, "additionalProperties": false on every object. A schema
  // strict mode cannot express (an open map, an untyped value) throws
  // ToolDefinitionError naming the property.
  bool strict = false;
};

// {"type": "function", "function": {"name", "description", "parameters"[, "strict": true]}}
Schema openai_tool(const ToolSpec& spec, const OpenAIToolOptions& options = {});
// {"name", "description", "input_schema"}
Schema anthropic_tool(const ToolSpec& spec);

// Every advertised tool of `registry`, in the registry's sorted order.
Schema openai_tools(const ToolRegistry& registry, const OpenAIToolOptions& options = {});
Schema anthropic_tools(const ToolRegistry& registry);

// The strict-mode rewrite of a parameters schema (see OpenAIToolOptions).
// `where` names the tool in errors.
Schema openai_strict_schema(const Schema& parameters, std::string_view where);

}  // namespace agentkit::providers
