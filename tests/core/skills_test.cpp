// Skills (spec 003): SKILL.md discovery and validation, the prompt listing,
// progressive loading, fingerprinted refresh, and a skill handed to an agent
// as a tool. Every skill folder is written by the test into a temp directory.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/skills.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/tool_calls.h"

namespace fs = std::filesystem;
using agentkit::Json;
using agentkit::SkillError;
using agentkit::Skills;
using agentkit::ToolCall;
using agentkit::testing::FakeLLM;
using agentkit::testing::Turn;
using agentkit_test::call;

namespace {

// A fresh directory, removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("agentkit-skills-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

std::string skill_md(const std::string& name, const std::string& description, const std::string& extra = "",
                     const std::string& body = "# Steps\n\n1. Do the thing.\n") {
  return "---\nname: " + name + "\ndescription: " + description + "\n" + extra + "---\n" + body;
}

void add_skill(const fs::path& root, const std::string& name, const std::string& description,
               const std::string& extra = "", const std::string& body = "# Steps\n\n1. Do the thing.\n") {
  write(root / name / "SKILL.md", skill_md(name, description, extra, body));
}

// The SkillError raised by discovering a root holding one folder `folder`
// whose SKILL.md is `text`.
SkillError error_for(const std::string& folder, const std::string& text) {
  TempDir dir;
  write(dir.path() / folder / "SKILL.md", text);
  try {
    Skills skills({dir.path()});
  } catch (const SkillError& e) {
    return e;
  }
  FAIL("expected a SkillError for:\n" << text);
  return SkillError("unreachable");
}

// Sets a file's mtime (so tests never depend on the clock's granularity).
void touch(const fs::path& file, fs::file_time_type when) { fs::last_write_time(file, when); }

}  // namespace

// --------------------------------------------------------------- discovery

TEST_CASE("Skills: discovery finds every <dir>/<folder>/SKILL.md and reads all fields", "[skills]") {
  TempDir dir;
  add_skill(dir.path(), "internet-research", "Research a question on the web and cite sources.",
            "license: MIT\ncompatibility: Needs network access\nmetadata:\n  owner: research-team\n  tier: \"2\"\n"
            "allowed-tools: web_search  fetch_url\n");
  add_skill(dir.path(), "pdf-tools", "Split, merge and fill PDF forms.", "allowed-tools:\n  - read_file\n  - run\n");
  fs::create_directories(dir.path() / "not-a-skill");  // no SKILL.md: ignored
  write(dir.path() / "README.md", "notes");

  Skills skills({dir.path()});
  REQUIRE(skills.size() == 2);
  auto list = skills.list();
  CHECK(list[0].name == "internet-research");
  CHECK(list[1].name == "pdf-tools");
  const auto& research = list[0];
  CHECK(research.description == "Research a question on the web and cite sources.");
  CHECK(research.license == "MIT");
  CHECK(research.compatibility == "Needs network access");
  CHECK(research.metadata == std::map<std::string, std::string>{{"owner", "research-team"}, {"tier", "2"}});
  CHECK(research.allowed_tools == std::vector<std::string>{"web_search", "fetch_url"});
  CHECK(research.directory == fs::canonical(dir.path()) / "internet-research");
  CHECK(research.file == research.directory / "SKILL.md");
  CHECK(list[1].allowed_tools == std::vector<std::string>{"read_file", "run"});
  CHECK_FALSE(list[1].license);
  CHECK(skills.find("pdf-tools"));
  CHECK_FALSE(skills.find("nope"));
  CHECK(skills.revision() == 1);
}

TEST_CASE("Skills: the prompt listing is compact, one line per skill, in name order", "[skills]") {
  TempDir dir;
  add_skill(dir.path(), "zeta", "Last one.");
  add_skill(dir.path(), "alpha", "First one,\n  folded over two lines.", "", "Long instructions that stay out.\n");
  Skills skills({dir.path()});
  CHECK(skills.render_prompt() ==
        "## Skills\n\nThese skills are available. Each has full instructions; load a skill before following it.\n\n"
        "- alpha: First one, folded over two lines.\n"
        "- zeta: Last one.\n");

  TempDir empty;
  CHECK(Skills({empty.path()}).render_prompt().empty());
}

