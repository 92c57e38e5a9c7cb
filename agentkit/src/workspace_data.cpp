// The workspace and command kinds of a ToolCatalog (<agentkit/tool_data.h>).
#include <agentkit/command.h>
#include <agentkit/tool_data.h>
#include <agentkit/workspace.h>

namespace agentkit {
namespace {

// `read` with an OptionsError or a construction failure reported at the
// JSON path of the key at fault.
template <class Read>
auto at_path(const std::string& path, Read read) {
  try {
    return read();
  } catch (const OptionsError& e) {
    std::string problem = e.what();
    const std::string prefix = "option '" + e.key() + "' ";
    if (problem.rfind(prefix, 0) == 0) problem.erase(0, prefix.size());
    throw ToolDataError(path + "/" + e.key(), problem);
  } catch (const ToolDataError&) {
    throw;
  } catch (const Error& e) {
    throw ToolDataError(path, e.what());
  }
}

std::optional<Json> saved(const Tool& tool, const char* key) {
  for (const Tool* layer = &tool; layer; layer = layer->wrapped()) {
    if (const auto it = layer->spec().metadata.find(key); it != layer->spec().metadata.end()) return *it;
  }
  return std::nullopt;
}

}  // namespace

ToolCatalog& add_workspace_kinds(ToolCatalog& catalog) {
  catalog.add_kind({.name = "workspace",
                    .load =
                        [](const Json& body, const std::string& path, const ToolCatalog&) {
                          return at_path(path, [&] {
                            return workspace_tools(std::make_shared<const Workspace>(WorkspaceOptions::from_json(body)));
                          });
                        },
                    .save = [](const Tool& tool, const ToolCatalog&) { return saved(tool, "workspace"); }});
  catalog.add_kind({.name = "command",
                    .load =
                        [](const Json& body, const std::string& path, const ToolCatalog&) {
                          if (!body.is_object() || !body.contains("root")) {
                            ToolDataReader::fail_at(path, "missing required key 'root'");
                          }
                          Json options = body;
                          options.erase("root");
                          return at_path(path, [&] {
                            auto ws = std::make_shared<const Workspace>(
                                WorkspaceOptions::from_json(Json{{"root", body.at("root")}}));
                            return std::vector<ToolPtr>{command_tool(std::move(ws), CommandOptions::from_json(options))};
                          });
                        },
                    .save = [](const Tool& tool, const ToolCatalog&) { return saved(tool, "command"); }});
  return catalog;
}

}  // namespace agentkit
