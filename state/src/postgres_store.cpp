#include <agentkit/state/postgres_store.h>

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <climits>
#include <condition_variable>
#include <mutex>
#include <regex>
#include <thread>

#include <agentkit/redact.h>

#include "store_internal.h"

// Every call is one statement in autocommit mode on a pooled connection, so
// every write is atomic on its own: INSERT ... ON CONFLICT and UPDATE ...
// WHERE version = $n re-check their condition on the row's latest version
// when another transaction changed it, which makes one of two racing
// compare_and_set calls win. Keys and values are bytea, sent and read in
// binary, so no byte is special and ORDER BY key compares bytewise (memcmp,
// then length) whatever the collation. All times are the server's now().

namespace agentkit::state {
namespace {

constexpr Oid kBytea = 17;
constexpr Oid kInt8 = 20;
// A longer TTL would overflow a PostgreSQL interval (~31,700 years).
constexpr std::int64_t kMaxTtlMs = 1'000'000'000'000'000;
constexpr const char* kCommentPrefix = "agentkit store ";
constexpr std::string_view kQueryCanceled = "57014";  // SQLSTATE of a statement timeout

struct Clear {
  void operator()(PGresult* result) const { PQclear(result); }
};
struct Finish {
  void operator()(PGconn* conn) const { PQfinish(conn); }
};
using Result = std::unique_ptr<PGresult, Clear>;
using Connection = std::unique_ptr<PGconn, Finish>;

// Up to four binary statement parameters: bytea or int8 (NULL when absent).
class Params {
 public:
  Params() = default;
  Params(const Params&) = delete;  // values_ may point into integers_
  Params& operator=(const Params&) = delete;

  Params& bytes(std::optional<std::string_view> value) {
    // A null pointer would send NULL; "" sends an empty bytea.
    return add(kBytea, value ? (value->empty() ? "" : value->data()) : nullptr, value ? value->size() : 0);
  }
  Params& integer(std::optional<std::int64_t> value) {
    if (!value) return add(kInt8, nullptr, 0);
    auto bits = static_cast<std::uint64_t>(*value);
    auto& out = integers_[count_];
    for (int i = 7; i >= 0; --i, bits >>= 8) out[i] = static_cast<char>(bits & 0xff);  // network byte order
    return add(kInt8, out.data(), out.size());
  }

  int count() const noexcept { return count_; }
  const Oid* types() const noexcept { return types_.data(); }
  const char* const* values() const noexcept { return values_.data(); }
  const int* lengths() const noexcept { return lengths_.data(); }
  const int* formats() const noexcept { return formats_.data(); }

 private:
  Params& add(Oid type, const char* data, std::size_t size) {
    if (size > INT_MAX) throw StoreError("postgres store: a value of " + std::to_string(size) + " bytes is too large");
    types_[count_] = type;
    values_[count_] = data;
    lengths_[count_] = static_cast<int>(size);
    formats_[count_] = 1;
    ++count_;
    return *this;
  }

