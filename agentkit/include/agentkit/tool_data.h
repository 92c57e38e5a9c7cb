#pragma once
// Tools as data (spec 002's Serialization): every kind of tool has a JSON
// description, one entry per tool (or per group of tools, for an MCP
// server), shaped {"<kind>": {...}}:
//
//   {"function": {"name": "lookup_order"}}                     // a registered C++ tool, by name
//   {"rest": {"name": "refund_order", "url": "...", ...}}      // <agentkit/providers/tool_data.h>
//   {"mcp": {"name": "shop", "command": "node", ...}}          // <agentkit/providers/tool_data.h>
//   {"agent": {"agent": "researcher", "name": "research", ...}} // <agentkit/agent_data.h>
//
// A ToolCatalog turns entries into tools (load) and tools into entries
// (save). It knows the `function` kind itself; each component registers the
// kinds it can build (core: workspace, command, see add_workspace_kinds();
// providers: rest, mcp; cognition: agent), so core
// depends on none of them. A kind is a name, a loader and a saver; plugging
// in another one (say "workspace") is one add_kind() call.
//
// Function tools (C++ callables) cannot be written as JSON: their entry
// names them and records their spec, and loading rebinds the name to the
// tool registered with add_function(). A name the catalog does not know
// loads as a skeleton with the recorded spec whose every call fails with an
// error the model sees ("no function attached ..."), as spec 002's replay
// wants; Options::strict makes it a ToolDataError instead.
//
// Every problem in a description is a ToolDataError naming the JSON path of
// the value at fault ("/tools/2/rest/params/0/type: must be one of string,
// integer, ..."); unknown keys are refused, so a typo never passes silently.
//
// Example:
//   agentkit::ToolCatalog catalog;
//   agentkit::providers::register_provider_kinds(catalog);  // rest, mcp
//   catalog.add_function(lookup_order);                      // a function tool
//   std::vector<agentkit::ToolPtr> tools = catalog.load_all(Json::parse(R"([
//       {"function": {"name": "lookup_order"}},
//       {"rest": {"name": "get_weather", "url": "https://api.example.com/weather",
//                 "description": "Current weather for a city, as JSON from the weather API.",
//                 "side_effecting": false, "params": [{"name": "city", "description": "City name"}]}}
//     ])"), "/tools");
//   Json saved = catalog.save_all(tools);                    // the same entries back
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <agentkit/error.h>
#include <agentkit/json.h>
#include <agentkit/tool.h>

namespace agentkit {

// A tool description that cannot be used, or a tool that has no description.
// what() reads "<path>: <problem>" ("<problem>" when the path is empty).
// Code invalid_argument; not_found for an unknown function name under
// Options::strict; unimplemented for a tool that cannot be saved.
class ToolDataError : public Error {
 public:
  ToolDataError(std::string path, std::string problem, ErrorCode code = ErrorCode::invalid_argument);
  // A JSON pointer into the loaded document ("/tools/2/rest/params/0/type").
  const std::string& path() const noexcept { return path_; }
  const std::string& problem() const noexcept { return problem_; }

 private:
  std::string path_;
  std::string problem_;
};

// One JSON object of a description, read key by key, for kind loaders.
// Construction refuses a value that is not an object and any key outside
// `accepted`; each getter checks its value's type and throws ToolDataError
// at "<path>/<key>". A null value counts as absent.
//
// Getters exist for std::string, bool, int (0 .. 1e9), double (not
// negative), std::chrono::milliseconds (written as seconds, fractions
// allowed), std::vector<std::string> and std::vector<std::pair<std::string,
// std::string>> (an object of strings, in key order).
//
// Example:
//   ToolDataReader r(body, path, {"name", "timeout_s"});
//   std::string name = r.required<std::string>("name");
//   auto timeout = r.get_or<std::chrono::milliseconds>("timeout_s", std::chrono::seconds(30));
class ToolDataReader {
 public:
  ToolDataReader(const Json& object, std::string path, std::vector<std::string> accepted);

  const std::string& path() const noexcept { return path_; }
  // The path of one key: "<path>/<key>".
  std::string path(std::string_view key) const;
  bool has(std::string_view key) const;
  // The raw value; null when absent.
  const Json& value(std::string_view key) const;

  template <class T>
  std::optional<T> get(std::string_view key) const;
  template <class T>
  T required(std::string_view key) const {
    if (!has(key)) fail_at(path_, "missing required key '" + std::string(key) + "'");
    return *get<T>(key);
  }
  template <class T>
  T get_or(std::string_view key, T fallback) const {
    return get<T>(key).value_or(std::move(fallback));
  }

  [[noreturn]] void fail(std::string_view key, const std::string& problem) const { fail_at(path(key), problem); }
  [[noreturn]] static void fail_at(const std::string& path, const std::string& problem);
  // A value for an error message: one line of at most 40 characters, any
  // ill-formed UTF-8 replaced (a value read from a file may hold anything).
  static std::string shown(const Json& value);

