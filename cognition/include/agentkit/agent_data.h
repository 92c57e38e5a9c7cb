#pragma once
// The `agent` kind of tool entries (see <agentkit/tool_data.h>): another
// agent offered as a tool {"task": string}, as as_tool() makes it.
//
//   {"agent": {"agent": "researcher",            // a registered agent, or
//              "file": "researcher.yaml",        // an agent file the host reads
//              "name": "research",               // the tool's name; default: the agent's
//              "description": "Delegate a research sub-task and get a summary back.",
//              "side_effecting": false}}         // required: there is no safe default
//
// Exactly one of `agent` and `file`. The core library reads no agent files:
// AgentKindOptions::load_file does (the `agentkit` CLI reads its YAML
// definitions). Saving an agent tool gives the entry it was loaded from; a
// tool made with as_tool() in code has no entry (ToolDataError).
//
// Example:
//   agentkit::ToolCatalog catalog;
//   agentkit::register_agent_kind(catalog, {.agents = {{"researcher", researcher}}});
//   auto tools = catalog.load(Json::parse(R"({"agent": {"agent": "researcher", "name": "research",
//       "description": "Delegate a research sub-task and get a summary back.", "side_effecting": false}})"));
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <agentkit/agent.h>
#include <agentkit/tool_data.h>

namespace agentkit {

struct AgentKindOptions {
  // Agents an entry may name with `agent`, by name.
  std::map<std::string, std::shared_ptr<const Agent>, std::less<>> agents;
  // Reads the agent of a `file` entry (`path` is the entry's JSON path, for
  // errors). Unset: `file` entries are refused.
  std::function<std::shared_ptr<const Agent>(const std::string& file, const std::string& path)> load_file;
};

// Registers the `agent` kind on `catalog`.
void register_agent_kind(ToolCatalog& catalog, AgentKindOptions options);

}  // namespace agentkit
