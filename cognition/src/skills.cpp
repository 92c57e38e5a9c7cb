// Skills: SKILL.md discovery and validation (yaml-cpp for the frontmatter),
// the prompt listing, progressive loading and fingerprinted refresh.
//
// A registry version is an immutable Snapshot swapped under a mutex, so a
// reader never sees a half-built registry and a failed rediscovery simply
// never replaces the current one.
#include <agentkit/skills.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <agentkit/detail/logging.h>
#include <agentkit/errors.h>
#include <agentkit/function_tool.h>

namespace agentkit {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxSkillFile = 1u << 20;
constexpr std::size_t kMaxName = 64;
constexpr std::size_t kMaxDescription = 1024;
constexpr std::size_t kMaxCompatibility = 500;
constexpr std::size_t kMaxResources = 1000;
constexpr int kFrontmatterFirstLine = 2;  // the line after the opening "---"
constexpr const char* kSkillFile = "SKILL.md";
const std::set<std::string, std::less<>> kFields = {"name",     "description",  "license",
                                                    "compatibility", "metadata", "allowed-tools"};

std::string render_location(const fs::path& file, int line, const std::string& problem) {
  if (file.empty()) return problem;
  return file.string() + (line > 0 ? ":" + std::to_string(line) : "") + ": " + problem;
}

// ---------------------------------------------------------------- reading

std::string read_file(const fs::path& file) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec) throw SkillError(file, 0, "cannot read the file: " + ec.message());
  if (size > kMaxSkillFile) {
    throw SkillError(file, 0, "the file is " + std::to_string(size) + " bytes; the limit is " +
                                  std::to_string(kMaxSkillFile));
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw SkillError(file, 0, "cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// LF line endings, no byte-order mark: line numbers then count '\n'.
std::string normalised(std::string text) {
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      out += '\n';
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

bool is_fence(std::string_view line) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  return line == "---";
}

struct Document {
  std::string frontmatter;
  std::string body;
};

Document split_document(const fs::path& file, const std::string& text) {
  const auto first_end = text.find('\n');
  if (!is_fence(std::string_view(text).substr(0, first_end))) {
    throw SkillError(file, 1, "SKILL.md must start with YAML frontmatter between '---' lines");
  }
  std::size_t pos = first_end == std::string::npos ? text.size() : first_end + 1;
  while (pos < text.size()) {
    const auto end = text.find('\n', pos);
    const std::string_view line = std::string_view(text).substr(pos, end == std::string::npos ? end : end - pos);
    if (is_fence(line)) {
      return {text.substr(first_end + 1, pos - first_end - 1), end == std::string::npos ? "" : text.substr(end + 1)};
    }
    pos = end == std::string::npos ? text.size() : end + 1;
  }
  throw SkillError(file, 1, "the frontmatter is not closed by a '---' line");
}

std::string trimmed(std::string_view s) {
  const auto begin = s.find_first_not_of(" \t\n");
  if (begin == std::string_view::npos) return "";
  const auto end = s.find_last_not_of(" \t\n");
  return std::string(s.substr(begin, end - begin + 1));
}

// ------------------------------------------------------------ frontmatter

int line_of(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? kFrontmatterFirstLine : kFrontmatterFirstLine + mark.line;
}

// Reads one field's value, naming the file and line on every error.
class FieldReader {
 public:
  FieldReader(const fs::path& file, std::string field, const YAML::Node& value)
      : file_(file), field_(std::move(field)), value_(value) {}

  [[noreturn]] void fail(const std::string& problem) const { throw SkillError(file_, line_of(value_), problem); }

  bool null() const { return value_.IsNull(); }

  std::string string() const {
    if (!value_.IsScalar()) fail("'" + field_ + "' must be a string");
    return value_.Scalar();
  }

  std::map<std::string, std::string> string_map() const {
    if (!value_.IsMap()) fail("'" + field_ + "' must be a mapping of strings to strings");
    std::map<std::string, std::string> out;
    for (const auto& entry : value_) {
      if (!entry.first.IsScalar() || !entry.second.IsScalar()) {
        throw SkillError(file_, line_of(entry.first), "'" + field_ + "' must map strings to strings");
      }
      out[entry.first.Scalar()] = entry.second.Scalar();
    }
    return out;
  }

  // A space-separated string or a list of strings.
  std::vector<std::string> string_list() const {
    std::vector<std::string> out;
    if (value_.IsScalar()) {
      std::istringstream words(value_.Scalar());
      for (std::string word; words >> word;) out.push_back(word);
      return out;
    }
    if (!value_.IsSequence()) fail("'" + field_ + "' must be a space-separated string or a list of strings");
    for (const auto& item : value_) {
      if (!item.IsScalar()) throw SkillError(file_, line_of(item), "'" + field_ + "' must list strings");
      out.push_back(item.Scalar());
    }
    return out;
  }

 private:
  const fs::path& file_;
  std::string field_;
  const YAML::Node& value_;
};

bool valid_name(std::string_view name) {
  return !name.empty() && name.size() <= kMaxName && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return (c >= 'a' && c <= 'z') || std::isdigit(c) || c == '-';
  });
}