TEST_CASE("Skills: a later directory overrides a skill of the same name, with a warning", "[skills]") {
  TempDir first;
  TempDir second;
  add_skill(first.path(), "review", "Review code the old way.");
  add_skill(second.path(), "review", "Review code the new way.");
  Skills skills({first.path(), second.path()});
  CHECK(skills.size() == 1);
  CHECK(skills.find("review")->description == "Review code the new way.");
  REQUIRE(skills.warnings().size() == 1);
  CHECK_THAT(skills.warnings()[0], Catch::Contains("skill 'review'") && Catch::Contains("overrides"));
}

TEST_CASE("Skills: a missing directory is an error", "[skills]") {
  TempDir dir;
  CHECK_THROWS_WITH(Skills({dir.path() / "missing"}), Catch::Contains("does not exist"));
  CHECK_THROWS_AS(Skills(std::vector<fs::path>{}), SkillError);
}

// -------------------------------------------------------------- validation

TEST_CASE("Skills: name must be 1-64 lowercase letters, digits or hyphens, and match its folder", "[skills][rules]") {
  auto upper = error_for("Research", skill_md("Research", "Looks things up."));
  CHECK(upper.line() == 2);
  CHECK_THAT(upper.what(), Catch::Contains("name 'Research' is invalid: use 1 to 64 lowercase letters"));
  CHECK(upper.file().filename() == "SKILL.md");
  CHECK(upper.file().parent_path().filename() == "Research");

  CHECK_THAT(error_for("a_b", skill_md("a_b", "Underscore.")).what(), Catch::Contains("is invalid"));
  const std::string long_name(65, 'a');
  CHECK_THAT(error_for(long_name, skill_md(long_name, "Too long.")).what(), Catch::Contains("is invalid"));
  const std::string max_name(64, 'a');
  TempDir ok;
  add_skill(ok.path(), max_name, "Exactly 64.");
  CHECK(Skills({ok.path()}).find(max_name));

  auto mismatch = error_for("research", "---\ndescription: Looks things up.\nname: researcher\n---\n");
  CHECK(mismatch.line() == 3);
  CHECK_THAT(mismatch.what(), Catch::EndsWith("SKILL.md:3: name 'researcher' does not match its folder 'research'"));

  CHECK_THAT(error_for("x", "---\ndescription: No name.\n---\n").what(), Catch::Contains("'name' is required"));
}

TEST_CASE("Skills: description is required and bounded", "[skills][rules]") {
  CHECK_THAT(error_for("x", "---\nname: x\n---\n").what(), Catch::Contains("'description' is required"));
  CHECK_THAT(error_for("x", "---\nname: x\ndescription: \"  \"\n---\n").what(),
             Catch::Contains("'description' is required"));
  CHECK_THAT(error_for("x", skill_md("x", std::string(1025, 'd'))).what(), Catch::Contains("longer than 1024"));
  auto not_string = error_for("x", "---\nname: x\ndescription:\n  - a\n  - b\n---\n");
  CHECK_THAT(not_string.what(), Catch::Contains("'description' must be a string"));
  CHECK(not_string.line() == 4);
}

TEST_CASE("Skills: optional fields are type-checked, unknown or repeated fields are refused with their line",
          "[skills][rules]") {
  auto metadata = error_for("x", skill_md("x", "Desc.", "metadata:\n  owner:\n    nested: true\n"));
  CHECK_THAT(metadata.what(), Catch::Contains("'metadata' must map strings to strings"));
  CHECK(metadata.line() == 5);
  CHECK_THAT(error_for("x", skill_md("x", "Desc.", "metadata: just text\n")).what(),
             Catch::Contains("'metadata' must be a mapping"));
  CHECK_THAT(error_for("x", skill_md("x", "Desc.", "allowed-tools: {a: b}\n")).what(),
             Catch::Contains("'allowed-tools' must be a space-separated string or a list"));
  CHECK_THAT(error_for("x", skill_md("x", "Desc.", "license: [MIT]\n")).what(),
             Catch::Contains("'license' must be a string"));
  CHECK_THAT(error_for("x", skill_md("x", "Desc.", "compatibility: " + std::string(501, 'c') + "\n")).what(),
             Catch::Contains("longer than 500"));

  auto unknown = error_for("x", skill_md("x", "Desc.", "licence: MIT\n"));
  CHECK(unknown.line() == 4);
  CHECK_THAT(unknown.what(), Catch::Contains("SKILL.md:4: unknown field 'licence' (allowed: name, description"));
  auto repeated = error_for("x", "---\nname: x\ndescription: One.\ndescription: Two.\n---\n");
  CHECK_THAT(repeated.what(), Catch::Contains("field 'description' appears twice"));
}

