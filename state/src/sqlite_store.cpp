#include <agentkit/state/sqlite_store.h>

#include <sqlite3.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <mutex>

#include "store_internal.h"

// Every write is one statement in autocommit mode, so it is atomic across
// connections and processes without an explicit transaction: SQLite takes the
// write lock before the statement reads, waiting through the busy handler.
// Keys and values are BLOBs, so keys compare bytewise (memcmp), matching
// std::string ordering, and no byte is special.

namespace agentkit::state {
namespace {

using Clock = std::chrono::system_clock;
using store_detail::prefix_end;

constexpr std::int64_t kApplicationId = 0x616b7374;  // "akst": marks the file as an agentkit store

struct CloseDb {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct Finalize {
  void operator()(sqlite3_stmt* statement) const { sqlite3_finalize(statement); }
};
using Statement = std::unique_ptr<sqlite3_stmt, Finalize>;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
}

// The absolute expiry for a TTL starting at `now`, saturating instead of
// overflowing for huge TTLs.
std::optional<std::int64_t> expiry(const Store::Ttl& ttl, std::int64_t now) {
  if (!ttl) return std::nullopt;
  const std::int64_t ms = ttl->count();
  if (ms > 0 && now > std::numeric_limits<std::int64_t>::max() - ms) return std::numeric_limits<std::int64_t>::max();
  return now + ms;
}

bool expired(const std::optional<std::int64_t>& expires_at, std::int64_t now) {
  return expires_at && *expires_at <= now;
}

// One open database handle; every error it reports names the file.
class Connection {
 public:
  Connection(const std::filesystem::path& path, const SqliteStore::Options& options);

  [[noreturn]] void fail(std::string_view doing, int code) const;
  [[noreturn]] void refuse(std::string_view why) const { throw StoreError(prefix() + std::string(why)); }
  void exec(const char* sql, std::string_view doing);
  Statement prepare(const char* sql, unsigned flags = 0);

 private:
  std::string prefix() const { return "sqlite store '" + path_ + "': "; }
  // Switches to the WAL journal; returns the journal mode now in effect.
  std::string journal_mode_wal();
  void ensure_schema();

  std::string path_;
  std::unique_ptr<sqlite3, CloseDb> db_;
};

// A cached statement in use: binds, steps, reads columns, and resets it on
// scope exit so no statement keeps a read transaction open.
class Query {
 public:
  Query(Connection& connection, sqlite3_stmt* statement, std::string_view doing)
      : connection_(connection), statement_(statement), doing_(doing) {}
  ~Query() {
    sqlite3_reset(statement_);
    sqlite3_clear_bindings(statement_);
  }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  // Binds bytes; the caller keeps them alive until the query is done.
  Query& bind(int index, std::string_view bytes) {
    // A null pointer would bind SQL NULL; "" binds an empty BLOB.
    check(sqlite3_bind_blob64(statement_, index, bytes.empty() ? "" : bytes.data(), bytes.size(), SQLITE_STATIC));
    return *this;
  }
  Query& bind(int index, std::int64_t value) {
    check(sqlite3_bind_int64(statement_, index, value));
    return *this;
  }
  Query& bind(int index, const std::optional<std::int64_t>& value) {
    check(value ? sqlite3_bind_int64(statement_, index, *value) : sqlite3_bind_null(statement_, index));
    return *this;
  }

  // Advances to the next row: true on a row, false when done.
  bool step() {
    const int code = sqlite3_step(statement_);
    if (code == SQLITE_ROW) return true;
    if (code != SQLITE_DONE) connection_.fail(doing_, code);
    return false;
  }
  // Runs to completion (a write commits only then) and returns the first
  // column of the first row, if any.
  std::optional<std::int64_t> run_for_integer() {
    std::optional<std::int64_t> out;
    if (step()) out = integer(0);
    while (step()) {
    }
    return out;
  }

  std::string bytes(int column) const {
    const auto* data = static_cast<const char*>(sqlite3_column_blob(statement_, column));
    return data ? std::string(data, static_cast<std::size_t>(sqlite3_column_bytes(statement_, column))) : std::string();
  }
  std::int64_t integer(int column) const { return sqlite3_column_int64(statement_, column); }
  std::optional<std::int64_t> optional_integer(int column) const {
    if (sqlite3_column_type(statement_, column) == SQLITE_NULL) return std::nullopt;
    return integer(column);
  }

 private:
  void check(int code) {
    if (code != SQLITE_OK) connection_.fail(doing_, code);
  }

