// InMemoryFiles: the /memories tree in a map keyed by normalised path.
#include <agentkit/state/memory_tool.h>

#include "memory_internal.h"

namespace agentkit::state {

using namespace memory_detail;

namespace {

// Keys strictly below `dir` ("/memories/a" -> everything from "/memories/a/").
template <class Map>
auto below(Map& nodes, const MemoryPath& dir) {
  const std::string prefix = dir.str() + '/';
  auto first = nodes.lower_bound(prefix);
  auto last = first;
  while (last != nodes.end() && last->first.compare(0, prefix.size(), prefix) == 0) ++last;
  return std::pair{first, last};
}

}  // namespace

FileKind InMemoryFiles::kind(const MemoryPath& path) const {
  auto guard = lock();
  if (path.is_root()) return FileKind::directory;
  auto it = nodes_.find(path.str());
  return it == nodes_.end() ? FileKind::none : it->second.kind;
}

void InMemoryFiles::require_directory(const MemoryPath& dir) const {
  switch (kind(dir)) {
    case FileKind::none:
      throw not_found(dir);
    case FileKind::file:
      throw not_a_directory(dir);
    case FileKind::directory:
      return;
  }
}

std::vector<DirEntry> InMemoryFiles::list(const MemoryPath& dir) const {
  auto guard = lock();
  require_directory(dir);
  std::vector<DirEntry> entries;
  const std::size_t prefix = dir.str().size() + 1;
  auto [first, last] = below(nodes_, dir);
  for (auto it = first; it != last; ++it) {
    std::string_view name = std::string_view(it->first).substr(prefix);
    if (name.find('/') != std::string_view::npos) continue;  // a grandchild
    entries.push_back({std::string(name), it->second.kind, it->second.content.size()});
  }
  return entries;  // map order is bytewise name order among siblings
}

std::string InMemoryFiles::read(const MemoryPath& file) const {
  auto guard = lock();
  switch (kind(file)) {
    case FileKind::none:
      throw not_found(file);
    case FileKind::directory:
      throw is_a_directory(file);
    case FileKind::file:
      break;
  }
  return nodes_.find(file.str())->second.content;
}

void InMemoryFiles::make_parents(const MemoryPath& path) {
  MemoryPath dir = MemoryPath::root();
  for (std::size_t i = 0; i + 1 < path.segments().size(); ++i) {
    dir = dir.child(path.segments()[i]);
    auto [it, inserted] = nodes_.try_emplace(dir.str(), Node{FileKind::directory, {}});
    if (!inserted && it->second.kind != FileKind::directory) throw not_a_directory(dir);
  }
}

void InMemoryFiles::write(const MemoryPath& file, std::string_view text) {
  auto guard = lock();
  if (file.is_root() || kind(file) == FileKind::directory) throw is_a_directory(file);
  if (text.size() > kMaxMemoryFileBytes) throw too_large(file, text.size());
  make_parents(file);
  nodes_.insert_or_assign(file.str(), Node{FileKind::file, std::string(text)});
}

void InMemoryFiles::remove(const MemoryPath& path) {
  auto guard = lock();
  if (path.is_root()) throw MemoryError("Cannot delete the /memories directory itself");
  if (kind(path) == FileKind::none) throw not_found(path);
  auto [first, last] = below(nodes_, path);
  nodes_.erase(first, last);
  nodes_.erase(path.str());
}

void InMemoryFiles::rename(const MemoryPath& from, const MemoryPath& to) {
  auto guard = lock();
  if (from.is_root() || to.is_root()) throw MemoryError("Cannot rename the /memories directory itself", "old_path");
  if (kind(from) == FileKind::none) throw not_found(from);
  if (kind(to) != FileKind::none) throw already_exists(to);
  if (from.contains(to)) {
    throw MemoryError("Cannot move " + from.str() + " into itself (" + to.str() + ")", "new_path");
  }
  make_parents(to);
  auto moved = nodes_.extract(from.str());
  moved.key() = to.str();
  auto [first, last] = below(nodes_, from);
  std::vector<std::pair<std::string, Node>> children;
  for (auto it = first; it != last; ++it) {
    children.emplace_back(to.str() + it->first.substr(from.str().size()), std::move(it->second));
  }
  nodes_.erase(first, last);
  nodes_.insert(std::move(moved));
  for (auto& [key, node] : children) nodes_.insert_or_assign(std::move(key), std::move(node));
}

}  // namespace agentkit::state
