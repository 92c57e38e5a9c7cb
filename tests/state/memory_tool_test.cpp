// The `memory` file tool: its pinned identity, the six commands on both
// backends (success and every error path), argument validation, path rules,
// the escape corpus against DirectoryFiles, and FileMemory rendering.
#include <agentkit/invoker.h>
#include <agentkit/json.h>
#include <agentkit/state/memory_tool.h>
#include <agentkit/testing/test_context.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using agentkit::Json;
using agentkit::ToolResult;
using namespace agentkit::state;

namespace {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "agentkit-memory-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void spit(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A memory tool over one backend, called through an error boundary the way
// the run loop calls it.
struct Harness {
  explicit Harness(const std::string& backend) {
    if (backend == "directory") {
      dir = std::make_unique<TempDir>();
      root = dir->path() / "root";
      files = std::make_shared<DirectoryFiles>(root);
    } else {
      files = std::make_shared<InMemoryFiles>();
    }
    tool = memory_tool(files);
  }
  explicit Harness(std::shared_ptr<Files> backend) : files(std::move(backend)), tool(memory_tool(files)) {}

  ToolResult call(Json arguments) {
    agentkit::ToolRequest request{.call_id = "call-" + std::to_string(++calls),
                                  .name = "memory",
                                  .arguments = std::move(arguments),
                                  .tool = tool};
    return ctx.invoker->invoke_tool(request, ctx);
  }
  // A call that must succeed; its model-visible text.
  std::string ok(Json arguments) {
    auto result = call(arguments);
    INFO(arguments.dump() << " -> " << result.model_text());
    REQUIRE(result.is_ok());
    return result.model_text();
  }
  // A call that must fail; its model-visible error text.
  std::string error(Json arguments) {
    auto result = call(arguments);
    INFO(arguments.dump() << " -> " << result.model_text());
    REQUIRE(result.status == ToolResult::Status::error);
    return result.text;
  }
  void create(const std::string& path, const std::string& text) {
    ok({{"command", "create"}, {"path", path}, {"file_text", text}});
  }
  std::string content(const std::string& path) { return files->read(MemoryPath::parse(path)); }
  FileKind kind(const std::string& path) { return files->kind(MemoryPath::parse(path)); }

  std::unique_ptr<TempDir> dir;
  fs::path root;
  std::shared_ptr<Files> files;
  agentkit::ToolPtr tool;
  agentkit::RunContext ctx = agentkit::testing::make_test_ctx(
      {.tool_middleware = std::vector<agentkit::Middleware>{agentkit::error_boundary()}});
  int calls = 0;
};

Json view(const std::string& path) { return {{"command", "view"}, {"path", path}}; }
Json view(const std::string& path, long long first, long long last) {
  return {{"command", "view"}, {"path", path}, {"view_range", {first, last}}};
}
Json str_replace(const std::string& path, const std::string& old_str, const std::string& new_str) {
  return {{"command", "str_replace"}, {"path", path}, {"old_str", old_str}, {"new_str", new_str}};
}
Json insert(const std::string& path, long long line, const std::string& text) {
  return {{"command", "insert"}, {"path", path}, {"insert_line", line}, {"insert_text", text}};
}
Json delete_path(const std::string& path) { return {{"command", "delete"}, {"path", path}}; }
Json rename_path(const std::string& from, const std::string& to) {
  return {{"command", "rename"}, {"old_path", from}, {"new_path", to}};
}

const char* const kListingHeader = "Here're the files and directories up to 2 levels deep in ";

}  // namespace

TEST_CASE("the memory tool is advertised as 'memory', side-effecting and not idempotent", "[memory]") {
  auto tool = memory_tool();
  CHECK(tool->name() == "memory");
  CHECK(tool->side_effecting());
  CHECK_FALSE(tool->idempotent());
  CHECK_FALSE(tool->requires_approval());
  REQUIRE(tool->advertised());
  const auto& schema = *tool->spec().parameters;
  CHECK(schema["required"] == agentkit::Schema::array({"command"}));
  CHECK(schema["properties"]["command"]["enum"] ==
        agentkit::Schema::array({"view", "create", "str_replace", "insert", "delete", "rename"}));
  for (const char* field : {"path", "view_range", "file_text", "old_str", "new_str", "insert_line", "insert_text",
                            "old_path", "new_path"}) {
    CAPTURE(field);
    CHECK(schema["properties"].contains(field));
  }
  CHECK_THROWS_AS(memory_tool(nullptr), agentkit::Error);
}

TEST_CASE("view is a read, under the default middleware a view after an edit sees the edit", "[memory]") {
  auto tool = memory_tool();
  CHECK_FALSE(tool->side_effecting_for(view("/memories")));
  CHECK(tool->side_effecting_for(delete_path("/memories/x")));
  CHECK(tool->side_effecting_for(Json::object()));  // unknown: the declaration holds

  agentkit::RunContext ctx = agentkit::testing::make_test_ctx({.autonomy = agentkit::Autonomy::gated});
  const auto call = [&](Json arguments, bool approved) {
    agentkit::ToolRequest request{.call_id = "c", .name = "memory", .arguments = std::move(arguments), .tool = tool};
    if (approved) agentkit::testing::approve(request);
    return ctx.invoker->invoke_tool(request, ctx);
  };
  // Gated autonomy pauses the writes, not the reads.
  CHECK(call(view("/memories"), false).status == ToolResult::Status::ok);
  CHECK(call(Json{{"command", "create"}, {"path", "/memories/a.txt"}, {"file_text", "one\n"}}, false).status ==
        ToolResult::Status::awaiting_approval);
  REQUIRE(call(Json{{"command", "create"}, {"path", "/memories/a.txt"}, {"file_text", "one\n"}}, true).is_ok());
  CHECK_THAT(call(view("/memories/a.txt"), false).model_text(), Catch::Contains("one"));
  REQUIRE(call(str_replace("/memories/a.txt", "one", "two"), true).is_ok());
  const std::string after = call(view("/memories/a.txt"), false).model_text();
  CHECK_THAT(after, Catch::Contains("two"));
  CHECK_THAT(after, !Catch::Contains("one"));
}

