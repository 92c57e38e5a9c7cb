// DirectoryFiles: the /memories tree in a directory, confined to it.
//
// Every path is walked from the root's descriptor one segment at a time with
// openat(O_NOFOLLOW | O_DIRECTORY), and every leaf operation is an *at() call
// that does not follow links (fstatat(AT_SYMLINK_NOFOLLOW), openat(O_NOFOLLOW),
// unlinkat, renameat2, mkdirat). No path string is ever resolved by the
// kernel from the root down, so a link swapped in between a check and a use
// cannot redirect the operation: it is refused at the component where it sits.
#include <agentkit/detail/confined_fs.h>
#include <agentkit/state/memory_tool.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <system_error>

#include "memory_internal.h"

namespace agentkit::state {

using namespace memory_detail;

namespace {

using Fd = detail::UniqueFd;

[[noreturn]] void fail(const char* what, const MemoryPath& path, int err = errno) {
  throw std::system_error(err, std::generic_category(), std::string("memory: cannot ") + what + " " + path.str());
}

constexpr int kDirFlags = detail::kConfinedDirFlags;

// Where a walk stopped short: the first prefix that is missing or a file.
struct Walked {
  Fd dir;
  std::optional<MemoryPath> stop;
  FileKind stop_kind = FileKind::none;
};

// lstat of `name` in `dir`; nullopt when absent.
std::optional<struct stat> lstat_at(int dir, const std::string& name, const MemoryPath& shown) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return st;
  if (errno == ENOENT) return std::nullopt;
  fail("inspect", shown);
}

// What an lstat result is; links and special files are refused.
FileKind kind_of(const struct stat& st, const MemoryPath& path) {
  if (S_ISLNK(st.st_mode)) throw symlink_refused(path);
  if (S_ISDIR(st.st_mode)) return FileKind::directory;
  if (S_ISREG(st.st_mode)) return FileKind::file;
  throw MemoryError("The path " + path.str() + " is not a regular file or directory");
}

// Opens the directory made of the first `depth` segments of `path`, creating
// missing ones when `create` is set. A link on the way throws.
Walked walk(int root, const MemoryPath& path, std::size_t depth, bool create) {
  detail::Walked walked = detail::walk_beneath(root, path.segments(), depth, create, 0700);
  if (walked.stop == detail::WalkStop::none) return {std::move(walked.dir), std::nullopt, FileKind::none};
  MemoryPath at = MemoryPath::root();
  for (std::size_t i = 0; i <= walked.at && i < depth; ++i) at = at.child(path.segments()[i]);
  switch (walked.stop) {
    case detail::WalkStop::missing: return {Fd(), at, FileKind::none};
    case detail::WalkStop::not_directory: return {Fd(), at, FileKind::file};
    case detail::WalkStop::symlink: throw symlink_refused(at);
    default: fail("open", at, walked.error);
  }
}

Fd walk_or_throw(int root, const MemoryPath& path, std::size_t depth, bool create) {
  Walked walked = walk(root, path, depth, create);
  if (walked.stop) throw walked.stop_kind == FileKind::none ? not_found(*walked.stop) : not_a_directory(*walked.stop);
  return std::move(walked.dir);
}

Fd open_parent(int root, const MemoryPath& path, bool create) {
  return walk_or_throw(root, path, path.segments().size() - 1, create);
}

const std::string& leaf(const MemoryPath& path) { return path.segments().back(); }

std::vector<std::string> names_in(int dir, const MemoryPath& shown) {
  return detail::names_in(dir, "memory: cannot list " + shown.str());
}

// Deletes directory `name` in `parent` and everything in it. Links inside
// are unlinked, never followed.
void remove_tree(int parent, const std::string& name, const MemoryPath& shown) {
  Fd dir(::openat(parent, name.c_str(), kDirFlags));
  if (!dir) {
    if (errno != ELOOP && errno != ENOTDIR) fail("delete", shown);
    if (::unlinkat(parent, name.c_str(), 0) != 0) fail("delete", shown);
    return;
  }
  for (const auto& child : names_in(dir.get(), shown)) {
    struct stat st {};
    if (::fstatat(dir.get(), child.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      remove_tree(dir.get(), child, shown);
    } else if (::unlinkat(dir.get(), child.c_str(), 0) != 0 && errno != ENOENT) {
      fail("delete", shown);
    }
  }
  if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0) fail("delete", shown);
}

}  // namespace

DirectoryFiles::DirectoryFiles(const std::filesystem::path& root) {
  std::filesystem::create_directories(root);
  root_fd_ = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_fd_ < 0) {
    throw std::system_error(errno, std::generic_category(), "DirectoryFiles: cannot open " + root.string());
  }
}

DirectoryFiles::~DirectoryFiles() { ::close(root_fd_); }

FileKind DirectoryFiles::kind(const MemoryPath& path) const {
  auto guard = lock();
  if (path.is_root()) return FileKind::directory;
  Walked parent = walk(root_fd_, path, path.segments().size() - 1, false);
  if (parent.stop) return FileKind::none;
  auto st = lstat_at(parent.dir.get(), leaf(path), path);
  return st ? kind_of(*st, path) : FileKind::none;
}

