#include <agentkit/registry.h>

#include <set>

#include <agentkit/errors.h>

namespace agentkit {
namespace {

// Another tool under a changed spec (a new name, metadata, an approval
// rule added), sharing its behaviour.
class WrappedTool final : public Tool {
 public:
  WrappedTool(ToolPtr inner, ToolSpec spec, ApprovalPredicate also_when = {})
      : inner_(std::move(inner)), spec_(std::move(spec)), also_when_(std::move(also_when)) {}
  const ToolSpec& spec() const noexcept override { return spec_; }
  Json run(const Json& arguments, RunContext& ctx) const override { return inner_->run(arguments, ctx); }
  ToolOutput run_output(const Json& arguments, RunContext& ctx) const override {
    return inner_->run_output(arguments, ctx);
  }
  // Every per-call answer is the original's: a renamed `memory` tool's view
  // is still a read.
  bool side_effecting_for(const Json& arguments) const override { return inner_->side_effecting_for(arguments); }
  void check_arguments(const Json& arguments) const override { inner_->check_arguments(arguments); }
  bool reenterable() const noexcept override { return inner_->reenterable(); }
  const Tool* wrapped() const noexcept override { return inner_.get(); }
  bool requires_approval_for(const Json& arguments, const RunContext& ctx) const override {
    return spec_.effects.requires_approval || inner_->requires_approval_for(arguments, ctx) ||
           (also_when_ && also_when_(arguments, ctx));
  }

 private:
  ToolPtr inner_;
  ToolSpec spec_;
  ApprovalPredicate also_when_;  // with_approval()'s rule, on top of the inner tool's
};

// fnmatch-style over names: '*' matches any run of characters.
bool matches(std::string_view pattern, std::string_view name) {
  std::size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

[[noreturn]] void collision(const std::string& name) {
  throw ToolDefinitionError("ToolRegistry: tool '" + name +
                            "' already registered. Pass OnConflict::replace to swap deliberately.");
}

}  // namespace

ToolPtr renamed(ToolPtr tool, std::string new_name, Json extra_metadata) {
  if (!tool) throw ToolDefinitionError("renamed: tool is null");
  ToolSpec spec = tool->spec();
  spec.name = std::move(new_name);
  for (const auto& [key, value] : extra_metadata.items()) spec.metadata[key] = value;
  return std::make_shared<WrappedTool>(std::move(tool), std::move(spec));
}

ToolPtr with_approval(ToolPtr tool) {
  if (!tool) throw ToolDefinitionError("with_approval: tool is null");
  ToolSpec spec = tool->spec();
  spec.effects.requires_approval = true;
  return std::make_shared<WrappedTool>(std::move(tool), std::move(spec));
}

ToolPtr with_approval(ToolPtr tool, ApprovalPredicate when) {
  if (!tool) throw ToolDefinitionError("with_approval: tool is null");
  if (!when) throw ToolDefinitionError("with_approval: tool '" + tool->name() + "': the predicate is empty");
  ToolSpec spec = tool->spec();
  spec.approval_when = when;  // the added rule; the tool's own still applies (requires_approval_for)
  return std::make_shared<WrappedTool>(std::move(tool), std::move(spec), std::move(when));
}

bool matches_any(const std::vector<std::string>& patterns, std::string_view name) {
  for (const auto& pattern : patterns) {
    if (matches(pattern, name)) return true;
  }
  return false;
}

std::vector<ToolPtr> filter_tools(const std::vector<ToolPtr>& tools, const ToolFilter& filter) {
  std::vector<ToolPtr> out;
  for (const auto& tool : tools) {
    if (!tool) continue;
    if (!filter.include.empty() && !matches_any(filter.include, tool->name())) continue;
    if (matches_any(filter.exclude, tool->name())) continue;
    out.push_back(tool);
  }
  return out;
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
