#pragma once
// PostgresStore: a Store in one PostgreSQL table, shared by every process
// (every worker of a fleet) that connects to the same database.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <agentkit/backoff.h>
#include <agentkit/state/store.h>

namespace agentkit::state {

// A Store kept in a PostgreSQL table (libpq). Entries survive every process;
// a TTL becomes an absolute expiry computed with the SERVER's clock (now() +
// ttl), so every worker agrees on it whatever its own clock says. Expired
// entries read as absent and are deleted lazily by the reads and writes that
// meet them. Versions follow SqliteStore exactly: 1 on the first write, +1 per
// write, and a write after an erase or an expiry starts again at 1.
//
// Concurrency: one object holds a small pool of connections (Options::
// pool_size) behind a mutex, so any number of threads may share it; calls
// beyond the pool's size wait for a free connection. Every write is a single
// SQL statement in autocommit mode, so of two racing compare_and_set calls on
// a key (from any threads, objects or hosts) exactly one wins.
//
// Failures: every method throws StoreError. Its message names the server
// (host:port/dbname), the table and libpq's or the server's error text,
// never a key, a value or a password. A connection found broken is replaced:
// a call that cannot reach the server tries Options::attempts times in all,
// waiting Options::backoff between tries, then throws StoreError (code
// unavailable). get() and list() are tried again even when the connection
// broke while they ran; a write is tried again only when it was never sent.
// A write whose connection broke after it was sent is never sent twice: it
// throws StoreError with code outcome_unknown (it may or may not have been
// applied; re-read the key to find out).
//
// Keys and values may hold any bytes, including '\0', '%', '_' and UTF-8
// (both are bytea); list(prefix) orders keys bytewise, as std::string does,
// whatever the database's collation.
//
// Example:
//   // A libpq connection string or URI; PG* environment variables, service
//   // files (service=...), ~/.pgpass and TLS (sslmode=verify-full) work as
//   // libpq defines them.
//   PostgresStore store("postgresql://agent@db.internal/app?sslmode=verify-full",
//                       {.pool_size = 8, .table = "agents.store"});
//   auto v = store.compare_and_set(scoped_key(ctx.scope, "runs/r1"), 0, R"({"step":1})");
class PostgresStore final : public Store {
 public:
  struct Options {
    // Connections this object keeps open at most; threads beyond it wait.
    std::size_t pool_size = 4;
    // The server cancels a statement running longer than this (the
    // statement_timeout setting); the call throws StoreError. 0: no limit.
    std::chrono::milliseconds statement_timeout{30000};
    // Gives up on opening a connection after this long (libpq's
    // connect_timeout: whole seconds, at least 2; 0: no limit). Overrides
    // connect_timeout in the connection string or PGCONNECT_TIMEOUT.
    std::chrono::seconds connect_timeout{10};
    // Tries per call when the server cannot be reached or a connection
    // breaks (see the class comment), and the wait between them.
    int attempts = 3;
    Backoff backoff{.base = std::chrono::milliseconds(100), .max = std::chrono::seconds(2)};
    // The table, optionally schema-qualified ("agents.store"); each part a
    // plain identifier (letters, digits, '_'), used as written (quoted, so
    // case-sensitive). Created on first use; the schema must exist.
    std::string table = "agentkit_store";
  };

  // Connects (libpq's PQconnectdb rules) and creates the table when absent.
  // Throws agentkit::Error (invalid_argument) for a connection string libpq
  // cannot parse or a bad table name, and StoreError when the server cannot
  // be reached, refuses the login, or holds a table of that name that is not
  // an agentkit store or has a newer schema version than this build reads.
  explicit PostgresStore(const std::string& conninfo) : PostgresStore(conninfo, Options{}) {}
  PostgresStore(const std::string& conninfo, Options options);
  ~PostgresStore() override;

  PostgresStore(const PostgresStore&) = delete;
  PostgresStore& operator=(const PostgresStore&) = delete;

  std::optional<Entry> get(std::string_view key) override;
  std::int64_t put(std::string_view key, std::string value, Ttl ttl = std::nullopt) override;
  std::optional<std::int64_t> compare_and_set(std::string_view key, std::int64_t expected_version, std::string value,
                                              Ttl ttl = std::nullopt) override;
  bool erase(std::string_view key) override;
  std::vector<std::pair<std::string, Entry>> list(std::string_view prefix) override;

  // The table's format this build reads and writes (kept in the table's
  // comment: "agentkit store <version>").
  static constexpr int kSchemaVersion = 1;

 private:
  struct Impl;

  std::unique_ptr<Impl> impl_;
};

}  // namespace agentkit::state
