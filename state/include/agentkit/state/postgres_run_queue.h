#pragma once
// PostgresRunQueue: the runs of a fleet of workers, in one PostgreSQL table
// every worker (thread or process) shares, handed out through leases.
#include <agentkit/backoff.h>
#include <agentkit/context.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentkit::state {

// One row per run, keyed by (scope, run id):
//   runnable  -> waiting for a worker: new, given decisions, or released;
//   leased    -> a worker holds it until its lease expires (server clock);
//   suspended -> waiting for decisions (the run's checkpoint names them);
//   done      -> ended (its result kept).
// A leased run whose lease expired (its worker died or stalled) is runnable
// again: the next claim takes it over.
//
// Fencing: every claim gives the run a new lease token. heartbeat(),
// mark_suspended(), mark_done() and release() change the row only while
// the caller still holds that lease (owner and token match and the run is
// leased), so a worker paused past its lease that wakes up after another
// took the run over changes nothing: the call returns false and the worker
// must stop touching the run. (The run's checkpoint fences it a second
// time: a recovery claims the checkpoint, and the old worker's next save
// fails.)
//
// Wake-ups: submit() and submit_decisions() NOTIFY a channel; wait() sleeps
// on LISTEN (its own connection) until a notification arrives, so an idle
// worker takes new work at once without polling the table. The timeout of
// wait() is a safety net for what sends no notification: a lease expiring.
//
// Threads: one object may be shared by any number of threads (a pool of
// connections, as PostgresStore's, plus the listening connection).
// Failures throw StoreError, as PostgresStore's methods do; a broken
// connection is replaced and the call retried as PostgresStore retries
// (claims and marks are tried again only when never sent: a claim whose
// connection broke after it was sent throws outcome_unknown, and the run it
// may have taken comes back when that lease expires).
class PostgresRunQueue {
 public:
  struct Options {
    // Connections for the queue's statements (the LISTEN one aside).
    std::size_t pool_size = 4;
    std::chrono::milliseconds statement_timeout{30000};
    std::chrono::seconds connect_timeout{10};
    int attempts = 3;
    Backoff backoff{.base = std::chrono::milliseconds(100), .max = std::chrono::seconds(2)};
    // The table, optionally schema-qualified; plain identifiers. Created on
    // first use. The NOTIFY channel is named after it ("<table>_wake", the
    // schema's '.' as '_').
    std::string table = "agentkit_runs";
  };

  enum class Status { runnable, leased, suspended, done };

  // A run a worker claimed.
  struct Claim {
    Scope scope;
    std::string run_id;
    std::string agent;
    std::string task;
    // The decisions submit_decisions() gave the suspended run (a JSON object
    // by call id), handed to this claim alone; the worker resumes with them.
    std::optional<std::string> decisions;
    std::int64_t lease_token = 0;  // fences every later call about this run
    int attempt = 0;               // 1 on the first claim, +1 per claim
    // The run was leased by another worker whose lease expired: that worker
    // may have left it mid-step (recover it from its checkpoint).
    bool taken_over = false;
  };

  // What the table says about a run.
  struct Info {
    Status status = Status::runnable;
    std::string agent;
    std::string task;
    std::optional<std::string> decisions;
    std::string lease_owner;  // empty when none
    std::int64_t lease_token = 0;
    int attempts = 0;
    std::optional<std::string> result;  // mark_done's
  };

  // Connects (libpq's rules, as PostgresStore), creates the table when
  // absent and starts listening. Throws agentkit::Error (invalid_argument)
  // and StoreError as PostgresStore's constructor does.
  explicit PostgresRunQueue(const std::string& conninfo) : PostgresRunQueue(conninfo, Options{}) {}
  PostgresRunQueue(const std::string& conninfo, Options options);
  ~PostgresRunQueue();

  PostgresRunQueue(const PostgresRunQueue&) = delete;
  PostgresRunQueue& operator=(const PostgresRunQueue&) = delete;

  // Adds a runnable run and wakes the workers. Idempotent on (scope, run
  // id): true when this call added it, false when it was already there
  // (whatever its state; nothing is changed).
  bool submit(const Scope& scope, std::string_view run_id, std::string_view agent, std::string_view task);

  // Takes the oldest runnable (or lease-expired) run of `scopes` for
  // `worker`, leased for `lease` from now on the server's clock, in one
  // statement (SELECT ... FOR UPDATE SKIP LOCKED: concurrent claims never
  // wait on each other and never take the same run). nullopt when there is
  // none. A worker never gets a run of a scope it does not list; an empty
  // list claims nothing.
  std::optional<Claim> claim(std::string_view worker, const std::vector<Scope>& scopes,
                             std::chrono::milliseconds lease);

  // Extends the lease to `lease` from now. False when the lease is lost
  // (expired and taken over, or the run no longer leased): stop.
  bool heartbeat(std::string_view worker, const Claim& claim, std::chrono::milliseconds lease);
  // The run waits for decisions; clears the decisions it was resumed with.
  // False when the lease is lost (nothing changed).
  bool mark_suspended(std::string_view worker, const Claim& claim);
  // The run ended; `result` is kept (any text; the fleet writes JSON).
  // False when the lease is lost (nothing changed).
  bool mark_done(std::string_view worker, const Claim& claim, std::string_view result);
  // Gives the run back, runnable at once (a worker stopping mid-run), and
  // wakes the workers. False when the lease is lost.
  bool release(std::string_view worker, const Claim& claim);

  // What submit_decisions() did.
  enum class Decided {
    not_suspended,  // nothing changed: the run is unknown, runnable, running or done
    held,           // kept; the run stays suspended, awaiting decisions on other calls
    runnable,       // the run's decisions are whole: it is runnable and the workers woken
  };
  // Adds decisions (a JSON object by call id) to those a suspended run
  // holds; a later decision on a call replaces the earlier one. Once they
  // cover every id in `awaited` (the calls the run waits on; empty: what is
  // given is whole) the run becomes runnable and the workers wake; until
  // then it stays suspended, so approvers may decide one call each and the
  // run never resumes with a call nobody decided. Throws agentkit::Error
  // (invalid_argument), changing nothing, for decisions that are not a JSON
  // object or an awaited id that is empty or holds a newline.
  Decided submit_decisions(const Scope& scope, std::string_view run_id, std::string_view decisions,
                           const std::vector<std::string>& awaited = {});

  std::optional<Info> info(const Scope& scope, std::string_view run_id);

  // A count of the notifications this object has received. Read it before
  // claim(); wait(seen, ...) then returns at once when one arrived since.
  std::uint64_t wakeups() const;
  // Blocks until a notification arrives after `seen` (wakeups() read before
  // the claim that found nothing) or `timeout` passes. True when woken by a
  // notification (or a lost LISTEN connection, which may have missed some);
  // false on the timeout. Any number of threads may wait at once.
  bool wait(std::uint64_t seen, std::chrono::milliseconds timeout);
  // Wakes every wait() of this object now, as a notification would (a host
  // stopping its workers). Only this object's waiters: no NOTIFY is sent.
  void interrupt();

  static constexpr int kSchemaVersion = 1;

 private:
  struct Impl;

  std::unique_ptr<Impl> impl_;
};

}  // namespace agentkit::state
