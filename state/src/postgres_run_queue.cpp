#include <agentkit/state/postgres_run_queue.h>
#include <agentkit/error.h>
#include <agentkit/json.h>
#include <agentkit/state/store.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "postgres_internal.h"

// One row per (scope, run id). Every operation is one statement in
// autocommit mode on a pooled connection: a claim selects the oldest
// claimable row FOR UPDATE SKIP LOCKED and leases it in the same statement;
// every change by a worker is fenced by (lease_owner, lease_token, status
// 'leased'). Times (lease expiry) are the server's now(). Wake-ups go
// through pg_notify in the statement that makes a run runnable, so they are
// sent when (and only if) it commits.

namespace agentkit::state {
namespace {

using pg::bytes;
using pg::integer;
using pg::Params;
using pg::Result;
using pg::Retry;
using pg::substitute;

constexpr std::string_view kKind = "agentkit run queue";  // the table's comment: "<kind> <version>"

constexpr const char* kCreateTable =
    "DO $$ BEGIN"
    " PERFORM pg_advisory_xact_lock(1634431858);"  // "akrq"
    " IF to_regclass('{t}') IS NULL THEN"
    "  CREATE TABLE IF NOT EXISTS {t} (scope text NOT NULL, org_id bigint, domain_id bigint, run_id text NOT NULL,"
    "   agent text NOT NULL, task text NOT NULL, status text NOT NULL, decisions text, lease_owner text,"
    "   lease_token bigint NOT NULL DEFAULT 0, lease_expires_at timestamptz, attempts bigint NOT NULL DEFAULT 0,"
    "   result text, seq bigserial, PRIMARY KEY (scope, run_id));"
    "  CREATE INDEX ON {t} (scope, status, seq);"
    "  COMMENT ON TABLE {t} IS '{comment}';"
    " END IF;"
    " END $$";

// Rows of the CTE `u` (each with a scope), each notified on the channel.
constexpr const char* kNotify = " SELECT u.scope FROM u, LATERAL (SELECT pg_notify('{ch}', u.scope)) AS n";

// $1 scope, $2 org, $3 domain, $4 run id, $5 agent, $6 task.
constexpr const char* kSubmit =
    "WITH u AS (INSERT INTO {t} (scope, org_id, domain_id, run_id, agent, task, status)"
    " VALUES ($1, $2, $3, $4, $5, $6, 'runnable') ON CONFLICT (scope, run_id) DO NOTHING RETURNING scope)";
// $1 worker, $2 scopes joined by '\n', $3 lease in ms. The claim takes the
// run's decisions out of the row: they answer the suspension they were given
// for, and a later claim (a takeover, a run given back) could not know
// whether the run is still at that suspension or at its next.
constexpr const char* kClaim =
    "WITH next AS (SELECT scope, run_id, status, decisions FROM {t}"
    "  WHERE scope = ANY(string_to_array($2, E'\\n'))"
    "   AND (status = 'runnable' OR (status = 'leased' AND lease_expires_at <= now()))"
    "  ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)"
    " UPDATE {t} AS r SET status = 'leased', lease_owner = $1, lease_token = r.lease_token + 1,"
    "  lease_expires_at = now() + $3 * interval '1 millisecond', attempts = r.attempts + 1, decisions = NULL"
    " FROM next WHERE r.scope = next.scope AND r.run_id = next.run_id"
    " RETURNING r.org_id, r.domain_id, r.run_id, r.agent, r.task, next.decisions, r.lease_token, r.attempts,"
    "  next.status = 'leased'";
// The fence: $1 scope, $2 run id, $3 worker, $4 token.
constexpr const char* kHeld =
    " WHERE scope = $1 AND run_id = $2 AND status = 'leased' AND lease_owner = $3 AND lease_token = $4";
// $5 lease in ms.
constexpr const char* kHeartbeat =
    "UPDATE {t} SET lease_expires_at = now() + $5 * interval '1 millisecond'{held} RETURNING 1";
constexpr const char* kSuspend =
    "UPDATE {t} SET status = 'suspended', decisions = NULL, lease_owner = NULL, lease_expires_at = NULL{held}"
    " RETURNING 1";
// $5 result.
constexpr const char* kDone =
    "UPDATE {t} SET status = 'done', result = $5, decisions = NULL, lease_owner = NULL, lease_expires_at = NULL{held}"
    " RETURNING 1";
constexpr const char* kRelease =
    "WITH u AS (UPDATE {t} SET status = 'runnable', lease_owner = NULL, lease_expires_at = NULL{held}"
    " RETURNING scope)";
// $1 scope, $2 run id, $3 decisions.
// $3 decisions (a JSON object), $4 the awaited call ids joined by '\n'. The
// decisions join those the run holds (a later one on a call replaces the
// earlier); the run is runnable, and the workers woken, once they cover
// every awaited id.
constexpr const char* kDecide =
    "WITH u AS (UPDATE {t} SET decisions = (coalesce(decisions::jsonb, '{}'::jsonb) || $3::jsonb)::text,"
    "  status = CASE WHEN (coalesce(decisions::jsonb, '{}'::jsonb) || $3::jsonb) ?& string_to_array($4, E'\\n')"
    "   THEN 'runnable' ELSE 'suspended' END"
    " WHERE scope = $1 AND run_id = $2 AND status = 'suspended' RETURNING scope, status)"
    " SELECT u.status, (SELECT pg_notify('{ch}', u.scope) WHERE u.status = 'runnable') FROM u";
constexpr const char* kInfo =
    "SELECT status, agent, task, decisions, lease_owner, lease_token, attempts, result FROM {t}"
    " WHERE scope = $1 AND run_id = $2";

std::string text_cell(const PGresult* result, int row, int column) { return bytes(result, row, column); }
std::optional<std::string> optional_text(const PGresult* result, int row, int column) {
  if (pg::null(result, row, column)) return std::nullopt;
  return bytes(result, row, column);
}

PostgresRunQueue::Status status_of(const std::string& text) {
  if (text == "leased") return PostgresRunQueue::Status::leased;
  if (text == "suspended") return PostgresRunQueue::Status::suspended;
  if (text == "done") return PostgresRunQueue::Status::done;
  return PostgresRunQueue::Status::runnable;
}

// "<table>_wake" as a channel name: no quotes, '.' as '_', at most 63 bytes.
std::string channel_of(const std::string& table) {
  std::string out;
  for (char c : table) {
    if (c == '"') continue;
    out += c == '.' ? '_' : c;
  }
  out += "_wake";
  if (out.size() > 63) out.erase(0, out.size() - 63);  // keep the end: "_wake" and the table's name
  return out;
}

}  // namespace

struct PostgresRunQueue::Impl {
  Impl(const std::string& conninfo, const Options& options);
  ~Impl() {
    if (wake_fd >= 0) ::close(wake_fd);
  }