TEST_CASE("view lists a directory two levels deep with sizes", "[memory]") {
  const std::string backend = GENERATE(as<std::string>{}, "in-memory", "directory");
  CAPTURE(backend);
  Harness h(backend);
  CHECK(h.ok(view("/memories")) ==
        std::string(kListingHeader) + "/memories, excluding hidden items and node_modules:\n0B\t/memories");
  h.create("/memories/notes.md", "hello\n");
  h.create("/memories/a/b/c.txt", "xyz");
  h.create("/memories/a/d.md", "1234");
  h.create("/memories/.hidden", "not listed");
  h.create("/memories/node_modules/x.js", "not listed");
  const std::string expected = std::string(kListingHeader) +
                               "/memories, excluding hidden items and node_modules:\n"
                               "13B\t/memories\n"
                               "7B\t/memories/a/\n"
                               "3B\t/memories/a/b/\n"
                               "4B\t/memories/a/d.md\n"
                               "6B\t/memories/notes.md";
  CHECK(h.ok(view("/memories")) == expected);
  CHECK(h.ok(view("/memories/")) == expected);  // the trailing slash is normalised away
  CHECK(h.ok(view("/memories/a")) == std::string(kListingHeader) +
                                         "/memories/a, excluding hidden items and node_modules:\n"
                                         "7B\t/memories/a\n"
                                         "3B\t/memories/a/b/\n"
                                         "3B\t/memories/a/b/c.txt\n"
                                         "4B\t/memories/a/d.md");
  h.create("/memories/big.txt", std::string(1536, 'x'));
  CHECK_THAT(h.ok(view("/memories")), Catch::Contains("1.5K\t/memories/big.txt"));
  CHECK(h.error(view("/memories", 1, 2)) ==
        "The `view_range` parameter is not allowed when `path` points to a directory.");
}

TEST_CASE("view shows a file with line numbers and honours view_range", "[memory]") {
  const std::string backend = GENERATE(as<std::string>{}, "in-memory", "directory");
  CAPTURE(backend);
  Harness h(backend);
  h.create("/memories/f.txt", "one\ntwo\nthree\n");
  const std::string head = "Here's the content of /memories/f.txt with line numbers:\n";
  CHECK(h.ok(view("/memories/f.txt")) == head + "     1\tone\n     2\ttwo\n     3\tthree");
  CHECK(h.ok(view("/memories//f.txt")) == head + "     1\tone\n     2\ttwo\n     3\tthree");
  CHECK(h.ok(view("/memories/f.txt", 2, 3)) == head + "     2\ttwo\n     3\tthree");
  CHECK(h.ok(view("/memories/f.txt", 2, -1)) == head + "     2\ttwo\n     3\tthree");
  CHECK(h.ok(view("/memories/f.txt", 1, 1)) == head + "     1\tone");

  CHECK(h.error(view("/memories/f.txt", 0, 2)) ==
        "Invalid `view_range`: [0, 2]. Its first element `0` should be within the range of lines of the file: [1, 3]");
  CHECK(h.error(view("/memories/f.txt", 4, -1)) ==
        "Invalid `view_range`: [4, -1]. Its first element `4` should be within the range of lines of the file: [1, 3]");
  CHECK(h.error(view("/memories/f.txt", 3, 2)) ==
        "Invalid `view_range`: [3, 2]. Its second element `2` should be larger or equal than its first `3`");
  CHECK(h.error(view("/memories/f.txt", 1, 4)) ==
        "Invalid `view_range`: [1, 4]. Its second element `4` should be smaller than the number of lines in the "
        "file: `3`");
  CHECK_THAT(h.error({{"command", "view"}, {"path", "/memories/f.txt"}, {"view_range", {1}}}),
             Catch::Contains("view_range"));
  CHECK_THAT(h.error({{"command", "view"}, {"path", "/memories/f.txt"}, {"view_range", {"1", 2}}}),
             Catch::Contains("view_range[0]: expected integer"));
  CHECK(h.error(view("/memories/nope.md")) ==
        "The path /memories/nope.md does not exist. Please provide a valid path.");

  h.create("/memories/empty.txt", "");
  CHECK(h.ok(view("/memories/empty.txt")) == "Here's the content of /memories/empty.txt with line numbers:\n");
}

