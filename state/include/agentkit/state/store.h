#pragma once
// Store: the one place agentkit state persists. Keys are strings (scope them
// with scoped_key), values are opaque text (JSON by convention), and every
// write bumps a per-key version so compare_and_set can arbitrate races.
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <agentkit/error.h>
#include <agentkit/context.h>

namespace agentkit::state {

// A backend failure (a lost race is not one: compare_and_set returns nullopt
// for that). Examples: the file cannot be opened or created, is not a store or
// was written by a newer format, the disk is full, another writer held the
// lock past the busy timeout, the database server cannot be reached. The
// message names the backend's location (a file path, a server) and never a
// key, a value or a credential. Code unavailable, or outcome_unknown for a
// write that may or may not have been applied (its connection broke after
// the write was sent).
class StoreError : public Error {
 public:
  explicit StoreError(const std::string& message, ErrorCode code = ErrorCode::unavailable) : Error(code, message) {}
};

struct Entry {
  std::string value;
  std::int64_t version = 0;  // 1 for the first write, +1 per write after
};

// A key/value store. Implementations MUST be safe to use from several
// threads at once, and a write MUST be visible to every later read once the
// call returns.
class Store {
 public:
  using Ttl = std::optional<std::chrono::milliseconds>;

  virtual ~Store() = default;

  virtual std::optional<Entry> get(std::string_view key) = 0;
  // Writes unconditionally; returns the new version.
  virtual std::int64_t put(std::string_view key, std::string value, Ttl ttl = std::nullopt) = 0;
  // Writes only when the key's current version is `expected_version` (0: the
  // key must be absent). Returns the new version, or nullopt when another
  // writer got there first.
  virtual std::optional<std::int64_t> compare_and_set(std::string_view key, std::int64_t expected_version,
                                                      std::string value, Ttl ttl = std::nullopt) = 0;
  // Removes a key; returns whether it was there.
  virtual bool erase(std::string_view key) = 0;
  // Every live entry whose key starts with `prefix`, sorted by key.
  virtual std::vector<std::pair<std::string, Entry>> list(std::string_view prefix) = 0;
};

// "<scope key>/<key>": keeps tenants apart in one store.
std::string scoped_key(const Scope& scope, std::string_view key);

// A Store in process memory: for tests, examples and single-process hosts.
// Expired entries read as absent and are dropped lazily.
class InMemoryStore final : public Store {
 public:
  using Clock = std::chrono::steady_clock;

  std::optional<Entry> get(std::string_view key) override;
  std::int64_t put(std::string_view key, std::string value, Ttl ttl = std::nullopt) override;
  std::optional<std::int64_t> compare_and_set(std::string_view key, std::int64_t expected_version, std::string value,
                                              Ttl ttl = std::nullopt) override;
  bool erase(std::string_view key) override;
  std::vector<std::pair<std::string, Entry>> list(std::string_view prefix) override;

 private:
  struct Slot {
    Entry entry;
    std::optional<Clock::time_point> expires;
  };
  // The live slot for `key`, dropping it when expired. Caller holds mutex_.
  Slot* live(std::string_view key, Clock::time_point now);
  std::int64_t write(std::string_view key, std::int64_t previous_version, std::string value, Ttl ttl,
                     Clock::time_point now);

  std::mutex mutex_;
  std::map<std::string, Slot, std::less<>> slots_;
};

}  // namespace agentkit::state