  void ensure_table();
  // Runs a fenced change: true when it changed the run's row.
  bool fenced(const std::string& sql, const Params& params, std::string_view doing, Retry retry) {
    return PQntuples(pool.run(sql, params, retry, doing).get()) == 1;
  }
  // Opens the LISTEN connection; false (null, `error` set) when it cannot.
  bool listen(std::string& error);
  // One turn of the waiting thread: the notifications that arrived by
  // `deadline` (1 for a lost connection or an interrupt).
  std::uint64_t receive(std::chrono::steady_clock::time_point deadline);

  std::string table;
  std::string channel;
  pg::Pool pool;
  std::string submit_sql, claim_sql, heartbeat_sql, suspend_sql, done_sql, release_sql, decide_sql, info_sql;

  std::mutex wait_mutex;
  std::condition_variable woken;
  std::uint64_t generation = 0;
  bool receiving = false;   // a thread is in receive()
  pg::Connection listener;  // touched only by the thread in receive() (or the constructor)
  int wake_fd = -1;         // eventfd: interrupt() wakes receive()
};

PostgresRunQueue::Impl::Impl(const std::string& conninfo, const Options& options)
    : table(pg::quote_table(options.table, "postgres run queue")),
      channel(channel_of(table)),
      pool("postgres run queue", conninfo,
           {.pool_size = options.pool_size,
            .statement_timeout = options.statement_timeout,
            .connect_timeout = options.connect_timeout,
            .attempts = options.attempts,
            .backoff = options.backoff},
           table) {
  auto statement = [&](std::string text) {
    return substitute(substitute(substitute(std::move(text), "{held}", kHeld), "{t}", table), "{ch}", channel);
  };
  submit_sql = statement(std::string(kSubmit) + kNotify);
  claim_sql = statement(kClaim);
  heartbeat_sql = statement(kHeartbeat);
  suspend_sql = statement(kSuspend);
  done_sql = statement(kDone);
  release_sql = statement(std::string(kRelease) + kNotify);
  decide_sql = statement(kDecide);
  info_sql = statement(kInfo);
  wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) throw StoreError("postgres run queue: eventfd failed");
}

void PostgresRunQueue::Impl::ensure_table() { pool.ensure_table(kCreateTable, kKind, kSchemaVersion); }

