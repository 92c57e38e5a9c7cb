#pragma once
// Internal: the type test of the schema-driven argument validator,
// Tool::check_arguments, which MCP tools run too.
#include <string_view>

#include <agentkit/json.h>

namespace agentkit::detail {

// Whether `value` is of the JSON Schema type `type`. "integer" is a number
// without a fraction (5.0 counts); a type name this check does not know
// constrains nothing.
bool matches_schema_type(const Json& value, std::string_view type) noexcept;

}  // namespace agentkit::detail