TEST_CASE("Skills: the frontmatter must open the file, be closed, and be a mapping", "[skills][rules]") {
  auto missing = error_for("x", "# Just markdown\n");
  CHECK(missing.line() == 1);
  CHECK_THAT(missing.what(), Catch::Contains("must start with YAML frontmatter"));
  CHECK_THAT(error_for("x", "---\nname: x\ndescription: Desc.\n# no closing line\n").what(),
             Catch::Contains("not closed"));
  CHECK_THAT(error_for("x", "---\n- name\n- description\n---\n").what(), Catch::Contains("must be a mapping"));
  CHECK_THAT(error_for("x", "---\n---\nbody\n").what(), Catch::Contains("must be a mapping"));
}

TEST_CASE("Skills: bad YAML is an error naming the file and the line in the file", "[skills][rules]") {
  auto bad = error_for("x", "---\nname: x\ndescription: Desc.\nlicense: a: b\n---\nbody\n");
  CHECK(bad.file().filename() == "SKILL.md");
  CHECK(bad.line() == 4);
  CHECK_THAT(bad.what(), Catch::EndsWith("SKILL.md:4: invalid YAML: illegal map value (column 11)"));

  auto anchor = error_for("x", "---\nname: x\ndescription: Desc.\n\nlicense: *nope\n---\n");
  CHECK(anchor.line() == 5);

  auto indent = error_for("x", "---\nname: x\ndescription: Desc.\nlicense: MIT\n  bad: indent\n---\n");
  CHECK(indent.line() == 5);
  CHECK_THAT(indent.what(), Catch::Contains("invalid YAML"));

  // CRLF files and a byte-order mark count lines the same way.
  auto crlf = error_for("x", "\xEF\xBB\xBF---\r\nname: x\r\ndescription: Desc.\r\nlicense: a: b\r\n---\r\n");
  CHECK(crlf.line() == 4);
}

// --------------------------------------------------------------- loading

TEST_CASE("Skills: load() returns the instructions and the sorted relative resources", "[skills][load]") {
  TempDir dir;
  TempDir outside;
  add_skill(dir.path(), "internet-research", "Research a question on the web.", "",
            "\n# Internet research\n\nSearch, then read `references/guide.md`.\n\n");
  const fs::path folder = dir.path() / "internet-research";
  write(folder / "scripts" / "search.py", "print('hi')\n");
  write(folder / "references" / "guide.md", "# Guide\n");
  write(folder / ".git" / "config", "hidden\n");
  write(folder / ".env", "SECRET=1\n");
  write(outside.path() / "secret.txt", "not yours\n");
  fs::create_symlink(outside.path() / "secret.txt", folder / "escape.txt");
  fs::create_symlink(folder / "references" / "guide.md", folder / "guide-link.md");

  Skills skills({dir.path()});
  auto loaded = skills.load("internet-research");
  CHECK(loaded.name == "internet-research");
  CHECK(loaded.instructions == "# Internet research\n\nSearch, then read `references/guide.md`.");
  CHECK(loaded.directory == fs::canonical(folder));
  CHECK(loaded.resources == std::vector<std::string>{"guide-link.md", "references/guide.md", "scripts/search.py"});

  CHECK(loaded.resource("references/guide.md") == fs::canonical(folder) / "references" / "guide.md");
  CHECK_THROWS_WITH(loaded.resource("../other/SKILL.md"), Catch::Contains("leaves the folder"));
  CHECK_THROWS_WITH(loaded.resource("scripts/../../x"), Catch::Contains("leaves the folder"));
  CHECK_THROWS_WITH(loaded.resource("escape.txt"), Catch::Contains("leaves the folder"));
  CHECK_THROWS_WITH(loaded.resource("/etc/passwd"), Catch::Contains("must be relative"));

  CHECK_THROWS_WITH(skills.load("nope"), Catch::Contains("unknown skill 'nope'; available: ['internet-research']"));
}

