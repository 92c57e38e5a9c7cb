#include <agentkit/providers/tool_format.h>

#include <algorithm>

#include <agentkit/errors.h>

namespace agentkit::providers {
namespace {

const Schema& advertised_parameters(const ToolSpec& spec) {
  if (!spec.parameters) {
    throw ToolDefinitionError("tool '" + spec.name + "' is loop-invisible (no parameters schema) and cannot be advertised");
  }
  return *spec.parameters;
}

bool is_nullable(const Schema& s) {
  if (s.contains("type") && s["type"] == "null") return true;
  if (!s.contains("anyOf")) return false;
  for (const auto& alt : s["anyOf"]) {
    if (alt.contains("type") && alt["type"] == "null") return true;
  }
  return false;
}

Schema strict(const Schema& s, const std::string& where) {
  if (!s.is_object()) return s;
  const bool typed = s.contains("type") || s.contains("anyOf") || s.contains("enum");
  if (!typed) {
    throw ToolDefinitionError("OpenAI strict mode cannot express the untyped value at " + where);
  }
  Schema out = s;
  if (s.contains("additionalProperties") && !s.contains("properties")) {
    throw ToolDefinitionError("OpenAI strict mode cannot express the open object (a map) at " + where);
  }
  if (s.contains("properties")) {
    Schema required_before = s.value("required", Schema::array());
    Schema properties = Schema::object();
    Schema required = Schema::array();
    for (const auto& [name, prop] : s["properties"].items()) {
      Schema p = strict(prop, where + "." + name);
      const bool was_required =
          std::find(required_before.begin(), required_before.end(), name) != required_before.end();
      if (!was_required && !is_nullable(p)) {
        Schema null_schema = Schema::object();
        null_schema["type"] = "null";
        Schema wrapped = Schema::object();
        if (p.contains("description")) {
          wrapped["description"] = p["description"];
          p.erase("description");
        }
        wrapped["anyOf"] = Schema::array({std::move(p), std::move(null_schema)});
        p = std::move(wrapped);
      }
      properties[name] = std::move(p);
      required.push_back(name);
    }
    out["properties"] = std::move(properties);
    out["required"] = std::move(required);
    out["additionalProperties"] = false;
  }
  if (s.contains("items")) out["items"] = strict(s["items"], where + "[]");
  if (s.contains("anyOf")) {
    Schema alts = Schema::array();
    for (const auto& alt : s["anyOf"]) alts.push_back(strict(alt, where));
    out["anyOf"] = std::move(alts);
  }
  return out;
}

}  // namespace

Schema openai_strict_schema(const Schema& parameters, std::string_view where) {
  return strict(parameters, std::string(where));
}

Schema openai_tool(const ToolSpec& spec, const OpenAIToolOptions& options) {
  const Schema& parameters = advertised_parameters(spec);
  Schema function = Schema::object();
  function["name"] = spec.name;
  function["description"] = spec.description;
  function["parameters"] = options.strict ? openai_strict_schema(parameters, "tool '" + spec.name + "' arguments")
                                          : parameters;
  if (options.strict) function["strict"] = true;
  Schema out = Schema::object();
  out["type"] = "function";
  out["function"] = std::move(function);
  return out;
}

Schema anthropic_tool(const ToolSpec& spec) {
  Schema out = Schema::object();
  out["name"] = spec.name;
  out["description"] = spec.description;
  out["input_schema"] = advertised_parameters(spec);
  return out;
}

Schema openai_tools(const ToolRegistry& registry, const OpenAIToolOptions& options) {
  Schema out = Schema::array();
  for (const ToolSpec* spec : registry.schemas()) out.push_back(openai_tool(*spec, options));
  return out;
}

Schema anthropic_tools(const ToolRegistry& registry) {
  Schema out = Schema::array();
  for (const ToolSpec* spec : registry.schemas()) out.push_back(anthropic_tool(*spec));
  return out;
}

}  // namespace agentkit::providers
