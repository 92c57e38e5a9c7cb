// Workspace: file operations confined to a root directory.
//
// Confinement never resolves a path string from the root down. A path is
// split into checked segments; each directory on the way is opened from the
// previous one's descriptor with openat(O_NOFOLLOW | O_DIRECTORY), and the
// leaf is inspected with fstatat(AT_SYMLINK_NOFOLLOW) and opened with
// O_NOFOLLOW, then checked again on the descriptor (same inode, regular
// file). A link placed anywhere, before or during a call, is refused where it
// sits. The same walk opens the command tool's working directory
// (Workspace::open_directory).
#include <agentkit/workspace.h>
#include <agentkit/detail/confined_fs.h>
#include <agentkit/function_tool.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <regex.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <functional>
#include <optional>
#include <system_error>

namespace agentkit {

namespace {

constexpr std::size_t kMaxPathBytes = 4096;
constexpr std::size_t kMaxNameBytes = 255;
constexpr std::size_t kMaxPatternBytes = 512;
constexpr std::size_t kBinaryProbeBytes = 8192;
constexpr int kDirFlags = detail::kConfinedDirFlags;

using Fd = detail::UniqueFd;

// A refused path as messages show it: verbatim when short and printable.
std::string shown(std::string_view text) {
  bool printable = text.size() <= 200 && is_valid_utf8(text);
  for (unsigned char c : text) printable = printable && c >= 0x20 && c != 0x7f;
  if (printable) return std::string(text);
  std::string escaped = Json(std::string(text)).dump(-1, ' ', true, Json::error_handler_t::replace);
  return escaped.size() > 200 ? escaped.substr(0, 200) + "..." : escaped;
}

[[noreturn]] void fail(const char* what, const std::string& path, int err = errno) {
  throw std::system_error(err, std::generic_category(), std::string("workspace: cannot ") + what + " " + path);
}

// A checked relative path: its segments and its normal spelling ("" = root).
struct RelPath {
  std::vector<std::string> segments;
  std::string text;
};

RelPath parse_path(std::string_view text, std::string_view argument = "path") {
  const auto refuse = [&](const std::string& why) {
    throw WorkspaceError("The path " + shown(text) + " is not allowed: " + why + ".", std::string(argument));
  };
  if (text.size() > kMaxPathBytes) refuse("it is longer than " + std::to_string(kMaxPathBytes) + " bytes");
  if (!is_valid_utf8(text)) refuse("it is not valid UTF-8");
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) refuse("it contains a NUL or control character");
  }
  if (!text.empty() && text.front() == '/') refuse("paths are relative to the workspace root");
  RelPath path;
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto slash = rest.find('/');
    const std::string_view segment = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    if (segment.empty() || segment == ".") continue;
    if (segment == "..") refuse("'..' segments are not allowed");
    if (segment.size() > kMaxNameBytes) refuse("a name is longer than " + std::to_string(kMaxNameBytes) + " bytes");
    path.segments.emplace_back(segment);
    path.text += (path.text.empty() ? "" : "/") + std::string(segment);
  }
  return path;
}

std::string display(const RelPath& path) { return path.text.empty() ? "." : path.text; }

std::string prefix_text(const RelPath& path, std::size_t depth) {
  std::string text;
  for (std::size_t i = 0; i < depth; ++i) text += (i ? "/" : "") + path.segments[i];
  return text;
}

WorkspaceError not_found(const std::string& path) { return WorkspaceError("The path " + path + " does not exist"); }

WorkspaceError link_refused(const std::string& path) {
  return WorkspaceError("The path " + path + " is a symbolic link; links are not followed in the workspace");
}

std::optional<struct stat> lstat_at(int dir, const std::string& name, const std::string& shown_path) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return st;
  if (errno == ENOENT) return std::nullopt;
  fail("inspect", shown_path);
}