  static constexpr int kMax = 4;
  int count_ = 0;
  std::array<Oid, kMax> types_{};
  std::array<const char*, kMax> values_{};
  std::array<int, kMax> lengths_{};
  std::array<int, kMax> formats_{};
  std::array<std::array<char, 8>, kMax> integers_{};
};

std::string bytes(const PGresult* result, int row, int column) {
  return {PQgetvalue(result, row, column), static_cast<std::size_t>(PQgetlength(result, row, column))};
}

std::int64_t integer(const PGresult* result, int row, int column) {
  const auto* data = reinterpret_cast<const unsigned char*>(PQgetvalue(result, row, column));
  std::uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) bits = (bits << 8) | data[i];
  return static_cast<std::int64_t>(bits);
}

bool boolean(const PGresult* result, int row, int column) { return PQgetvalue(result, row, column)[0] != 0; }

std::optional<std::int64_t> ttl_ms(const Store::Ttl& ttl) {
  if (!ttl) return std::nullopt;
  return std::clamp<std::int64_t>(ttl->count(), -kMaxTtlMs, kMaxTtlMs);
}

// libpq's messages end in a newline and continue on tab-indented lines.
std::string one_line(std::string text) {
  text = std::regex_replace(text, std::regex("\\s*\n\\s*"), " ");
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.pop_back();
  return text;
}

// Quotes a table name "name" or "schema.name" of plain identifiers.
std::string quote_table(const std::string& table) {
  static const std::regex identifier("([A-Za-z_][A-Za-z0-9_]*)(\\.([A-Za-z_][A-Za-z0-9_]*))?");
  std::smatch parts;
  const auto fits = [&](int part) { return !parts[part].matched || parts[part].length() <= 63; };
  if (!std::regex_match(table, parts, identifier) || !fits(1) || !fits(3)) {
    throw Error(ErrorCode::invalid_argument,
                "postgres store: table '" + table + "' is not a name or schema.name of letters, digits and '_'");
  }
  return parts[3].matched ? '"' + parts[1].str() + "\".\"" + parts[3].str() + '"' : '"' + table + '"';
}

// `text` with every `name` ("{t}") replaced by `value`.
std::string substitute(std::string text, std::string_view name, std::string_view value) {
  for (std::size_t at = 0; (at = text.find(name, at)) != std::string::npos; at += value.size()) {
    text.replace(at, name.size(), value);
  }
  return text;
}

// An idle connection has nothing to read: input on it is the server going
// away (a shutdown notice, EOF), so it is replaced before anything is sent.
bool quiet(PGconn* conn) {
  if (PQstatus(conn) != CONNECTION_OK || PQtransactionStatus(conn) != PQTRANS_IDLE) return false;
  pollfd fd{.fd = PQsocket(conn), .events = POLLIN, .revents = 0};
  return ::poll(&fd, 1, 0) == 0;
}

// $1 key, $2 value, $3 TTL in milliseconds (NULL: none), $4 expected version.
constexpr const char* kExpiry = "now() + $3 * interval '1 millisecond'";
constexpr const char* kPut =
    "INSERT INTO {t} AS e (key, value, version, expires_at) VALUES ($1, $2, 1, {expiry})"
    " ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at,"
    " version = CASE WHEN e.expires_at <= now() THEN 1 ELSE e.version + 1 END"
    " RETURNING version";
// compare_and_set with expected version 0: insert, or replace an expired row.
constexpr const char* kCreate =
    "INSERT INTO {t} AS e (key, value, version, expires_at) VALUES ($1, $2, 1, {expiry})"
    " ON CONFLICT (key) DO UPDATE SET value = excluded.value, version = 1, expires_at = excluded.expires_at"
    " WHERE e.expires_at <= now()"
    " RETURNING version";
// compare_and_set over a live row at version $4.
constexpr const char* kUpdate =
    "UPDATE {t} SET value = $2, version = version + 1, expires_at = {expiry}"
    " WHERE key = $1 AND version = $4 AND (expires_at IS NULL OR expires_at > now())"
    " RETURNING version";
// Reads drop the expired rows they meet in the same statement.
constexpr const char* kGet =
    "WITH dropped AS (DELETE FROM {t} WHERE key = $1 AND expires_at <= now())"
    " SELECT value, version FROM {t} WHERE key = $1 AND (expires_at IS NULL OR expires_at > now())";
constexpr const char* kErase = "DELETE FROM {t} WHERE key = $1 RETURNING expires_at IS NULL OR expires_at > now()";
// $1 prefix, $2 prefix_end (NULL: no upper bound).
constexpr const char* kList =
    "WITH dropped AS (DELETE FROM {t} WHERE key >= $1 AND ($2::bytea IS NULL OR key < $2) AND expires_at <= now())"
    " SELECT key, value, version FROM {t}"
    " WHERE key >= $1 AND ($2::bytea IS NULL OR key < $2) AND (expires_at IS NULL OR expires_at > now())"
    " ORDER BY key";
// Creation is serialised by an advisory lock, so two workers starting at
// once do not race on the catalog; the comment carries the schema version.
constexpr const char* kCreateTable =
    "DO $$ BEGIN"
    " PERFORM pg_advisory_xact_lock(1634431860);"  // "akst"
    " IF to_regclass('{t}') IS NULL THEN"
    "  CREATE TABLE IF NOT EXISTS {t} (key bytea PRIMARY KEY, value bytea NOT NULL, version bigint NOT NULL,"
    "   expires_at timestamptz);"
    "  COMMENT ON TABLE {t} IS '{comment}';"
    " END IF;"
    " END $$";
constexpr const char* kTableComment = "SELECT coalesce(obj_description(to_regclass('{t}'), 'pg_class'), '')";

// Whether a statement may run again after its connection broke mid-way.
enum class Retry { always, unless_sent };

}  // namespace

