#include <agentkit/agent_data.h>

#include <agentkit/errors.h>

namespace agentkit {

void register_agent_kind(ToolCatalog& catalog, AgentKindOptions options) {
  auto shared = std::make_shared<const AgentKindOptions>(std::move(options));
  catalog.add_kind(
      {.name = "agent",
       .load = [shared](const Json& body, const std::string& path, const ToolCatalog&) -> std::vector<ToolPtr> {
         const ToolDataReader r(body, path, {"agent", "file", "name", "description", "side_effecting"});
         if (r.has("agent") == r.has("file")) {
           r.fail_at(path, "needs exactly one of 'agent' (a registered agent's name) and 'file' (an agent file)");
         }
         std::shared_ptr<const Agent> agent;
         if (r.has("agent")) {
           const auto name = r.required<std::string>("agent");
           auto it = shared->agents.find(name);
           if (it == shared->agents.end()) {
             throw ToolDataError(r.path("agent"), "no agent named '" + name + "' is registered", ErrorCode::not_found);
           }
           agent = it->second;
         } else {
           if (!shared->load_file) r.fail("file", "agent files are not read here (AgentKindOptions::load_file)");
           agent = shared->load_file(r.required<std::string>("file"), r.path("file"));
         }
         if (!r.has("side_effecting")) {
           r.fail_at(path, "missing required key 'side_effecting' (whether the sub-agent changes the world depends on "
                           "its tools, and there is no safe default)");
         }
         try {
           return {as_tool(agent, {.name = r.get_or<std::string>("name", agent->name()),
                                   .description = r.get_or<std::string>("description", {}),
                                   .side_effecting = r.get<bool>("side_effecting")})};
         } catch (const ToolDefinitionError& e) {
           ToolDataReader::fail_at(path, e.what());
         }
       }});
}

}  // namespace agentkit