// Refuses anything but a regular file with one link.
void require_plain_file(const struct stat& st, const std::string& path) {
  if (S_ISLNK(st.st_mode)) throw link_refused(path);
  if (S_ISDIR(st.st_mode)) throw WorkspaceError("The path " + path + " is a directory, not a file");
  if (!S_ISREG(st.st_mode)) {
    throw WorkspaceError("The path " + path + " is a device, FIFO or socket; only regular files are used");
  }
  // Refused for reads too: a second name may be a file outside the root (a
  // command can `ln ~/.ssh/id_ed25519 key`), and reading through it would
  // leak exactly what confinement keeps out.
  if (st.st_nlink > 1) {
    throw WorkspaceError("The file " + path + " has other hard links, which may lie outside the workspace; it is not used");
  }
}

// The directory made of the first `depth` segments, creating missing ones
// when `create` is set. A link on the way, or a file where a directory should
// be, is refused.
Fd walk(int root, const RelPath& path, std::size_t depth, bool create) {
  detail::Walked walked = detail::walk_beneath(root, path.segments, depth, create, 0755);
  if (walked.stop == detail::WalkStop::none) return std::move(walked.dir);
  const std::size_t shown_depth = std::min(walked.at + 1, depth);
  const std::string at = shown_depth == 0 ? "." : prefix_text(path, shown_depth);
  switch (walked.stop) {
    case detail::WalkStop::missing: throw not_found(at);
    case detail::WalkStop::symlink: throw link_refused(at);
    case detail::WalkStop::not_directory: throw WorkspaceError("The path " + at + " is not a directory");
    default: fail("open", at, walked.error);
  }
}

// Opens `path` for reading as a plain file (see require_plain_file).
Fd open_file(int root, const RelPath& path) {
  const std::string text = display(path);
  if (path.segments.empty()) throw WorkspaceError("The path . is a directory, not a file");
  Fd parent = walk(root, path, path.segments.size() - 1, false);
  const std::string& leaf = path.segments.back();
  auto before = lstat_at(parent.get(), leaf, text);
  if (!before) throw not_found(text);
  require_plain_file(*before, text);  // before opening: opening a device or FIFO can itself have effects
  Fd fd(::openat(parent.get(), leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) throw not_found(text);
    if (errno == ELOOP) throw link_refused(text);
    fail("open", text);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail("inspect", text);
  if (st.st_ino != before->st_ino || st.st_dev != before->st_dev) {
    throw WorkspaceError("The path " + text + " changed while it was being opened; try again");
  }
  require_plain_file(st, text);
  return fd;
}

WorkspaceError too_large(const std::string& path, std::uint64_t bytes, std::size_t limit) {
  return WorkspaceError("The file " + path + " is " + std::to_string(bytes) + " bytes, over the workspace limit of " +
                        std::to_string(limit) + " bytes");
}

std::string read_all(int fd, const std::string& path, std::size_t limit) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail("inspect", path);
  if (static_cast<std::uint64_t>(st.st_size) > limit) throw too_large(path, st.st_size, limit);
  std::string content;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("read", path);
    if (n == 0) break;
    content.append(buf, static_cast<std::size_t>(n));
    if (content.size() > limit) throw too_large(path, content.size(), limit);
  }
  return content;
}

bool is_binary(std::string_view content) {
  return content.substr(0, kBinaryProbeBytes).find('\0') != std::string_view::npos || !is_valid_utf8(content);
}

std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) noexcept {
  if (text.size() <= max_bytes) return text;
  std::size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

std::vector<std::string> names_in(int dir, const std::string& path) {
  return detail::names_in(dir, "workspace: cannot list " + path);
}

// Calls `visit(relative path, stat)` for every entry under `dir`, depth
// first; never descends into links. Stops after `budget` entries.
void scan(int dir, const std::string& base, std::size_t& budget,
          const std::function<void(const std::string&, const struct stat&)>& visit) {
  for (const auto& name : names_in(dir, base.empty() ? "." : base)) {
    if (budget == 0) return;
    --budget;
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const std::string rel = base.empty() ? name : base + "/" + name;
    visit(rel, st);
    if (S_ISDIR(st.st_mode)) {
      Fd sub(::openat(dir, name.c_str(), kDirFlags));
      if (sub) scan(sub.get(), rel, budget, visit);
    }
  }
}

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> parts;
  while (!text.empty()) {
    const auto slash = text.find('/');
    if (slash != 0) parts.emplace_back(text.substr(0, slash));
    text = slash == std::string_view::npos ? std::string_view{} : text.substr(slash + 1);
  }
  return parts;
}