  Connection& connection_;
  sqlite3_stmt* statement_;
  std::string_view doing_;
};

Connection::Connection(const std::filesystem::path& path, const SqliteStore::Options& options)
    : path_(path.string()) {
  sqlite3* raw = nullptr;
  const int code =
      sqlite3_open_v2(path_.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  db_.reset(raw);
  if (code != SQLITE_OK) fail("cannot open", code);
  sqlite3_extended_result_codes(db_.get(), 1);
  const auto timeout = std::clamp<std::int64_t>(options.busy_timeout.count(), 0, INT_MAX);
  sqlite3_busy_timeout(db_.get(), static_cast<int>(timeout));

  if (const std::string mode = journal_mode_wal(); mode != "wal") {
    refuse("cannot use a WAL journal (journal mode is '" + mode + "')");
  }

  exec(options.durability == SqliteStore::Durability::full ? "PRAGMA synchronous = FULL"
                                                            : "PRAGMA synchronous = NORMAL",
       "cannot open");
  ensure_schema();
}

std::string Connection::journal_mode_wal() {
  Statement statement = prepare("PRAGMA journal_mode = WAL");
  Query query(*this, statement.get(), "cannot open");
  return query.step() ? query.bytes(0) : std::string();
}

void Connection::fail(std::string_view doing, int code) const {
  std::string message = prefix() + std::string(doing) + ": ";
  message += db_ ? sqlite3_errmsg(db_.get()) : sqlite3_errstr(code);
  const int primary = code & 0xff;
  const int system_errno = db_ ? sqlite3_system_errno(db_.get()) : 0;
  if ((primary == SQLITE_CANTOPEN || primary == SQLITE_IOERR) && system_errno != 0) {
    message += " (";
    message += std::strerror(system_errno);
    message += ')';
  }
  throw StoreError(message);
}

void Connection::exec(const char* sql, std::string_view doing) {
  const int code = sqlite3_exec(db_.get(), sql, nullptr, nullptr, nullptr);
  if (code != SQLITE_OK) fail(doing, code);
}

Statement Connection::prepare(const char* sql, unsigned flags) {
  sqlite3_stmt* raw = nullptr;
  const int code = sqlite3_prepare_v3(db_.get(), sql, -1, flags, &raw, nullptr);
  Statement statement(raw);
  if (code != SQLITE_OK) fail("cannot prepare a statement", code);
  return statement;
}

// Creates the schema in a fresh file, or checks that an existing file is a
// store in a format this build reads. A later format bumps kSchemaVersion and
// migrates older versions here, inside the same write transaction.
void Connection::ensure_schema() {
  constexpr std::string_view doing = "cannot read the schema";
  exec("BEGIN IMMEDIATE", doing);
  try {
    auto scalar = [&](const char* sql) {
      Statement statement = prepare(sql);
      return Query(*this, statement.get(), doing).run_for_integer().value_or(0);
    };
    const std::int64_t application = scalar("PRAGMA application_id");
    const std::int64_t version = scalar("PRAGMA user_version");
    if (application == 0 && version == 0 && scalar("SELECT count(*) FROM sqlite_schema") == 0) {
      const std::string create =
          "CREATE TABLE entries (key BLOB NOT NULL PRIMARY KEY, value BLOB NOT NULL, version INTEGER NOT NULL,"
          " expires_at INTEGER) WITHOUT ROWID;"
          "PRAGMA application_id = " + std::to_string(kApplicationId) + ";"
          "PRAGMA user_version = " + std::to_string(SqliteStore::kSchemaVersion) + ";";
      exec(create.c_str(), "cannot create the schema");
    } else if (application != kApplicationId) {
      refuse("is a SQLite database but not an agentkit store");
    } else if (version != SqliteStore::kSchemaVersion) {
      refuse("has store schema version " + std::to_string(version) + "; this build reads version " +
             std::to_string(SqliteStore::kSchemaVersion) +
             (version > SqliteStore::kSchemaVersion ? " (open it with a newer agentkit)" : ""));
    }
    exec("COMMIT", doing);
  } catch (...) {
    sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

// Write statements bind ?1 key, ?2 value, ?3 expires_at, ?4 now.
constexpr const char* kPut =
    "INSERT INTO entries (key, value, version, expires_at) VALUES (?1, ?2, 1, ?3)"
    " ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at,"
    " version = CASE WHEN entries.expires_at <= ?4 THEN 1 ELSE entries.version + 1 END"
    " RETURNING version";
// compare_and_set with expected version 0: insert, or replace an expired row.
constexpr const char* kCreate =
    "INSERT INTO entries (key, value, version, expires_at) VALUES (?1, ?2, 1, ?3)"
    " ON CONFLICT (key) DO UPDATE SET value = excluded.value, version = 1, expires_at = excluded.expires_at"
    " WHERE entries.expires_at <= ?4"
    " RETURNING version";
// compare_and_set over a live row at version ?5.
constexpr const char* kUpdate =
    "UPDATE entries SET value = ?2, version = version + 1, expires_at = ?3"
    " WHERE key = ?1 AND version = ?5 AND (expires_at IS NULL OR expires_at > ?4)"
    " RETURNING version";
constexpr const char* kGet = "SELECT value, version, expires_at FROM entries WHERE key = ?1";
constexpr const char* kErase = "DELETE FROM entries WHERE key = ?1 RETURNING expires_at";
constexpr const char* kDropExpired = "DELETE FROM entries WHERE key = ?1 AND expires_at <= ?2";
// Prefix scans bind ?1 the prefix, ?2 now and, when bounded, ?3 prefix_end.
constexpr const char* kListFrom =
    "SELECT key, value, version, expires_at FROM entries WHERE key >= ?1 ORDER BY key";
constexpr const char* kListRange =
    "SELECT key, value, version, expires_at FROM entries WHERE key >= ?1 AND key < ?3 ORDER BY key";
constexpr const char* kDropExpiredFrom = "DELETE FROM entries WHERE key >= ?1 AND expires_at <= ?2";
constexpr const char* kDropExpiredRange =
    "DELETE FROM entries WHERE key >= ?1 AND key < ?3 AND expires_at <= ?2";

}  // namespace

struct SqliteStore::Impl {
  Impl(const std::filesystem::path& path, const Options& options) : db(path, options) {}

  Statement prepare(const char* sql) { return db.prepare(sql, SQLITE_PREPARE_PERSISTENT); }

  void drop_expired(std::string_view key, std::int64_t now) {
    Query(db, drop_expired_key.get(), "delete failed").bind(1, key).bind(2, now).run_for_integer();
  }

  Connection db;
  std::mutex mutex;
  Statement get = prepare(kGet);
  Statement put = prepare(kPut);
  Statement create = prepare(kCreate);
  Statement update = prepare(kUpdate);
  Statement erase = prepare(kErase);
  Statement drop_expired_key = prepare(kDropExpired);
  Statement list_from = prepare(kListFrom);
  Statement list_range = prepare(kListRange);
  Statement drop_expired_from = prepare(kDropExpiredFrom);
  Statement drop_expired_range = prepare(kDropExpiredRange);
};

namespace {

// Runs one of the write statements (kPut, kCreate, kUpdate); returns the new
// version, or nullopt when its condition did not hold.
std::optional<std::int64_t> write(Connection& db, sqlite3_stmt* statement, std::string_view key,
                                  const std::string& value, const Store::Ttl& ttl,
                                  std::optional<std::int64_t> expected_version = std::nullopt) {
  const std::int64_t now = now_ms();
  Query query(db, statement, "write failed");
  query.bind(1, key).bind(2, value).bind(3, expiry(ttl, now)).bind(4, now);
  if (expected_version) query.bind(5, *expected_version);
  return query.run_for_integer();
}

}  // namespace

SqliteStore::SqliteStore(std::filesystem::path path, Options options)
    : path_(std::move(path)), impl_(std::make_unique<Impl>(path_, options)) {}

SqliteStore::~SqliteStore() = default;

std::optional<Entry> SqliteStore::get(std::string_view key) {
  std::lock_guard lock(impl_->mutex);
  const std::int64_t now = now_ms();
  std::optional<Entry> entry;
  bool stale = false;
  {
    Query query(impl_->db, impl_->get.get(), "read failed");
    if (query.bind(1, key).step()) {
      stale = expired(query.optional_integer(2), now);
      if (!stale) entry = Entry{query.bytes(0), query.integer(1)};
    }
  }
  if (stale) impl_->drop_expired(key, now);
  return entry;
}

std::int64_t SqliteStore::put(std::string_view key, std::string value, Ttl ttl) {
  std::lock_guard lock(impl_->mutex);
  const auto version = write(impl_->db, impl_->put.get(), key, value, ttl);
  if (!version) impl_->db.refuse("write failed: no version returned");
  return *version;
}

std::optional<std::int64_t> SqliteStore::compare_and_set(std::string_view key, std::int64_t expected_version,
                                                         std::string value, Ttl ttl) {
  if (expected_version < 0) return std::nullopt;  // no entry ever has that version
  std::lock_guard lock(impl_->mutex);
  if (expected_version == 0) return write(impl_->db, impl_->create.get(), key, value, ttl);
  return write(impl_->db, impl_->update.get(), key, value, ttl, expected_version);
}

bool SqliteStore::erase(std::string_view key) {
  std::lock_guard lock(impl_->mutex);
  const std::int64_t now = now_ms();
  Query query(impl_->db, impl_->erase.get(), "delete failed");
  if (!query.bind(1, key).step()) return false;
  const bool live = !expired(query.optional_integer(0), now);
  while (query.step()) {
  }
  return live;
}

std::vector<std::pair<std::string, Entry>> SqliteStore::list(std::string_view prefix) {
  std::lock_guard lock(impl_->mutex);
  const std::int64_t now = now_ms();
  const std::optional<std::string> end = prefix_end(prefix);
  std::vector<std::pair<std::string, Entry>> out;
  bool stale = false;
  {
    Query query(impl_->db, (end ? impl_->list_range : impl_->list_from).get(), "read failed");
    query.bind(1, prefix);
    if (end) query.bind(3, *end);
    while (query.step()) {
      if (expired(query.optional_integer(3), now)) {
        stale = true;
        continue;
      }
      out.emplace_back(query.bytes(0), Entry{query.bytes(1), query.integer(2)});
    }
  }
  if (stale) {
    Query drop(impl_->db, (end ? impl_->drop_expired_range : impl_->drop_expired_from).get(), "delete failed");
    drop.bind(1, prefix).bind(2, now);
    if (end) drop.bind(3, *end);
    drop.run_for_integer();
  }
  return out;
}

}  // namespace agentkit::state