std::vector<DirEntry> DirectoryFiles::list(const MemoryPath& dir) const {
  auto guard = lock();
  Fd fd = walk_or_throw(root_fd_, dir, dir.segments().size(), false);
  std::vector<DirEntry> entries;
  for (auto& name : names_in(fd.get(), dir)) {
    struct stat st {};
    if (::fstatat(fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) continue;
    try {
      (void)dir.child(name);  // a name the path rules refuse cannot be addressed: leave it out
    } catch (const MemoryError&) {
      continue;
    }
    const bool is_dir = S_ISDIR(st.st_mode);
    entries.push_back({std::move(name), is_dir ? FileKind::directory : FileKind::file,
                       is_dir ? 0 : static_cast<std::uint64_t>(st.st_size)});
  }
  std::sort(entries.begin(), entries.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return entries;
}

std::string DirectoryFiles::read(const MemoryPath& file) const {
  auto guard = lock();
  if (file.is_root()) throw is_a_directory(file);
  Fd parent = open_parent(root_fd_, file, false);
  auto before = lstat_at(parent.get(), leaf(file), file);
  if (!before) throw not_found(file);
  if (kind_of(*before, file) == FileKind::directory) throw is_a_directory(file);
  Fd fd(::openat(parent.get(), leaf(file).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) throw not_found(file);
    if (errno == ELOOP) throw symlink_refused(file);
    fail("read", file);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail("read", file);
  if (!S_ISREG(st.st_mode) || st.st_ino != before->st_ino || st.st_dev != before->st_dev) {
    throw MemoryError("The path " + file.str() + " changed while it was being read; try again");
  }
  if (st.st_nlink > 1) {
    throw MemoryError("The file " + file.str() +
                      " has other hard links, which may lie outside /memories; it is not read");
  }
  if (static_cast<std::uint64_t>(st.st_size) > kMaxMemoryFileBytes) throw too_large(file, st.st_size);
  std::string content;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("read", file);
    if (n == 0) break;
    content.append(buf, static_cast<std::size_t>(n));
    if (content.size() > kMaxMemoryFileBytes) throw too_large(file, content.size());
  }
  return content;
}

void DirectoryFiles::write(const MemoryPath& file, std::string_view text) {
  auto guard = lock();
  if (file.is_root()) throw is_a_directory(file);
  if (text.size() > kMaxMemoryFileBytes) throw too_large(file, text.size());
  Fd parent = open_parent(root_fd_, file, true);
  if (auto st = lstat_at(parent.get(), leaf(file), file); st && kind_of(*st, file) == FileKind::directory) {
    throw is_a_directory(file);
  }
  const std::string cannot_write = "memory: cannot write " + file.str();
  auto [temp, out] = detail::create_temp(parent.get(), ".memory-tmp-", cannot_write);
  try {
    detail::write_all(out.get(), text, cannot_write);
    if (::fsync(out.get()) != 0) fail("write", file);
    if (::renameat(parent.get(), temp.c_str(), parent.get(), leaf(file).c_str()) != 0) fail("write", file);
  } catch (...) {
    ::unlinkat(parent.get(), temp.c_str(), 0);
    throw;
  }
}

void DirectoryFiles::remove(const MemoryPath& path) {
  auto guard = lock();
  if (path.is_root()) throw MemoryError("Cannot delete the /memories directory itself");
  Fd parent = open_parent(root_fd_, path, false);
  auto st = lstat_at(parent.get(), leaf(path), path);
  if (!st) throw not_found(path);
  if (kind_of(*st, path) == FileKind::directory) {
    remove_tree(parent.get(), leaf(path), path);
  } else if (::unlinkat(parent.get(), leaf(path).c_str(), 0) != 0) {
    fail("delete", path);
  }
}

void DirectoryFiles::rename(const MemoryPath& from, const MemoryPath& to) {
  auto guard = lock();
  if (from.is_root() || to.is_root()) throw MemoryError("Cannot rename the /memories directory itself", "old_path");
  if (from.contains(to)) throw MemoryError("Cannot move " + from.str() + " into itself (" + to.str() + ")", "new_path");
  Fd source = open_parent(root_fd_, from, false);
  auto st = lstat_at(source.get(), leaf(from), from);
  if (!st) throw not_found(from);
  kind_of(*st, from);
  Fd target = open_parent(root_fd_, to, true);
  const char* old_name = leaf(from).c_str();
  const char* new_name = leaf(to).c_str();
  if (::renameat2(source.get(), old_name, target.get(), new_name, RENAME_NOREPLACE) == 0) return;
  if (errno == EEXIST) throw already_exists(to);
  if (errno != EINVAL && errno != ENOSYS) fail("rename", from);
  // The filesystem has no RENAME_NOREPLACE: check, then rename, under the lock.
  if (lstat_at(target.get(), leaf(to), to)) throw already_exists(to);
  if (::renameat(source.get(), old_name, target.get(), new_name) != 0) fail("rename", from);
}

}  // namespace agentkit::state