bool glob_match(const std::vector<std::string>& pattern, std::size_t i, const std::vector<std::string>& path,
                std::size_t j) {
  if (i == pattern.size()) return j == path.size();
  if (pattern[i] == "**") {
    return glob_match(pattern, i + 1, path, j) || (j < path.size() && glob_match(pattern, i, path, j + 1));
  }
  return j < path.size() && ::fnmatch(pattern[i].c_str(), path[j].c_str(), 0) == 0 &&
         glob_match(pattern, i + 1, path, j + 1);
}

std::vector<std::string> parse_glob(std::string_view pattern, std::string_view argument) {
  if (pattern.empty() || pattern.size() > kMaxPatternBytes) {
    throw WorkspaceError("The pattern must be 1 to " + std::to_string(kMaxPatternBytes) + " bytes long",
                         std::string(argument));
  }
  if (pattern.front() == '/' || pattern.find('\0') != std::string_view::npos) {
    throw WorkspaceError("The pattern " + shown(pattern) + " is not allowed: patterns are relative to the workspace root",
                         std::string(argument));
  }
  auto parts = split(pattern);
  for (const auto& part : parts) {
    if (part == "..") throw WorkspaceError("The pattern " + shown(pattern) + " is not allowed: '..' segments are not allowed", std::string(argument));
  }
  // Collapse runs of "**" so the matcher stays polynomial on hostile patterns.
  parts.erase(std::unique(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a == "**" && b == "**"; }),
              parts.end());
  return parts;
}

class Regex {
 public:
  explicit Regex(std::string_view pattern) {
    if (pattern.empty() || pattern.size() > kMaxPatternBytes) {
      throw WorkspaceError("The pattern must be 1 to " + std::to_string(kMaxPatternBytes) + " bytes long", "pattern");
    }
    if (const int rc = ::regcomp(&re_, std::string(pattern).c_str(), REG_EXTENDED | REG_NOSUB); rc != 0) {
      char why[256];
      ::regerror(rc, &re_, why, sizeof why);
      throw WorkspaceError("The pattern " + shown(pattern) + " is not a valid POSIX extended regular expression: " + why,
                           "pattern");
    }
  }
  ~Regex() { ::regfree(&re_); }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  bool matches(const std::string& line) const { return ::regexec(&re_, line.c_str(), 0, nullptr, 0) == 0; }

 private:
  regex_t re_{};
};

// Splits on "\n"; a final newline ends the last line.
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
  }
  return lines;
}

}  // namespace

WorkspaceError::WorkspaceError(std::string message, std::string argument)
    : ToolArgumentError("workspace", {}, {}, {{std::move(argument), message}}, {}), message_(std::move(message)) {}

Workspace::Workspace(WorkspaceOptions options) : options_(std::move(options)) {
  const Json fields = options_.to_json();
  for (const auto& item : fields.items()) {
    if (item.value() == 0) throw OptionsError(item.key(), "must be greater than 0");
  }
  std::error_code ec;
  root_ = std::filesystem::canonical(options_.root, ec);
  if (ec || !std::filesystem::is_directory(root_, ec)) {
    throw OptionsError("root", "'" + options_.root.string() + "' is not an existing directory");
  }
  root_fd_ = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_fd_ < 0) throw std::system_error(errno, std::generic_category(), "workspace: cannot open " + root_.string());
}

Workspace::~Workspace() { ::close(root_fd_); }

std::string Workspace::read_file(std::string_view path) const {
  const RelPath rel = parse_path(path);
  Fd fd = open_file(root_fd_, rel);
  return read_all(fd.get(), rel.text, options_.max_file_bytes);
}