YAML::Node load_yaml(const fs::path& file, const std::string& frontmatter) {
  try {
    return YAML::Load(frontmatter);
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) throw SkillError(file, kFrontmatterFirstLine, "invalid YAML: " + e.msg);
    throw SkillError(file, kFrontmatterFirstLine + e.mark.line,
                     "invalid YAML: " + e.msg + " (column " + std::to_string(e.mark.column + 1) + ")");
  }
}

void apply_field(Skill& skill, const std::string& key, const FieldReader& field) {
  if (field.null()) return;  // "license:" with no value is absent
  if (key == "name") {
    skill.name = field.string();
  } else if (key == "description") {
    skill.description = trimmed(field.string());
  } else if (key == "license") {
    skill.license = field.string();
  } else if (key == "compatibility") {
    skill.compatibility = field.string();
    if (skill.compatibility->size() > kMaxCompatibility) {
      field.fail("'compatibility' is longer than " + std::to_string(kMaxCompatibility) + " characters");
    }
  } else if (key == "metadata") {
    skill.metadata = field.string_map();
  } else if (key == "allowed-tools") {
    skill.allowed_tools = field.string_list();
  }
}

struct Parsed {
  Skill skill;
  std::string instructions;
};

// Parses and validates <dir>/SKILL.md; the skill's name must be the folder's.
Parsed parse_skill(const fs::path& directory) {
  const fs::path file = directory / kSkillFile;
  const Document doc = split_document(file, normalised(read_file(file)));
  const YAML::Node root = load_yaml(file, doc.frontmatter);
  if (!root.IsMap()) {
    throw SkillError(file, kFrontmatterFirstLine, "the frontmatter must be a mapping with name and description");
  }
  Parsed out;
  out.skill.directory = directory;
  out.skill.file = file;
  std::set<std::string> seen;
  int name_line = kFrontmatterFirstLine;
  for (const auto& entry : root) {
    if (!entry.first.IsScalar()) throw SkillError(file, line_of(entry.first), "field names must be strings");
    const std::string key = entry.first.Scalar();
    const int line = line_of(entry.first);
    if (!kFields.contains(key)) {
      throw SkillError(file, line,
                       "unknown field '" + key +
                           "' (allowed: name, description, license, compatibility, metadata, allowed-tools)");
    }
    if (!seen.insert(key).second) throw SkillError(file, line, "field '" + key + "' appears twice");
    if (key == "name") name_line = line;
    apply_field(out.skill, key, FieldReader(file, key, entry.second));
  }
  const std::string folder = directory.filename().string();
  if (out.skill.name.empty()) throw SkillError(file, kFrontmatterFirstLine, "'name' is required");
  if (!valid_name(out.skill.name)) {
    throw SkillError(file, name_line,
                     "name '" + out.skill.name + "' is invalid: use 1 to 64 lowercase letters, digits or hyphens");
  }
  if (out.skill.name != folder) {
    throw SkillError(file, name_line, "name '" + out.skill.name + "' does not match its folder '" + folder + "'");
  }
  if (out.skill.description.empty()) throw SkillError(file, kFrontmatterFirstLine, "'description' is required");
  if (out.skill.description.size() > kMaxDescription) {
    throw SkillError(file, kFrontmatterFirstLine,
                     "'description' is longer than " + std::to_string(kMaxDescription) + " characters");
  }
  out.instructions = trimmed(doc.body);
  return out;
}

// ----------------------------------------------------------- the folders

// The skill folders directly under `root`, sorted by name.
std::vector<fs::path> skill_folders(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code file_ec;
    if (it->is_directory(file_ec) && fs::is_regular_file(it->path() / kSkillFile, file_ec)) out.push_back(it->path());
  }
  if (ec) throw SkillError(root, 0, "cannot list the skills directory: " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

// A file's mtime and size, or nullopt when it cannot be read.
std::optional<std::string> stamp_of(const fs::path& file) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec) return std::nullopt;
  const auto mtime = fs::last_write_time(file, ec).time_since_epoch().count();
  if (ec) return std::nullopt;
  return std::to_string(mtime) + "/" + std::to_string(size);
}

