#pragma once
// Agent definitions in YAML: loading and validation for the `agentkit` CLI.
//
//   name: support                      # required
//   description: Answers questions about customer orders.   # used when another agent calls this one
//   model: openai/gpt-4o-mini          # required: openai/<m>, anthropic/<m>, or <provider>/<m>@<base URL>
//   base_url: http://127.0.0.1:11434/v1  # optional: an OpenAI-compatible (or Anthropic) server
//   api_key_env: SUPPORT_API_KEY       # optional: the variable holding the key; default OPENAI_API_KEY /
//                                      # ANTHROPIC_API_KEY. Keys are never written in the file.
//   prompt: |                          # required, or prompt_file (relative to this file)
//     You handle refunds for damaged orders.
//   autonomy: gated                    # manual | gated | automatic (default)
//   limits: {max_iterations: 10, max_repairs: 3}
//   budget: {steps: 20, tool_calls: 40, tokens: 200000, cost_usd: 1.5, wall_time_s: 300}
//   pricing: {input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6}   # needed by cost_usd
//   model_settings: {temperature: 0.2, max_output_tokens: 800, tool_choice: auto}   # see ModelSettings
//   session: support-desk              # optional: continue this conversation across runs
//   egress: [https://api.example.com, "http://127.0.0.1:8080"]   # where REST tools may connect
//   tools:
//     - rest:                          # an HTTP endpoint as a tool
//         name: refund_order
//         description: Refund part or all of a customer order; returns the refund record.
//         method: POST                 # GET (default), HEAD, POST, PUT, PATCH, DELETE
//         url: https://pay.example.com/v1/orders/{order_id}/refunds
//         side_effecting: true         # required
//         idempotent: false
//         requires_approval: true      # every call waits for a human; or, per call:
//         # approve_if: "amount_cents > 10000"   # see "Approval rules" below
//         params:
//           - {name: order_id, description: The order to refund}   # in: path (named in the URL)
//           - {name: amount_cents, type: integer, description: How much to refund, in cents}
//         headers: {Authorization: "Bearer ${PAY_API_TOKEN}"}     # ${VAR}: read at call time
//         timeout_s: 10
//         retries: 0
//     - mcp: {name: fs, command: npx, args: [-y, "@modelcontextprotocol/server-filesystem", ./docs]}
//     - mcp: {name: search, url: "http://127.0.0.1:3001/mcp", headers: {Authorization: "Bearer ${SEARCH_TOKEN}"}}
//     - memory: {dir: ./memories}      # the `memory` file tool; no dir: kept in memory for the run
//     - skills: {dir: ./skills}        # SKILL.md folders: listed in the prompt, load_skill tool
//     - agent: {file: researcher.yaml, name: research, description: ..., side_effecting: false}  # required
//
// The `rest` and `mcp` entries are the library's tool data format
// (<agentkit/providers/tool_data.h>; the same entries load from JSON into a
// ToolCatalog) written as YAML: a scalar is a string unless its key takes a
// boolean or a number (side_effecting, idempotent, requires_approval,
// timeout_s, retries, retry_delay_s, max_retry_delay_s, max_redirects,
// max_response_bytes, required), and `default` and `enum` take any value.
// REST entries also take retry_delay_s, max_retry_delay_s and
// max_response_bytes. The library's errors name a JSON path; they are
// reported at that node's line ("agent.yaml:16: 'type' in
// tools[0].rest.params[1]: must be one of string, ...").
//
// Parameters (`params` entries): name, description (required); `in`: path,
// query or body (default: path when the URL names it, else query for GET,
// HEAD and DELETE and body otherwise); `type`: string (default), integer,
// number, boolean, array, object; `items` (the element type of an array);
// `required` (default true); `default`; `enum` (the allowed values).
//
// MCP servers: `name` (required; prefixes the server's tool names, e.g.
// fs_read_file), then either `command` with `args`, `env`, `inherit_env`
// and `cwd` (stdio), or `url` with `headers` (Streamable HTTP); `timeout_s`.
// `${VAR}` in `env` and `headers` values is read from the environment.
// Which of the server's tools the agent gets: `include` and `exclude`, lists
// of name patterns (the server's own names, '*' any run of characters;
// exclude wins). Which wait for a human: `requires_approval` (true: all, or
// a list of patterns) and `approve_if` (a mapping of pattern to rule):
//     - mcp:
//         name: shop
//         command: node
//         args: [shop-server.mjs]
//         include: ["get_*", refund, cancel_order]
//         requires_approval: [cancel_order]
//         approve_if: {refund: "amount_usd > 100"}
// A pattern that names no tool the agent gets is an error when the server
// connects (a typo must not leave a call ungated).
//
// Approval rules (`approve_if`): an expression over the call's arguments,
// true when the call must wait for a human: comparisons (== != < <= > >=),
// `in [...]`, and, or, not, parentheses, paths such as `order.items[0].sku`
// (see <agentkit/condition.h>). Checked when the file loads; a call whose
// arguments cannot decide it (a missing path, a wrong type) waits.
//
// Model settings (`model_settings`, also spelled `settings`): temperature,
// top_p, max_output_tokens, stop (a list), seed, tool_choice (auto,
// required, none, or {tool: <name>}), parallel_tool_calls,
// reasoning_effort (minimal, low, medium, high), thinking_budget_tokens,
// extra (a mapping merged into the provider's request body); the keys and
// checks of ModelSettings::from_json, reported at the offending key's line.
//
// Relative paths are relative to the file that names them; a stdio MCP
// server starts in that file's directory (or `cwd`), so relative paths in
// its `command` and `args` are too. In a sub-agent's
// file `autonomy`, `budget`, `session` and `egress` have no effect (the
// calling run's apply); loading notes that as a warning.
//
// Every problem is a ConfigError naming the file and line: a YAML syntax
// error ("agent.yaml:4:7: ..."), an unknown field ("agent.yaml:9: unknown
// field 'promt' in agent; accepted fields: api_key_env, autonomy, ..."), a
// value of the wrong type, a missing required field, an invalid tool.
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/condition.h>
#include <agentkit/context.h>
#include <agentkit/providers/mcp.h>
#include <agentkit/providers/tool_data.h>
#include <agentkit/registry.h>
#include <agentkit/skills.h>
#include <agentkit/tool.h>