namespace {

void write_locked(int root, const RelPath& rel, std::string_view content, std::size_t limit) {
  const std::string text = display(rel);
  if (rel.segments.empty()) throw WorkspaceError("The path . is a directory, not a file");
  if (content.size() > limit) {
    throw WorkspaceError("The content is " + std::to_string(content.size()) + " bytes, over the workspace limit of " +
                             std::to_string(limit) + " bytes",
                         "content");
  }
  Fd parent = walk(root, rel, rel.segments.size() - 1, true);
  const std::string& leaf = rel.segments.back();
  mode_t mode = 0644;
  if (auto st = lstat_at(parent.get(), leaf, text)) {
    require_plain_file(*st, text);
    mode = st->st_mode & 0777;
  }
  auto [temp, out] = detail::create_temp(parent.get(), ".workspace-tmp-", "workspace: cannot write " + text);
  try {
    detail::write_all(out.get(), content, "workspace: cannot write " + text);
    if (::fchmod(out.get(), mode) != 0) fail("write", text);
    // rename replaces the directory entry itself: whatever sits at `leaf` by
    // now (even a link swapped in) is replaced, never written through.
    if (::renameat(parent.get(), temp.c_str(), parent.get(), leaf.c_str()) != 0) {
      if (errno == EISDIR) throw WorkspaceError("The path " + text + " is a directory, not a file");
      fail("write", text);
    }
  } catch (...) {
    ::unlinkat(parent.get(), temp.c_str(), 0);
    throw;
  }
}

}  // namespace

void Workspace::write_file(std::string_view path, std::string_view content) const {
  const RelPath rel = parse_path(path);
  std::lock_guard guard(write_mutex_);
  write_locked(root_fd_, rel, content, options_.max_file_bytes);
}

std::size_t Workspace::edit_file(std::string_view path, std::string_view old_text, std::string_view new_text,
                                 bool replace_all) const {
  const RelPath rel = parse_path(path);
  if (old_text.empty()) throw WorkspaceError("old_string must not be empty", "old_string");
  std::lock_guard guard(write_mutex_);
  Fd fd = open_file(root_fd_, rel);
  std::string content = read_all(fd.get(), rel.text, options_.max_file_bytes);
  if (is_binary(content)) throw WorkspaceError("The file " + rel.text + " is binary; it cannot be edited as text");
  std::vector<std::size_t> at;
  for (auto pos = content.find(old_text); pos != std::string::npos; pos = content.find(old_text, pos + old_text.size())) {
    at.push_back(pos);
  }
  if (at.empty()) throw WorkspaceError("old_string does not occur in " + rel.text, "old_string");
  if (at.size() > 1 && !replace_all) {
    throw WorkspaceError("old_string occurs " + std::to_string(at.size()) + " times in " + rel.text +
                             "; include more context to make it unique, or set replace_all",
                         "old_string");
  }
  std::string out;
  std::size_t from = 0;
  for (std::size_t pos : at) {
    out.append(content, from, pos - from).append(new_text);
    from = pos + old_text.size();
  }
  out.append(content, from);
  write_locked(root_fd_, rel, out, options_.max_file_bytes);
  return at.size();
}

