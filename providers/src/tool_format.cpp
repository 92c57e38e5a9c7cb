#include <agentkit/providers/tool_format.h>

#include <algorithm>

#include <agentkit/errors.h>

#include "schema_dialects.h"

namespace agentkit::providers {
namespace {

const Schema& advertised_parameters(const ToolSpec& spec) {
  if (!spec.parameters) {
    throw ToolDefinitionError("tool '" + spec.name + "' is loop-invisible (no parameters schema) and cannot be advertised");
  }
  return *spec.parameters;
}

[[noreturn]] void refuse(SchemaDialect dialect, const std::string& what, const std::string& where) {
  throw ToolDefinitionError(std::string(to_string(dialect)) + " cannot express " + what + " at " + where);
}

bool is_null_schema(const Schema& s) { return s.is_object() && s.contains("type") && s["type"] == "null"; }

bool is_nullable(const Schema& s) {
  if (is_null_schema(s)) return true;
  if (!s.contains("anyOf")) return false;
  for (const auto& alt : s["anyOf"]) {
    if (is_null_schema(alt)) return true;
  }
  return false;
}

bool is_object_schema(const Schema& s) { return s.is_object() && s.value("type", Schema()) == "object"; }

// Keywords strict mode (and every dialect here but the pass-through ones)
// has no way to say.
constexpr std::string_view kStrictRefused[] = {"allOf", "oneOf", "not", "if", "then", "else", "dependentRequired",
                                               "dependentSchemas", "patternProperties", "propertyNames",
                                               "unevaluatedProperties", "unevaluatedItems"};

Schema strict(const Schema& s, const std::string& where) {
  if (!s.is_object()) return s;
  const bool typed = s.contains("type") || s.contains("anyOf") || s.contains("enum") || s.contains("const") ||
                     s.contains("$ref");
  if (!typed) refuse(SchemaDialect::openai_strict, "the untyped value", where);
  for (std::string_view keyword : kStrictRefused) {
    if (s.contains(keyword)) refuse(SchemaDialect::openai_strict, "'" + std::string(keyword) + "'", where);
  }
  Schema out = s;
  if (is_object_schema(s) && !s.contains("properties") && s.value("additionalProperties", Schema(true)) != false) {
    refuse(SchemaDialect::openai_strict, "the open object (a map)", where);
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
  if (s.contains("$defs") && s["$defs"].is_object()) {
    Schema defs = Schema::object();
    for (const auto& [name, def] : s["$defs"].items()) defs[name] = strict(def, where + ".$defs." + name);
    out["$defs"] = std::move(defs);
  }
  return out;
}

// Ollama decodes each property of a tool into {type, description, enum,
// items} and drops every other field, so what it would drop is refused or,
// for a bound on the value, said in the description.
constexpr std::string_view kOllamaBounds[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                              "multipleOf", "minLength", "maxLength", "pattern", "format",
                                              "minItems", "maxItems", "uniqueItems", "default"};

Schema ollama_property(const Schema& s, const std::string& where) {
  if (!s.is_object()) refuse(SchemaDialect::ollama, "a schema that is not an object", where);
  Schema out = Schema::object();
  Schema type;
  if (s.contains("anyOf")) {
    // std::optional<T>: {"anyOf": [T, {"type": "null"}]} as a type list.
    const Schema& alts = s["anyOf"];
    const Schema* value = nullptr;
    bool has_null = false;
    for (const auto& alt : alts) {
      if (is_null_schema(alt)) {
        has_null = true;
      } else if (!value) {
        value = &alt;
      } else {
        refuse(SchemaDialect::ollama, "a choice of types (anyOf, a variant)", where);
      }
    }
    if (!value || !has_null) refuse(SchemaDialect::ollama, "a choice of types (anyOf, a variant)", where);
    Schema inner = ollama_property(*value, where);
    Schema types = Schema::array();
    if (inner.contains("type")) {
      if (inner["type"].is_array()) {
        for (const auto& t : inner["type"]) types.push_back(t);
      } else {
        types.push_back(inner["type"]);
      }
    }
    types.push_back("null");
    inner["type"] = std::move(types);
    if (s.contains("description")) inner["description"] = s["description"];
    return inner;
  }
  std::string bounds;
  for (const auto& [key, value] : s.items()) {
    if (key == "type") {
      if (value == "object" && s.contains("additionalProperties") && !s.contains("properties")) {
        refuse(SchemaDialect::ollama, "the open object (a map)", where);
      }
      if (value == "object") refuse(SchemaDialect::ollama, "a nested object (Ollama keeps a property's type only)", where);
      out["type"] = value;
    } else if (key == "description" || key == "enum") {
      out[key] = value;
    } else if (key == "const") {
      out["enum"] = Schema::array({value});
    } else if (key == "items") {
      out["items"] = value;  // kept as sent: Ollama passes items through whole
    } else if (key == "title" || key == "examples") {
      // annotations: nothing to enforce
    } else if (std::find(std::begin(kOllamaBounds), std::end(kOllamaBounds), key) != std::end(kOllamaBounds)) {
      bounds += (bounds.empty() ? "" : ", ") + key + " " + value.dump();
    } else {
      refuse(SchemaDialect::ollama, "'" + key + "' on a property (Ollama keeps type, description, enum and items)",
             where);
    }
  }
  if (!out.contains("type") && !out.contains("enum")) refuse(SchemaDialect::ollama, "the untyped value", where);
  if (!bounds.empty()) {
    std::string d = out.value("description", std::string());
    out["description"] = d + (d.empty() ? "" : " ") + "(" + bounds + ")";
  }
  return out;
}

Schema ollama(const Schema& s, const std::string& where) {
  Schema out = Schema::object();
  for (const auto& [key, value] : s.items()) {
    if (key == "properties") {
      Schema properties = Schema::object();
      for (const auto& [name, prop] : value.items()) properties[name] = ollama_property(prop, where + "." + name);
      out["properties"] = std::move(properties);
    } else if (key == "type" || key == "required" || key == "description" || key == "$defs") {
      // Ollama keeps the root's $defs; a $ref under a property is refused there.
      out[key] = value;
    } else if (key == "additionalProperties") {
      // A closed object stays closed by the check of the arguments; an open
      // map has no properties Ollama could show.
      if (value != false) refuse(SchemaDialect::ollama, "the open object (a map)", where);
    } else if (key != "title" && key != "$schema") {
      refuse(SchemaDialect::ollama, "'" + key + "' on the arguments object", where);
    }
  }
  if (!out.contains("properties")) out["properties"] = Schema::object();
  return out;
}

}  // namespace

std::string_view to_string(SchemaDialect dialect) noexcept {
  switch (dialect) {
    case SchemaDialect::openai: return "OpenAI";
    case SchemaDialect::openai_strict: return "OpenAI strict mode";
    case SchemaDialect::anthropic: return "Anthropic";
    case SchemaDialect::gemini: return "Gemini";
    case SchemaDialect::ollama: return "Ollama";
  }
  return "?";
}

Schema compile_schema(const Schema& schema, SchemaDialect dialect, std::string_view where, bool root_object) {
  const std::string at(where);
  if (root_object && !is_object_schema(schema)) refuse(dialect, "arguments that are not an object", at);
  switch (dialect) {
    case SchemaDialect::openai:
    case SchemaDialect::anthropic: return schema;
    case SchemaDialect::openai_strict: return strict(schema, at);
    case SchemaDialect::gemini: return detail::gemini_schema(schema, where);
    case SchemaDialect::ollama: return root_object ? ollama(schema, at) : schema;  // `format` takes JSON Schema whole
  }
  return schema;
}

void check_schemas(std::span<const ToolSpec* const> tools, const Schema* output_schema, SchemaDialect dialect) {
  for (const ToolSpec* spec : tools) compile_schema(advertised_parameters(*spec), dialect, "tool '" + spec->name + "' arguments");
  if (output_schema) compile_schema(*output_schema, dialect, "the output schema", false);
}

Schema openai_strict_schema(const Schema& parameters, std::string_view where) {
  return compile_schema(parameters, SchemaDialect::openai_strict, where, false);
}

Schema function_tool(const ToolSpec& spec, SchemaDialect dialect) {
  Schema function = Schema::object();
  function["name"] = spec.name;
  function["description"] = spec.description;
  function["parameters"] = compile_schema(advertised_parameters(spec), dialect, "tool '" + spec.name + "' arguments");
  if (dialect == SchemaDialect::openai_strict) function["strict"] = true;
  Schema out = Schema::object();
  out["type"] = "function";
  out["function"] = std::move(function);
  return out;
}

Schema openai_tool(const ToolSpec& spec, const OpenAIToolOptions& options) {
  return function_tool(spec, options.strict ? SchemaDialect::openai_strict : SchemaDialect::openai);
}

Schema anthropic_tool(const ToolSpec& spec) {
  Schema out = Schema::object();
  out["name"] = spec.name;
  out["description"] = spec.description;
  out["input_schema"] = compile_schema(advertised_parameters(spec), SchemaDialect::anthropic, "tool '" + spec.name + "' arguments");
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