TEST_CASE("create makes a new file and its parents but never overwrites", "[memory]") {
  const std::string backend = GENERATE(as<std::string>{}, "in-memory", "directory");
  CAPTURE(backend);
  Harness h(backend);
  CHECK(h.ok({{"command", "create"}, {"path", "/memories/prefs.md"}, {"file_text", "Tone: brief.\n"}}) ==
        "File created successfully at: /memories/prefs.md");
  CHECK(h.content("/memories/prefs.md") == "Tone: brief.\n");
  h.create("/memories/people/ana/notes.md", "Likes crime novels.");
  CHECK(h.kind("/memories/people/ana") == FileKind::directory);
  CHECK(h.content("/memories/people/ana/notes.md") == "Likes crime novels.");
  h.create("/memories/empty.md", "");
  CHECK(h.content("/memories/empty.md").empty());

  CHECK(h.error({{"command", "create"}, {"path", "/memories/prefs.md"}, {"file_text", "other"}}) ==
        "File /memories/prefs.md already exists");
  CHECK(h.content("/memories/prefs.md") == "Tone: brief.\n");
  CHECK(h.error({{"command", "create"}, {"path", "/memories/people"}, {"file_text", "x"}}) ==
        "File /memories/people already exists");
  CHECK(h.error({{"command", "create"}, {"path", "/memories"}, {"file_text", "x"}}) == "File /memories already exists");
  CHECK(h.error({{"command", "create"}, {"path", "/memories/prefs.md/inner.md"}, {"file_text", "x"}}) ==
        "The path /memories/prefs.md is not a directory");
}

TEST_CASE("str_replace replaces exactly one occurrence and shows a snippet", "[memory]") {
  const std::string backend = GENERATE(as<std::string>{}, "in-memory", "directory");
  CAPTURE(backend);
  Harness h(backend);
  h.create("/memories/f.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n");
  CHECK(h.ok(str_replace("/memories/f.txt", "e", "E1\nE2")) ==
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     1\ta\n     2\tb\n     3\tc\n     4\td\n     5\tE1\n     6\tE2\n     7\tf\n     8\tg\n     9\th\n"
        "    10\ti");
  CHECK(h.content("/memories/f.txt") == "a\nb\nc\nd\nE1\nE2\nf\ng\nh\ni\nj\n");

  h.create("/memories/g.txt", "x = 1\ny = 1\nz = 2\n");
  CHECK(h.error(str_replace("/memories/g.txt", "= 1", "= 3")) ==
        "No replacement was performed. Multiple occurrences of old_str `= 1` in lines: 1, 2. Please ensure it is "
        "unique");
  CHECK(h.error(str_replace("/memories/g.txt", "= 9", "= 3")) ==
        "No replacement was performed, old_str `= 9` did not appear verbatim in /memories/g.txt.");
  h.create("/memories/overlap.txt", "aaa");  // "aa" starts at two offsets on one line
  CHECK(h.error(str_replace("/memories/overlap.txt", "aa", "b")) ==
        "No replacement was performed. Multiple occurrences of old_str `aa` in lines: 1. Please ensure it is unique");
  CHECK(h.content("/memories/g.txt") == "x = 1\ny = 1\nz = 2\n");

  CHECK_THAT(h.ok(str_replace("/memories/g.txt", "z = 2\n", "")),
             Catch::StartsWith("The memory file has been edited."));
  CHECK(h.content("/memories/g.txt") == "x = 1\ny = 1\n");
  CHECK(h.error(str_replace("/memories/g.txt", "", "x")) == "old_str must not be empty; use insert to add text");
  CHECK(h.error(str_replace("/memories/missing.txt", "a", "b")) ==
        "The path /memories/missing.txt does not exist. Please provide a valid path.");
  h.create("/memories/dir/x.txt", "a");
  CHECK(h.error(str_replace("/memories/dir", "a", "b")) == "The path /memories/dir is a directory, not a file");
}

TEST_CASE("insert adds lines after insert_line, from the top to the end", "[memory]") {
  const std::string backend = GENERATE(as<std::string>{}, "in-memory", "directory");
  CAPTURE(backend);
  Harness h(backend);
  h.create("/memories/f.txt", "one\ntwo\n");
  CHECK(h.ok(insert("/memories/f.txt", 0, "zero")) == "The file /memories/f.txt has been edited.");
  CHECK(h.content("/memories/f.txt") == "zero\none\ntwo\n");
  h.ok(insert("/memories/f.txt", 3, "three\n"));  // at the end; a trailing newline is not doubled
  CHECK(h.content("/memories/f.txt") == "zero\none\ntwo\nthree\n");
  h.ok(insert("/memories/f.txt", 2, "1.5a\n1.5b"));
  CHECK(h.content("/memories/f.txt") == "zero\none\n1.5a\n1.5b\ntwo\nthree\n");

  CHECK(h.error(insert("/memories/f.txt", 7, "x")) ==
        "Invalid `insert_line` parameter: 7. It should be within the range of lines of the file: [0, 6]");
  CHECK(h.error(insert("/memories/f.txt", -1, "x")) ==
        "Invalid `insert_line` parameter: -1. It should be within the range of lines of the file: [0, 6]");
  CHECK(h.content("/memories/f.txt") == "zero\none\n1.5a\n1.5b\ntwo\nthree\n");

  h.create("/memories/open.txt", "a\nb");  // no final newline
  h.ok(insert("/memories/open.txt", 2, "c"));
  CHECK(h.content("/memories/open.txt") == "a\nb\nc\n");
  h.create("/memories/empty.txt", "");
  h.ok(insert("/memories/empty.txt", 0, "first"));
  CHECK(h.content("/memories/empty.txt") == "first\n");

  CHECK(h.error(insert("/memories/missing.txt", 0, "x")) ==
        "The path /memories/missing.txt does not exist. Please provide a valid path.");
  CHECK_THAT(h.error({{"command", "insert"}, {"path", "/memories/f.txt"}, {"insert_line", "2"}, {"insert_text", "x"}}),
             Catch::Contains("insert_line: expected integer"));
}

