#include <agentkit/tool_data.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <agentkit/errors.h>

namespace agentkit {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// RFC 6901: '~' and '/' in a key are escaped.
std::string pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// A function entry whose name no add_function() registered: the recorded
// spec, and calls that tell the model the function is missing (spec 002).
class SkeletonTool final : public Tool {
 public:
  explicit SkeletonTool(ToolSpec spec) : spec_(std::move(spec)) {}
  const ToolSpec& spec() const noexcept override { return spec_; }
  Json run(const Json&, RunContext&) const override {
    throw Error(ErrorCode::unimplemented, "No function attached to tool '" + spec_.name +
                                              "': it was loaded from data and no function of that name is registered");
  }

 private:
  ToolSpec spec_;
};

std::vector<ToolPtr> load_function(const Json& body, const std::string& path, const ToolCatalog& catalog) {
  const ToolDataReader r(body, path,
                         {"name", "description", "parameters", "side_effecting", "idempotent", "requires_approval"});
  const auto name = r.required<std::string>("name");
  if (name.empty()) r.fail("name", "must not be empty");
  if (ToolPtr live = catalog.function(name)) return {live};
  if (catalog.options().strict) {
    throw ToolDataError(r.path("name"), "no function tool named '" + name + "' is registered (ToolCatalog::add_function)",
                        ErrorCode::not_found);
  }
  ToolSpec spec;
  spec.name = name;
  spec.description = r.get_or<std::string>("description", {});
  spec.parameters = Schema{{"type", "object"}};
  if (r.has("parameters")) {
    if (!r.value("parameters").is_object()) r.fail("parameters", "must be a JSON Schema object, not " + ToolDataReader::shown(r.value("parameters")));
    spec.parameters = Schema(r.value("parameters"));
  }
  spec.effects.side_effecting = r.get_or<bool>("side_effecting", true);  // unknown: assume it acts
  spec.effects.idempotent = r.get_or<bool>("idempotent", false);
  spec.effects.requires_approval = r.get_or<bool>("requires_approval", false);
  return {std::make_shared<const SkeletonTool>(std::move(spec))};
}

}  // namespace

ToolDataError::ToolDataError(std::string path, std::string problem, ErrorCode code)
    : Error(code, path.empty() ? problem : path + ": " + problem), path_(std::move(path)), problem_(std::move(problem)) {}

// ------------------------------------------------------------------ reader

ToolDataReader::ToolDataReader(const Json& object, std::string path, std::vector<std::string> accepted)
    : object_(object), path_(std::move(path)) {
  if (!object.is_object()) fail_at(path_, "must be an object, not " + shown(object));
  std::sort(accepted.begin(), accepted.end());
  for (const auto& item : object.items()) {
    if (!std::binary_search(accepted.begin(), accepted.end(), item.key())) {
      fail_at(this->path(item.key()), "unknown key; accepted keys: " + joined(accepted));
    }
  }
}

std::string ToolDataReader::path(std::string_view key) const { return path_ + "/" + pointer_token(key); }

bool ToolDataReader::has(std::string_view key) const {
  auto it = object_.find(key);
  return it != object_.end() && !it->is_null();
}

const Json& ToolDataReader::value(std::string_view key) const {
  static const Json null;
  auto it = object_.find(key);
  return it == object_.end() ? null : *it;
}

void ToolDataReader::fail_at(const std::string& path, const std::string& problem) {
  throw ToolDataError(path, problem);
}

std::string expand_env(std::string_view text, const std::string& path) {
  std::string out;
  std::size_t at = 0;
  while (true) {
    const auto open = text.find("${", at);
    if (open == std::string_view::npos) break;
    const auto close = text.find('}', open);
    if (close == std::string_view::npos) break;
    const std::string name(text.substr(open + 2, close - open - 2));
    const char* value = std::getenv(name.c_str());
    if (!value || !*value) ToolDataReader::fail_at(path, "environment variable '" + name + "' is not set");
    out.append(text.substr(at, open - at)).append(value);
    at = close + 1;
  }
  return out.append(text.substr(at));
}

std::string ToolDataReader::shown(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() <= 40) return text;
  std::size_t end = 37;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // not inside a character
  text.resize(end);
  return text + "...";
}

template <>
std::optional<std::string> ToolDataReader::get<std::string>(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  const Json& v = value(key);
  if (!v.is_string()) fail(key, "must be a string, not " + shown(v));
  return v.get<std::string>();
}

template <>
std::optional<bool> ToolDataReader::get<bool>(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  const Json& v = value(key);
  if (!v.is_boolean()) fail(key, "must be true or false, not " + shown(v));
  return v.get<bool>();
}

template <>
std::optional<int> ToolDataReader::get<int>(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  const Json& v = value(key);
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 1'000'000'000) {
    fail(key, "must be an integer between 0 and 1000000000, not " + shown(v));
  }
  return static_cast<int>(v.get<std::int64_t>());
}

template <>
std::optional<double> ToolDataReader::get<double>(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  const Json& v = value(key);
  if (!v.is_number() || !(v.get<double>() >= 0)) fail(key, "must be a number that is not negative, not " + shown(v));
  return v.get<double>();
}