TEST_CASE("Skills: load() re-reads SKILL.md, so edited instructions show without a refresh", "[skills][load]") {
  TempDir dir;
  add_skill(dir.path(), "review", "Review code.", "", "Version one.\n");
  Skills skills({dir.path()});
  CHECK(skills.load("review").instructions == "Version one.");
  add_skill(dir.path(), "review", "Review code.", "", "Version two.\n");
  CHECK(skills.load("review").instructions == "Version two.");
  write(dir.path() / "review" / "SKILL.md", "---\nname: review\n---\n");
  CHECK_THROWS_WITH(skills.load("review"), Catch::Contains("'description' is required"));
}

// --------------------------------------------------------------- refresh

TEST_CASE("Skills: refresh() reports added, updated and removed skills and bumps the revision", "[skills][refresh]") {
  TempDir dir;
  add_skill(dir.path(), "alpha", "First.");
  add_skill(dir.path(), "beta", "Second.");
  Skills skills({dir.path()});

  auto unchanged = skills.refresh();
  CHECK(unchanged.empty());
  CHECK(unchanged.revision == 1);

  add_skill(dir.path(), "gamma", "Third.");
  add_skill(dir.path(), "alpha", "First, reworded.");
  fs::remove_all(dir.path() / "beta");
  auto changes = skills.refresh();
  CHECK(changes.added == std::vector<std::string>{"gamma"});
  CHECK(changes.updated == std::vector<std::string>{"alpha"});
  CHECK(changes.removed == std::vector<std::string>{"beta"});
  CHECK(changes.revision == 2);
  CHECK(skills.revision() == 2);
  CHECK(skills.find("alpha")->description == "First, reworded.");
  CHECK_THAT(skills.render_prompt(), Catch::Contains("- gamma: Third.") && !Catch::Contains("beta"));
}

TEST_CASE("Skills: an invalid edit is reported and the previous registry stays, a fix is picked up",
          "[skills][refresh]") {
  TempDir dir;
  add_skill(dir.path(), "alpha", "First.");
  Skills skills({dir.path()});
  const std::string prompt = skills.render_prompt();

  write(dir.path() / "alpha" / "SKILL.md", "---\nname: alpha\ndescription: [broken\n---\n");
  add_skill(dir.path(), "beta", "Second.");
  try {
    skills.refresh();
    FAIL("expected SkillError");
  } catch (const SkillError& e) {
    CHECK(e.file() == fs::canonical(dir.path()) / "alpha" / "SKILL.md");
    CHECK(e.line() >= 3);
  }
  CHECK(skills.size() == 1);  // beta is not half-installed
  CHECK(skills.find("alpha")->description == "First.");
  CHECK(skills.render_prompt() == prompt);
  CHECK(skills.revision() == 1);

  add_skill(dir.path(), "alpha", "First, fixed.");
  auto changes = skills.refresh();
  CHECK(changes.added == std::vector<std::string>{"beta"});
  CHECK(changes.updated == std::vector<std::string>{"alpha"});
  CHECK(skills.find("alpha")->description == "First, fixed.");
}

TEST_CASE("Skills: refresh_if_changed() parses nothing while the fingerprint is unchanged", "[skills][refresh]") {
  TempDir dir;
  add_skill(dir.path(), "alpha", "Original.");
  const fs::path file = dir.path() / "alpha" / "SKILL.md";
  Skills skills({dir.path()});
  CHECK_FALSE(skills.refresh_if_changed());

  // Same size, same mtime: the fingerprint cannot tell, so nothing is re-read.
  const auto mtime = fs::last_write_time(file);
  add_skill(dir.path(), "alpha", "Replaced.");
  touch(file, mtime);
  CHECK_FALSE(skills.refresh_if_changed());
  CHECK(skills.find("alpha")->description == "Original.");
  // A forced refresh reads it.
  CHECK(skills.refresh().updated == std::vector<std::string>{"alpha"});
  CHECK(skills.find("alpha")->description == "Replaced.");

  // A new mtime is a change.
  add_skill(dir.path(), "alpha", "Reworded.");
  touch(file, mtime + std::chrono::seconds(5));
  auto changes = skills.refresh_if_changed();
  REQUIRE(changes);
  CHECK(changes->updated == std::vector<std::string>{"alpha"});
  CHECK(skills.find("alpha")->description == "Reworded.");

  // A new skill folder is a change.
  add_skill(dir.path(), "beta", "Second.");
  REQUIRE(skills.refresh_if_changed());
  CHECK(skills.size() == 2);
}

