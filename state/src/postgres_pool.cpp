#include <agentkit/state/store.h>
#include <poll.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <thread>

#include "postgres_internal.h"

namespace agentkit::state::pg {
namespace {

constexpr std::string_view kQueryCanceled = "57014";  // SQLSTATE of a statement timeout

// An idle connection has nothing to read: input on it is the server going
// away (a shutdown notice, EOF), so it is replaced before anything is sent.
bool quiet(PGconn* conn) {
  if (PQstatus(conn) != CONNECTION_OK || PQtransactionStatus(conn) != PQTRANS_IDLE) return false;
  pollfd fd{.fd = PQsocket(conn), .events = POLLIN, .revents = 0};
  return ::poll(&fd, 1, 0) == 0;
}

}  // namespace

Params& Params::integer(std::optional<std::int64_t> value) {
  if (!value) return add(kInt8, nullptr, 0);
  auto bits = static_cast<std::uint64_t>(*value);
  auto& out = integers_[count_];
  for (int i = 7; i >= 0; --i, bits >>= 8) out[i] = static_cast<char>(bits & 0xff);  // network byte order
  return add(kInt8, out.data(), out.size());
}

Params& Params::add(Oid type, const char* data, std::size_t size) {
  if (size > INT_MAX) throw StoreError("postgres: a value of " + std::to_string(size) + " bytes is too large");
  types_[count_] = type;
  values_[count_] = data;
  lengths_[count_] = static_cast<int>(size);
  formats_[count_] = 1;
  ++count_;
  return *this;
}

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

bool null(const PGresult* result, int row, int column) { return PQgetisnull(result, row, column) != 0; }

// No std::regex here: compiling or matching one fills libstdc++'s shared
// ctype cache without a lock, which ThreadSanitizer reports when two
// threads (two workers reconnecting) do it at once.
std::string one_line(std::string text) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') {
      out += text[i];
      continue;
    }
    // A line break and the blanks around it become one space.
    while (!out.empty() && blank(out.back())) out.pop_back();
    while (i + 1 < text.size() && blank(text[i + 1])) ++i;
    out += ' ';
  }
  while (!out.empty() && blank(out.back())) out.pop_back();
  return out;
}

std::string quote_table(const std::string& table, std::string_view what) {
  // A plain identifier: a letter or '_', then letters, digits and '_', at most 63.
  const auto identifier = [](std::string_view part) {
    const auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
    return !part.empty() && part.size() <= 63 && letter(part[0]) &&
           std::all_of(part.begin(), part.end(), [&](char c) { return letter(c) || (c >= '0' && c <= '9'); });
  };
  const std::string_view name = table;
  const auto dot = name.find('.');
  const std::string_view first = name.substr(0, dot);
  const std::string_view second = dot == std::string_view::npos ? std::string_view() : name.substr(dot + 1);
  if (!identifier(first) || (dot != std::string_view::npos && !identifier(second))) {
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": table '" + table + "' is not a name or schema.name of letters, digits and '_'");
  }
  return dot == std::string_view::npos ? '"' + table + '"'
                                       : '"' + std::string(first) + "\".\"" + std::string(second) + '"';
}

std::string substitute(std::string text, std::string_view name, std::string_view value) {
  for (std::size_t at = 0; (at = text.find(name, at)) != std::string::npos; at += value.size()) {
    text.replace(at, name.size(), value);
  }
  return text;
}

void Pool::ensure_table(const char* create_sql, std::string_view kind, int version) {
  const std::string prefix = std::string(kind) + " ";
  const std::string comment = prefix + std::to_string(version);
  run(substitute(substitute(create_sql, "{comment}", comment), "{t}", table_), {}, Retry::always,
      "cannot create the table");
  const Result result = run(substitute("SELECT coalesce(obj_description(to_regclass('{t}'), 'pg_class'), '')", "{t}", table_),
                            {}, Retry::always, "cannot read the table's comment");
  const std::string& server = remember_server();  // names the server in the messages below
  const std::string found = bytes(result.get(), 0, 0);
  if (!found.starts_with(prefix)) throw StoreError(server + "exists but is not an " + std::string(kind));
  const std::string stored = found.substr(prefix.size());
  if (stored != std::to_string(version)) {
    int number = 0;
    const auto [last, failure] = std::from_chars(stored.data(), stored.data() + stored.size(), number);
    const bool newer = failure == std::errc() && last == stored.data() + stored.size() && number > version;
    throw StoreError(server + "has " + std::string(kind.substr(kind.find(' ') + 1)) + " schema version " + stored +
                     "; this build reads version " + std::to_string(version) +
                     (newer ? " (open it with a newer agentkit)" : ""));
  }
}

