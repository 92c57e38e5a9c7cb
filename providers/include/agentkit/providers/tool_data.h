#pragma once
// The `rest` and `mcp` kinds of tool entries (see <agentkit/tool_data.h>),
// and the JSON form of RestToolDefinition and of an MCP server entry. The
// `agentkit` CLI's YAML `tools:` entries are this format written as YAML.
//
// REST entry (every RestToolDefinition field; `side_effecting` required):
//   {"rest": {"name": "refund_order",
//             "description": "Refund part or all of a customer order; returns the refund record.",
//             "method": "POST", "url": "https://pay.example.com/v1/orders/{order_id}/refunds",
//             "side_effecting": true, "idempotent": false, "requires_approval": false,
//             "approve_if": "amount_cents > 10000", "tags": ["billing"],
//             "params": [{"name": "order_id", "in": "path", "description": "The order to refund",
//                         "type": "string", "required": true},
//                        {"name": "amount_cents", "in": "body", "description": "How much to refund, in cents",
//                         "type": "integer", "required": true}],
//             "headers": {"Authorization": "Bearer ${PAY_API_TOKEN}"},
//             "timeout_s": 10, "retries": 0, "retry_delay_s": 0.2, "max_retry_delay_s": 10,
//             "max_redirects": 5, "max_response_bytes": 1048576}}
// A param's `in` defaults to path when the URL names it, else query for GET,
// HEAD and DELETE, else body; `type` to string (also: integer, number,
// boolean, array, object); `items` (an array's element type) to string;
// `required` to true; `default` and `enum` (a list) are any JSON. `${VAR}` in
// header values stays as written: the tool reads it at call time.
//
// MCP entry (one server, several tools):
//   {"mcp": {"name": "shop", "command": "node", "args": ["shop.mjs"], "env": {"TOKEN": "${SHOP_TOKEN}"},
//            "inherit_env": ["HOME"], "cwd": "/srv/shop",          // stdio; or
//            "url": "http://127.0.0.1:3001/mcp", "headers": {...}, // Streamable HTTP
//            "timeout_s": 60, "include": ["get_*", "refund"], "exclude": [],
//            "requires_approval": ["cancel_*"],                  // or true: every tool
//            "approve_if": {"refund": "amount_usd > 100"}}}
// Loading connects to the server (${VAR} in env and header values read
// then) and yields its tools named "<name>_<tool>", filtered and gated; the
// catalog keeps the connection open as long as it lives. Saving any of
// those tools gives the server's entry back (ToolCatalog::save_all writes
// it once).
//
// save() writes every scalar field and leaves out empty lists, empty maps
// and an absent approve_if / cwd, so its output is canonical: loading it and
// saving again gives the same JSON.
//
// Example:
//   agentkit::ToolCatalog catalog;
//   agentkit::providers::register_provider_kinds(catalog);
//   auto tools = catalog.load(Json{{"rest", {{"name", "get_weather"}, ...}}});
//   Json entry = catalog.save(*tools[0]);
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <agentkit/condition.h>
#include <agentkit/json.h>
#include <agentkit/providers/mcp.h>
#include <agentkit/providers/rest_tool.h>
#include <agentkit/registry.h>
#include <agentkit/tool_data.h>

namespace spdlog {
class logger;
}

namespace agentkit::providers {

// A REST definition as the body of a `rest` entry. Throws ToolDataError
// (unimplemented) when the approval rule is only a C++ function (no
// approve_if text).
Json rest_to_json(const RestToolDefinition& definition);
// The definition a `rest` body describes, checked key by key (ToolDataError
// at `path`/<key>); the RestTool constructor checks the rest (URL, retries).
RestToolDefinition rest_from_json(const Json& body, const std::string& path = "");

// One `mcp` entry: exactly one of stdio and http is set.
struct McpServerEntry {
  std::string name;
  std::optional<McpStdioServer> stdio;  // command, args, env, inherit_env, cwd (working_directory)
  std::optional<McpHttpServer> http;    // url, headers
  std::chrono::milliseconds timeout{60'000};
  ToolFilter filter;                           // include / exclude
  std::vector<std::string> requires_approval;  // patterns: every call of those tools waits ("*": all)
  std::vector<std::pair<std::string, Condition>> approve_if;  // pattern, rule
};
Json mcp_to_json(const McpServerEntry& server);
McpServerEntry mcp_from_json(const Json& body, const std::string& path = "");

// The tools of `offered` (a server's tools) that `server` lets the agent
// have, with the approvals it asks for, under their own names. A pattern of
// include, requires_approval or approve_if that names none of them throws
// ToolDataError ("MCP server 'shop': approve_if 'refnd' names none of the
// tools the agent gets (...)"): a typo must not leave a refund ungated.
std::vector<ToolPtr> mcp_server_tools(const McpServerEntry& server, const std::vector<ToolPtr>& offered);

// Options of the `mcp` kind's loader.
struct McpKindOptions {
  std::shared_ptr<spdlog::logger> logger;  // for the clients; null: none
};

// Registers the `rest` kind: a RestTool per entry; saves any RestTool.
void register_rest_kind(ToolCatalog& catalog);
// Registers the `mcp` kind (see above). Saves only tools it loaded.
void register_mcp_kind(ToolCatalog& catalog, McpKindOptions options = {});
// Both.
void register_provider_kinds(ToolCatalog& catalog);

}  // namespace agentkit::providers