TEST_CASE("Skills: refresh_if_changed() reports an unchanged invalid edit once", "[skills][refresh]") {
  TempDir dir;
  add_skill(dir.path(), "alpha", "Original.");
  Skills skills({dir.path()});
  write(dir.path() / "alpha" / "SKILL.md", "---\nname: alpha\n---\n");
  CHECK_THROWS_AS(skills.refresh_if_changed(), SkillError);
  CHECK_FALSE(skills.refresh_if_changed());
  CHECK(skills.find("alpha")->description == "Original.");
}

// ------------------------------------------------------------ skill as tool

TEST_CASE("Skills: an agent lists skills in its prompt and loads one through the load_skill tool",
          "[skills][agent]") {
  TempDir dir;
  add_skill(dir.path(), "internet-research", "Research a question on the web and cite sources.", "",
            "Search first, then read references/guide.md.\n");
  write(dir.path() / "internet-research" / "references" / "guide.md", "# Guide\n");
  add_skill(dir.path(), "pdf-tools", "Split, merge and fill PDF forms.");
  auto skills = std::make_shared<Skills>(std::vector<fs::path>{dir.path()});

  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "load_skill", {{"name", "internet-research"}})}},
      Turn{.tool_calls = {call("c2", "load_skill", {{"name", "web-research"}})}},
      Turn{.content = "I will search first, then read the guide."},
  });
  agentkit::Agent agent("atlas", "fake", "You are helpful.\n\n" + skills->render_prompt(),
                        agentkit::cognition::react({agentkit::skill_tool(skills)}));
  auto ctx = agentkit::testing::make_test_ctx({.llm = llm});
  auto result = agent.run("How should you research this?", ctx);
  CHECK(result.stop_reason == agentkit::StopReason::answered);
  CHECK(result.output == "I will search first, then read the guide.");

  auto requests = llm->requests();
  REQUIRE(requests.size() == 3);
  CHECK_THAT(requests[0].system, Catch::Contains("- internet-research: Research a question on the web"));
  CHECK(requests[0].tools == std::vector<std::string>{"load_skill"});

  const auto& loaded = requests[1].messages.back();
  CHECK(loaded.tool_call_id == "c1");
  CHECK_FALSE(loaded.is_error);
  const Json body = Json::parse(loaded.text());
  CHECK(body["name"] == "internet-research");
  CHECK(body["instructions"] == "Search first, then read references/guide.md.");
  CHECK(body["resources"] == Json::array({"references/guide.md"}));
  CHECK(body["directory"] == (fs::canonical(dir.path()) / "internet-research").string());

  const auto& unknown = requests[2].messages.back();
  CHECK(unknown.is_error);
  CHECK_THAT(unknown.text(),
             Catch::Contains("unknown skill 'web-research'; available: ['internet-research', 'pdf-tools']"));
}

TEST_CASE("Skills: the load_skill tool is read-only and idempotent", "[skills]") {
  TempDir dir;
  add_skill(dir.path(), "alpha", "First.");
  auto tool = agentkit::skill_tool(std::make_shared<Skills>(std::vector<fs::path>{dir.path()}));
  CHECK(tool->name() == "load_skill");
  CHECK_FALSE(tool->side_effecting());
  CHECK(tool->idempotent());
  CHECK(Json(*tool->spec().parameters)["required"] == Json::array({"name"}));
  CHECK_THROWS_AS(agentkit::skill_tool(nullptr), agentkit::ToolDefinitionError);
}