TEST_CASE("delete removes a file or a whole directory, never the root", "[memory]") {
  const std::string backend = GENERATE(as<std::string>{}, "in-memory", "directory");
  CAPTURE(backend);
  Harness h(backend);
  h.create("/memories/f.txt", "x");
  h.create("/memories/dir/a.txt", "a");
  h.create("/memories/dir/sub/b.txt", "b");
  h.create("/memories/dir2/c.txt", "c");  // a sibling sharing the prefix "dir"
  CHECK(h.ok(delete_path("/memories/f.txt")) == "Successfully deleted /memories/f.txt");
  CHECK(h.kind("/memories/f.txt") == FileKind::none);
  CHECK(h.ok(delete_path("/memories/dir")) == "Successfully deleted /memories/dir");
  CHECK(h.kind("/memories/dir") == FileKind::none);
  CHECK(h.kind("/memories/dir/sub/b.txt") == FileKind::none);
  CHECK(h.content("/memories/dir2/c.txt") == "c");

  CHECK(h.error(delete_path("/memories/f.txt")) == "The path /memories/f.txt does not exist");
  CHECK(h.error(delete_path("/memories")) == "Cannot delete the /memories directory itself");
  CHECK(h.error(delete_path("/memories/")) == "Cannot delete the /memories directory itself");
  CHECK(h.kind("/memories/dir2") == FileKind::directory);
}

TEST_CASE("rename moves files and directories and never overwrites", "[memory]") {
  const std::string backend = GENERATE(as<std::string>{}, "in-memory", "directory");
  CAPTURE(backend);
  Harness h(backend);
  h.create("/memories/a.txt", "A");
  h.create("/memories/b.txt", "B");
  h.create("/memories/people/ana.md", "Ana");
  h.create("/memories/people/team/bo.md", "Bo");

  CHECK(h.ok(rename_path("/memories/a.txt", "/memories/archive/2024/a.txt")) ==
        "Successfully renamed /memories/a.txt to /memories/archive/2024/a.txt");
  CHECK(h.kind("/memories/a.txt") == FileKind::none);
  CHECK(h.content("/memories/archive/2024/a.txt") == "A");

  CHECK(h.ok(rename_path("/memories/people", "/memories/contacts")) ==
        "Successfully renamed /memories/people to /memories/contacts");
  CHECK(h.kind("/memories/people") == FileKind::none);
  CHECK(h.content("/memories/contacts/ana.md") == "Ana");
  CHECK(h.content("/memories/contacts/team/bo.md") == "Bo");

  CHECK(h.error(rename_path("/memories/b.txt", "/memories/contacts/ana.md")) ==
        "The destination /memories/contacts/ana.md already exists");
  CHECK(h.content("/memories/contacts/ana.md") == "Ana");
  CHECK(h.content("/memories/b.txt") == "B");
  CHECK(h.error(rename_path("/memories/b.txt", "/memories/contacts")) ==
        "The destination /memories/contacts already exists");
  CHECK(h.error(rename_path("/memories/nope.txt", "/memories/c.txt")) == "The path /memories/nope.txt does not exist");
  CHECK(h.error(rename_path("/memories/contacts", "/memories/contacts/team/inner")) ==
        "Cannot move /memories/contacts into itself (/memories/contacts/team/inner)");
  CHECK(h.error(rename_path("/memories", "/memories/x")) == "Cannot rename the /memories directory itself");
  CHECK(h.error(rename_path("/memories/b.txt", "/memories")) == "The destination /memories already exists");
  CHECK(h.error(rename_path("/memories/b.txt", "/memories/b.txt/c")) ==
        "Cannot move /memories/b.txt into itself (/memories/b.txt/c)");
  CHECK(h.content("/memories/b.txt") == "B");
}

TEST_CASE("bad arguments are rejected with every problem named", "[memory]") {
  Harness h("in-memory");
  CHECK(h.error({{"path", "/memories"}}) ==
        "tool 'memory' call rejected: missing required argument(s) ['command']. Accepted arguments: ['command', "
        "'path', 'view_range', 'file_text', 'old_str', 'new_str', 'insert_line', 'insert_text', 'old_path', "
        "'new_path']");
  CHECK_THAT(h.error({{"command", "write"}, {"path", "/memories/x"}}),
             Catch::Contains("command: expected one of ['view', 'create', 'str_replace', "
                             "'insert', 'delete', 'rename'], got 'write'"));
  CHECK(h.error({{"command", "view"}}) ==
        "tool 'memory' call rejected: missing required argument(s) ['path']. Accepted arguments: ['command', 'path', "
        "'view_range']");
  CHECK(h.error({{"command", "view"}, {"path", "/memories"}, {"file_text", "x"}}) ==
        "tool 'memory' call rejected: unexpected argument(s) ['file_text']. Accepted arguments: ['command', 'path', "
        "'view_range']");
  CHECK(h.error({{"command", "create"}, {"path", 5}, {"colour", "red"}}) ==
        "tool 'memory' call rejected: missing required argument(s) ['file_text']; unexpected argument(s) ['colour']; "
        "invalid argument(s): path: expected string, got integer 5. Accepted arguments: ['command', 'path', "
        "'file_text']");
  CHECK(h.error({{"command", "rename"}, {"old_path", "/memories/a"}}) ==
        "tool 'memory' call rejected: missing required argument(s) ['new_path']. Accepted arguments: ['command', "
        "'old_path', 'new_path']");
  CHECK(h.error({{"command", "str_replace"}, {"path", "/memories/a"}, {"old_str", "x"}}) ==
        "tool 'memory' call rejected: missing required argument(s) ['new_str']. Accepted arguments: ['command', "
        "'path', 'old_str', 'new_str']");
  CHECK_THAT(h.error(Json::array({"view", "/memories"})), Catch::Contains("expected a JSON object, got array"));
  // Null counts as absent, so a strict-mode provider's nulls for unused fields pass.
  CHECK_THAT(h.ok({{"command", "view"}, {"path", "/memories"}, {"file_text", nullptr}, {"view_range", nullptr}}),
             Catch::StartsWith(kListingHeader));
  CHECK(h.error({{"command", "create"}, {"path", "/memories/x"}, {"file_text", nullptr}}) ==
        "tool 'memory' call rejected: missing required argument(s) ['file_text']. Accepted arguments: ['command', "
        "'path', 'file_text']");
}

