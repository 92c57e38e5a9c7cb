#pragma once
// A directory the model may read and change through tools: read_file,
// write_file, edit_file, list_dir, glob and search (spec 003's filesystem
// primitives), each confined to the root.
//
// Confinement: a path is relative ("src/main.cpp"; "" or "." is the root).
// Absolute paths, ".." segments, control bytes and over-long names are
// refused before anything is opened. Every lookup then walks the path one
// segment at a time from the root's descriptor with openat(O_NOFOLLOW), so a
// symbolic link at any component (the last one included, and one swapped in
// during a call) is refused, never followed. Only regular files and
// directories are used: devices, FIFOs and sockets are refused. A file with
// more than one hard link is neither read nor written (its other name may lie
// outside the root). Every refusal is a WorkspaceError, a ToolArgumentError
// whose message the model sees and can act on. Host failures (permissions, a
// full disk) are std::system_error naming the relative path only.
//
// Example:
//   auto ws = std::make_shared<agentkit::Workspace>(agentkit::WorkspaceOptions{.root = "/srv/project"});
//   ws->write_file("notes/todo.md", "- ship\n");
//   for (const agentkit::ToolPtr& t : agentkit::workspace_tools(ws)) registry.add(t);
//   // the model then calls e.g. {"path": "notes/todo.md", "offset": 1, "limit": 50} on read_file
#include <agentkit/errors.h>
#include <agentkit/json.h>
#include <agentkit/tool.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace agentkit {

// The names of the workspace tools, in the order workspace_tools() returns them.
inline const std::vector<std::string> kWorkspaceTools = {"read_file", "write_file", "edit_file",
                                                         "list_dir",  "glob",       "search"};

// A bad option document (from_json) or option value (a constructor): names
// the key at fault. Code invalid_argument.
class OptionsError : public Error {
 public:
  OptionsError(std::string key, const std::string& problem)
      : Error(ErrorCode::invalid_argument, "option '" + key + "' " + problem), key_(std::move(key)) {}
  const std::string& key() const noexcept { return key_; }

 private:
  std::string key_;
};

// What a Workspace may do and how much it returns.
struct WorkspaceOptions {
  std::filesystem::path root;                 // an existing directory
  std::size_t max_file_bytes = 4u << 20;      // larger files are not read, and not written
  std::size_t max_output_bytes = 64u << 10;   // a tool's text result; past it the text is cut with a note
  std::size_t max_line_chars = 2000;          // read_file cuts longer lines (bytes, on a UTF-8 boundary)
  std::size_t max_entries = 500;              // list_dir and glob results
  std::size_t max_matches = 200;              // search results
  std::size_t max_scan_entries = 50000;       // directory entries one glob or search walks
  std::vector<std::string> tools = kWorkspaceTools;  // which tools workspace_tools() builds

  // {"root": "/srv/project", "max_file_bytes": 4194304, ..., "tools": ["read_file", ...]}:
  // every field. from_json takes any subset (the rest keep their defaults)
  // and throws OptionsError for an unknown key, a value of the wrong type or
  // an unknown tool name.
  Json to_json() const;
  static WorkspaceOptions from_json(const Json& j);
  friend bool operator==(const WorkspaceOptions&, const WorkspaceOptions&) = default;
};

// A refused workspace operation the model can fix: a path outside the root,
// a link, a missing file, an old_string that is not unique. what() is the
// message alone, e.g. "The path ../etc/passwd is not allowed: '..' segments
// are not allowed."; invalid() names the argument at fault.
class WorkspaceError : public ToolArgumentError {
 public:
  explicit WorkspaceError(std::string message, std::string argument = "path");
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// One directory entry. `path` is relative to the root, '/'-separated.
struct WorkspaceEntry {
  enum class Kind { file, directory, symlink, other };
  std::string path;
  Kind kind = Kind::file;
  std::uint64_t size = 0;  // files only
};

// One search hit: 1-based line number and the line (cut to max_line_chars).
struct WorkspaceMatch {
  std::string path;
  std::size_t line = 0;
  std::string text;
};

// The root and its operations. Thread-safe: every operation works from the
// root's descriptor (opened once; a later rename of the root does not
// redirect it), and writes and edits are serialised within this object.
class Workspace {
 public:
  // Throws OptionsError when `root` is not an existing directory or a cap is 0.
  explicit Workspace(WorkspaceOptions options);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  const WorkspaceOptions& options() const noexcept { return options_; }
  // The root as an absolute, canonical path.
  const std::filesystem::path& root() const noexcept { return root_; }

  // The whole content of a file (at most max_file_bytes).
  std::string read_file(std::string_view path) const;
  // Creates or replaces a file (atomically: a temporary renamed over it),
  // creating missing parent directories.
  void write_file(std::string_view path, std::string_view content) const;
  // Replaces `old_text` with `new_text`. `old_text` must occur exactly once
  // unless `replace_all`; returns the number of replacements.
  std::size_t edit_file(std::string_view path, std::string_view old_text, std::string_view new_text,
                        bool replace_all = false) const;
  // The entries of a directory, sorted by path, at most max_entries (`truncated`
  // says whether more exist). Links are listed as links, never followed.
  std::vector<WorkspaceEntry> list_dir(std::string_view path, bool* truncated = nullptr) const;
  // Files under the root whose relative path matches `pattern` (fnmatch per
  // segment; "**" matches any number of segments), sorted, at most max_entries.
  // Links are not followed.
  std::vector<std::string> glob(std::string_view pattern, bool* truncated = nullptr) const;
  // Lines matching the ECMAScript regular expression `pattern` in the text
  // files under `path` (whose relative path matches `glob`, when given), in
  // path then line order, at most max_matches. Binary, hard-linked and
  // over-size files are skipped; only each line's first max_line_chars are searched.
  std::vector<WorkspaceMatch> search(std::string_view pattern, std::string_view path = "",
                                     std::string_view glob = "", bool* truncated = nullptr) const;

  // A new descriptor (O_DIRECTORY, close-on-exec) of a directory inside the
  // root, reached without following links; the caller closes it. How the
  // command tool gets its working directory.
  int open_directory(std::string_view path) const;

 private:
  WorkspaceOptions options_;
  std::filesystem::path root_;
  int root_fd_ = -1;
  mutable std::mutex write_mutex_;
};

// The tools named in ws->options().tools, over `ws`. read_file, list_dir,
// glob and search are read-only (side_effecting false, idempotent);
// write_file and edit_file are side-effecting. None requires approval by
// itself (wrap them with with_approval(), or use an autonomy tier).
//   read_file  {path, offset? (1-based first line, default 1), limit? (lines, default 2000)}
//              -> the lines numbered like `cat -n`, cut with a note past max_output_bytes
//   write_file {path, content}                     -> "Wrote N bytes to PATH"
//   edit_file  {path, old_string, new_string, replace_all? (default false)}
//   list_dir   {path? (default the root)}          -> one "PATH[/] (N bytes)" line per entry
//   glob       {pattern}                           -> one path per line
//   search     {pattern, path?, glob?}             -> "PATH:LINE: TEXT" lines
// Throws agentkit::Error (invalid_argument) if `ws` is null.
std::vector<ToolPtr> workspace_tools(std::shared_ptr<const Workspace> ws);

}  // namespace agentkit