Pool::Pool(std::string what, std::string conninfo, PoolOptions options, std::string quoted_table)
    : what_(std::move(what)),
      conninfo_(std::move(conninfo)),
      options_(std::move(options)),
      table_(std::move(quoted_table)) {
  char* error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(conninfo_.c_str(), &error);
  if (!parsed) {
    PQfreemem(error);  // it quotes the text, which may hold a password
    throw Error(ErrorCode::invalid_argument,
                what_ + ": the connection string is not valid libpq syntax (not shown: it may hold a password)");
  }
  for (const PQconninfoOption* option = parsed; option->keyword; ++option) {
    const std::string_view keyword = option->keyword;
    if (option->val && (keyword == "password" || keyword == "sslpassword")) secrets_.add(option->val);
  }
  PQconninfoFree(parsed);
  if (options_.pool_size == 0) throw Error(ErrorCode::invalid_argument, what_ + ": pool_size must be at least 1");
  options_.attempts = std::max(options_.attempts, 1);
}

// "<what> 'host:port/dbname' table "t": "; the host is the one this
// connection tried or uses, never the connection string.
std::string Pool::prefix(const PGconn* conn) const {
  if (!conn) return server_.empty() ? what_ + " table " + table_ + ": " : server_;
  auto field = [&](char* (*get)(const PGconn*)) {
    const char* value = get(conn);
    return std::string(value ? value : "");
  };
  return what_ + " '" + field(PQhost) + ":" + field(PQport) + "/" + field(PQdb) + "' table " + table_ + ": ";
}

std::string Pool::message(const PGconn* conn, const PGresult* result) const {
  const char* text = result ? PQresultErrorMessage(result) : "";
  if (!*text) text = PQerrorMessage(conn);
  return secrets_.redact(one_line(text));
}

Pool::Lease Pool::take() {
  std::unique_lock lock(mutex_);
  freed_.wait(lock, [&] { return !idle_.empty() || open_ < options_.pool_size; });
  if (idle_.empty()) {
    ++open_;
    return {*this, nullptr};
  }
  Connection conn = std::move(idle_.back());
  idle_.pop_back();
  return {*this, std::move(conn)};
}

void Pool::give_back(Connection conn) {
  const bool reusable =
      conn && PQstatus(conn.get()) == CONNECTION_OK && PQtransactionStatus(conn.get()) == PQTRANS_IDLE;
  if (!reusable) conn.reset();
  {
    std::lock_guard lock(mutex_);
    if (reusable) {
      idle_.push_back(std::move(conn));
    } else {
      --open_;
    }
  }
  freed_.notify_one();
}

Connection Pool::connect(std::string& error) {
  // Keywords after dbname (the expanded connection string) override it.
  const std::string timeout = std::to_string(options_.connect_timeout.count());
  const char* keywords[] = {"fallback_application_name", "dbname", "connect_timeout", nullptr};
  const char* values[] = {"agentkit", conninfo_.c_str(), timeout.c_str(), nullptr};
  Connection conn(PQconnectdbParams(keywords, values, 1));
  if (!conn) {
    error = prefix(nullptr) + "cannot connect: out of memory";
    return nullptr;
  }
  if (PQstatus(conn.get()) == CONNECTION_OK) {
    // Notices (a server's shutdown message, "already exists, skipping") are
    // not a library's to print on stderr.
    PQsetNoticeProcessor(
        conn.get(), [](void*, const char*) {}, nullptr);
    const std::string set = "SET statement_timeout = " + std::to_string(options_.statement_timeout.count());
    Result result(PQexec(conn.get(), set.c_str()));
    if (PQresultStatus(result.get()) == PGRES_COMMAND_OK) return conn;
    error = prefix(conn.get()) + "cannot set statement_timeout: " + message(conn.get(), result.get());
    return nullptr;
  }
  error = prefix(conn.get()) + "cannot connect: " + message(conn.get(), nullptr);
  return nullptr;
}

Result Pool::run(const std::string& sql, const Params& params, Retry retry, std::string_view doing) {
  std::string error;
  for (int attempt = 1;; ++attempt) {
    if (attempt > 1) std::this_thread::sleep_for(options_.backoff.delay(attempt - 1));
    Lease lease = take();
    if (lease.conn && !quiet(lease.conn.get())) lease.conn.reset();
    if (!lease.conn) lease.conn = connect(error);
    if (!lease.conn) {
      if (attempt >= options_.attempts) throw StoreError(error);
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
    if (attempt >= options_.attempts) throw StoreError(error);
  }
}

const std::string& Pool::remember_server() {
  const Lease lease = take();  // the connection just used
  server_ = prefix(lease.conn.get());
  return server_;
}

}  // namespace agentkit::state::pg
