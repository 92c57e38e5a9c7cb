#pragma once
// SqliteStore: a Store in one SQLite file, shared by threads and processes.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <agentkit/state/store.h>

namespace agentkit::state {

// A Store kept in a SQLite database file (WAL journal). Entries survive the
// process; a TTL is kept as an absolute wall-clock expiry (system_clock), so
// it keeps counting while no process has the file open and moves if the
// system clock is changed. Expired entries read as absent and are deleted
// lazily by the reads and writes that meet them.
//
// Concurrency: one object holds one connection behind a mutex, so any number
// of threads may share it (their calls run one at a time). Several objects or
// processes may open the same file: every write is a single SQL statement,
// and SQLite's file locking makes exactly one of two racing compare_and_set
// calls on a key win. A writer that finds the file locked waits up to
// Options::busy_timeout, then throws StoreError. The file must be on a local
// filesystem (WAL needs shared memory; no NFS).
//
// Every method throws StoreError on a backend failure (disk full, I/O error,
// corruption, lock timeout). Keys and values may hold any bytes, including
// '\0', '%', '_' and UTF-8; list(prefix) orders keys bytewise, as std::string
// does.
//
// Example:
//   SqliteStore store("/var/lib/myapp/state.db");
//   const std::string key = scoped_key(ctx.scope, "runs/r1");
//   auto v = store.compare_and_set(key, 0, R"({"step":1})");  // create once
//   if (!v) { /* someone else created it first */ }
class SqliteStore final : public Store {
 public:
  enum class Durability {
    // synchronous=FULL: the WAL is fsynced by every commit, so a write has
    // reached the disk once the call returns and survives power loss or an
    // OS crash.
    full,
    // synchronous=NORMAL: a write survives the process crashing (even
    // SIGKILL) once the call returns, but the last writes before a power loss
    // or OS crash may be lost (the file stays consistent). Faster: the WAL is
    // fsynced only at checkpoints.
    normal,
  };

  struct Options {
    Durability durability = Durability::full;
    // How long a call waits for another connection or process holding the
    // write lock before it throws StoreError.
    std::chrono::milliseconds busy_timeout{5000};
  };

  // Opens the database at `path`, creating the file (not its directory) and
  // the schema when absent. Throws StoreError naming the path when the file
  // cannot be opened or created, is not a SQLite database, is a SQLite
  // database of another application, or has a newer schema version than
  // this build reads.
  explicit SqliteStore(std::filesystem::path path) : SqliteStore(std::move(path), Options{}) {}
  SqliteStore(std::filesystem::path path, Options options);
  ~SqliteStore() override;

  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  std::optional<Entry> get(std::string_view key) override;
  std::int64_t put(std::string_view key, std::string value, Ttl ttl = std::nullopt) override;
  std::optional<std::int64_t> compare_and_set(std::string_view key, std::int64_t expected_version, std::string value,
                                              Ttl ttl = std::nullopt) override;
  bool erase(std::string_view key) override;
  std::vector<std::pair<std::string, Entry>> list(std::string_view prefix) override;

  const std::filesystem::path& path() const noexcept { return path_; }

  // The on-disk format this build reads and writes (PRAGMA user_version).
  static constexpr int kSchemaVersion = 1;

 private:
  struct Impl;

  std::filesystem::path path_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace agentkit::state
