#pragma once
// What PostgresStore and PostgresRunQueue share over libpq: binary statement
// parameters and results, and a small pool of connections that replaces
// broken ones and retries what may be retried. Internal to agentkit_state.
#include <agentkit/backoff.h>
#include <agentkit/redact.h>
#include <libpq-fe.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentkit::state::pg {

inline constexpr Oid kBytea = 17;
inline constexpr Oid kInt8 = 20;
inline constexpr Oid kText = 25;

struct Clear {
  void operator()(PGresult* result) const { PQclear(result); }
};
struct Finish {
  void operator()(PGconn* conn) const { PQfinish(conn); }
};
using Result = std::unique_ptr<PGresult, Clear>;
using Connection = std::unique_ptr<PGconn, Finish>;

// Up to eight binary statement parameters: bytea, text or int8 (NULL when
// absent). Throws StoreError for a value over 2 GiB.
class Params {
 public:
  Params() = default;
  Params(const Params&) = delete;  // values_ may point into integers_
  Params& operator=(const Params&) = delete;

  Params& bytes(std::optional<std::string_view> value) { return add_view(kBytea, value); }
  Params& text(std::optional<std::string_view> value) { return add_view(kText, value); }
  Params& integer(std::optional<std::int64_t> value);

  int count() const noexcept { return count_; }
  const Oid* types() const noexcept { return types_.data(); }
  const char* const* values() const noexcept { return values_.data(); }
  const int* lengths() const noexcept { return lengths_.data(); }
  const int* formats() const noexcept { return formats_.data(); }

 private:
  Params& add_view(Oid type, std::optional<std::string_view> value) {
    // A null pointer would send NULL; "" sends an empty value.
    return add(type, value ? (value->empty() ? "" : value->data()) : nullptr, value ? value->size() : 0);
  }
  Params& add(Oid type, const char* data, std::size_t size);

  static constexpr int kMax = 8;
  int count_ = 0;
  std::array<Oid, kMax> types_{};
  std::array<const char*, kMax> values_{};
  std::array<int, kMax> lengths_{};
  std::array<int, kMax> formats_{};
  std::array<std::array<char, 8>, kMax> integers_{};
};

// A binary result's cells.
std::string bytes(const PGresult* result, int row, int column);
std::int64_t integer(const PGresult* result, int row, int column);
bool boolean(const PGresult* result, int row, int column);
bool null(const PGresult* result, int row, int column);

// libpq's messages end in a newline and continue on tab-indented lines.
std::string one_line(std::string text);
// Quotes a table name "name" or "schema.name" of plain identifiers; throws
// agentkit::Error (invalid_argument) naming `what` otherwise.
std::string quote_table(const std::string& table, std::string_view what);
// `text` with every `name` ("{t}") replaced by `value`.
std::string substitute(std::string text, std::string_view name, std::string_view value);

// Whether a statement may run again after its connection broke mid-way.
enum class Retry { always, unless_sent };

struct PoolOptions {
  std::size_t pool_size = 4;
  std::chrono::milliseconds statement_timeout{30000};
  std::chrono::seconds connect_timeout{10};
  int attempts = 3;
  Backoff backoff;
};

// Connections to one server, at most pool_size open, shared by any number
// of threads. Messages start "<what> 'host:port/dbname' table <table>: ".
class Pool {
 public:
  // Throws agentkit::Error (invalid_argument) for a connection string libpq
  // cannot parse or a pool_size of 0.
  Pool(std::string what, std::string conninfo, PoolOptions options, std::string quoted_table);

  // One connection of the pool, or a free slot to open one in; gives it back
  // (or closes a broken one) when it goes out of scope.
  struct Lease {
    Pool& pool;
    Connection conn;
    Lease(Pool& owner, Connection taken) : pool(owner), conn(std::move(taken)) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { pool.give_back(std::move(conn)); }
  };

  std::string prefix(const PGconn* conn) const;
  std::string message(const PGconn* conn, const PGresult* result) const;
  Lease take();
  // A new connection outside the pool (statement_timeout set), or null with
  // `error` set.
  Connection connect(std::string& error);
  // Runs one statement, binary in and out, replacing broken connections:
  // tried `attempts` times when the server cannot be reached; after a
  // connection broke mid-way only with Retry::always (else StoreError
  // outcome_unknown). A refused statement throws StoreError (timeout for a
  // statement timeout, else unavailable).
  Result run(const std::string& sql, const Params& params, Retry retry, std::string_view doing);
  // Creates the pool's table with `create_sql` ({t}: the table, {comment}:
  // "<kind> <version>", e.g. "agentkit store 1") when it is absent, then
  // reads its comment back: a table whose comment does not start with
  // `kind` + " " is refused as not ours, and one of another version as too
  // new or too old (StoreError naming the server, the table and both
  // versions).
  void ensure_table(const char* create_sql, std::string_view kind, int version);
  // Names the server in messages that have no connection: the one a pooled
  // connection (the last used) talks to. Returns it.
  const std::string& remember_server();
  const std::string& server() const noexcept { return server_; }
  const PoolOptions& options() const noexcept { return options_; }

 private:
  void give_back(Connection conn);

  std::string what_;
  std::string conninfo_;
  PoolOptions options_;
  std::string table_;
  std::string server_;
  Redactor secrets_;

  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<Connection> idle_;
  std::size_t open_ = 0;  // idle plus leased
};

}  // namespace agentkit::state::pg