// Seconds, range-checked before the conversion (1e300 is refused, not cast).
template <>
std::optional<std::chrono::milliseconds> ToolDataReader::get<std::chrono::milliseconds>(std::string_view key) const {
  const auto seconds = get<double>(key);
  if (!seconds) return std::nullopt;
  const double ms = std::trunc(*seconds * 1000);
  if (!(ms < static_cast<double>(std::numeric_limits<std::int64_t>::max() / 2))) {
    fail(key, "must be a finite number of seconds, not " + shown(value(key)));
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

template <>
std::optional<std::vector<std::string>> ToolDataReader::get<std::vector<std::string>>(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  const Json& v = value(key);
  if (!v.is_array()) fail(key, "must be a list of strings, not " + shown(v));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) fail_at(path(key) + "/" + std::to_string(i), "must be a string, not " + shown(v[i]));
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

using StringPairs = std::vector<std::pair<std::string, std::string>>;

template <>
std::optional<StringPairs> ToolDataReader::get<StringPairs>(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  const Json& v = value(key);
  if (!v.is_object()) fail(key, "must be an object of names to strings, not " + shown(v));
  StringPairs out;
  for (const auto& item : v.items()) {
    if (!item.value().is_string()) {
      fail_at(path(key) + "/" + pointer_token(item.key()), "must be a string, not " + shown(item.value()));
    }
    out.emplace_back(item.key(), item.value().get<std::string>());
  }
  return out;
}

// ----------------------------------------------------------------- catalog

Json function_tool_entry(const Tool& tool) {
  const ToolSpec& spec = tool.spec();
  Json body = {{"name", spec.name},
               {"description", spec.description},
               {"side_effecting", spec.effects.side_effecting},
               {"idempotent", spec.effects.idempotent},
               {"requires_approval", spec.effects.requires_approval}};
  if (spec.parameters) body["parameters"] = Json(*spec.parameters);
  return body;
}

ToolCatalog::ToolCatalog(Options options) : options_(options) {
  add_kind({.name = "function", .load = load_function, .save = [](const Tool& tool, const ToolCatalog& catalog) {
              const ToolPtr live = catalog.function(tool.name());
              return live.get() == &tool ? std::optional<Json>(function_tool_entry(tool)) : std::nullopt;
            }});
}

ToolCatalog& ToolCatalog::add_kind(Kind kind) {
  if (kind.name.empty() || !kind.load) throw ToolDefinitionError("ToolCatalog: a kind needs a name and a loader");
  const std::string name = kind.name;
  if (!kinds_.emplace(name, std::move(kind)).second) {
    throw ToolDefinitionError("ToolCatalog: the kind '" + name + "' is already registered");
  }
  return *this;
}

bool ToolCatalog::has_kind(std::string_view name) const { return kinds_.find(name) != kinds_.end(); }

std::vector<std::string> ToolCatalog::kinds() const {
  std::vector<std::string> names;
  for (const auto& entry : kinds_) names.push_back(entry.first);
  return names;
}

ToolCatalog& ToolCatalog::add_function(ToolPtr tool) {
  if (!tool) throw ToolDefinitionError("ToolCatalog: add_function() needs a tool");
  const std::string name = tool->name();
  if (!functions_.emplace(name, std::move(tool)).second) {
    throw ToolDefinitionError("ToolCatalog: a function tool named '" + name + "' is already registered");
  }
  return *this;
}

ToolPtr ToolCatalog::function(std::string_view name) const {
  auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : it->second;
}

std::vector<ToolPtr> ToolCatalog::load(const Json& entry, const std::string& path) const {
  if (!entry.is_object() || entry.size() != 1) {
    ToolDataReader::fail_at(path, "a tool entry is an object with exactly one key, its kind (one of " +
                                      joined(kinds()) + "), not " + ToolDataReader::shown(entry));
  }
  const std::string& name = entry.begin().key();
  auto kind = kinds_.find(name);
  if (kind == kinds_.end()) {
    ToolDataReader::fail_at(path + "/" + pointer_token(name), "unknown tool kind; known kinds: " + joined(kinds()));
  }
  std::vector<ToolPtr> tools = kind->second.load(entry.begin().value(), path + "/" + pointer_token(name), *this);
  const std::lock_guard lock(mutex_);
  std::erase_if(origins_, [](const auto& item) { return item.second.tool.expired(); });
  for (const auto& tool : tools) {
    if (tool) origins_.insert_or_assign(tool.get(), Origin{tool, entry});
  }
  return tools;
}

std::vector<ToolPtr> ToolCatalog::load_all(const Json& entries, const std::string& path) const {
  if (!entries.is_array()) ToolDataReader::fail_at(path, "must be a list of tool entries, not " + ToolDataReader::shown(entries));
  std::vector<ToolPtr> tools;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    std::vector<ToolPtr> some = load(entries[i], path + "/" + std::to_string(i));
    tools.insert(tools.end(), some.begin(), some.end());
  }
  return tools;
}

Json ToolCatalog::save(const Tool& tool) const {
  // The outer tool's own kind first: a wrapper (an approval, a new name) is
  // part of the tool, so an inner layer's entry alone would lose it.
  for (const auto& [name, kind] : kinds_) {
    if (!kind.save) continue;
    if (auto body = kind.save(tool, *this)) return Json{{name, std::move(*body)}};
  }
  {
    const std::lock_guard lock(mutex_);
    for (const Tool* layer = &tool; layer; layer = layer->wrapped()) {
      auto it = origins_.find(layer);
      if (it != origins_.end() && !it->second.tool.expired()) return it->second.entry;
    }
  }
  throw ToolDataError("", "tool '" + tool.name() +
                              "' has no data description: register it with ToolCatalog::add_function, or load it "
                              "from an entry",
                      ErrorCode::unimplemented);
}

Json ToolCatalog::save_all(const std::vector<ToolPtr>& tools) const {
  Json entries = Json::array();
  for (const auto& tool : tools) {
    if (!tool) continue;
    Json entry = save(*tool);
    if (std::find(entries.begin(), entries.end(), entry) == entries.end()) entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace agentkit
