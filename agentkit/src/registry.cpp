#include <agentkit/registry.h>

#include <set>

#include <agentkit/errors.h>

namespace agentkit {
namespace {

class RenamedTool final : public Tool {
 public:
  RenamedTool(ToolPtr inner, std::string name, const Json& extra) : inner_(std::move(inner)), spec_(inner_->spec()) {
    spec_.name = std::move(name);
    for (const auto& [key, value] : extra.items()) spec_.metadata[key] = value;
  }
  const ToolSpec& spec() const noexcept override { return spec_; }
  Json run(const Json& arguments, RunContext& ctx) const override { return inner_->run(arguments, ctx); }
  ToolOutput run_output(const Json& arguments, RunContext& ctx) const override {
    return inner_->run_output(arguments, ctx);
  }
  // Every per-call answer is the original's: a renamed `memory` tool's view
  // is still a read.
  bool side_effecting_for(const Json& arguments) const override { return inner_->side_effecting_for(arguments); }
  void check_arguments(const Json& arguments) const override { inner_->check_arguments(arguments); }

 private:
  ToolPtr inner_;
  ToolSpec spec_;
};

[[noreturn]] void collision(const std::string& name) {
  throw ToolDefinitionError("ToolRegistry: tool '" + name +
                            "' already registered. Pass OnConflict::replace to swap deliberately.");
}

}  // namespace

ToolPtr renamed(ToolPtr tool, std::string new_name, Json extra_metadata) {
  if (!tool) throw ToolDefinitionError("renamed: tool is null");
  return std::make_shared<RenamedTool>(std::move(tool), std::move(new_name), extra_metadata);
}

ToolRegistry ToolRegistry::from_tools(const std::vector<ToolPtr>& tools) {
  ToolRegistry registry;
  for (const auto& tool : tools) registry.add(tool);
  return registry;
}

ToolRegistry& ToolRegistry::add(ToolPtr tool, OnConflict on_conflict) {
  if (!tool) throw ToolDefinitionError("ToolRegistry: cannot register a null tool");
  const std::string& name = tool->name();
  if (name.empty()) throw ToolDefinitionError("ToolRegistry: cannot register a tool without a name");
  auto it = tools_.find(name);
  if (it != tools_.end()) {
    if (on_conflict == OnConflict::fail) collision(name);
    it->second = std::move(tool);
  } else {
    tools_.emplace(name, std::move(tool));
  }
  return *this;
}

ToolRegistry& ToolRegistry::add_plugin(std::string_view prefix, const std::vector<ToolPtr>& tools) {
  if (prefix.empty()) throw ToolDefinitionError("ToolRegistry: a plugin needs a non-empty name prefix");
  std::vector<ToolPtr> staged;
  std::set<std::string> names;
  for (const auto& tool : tools) {
    if (!tool) throw ToolDefinitionError("ToolRegistry: plugin '" + std::string(prefix) + "' has a null tool");
    std::string name = std::string(prefix) + "_" + tool->name();
    if (tools_.contains(name) || !names.insert(name).second) collision(name);
    staged.push_back(renamed(tool, std::move(name), {{"plugin", prefix}, {"local_name", tool->name()}}));
  }
  for (auto& tool : staged) tools_.emplace(tool->name(), std::move(tool));
  return *this;
}

ToolRegistry& ToolRegistry::merge(const ToolRegistry& other, OnConflict on_conflict) {
  if (on_conflict == OnConflict::fail) {
    for (const auto& [name, tool] : other.tools_) {
      if (tools_.contains(name)) collision(name);
    }
  }
  for (const auto& [name, tool] : other.tools_) tools_.insert_or_assign(name, tool);
  return *this;
}

bool ToolRegistry::remove(std::string_view name) {
  auto it = tools_.find(name);
  if (it == tools_.end()) return false;
  tools_.erase(it);
  return true;
}

ToolPtr ToolRegistry::find(std::string_view name) const {
  auto it = tools_.find(name);
  return it == tools_.end() ? nullptr : it->second;
}

bool ToolRegistry::requires_approval(std::string_view name) const {
  auto tool = find(name);
  return tool && tool->requires_approval();
}

std::vector<const ToolSpec*> ToolRegistry::schemas() const {
  std::vector<const ToolSpec*> out;
  for (const auto& [name, tool] : tools_) {
    if (tool->advertised()) out.push_back(&tool->spec());
  }
  return out;
}

std::vector<std::string> ToolRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, tool] : tools_) out.push_back(name);
  return out;
}

std::vector<ToolPtr> ToolRegistry::tools() const {
  std::vector<ToolPtr> out;
  for (const auto& [name, tool] : tools_) out.push_back(tool);
  return out;
}

}  // namespace agentkit
