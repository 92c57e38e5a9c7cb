#pragma once
// Provider-neutral tool schemas exported in each provider's wire format, and
// the schema compiler: one JSON Schema (as agentkit derives it from C++
// types, or as an MCP server declares it) rewritten for each provider's
// dialect.
#include <span>
#include <string_view>
#include <vector>

#include <agentkit/json.h>
#include <agentkit/registry.h>
#include <agentkit/tool.h>

namespace agentkit::providers {

// The schema dialects of the providers, for tool parameters and output schemas:
//  - openai: Chat Completions / Responses function parameters as declared
//    (an object at the root).
//  - openai_strict: OpenAI strict mode (structured outputs): every property
//    required, optional ones nullable, every object closed, $defs rewritten
//    too; an open map, an untyped value and allOf/oneOf/not/if/then/else,
//    patternProperties, propertyNames, dependent* or unevaluated* are refused.
//  - anthropic: input_schema as declared (an object at the root).
//  - gemini: Gemini's OpenAPI 3.0 subset (`parameters`, `responseSchema`):
//    $ref inlined from $defs (a recursive one refused), type arrays and
//    anyOf-with-null as `nullable`, a string `const` as a one-value enum;
//    `additionalProperties: false` is left out (Gemini has no such field and
//    agentkit checks arguments against the declared schema before any tool
//    runs); an open map, a non-string enum, oneOf/allOf/not, exclusive bounds
//    and the other constructs it cannot take are refused.
//  - ollama: what Ollama's /api/chat keeps of a tool (it decodes each
//    property into type, description, enum and items and drops the rest):
//    an optional property becomes a type list with "null"; a value bound
//    (minimum, maxLength, pattern, format, ...) it would drop is written into
//    the property's description, so the model still reads it; a nested
//    object, a map, a variant or a $ref under a property is refused.
enum class SchemaDialect { openai, openai_strict, anthropic, gemini, ollama };
std::string_view to_string(SchemaDialect dialect) noexcept;

// `schema` rewritten for `dialect`. Throws ToolDefinitionError naming
// `where` (e.g. "tool 'search' arguments"), the field's path under it and
// the dialect for a construct the dialect cannot express: refused before
// anything is sent, never silently weakened. `root_object` requires an
// object at the root (tool parameters; output schemas need not be).
Schema compile_schema(const Schema& schema, SchemaDialect dialect, std::string_view where, bool root_object = true);

// Compiles every tool's parameters and the output schema for `dialect`,
// throwing the first ToolDefinitionError: what each adapter's
// Model::check_schemas does, so an agent whose tool a provider cannot take
// fails before its first model call.
void check_schemas(std::span<const ToolSpec* const> tools, const Schema* output_schema, SchemaDialect dialect);

struct OpenAIToolOptions {
  // Strict mode (structured outputs): every property required, optional
  // ones nullable, "additionalProperties": false on every object. A schema
  // strict mode cannot express (an open map, an untyped value) throws
  // ToolDefinitionError naming the property.
  bool strict = false;
};

// {"type": "function", "function": {"name", "description", "parameters"[, "strict": true]}}
Schema openai_tool(const ToolSpec& spec, const OpenAIToolOptions& options = {});
// The same shape with the parameters compiled for `dialect` (Ollama's tools
// are OpenAI's function shape in the ollama dialect).
Schema function_tool(const ToolSpec& spec, SchemaDialect dialect);
// {"name", "description", "input_schema"}
Schema anthropic_tool(const ToolSpec& spec);

// Every advertised tool of `registry`, in the registry's sorted order.
Schema openai_tools(const ToolRegistry& registry, const OpenAIToolOptions& options = {});
Schema anthropic_tools(const ToolRegistry& registry);

// The strict-mode rewrite of a parameters schema (see OpenAIToolOptions).
// `where` names the tool in errors.
Schema openai_strict_schema(const Schema& parameters, std::string_view where);

}  // namespace agentkit::providers