struct PostgresStore::Impl {
  Impl(const std::string& conninfo, Options options);

  // One connection of the pool, or a free slot to open one in; gives it back
  // (or closes a broken one) when it goes out of scope.
  struct Lease {
    Impl& impl;
    Connection conn;
    Lease(Impl& owner, Connection taken) : impl(owner), conn(std::move(taken)) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { impl.give_back(std::move(conn)); }
  };

  std::string prefix(const PGconn* conn) const;
  std::string message(const PGconn* conn, const PGresult* result) const;
  Lease take();
  void give_back(Connection conn);
  Connection connect(std::string& error);
  Result run(const std::string& sql, const Params& params, Retry retry, std::string_view doing);
  void ensure_table();

  std::string conninfo;
  Options options;
  std::string table;
  std::string server;  // prefix() of the first connection, for messages that have none
  Redactor secrets;
  std::string put_sql, create_sql, update_sql, get_sql, erase_sql, list_sql;

  std::mutex mutex;
  std::condition_variable freed;
  std::vector<Connection> idle;
  std::size_t open = 0;  // idle plus leased
};

PostgresStore::Impl::Impl(const std::string& info, Options opts)
    : conninfo(info), options(std::move(opts)), table(quote_table(options.table)) {
  char* error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(conninfo.c_str(), &error);
  if (!parsed) {
    PQfreemem(error);  // it quotes the text, which may hold a password
    throw Error(ErrorCode::invalid_argument,
                "postgres store: the connection string is not valid libpq syntax (not shown: it may hold a password)");
  }
  for (const PQconninfoOption* option = parsed; option->keyword; ++option) {
    const std::string_view keyword = option->keyword;
    if (option->val && (keyword == "password" || keyword == "sslpassword")) secrets.add(option->val);
  }
  PQconninfoFree(parsed);
  if (options.pool_size == 0) throw Error(ErrorCode::invalid_argument, "postgres store: pool_size must be at least 1");
  options.attempts = std::max(options.attempts, 1);
  auto statement = [&](const char* text) { return substitute(substitute(text, "{expiry}", kExpiry), "{t}", table); };
  put_sql = statement(kPut);
  create_sql = statement(kCreate);
  update_sql = statement(kUpdate);
  get_sql = statement(kGet);
  erase_sql = statement(kErase);
  list_sql = statement(kList);
}

// "postgres store 'host:port/dbname' table "t": "; the host is the one this
// connection tried or uses, never the connection string.
std::string PostgresStore::Impl::prefix(const PGconn* conn) const {
  if (!conn) return server.empty() ? "postgres store table " + table + ": " : server;
  auto field = [&](char* (*get)(const PGconn*)) {
    const char* value = get(conn);
    return std::string(value ? value : "");
  };
  return "postgres store '" + field(PQhost) + ":" + field(PQport) + "/" + field(PQdb) + "' table " + table + ": ";
}