std::vector<WorkspaceEntry> Workspace::list_dir(std::string_view path, bool* truncated) const {
  const RelPath rel = parse_path(path);
  Fd dir = walk(root_fd_, rel, rel.segments.size(), false);
  std::vector<WorkspaceEntry> entries;
  for (auto& name : names_in(dir.get(), display(rel))) {
    struct stat st {};
    if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    WorkspaceEntry e;
    e.path = rel.text.empty() ? name : rel.text + "/" + name;
    e.kind = S_ISREG(st.st_mode)   ? WorkspaceEntry::Kind::file
             : S_ISDIR(st.st_mode) ? WorkspaceEntry::Kind::directory
             : S_ISLNK(st.st_mode) ? WorkspaceEntry::Kind::symlink
                                   : WorkspaceEntry::Kind::other;
    e.size = S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : 0;
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  if (truncated) *truncated = entries.size() > options_.max_entries;
  if (entries.size() > options_.max_entries) entries.resize(options_.max_entries);
  return entries;
}

std::vector<std::string> Workspace::glob(std::string_view pattern, bool* truncated) const {
  const auto parts = parse_glob(pattern, "pattern");
  std::vector<std::string> found;
  std::size_t budget = options_.max_scan_entries;
  Fd root(::openat(root_fd_, ".", kDirFlags));
  if (!root) fail("open", ".");
  scan(root.get(), "", budget, [&](const std::string& rel, const struct stat& st) {
    if (!S_ISDIR(st.st_mode) && glob_match(parts, 0, split(rel), 0)) found.push_back(rel);
  });
  std::sort(found.begin(), found.end());
  if (truncated) *truncated = found.size() > options_.max_entries || budget == 0;
  if (found.size() > options_.max_entries) found.resize(options_.max_entries);
  return found;
}

std::vector<WorkspaceMatch> Workspace::search(std::string_view pattern, std::string_view path, std::string_view glob,
                                              bool* truncated) const {
  const Regex re(pattern);
  const RelPath base = parse_path(path);
  const auto filter = glob.empty() ? std::vector<std::string>{} : parse_glob(glob, "glob");
  std::vector<std::string> files;
  std::size_t budget = options_.max_scan_entries;
  Fd dir = walk(root_fd_, base, base.segments.size(), false);
  scan(dir.get(), base.text, budget, [&](const std::string& rel, const struct stat& st) {
    if (!S_ISREG(st.st_mode) || st.st_nlink > 1 || static_cast<std::uint64_t>(st.st_size) > options_.max_file_bytes) return;
    if (filter.empty() || glob_match(filter, 0, split(rel), 0)) files.push_back(rel);
  });
  std::sort(files.begin(), files.end());
  std::vector<WorkspaceMatch> matches;
  bool more = budget == 0;
  for (const auto& file : files) {
    std::string content;
    try {
      Fd fd = open_file(root_fd_, parse_path(file));
      content = read_all(fd.get(), file, options_.max_file_bytes);
    } catch (const WorkspaceError&) {
      continue;  // changed since the scan
    }
    if (is_binary(content)) continue;
    std::size_t number = 0;
    for (std::string_view line : lines_of(content)) {
      ++number;
      std::string text(utf8_prefix(line, options_.max_line_chars));
      if (!re.matches(text)) continue;
      if (matches.size() == options_.max_matches) {
        more = true;
        break;
      }
      matches.push_back({file, number, std::move(text)});
    }
    if (matches.size() == options_.max_matches && more) break;
  }
  if (truncated) *truncated = more;
  return matches;
}

int Workspace::open_directory(std::string_view path) const {
  const RelPath rel = parse_path(path);
  return walk(root_fd_, rel, rel.segments.size(), false).release();
}

// ---- options as data -------------------------------------------------------

namespace {

std::size_t size_field(const Json& j, const char* key) {
  // Signed or not: YAML and JSON parsers differ in which they produce for 10.
  if (!j.is_number_integer() || (!j.is_number_unsigned() && j.get<std::int64_t>() < 0)) {
    throw OptionsError(key, "must be a non-negative integer, not " + (j.is_number_integer() ? j.dump() : std::string(json_type_name(j))));
  }
  return j.get<std::size_t>();
}

}  // namespace

Json WorkspaceOptions::to_json() const {
  return Json{{"root", root.string()},
              {"max_file_bytes", max_file_bytes},
              {"max_output_bytes", max_output_bytes},
              {"max_line_chars", max_line_chars},
              {"max_entries", max_entries},
              {"max_matches", max_matches},
              {"max_scan_entries", max_scan_entries},
              {"tools", tools}};
}

WorkspaceOptions WorkspaceOptions::from_json(const Json& j) {
  if (!j.is_object()) throw OptionsError("workspace", "must be an object, not " + std::string(json_type_name(j)));
  WorkspaceOptions o;
  const std::pair<const char*, std::size_t WorkspaceOptions::*> sizes[] = {
      {"max_file_bytes", &WorkspaceOptions::max_file_bytes}, {"max_output_bytes", &WorkspaceOptions::max_output_bytes},
      {"max_line_chars", &WorkspaceOptions::max_line_chars}, {"max_entries", &WorkspaceOptions::max_entries},
      {"max_matches", &WorkspaceOptions::max_matches},       {"max_scan_entries", &WorkspaceOptions::max_scan_entries}};
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    const Json& value = item.value();
    if (key == "root") {
      if (!value.is_string()) throw OptionsError(key, "must be a string");
      o.root = value.get<std::string>();
      continue;
    }
    if (key == "tools") {
      if (!value.is_array()) throw OptionsError(key, "must be an array of tool names");
      o.tools.clear();
      for (const auto& name : value) {
        if (!name.is_string() ||
            std::find(kWorkspaceTools.begin(), kWorkspaceTools.end(), name.get<std::string>()) == kWorkspaceTools.end()) {
          throw OptionsError(key, "names an unknown tool " + name.dump() + "; known: " + quoted_list(kWorkspaceTools));
        }
        o.tools.push_back(name.get<std::string>());
      }
      continue;
    }
    const auto* field = std::find_if(std::begin(sizes), std::end(sizes), [&](const auto& s) { return key == s.first; });
    if (field == std::end(sizes)) throw OptionsError(key, "is not a workspace option");
    o.*(field->second) = size_field(value, field->first);
  }
  return o;
}

