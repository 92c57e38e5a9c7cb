#pragma once
// The `memory` file tool: Anthropic's client-side memory tool contract over a
// note tree the model manages itself, plus the read side (FileMemory) that
// loads the same tree into a prompt.
//
// The model addresses everything as `/memories/...` and runs one command per
// call: view, create, str_replace, insert, delete or rename. The tree lives in
// a `Files` backend: InMemoryFiles (the default) or DirectoryFiles (a
// directory on disk, confined to it).
//
// Example:
//   auto files = std::make_shared<agentkit::state::DirectoryFiles>("/var/lib/bot/memories");
//   agentkit::ToolPtr memory = agentkit::state::memory_tool(files);
//   // give `memory` to the cognition like any other tool; the model calls e.g.
//   //   {"command": "create", "path": "/memories/prefs.md", "file_text": "Tone: brief.\n"}
//   //   {"command": "view", "path": "/memories"}
//   agentkit::state::FileMemory notes(files);
//   std::string section = notes.render(8 * 1024);  // paste into the system prompt
#include <agentkit/errors.h>
#include <agentkit/tool.h>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace agentkit::state {

// Limits every backend and the tool enforce.
inline constexpr std::size_t kMaxMemoryNameBytes = 255;       // one path segment
inline constexpr std::size_t kMaxMemoryPathBytes = 1024;      // a whole /memories/... path
inline constexpr std::size_t kMaxMemoryFileBytes = 4u << 20;  // one file's content

// A refused memory operation that the model can fix: a path outside
// /memories, a missing file, an old_str that is not unique, a destination
// that exists. It is a ToolArgumentError, so the error boundary hands it to
// the model as-is; what() is exactly the contract's text, e.g.
//   The path /memories/todo.md does not exist. Please provide a valid path.
// `invalid()` names the argument at fault ("path", "old_path", "old_str", ...).
class MemoryError : public ToolArgumentError {
 public:
  explicit MemoryError(std::string message, std::string argument = "path");
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// A validated, normalised path under /memories. The only way to build one is
// parse() (or root()/child()), so a backend never sees an unchecked path.
//
// Rules (one function, used by every backend):
//   - must be "/memories" or start with "/memories/"; relative paths, other
//     absolute paths and "~" prefixes are refused;
//   - repeated slashes collapse and one trailing slash is dropped;
//   - "." and ".." segments are refused, not resolved;
//   - NUL, control bytes (0x00-0x1F, 0x7F), backslashes and invalid UTF-8
//     are refused;
//   - a segment is at most kMaxMemoryNameBytes, the path at most
//     kMaxMemoryPathBytes.
// Nothing is decoded: "%2e%2e", "~" inside a segment and look-alike Unicode
// dots ("․․", "．．") are ordinary names that stay inside the tree.
class MemoryPath {
 public:
  // Throws MemoryError (naming `argument`) when `text` breaks a rule above.
  static MemoryPath parse(std::string_view text, std::string_view argument = "path");
  static MemoryPath root();

  // This path plus one segment, checked by the same rules.
  MemoryPath child(std::string_view name) const;
  // The enclosing directory; root() for a top-level entry and for root().
  MemoryPath parent() const;

  bool is_root() const noexcept { return segments_.empty(); }
  // Segments below /memories ("/memories/a/b" -> {"a", "b"}).
  const std::vector<std::string>& segments() const noexcept { return segments_; }
  // The last segment ("memories" for the root).
  std::string_view name() const noexcept;
  // "/memories/a/b": the form used in every message.
  const std::string& str() const noexcept { return text_; }
  // True when `other` is this path or lies below it.
  bool contains(const MemoryPath& other) const noexcept;

  friend bool operator==(const MemoryPath& a, const MemoryPath& b) noexcept { return a.text_ == b.text_; }

 private:
  MemoryPath() = default;
  std::vector<std::string> segments_;
  std::string text_ = "/memories";
};

enum class FileKind { none, file, directory };

// One child of a directory. `size` is the byte length of a file (0 for a
// directory).
struct DirEntry {
  std::string name;
  FileKind kind = FileKind::none;
  std::uint64_t size = 0;
};

// The storage primitives the memory commands are built from. /memories
// always exists and is a directory.
//
// Implementations MUST be thread-safe: each primitive is atomic with respect
// to the others, and lock() holds every other caller off for a multi-step
// edit (the tool holds it for a whole command). Model-fixable refusals throw
// MemoryError; host failures (permissions, a full disk) throw
// std::system_error. Messages name /memories paths, never host paths.
class Files {
 public:
  virtual ~Files() = default;

  // What `path` is; FileKind::none when it (or a directory above it) is absent.
  virtual FileKind kind(const MemoryPath& path) const = 0;
  // The children of a directory, sorted by name (bytewise).
  virtual std::vector<DirEntry> list(const MemoryPath& dir) const = 0;
  // The whole content of a file.
  virtual std::string read(const MemoryPath& file) const = 0;
  // Creates or replaces a file, creating missing parent directories.
  virtual void write(const MemoryPath& file, std::string_view text) = 0;
  // Deletes a file, or a directory with everything in it. Never the root.
  virtual void remove(const MemoryPath& path) = 0;
  // Moves a file or directory; `to` must not exist, its parents are created.
  virtual void rename(const MemoryPath& from, const MemoryPath& to) = 0;