 private:
  const Json& object_;
  std::string path_;
};

template <>
std::optional<std::string> ToolDataReader::get<std::string>(std::string_view key) const;
template <>
std::optional<bool> ToolDataReader::get<bool>(std::string_view key) const;
template <>
std::optional<int> ToolDataReader::get<int>(std::string_view key) const;
template <>
std::optional<double> ToolDataReader::get<double>(std::string_view key) const;
template <>
std::optional<std::chrono::milliseconds> ToolDataReader::get<std::chrono::milliseconds>(std::string_view key) const;
template <>
std::optional<std::vector<std::string>> ToolDataReader::get<std::vector<std::string>>(std::string_view key) const;
template <>
std::optional<std::vector<std::pair<std::string, std::string>>>
ToolDataReader::get<std::vector<std::pair<std::string, std::string>>>(std::string_view key) const;

// Kinds, registered function tools, and what a load produced.
// Thread-safe once its kinds and functions are added.
class ToolCatalog {
 public:
  struct Options {
    // An unregistered function name is a ToolDataError (code not_found)
    // rather than a skeleton tool.
    bool strict = false;
  };

  // One kind of entry. `load` reads the body of {"<name>": body}, found at
  // `path`, into tools (throwing ToolDataError); `save` returns the body for
  // a tool of this kind, or nullopt when the tool is not one. A kind without
  // `save` is saved from what its loads produced (see save()).
  struct Kind {
    std::string name;
    std::function<std::vector<ToolPtr>(const Json& body, const std::string& path, const ToolCatalog& catalog)> load;
    std::function<std::optional<Json>(const Tool& tool, const ToolCatalog& catalog)> save;
  };

  ToolCatalog() : ToolCatalog(Options{}) {}
  explicit ToolCatalog(Options options);
  ToolCatalog(const ToolCatalog&) = delete;
  ToolCatalog& operator=(const ToolCatalog&) = delete;

  const Options& options() const noexcept { return options_; }

  // Adds a kind. A taken name, or a kind without a loader, throws
  // ToolDefinitionError.
  ToolCatalog& add_kind(Kind kind);
  bool has_kind(std::string_view name) const;
  // The kind names, sorted ("function" among them).
  std::vector<std::string> kinds() const;

  // Registers a live function tool under its name; a taken name throws
  // ToolDefinitionError. Loading {"function": {"name": ...}} returns it.
  ToolCatalog& add_function(ToolPtr tool);
  // The registered tool called `name`, or nullptr.
  ToolPtr function(std::string_view name) const;

  // The tools of one entry {"<kind>": body}; `path` is where the entry sits
  // in its document ("/tools/2"), for error paths. Throws ToolDataError.
  std::vector<ToolPtr> load(const Json& entry, const std::string& path = "") const;
  // Every entry of an array, in order.
  std::vector<ToolPtr> load_all(const Json& entries, const std::string& path = "") const;

  // The entry for `tool`: its kind's saver says (looking through wrappers
  // such as with_approval() and renamed()), else the entry a load of this
  // catalog produced it from. A tool of an MCP server saves as the whole
  // server's entry: one entry stands for every tool it yields. Throws
  // ToolDataError (code unimplemented) for a tool with no description: a
  // C++ tool never registered with add_function(), a REST tool whose
  // approval rule is a C++ function.
  Json save(const Tool& tool) const;
  // Entries for `tools`, in order, each entry once: the tools of one MCP
  // server give one entry, so load_all(save_all(tools)) yields them again.
  Json save_all(const std::vector<ToolPtr>& tools) const;

 private:
  struct Origin {
    std::weak_ptr<const Tool> tool;
    Json entry;
  };

  Options options_;
  std::map<std::string, Kind, std::less<>> kinds_;
  std::map<std::string, ToolPtr, std::less<>> functions_;
  mutable std::mutex mutex_;
  mutable std::map<const Tool*, Origin> origins_;  // guarded by mutex_
};

// `text` with each ${NAME} replaced by the environment variable's value. An
// unset or empty variable is a ToolDataError at `path` that names it (never a
// value). Example: expand_env("Bearer ${SHOP_TOKEN}", "/tools/0/mcp/headers/Authorization").
std::string expand_env(std::string_view text, const std::string& path);

// The entry body of a function tool: {"name", "description", "parameters",
// "side_effecting", "idempotent", "requires_approval"} (parameters omitted
// for a tool the model is never offered).
Json function_tool_entry(const Tool& tool);

// The kinds of <agentkit/workspace.h> and <agentkit/command.h>:
//   {"workspace": {"root": "/srv/project", ...}}   // WorkspaceOptions::to_json(): its file tools
//   {"command": {"root": "/srv/project", "programs": ["git", "make"], ...}}
//                                                  // CommandOptions::to_json() plus the workspace root
// A tool workspace_tools() or command_tool() built saves as its entry too.
// A bad option is a ToolDataError at its key's path; a root that is not a
// directory, at the entry's path.
ToolCatalog& add_workspace_kinds(ToolCatalog& catalog);

}  // namespace agentkit