bool PostgresRunQueue::Impl::listen(std::string& error) {
  listener = pool.connect(error);
  if (!listener) return false;
  const std::string sql = "LISTEN \"" + channel + "\"";
  const Result result(PQexec(listener.get(), sql.c_str()));
  if (PQresultStatus(result.get()) != PGRES_COMMAND_OK) {
    error = pool.prefix(listener.get()) + "cannot LISTEN: " + pool.message(listener.get(), result.get());
    listener.reset();
    return false;
  }
  return true;
}

std::uint64_t PostgresRunQueue::Impl::receive(std::chrono::steady_clock::time_point deadline) {
  using std::chrono::steady_clock;
  if (!listener || PQstatus(listener.get()) != CONNECTION_OK) {
    // Notifications sent while no connection listened are lost: a new
    // connection wakes the waiters, who claim again.
    std::string error;
    if (listen(error)) return 1;
    const auto retry = steady_clock::now() + pool.options().backoff.delay(1);
    std::this_thread::sleep_until(std::min(deadline, retry));
    return 0;
  }
  PGconn* conn = listener.get();
  auto drain = [&] {
    std::uint64_t count = 0;
    while (PGnotify* note = PQnotifies(conn)) {
      PQfreemem(note);
      ++count;
    }
    return count;
  };
  if (std::uint64_t count = drain()) return count;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady_clock::now());
  pollfd fds[2] = {{.fd = PQsocket(conn), .events = POLLIN, .revents = 0},
                   {.fd = wake_fd, .events = POLLIN, .revents = 0}};
  const int ready = ::poll(fds, 2, static_cast<int>(std::max<std::int64_t>(left.count(), 0)));
  std::uint64_t count = 0;
  if (ready > 0 && (fds[1].revents & POLLIN)) {
    std::uint64_t ignored = 0;
    if (::read(wake_fd, &ignored, sizeof ignored) < 0) {
    }
    count = 1;
  }
  if (ready > 0 && (fds[0].revents & (POLLIN | POLLERR | POLLHUP))) {
    if (PQconsumeInput(conn) == 0 || PQstatus(conn) != CONNECTION_OK) {
      listener.reset();
      return 1;
    }
    count += drain();
  }
  return count;
}

PostgresRunQueue::PostgresRunQueue(const std::string& conninfo, Options options)
    : impl_(std::make_unique<Impl>(conninfo, options)) {
  impl_->ensure_table();
  std::string error;
  if (!impl_->listen(error)) throw StoreError(error);
}

PostgresRunQueue::~PostgresRunQueue() = default;

bool PostgresRunQueue::submit(const Scope& scope, std::string_view run_id, std::string_view agent,
                              std::string_view task) {
  const std::string key = scope.key();
  Params params;
  params.text(key).integer(scope.org_id).integer(scope.domain_id).text(run_id).text(agent).text(task);
  // Idempotent: a retry after a broken connection adds nothing twice.
  const Result result = impl_->pool.run(impl_->submit_sql, params, Retry::always, "submit failed");
  return PQntuples(result.get()) == 1;
}

std::optional<PostgresRunQueue::Claim> PostgresRunQueue::claim(std::string_view worker,
                                                               const std::vector<Scope>& scopes,
                                                               std::chrono::milliseconds lease) {
  if (scopes.empty()) return std::nullopt;
  std::string keys;
  for (const auto& scope : scopes) keys += (keys.empty() ? "" : "\n") + scope.key();
  Params params;
  params.text(worker).text(keys).integer(lease.count());
  const Result result = impl_->pool.run(impl_->claim_sql, params, Retry::unless_sent, "claim failed");
  if (PQntuples(result.get()) == 0) return std::nullopt;
  const PGresult* r = result.get();
  Claim claim;
  if (!pg::null(r, 0, 0)) claim.scope.org_id = integer(r, 0, 0);
  if (!pg::null(r, 0, 1)) claim.scope.domain_id = integer(r, 0, 1);
  claim.run_id = text_cell(r, 0, 2);
  claim.agent = text_cell(r, 0, 3);
  claim.task = text_cell(r, 0, 4);
  claim.decisions = optional_text(r, 0, 5);
  claim.lease_token = integer(r, 0, 6);
  claim.attempt = static_cast<int>(integer(r, 0, 7));
  claim.taken_over = pg::boolean(r, 0, 8);
  return claim;
}

namespace {
void fence(Params& params, const std::string& scope, std::string_view worker, const PostgresRunQueue::Claim& claim) {
  params.text(scope).text(claim.run_id).text(worker).integer(claim.lease_token);
}
}  // namespace