  // Holds off every other caller of this object until released.
  [[nodiscard]] std::unique_lock<std::recursive_mutex> lock() const { return std::unique_lock(mutex_); }

 private:
  mutable std::recursive_mutex mutex_;
};

// A tree in process memory: for tests and hosts that persist nothing.
class InMemoryFiles final : public Files {
 public:
  FileKind kind(const MemoryPath& path) const override;
  std::vector<DirEntry> list(const MemoryPath& dir) const override;
  std::string read(const MemoryPath& file) const override;
  void write(const MemoryPath& file, std::string_view text) override;
  void remove(const MemoryPath& path) override;
  void rename(const MemoryPath& from, const MemoryPath& to) override;

 private:
  struct Node {
    FileKind kind = FileKind::file;
    std::string content;
  };
  // Throws unless `dir` is an existing directory.
  void require_directory(const MemoryPath& dir) const;
  void make_parents(const MemoryPath& path);

  std::map<std::string, Node, std::less<>> nodes_;  // keyed by MemoryPath::str(); the root is implicit
};

// A tree in a directory on disk; `/memories` maps onto `root`, which is
// created when missing and opened once (a later rename of `root` does not
// redirect the backend).
//
// Confinement: every lookup walks the path one segment at a time from the
// root's descriptor with openat(O_NOFOLLOW) and the *at() calls, so a
// symbolic link anywhere on a path is refused (even one swapped in between
// two calls) and nothing outside `root` is ever opened, created, changed or
// deleted. A file with more than one hard link is never read (it may share
// its content with a file outside the root). Entries that are neither
// files nor directories, and names the path rules refuse, are left out of
// listings. Writes go to a temporary file renamed over the target.
class DirectoryFiles final : public Files {
 public:
  // Throws std::system_error when `root` cannot be created or opened.
  explicit DirectoryFiles(const std::filesystem::path& root);
  ~DirectoryFiles() override;
  DirectoryFiles(const DirectoryFiles&) = delete;
  DirectoryFiles& operator=(const DirectoryFiles&) = delete;

  FileKind kind(const MemoryPath& path) const override;
  std::vector<DirEntry> list(const MemoryPath& dir) const override;
  std::string read(const MemoryPath& file) const override;
  void write(const MemoryPath& file, std::string_view text) override;
  void remove(const MemoryPath& path) override;
  void rename(const MemoryPath& from, const MemoryPath& to) override;

 private:
  int root_fd_ = -1;
};

// The `memory` tool over `files`: advertised as "memory", side-effecting, not
// idempotent, no approval required. Arguments: `command` (required, one of
// view, create, str_replace, insert, delete, rename) plus that command's
// fields:
//   view        path, view_range? ([first, last], 1-based, last -1 = to the end)
//   create      path, file_text
//   str_replace path, old_str, new_str
//   insert      path, insert_line (0 = before the first line), insert_text
//   delete      path
//   rename      old_path, new_path
// A missing field, a field of another command, or a wrongly typed value is a
// ToolArgumentError listing every problem; null counts as absent. A refused
// path or an edit that does not apply is a MemoryError with the contract's
// wording. Lines are split on "\n"; a final newline ends the last line rather
// than starting an empty one. Throws agentkit::Error (invalid_argument) if `files` is null.
//
// `view` counts as read-only (Tool::side_effecting_for): it is not gated
// under Autonomy::gated, not recorded in a durable run's ledger, and never
// answered from the idempotent() middleware's table, so a view after an edit
// sees the edit. The other commands are side-effecting.
ToolPtr memory_tool(std::shared_ptr<Files> files = std::make_shared<InMemoryFiles>());

// The read side: renders the /memories tree into a prompt section.
//
// Example:
//   FileMemory notes(files);
//   system_prompt += notes.render(4096);
class FileMemory {
 public:
  // Throws agentkit::Error (invalid_argument) if `files` is null.
  explicit FileMemory(std::shared_ptr<const Files> files);

  // Every file under /memories, depth-first in name order (hidden entries and
  // node_modules skipped, as in `view`), each as a "--- <path> (<n> bytes)"
  // line followed by its content. The result is at most `max_bytes` long and
  // never splits a UTF-8 character; when files do not fit, the last one shown
  // is cut and a closing "[truncated: ...]" line says how many were shown in
  // full. A file that cannot be read (too large, not UTF-8, hard-linked) appears
  // as "--- <path> (not shown: <reason>)". An empty tree renders as "".
  std::string render(std::size_t max_bytes = 16 * 1024) const;

 private:
  std::shared_ptr<const Files> files_;
};

}  // namespace agentkit::state
