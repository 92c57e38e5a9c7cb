// The `memory` tool: argument decoding per command and the six commands'
// behaviour and wording (Anthropic's memory tool contract).
#include <agentkit/schema.h>
#include <agentkit/state/memory_tool.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "memory_internal.h"

namespace agentkit::state {
namespace {
enum class Command { view, create, str_replace, insert, remove, rename };
}  // namespace
}  // namespace agentkit::state

template <>
struct agentkit::Describe<agentkit::state::Command> {
  using C = agentkit::state::Command;
  static constexpr std::string_view name = "Command";
  static constexpr auto values = agentkit::enum_values<C>({{C::view, "view"},
                                                           {C::create, "create"},
                                                           {C::str_replace, "str_replace"},
                                                           {C::insert, "insert"},
                                                           {C::remove, "delete"},
                                                           {C::rename, "rename"}});
};

namespace agentkit::state {

using namespace memory_detail;

namespace {

constexpr std::size_t kMaxViewLines = 999'999;
constexpr std::size_t kSnippetContext = 4;
constexpr std::size_t kEchoBytes = 200;

// ---------------------------------------------------------------- arguments

struct Call {
  Command command = Command::view;
  std::string path, file_text, old_str, new_str, insert_text, old_path, new_path;
  std::optional<std::array<long long, 2>> view_range;
  long long insert_line = 0;
};

struct CommandFields {
  Command command;
  std::vector<std::string_view> required;
  std::vector<std::string_view> optional;
};

const std::array<CommandFields, 6> kCommands = {{
    {Command::view, {"path"}, {"view_range"}},
    {Command::create, {"path", "file_text"}, {}},
    {Command::str_replace, {"path", "old_str", "new_str"}, {}},
    {Command::insert, {"path", "insert_line", "insert_text"}, {}},
    {Command::remove, {"path"}, {}},
    {Command::rename, {"old_path", "new_path"}, {}},
}};

const std::array<std::pair<std::string_view, std::string Call::*>, 7> kStringFields = {{
    {"path", &Call::path},
    {"file_text", &Call::file_text},
    {"old_str", &Call::old_str},
    {"new_str", &Call::new_str},
    {"insert_text", &Call::insert_text},
    {"old_path", &Call::old_path},
    {"new_path", &Call::new_path},
}};

bool uses(const CommandFields& fields, std::string_view name) {
  const auto has = [&](const auto& list) { return std::find(list.begin(), list.end(), name) != list.end(); };
  return has(fields.required) || has(fields.optional);
}

bool is_known_field(std::string_view name) {
  return std::any_of(kCommands.begin(), kCommands.end(), [&](const auto& c) { return uses(c, name); });
}

// "command" plus the fields of `fields`, or of every command when unknown.
std::vector<std::string> accepted(const CommandFields* fields) {
  std::vector<std::string> names{"command"};
  for (const auto& c : kCommands) {
    if (fields && c.command != fields->command) continue;
    for (const auto& list : {c.required, c.optional}) {
      for (auto name : list) {
        if (std::find(names.begin(), names.end(), name) == names.end()) names.emplace_back(name);
      }
    }
  }
  return names;
}

void decode_field(std::string_view name, const Json& value, Call& call, DecodeState& st) {
  DecodeState::Scope scope(st, name);
  if (name == "view_range") {
    std::array<long long, 2> range{};
    if (Codec<std::array<long long, 2>>::decode(value, range, st)) call.view_range = range;
  } else if (name == "insert_line") {
    Codec<long long>::decode(value, call.insert_line, st);
  } else {
    for (const auto& [field, member] : kStringFields) {
      if (field == name) Codec<std::string>::decode(value, call.*member, st);
    }
  }
}

// Validates the whole call at once; null counts as absent.
Call decode(const Json& arguments) {
  if (!arguments.is_object()) {
    throw ToolArgumentError("memory", {}, {},
                            {{"(arguments)", "expected a JSON object, got " + std::string(json_type_name(arguments)) +
                                                 " " + preview(arguments)}},
                            accepted(nullptr));
  }
  DecodeState st;
  Call call;
  const CommandFields* fields = nullptr;
  auto command = arguments.find("command");
  if (command == arguments.end() || command->is_null()) {
    st.report_missing("command");
  } else {
    DecodeState::Scope scope(st, "command");
    if (Codec<Command>::decode(*command, call.command, st)) fields = &kCommands[static_cast<std::size_t>(call.command)];
  }
  for (const auto& [key, value] : arguments.items()) {
    if (key == "command" || value.is_null()) continue;
    if (!is_known_field(key) || (fields && !uses(*fields, key))) {
      st.report_unexpected(key);
    } else if (fields) {
      decode_field(key, value, call, st);
    }
  }
  if (fields) {
    for (auto name : fields->required) {
      auto it = arguments.find(name);
      if (it == arguments.end() || it->is_null()) st.report_missing(name);
    }
  }
  if (!st.ok()) {
    throw ToolArgumentError("memory", std::move(st.missing), std::move(st.unexpected), std::move(st.invalid),
                            accepted(fields));
  }
  return call;
}

Schema parameters_schema() {
  const auto text = [](std::string_view description) {
    return Schema{{"type", "string"}, {"description", description}};
  };
  Schema command = schema_of<Command>();
  command["description"] = "The operation to run. Each command takes only its own fields.";
  Schema view_range = schema_of<std::array<long long, 2>>();
  view_range["description"] =
      "view on a file only: [first, last] line numbers, 1-based and inclusive; last -1 means to the end.";
  Schema insert_line = schema_of<long long>();
  insert_line["minimum"] = 0;
  insert_line["description"] = "insert: the line after which the text goes; 0 inserts before the first line.";
  Schema properties = Schema::object();
  properties["command"] = std::move(command);
  properties["path"] =
      text("view, create, str_replace, insert, delete: a path under /memories, e.g. /memories/notes.md.");
  properties["view_range"] = std::move(view_range);
  properties["file_text"] = text("create: the content of the new file.");
  properties["old_str"] = text("str_replace: the exact text to replace; it must occur exactly once in the file.");
  properties["new_str"] = text("str_replace: the replacement text (may be empty).");
  properties["insert_line"] = std::move(insert_line);
  properties["insert_text"] = text("insert: the text to insert as new line(s).");
  properties["old_path"] = text("rename: the file or directory to move.");
  properties["new_path"] = text("rename: its new path; it must not exist yet.");
  return Schema{{"type", "object"}, {"properties", std::move(properties)}, {"required", {"command"}}};
}

constexpr std::string_view kDescription =
    "Persistent memory: a directory of notes under /memories that you manage yourself and that survives across "
    "conversations. Check it before starting a task and record progress and lessons as you go. One call runs one "
    "command:\n"
    "- view: list a directory (two levels deep, with sizes) or show a file with line numbers; view_range picks "
    "lines.\n"
    "- create: create a new file with file_text (missing parent directories are created; an existing file is "
    "not overwritten).\n"
    "- str_replace: replace old_str, which must occur exactly once, with new_str.\n"
    "- insert: insert insert_text as new lines after line insert_line (0 = at the top).\n"
    "- delete: delete a file, or a directory with everything in it.\n"
    "- rename: move or rename old_path to new_path (new_path must not exist).\n"
    "Every path starts with /memories.";

// ---------------------------------------------------------------- text

// Lines split on "\n"; a final newline ends the last line.
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const auto end = text.find('\n');
    lines.push_back(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
  }
  return lines;
}

// Lines [first, last) numbered from first + 1, right-aligned in six columns.
std::string numbered(const std::vector<std::string_view>& lines, std::size_t first, std::size_t last) {
  std::string out;
  for (std::size_t i = first; i < last; ++i) {
    std::string number = std::to_string(i + 1);
    if (i > first) out += '\n';
    out.append(number.size() < 6 ? 6 - number.size() : 0, ' ');
    out += number + '\t';
    out += lines[i];
  }
  return out;
}

std::string human_size(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + "B";
  const char* units[] = {"K", "M", "G", "T"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  for (value /= 1024; value >= 1024 && unit < 3; value /= 1024) ++unit;
  char buf[32];
  std::snprintf(buf, sizeof buf, value == static_cast<double>(static_cast<std::uint64_t>(value)) ? "%.0f%s" : "%.1f%s",
                value, units[unit]);
  return buf;
}

std::string echo(std::string_view text) {
  std::string_view cut = utf8_prefix(text, kEchoBytes);
  return std::string(cut) + (cut.size() < text.size() ? "..." : "");
}

bool hidden(std::string_view name) { return name.starts_with('.') || name == "node_modules"; }

// ---------------------------------------------------------------- commands

struct Node {
  MemoryPath path;
  FileKind kind;
  std::uint64_t size;  // a directory: the bytes of every visible file below it
  std::vector<Node> children;
};

Node load(const Files& files, const MemoryPath& dir) {
  Node node{dir, FileKind::directory, 0, {}};
  for (const auto& entry : files.list(dir)) {
    if (hidden(entry.name)) continue;
    MemoryPath path = dir.child(entry.name);
    Node child = entry.kind == FileKind::directory ? load(files, path) : Node{path, entry.kind, entry.size, {}};
    node.size += child.size;
    node.children.push_back(std::move(child));
  }
  return node;
}

void list_into(const Node& node, std::size_t depth, std::string& out) {
  for (const auto& child : node.children) {
    out += '\n' + human_size(child.size) + '\t' + child.path.str();
    if (child.kind == FileKind::directory) out += '/';
    if (depth < 2) list_into(child, depth + 1, out);
  }
}

class MemoryTool final : public Tool {
 public:
  explicit MemoryTool(std::shared_ptr<Files> files) : files_(std::move(files)) {
    spec_.name = "memory";
    spec_.description = std::string(kDescription);
    spec_.parameters = parameters_schema();
    spec_.effects = Effects{.side_effecting = true, .idempotent = false, .requires_approval = false};
    spec_.tags = {"memory"};
  }

  const ToolSpec& spec() const noexcept override { return spec_; }

  // `view` only reads.
  bool side_effecting_for(const Json& arguments) const override {
    const auto command = arguments.is_object() ? arguments.find("command") : arguments.end();
    return !(command != arguments.end() && *command == "view");
  }

  Json run(const Json& arguments, RunContext&) const override {
    const Call call = decode(arguments);
    auto guard = files_->lock();
    switch (call.command) {
      case Command::view:
        return view(MemoryPath::parse(call.path), call.view_range);
      case Command::create:
        return create(MemoryPath::parse(call.path), call.file_text);
      case Command::str_replace:
        return str_replace(MemoryPath::parse(call.path), call.old_str, call.new_str);
      case Command::insert:
        return insert(MemoryPath::parse(call.path), call.insert_line, call.insert_text);
      case Command::remove:
        return remove(MemoryPath::parse(call.path));
      case Command::rename:
        return rename(MemoryPath::parse(call.old_path, "old_path"), MemoryPath::parse(call.new_path, "new_path"));
    }
    throw std::logic_error("memory: unhandled command");
  }

 private:
  // The text of an existing file, for view and the edits.
  std::string read_text(const MemoryPath& path) const {
    switch (files_->kind(path)) {
      case FileKind::none:
        throw MemoryError("The path " + path.str() + " does not exist. Please provide a valid path.");
      case FileKind::directory:
        throw is_a_directory(path);
      case FileKind::file:
        break;
    }
    std::string text = files_->read(path);
    if (!is_valid_utf8(text)) throw MemoryError("The file " + path.str() + " is not UTF-8 text");
    return text;
  }

  std::string view(const MemoryPath& path, const std::optional<std::array<long long, 2>>& range) const {
    if (files_->kind(path) == FileKind::directory) {
      if (range) {
        throw MemoryError("The `view_range` parameter is not allowed when `path` points to a directory.", "view_range");
      }
      const Node tree = load(*files_, path);
      std::string out = "Here're the files and directories up to 2 levels deep in " + path.str() +
                        ", excluding hidden items and node_modules:\n" + human_size(tree.size) + '\t' + path.str();
      list_into(tree, 1, out);
      return out;
    }
    const std::string text = read_text(path);
    const auto lines = split_lines(text);
    if (lines.size() > kMaxViewLines) {
      throw MemoryError("File " + path.str() + " exceeds maximum line limit of 999,999 lines.");
    }
    std::size_t first = 0;
    std::size_t last = lines.size();
    if (range) std::tie(first, last) = checked_range(*range, lines.size());
    return "Here's the content of " + path.str() + " with line numbers:\n" + numbered(lines, first, last);
  }

  // [first, last) indices for a 1-based inclusive view_range.
  static std::pair<std::size_t, std::size_t> checked_range(const std::array<long long, 2>& range, std::size_t count) {
    const long long n = static_cast<long long>(count);
    const auto [start, end] = range;
    const std::string shown = "Invalid `view_range`: [" + std::to_string(start) + ", " + std::to_string(end) + "]. ";
    if (start < 1 || start > n) {
      throw MemoryError(shown + "Its first element `" + std::to_string(start) +
                            "` should be within the range of lines of the file: [1, " + std::to_string(n) + "]",
                        "view_range");
    }
    if (end == -1) return {static_cast<std::size_t>(start - 1), count};
    if (end < start) {
      throw MemoryError(shown + "Its second element `" + std::to_string(end) +
                            "` should be larger or equal than its first `" + std::to_string(start) + "`",
                        "view_range");
    }
    if (end > n) {
      throw MemoryError(shown + "Its second element `" + std::to_string(end) +
                            "` should be smaller than the number of lines in the file: `" + std::to_string(n) + "`",
                        "view_range");
    }
    return {static_cast<std::size_t>(start - 1), static_cast<std::size_t>(end)};
  }

  std::string create(const MemoryPath& path, const std::string& text) const {
    if (files_->kind(path) != FileKind::none) throw MemoryError("File " + path.str() + " already exists");
    files_->write(path, text);
    return "File created successfully at: " + path.str();
  }

  std::string str_replace(const MemoryPath& path, const std::string& old_str, const std::string& new_str) const {
    if (old_str.empty()) throw MemoryError("old_str must not be empty; use insert to add text", "old_str");
    const std::string text = read_text(path);
    std::vector<std::size_t> at;
    for (auto pos = text.find(old_str); pos != std::string::npos; pos = text.find(old_str, pos + 1)) at.push_back(pos);
    if (at.empty()) {
      throw MemoryError("No replacement was performed, old_str `" + echo(old_str) + "` did not appear verbatim in " +
                            path.str() + ".",
                        "old_str");
    }
    if (at.size() > 1) {
      std::vector<std::size_t> lines;
      for (auto pos : at) {
        const auto line = static_cast<std::size_t>(std::count(text.begin(), text.begin() + pos, '\n')) + 1;
        if (lines.empty() || lines.back() != line) lines.push_back(line);
      }
      std::string list;
      for (auto line : lines) list += (list.empty() ? "" : ", ") + std::to_string(line);
      throw MemoryError("No replacement was performed. Multiple occurrences of old_str `" + echo(old_str) +
                            "` in lines: " + list + ". Please ensure it is unique",
                        "old_str");
    }
    const std::string edited = text.substr(0, at[0]) + new_str + text.substr(at[0] + old_str.size());
    if (edited.size() > kMaxMemoryFileBytes) throw too_large(path, edited.size());
    files_->write(path, edited);
    const auto lines = split_lines(edited);
    const auto first = static_cast<std::size_t>(std::count(edited.begin(), edited.begin() + at[0], '\n'));
    const auto last = first + static_cast<std::size_t>(std::count(new_str.begin(), new_str.end(), '\n'));
    return "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n" +
           numbered(lines, first > kSnippetContext ? first - kSnippetContext : 0,
                    std::min(lines.size(), last + kSnippetContext + 1));
  }

  std::string insert(const MemoryPath& path, long long line, const std::string& insert_text) const {
    const std::string text = read_text(path);
    const std::size_t count = split_lines(text).size();
    if (line < 0 || line > static_cast<long long>(count)) {
      throw MemoryError("Invalid `insert_line` parameter: " + std::to_string(line) +
                            ". It should be within the range of lines of the file: [0, " + std::to_string(count) + "]",
                        "insert_line");
    }
    std::string block = insert_text;
    if (block.empty() || block.back() != '\n') block += '\n';
    std::size_t offset = 0;
    for (long long i = 0; i < line; ++i) {
      const auto newline = text.find('\n', offset);
      offset = newline == std::string::npos ? text.size() : newline + 1;
    }
    std::string edited = text.substr(0, offset);
    if (!edited.empty() && edited.back() != '\n') edited += '\n';  // appending after an unterminated last line
    edited += block;
    edited += text.substr(offset);
    if (edited.size() > kMaxMemoryFileBytes) throw too_large(path, edited.size());
    files_->write(path, edited);
    return "The file " + path.str() + " has been edited.";
  }

  std::string remove(const MemoryPath& path) const {
    if (path.is_root()) throw MemoryError("Cannot delete the /memories directory itself");
    if (files_->kind(path) == FileKind::none) throw not_found(path);
    files_->remove(path);
    return "Successfully deleted " + path.str();
  }

  std::string rename(const MemoryPath& from, const MemoryPath& to) const {
    if (from.is_root()) throw MemoryError("Cannot rename the /memories directory itself", "old_path");
    if (to.is_root()) throw already_exists(to);
    if (files_->kind(from) == FileKind::none) throw not_found(from);
    if (files_->kind(to) != FileKind::none) throw already_exists(to);
    files_->rename(from, to);
    return "Successfully renamed " + from.str() + " to " + to.str();
  }

  std::shared_ptr<Files> files_;
  ToolSpec spec_;
};

// ---------------------------------------------------------------- FileMemory

void collect_files(const Files& files, const MemoryPath& dir, std::vector<MemoryPath>& out) {
  for (const auto& entry : files.list(dir)) {
    if (hidden(entry.name)) continue;
    MemoryPath path = dir.child(entry.name);
    if (entry.kind == FileKind::directory) {
      collect_files(files, path, out);
    } else {
      out.push_back(std::move(path));
    }
  }
}

constexpr const char* kRenderHeader = "Memory files under /memories:\n";

std::string truncation_note(std::size_t shown, std::size_t total) {
  return "[truncated: " + std::to_string(shown) + " of " + std::to_string(total) +
         " files shown in full; view /memories with the memory tool for the rest]\n";
}

// One file's section: its header line and content, ending with a newline.
std::string section(const Files& files, const MemoryPath& path) {
  std::string text;
  try {
    text = files.read(path);
  } catch (const std::exception& e) {  // one unreadable file must not hide the others
    return "--- " + path.str() + " (not shown: " + e.what() + ")\n";
  }
  if (!is_valid_utf8(text)) return "--- " + path.str() + " (not shown: not UTF-8 text)\n";
  std::string out = "--- " + path.str() + " (" + std::to_string(text.size()) + " bytes)\n" + text;
  if (!text.empty() && text.back() != '\n') out += '\n';
  return out;
}

}  // namespace

ToolPtr memory_tool(std::shared_ptr<Files> files) {
  if (!files) throw Error(ErrorCode::invalid_argument, "memory_tool: the Files backend must not be null");
  return std::make_shared<MemoryTool>(std::move(files));
}

FileMemory::FileMemory(std::shared_ptr<const Files> files) : files_(std::move(files)) {
  if (!files_) throw Error(ErrorCode::invalid_argument, "FileMemory: the Files backend must not be null");
}

std::string FileMemory::render(std::size_t max_bytes) const {
  auto guard = files_->lock();
  std::vector<MemoryPath> paths;
  collect_files(*files_, MemoryPath::root(), paths);
  if (paths.empty()) return {};
  const std::size_t header = std::string_view(kRenderHeader).size();
  std::string out(kRenderHeader);
  std::vector<std::size_t> ends;  // out.size() after each whole section that fits
  for (const auto& path : paths) {
    out += section(*files_, path);
    if (out.size() > max_bytes) break;
    ends.push_back(out.size());
  }
  if (ends.size() == paths.size()) return out;
  // Keep the whole sections that leave room for the note, then as much of
  // the next one as fits.
  const std::size_t reserve = truncation_note(paths.size(), paths.size()).size();
  std::size_t shown = ends.size();
  while (shown > 0 && ends[shown - 1] + reserve > max_bytes) --shown;
  const std::size_t kept = shown > 0 ? ends[shown - 1] : header;
  std::string result = out.substr(0, kept);
  if (max_bytes > kept + reserve + 1) {
    result += utf8_prefix(std::string_view(out).substr(kept), max_bytes - kept - reserve - 1);
    result += '\n';
  }
  result += truncation_note(shown, paths.size());
  return std::string(utf8_prefix(result, max_bytes));
}

}  // namespace agentkit::state
