// The descriptor-relative walk shared by DirectoryFiles and Workspace.
#include <agentkit/detail/confined_fs.h>
#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <random>
#include <system_error>

namespace agentkit::detail {

Walked walk_beneath(int root, const std::vector<std::string>& segments, std::size_t depth, bool create, mode_t mode) {
  Walked walked;
  walked.dir = UniqueFd(::openat(root, ".", kConfinedDirFlags));
  if (!walked.dir) return {UniqueFd(), WalkStop::failed, 0, errno};
  for (std::size_t i = 0; i < depth; ++i) {
    const char* name = segments[i].c_str();
    int fd = ::openat(walked.dir.get(), name, kConfinedDirFlags);
    if (fd < 0 && errno == ENOENT && create) {
      if (::mkdirat(walked.dir.get(), name, mode) != 0 && errno != EEXIST) return {UniqueFd(), WalkStop::failed, i, errno};
      fd = ::openat(walked.dir.get(), name, kConfinedDirFlags);
    }
    if (fd < 0) {
      const int err = errno;
      if (err == ENOENT) return {UniqueFd(), WalkStop::missing, i, err};
      if (err != ELOOP && err != ENOTDIR) return {UniqueFd(), WalkStop::failed, i, err};
      struct stat st {};
      if (::fstatat(walked.dir.get(), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        return {UniqueFd(), errno == ENOENT ? WalkStop::missing : WalkStop::failed, i, errno};
      }
      return {UniqueFd(), S_ISLNK(st.st_mode) ? WalkStop::symlink : WalkStop::not_directory, i, err};
    }
    walked.dir = UniqueFd(fd);
  }
  return walked;
}

std::vector<std::string> names_in(int dir, const std::string& what) {
  int copy = ::openat(dir, ".", kConfinedDirFlags);  // its own offset: `dir` stays usable
  if (copy < 0) throw std::system_error(errno, std::generic_category(), what);
  std::unique_ptr<DIR, int (*)(DIR*)> stream(::fdopendir(copy), ::closedir);
  if (!stream) {
    const int err = errno;
    ::close(copy);
    throw std::system_error(err, std::generic_category(), what);
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(stream.get())) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  return names;
}

void write_all(int fd, std::string_view text, const std::string& what) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::system_error(errno, std::generic_category(), what);
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::pair<std::string, UniqueFd> create_temp(int dir, std::string_view prefix, const std::string& what) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  for (int attempt = 0; attempt < 8; ++attempt) {
    char suffix[20];
    std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(rng()));
    std::string name = std::string(prefix) + suffix;
    UniqueFd fd(::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd) return {std::move(name), std::move(fd)};
    if (errno != EEXIST) throw std::system_error(errno, std::generic_category(), what);
  }
  throw std::system_error(EEXIST, std::generic_category(), what);
}

}  // namespace agentkit::detail