bool PostgresRunQueue::heartbeat(std::string_view worker, const Claim& claim, std::chrono::milliseconds lease) {
  const std::string scope = claim.scope.key();
  Params params;
  fence(params, scope, worker, claim);
  params.integer(lease.count());
  return impl_->fenced(impl_->heartbeat_sql, params, "heartbeat failed", Retry::always);
}

bool PostgresRunQueue::mark_suspended(std::string_view worker, const Claim& claim) {
  const std::string scope = claim.scope.key();
  Params params;
  fence(params, scope, worker, claim);
  return impl_->fenced(impl_->suspend_sql, params, "mark suspended failed", Retry::unless_sent);
}

bool PostgresRunQueue::mark_done(std::string_view worker, const Claim& claim, std::string_view result) {
  const std::string scope = claim.scope.key();
  Params params;
  fence(params, scope, worker, claim);
  params.text(result);
  return impl_->fenced(impl_->done_sql, params, "mark done failed", Retry::unless_sent);
}

bool PostgresRunQueue::release(std::string_view worker, const Claim& claim) {
  const std::string scope = claim.scope.key();
  Params params;
  fence(params, scope, worker, claim);
  return impl_->fenced(impl_->release_sql, params, "release failed", Retry::unless_sent);
}

PostgresRunQueue::Decided PostgresRunQueue::submit_decisions(const Scope& scope, std::string_view run_id,
                                                             std::string_view decisions,
                                                             const std::vector<std::string>& awaited) {
  const auto refuse = [](const std::string& why) { return Error(ErrorCode::invalid_argument, "submit_decisions: " + why); };
  if (!Json::accept(decisions) || !Json::parse(decisions).is_object()) throw refuse("decisions are not a JSON object");
  std::string ids;
  for (const auto& id : awaited) {
    if (id.empty() || id.find('\n') != std::string::npos) throw refuse("an awaited call id is empty or holds a newline");
    if (!ids.empty()) ids += '\n';
    ids += id;
  }
  const std::string key = scope.key();
  Params params;
  params.text(key).text(run_id).text(decisions).text(ids);
  const Result result = impl_->pool.run(impl_->decide_sql, params, Retry::unless_sent, "submit decisions failed");
  if (PQntuples(result.get()) != 1) return Decided::not_suspended;
  return text_cell(result.get(), 0, 0) == "runnable" ? Decided::runnable : Decided::held;
}

std::optional<PostgresRunQueue::Info> PostgresRunQueue::info(const Scope& scope, std::string_view run_id) {
  const std::string key = scope.key();
  Params params;
  params.text(key).text(run_id);
  const Result result = impl_->pool.run(impl_->info_sql, params, Retry::always, "read failed");
  if (PQntuples(result.get()) == 0) return std::nullopt;
  const PGresult* r = result.get();
  Info info;
  info.status = status_of(text_cell(r, 0, 0));
  info.agent = text_cell(r, 0, 1);
  info.task = text_cell(r, 0, 2);
  info.decisions = optional_text(r, 0, 3);
  info.lease_owner = optional_text(r, 0, 4).value_or("");
  info.lease_token = integer(r, 0, 5);
  info.attempts = static_cast<int>(integer(r, 0, 6));
  info.result = optional_text(r, 0, 7);
  return info;
}

std::uint64_t PostgresRunQueue::wakeups() const {
  std::lock_guard lock(impl_->wait_mutex);
  return impl_->generation;
}

bool PostgresRunQueue::wait(std::uint64_t seen, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(impl_->wait_mutex);
  while (impl_->generation == seen) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    if (impl_->receiving) {
      // Another thread reads the connection; it wakes us when it is done.
      impl_->woken.wait_until(lock, deadline);
      continue;
    }
    impl_->receiving = true;
    lock.unlock();
    std::uint64_t got = 0;
    try {
      got = impl_->receive(deadline);
    } catch (...) {
      lock.lock();
      impl_->receiving = false;
      impl_->woken.notify_all();
      throw;
    }
    lock.lock();
    impl_->receiving = false;
    impl_->generation += got;
    impl_->woken.notify_all();
  }
  return true;
}

void PostgresRunQueue::interrupt() {
  {
    std::lock_guard lock(impl_->wait_mutex);
    ++impl_->generation;
  }
  impl_->woken.notify_all();
  const std::uint64_t one = 1;
  if (::write(impl_->wake_fd, &one, sizeof one) < 0) {
  }
}

}  // namespace agentkit::state