// ---- the tools ---------------------------------------------------------------

namespace {

// `text` cut to `limit` bytes on a UTF-8 boundary, with a note saying so.
std::string capped(std::string text, std::size_t limit, const std::string& note) {
  if (text.size() <= limit) return text;
  std::string out(utf8_prefix(text, limit));
  return out + "\n[" + note + "]";
}

std::string read_tool(const Workspace& ws, const std::string& path, int offset, int limit) {
  if (offset < 1) throw WorkspaceError("offset is the 1-based first line to show; it must be at least 1", "offset");
  if (limit < 1) throw WorkspaceError("limit is a number of lines; it must be at least 1", "limit");
  const std::string content = ws.read_file(path);
  if (is_binary(content)) {
    return "[" + path + " is a binary file (" + std::to_string(content.size()) + " bytes); it is not shown]";
  }
  const auto lines = lines_of(content);
  if (lines.empty()) return "[" + path + " is empty]";
  const auto first = static_cast<std::size_t>(offset);
  if (first > lines.size()) {
    throw WorkspaceError("offset " + std::to_string(first) + " is past the end of " + path + " (" +
                             std::to_string(lines.size()) + " lines)",
                         "offset");
  }
  const std::size_t budget = ws.options().max_output_bytes;
  std::string out;
  std::size_t last = first - 1;
  for (std::size_t n = first; n <= lines.size() && n < first + static_cast<std::size_t>(limit); ++n) {
    std::string_view line = lines[n - 1];
    std::string_view kept = utf8_prefix(line, ws.options().max_line_chars);
    char number[32];
    std::snprintf(number, sizeof number, "%6zu\t", n);
    std::string entry = number + std::string(kept) + (kept.size() < line.size() ? " [line cut]" : "") + "\n";
    if (out.size() + entry.size() > budget && n > first) break;
    out += entry;
    last = n;
  }
  if (last < lines.size()) {
    out += "[showing lines " + std::to_string(first) + "-" + std::to_string(last) + " of " +
           std::to_string(lines.size()) + "; call read_file with offset=" + std::to_string(last + 1) + " for more]\n";
  }
  return capped(std::move(out), budget + 256, "output cut at the workspace's max_output_bytes");
}

std::string kind_suffix(const WorkspaceEntry& e) {
  switch (e.kind) {
    case WorkspaceEntry::Kind::file: return " (" + std::to_string(e.size) + " bytes)";
    case WorkspaceEntry::Kind::directory: return "/";
    case WorkspaceEntry::Kind::symlink: return " (symbolic link, not followed)";
    case WorkspaceEntry::Kind::other: return " (special file, not used)";
  }
  return {};
}

ToolPtr make_tool(const std::shared_ptr<const Workspace>& ws, const std::string& name, const Json& meta) {
  const std::size_t out_cap = ws->options().max_output_bytes;
  const std::string cut = "output cut at " + std::to_string(out_cap) + " bytes";
  if (name == "read_file") {
    return tool("read_file")
        .metadata(meta)
        .doc("Read a text file of the workspace. Lines come numbered like `cat -n`; use offset (1-based first line) "
             "and limit (number of lines) to read a long file in parts.")
        .side_effecting(false)
        .idempotent()
        .params(param("path", "file path relative to the workspace root"), opt("offset", 1), opt("limit", 2000))
        .fn([ws](const std::string& path, int offset, int limit) { return read_tool(*ws, path, offset, limit); });
  }
  if (name == "write_file") {
    return tool("write_file")
        .metadata(meta)
        .doc("Create or replace a file of the workspace with the given content; parent directories are created.")
        .side_effecting(true)
        .idempotent()
        .params(param("path", "file path relative to the workspace root"), param("content", "the whole new content"))
        .fn([ws](const std::string& path, const std::string& content) {
          ws->write_file(path, content);
          return "Wrote " + std::to_string(content.size()) + " bytes to " + parse_path(path).text;
        });
  }
  if (name == "edit_file") {
    return tool("edit_file")
        .metadata(meta)
        .doc("Replace old_string with new_string in a workspace file. old_string must occur exactly once unless "
             "replace_all is true; include surrounding lines to make it unique.")
        .side_effecting(true)
        .params(param("path", "file path relative to the workspace root"), "old_string", "new_string",
                opt("replace_all", false))
        .fn([ws](const std::string& path, const std::string& old_string, const std::string& new_string, bool all) {
          const std::size_t n = ws->edit_file(path, old_string, new_string, all);
          return "Replaced " + std::to_string(n) + " occurrence" + (n == 1 ? "" : "s") + " in " + parse_path(path).text;
        });
  }
  if (name == "list_dir") {
    return tool("list_dir")
        .metadata(meta)
        .doc("List a directory of the workspace: one entry per line, directories end with '/', files show their size.")
        .side_effecting(false)
        .idempotent()
        .params(opt("path", std::string(), "directory relative to the workspace root; empty for the root"))
        .fn([ws, out_cap, cut](const std::string& path) {
          bool more = false;
          std::string out;
          for (const auto& e : ws->list_dir(path, &more)) out += e.path + kind_suffix(e) + "\n";
          if (more) out += "[more entries not shown: listing capped at " + std::to_string(ws->options().max_entries) + "]\n";
          return out.empty() ? std::string("[empty directory]") : capped(std::move(out), out_cap, cut);
        });
  }
  if (name == "glob") {
    return tool("glob")
        .metadata(meta)
        .doc("Find workspace files whose path matches a glob pattern such as src/**/*.cpp ('**' spans directories).")
        .side_effecting(false)
        .idempotent()
        .params(param("pattern", "glob relative to the workspace root"))
        .fn([ws, out_cap, cut](const std::string& pattern) {
          bool more = false;
          std::string out;
          for (const auto& path : ws->glob(pattern, &more)) out += path + "\n";
          if (more) out += "[more matches not shown: results capped at " + std::to_string(ws->options().max_entries) + "]\n";
          return out.empty() ? std::string("[no files match]") : capped(std::move(out), out_cap, cut);
        });
  }
  return tool("search")
        .metadata(meta)
      .doc("Search workspace text files for lines matching a POSIX extended regular expression; optionally under "
           "a directory and only in files matching a glob.")
      .side_effecting(false)
      .idempotent()
      .params(param("pattern", "POSIX extended regular expression"),
              opt("path", std::string(), "directory to search; empty for the root"),
              opt("glob", std::string(), "only files whose path matches this glob"))
      .fn([ws, out_cap, cut](const std::string& pattern, const std::string& path, const std::string& glob) {
        bool more = false;
        std::string out;
        for (const auto& m : ws->search(pattern, path, glob, &more)) {
          out += m.path + ":" + std::to_string(m.line) + ": " + m.text + "\n";
        }
        if (more) out += "[more matches not shown: results capped at " + std::to_string(ws->options().max_matches) + "]\n";
        return out.empty() ? std::string("[no matches]") : capped(std::move(out), out_cap, cut);
      });
}

}  // namespace

std::vector<ToolPtr> workspace_tools(std::shared_ptr<const Workspace> ws) {
  if (!ws) throw Error(ErrorCode::invalid_argument, "workspace_tools: the workspace is null");
  // Its data description (<agentkit/tool_data.h>): the workspace entry.
  const Json meta = {{"workspace", ws->options().to_json()}};
  std::vector<ToolPtr> tools;
  for (const auto& name : kWorkspaceTools) {
    if (std::find(ws->options().tools.begin(), ws->options().tools.end(), name) != ws->options().tools.end()) {
      tools.push_back(make_tool(ws, name, meta));
    }
  }
  return tools;
}

}  // namespace agentkit
