// MemoryPath: the one validation every memory backend relies on.
#include <agentkit/json.h>
#include <agentkit/state/memory_tool.h>

#include "memory_internal.h"

namespace agentkit::state {

namespace {

constexpr std::string_view kRoot = "/memories";
constexpr std::size_t kShownBytes = 160;

// A refused path as the message shows it: verbatim when short and printable,
// otherwise JSON-escaped to ASCII (NUL and bad bytes become visible) and cut.
std::string shown(std::string_view text) {
  bool printable = text.size() <= kShownBytes && is_valid_utf8(text);
  for (unsigned char c : text) printable = printable && c >= 0x20 && c != 0x7f;
  if (printable) return std::string(text);
  std::string escaped = Json(std::string(text)).dump(-1, ' ', true, Json::error_handler_t::replace);
  if (escaped.size() > kShownBytes) escaped = escaped.substr(0, kShownBytes) + "...";
  return escaped;
}

// Why `text` is not an acceptable memory path, or "" when it is.
std::string problem_with(std::string_view text) {
  if (text.size() > kMaxMemoryPathBytes) {
    return "it is " + std::to_string(text.size()) + " bytes long, the limit is " + std::to_string(kMaxMemoryPathBytes);
  }
  if (!is_valid_utf8(text)) return "it is not valid UTF-8";
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) return "it contains a NUL or control character";
  }
  if (text.find('\\') != std::string_view::npos) return "backslashes are not allowed, separate names with /";
  if (text.substr(0, kRoot.size()) != kRoot || (text.size() > kRoot.size() && text[kRoot.size()] != '/')) {
    return "memory paths start with /memories";
  }
  return {};
}

std::string problem_with_segment(std::string_view segment) {
  if (segment == "." || segment == "..") return "'.' and '..' segments are not allowed";
  if (segment.size() > kMaxMemoryNameBytes) {
    return "a name is " + std::to_string(segment.size()) + " bytes long, the limit is " +
           std::to_string(kMaxMemoryNameBytes);
  }
  return {};
}

std::string join(const std::vector<std::string>& segments) {
  std::string text(kRoot);
  for (const auto& segment : segments) text += '/' + segment;
  return text;
}

}  // namespace

MemoryError::MemoryError(std::string message, std::string argument)
    : ToolArgumentError("memory", {}, {}, {{std::move(argument), message}}, {}), message_(std::move(message)) {}

MemoryPath MemoryPath::parse(std::string_view text, std::string_view argument) {
  const auto refuse = [&](const std::string& why) {
    throw MemoryError("The path " + shown(text) + " is not allowed: " + why + ".", std::string(argument));
  };
  if (auto why = problem_with(text); !why.empty()) refuse(why);
  MemoryPath path;
  std::string_view rest = text.substr(kRoot.size());
  while (!rest.empty()) {
    const auto slash = rest.find('/');
    const std::string_view segment = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    if (segment.empty()) continue;
    if (auto why = problem_with_segment(segment); !why.empty()) refuse(why);
    path.segments_.emplace_back(segment);
  }
  path.text_ = join(path.segments_);
  return path;
}

MemoryPath MemoryPath::root() { return MemoryPath(); }

MemoryPath MemoryPath::child(std::string_view name) const {
  if (name.empty() || name.find('/') != std::string_view::npos) {
    throw MemoryError("The name " + shown(name) + " is not allowed: a name is one non-empty path segment.");
  }
  return parse(text_ + '/' + std::string(name));
}

MemoryPath MemoryPath::parent() const {
  MemoryPath up = *this;
  if (!up.segments_.empty()) up.segments_.pop_back();
  up.text_ = join(up.segments_);
  return up;
}

std::string_view MemoryPath::name() const noexcept {
  return segments_.empty() ? kRoot.substr(1) : std::string_view(segments_.back());
}

bool MemoryPath::contains(const MemoryPath& other) const noexcept {
  if (other.segments_.size() < segments_.size()) return false;
  for (std::size_t i = 0; i < segments_.size(); ++i) {
    if (segments_[i] != other.segments_[i]) return false;
  }
  return true;
}

namespace memory_detail {

std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) noexcept {
  if (text.size() <= max_bytes) return text;
  std::size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

MemoryError not_found(const MemoryPath& path) { return MemoryError("The path " + path.str() + " does not exist"); }

MemoryError not_a_directory(const MemoryPath& path) {
  return MemoryError("The path " + path.str() + " is not a directory");
}

MemoryError is_a_directory(const MemoryPath& path) {
  return MemoryError("The path " + path.str() + " is a directory, not a file");
}

MemoryError already_exists(const MemoryPath& path) {
  return MemoryError("The destination " + path.str() + " already exists");
}

MemoryError symlink_refused(const MemoryPath& path) {
  return MemoryError("The path " + path.str() + " is a symbolic link; links are not followed in /memories");
}

MemoryError too_large(const MemoryPath& path, std::size_t bytes) {
  return MemoryError("File " + path.str() + " would be " + std::to_string(bytes) + " bytes, over the limit of " +
                     std::to_string(kMaxMemoryFileBytes) + " bytes");
}

}  // namespace memory_detail

}  // namespace agentkit::state
