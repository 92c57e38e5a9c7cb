#pragma once
// Internals shared by the MCP sources (not installed).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <agentkit/providers/mcp.h>

namespace agentkit::providers::mcp_detail {

// The agentkit spec for an MCP tool: sanitised name, effects from the
// annotations, metadata["mcp"] with the original name, server and hints.
ToolSpec tool_spec(const McpToolInfo& info, const std::string& server_name);

// One tools/list entry; throws McpError(protocol) when it has no name.
McpToolInfo tool_info(const Json& entry);

// A tools/call result object as McpCallResult; throws McpError(protocol)
// when it is not an object.
McpCallResult call_result(const Json& result);

// A short, single-line rendering of untrusted text for logs and errors.
std::string preview_text(std::string_view text, std::size_t max_chars = 120);


// Largest message accepted from a server (a stdio line, an HTTP body or SSE event).
inline constexpr std::size_t kMaxMessageBytes = 32u << 20;
// Deepest nesting accepted in a server message.
inline constexpr std::size_t kMaxMessageDepth = 256;

// Parses one JSON-RPC message from a server. nullopt (with `problem` set)
// for text that is not JSON or nests deeper than kMaxMessageDepth.
std::optional<Json> parse_message(std::string_view text, std::string& problem);

}  // namespace agentkit::providers::mcp_detail
