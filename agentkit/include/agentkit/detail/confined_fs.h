#pragma once
// Descriptor-relative file access beneath a directory: the walk that keeps
// the `memory` tool's DirectoryFiles and the Workspace inside their roots.
// Internal (agentkit::detail): each caller turns a stop into its own
// model-visible error.
//
// No path string is ever resolved by the kernel from the root down: each
// directory is opened from its parent's descriptor with
// openat(O_NOFOLLOW | O_DIRECTORY), so a symbolic link at any component,
// even one swapped in between two calls, stops the walk where it sits.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentkit::detail {

inline constexpr int kConfinedDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// An owned file descriptor (-1 = none).
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int get() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }
  explicit operator bool() const noexcept { return fd_ >= 0; }

 private:
  int fd_;
};

// Why a walk stopped short.
enum class WalkStop {
  none,           // every segment was opened: `dir` is the directory reached
  missing,        // segments[at] does not exist (and `create` was not set)
  not_directory,  // segments[at] is a file, device, FIFO or socket
  symlink,        // segments[at] is a symbolic link
  failed,         // another error (`error` is the errno) at segments[at]
};

struct Walked {
  UniqueFd dir;
  WalkStop stop = WalkStop::none;
  std::size_t at = 0;
  int error = 0;
};

// Opens the directory made of the first `depth` of `segments` beneath `root`
// (a fresh descriptor even for depth 0, with its own directory offset),
// creating missing directories with `mode` when `create` is set. Never throws
// for what it finds; the caller maps the stop to its own error.
Walked walk_beneath(int root, const std::vector<std::string>& segments, std::size_t depth, bool create,
                    mode_t mode = 0700);

// Every name in the open directory `dir` except "." and "..", in directory
// order. Throws std::system_error (message `what`) when it cannot be read.
std::vector<std::string> names_in(int dir, const std::string& what);

// Writes all of `text` to `fd`. Throws std::system_error (message `what`).
void write_all(int fd, std::string_view text, const std::string& what);

// A new file in `dir` named `prefix` plus random hex, created with
// O_EXCL | O_NOFOLLOW and mode 0600: its name and a write descriptor.
// Throws std::system_error (message `what`).
std::pair<std::string, UniqueFd> create_temp(int dir, std::string_view prefix, const std::string& what);

}  // namespace agentkit::detail