TEST_CASE("memory paths are normalised by one set of rules", "[memory][path]") {
  CHECK(MemoryPath::parse("/memories").is_root());
  CHECK(MemoryPath::parse("/memories/").is_root());
  CHECK(MemoryPath::parse("/memories//a///b/").str() == "/memories/a/b");
  CHECK(MemoryPath::parse("/memories/a/b").segments() == std::vector<std::string>{"a", "b"});
  CHECK(MemoryPath::parse("/memories/a/b").parent().str() == "/memories/a");
  CHECK(MemoryPath::parse("/memories/a").parent().is_root());
  CHECK(MemoryPath::parse("/memories/a/b").name() == "b");
  CHECK(MemoryPath::root().child("x").str() == "/memories/x");
  CHECK(MemoryPath::parse("/memories/a").contains(MemoryPath::parse("/memories/a/b")));
  CHECK_FALSE(MemoryPath::parse("/memories/a").contains(MemoryPath::parse("/memories/ab")));
  // Literal names: nothing is decoded or folded.
  for (const char* literal : {"/memories/%2e%2e/x", "/memories/~/x", "/memories/\u2024\u2024/x",
                              "/memories/\uff0e\uff0e/x", "/memories/.../x", "/memories/ ../x"}) {
    CAPTURE(literal);
    CHECK(MemoryPath::parse(literal).str() == literal);
  }
  CHECK(MemoryPath::parse("/memories/" + std::string(255, 'n')).segments().back().size() == 255);

  const std::vector<std::pair<std::string, std::string>> refused = {
      {"/etc/passwd", "memory paths start with /memories"},
      {"memories/x", "memory paths start with /memories"},
      {"/memoriesx/a", "memory paths start with /memories"},
      {"~/x", "memory paths start with /memories"},
      {"", "memory paths start with /memories"},
      {"/memories/../etc/passwd", "'.' and '..' segments are not allowed"},
      {"/memories/./a", "'.' and '..' segments are not allowed"},
      {"/memories/a/..", "'.' and '..' segments are not allowed"},
      {"/memories\\a", "backslashes are not allowed"},
      {std::string("/memories/a\0b", 13), "NUL or control character"},
      {"/memories/a\tb", "NUL or control character"},
      {"/memories/\xc0\xae", "not valid UTF-8"},
      {"/memories/" + std::string(256, 'n'), "a name is 256 bytes long, the limit is 255"},
      {"/memories/" + std::string(2000, 'a'), "bytes long, the limit is 1024"},
  };
  for (const auto& [text, reason] : refused) {
    CAPTURE(Json(text).dump(-1, ' ', true, Json::error_handler_t::replace));
    try {
      (void)MemoryPath::parse(text);
      FAIL("accepted");
    } catch (const MemoryError& e) {
      CHECK_THAT(e.what(), Catch::Contains(reason));
      CHECK_THAT(e.what(), Catch::StartsWith("The path "));
      CHECK(agentkit::is_valid_utf8(e.what()));
      CHECK(std::string(e.what()).find('\0') == std::string::npos);
      REQUIRE(e.invalid().size() == 1);
      CHECK(e.invalid()[0].name == "path");
    }
  }
  CHECK_THROWS_AS(MemoryPath::root().child("a/b"), MemoryError);
  CHECK_THROWS_AS(MemoryPath::root().child(".."), MemoryError);
  CHECK_THROWS_AS(MemoryPath::root().child(""), MemoryError);
}

namespace {

enum class Hostile {
  lexical,  // refused by the path rules, on every backend
  link,     // refused on disk because of what sits at the path
  literal,  // an ordinary name inside the tree; may be accepted, must not escape
};

struct CorpusEntry {
  std::string path;
  Hostile kind;
};

// The on-disk stage: a memory root with planted links next to a sentinel
// directory that nothing may touch or reveal.
struct Stage {
  TempDir base;
  fs::path root = base.path() / "root";
  fs::path sentinel = base.path() / "sentinel";
  static constexpr const char* kSecret = "SENTINEL-SECRET-CONTENT";

  Stage() {
    fs::create_directories(sentinel / "sub");
    spit(sentinel / "secret.txt", std::string(kSecret) + "\n");
    spit(sentinel / "sub" / "deep.txt", std::string(kSecret) + " deep\n");
    plant();
  }