std::string PostgresStore::Impl::message(const PGconn* conn, const PGresult* result) const {
  const char* text = result ? PQresultErrorMessage(result) : "";
  if (!*text) text = PQerrorMessage(conn);
  return secrets.redact(one_line(text));
}

PostgresStore::Impl::Lease PostgresStore::Impl::take() {
  std::unique_lock lock(mutex);
  freed.wait(lock, [&] { return !idle.empty() || open < options.pool_size; });
  if (idle.empty()) {
    ++open;
    return {*this, nullptr};
  }
  Connection conn = std::move(idle.back());
  idle.pop_back();
  return {*this, std::move(conn)};
}

void PostgresStore::Impl::give_back(Connection conn) {
  const bool reusable =
      conn && PQstatus(conn.get()) == CONNECTION_OK && PQtransactionStatus(conn.get()) == PQTRANS_IDLE;
  if (!reusable) conn.reset();
  {
    std::lock_guard lock(mutex);
    if (reusable) {
      idle.push_back(std::move(conn));
    } else {
      --open;
    }
  }
  freed.notify_one();
}

Connection PostgresStore::Impl::connect(std::string& error) {
  // Keywords after dbname (the expanded connection string) override it.
  const std::string timeout = std::to_string(options.connect_timeout.count());
  const char* keywords[] = {"fallback_application_name", "dbname", "connect_timeout", nullptr};
  const char* values[] = {"agentkit", conninfo.c_str(), timeout.c_str(), nullptr};
  Connection conn(PQconnectdbParams(keywords, values, 1));
  if (!conn) {
    error = prefix(nullptr) + "cannot connect: out of memory";
    return nullptr;
  }
  if (PQstatus(conn.get()) == CONNECTION_OK) {
    const std::string set = "SET statement_timeout = " + std::to_string(options.statement_timeout.count());
    Result result(PQexec(conn.get(), set.c_str()));
    if (PQresultStatus(result.get()) == PGRES_COMMAND_OK) return conn;
    error = prefix(conn.get()) + "cannot set statement_timeout: " + message(conn.get(), result.get());
    return nullptr;
  }
  error = prefix(conn.get()) + "cannot connect: " + message(conn.get(), nullptr);
  return nullptr;
}

// Runs one statement, binary in and out, replacing broken connections: see
// the class comment for what is tried again.
Result PostgresStore::Impl::run(const std::string& sql, const Params& params, Retry retry, std::string_view doing) {
  std::string error;
  for (int attempt = 1;; ++attempt) {
    if (attempt > 1) std::this_thread::sleep_for(options.backoff.delay(attempt - 1));
    Lease lease = take();
    if (lease.conn && !quiet(lease.conn.get())) lease.conn.reset();
    if (!lease.conn) lease.conn = connect(error);
    if (!lease.conn) {
      if (attempt >= options.attempts) throw StoreError(error);
      continue;
    }
    PGconn* conn = lease.conn.get();
    const bool sent = PQsendQueryParams(conn, sql.c_str(), params.count(), params.types(), params.values(),
                                        params.lengths(), params.formats(), 1) == 1;
    Result result;
    if (sent) {
      while (PGresult* next = PQgetResult(conn)) result.reset(next);
    }
    const ExecStatusType status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
    if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) return result;
    error = prefix(conn) + std::string(doing) + ": " + message(conn, result.get());
    if (PQstatus(conn) == CONNECTION_OK) {
      // The server refused the statement; the connection is fine.
      const char* state = result ? PQresultErrorField(result.get(), PG_DIAG_SQLSTATE) : nullptr;
      throw StoreError(error, state && state == kQueryCanceled ? ErrorCode::timeout : ErrorCode::unavailable);
    }
    if (sent && retry == Retry::unless_sent) {
      throw StoreError(error + " (the connection broke after the write was sent: it may or may not have been applied)",
                       ErrorCode::outcome_unknown);
    }
    if (attempt >= options.attempts) throw StoreError(error);
  }
}

