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
#include <agentkit/json.h>
#include <agentkit/providers/models.h>
#include <agentkit/providers/rest_tool.h>
#include <agentkit/providers/tool_data.h>
#include <agentkit/tool_data.h>

namespace agentkit::cli {
namespace {

namespace fs = std::filesystem;

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
          int fallback_line = 0, bool check_keys = true)
      : file_(file), node_(node), name_(std::move(name)), fallback_line_(fallback_line) {
    if (!node.IsMap()) throw ConfigError(file_, line_of(node), name_ + " must be a mapping, not " + shown(node));
    std::sort(accepted.begin(), accepted.end());
    for (const auto& entry : node) {
      const YAML::Node& key = entry.first;
      const std::string field = key.IsScalar() ? key.Scalar() : std::string();
      if (check_keys && !std::binary_search(accepted.begin(), accepted.end(), field)) {
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

// How a YAML scalar of a tool entry becomes JSON: a string, unless its key
// takes a boolean or a number (then `true`, `yes`, `10`, `2.5` read as such;
// quoted, they stay strings), or any value (`default`, `enum`: to_json).
enum class Typing { strings, scalar, any };

Typing typing_of(const std::string& key) {
  static const std::set<std::string> scalar = {"side_effecting",    "idempotent",    "requires_approval", "timeout_s",
                                               "retries",           "retry_delay_s", "max_retry_delay_s", "max_redirects",
                                               "max_response_bytes", "required",          "max_file_bytes",
                                               "max_output_bytes",   "max_line_chars", "max_entries",
                                               "max_matches",        "max_scan_entries", "allow_shell",
                                               "timeout_ms"};
  if (key == "default" || key == "enum") return Typing::any;
  return scalar.contains(key) ? Typing::scalar : Typing::strings;
}

// A tool entry's YAML as the JSON the library reads, with the line of each
// JSON pointer (a key's line, or a list item's) in `lines`.
Json data_json(const YAML::Node& node, const std::string& at, std::map<std::string, int>& lines, Typing typing) {
  if (typing == Typing::any) return to_json(node);
  if (node.IsNull()) return nullptr;
  if (node.IsSequence()) {
    Json out = Json::array();
    for (const auto& item : node) {
      const std::string here = at + "/" + std::to_string(out.size());
      lines[here] = line_of(item);
      out.push_back(data_json(item, here, lines, typing));
    }
    return out;
  }
  if (node.IsMap()) {
    Json out = Json::object();
    for (const auto& entry : node) {
      const std::string key = entry.first.Scalar();
      // A JSON pointer escapes '~' and '/' (RFC 6901).
      std::string token;
      for (char c : key) token += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
      if (out.contains(key)) throw ToolDataError(at + "/" + token, "appears twice");
      lines[at + "/" + token] = line_of(entry.first);
      out[key] = data_json(entry.second, at + "/" + token, lines, typing_of(key));
    }
    return out;
  }
  const std::string& text = node.Scalar();
  if (typing == Typing::strings || node.Tag() == "!") return text;
  std::int64_t integer = 0;
  double number = 0;
  bool boolean = false;
  if (YAML::convert<std::int64_t>::decode(node, integer)) return integer;
  if (YAML::convert<double>::decode(node, number)) return number;
  if (YAML::convert<bool>::decode(node, boolean)) return boolean;
  return text;
}

// A ToolDataError of the entry `where` ("tools[2].rest") in the CLI's words:
// "'type' in tools[2].rest.params[0]: must be one of ...".
std::string described(const std::string& where, const std::string& path, const std::string& problem) {
  std::vector<std::string> segments;
  for (std::size_t at = 1; at <= path.size() && !path.empty();) {
    const auto next = path.find('/', at);
    segments.push_back(path.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) break;
    at = next + 1;
  }
  const auto numeric = [](const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
  };
  std::size_t key = segments.size();
  while (key > 0 && numeric(segments[key - 1])) --key;
  if (key == 0) return where + ": " + problem;
  std::string section = where;
  for (std::size_t i = 0; i + 1 < key; ++i) section += numeric(segments[i]) ? "[" + segments[i] + "]" : "." + segments[i];
  std::string name = segments[key - 1];
  for (std::size_t i = key; i < segments.size(); ++i) name += "[" + segments[i] + "]";
  return "'" + name + "' in " + section + ": " + problem;
}

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
  // YAML is UTF-8 text; a file that is not would carry its bytes into
  // prompts, descriptions and requests. Refused at the first bad line.
  static void refuse_ill_formed_utf8(const fs::path& file, std::string_view text) {
    int line = 1;
    for (std::size_t start = 0; start < text.size(); ++line) {
      const std::size_t end = std::min(text.find('\n', start), text.size());
      if (!is_valid_utf8(text.substr(start, end - start))) throw ConfigError(file, line, "the line is not valid UTF-8");
      start = end + 1;
    }
  }

  static YAML::Node parse(const fs::path& file) {
    std::ifstream in(file);
    if (!in) throw ConfigError(file, 0, "cannot read the file");
    std::stringstream text;
    text << in.rdbuf();
    refuse_ill_formed_utf8(file, text.str());
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
      const Section entry(file, item, where, {"rest", "mcp", "memory", "skills", "agent", "workspace", "command"});
      if (!item.IsMap() || item.size() != 1) {
        entry.fail_at(entry.line(),
                      where + " must have exactly one of: agent, command, mcp, memory, rest, skills, workspace");
      }
      const std::string kind = item.begin()->first.Scalar();
      // `- memory:` (no value) is an empty mapping.
      const YAML::Node body = item.begin()->second.IsNull() ? YAML::Node(YAML::NodeType::Map) : item.begin()->second;
      const std::string name = where + "." + kind;
      const int line = entry.line();
      if (kind == "rest" || kind == "mcp") {
        // The keys are checked by the library's reader; Section only finds lines.
        const Section section(file, body, name, {}, line, /*check_keys=*/false);
        if (kind == "rest") read_rest(section, body, config, names);
        else read_mcp(section, body, config);
      } else if (kind == "workspace" || kind == "command") {
        read_workspace(Section(file, body, name, {}, line, /*check_keys=*/false), kind, body, config, names);
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

  // A `rest` or `mcp` body, read by the library's reader of that kind
  // (<agentkit/providers/tool_data.h>): one format for YAML and JSON. Its
  // ToolDataError names a JSON path, reported at that node's line.
  template <class Read>
  static auto read_data(const Section& section, const YAML::Node& body, Read read) {
    std::map<std::string, int> lines;
    try {
      return read(data_json(body, "", lines, Typing::strings));
    } catch (const ToolDataError& e) {
      int line = section.line();
      for (std::string at = e.path(); !at.empty(); at = at.substr(0, at.rfind('/'))) {
        if (auto it = lines.find(at); it != lines.end() && it->second > 0) {
          line = it->second;
          break;
        }
      }
      section.fail_at(line, described(section.name(), e.path(), e.problem()));
    }
  }

  static void read_rest(const Section& rest, const YAML::Node& body, AgentConfig& config, Names& names) {
    providers::RestToolDefinition def =
        read_data(rest, body, [](const Json& json) { return providers::rest_from_json(json); });
    claim(rest, names, def.name);
    try {
      config.rest_tools.push_back(std::make_shared<const providers::RestTool>(std::move(def)));
    } catch (const std::exception& e) {
      rest.fail_at(rest.line(), rest.name() + ": " + e.what());
    }
  }

  // A `workspace` or `command` entry (<agentkit/workspace.h>,
  // <agentkit/command.h>), read by the catalog's kind; `root` is relative
  // to the file.
  static void read_workspace(const Section& section, const std::string& kind, const YAML::Node& body,
                             AgentConfig& config, Names& names) {
    static ToolCatalog catalog;
    [[maybe_unused]] static const bool kinds = (add_workspace_kinds(catalog), true);
    const auto tools = read_data(section, body, [&](Json json) {
      if (json.is_object() && json.contains("root") && json["root"].is_string()) {
        json["root"] = relative_to(section.file(), json["root"].get<std::string>()).string();
      }
      try {
        return catalog.load(Json{{kind, std::move(json)}});
      } catch (const ToolDataError& e) {
        // Paths relative to the body, as read_data reports them.
        std::string path = e.path();
        if (path.rfind("/" + kind, 0) == 0) path.erase(0, kind.size() + 1);
        throw ToolDataError(path, e.problem(), e.code());
      }
    });
    for (const auto& tool : tools) {
      claim(section, names, tool->name());
      config.local_tools.push_back(tool);
    }
  }

  static void read_mcp(const Section& mcp, const YAML::Node& body, AgentConfig& config) {
    McpServerConfig server;
    static_cast<providers::McpServerEntry&>(server) =
        read_data(mcp, body, [](const Json& json) { return providers::mcp_from_json(json); });
    server.line = mcp.line();
    // The server starts in the file's directory unless `cwd` names another,
    // so relative paths in `command` and `args` are relative to the file
    // whatever directory agentkit runs from.
    if (server.stdio) {
      const std::string cwd = server.stdio->working_directory.empty() ? "." : server.stdio->working_directory;
      server.stdio->working_directory = relative_to(mcp.file(), cwd).string();
    }
    config.mcp.push_back(std::move(server));
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