namespace agentkit::cli {

// A definition that cannot be used. what() reads "FILE:LINE:COL: problem",
// "FILE:LINE: problem" without a column, "FILE: problem" without a line.
class ConfigError : public Error {
 public:
  ConfigError(std::filesystem::path file, int line, int column, const std::string& problem);
  ConfigError(std::filesystem::path file, int line, const std::string& problem)
      : ConfigError(std::move(file), line, 0, problem) {}

  const std::filesystem::path& file() const noexcept { return file_; }
  int line() const noexcept { return line_; }  // 1-based, 0 when unknown
  int column() const noexcept { return column_; }

 private:
  std::filesystem::path file_;
  int line_;
  int column_;
};

// One `mcp` entry, as the library reads it (<agentkit/providers/tool_data.h>),
// with the stdio server's directory made absolute, and its line.
struct McpServerConfig : providers::McpServerEntry {
  int line = 0;
};

// The `memory` entry; no directory keeps the notes in memory for the run.
struct MemoryConfig {
  std::optional<std::filesystem::path> dir;  // absolute
  int line = 0;
};

struct AgentConfig;

// One `agent` entry: another definition offered as a tool {"task": string}.
struct SubAgentConfig {
  std::string name;
  std::string description;
  bool side_effecting = false;
  std::shared_ptr<const AgentConfig> agent;
  int line = 0;
};

// A validated definition. Paths are absolute.
struct AgentConfig {
  std::filesystem::path file;
  std::string name;
  std::string description;
  std::string model;  // with "@<base URL>" when base_url is set
  int model_line = 0;
  std::string api_key_env;
  int api_key_line = 0;
  std::string prompt;
  Autonomy autonomy = Autonomy::automatic;
  int max_iterations = 10;
  int max_repairs = 3;
  BudgetLimits budget;
  std::optional<Pricing> pricing;  // USD per million tokens; required by budget.cost_usd
  ModelSettings model_settings;    // checked while loading (a tool_choice's tool when the agent is built)
  int model_settings_line = 0;
  std::string session;
  std::vector<std::string> egress;  // allowlist rules, each checked by EgressRule::parse

  std::vector<ToolPtr> rest_tools;   // built and checked while loading
  std::vector<ToolPtr> local_tools;  // workspace and command tools, built while loading
  std::vector<McpServerConfig> mcp;
  std::optional<MemoryConfig> memory;
  std::shared_ptr<Skills> skills;  // every `skills` directory, discovered while loading
  std::vector<SubAgentConfig> agents;

  // Notes worth showing that do not stop the definition from loading.
  std::vector<std::string> warnings;
};

// Reads and validates `file` and every sub-agent file it names (a cycle is
// an error). Throws ConfigError.
AgentConfig load_agent_config(const std::filesystem::path& file);

}  // namespace agentkit::cli
