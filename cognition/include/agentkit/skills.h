#pragma once
// Skills: local SKILL.md folders an agent discovers, lists in its system
// prompt, and loads progressively (the listing first, one skill's full
// instructions when it needs them).
//
// A skills directory holds one folder per skill:
//
//   skills/
//     internet-research/
//       SKILL.md          <- YAML frontmatter, then Markdown instructions
//       references/guide.md
//       scripts/search.py
//
//   ---
//   name: internet-research
//   description: Research a question on the web and cite the sources.
//   license: MIT                                  # optional
//   compatibility: Needs network access           # optional
//   metadata: {owner: research-team}              # optional, string values
//   allowed-tools: web_search fetch_url           # optional, a string or a list
//   ---
//   # Internet research
//   ...
//
// Rules: `name` is 1-64 lowercase letters, digits or hyphens and equals its
// folder's name; `description` is required, at most 1024 characters; any
// other field is an error (a misspelt field is caught, not ignored). Errors
// name the file and line.
//
// Example:
//   auto skills = std::make_shared<agentkit::Skills>(std::vector<std::filesystem::path>{"./skills"});
//   std::string prompt = "You are helpful.\n\n" + skills->render_prompt();
//   agentkit::Agent agent("atlas", "gpt-4.1", prompt,
//                         agentkit::cognition::react({agentkit::skill_tool(skills)}));
//   auto loaded = skills->load("internet-research");  // instructions + resource paths
//   if (auto changes = skills->refresh_if_changed()) { /* re-render the prompt */ }
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <agentkit/error.h>
#include <spdlog/fwd.h>

#include <agentkit/tool.h>

namespace agentkit {

// A SKILL.md problem: bad YAML, a missing or invalid field, a name that does
// not match its folder, an unknown skill. what() reads
// "<file>:<line>: <problem>" when a file is involved. Code invalid_argument.
class SkillError : public Error {
 public:
  SkillError(std::filesystem::path file, int line, const std::string& problem);
  explicit SkillError(const std::string& problem);

  // Empty when no single file is at fault.
  const std::filesystem::path& file() const noexcept { return file_; }
  // 1-based line in the file, 0 when unknown.
  int line() const noexcept { return line_; }

 private:
  std::filesystem::path file_;
  int line_ = 0;
};

// One skill's frontmatter, as discovered.
struct Skill {
  std::string name;
  std::string description;
  std::optional<std::string> license;
  std::optional<std::string> compatibility;
  std::map<std::string, std::string> metadata;
  std::vector<std::string> allowed_tools;
  std::filesystem::path directory;  // absolute
  std::filesystem::path file;       // directory / "SKILL.md"

  friend bool operator==(const Skill&, const Skill&) = default;
};

// A skill loaded in full: what an agent reads before using it.
struct LoadedSkill {
  std::string name;
  std::string instructions;         // the Markdown after the frontmatter
  std::filesystem::path directory;  // absolute
  // Every other regular file in the folder, relative with '/' separators,
  // sorted. Hidden entries and links leading outside the folder are left out.
  std::vector<std::string> resources;

  // The absolute path of a resource; throws SkillError for a path that is
  // absolute or would leave the folder ("../x", a link outside).
  std::filesystem::path resource(std::string_view relative) const;
};

// What a refresh changed. `revision` counts the registry versions.
struct SkillChanges {
  std::uint64_t revision = 0;
  std::vector<std::string> added;
  std::vector<std::string> updated;
  std::vector<std::string> removed;

  bool empty() const noexcept { return added.empty() && updated.empty() && removed.empty(); }
};

// A registry of the skills under one or more directories. Thread-safe: an
// agent may load skills while the host refreshes. A skill in a later
// directory overrides one of the same name in an earlier directory (noted in
// warnings() and logged to `logger`, if one is given).
class Skills {
 public:
  // Discovers every `<dir>/<folder>/SKILL.md`. Throws SkillError for a
  // missing directory or any invalid skill. Warnings go to `logger` (nowhere
  // when null) as well as to warnings().
  explicit Skills(std::vector<std::filesystem::path> directories, std::shared_ptr<spdlog::logger> logger = nullptr);
  Skills(const Skills&) = delete;
  Skills& operator=(const Skills&) = delete;

  // Every skill, sorted by name.
  std::vector<Skill> list() const;
  std::optional<Skill> find(std::string_view name) const;
  std::size_t size() const;
  std::uint64_t revision() const;
  // Overrides noticed by the last successful discovery.
  std::vector<std::string> warnings() const;

  // The compact listing for a system prompt: a short header, then
  // "- name: description" per skill in name order. Empty when there are no
  // skills. Render it again after a refresh.
  std::string render_prompt() const;

  // Re-reads the skill's SKILL.md from disk (edits show without a refresh)
  // and lists its resources. Throws SkillError for an unknown name or a file
  // that no longer parses.
  LoadedSkill load(std::string_view name) const;

  // Rediscovers everything. On any error throws SkillError and keeps the
  // previous registry.
  SkillChanges refresh();
  // Rediscovers only when the fingerprint (each SKILL.md's path, mtime and
  // size) changed since the last discovery attempt; nullopt when it did not,
  // without parsing anything. A failed attempt is remembered too, so an
  // unchanged invalid edit is reported once, not on every call.
  std::optional<SkillChanges> refresh_if_changed();

 private:
  struct Snapshot;
  std::shared_ptr<const Snapshot> snapshot() const;
  // Discovers under `fingerprint` (taken before reading) and installs the result.
  SkillChanges rediscover(std::string fingerprint);

  std::vector<std::filesystem::path> directories_;
  std::shared_ptr<spdlog::logger> logger_;
  mutable std::mutex mutex_;
  std::shared_ptr<const Snapshot> current_;
  std::string attempted_fingerprint_;
};

// A read-only tool, "load_skill", taking {"name": string} and returning
// {"name", "instructions", "directory", "resources"} for that skill. An
// unknown name is a ToolArgumentError listing the available skills. Pair it
// with render_prompt() in the system prompt so the model knows the names.
ToolPtr skill_tool(std::shared_ptr<const Skills> skills);

}  // namespace agentkit