  // (Re)creates the root with its planted links, so each call meets them.
  void plant() {
    // Empties the root in place (the backend holds it open); links are
    // removed, never followed.
    fs::create_directories(root);
    for (const auto& entry : fs::directory_iterator(root)) fs::remove_all(entry.path());
    fs::create_directories(root / "sub");
    spit(root / "bait.txt", "bait\n");
    spit(root / "sub" / "note.txt", "note\n");
    fs::create_directory_symlink(sentinel, root / "link_dir");
    fs::create_directory_symlink("../sentinel", root / "rel_link_dir");
    fs::create_symlink("../sentinel/secret.txt", root / "link_file");
    fs::create_directory_symlink("../../sentinel", root / "sub" / "out");
    fs::create_directory_symlink("../..", root / "sub" / "up");
    fs::create_symlink("../sentinel/created_through_link.txt", root / "dangling");
    fs::create_symlink("../sentinel/new_dir", root / "dangling_dir");
    fs::create_hard_link(sentinel / "secret.txt", root / "hard");
  }

  // Everything observable outside the root: names, kinds, contents, mtimes.
  std::map<std::string, std::string> outside() const {
    std::map<std::string, std::string> seen;
    for (const auto& entry : fs::directory_iterator(base.path())) {
      if (entry.path() != root) seen[entry.path().filename().string()] = "entry";
    }
    for (const auto& entry : fs::recursive_directory_iterator(sentinel)) {
      struct stat st {};
      REQUIRE(::lstat(entry.path().c_str(), &st) == 0);
      std::string state = std::to_string(st.st_mode) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
                          std::to_string(st.st_mtim.tv_nsec);
      if (entry.is_regular_file()) state += ":" + slurp(entry.path());
      seen[fs::relative(entry.path(), base.path()).string()] = state;
    }
    return seen;
  }
};

std::vector<CorpusEntry> corpus(const Stage& stage) {
  const std::string secret_abs = (stage.sentinel / "secret.txt").string();
  std::string long_path = "/memories";
  while (long_path.size() < 5000) long_path += "/abcd";
  return {
      {"/memories/../sentinel/secret.txt", Hostile::lexical},
      {"/memories/../etc/passwd", Hostile::lexical},
      {secret_abs, Hostile::lexical},
      {"memories/x", Hostile::lexical},
      {"/memories/a/../../x", Hostile::lexical},
      {"/memories/./../x", Hostile::lexical},
      {"/memories/..", Hostile::lexical},
      {"/memories/sub/..", Hostile::lexical},
      {"/memories/sub/../../sentinel/secret.txt", Hostile::lexical},
      {"/memories/sub/note.txt/../../../sentinel", Hostile::lexical},
      {"/memories/~/../../sentinel", Hostile::lexical},
      {"../sentinel/secret.txt", Hostile::lexical},
      {"~/../sentinel", Hostile::lexical},
      {"//memories/../sentinel", Hostile::lexical},
      {"/memoriesX/../sentinel", Hostile::lexical},
      {"file:///memories/x", Hostile::lexical},
      {"", Hostile::lexical},
      {"/", Hostile::lexical},
      {std::string("/memories/x\0/../../sentinel", 27), Hostile::lexical},
      {"/memories/\x01ctl", Hostile::lexical},
      {"/memories/\xc0\xae\xc0\xae/sentinel", Hostile::lexical},
      {"/memories/" + std::string(300, 'a'), Hostile::lexical},
      {long_path, Hostile::lexical},
      {"/memories\\..\\sentinel\\secret.txt", Hostile::lexical},
      {"/memories/..\\sentinel", Hostile::lexical},
      {"\\memories\\x", Hostile::lexical},
      {"C:\\Windows\\system32", Hostile::lexical},
      {"/memories/link_dir/secret.txt", Hostile::link},
      {"/memories/link_dir", Hostile::link},
      {"/memories/rel_link_dir/sub/deep.txt", Hostile::link},
      {"/memories/link_file", Hostile::link},
      {"/memories/sub/out/secret.txt", Hostile::link},
      {"/memories/sub/out", Hostile::link},
      {"/memories/sub/out/", Hostile::link},
      {"/memories/sub/up/sentinel/secret.txt", Hostile::link},
      {"/memories/dangling", Hostile::link},
      {"/memories/dangling_dir/x.txt", Hostile::link},
      {"/memories/hard", Hostile::literal},  // a hard link: never read, only its own entry may move
      {"/memories/%2e%2e/sentinel/secret.txt", Hostile::literal},
      {"/memories/%2e%2e%2fsentinel%2fsecret.txt", Hostile::literal},
      {"/memories/..%2f..%2fsentinel", Hostile::literal},
      {"/memories/\u2024\u2024/sentinel", Hostile::literal},
      {"/memories/\uff0e\uff0e/sentinel", Hostile::literal},
      {"/memories/\u202e../x", Hostile::literal},
      {"/memories/.../x", Hostile::literal},
      {"/memories/" + secret_abs, Hostile::literal},
  };
}

// Every command that takes a path, with the hostile path in that slot.
std::vector<std::pair<std::string, Json>> calls_with(const std::string& path) {
  return {
      {"view", view(path)},
      {"create", {{"command", "create"}, {"path", path}, {"file_text", "PWNED"}}},
      {"str_replace", str_replace(path, "SENTINEL", "PWNED")},
      {"insert", insert(path, 0, "PWNED")},
      {"delete", delete_path(path)},
      {"rename old_path", rename_path(path, "/memories/stolen.txt")},
      {"rename new_path", rename_path("/memories/bait.txt", path)},
  };
}

std::string printable(const std::string& text) {
  return Json(text.substr(0, 80)).dump(-1, ' ', true, Json::error_handler_t::replace);
}

}  // namespace

