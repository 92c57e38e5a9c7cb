#pragma once
// ToolRegistry: name -> tool lookup, and nothing else. Execution belongs to
// the invoker's middleware chain.
#include <concepts>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <agentkit/tool.h>

namespace agentkit {

// What registering a name that is already taken does.
enum class OnConflict {
  fail,     // throw ToolDefinitionError (the default: a silent swap hides bugs)
  replace,  // a deliberate hot-swap
};

// A group of tools from one object (spec 003's plugin): anything with a
// `tools()` member returning the tools, bound to the object.
template <class P>
concept ToolPlugin = requires(P& p) {
  { p.tools() } -> std::convertible_to<std::vector<ToolPtr>>;
};

// Lookup of tools by name. Not synchronised: finish registering before runs
// start reading it.
//
// Example:
//   agentkit::ToolRegistry registry = agentkit::ToolRegistry::from_tools({forecast, refund});
//   for (const ToolSpec* spec : registry.schemas()) { ... advertise ... }
//   agentkit::ToolPtr t = registry.find("forecast");
class ToolRegistry {
 public:
  ToolRegistry() = default;
  static ToolRegistry from_tools(const std::vector<ToolPtr>& tools);

  // Registers `tool` under its name. A taken name throws ToolDefinitionError
  // unless `on_conflict` is OnConflict::replace; a null tool throws too.
  ToolRegistry& add(ToolPtr tool, OnConflict on_conflict = OnConflict::fail);

  // Registers every tool of a plugin as `<prefix>_<name>`, atomically: one
  // collision or bad tool leaves the registry unchanged. Each registered spec
  // records "plugin" and "local_name" in its metadata; each tool keeps its
  // behaviour and effects (see renamed()).
  ToolRegistry& add_plugin(std::string_view prefix, const std::vector<ToolPtr>& tools);
  template <ToolPlugin P>
  ToolRegistry& add_plugin(std::string_view prefix, P& plugin) {
    return add_plugin(prefix, plugin.tools());
  }

  // Adds every tool of `other`, atomically (all or, on a collision, none).
  ToolRegistry& merge(const ToolRegistry& other, OnConflict on_conflict = OnConflict::fail);

  // Removes a tool; returns whether it was there.
  bool remove(std::string_view name);

  // The tool called `name`, or nullptr.
  ToolPtr find(std::string_view name) const;
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  // Whether calling `name` always needs a human decision first (its
  // declaration; a call may need one by its arguments too, see
  // Tool::requires_approval_for).
  bool requires_approval(std::string_view name) const;

  // Specs of the advertised tools (those with a parameters schema), sorted by
  // name, so the system+tools prompt prefix is byte-identical across turns.
  std::vector<const ToolSpec*> schemas() const;
  // Every registered name, advertised or not, sorted.
  std::vector<std::string> names() const;
  std::vector<ToolPtr> tools() const;
  std::size_t size() const noexcept { return tools_.size(); }
  bool empty() const noexcept { return tools_.empty(); }

 private:
  std::map<std::string, ToolPtr, std::less<>> tools_;
};

// A tool exposed under another name (and optionally extra metadata), sharing
// the original's behaviour: its run, its effects and every per-call answer
// (side_effecting_for, check_arguments). Used by plugins; handy for aliasing.
ToolPtr renamed(ToolPtr tool, std::string new_name, Json extra_metadata = Json::object());

// A tool whose every call needs a human decision first, sharing the
// original's behaviour (for a tool you did not declare: an MCP server's, a
// plugin's).
ToolPtr with_approval(ToolPtr tool);
// A tool whose calls need a decision when `when` says so (or throws), on top
// of whatever the original requires. Its spec's approval_when is `when`.
//
// Example (an MCP server's refund tool, over $100 only):
//   auto refund = with_approval(registry.find("shop_refund"), [](const Json& args, const RunContext&) {
//     return args.at("amount_usd").get<double>() > 100;
//   });
ToolPtr with_approval(ToolPtr tool, ApprovalPredicate when);

// Which of a set of tools (an MCP server's, a plugin's) an agent gets, by
// name patterns in which '*' matches any run of characters.
struct ToolFilter {
  std::vector<std::string> include;  // empty: every tool
  std::vector<std::string> exclude;  // wins over include
};
std::vector<ToolPtr> filter_tools(const std::vector<ToolPtr>& tools, const ToolFilter& filter);
// Whether `name` matches one of `patterns` (as ToolFilter reads them).
bool matches_any(const std::vector<std::string>& patterns, std::string_view name);

}  // namespace agentkit
