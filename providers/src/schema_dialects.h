#pragma once
// The per-dialect rewrites behind compile_schema (<agentkit/providers/tool_format.h>).
// Each takes a JSON Schema as agentkit derives it from C++ types (objects
// with properties/required/additionalProperties, arrays with items, anyOf,
// enum, $defs/$ref, type arrays with "null") and returns the schema the
// provider takes, or throws ToolDefinitionError naming `where` (the tool or
// the output schema), the field's path and the dialect for a construct the
// dialect cannot express. Never weakens silently.
#include <string_view>

#include <agentkit/json.h>

namespace agentkit::providers::detail {

// Gemini's function-declaration `parameters` (the OpenAPI 3.0 subset of
// ../shared/fixtures/wire/gemini/SCHEMA_SUBSET.md).
Schema gemini_schema(const Schema& schema, std::string_view where);

}  // namespace agentkit::providers::detail