TEST_CASE("escape corpus: no hostile path reaches outside the directory root", "[memory][escape]") {
  Stage stage;
  auto files = std::make_shared<DirectoryFiles>(stage.root);
  auto tool = memory_tool(files);
  auto ctx = agentkit::testing::make_test_ctx(
      {.tool_middleware = std::vector<agentkit::Middleware>{agentkit::error_boundary()}});
  auto before = stage.outside();
  const auto entries = corpus(stage);
  REQUIRE(entries.size() >= 30);

  std::size_t commands = 0;
  std::size_t escapes = 0;
  std::vector<std::string> problems;
  int n = 0;
  for (const auto& entry : entries) {
    const auto calls = calls_with(entry.path);
    commands = calls.size();
    for (const auto& [command, arguments] : calls) {
      stage.plant();
      auto result = ctx.invoker->invoke_tool(
          {.call_id = "c" + std::to_string(++n), .name = "memory", .arguments = arguments, .tool = tool}, ctx);
      const std::string where = command + " " + printable(entry.path);
      const bool leaked = result.model_text().find(Stage::kSecret) != std::string::npos;
      const bool touched = stage.outside() != before;
      if (leaked || touched) {
        ++escapes;
        problems.push_back("ESCAPE " + where + ": " + (leaked ? "outside content returned" : "outside changed"));
        fs::remove_all(stage.sentinel);  // restore, so one escape is not counted again
        fs::create_directories(stage.sentinel / "sub");
        spit(stage.sentinel / "secret.txt", std::string(Stage::kSecret) + "\n");
        spit(stage.sentinel / "sub" / "deep.txt", std::string(Stage::kSecret) + " deep\n");
        before = stage.outside();
      }
      if (entry.kind != Hostile::literal && result.is_ok()) {
        problems.push_back("accepted " + where + ": " + result.model_text());
      }
      if (!result.is_ok() && result.text.rfind("Tool failed", 0) == 0) {
        problems.push_back("not a clear refusal " + where + ": " + result.text);
      }
      if (!agentkit::is_valid_utf8(result.model_text())) problems.push_back("invalid UTF-8 in reply " + where);
      if (result.model_text().find(stage.base.path().string()) != std::string::npos) {
        if (entry.path.find(stage.base.path().string()) == std::string::npos) {
          problems.push_back("host path revealed " + where);
        }
      }
    }
  }
  std::cout << "escape corpus: " << entries.size() << " paths x " << commands << " commands, " << escapes
            << " escapes\n";
  for (const auto& problem : problems) UNSCOPED_INFO(problem);
  CHECK(problems.empty());
  REQUIRE(escapes == 0);
}

TEST_CASE("the path rules refuse the same corpus on the in-memory backend", "[memory][escape]") {
  Stage stage;  // only for its paths
  Harness h("in-memory");
  h.create("/memories/bait.txt", "bait\n");
  for (const auto& entry : corpus(stage)) {
    if (entry.kind != Hostile::lexical) continue;
    for (const auto& [command, arguments] : calls_with(entry.path)) {
      CAPTURE(command, printable(entry.path));
      auto result = h.call(arguments);
      CHECK(result.status == ToolResult::Status::error);
      CHECK_THAT(result.text,
                 Catch::Contains(" is not allowed: ") || Catch::Contains("path: string is not valid UTF-8"));
    }
  }
  CHECK(h.content("/memories/bait.txt") == "bait\n");
}

TEST_CASE("a directory swapped for a link between calls is refused", "[memory][escape]") {
  Stage stage;
  Harness h(std::make_shared<DirectoryFiles>(stage.root));
  h.create("/memories/d/x.txt", "mine\n");
  CHECK(h.ok(view("/memories/d/x.txt")) == "Here's the content of /memories/d/x.txt with line numbers:\n     1\tmine");
  const auto before = stage.outside();

  fs::rename(stage.root / "d", stage.root / "d_old");
  fs::create_directory_symlink(stage.sentinel, stage.root / "d");
  spit(stage.sentinel / "x.txt", std::string(Stage::kSecret) + "\n");
  const auto planted = stage.outside();
  for (const Json& call : std::vector<Json>{
           view("/memories/d/x.txt"), view("/memories/d"), str_replace("/memories/d/x.txt", "S", "P"),
           insert("/memories/d/x.txt", 0, "P"), delete_path("/memories/d/x.txt"), delete_path("/memories/d"),
           Json{{"command", "create"}, {"path", "/memories/d/new.txt"}, {"file_text", "P"}},
           rename_path("/memories/d/x.txt", "/memories/y.txt"), rename_path("/memories/d_old", "/memories/d/in")}) {
    CAPTURE(call.dump());
    CHECK_THAT(h.error(call), Catch::Contains("is a symbolic link; links are not followed"));
  }
  CHECK(stage.outside() == planted);
  CHECK(before.size() + 1 == planted.size());
  CHECK(slurp(stage.root / "d_old" / "x.txt") == "mine\n");
}

