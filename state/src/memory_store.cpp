#include <agentkit/state/store.h>

namespace agentkit::state {

std::string scoped_key(const Scope& scope, std::string_view key) {
  std::string out = scope.key();
  out += '/';
  out += key;
  return out;
}

InMemoryStore::Slot* InMemoryStore::live(std::string_view key, Clock::time_point now) {
  auto it = slots_.find(key);
  if (it == slots_.end()) return nullptr;
  if (it->second.expires && *it->second.expires <= now) {
    slots_.erase(it);
    return nullptr;
  }
  return &it->second;
}

std::int64_t InMemoryStore::write(std::string_view key, std::int64_t previous_version, std::string value, Ttl ttl,
                                  Clock::time_point now) {
  Slot slot{{std::move(value), previous_version + 1}, std::nullopt};
  if (ttl) {
    // A TTL past the clock's range saturates instead of overflowing into the past.
    const auto room = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now);
    slot.expires = *ttl >= room ? Clock::time_point::max() : now + *ttl;
  }
  const std::int64_t version = slot.entry.version;
  slots_.insert_or_assign(std::string(key), std::move(slot));
  return version;
}

std::optional<Entry> InMemoryStore::get(std::string_view key) {
  std::lock_guard lock(mutex_);
  if (Slot* slot = live(key, Clock::now())) return slot->entry;
  return std::nullopt;
}

std::int64_t InMemoryStore::put(std::string_view key, std::string value, Ttl ttl) {
  std::lock_guard lock(mutex_);
  const auto now = Clock::now();
  Slot* slot = live(key, now);
  return write(key, slot ? slot->entry.version : 0, std::move(value), ttl, now);
}

std::optional<std::int64_t> InMemoryStore::compare_and_set(std::string_view key, std::int64_t expected_version,
                                                           std::string value, Ttl ttl) {
  std::lock_guard lock(mutex_);
  const auto now = Clock::now();
  Slot* slot = live(key, now);
  const std::int64_t current = slot ? slot->entry.version : 0;
  if (current != expected_version) return std::nullopt;
  return write(key, current, std::move(value), ttl, now);
}

bool InMemoryStore::erase(std::string_view key) {
  std::lock_guard lock(mutex_);
  const bool present = live(key, Clock::now()) != nullptr;
  if (present) slots_.erase(slots_.find(key));
  return present;
}

std::vector<std::pair<std::string, Entry>> InMemoryStore::list(std::string_view prefix) {
  std::lock_guard lock(mutex_);
  const auto now = Clock::now();
  std::vector<std::pair<std::string, Entry>> out;
  for (auto it = slots_.lower_bound(prefix); it != slots_.end() && it->first.starts_with(prefix);) {
    if (it->second.expires && *it->second.expires <= now) {
      it = slots_.erase(it);
      continue;
    }
    out.emplace_back(it->first, it->second.entry);
    ++it;
  }
  return out;
}

}  // namespace agentkit::state
