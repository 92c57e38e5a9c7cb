#include "config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <agentkit/detail/enum_table.h>
#include <agentkit/egress.h>
#include <agentkit/providers/models.h>
#include <agentkit/providers/rest_tool.h>

namespace agentkit::cli {
namespace {

namespace fs = std::filesystem;
using providers::ParamIn;
using providers::ParamType;

std::string location(const fs::path& file, int line, int column) {
  std::string out = file.string();
  if (line > 0) out += ":" + std::to_string(line);
  if (line > 0 && column > 0) out += ":" + std::to_string(column);
  return out;
}

int line_of(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.line >= 0 ? mark.line + 1 : 0;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// A scalar for an error message: short, one line.
std::string shown(const YAML::Node& node) {
  if (!node.IsScalar()) return node.IsSequence() ? "a list" : "a mapping";
  std::string text = node.Scalar();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  std::replace(text.begin(), text.end(), '\n', ' ');
  return "'" + text + "'";
}

// One YAML mapping of a definition, read field by field. Construction rejects
// a value that is not a mapping, fields outside `accepted` and repeated
// fields; the getters check each value's type. `name` says where the mapping
// is ("agent", "limits", "tools[2].rest").
class Section {
 public:
  // `fallback_line` stands in for a mapping without a position (an empty one
  // written as a null value).
  Section(const fs::path& file, const YAML::Node& node, std::string name, std::vector<std::string> accepted,
          int fallback_line = 0)
      : file_(file), node_(node), name_(std::move(name)), fallback_line_(fallback_line) {
    if (!node.IsMap()) throw ConfigError(file_, line_of(node), name_ + " must be a mapping, not " + shown(node));
    std::sort(accepted.begin(), accepted.end());
    for (const auto& entry : node) {
      const YAML::Node& key = entry.first;
      const std::string field = key.IsScalar() ? key.Scalar() : std::string();
      if (!std::binary_search(accepted.begin(), accepted.end(), field)) {
        throw ConfigError(file_, line_of(key),
                          "unknown field " + (field.empty() ? shown(key) : "'" + field + "'") + " in " + name_ +
                              "; accepted fields: " + join(accepted));
      }
      if (!fields_.emplace(field, Field{entry.second, line_of(key)}).second) {
        throw ConfigError(file_, line_of(key), "field '" + field + "' appears twice in " + name_);
      }
    }
  }

  const std::string& name() const noexcept { return name_; }
  const fs::path& file() const noexcept { return file_; }
  int line() const { return line_of(node_) ? line_of(node_) : fallback_line_; }
  int line(const std::string& key) const {
    auto it = fields_.find(key);
    return it == fields_.end() ? line() : it->second.line;
  }
  // Present with a non-null value.
  bool has(const std::string& key) const {
    auto it = fields_.find(key);
    return it != fields_.end() && !it->second.value.IsNull();
  }
  YAML::Node node(const std::string& key) const { return has(key) ? fields_.at(key).value : YAML::Node(); }

  template <class T>
  std::optional<T> get(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    return convert<T>(key, fields_.at(key).value);
  }
  template <class T>
  T required(const std::string& key) const {
    if (!has(key)) fail_at(line(), "missing required field '" + key + "' in " + name_);
    return *get<T>(key);
  }
  template <class T>
  T get_or(const std::string& key, T fallback) const {
    return get<T>(key).value_or(std::move(fallback));
  }

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    fail_at(line(key), "'" + key + "' in " + name_ + " " + problem);
  }
  [[noreturn]] void fail_at(int line, const std::string& problem) const { throw ConfigError(file_, line, problem); }

 private:
  struct Field {
    YAML::Node value;
    int line = 0;
  };

  template <class T>
  T convert(const std::string& key, const YAML::Node& value) const;

  const fs::path& file_;
  YAML::Node node_;
  std::string name_;
  int fallback_line_;
  std::map<std::string, Field> fields_;
};

template <>
std::string Section::convert<std::string>(const std::string& key, const YAML::Node& value) const {
  if (!value.IsScalar()) fail(key, "must be a string, not " + shown(value));
  return value.Scalar();
}

template <>
std::int64_t Section::convert<std::int64_t>(const std::string& key, const YAML::Node& value) const {
  std::int64_t out = 0;
  if (!value.IsScalar() || !YAML::convert<std::int64_t>::decode(value, out)) {
    fail(key, "must be an integer, not " + shown(value));
  }
  return out;
}

template <>
int Section::convert<int>(const std::string& key, const YAML::Node& value) const {
  const auto wide = convert<std::int64_t>(key, value);
  if (wide < 0 || wide > 1'000'000'000) fail(key, "must be between 0 and 1000000000, not " + shown(value));
  return static_cast<int>(wide);
}

template <>
double Section::convert<double>(const std::string& key, const YAML::Node& value) const {
  double out = 0;
  if (!value.IsScalar() || !YAML::convert<double>::decode(value, out)) {
    fail(key, "must be a number, not " + shown(value));
  }
  if (!(out >= 0)) fail(key, "must not be negative, not " + shown(value));
  return out;
}

// A duration written in seconds (fractions allowed): a number that is not
// negative and whose milliseconds fit, range-checked before the conversion
// (`.inf` and 1e300 are refused, not cast).
template <>
std::chrono::milliseconds Section::convert<std::chrono::milliseconds>(const std::string& key,
                                                                      const YAML::Node& value) const {
  const double s = convert<double>(key, value);
  const auto ms = exact_integer<std::int64_t>(std::trunc(s * 1000));
  if (!ms) fail(key, "must be a finite number of seconds, not " + shown(value));
  return std::chrono::milliseconds(*ms);
}

template <>
bool Section::convert<bool>(const std::string& key, const YAML::Node& value) const {
  bool out = false;
  if (!value.IsScalar() || !YAML::convert<bool>::decode(value, out)) {
    fail(key, "must be true or false, not " + shown(value));
  }
  return out;
}

template <>
std::vector<std::string> Section::convert<std::vector<std::string>>(const std::string& key,
                                                                    const YAML::Node& value) const {
  if (!value.IsSequence()) fail(key, "must be a list of strings, not " + shown(value));
  std::vector<std::string> out;
  for (const auto& item : value) {
    if (!item.IsScalar()) fail_at(line_of(item), "'" + key + "' in " + name_ + " must hold strings only");
    out.push_back(item.Scalar());
  }
  return out;
}

using StringPairs = std::vector<std::pair<std::string, std::string>>;

template <>
StringPairs Section::convert<StringPairs>(const std::string& key, const YAML::Node& value) const {
  if (!value.IsMap()) fail(key, "must be a mapping of names to strings, not " + shown(value));
  StringPairs out;
  for (const auto& entry : value) {
    if (!entry.first.IsScalar() || !entry.second.IsScalar()) {
      fail_at(line_of(entry.first), "'" + key + "' in " + name_ + " must map names to strings");
    }
    out.emplace_back(entry.first.Scalar(), entry.second.Scalar());
  }
  return out;
}

// A YAML value as JSON: quoted scalars stay strings; plain ones become null,
// booleans or numbers when they read as such.
Json to_json(const YAML::Node& node) {
  if (node.IsNull()) return nullptr;
  if (node.IsSequence()) {
    Json out = Json::array();
    for (const auto& item : node) out.push_back(to_json(item));
    return out;
  }
  if (node.IsMap()) {
    Json out = Json::object();
    for (const auto& entry : node) out[entry.first.Scalar()] = to_json(entry.second);
    return out;
  }
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted
  std::int64_t integer = 0;
  double number = 0;
  if (YAML::convert<std::int64_t>::decode(node, integer)) return integer;
  if (YAML::convert<double>::decode(node, number)) return number;
  if (text == "true" || text == "false") return text == "true";
  return text;
}

template <class E, std::size_t N>
E one_of(const Section& section, const std::string& key, const EnumValue<E> (&choices)[N], E fallback) {
  const auto text = section.get<std::string>(key);
  if (!text) return fallback;
  if (auto value = detail::enum_parse(choices, *text)) return *value;
  std::vector<std::string> names;
  for (const auto& choice : choices) names.emplace_back(choice.text);
  section.fail(key, "must be one of " + join(names) + ", not '" + *text + "'");
}

constexpr EnumValue<ParamType> kParamTypes[] = {
    {ParamType::string, "string"},   {ParamType::integer, "integer"}, {ParamType::number, "number"},
    {ParamType::boolean, "boolean"}, {ParamType::array, "array"},     {ParamType::object, "object"}};

// A URL must be absolute http(s), without credentials (keys come from the
// environment, never from the file).
void check_url(const Section& section, const std::string& key, const std::string& url) {
  try {
    parse_url(url);
  } catch (const UrlError& e) {
    section.fail(key, std::string("is not a usable URL: ") + e.what());
  }
}

fs::path relative_to(const fs::path& file, const std::string& path) {
  return fs::absolute(file.parent_path() / path).lexically_normal();
}

class Loader {
 public:
  AgentConfig load(const fs::path& path) {
    const fs::path file = fs::absolute(path).lexically_normal();
    stack_.push_back(file);
    AgentConfig config = read(file, parse(file));
    stack_.pop_back();
    return config;
  }

 private:
  static YAML::Node parse(const fs::path& file) {
    std::ifstream in(file);
    if (!in) throw ConfigError(file, 0, "cannot read the file");
    std::stringstream text;
    text << in.rdbuf();
    try {
      YAML::Node root = YAML::Load(text.str());
      if (!root.IsDefined() || root.IsNull()) throw ConfigError(file, 0, "the file is empty; see `agentkit --help`");
      return root;
    } catch (const YAML::ParserException& e) {
      throw ConfigError(file, e.mark.line + 1, e.mark.column + 1, e.msg);
    }
  }

  AgentConfig read(const fs::path& file, const YAML::Node& root) {
    const Section top(file, root, "agent",
                      {"name", "description", "model", "base_url", "api_key_env", "prompt", "prompt_file", "autonomy",
                       "limits", "budget", "pricing", "session", "egress", "tools", "model_settings", "settings"});
    AgentConfig config;
    config.file = file;
    config.name = top.required<std::string>("name");
    if (config.name.empty()) top.fail("name", "must not be empty");
    config.description = top.get_or<std::string>("description", {});
    read_model(top, config);
    read_prompt(top, config);
    config.autonomy = one_of<Autonomy>(
        top, "autonomy", {{Autonomy::manual, "manual"}, {Autonomy::gated, "gated"}, {Autonomy::automatic, "automatic"}},
        Autonomy::automatic);
    if (top.has("limits"))
      read_limits(Section(file, top.node("limits"), "limits", {"max_iterations", "max_repairs"}), config);
    if (top.has("pricing")) {
      read_pricing(Section(file, top.node("pricing"), "pricing", {"input_usd_per_mtok", "output_usd_per_mtok"}),
                   config);
    }
    if (top.has("budget")) {
      const Section budget(file, top.node("budget"), "budget",
                           {"steps", "tool_calls", "tokens", "cost_usd", "wall_time_s"});
      read_budget(budget, config);
      if (config.budget.cost_usd && !config.pricing) {
        budget.fail("cost_usd", "needs 'pricing: {input_usd_per_mtok, output_usd_per_mtok}', the model's prices");
      }
    }
    if (top.has("model_settings") && top.has("settings")) {
      top.fail("settings", "repeats 'model_settings' (the same field under another name); keep one");
    }
    for (const char* key : {"model_settings", "settings"}) {
      if (top.has(key)) read_model_settings(top, key, config);
    }
    config.session = top.get_or<std::string>("session", {});
    config.egress = top.get_or<std::vector<std::string>>("egress", {});
    for (const auto& rule : config.egress) {
      try {
        EgressRule::parse(rule);
      } catch (const agentkit::Error& e) {
        top.fail("egress", "has a bad rule '" + rule + "': " + e.what());
      }
    }
    if (top.has("tools")) read_tools(file, top.node("tools"), config);
    if (stack_.size() > 1) note_ignored_fields(top, config);
    return config;
  }

  static void read_model(const Section& top, AgentConfig& config) {
    config.model = top.required<std::string>("model");
    config.model_line = top.line("model");
    if (auto base_url = top.get<std::string>("base_url")) {
      check_url(top, "base_url", *base_url);
      if (config.model.find('@') != std::string::npos) {
        top.fail("base_url", "conflicts with the base URL already in the model ('" + config.model + "')");
      }
      config.model += "@" + *base_url;
    }
    try {
      providers::resolve_model(config.model, {});
    } catch (const agentkit::Error& e) {
      top.fail("model", std::string("is not usable: ") + e.what());
    }
    config.api_key_env = top.get_or<std::string>("api_key_env", {});
    config.api_key_line = top.line("api_key_env");
  }

  static void read_prompt(const Section& top, AgentConfig& config) {
    if (top.has("prompt") == top.has("prompt_file")) {
      top.fail_at(top.line(), "agent needs exactly one of 'prompt' and 'prompt_file'");
    }
    if (top.has("prompt")) {
      config.prompt = top.get<std::string>("prompt").value();
      return;
    }
    const fs::path path = relative_to(config.file, top.get<std::string>("prompt_file").value());
    std::ifstream in(path);
    if (!in) top.fail("prompt_file", "names a file that cannot be read: " + path.string());
    std::stringstream text;
    text << in.rdbuf();
    config.prompt = text.str();
  }

  // One checker for YAML and C++ alike (ModelSettings::from_json); its
  // error names the key, found here for its line.
  static void read_model_settings(const Section& top, const std::string& key, AgentConfig& config) {
    const YAML::Node node = top.node(key);
    if (!node.IsMap()) top.fail(key, "must be a mapping, not " + shown(node));
    config.model_settings_line = top.line(key);
    try {
      config.model_settings = ModelSettings::from_json(to_json(node));
    } catch (const ModelSettingsError& e) {
      const std::string name = e.setting().substr(0, e.setting().find_first_of(".["));
      int line = top.line(key);
      for (const auto& entry : node) {
        if (entry.first.IsScalar() && entry.first.Scalar() == name) line = line_of(entry.first);
      }
      top.fail_at(line, std::string(e.what()) + " (in " + key + ")");
    }
  }

  static void read_limits(const Section& limits, AgentConfig& config) {
    config.max_iterations = limits.get_or<int>("max_iterations", config.max_iterations);
    if (config.max_iterations < 1) limits.fail("max_iterations", "must be at least 1");
    config.max_repairs = limits.get_or<int>("max_repairs", config.max_repairs);
  }

  static void read_budget(const Section& budget, AgentConfig& config) {
    auto positive = [&](const std::string& key) -> std::optional<std::int64_t> {
      auto value = budget.get<std::int64_t>(key);
      if (value && *value < 1) budget.fail(key, "must be at least 1");
      return value;
    };
    config.budget.model_steps = positive("steps");
    config.budget.tool_calls = positive("tool_calls");
    config.budget.tokens = positive("tokens");
    config.budget.cost_usd = budget.get<double>("cost_usd");
    config.budget.wall_time = budget.get<std::chrono::milliseconds>("wall_time_s");
  }

  static void read_pricing(const Section& pricing, AgentConfig& config) {
    config.pricing = Pricing{.input_usd_per_mtok = pricing.required<double>("input_usd_per_mtok"),
                             .output_usd_per_mtok = pricing.required<double>("output_usd_per_mtok")};
  }

  void note_ignored_fields(const Section& top, AgentConfig& config) const {
    for (const std::string key : {"autonomy", "budget", "session", "egress"}) {
      if (top.has(key)) {
        config.warnings.push_back(location(config.file, top.line(key), 0) + ": warning: '" + key +
                                  "' has no effect in a sub-agent; the calling run's applies");
      }
    }
  }

  // ---------------------------------------------------------------- tools

  // Tool names this definition declares, with their lines, to report a clash.
  using Names = std::map<std::string, int>;

  static void claim(const fs::path& file, int line, Names& names, const std::string& name) {
    auto [it, fresh] = names.emplace(name, line);
    if (!fresh) {
      throw ConfigError(file, line, "tool name '" + name + "' is already used at line " + std::to_string(it->second));
    }
  }
  static void claim(const Section& section, Names& names, const std::string& name) {
    claim(section.file(), section.line(), names, name);
  }

  void read_tools(const fs::path& file, const YAML::Node& tools, AgentConfig& config) {
    if (!tools.IsSequence()) throw ConfigError(file, line_of(tools), "'tools' in agent must be a list");
    Names names;
    std::vector<fs::path> skill_dirs;
    int skills_line = 0;
    std::size_t index = 0;
    for (const auto& item : tools) {
      const std::string where = "tools[" + std::to_string(index++) + "]";
      const Section entry(file, item, where, {"rest", "mcp", "memory", "skills", "agent"});
      if (!item.IsMap() || item.size() != 1) {
        entry.fail_at(entry.line(), where + " must have exactly one of: agent, mcp, memory, rest, skills");
      }
      const std::string kind = item.begin()->first.Scalar();
      // `- memory:` (no value) is an empty mapping.
      const YAML::Node body = item.begin()->second.IsNull() ? YAML::Node(YAML::NodeType::Map) : item.begin()->second;
      const std::string name = where + "." + kind;
      const int line = entry.line();
      if (kind == "rest") {
        read_rest(Section(file, body, name,
                          {"name", "description", "method", "url", "side_effecting", "idempotent", "requires_approval",
                           "approve_if", "tags", "params", "headers", "timeout_s", "retries", "max_redirects"},
                          line),
                  config, names);
      } else if (kind == "mcp") {
        read_mcp(Section(file, body, name,
                         {"name", "command", "args", "env", "inherit_env", "cwd", "url", "headers", "timeout_s", "include",
                          "exclude", "requires_approval", "approve_if"},
                         line),
                 config);
      } else if (kind == "memory") {
        const Section memory(file, body, name, {"dir"}, line);
        if (config.memory) memory.fail_at(entry.line(), "only one memory tool is allowed");
        claim(entry, names, "memory");
        config.memory = MemoryConfig{};
        config.memory->line = entry.line();
        if (auto dir = memory.get<std::string>("dir")) config.memory->dir = relative_to(file, *dir);
      } else if (kind == "skills") {
        const Section skills(file, body, name, {"dir"}, line);
        skill_dirs.push_back(relative_to(file, skills.required<std::string>("dir")));
        if (!skills_line) skills_line = entry.line();
      } else {
        read_sub_agent(Section(file, body, name, {"file", "name", "description", "side_effecting"}, line), config,
                       names);
      }
    }
    if (!skill_dirs.empty()) {
      claim(file, skills_line, names, "load_skill");
      try {
        config.skills = std::make_shared<Skills>(skill_dirs, spdlog::default_logger());
      } catch (const SkillError& e) {
        if (e.file().empty()) throw ConfigError(file, skills_line, e.what());
        // SkillError already reads "<file>:<line>: <problem>".
        std::string problem = e.what();
        const std::string prefix = location(e.file(), e.line(), 0) + ": ";
        if (problem.rfind(prefix, 0) == 0) problem.erase(0, prefix.size());
        throw ConfigError(e.file(), e.line(), problem);
      }
    }
  }

  static void read_rest(const Section& rest, AgentConfig& config, Names& names) {
    providers::RestToolDefinition def;
    def.name = rest.required<std::string>("name");
    claim(rest, names, def.name);
    def.description = rest.required<std::string>("description");
    def.method = rest.get_or<std::string>("method", "GET");
    def.url = rest.required<std::string>("url");
    if (!rest.has("side_effecting")) {
      rest.fail_at(rest.line(), "missing required field 'side_effecting' in " + rest.name() +
                                    " (true if the call changes anything; a GET is not assumed read-only)");
    }
    def.side_effecting = rest.get<bool>("side_effecting");
    def.idempotent = rest.get_or<bool>("idempotent", false);
    def.requires_approval = rest.get_or<bool>("requires_approval", false);
    if (rest.has("approve_if")) {
      const Condition rule = read_condition(rest, "approve_if", rest.node("approve_if"));
      def.approval_when = rule.approval_rule();
    }
    def.tags = rest.get_or<std::vector<std::string>>("tags", {});
    def.headers = rest.get_or<StringPairs>("headers", {});
    def.timeout = rest.get_or<std::chrono::milliseconds>("timeout_s", def.timeout);
    def.retries = rest.get_or<int>("retries", 0);
    def.max_redirects = rest.get_or<int>("max_redirects", def.max_redirects);
    if (rest.has("params")) {
      const YAML::Node params = rest.node("params");
      if (!params.IsSequence()) rest.fail("params", "must be a list");
      std::size_t index = 0;
      for (const auto& item : params) {
        def.params.push_back(
            read_param(Section(rest.file(), item, rest.name() + ".params[" + std::to_string(index++) + "]",
                               {"name", "in", "description", "type", "items", "required", "default", "enum"}),
                       def));
      }
    }
    try {
      config.rest_tools.push_back(std::make_shared<const providers::RestTool>(std::move(def)));
    } catch (const std::exception& e) {
      rest.fail_at(rest.line(), rest.name() + ": " + e.what());
    }
  }

  static providers::RestParam read_param(const Section& p, const providers::RestToolDefinition& def) {
    providers::RestParam param;
    param.name = p.required<std::string>("name");
    param.description = p.required<std::string>("description");
    const bool in_url = def.url.find("{" + param.name + "}") != std::string::npos;
    const bool bodyless = def.method == "GET" || def.method == "HEAD" || def.method == "DELETE";
    param.in = one_of<ParamIn>(p, "in", {{ParamIn::path, "path"}, {ParamIn::query, "query"}, {ParamIn::body, "body"}},
                               in_url     ? ParamIn::path
                               : bodyless ? ParamIn::query
                                          : ParamIn::body);
    param.options.type = one_of<ParamType>(p, "type", kParamTypes, ParamType::string);
    param.options.items = one_of<ParamType>(p, "items", kParamTypes, ParamType::string);
    param.options.required = p.get_or<bool>("required", true);
    if (p.has("default")) param.options.default_value = to_json(p.node("default"));
    if (p.has("enum")) {
      const Json allowed = to_json(p.node("enum"));
      if (!allowed.is_array()) p.fail("enum", "must be a list of values");
      param.options.allowed.assign(allowed.begin(), allowed.end());
    }
    return param;
  }

  static void read_mcp(const Section& mcp, AgentConfig& config) {
    McpServerConfig server;
    server.line = mcp.line();
    server.name = mcp.required<std::string>("name");
    if (mcp.has("command") == mcp.has("url")) {
      mcp.fail_at(mcp.line(),
                  mcp.name() + " needs exactly one of 'command' (a stdio server) and 'url' (Streamable HTTP)");
    }
    if (mcp.has("command")) {
      if (mcp.has("headers")) mcp.fail("headers", "is for an HTTP server ('url'), not a stdio one");
      providers::McpStdioServer stdio;
      stdio.command = mcp.get<std::string>("command").value();
      stdio.args = mcp.get_or<std::vector<std::string>>("args", {});
      stdio.env = mcp.get_or<StringPairs>("env", {});
      stdio.inherit_env = mcp.get_or<std::vector<std::string>>("inherit_env", {});
      // The server starts in the file's directory unless `cwd` names another,
      // so relative paths in `command` and `args` are relative to the file
      // whatever directory agentkit runs from.
      stdio.working_directory = relative_to(mcp.file(), mcp.get_or<std::string>("cwd", ".")).string();
      server.stdio = std::move(stdio);
    } else {
      for (const std::string key : {"args", "env", "inherit_env", "cwd"}) {
        if (mcp.has(key)) mcp.fail(key, "is for a stdio server ('command'), not an HTTP one");
      }
      providers::McpHttpServer http;
      http.url = mcp.get<std::string>("url").value();
      check_url(mcp, "url", http.url);
      http.headers = mcp.get_or<StringPairs>("headers", {});
      server.http = std::move(http);
    }
    server.timeout = mcp.get_or<std::chrono::milliseconds>("timeout_s", server.timeout);
    server.filter.include = mcp.get_or<std::vector<std::string>>("include", {});
    server.filter.exclude = mcp.get_or<std::vector<std::string>>("exclude", {});
    if (mcp.has("requires_approval")) {
      const YAML::Node value = mcp.node("requires_approval");
      if (value.IsScalar()) {
        if (mcp.get<bool>("requires_approval").value()) server.requires_approval = {"*"};
      } else {
        server.requires_approval = mcp.get<std::vector<std::string>>("requires_approval").value();
      }
    }
    if (mcp.has("approve_if")) {
      const YAML::Node rules = mcp.node("approve_if");
      if (!rules.IsMap()) mcp.fail("approve_if", "must map tool names (or patterns) to rules, not " + shown(rules));
      for (const auto& entry : rules) {
        const std::string pattern = entry.first.Scalar();
        server.approve_if.emplace_back(pattern, read_condition(mcp, "approve_if." + pattern, entry.second));
      }
    }
    config.mcp.push_back(std::move(server));
  }

  // An approval rule, parsed now: a syntax error is reported at its line,
  // with the column inside the rule.
  static Condition read_condition(const Section& section, const std::string& key, const YAML::Node& value) {
    if (!value.IsScalar()) {
      section.fail_at(line_of(value), "'" + key + "' in " + section.name() + " must be a rule (a string), not " + shown(value));
    }
    try {
      return Condition::parse(value.Scalar());
    } catch (const ConditionSyntaxError& e) {
      std::string problem = e.what();  // "approve_if: at column 13: ..."
      if (problem.starts_with("approve_if: ")) problem.erase(0, 12);
      section.fail_at(line_of(value), "'" + key + "' in " + section.name() + ": " + problem);
    }
  }

  void read_sub_agent(const Section& entry, AgentConfig& config, Names& names) {
    const fs::path path = relative_to(config.file, entry.required<std::string>("file"));
    if (std::find(stack_.begin(), stack_.end(), path) != stack_.end()) {
      entry.fail("file", "leads back to " + path.string() + ", which is being read (a cycle)");
    }
    auto sub = std::make_shared<AgentConfig>(load(path));
    config.warnings.insert(config.warnings.end(), sub->warnings.begin(), sub->warnings.end());
    SubAgentConfig agent;
    agent.line = entry.line();
    agent.name = entry.get_or<std::string>("name", sub->name);
    claim(entry, names, agent.name);
    agent.description = entry.get_or<std::string>("description", sub->description);
    if (agent.description.empty()) {
      entry.fail_at(entry.line(), entry.name() + " needs a 'description' (here or in " + path.filename().string() +
                                      ") so the model knows when to call it");
    }
    agent.side_effecting = entry.required<bool>("side_effecting");  // no safe default, as for function tools
    agent.agent = std::move(sub);
    config.agents.push_back(std::move(agent));
  }

  std::vector<fs::path> stack_;  // the files being read, outermost first
};

}  // namespace

ConfigError::ConfigError(std::filesystem::path file, int line, int column, const std::string& problem)
    : Error(ErrorCode::invalid_argument, location(file, line, column) + ": " + problem),
      file_(std::move(file)),
      line_(line),
      column_(column) {}

AgentConfig load_agent_config(const std::filesystem::path& file) { return Loader().load(file); }

}  // namespace agentkit::cli