// Creates the table when absent, or checks that an existing one is a store
// in a format this build reads. A later format bumps kSchemaVersion and
// migrates older versions here.
void PostgresStore::Impl::ensure_table() {
  const std::string comment = kCommentPrefix + std::to_string(kSchemaVersion);
  run(substitute(substitute(kCreateTable, "{comment}", comment), "{t}", table), {}, Retry::always,
      "cannot create the table");
  const Result result =
      run(substitute(kTableComment, "{t}", table), {}, Retry::always, "cannot read the table's comment");
  {
    const Lease lease = take();  // the connection just used: it names the server in the messages below
    server = prefix(lease.conn.get());
  }
  const std::string found = bytes(result.get(), 0, 0);
  if (!found.starts_with(kCommentPrefix)) throw StoreError(server + "exists but is not an agentkit store");
  const std::string version = found.substr(std::string_view(kCommentPrefix).size());
  if (version != std::to_string(kSchemaVersion)) {
    int number = 0;
    const auto [end, failure] = std::from_chars(version.data(), version.data() + version.size(), number);
    const bool newer = failure == std::errc() && end == version.data() + version.size() && number > kSchemaVersion;
    throw StoreError(server + "has store schema version " + version + "; this build reads version " +
                     std::to_string(kSchemaVersion) + (newer ? " (open it with a newer agentkit)" : ""));
  }
}

PostgresStore::PostgresStore(const std::string& conninfo, Options options)
    : impl_(std::make_unique<Impl>(conninfo, std::move(options))) {
  impl_->ensure_table();
}

PostgresStore::~PostgresStore() = default;

std::optional<Entry> PostgresStore::get(std::string_view key) {
  const Result result = impl_->run(impl_->get_sql, Params().bytes(key), Retry::always, "read failed");
  if (PQntuples(result.get()) == 0) return std::nullopt;
  return Entry{bytes(result.get(), 0, 0), integer(result.get(), 0, 1)};
}

std::int64_t PostgresStore::put(std::string_view key, std::string value, Ttl ttl) {
  const Result result = impl_->run(impl_->put_sql, Params().bytes(key).bytes(value).integer(ttl_ms(ttl)),
                                   Retry::unless_sent, "write failed");
  if (PQntuples(result.get()) != 1) throw StoreError(impl_->prefix(nullptr) + "write failed: no version returned");
  return integer(result.get(), 0, 0);
}

std::optional<std::int64_t> PostgresStore::compare_and_set(std::string_view key, std::int64_t expected_version,
                                                           std::string value, Ttl ttl) {
  if (expected_version < 0) return std::nullopt;  // no entry ever has that version
  Params params;
  params.bytes(key).bytes(value).integer(ttl_ms(ttl));
  if (expected_version > 0) params.integer(expected_version);
  const Result result = impl_->run(expected_version == 0 ? impl_->create_sql : impl_->update_sql, params,
                                   Retry::unless_sent, "write failed");
  if (PQntuples(result.get()) == 0) return std::nullopt;
  return integer(result.get(), 0, 0);
}

bool PostgresStore::erase(std::string_view key) {
  const Result result = impl_->run(impl_->erase_sql, Params().bytes(key), Retry::unless_sent, "delete failed");
  return PQntuples(result.get()) == 1 && boolean(result.get(), 0, 0);
}

std::vector<std::pair<std::string, Entry>> PostgresStore::list(std::string_view prefix) {
  const std::optional<std::string> end = store_detail::prefix_end(prefix);
  const Result result = impl_->run(impl_->list_sql, Params().bytes(prefix).bytes(end), Retry::always, "read failed");
  std::vector<std::pair<std::string, Entry>> out;
  out.reserve(static_cast<std::size_t>(PQntuples(result.get())));
  for (int row = 0; row < PQntuples(result.get()); ++row) {
    out.emplace_back(bytes(result.get(), row, 0), Entry{bytes(result.get(), row, 1), integer(result.get(), row, 2)});
  }
  return out;
}

}  // namespace agentkit::state