// Each SKILL.md's path, mtime and size, in a stable order. No parsing.
std::string fingerprint_of(const std::vector<fs::path>& roots) {
  std::string out;
  for (const auto& root : roots) {
    out += root.string() + '\n';
    std::vector<std::string> entries;
    std::error_code ec;
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path file = it->path() / kSkillFile;
      if (const auto stamp = stamp_of(file)) entries.push_back(file.string() + '\t' + *stamp + '\n');
    }
    if (ec) out += "unreadable\n";
    std::sort(entries.begin(), entries.end());
    for (const auto& e : entries) out += e;
  }
  return out;
}

bool inside(const fs::path& dir, const fs::path& path) {
  const auto [d, p] = std::mismatch(dir.begin(), dir.end(), path.begin(), path.end());
  return d == dir.end();
}

bool hidden(const fs::path& relative) {
  return std::any_of(relative.begin(), relative.end(), [](const fs::path& part) {
    const std::string s = part.string();
    return !s.empty() && s.front() == '.';
  });
}

std::vector<std::string> resources_of(const fs::path& directory) {
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path real_dir = fs::weakly_canonical(directory, ec);
  fs::recursive_directory_iterator it(directory, fs::directory_options::skip_permission_denied, ec);
  for (const fs::recursive_directory_iterator end; !ec && it != end && out.size() < kMaxResources; it.increment(ec)) {
    const fs::path relative = it->path().lexically_relative(directory);
    std::error_code entry_ec;
    if (hidden(relative)) {
      if (it->is_directory(entry_ec)) it.disable_recursion_pending();
      continue;
    }
    if (relative == kSkillFile || !it->is_regular_file(entry_ec)) continue;
    if (it->is_symlink(entry_ec) && !inside(real_dir, fs::weakly_canonical(it->path(), entry_ec))) continue;
    out.push_back(relative.generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string one_line(std::string_view text) {
  std::string out;
  bool space = false;
  for (const char c : text) {
    if (c == ' ' || c == '\t' || c == '\n') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// "['a', 'b']": the names a caller may choose from.
std::string available(const std::vector<Skill>& skills) {
  std::vector<std::string> names;
  for (const auto& skill : skills) names.push_back(skill.name);
  return quoted_list(names);
}

}  // namespace

// ------------------------------------------------------------------ types

SkillError::SkillError(fs::path file, int line, const std::string& problem)
    : Error(ErrorCode::invalid_argument, render_location(file, line, problem)), file_(std::move(file)), line_(line) {}

SkillError::SkillError(const std::string& problem) : Error(ErrorCode::invalid_argument, problem) {}

fs::path LoadedSkill::resource(std::string_view relative) const {
  const fs::path rel(relative);
  if (rel.empty() || rel.is_absolute()) {
    throw SkillError("resource path '" + std::string(relative) + "' must be relative to the skill folder");
  }
  std::error_code ec;
  const fs::path path = (directory / rel).lexically_normal();
  const fs::path real = fs::weakly_canonical(path, ec);
  if (!inside(directory.lexically_normal(), path) || ec || !inside(fs::weakly_canonical(directory, ec), real)) {
    throw SkillError("resource path '" + std::string(relative) + "' leaves the folder of skill '" + name + "'");
  }
  return path;
}

struct Skills::Snapshot {
  std::map<std::string, Skill> skills;
  std::map<std::string, std::string> stamps;  // name -> mtime and size of its SKILL.md
  std::vector<std::string> warnings;
  std::uint64_t revision = 0;
};

Skills::Skills(std::vector<fs::path> directories, std::shared_ptr<spdlog::logger> logger)
    : logger_(detail::logger_or_null(logger)) {
  if (directories.empty()) throw SkillError("no skills directory given");
  for (auto& dir : directories) {
    std::error_code ec;
    fs::path absolute = fs::weakly_canonical(fs::absolute(dir, ec), ec);
    if (ec || !fs::is_directory(absolute, ec)) {
      throw SkillError("skills directory '" + dir.string() + "' does not exist or is not a directory");
    }
    directories_.push_back(std::move(absolute));
  }
  rediscover(fingerprint_of(directories_));
}

std::shared_ptr<const Skills::Snapshot> Skills::snapshot() const {
  std::lock_guard lock(mutex_);
  return current_;
}

SkillChanges Skills::rediscover(std::string fingerprint) {
  {
    std::lock_guard lock(mutex_);
    attempted_fingerprint_ = std::move(fingerprint);
  }
  auto next = std::make_shared<Snapshot>();
  for (const auto& root : directories_) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) throw SkillError("skills directory '" + root.string() + "' is gone");
    for (const auto& folder : skill_folders(root)) {
      Parsed parsed = parse_skill(folder);
      const std::string name = parsed.skill.name;
      if (const auto it = next->skills.find(name); it != next->skills.end()) {
        next->warnings.push_back("skill '" + name + "' in " + root.string() + " overrides the one in " +
                                 it->second.directory.parent_path().string());
        logger_->warn("{}", next->warnings.back());
      }
      next->stamps[name] = stamp_of(parsed.skill.file).value_or("");
      next->skills[name] = std::move(parsed.skill);
    }
  }

  std::lock_guard lock(mutex_);
  SkillChanges changes;
  static const Snapshot kEmpty;
  const Snapshot& previous = current_ ? *current_ : kEmpty;
  for (const auto& [name, skill] : next->skills) {
    const auto it = previous.skills.find(name);
    if (it == previous.skills.end()) {
      changes.added.push_back(name);
    } else if (!(it->second == skill) || previous.stamps.at(name) != next->stamps.at(name)) {
      changes.updated.push_back(name);
    }
  }
  for (const auto& [name, skill] : previous.skills) {
    if (!next->skills.contains(name)) changes.removed.push_back(name);
  }
  next->revision = previous.revision + (changes.empty() && current_ ? 0 : 1);
  changes.revision = next->revision;
  current_ = std::move(next);
  return changes;
}

SkillChanges Skills::refresh() { return rediscover(fingerprint_of(directories_)); }

std::optional<SkillChanges> Skills::refresh_if_changed() {
  std::string fingerprint = fingerprint_of(directories_);
  {
    std::lock_guard lock(mutex_);
    if (fingerprint == attempted_fingerprint_) return std::nullopt;
  }
  return rediscover(std::move(fingerprint));
}

std::vector<Skill> Skills::list() const {
  std::vector<Skill> out;
  for (const auto& [name, skill] : snapshot()->skills) out.push_back(skill);
  return out;
}

std::optional<Skill> Skills::find(std::string_view name) const {
  const auto snap = snapshot();
  const auto it = snap->skills.find(std::string(name));
  if (it == snap->skills.end()) return std::nullopt;
  return it->second;
}

std::size_t Skills::size() const { return snapshot()->skills.size(); }
std::uint64_t Skills::revision() const { return snapshot()->revision; }
std::vector<std::string> Skills::warnings() const { return snapshot()->warnings; }

std::string Skills::render_prompt() const {
  const auto snap = snapshot();
  if (snap->skills.empty()) return "";
  std::string out =
      "## Skills\n\nThese skills are available. Each has full instructions; load a skill before following it.\n\n";
  for (const auto& [name, skill] : snap->skills) out += "- " + name + ": " + one_line(skill.description) + "\n";
  return out;
}

LoadedSkill Skills::load(std::string_view name) const {
  const auto snap = snapshot();
  const auto it = snap->skills.find(std::string(name));
  if (it == snap->skills.end()) {
    throw SkillError("unknown skill '" + std::string(name) + "'; available: " + available(list()));
  }
  Parsed parsed = parse_skill(it->second.directory);
  return LoadedSkill{parsed.skill.name, std::move(parsed.instructions), parsed.skill.directory,
                     resources_of(parsed.skill.directory)};
}

ToolPtr skill_tool(std::shared_ptr<const Skills> skills) {
  if (!skills) throw ToolDefinitionError("skill_tool(): the skills registry must not be null");
  return tool("load_skill")
      .description(
          "Load the full instructions of one of the available skills listed in the system prompt, with the "
          "relative paths of the resource files in its folder.")
      .side_effecting(false)
      .idempotent()
      .params(param("name", "The skill's name, exactly as listed"))
      .fn([skills = std::move(skills)](const std::string& name) {
        if (!skills->find(name)) {
          throw ToolArgumentError("load_skill", {}, {},
                                  {{"name", "unknown skill '" + name + "'; available: " + available(skills->list())}},
                                  {"name"});
        }
        const LoadedSkill loaded = skills->load(name);
        return Json{{"name", loaded.name},
                    {"instructions", loaded.instructions},
                    {"directory", loaded.directory.string()},
                    {"resources", loaded.resources}};
      });
}

}  // namespace agentkit
