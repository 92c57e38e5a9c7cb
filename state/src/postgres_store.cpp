#include <agentkit/state/postgres_store.h>

#include <algorithm>

#include "postgres_internal.h"
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

using pg::boolean;
using pg::bytes;
using pg::integer;
using pg::Params;
using pg::Result;
using pg::Retry;
using pg::substitute;

// A longer TTL would overflow a PostgreSQL interval (~31,700 years).
constexpr std::int64_t kMaxTtlMs = 1'000'000'000'000'000;
constexpr std::string_view kKind = "agentkit store";  // the table's comment: "<kind> <version>"

std::optional<std::int64_t> ttl_ms(const Store::Ttl& ttl) {
  if (!ttl) return std::nullopt;
  return std::clamp<std::int64_t>(ttl->count(), -kMaxTtlMs, kMaxTtlMs);
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

}  // namespace

struct PostgresStore::Impl {
  Impl(const std::string& conninfo, Options options);

  Result run(const std::string& sql, const Params& params, Retry retry, std::string_view doing) {
    return pool.run(sql, params, retry, doing);
  }
  void ensure_table();

  std::string table;
  pg::Pool pool;
  std::string put_sql, create_sql, update_sql, get_sql, erase_sql, list_sql;
};

PostgresStore::Impl::Impl(const std::string& info, Options opts)
    : table(pg::quote_table(opts.table, "postgres store")),
      pool("postgres store", info,
           {.pool_size = opts.pool_size,
            .statement_timeout = opts.statement_timeout,
            .connect_timeout = opts.connect_timeout,
            .attempts = opts.attempts,
            .backoff = opts.backoff},
           table) {
  auto statement = [&](const char* text) { return substitute(substitute(text, "{expiry}", kExpiry), "{t}", table); };
  put_sql = statement(kPut);
  create_sql = statement(kCreate);
  update_sql = statement(kUpdate);
  get_sql = statement(kGet);
  erase_sql = statement(kErase);
  list_sql = statement(kList);
}

// Creates the table when absent, or checks that an existing one is a store
// in a format this build reads. A later format bumps kSchemaVersion and
// migrates older versions here.
void PostgresStore::Impl::ensure_table() { pool.ensure_table(kCreateTable, kKind, kSchemaVersion); }

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
  if (PQntuples(result.get()) != 1) throw StoreError(impl_->pool.prefix(nullptr) + "write failed: no version returned");
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
