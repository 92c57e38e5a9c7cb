#pragma once
// FleetWorker: one worker of a fleet that shares runs, approvals and the
// exactly-once ledger through PostgreSQL (a PostgresRunQueue for the runs, a
// PostgresStore for their checkpoints and ledgers). Any number of workers,
// threads of one process or many processes, serve the same queue.
#include <agentkit/agent.h>
#include <agentkit/context.h>
#include <agentkit/state/postgres_run_queue.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace agentkit {

// What a worker did with a run it claimed, handed to FleetWorkerOptions::
// on_run on the worker's thread.
struct FleetRunReport {
  enum class Outcome {
    done,       // the run ended (result set) and the queue says done
    suspended,  // the run waits for decisions (its checkpoint names them)
    lost,       // the lease was lost (taken over, or a fenced mark refused): the worker let go
    released,   // the worker stopped mid-run and gave the run back, runnable
    retried,    // the run's end is not in the store (a checkpoint failed: error
                // says why); given back, runnable, to be recovered from its
                // last checkpoint
    abandoned,  // the store or queue failed: the lease is left to expire
  };
  Outcome outcome = Outcome::done;
  Scope scope;
  std::string run_id;
  std::string agent;
  int attempt = 0;                  // the queue's claim count for the run
  bool taken_over = false;          // claimed from a worker whose lease expired
  std::optional<RunResult> result;  // done and suspended: the run's result
  std::string error;                // what failed, for a run that could not start or be marked
};

// "done", "suspended", "lost", "released", "retried", "abandoned".
std::string_view to_string(FleetRunReport::Outcome outcome) noexcept;

struct FleetWorkerOptions {
  // The worker's name: the lease owner in the queue. Unique across the
  // fleet (a host name and a counter, say). Required.
  std::string name;
  // The scopes (tenants) this worker serves: it never claims another's
  // runs. Required, at least one.
  std::vector<Scope> scopes;
  // How long a claim or a heartbeat holds the run, on the server's clock.
  std::chrono::milliseconds lease{30000};
  // How often a running run's lease is extended; below lease (a third of
  // it, say). The worker's own lease thread sends it, so a model or tool
  // call that runs inline (no ctx.executor) for longer than the lease keeps
  // it.
  std::chrono::milliseconds heartbeat{10000};
  // How long an idle worker sleeps on LISTEN before it looks again without
  // a notification: the only way it notices a lease that expired (a
  // crashed worker's run).
  std::chrono::milliseconds idle_wait{5000};
  // A run claimed more often than this (its workers died, or its end could
  // not be stored, every time) is not started again: it is marked done with
  // an error. 0: no limit.
  int max_attempts = 10;
  // Called on the worker's thread after each run it handled; must not throw.
  std::function<void(const FleetRunReport&)> on_run;
};

// The JSON a PostgresRunQueue carries for decisions, by call id:
//   {"c1": {"kind": "approve"}, "c2": {"kind": "reject", "message": "too much"},
//    "c3": {"kind": "edit", "arguments": {...}}}
std::string decisions_to_json(const Decisions& decisions);
// Throws agentkit::Error (invalid_argument) for anything else.
Decisions decisions_from_json(std::string_view json);

// A worker on its own thread: claims a run of its scopes (waiting on LISTEN
// when there is none), then
//   - a run with no checkpoint yet: Agent::start with the queue's run id;
//   - a suspended checkpoint and decisions from submit_decisions():
//     Agent::start_resume with them;
//   - a suspended checkpoint without decisions: marks it suspended again;
//   - any other checkpoint (a worker died or stopped mid-run):
//     Agent::start_recover, which runs no recorded call again and reports
//     a side-effecting call that started and recorded nothing as
//     outcome_unknown (the ledger's guarantees);
// drives the RunHandle while its lease thread heartbeats, and marks the run
// suspended or done (the result as JSON: stop_reason, output, failure) once
// the store holds that end. A run whose end the store does not hold (a
// checkpoint failed: the server went away, a write's outcome was unknown)
// is given back to the queue and recovered from its last checkpoint, never
// marked done as failed for it. Every mark is fenced by the lease: a worker
// that lost its lease changes nothing and lets the run go
// (FleetRunReport::Outcome::lost).
//
// Each run gets a copy of `base` with the run's scope and a fresh Budget
// of base's limits; base.store must be the fleet's shared Store (a
// PostgresStore over the same database in a fleet of processes). Agents
// are found by the name the run was submitted with; a name not in `agents`
// ends the run done with an error.
//
// Example:
//   auto queue = std::make_shared<agentkit::state::PostgresRunQueue>(conninfo);
//   agentkit::RunContext base;
//   base.store = std::make_shared<agentkit::state::PostgresStore>(conninfo);
//   base.models = resolver;
//   agentkit::FleetWorker worker(queue, {{"billing", billing_agent}}, base,
//                                {.name = "host-a/1", .scopes = {{.org_id = 7}}});
//   worker.start();
//   queue->submit({.org_id = 7}, "refund-42", "billing", "Refund order A-1");
class FleetWorker {
 public:
  using Agents = std::map<std::string, std::shared_ptr<const Agent>, std::less<>>;

  // Throws agentkit::Error (invalid_argument) for a null queue, no
  // base.store, no name or no scopes, or a heartbeat not below the lease.
  FleetWorker(std::shared_ptr<state::PostgresRunQueue> queue, Agents agents, RunContext base,
              FleetWorkerOptions options);
  // Stops (see stop()).
  ~FleetWorker();
  FleetWorker(const FleetWorker&) = delete;
  FleetWorker& operator=(const FleetWorker&) = delete;

  // Starts the worker's threads (once): the one that runs claims and the
  // one that extends their leases.
  void start();
  // Stops claiming, gives a run in progress back to the queue (runnable; the
  // next worker recovers it from its checkpoint) and joins the threads.
  void stop();

  const std::string& name() const noexcept { return options_.name; }
  // Runs this worker claimed so far.
  int claims() const noexcept { return claims_.load(); }

 private:
  void loop();
  void handle(const state::PostgresRunQueue::Claim& claim);
  void report(FleetRunReport report) const;
  // The lease thread: heartbeats the claim being handled.
  void keep_leases();
  // Sets the claim being handled (nullptr: none) for the lease thread.
  void hold(const state::PostgresRunQueue::Claim* claim);
  bool lease_lost();

  std::shared_ptr<state::PostgresRunQueue> queue_;
  Agents agents_;
  RunContext base_;
  FleetWorkerOptions options_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> claims_{0};
  std::mutex lease_mutex_;
  std::condition_variable lease_cv_;
  std::optional<state::PostgresRunQueue::Claim> held_;  // the claim being handled
  bool lease_lost_ = false;                              // the queue refused held_'s heartbeat
  std::thread thread_;
  std::thread lease_thread_;
};

}  // namespace agentkit