TEST_CASE("DirectoryFiles: links inside a deleted directory are unlinked, not followed", "[memory][escape]") {
  Stage stage;
  Harness h(std::make_shared<DirectoryFiles>(stage.root));
  h.create("/memories/box/keep.txt", "k");
  fs::create_directory_symlink(stage.sentinel, stage.root / "box" / "to_sentinel");
  fs::create_symlink(stage.sentinel / "secret.txt", stage.root / "box" / "to_secret");
  const auto before = stage.outside();
  CHECK(h.ok(view("/memories/box")) == std::string(kListingHeader) +
                                           "/memories/box, excluding hidden items and node_modules:\n"
                                           "1B\t/memories/box\n1B\t/memories/box/keep.txt");
  CHECK(h.ok(delete_path("/memories/box")) == "Successfully deleted /memories/box");
  CHECK_FALSE(fs::exists(fs::symlink_status(stage.root / "box")));
  CHECK(stage.outside() == before);
  CHECK_THAT(h.error(view("/memories/hard")), Catch::Contains("has other hard links"));
}

TEST_CASE("DirectoryFiles keeps its notes on disk across instances", "[memory]") {
  TempDir dir;
  {
    Harness h(std::make_shared<DirectoryFiles>(dir.path() / "m"));
    h.create("/memories/prefs.md", "Tone: brief.\n");
    h.ok(insert("/memories/prefs.md", 1, "Prices: with tax."));
  }
  CHECK(slurp(dir.path() / "m" / "prefs.md") == "Tone: brief.\nPrices: with tax.\n");
  DirectoryFiles again(dir.path() / "m");
  CHECK(again.read(MemoryPath::parse("/memories/prefs.md")) == "Tone: brief.\nPrices: with tax.\n");
  const auto listing = again.list(MemoryPath::root());
  REQUIRE(listing.size() == 1);  // no temporary files left behind
  CHECK(listing[0].name == "prefs.md");
  CHECK(listing[0].size == 31);
}

TEST_CASE("concurrent edits through one backend are not lost", "[memory]") {
  const std::string backend = GENERATE(as<std::string>{}, "in-memory", "directory");
  CAPTURE(backend);
  Harness h(backend);
  h.create("/memories/log.txt", "");
  constexpr int kThreads = 4;
  constexpr int kEach = 10;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto ctx = agentkit::testing::make_test_ctx(
          {.tool_middleware = std::vector<agentkit::Middleware>{agentkit::error_boundary()}});
      for (int i = 0; i < kEach; ++i) {
        auto result = ctx.invoker->invoke_tool({.call_id = std::to_string(t) + "-" + std::to_string(i),
                                                .name = "memory",
                                                .arguments = insert("/memories/log.txt", 0, "t" + std::to_string(t)),
                                                .tool = h.tool},
                                               ctx);
        if (!result.is_ok()) ++failures[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(failures == std::vector<int>(kThreads, 0));
  const std::string log = h.content("/memories/log.txt");
  CHECK(std::count(log.begin(), log.end(), '\n') == kThreads * kEach);
}

TEST_CASE("FileMemory renders the tree in a stable order within a size cap", "[memory][render]") {
  const std::string backend = GENERATE(as<std::string>{}, "in-memory", "directory");
  CAPTURE(backend);
  Harness h(backend);
  FileMemory notes(h.files);
  CHECK(notes.render().empty());

  h.create("/memories/zeta.md", std::string(99, 'z') + "\n");
  h.create("/memories/alpha.md", "first");
  h.create("/memories/mid/note.md", "middle\n");
  h.create("/memories/.secret", "hidden\n");
  const std::string full = std::string("Memory files under /memories:\n") +
                           "--- /memories/alpha.md (5 bytes)\nfirst\n"
                           "--- /memories/mid/note.md (7 bytes)\nmiddle\n"
                           "--- /memories/zeta.md (100 bytes)\n" +
                           std::string(99, 'z') + "\n";
  CHECK(notes.render() == full);
  CHECK(notes.render(full.size()) == full);

  CHECK(notes.render(full.size() - 1) != full);
  const std::string cut = notes.render(200);
  CHECK(cut.size() <= 200);
  CHECK_THAT(cut, Catch::StartsWith("Memory files under /memories:\n--- /memories/alpha.md (5 bytes)\nfirst\n"));
  CHECK_THAT(cut, Catch::Contains("--- /memories/mid/note.md (7 bytes)\nmidd\n[truncated"));
  CHECK_THAT(cut, Catch::EndsWith("[truncated: 1 of 3 files shown in full; view /memories with the memory tool for "
                                  "the rest]\n"));
  for (std::size_t cap : {0, 1, 10, 40, 90, 120, 150}) {
    CAPTURE(cap);
    const std::string text = notes.render(cap);
    CHECK(text.size() <= cap);
    CHECK(agentkit::is_valid_utf8(text));
  }
}

TEST_CASE("FileMemory never splits a UTF-8 character when it truncates", "[memory][render]") {
  auto files = std::make_shared<InMemoryFiles>();
  files->write(MemoryPath::parse("/memories/a.md"), std::string(40, 'a'));
  std::string accents;
  for (int i = 0; i < 200; ++i) accents += "\xc3\xa9";  // é
  files->write(MemoryPath::parse("/memories/b.md"), accents);
  FileMemory notes(files);
  for (std::size_t cap = 130; cap < 300; ++cap) {
    CAPTURE(cap);
    const std::string text = notes.render(cap);
    CHECK(text.size() <= cap);
    CHECK(agentkit::is_valid_utf8(text));
    CHECK_THAT(text, Catch::EndsWith("for the rest]\n"));
  }
  CHECK_THROWS_AS(FileMemory(nullptr), agentkit::Error);
}
