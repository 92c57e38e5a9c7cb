#pragma once
// RunContext carries everything ambient to a run; child() scopes it.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

#include <spdlog/fwd.h>

#include <agentkit/error.h>
#include <agentkit/events.h>
#include <agentkit/model.h>

namespace agentkit {

class Invoker;
class Executor;
class EgressAllowlist;  // <agentkit/egress.h>
class Dependencies;     // <agentkit/inject.h>
struct NestedSuspension;  // <agentkit/run_state.h>
namespace state {
class Store;  // <agentkit/state/store.h>
}
namespace trace {
class SpanSink;  // <agentkit/trace.h>
}

// The tenant a run acts for. `key()` renders it for store keys and logs:
// Scope{.org_id = 7, .domain_id = 1}.key() == "org7:dom1".
struct Scope {
  std::optional<std::int64_t> org_id;
  std::optional<std::int64_t> domain_id;

  std::string key() const;
  friend bool operator==(const Scope&, const Scope&) = default;
};

// How much a run may act on its own (spec 000, approval gating).
enum class Autonomy {
  manual,     // every tool call pauses for a decision
  gated,      // side-effecting calls pause
  automatic,  // only tools declaring requires_approval pause (the default)
};

// Limits of a run and its children. Unset means unlimited.
struct BudgetLimits {
  std::optional<std::int64_t> model_steps;
  std::optional<std::int64_t> tool_calls;
  std::optional<std::int64_t> tokens;
  std::optional<double> cost_usd;
  std::optional<std::chrono::milliseconds> wall_time;
};

// A budget shared by a run and every child context. Thread-safe.
class Budget {
 public:
  explicit Budget(BudgetLimits limits = {});

  const BudgetLimits& limits() const noexcept { return limits_; }

  void charge_model_step() noexcept { model_steps_.fetch_add(1, std::memory_order_relaxed); }
  void charge_tool_calls(std::int64_t n) noexcept { tool_calls_.fetch_add(n, std::memory_order_relaxed); }
  void charge_tokens(const Usage& usage) noexcept;
  void charge_cost(double usd);
  void charge_tool_time(std::chrono::microseconds d) noexcept { tool_time_us_.fetch_add(d.count(), std::memory_order_relaxed); }

  std::int64_t model_steps() const noexcept { return model_steps_.load(std::memory_order_relaxed); }
  std::int64_t tool_calls() const noexcept { return tool_calls_.load(std::memory_order_relaxed); }
  std::int64_t tokens() const noexcept { return tokens_.load(std::memory_order_relaxed); }
  double cost_usd() const;
  std::chrono::microseconds tool_time() const noexcept { return std::chrono::microseconds(tool_time_us_.load()); }
  std::chrono::milliseconds elapsed() const;

  // Why the budget is spent (e.g. "model_steps limit 10 reached"), or nullopt.
  // `extra_tool_calls` asks "would a batch of that many calls still fit?".
  std::optional<std::string> exhausted(std::int64_t extra_tool_calls = 0) const;

 private:
  BudgetLimits limits_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<std::int64_t> model_steps_{0};
  std::atomic<std::int64_t> tool_calls_{0};
  std::atomic<std::int64_t> tokens_{0};
  std::atomic<std::int64_t> tool_time_us_{0};
  mutable std::mutex cost_mutex_;
  double cost_usd_ = 0;
};

// Cooperative cancellation with an optional deadline. Copies share one
// state. A token made by child() is cancelled with its parent (and so with
// every ancestor), but cancelling it leaves the parent running; its deadline
// is the earlier of its own and its parent's. The engine builds this tree: a
// run's token is a child of the context's it was started with, and every tool
// call gets a child of the run's, so a tool sees one token that is cancelled
// when the host cancels, when the run is cancelled, or when the call itself is
// (timeout(), or a wall_time budget running out).
//
// A deadline is not a stop request: past it cancelled() is true, but
// stop_token() is stopped only by cancel(). Code that blocks on a stop_token
// also waits until deadline(), as sleep_for() does.
//
// Example:
//   agentkit::CancellationToken run;
//   auto call = run.child(std::chrono::steady_clock::now() + std::chrono::seconds(2));
//   call.cancel();  // the call stops; run.cancelled() stays false
//   run.cancel();   // every child of run is cancelled too
class CancellationToken {
 public:
  using Clock = std::chrono::steady_clock;

  // A new root: cancelled by nothing but its own cancel().
  CancellationToken();

  // Cancels this token and every token derived from it. Thread-safe.
  void cancel() const noexcept;
  // cancel() was called on this token or an ancestor, or the deadline passed.
  bool cancelled() const noexcept { return stop_requested() || past_deadline(); }
  // cancel() was called on this token or an ancestor (the deadline aside).
  bool stop_requested() const noexcept;
  bool past_deadline() const noexcept;
  // The earliest deadline of this token and its ancestors; nullopt: none.
  std::optional<Clock::time_point> deadline() const noexcept;
  // Stopped when cancel() is called on this token or an ancestor.
  std::stop_token stop_token() const noexcept;

  // A token cancelled with this one, with its own cancel() and a deadline no
  // later than this one's.
  CancellationToken child(std::optional<Clock::time_point> deadline = std::nullopt) const;

  // Sleeps for `duration`, returning early (without throwing) when the token
  // is cancelled, its deadline comes first, or `wake` is stopped (a waiter's
  // own reason to stop waiting: a new session, new work; the default wakes
  // never). The one way agentkit waits out a delay; no polling.
  void sleep_for(Clock::duration duration, std::stop_token wake = {}) const;

 private:
  struct State;
  explicit CancellationToken(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

// Token usage totalled across a run and the sub-runs it starts. Thread-safe.
class UsageMeter {
 public:
  void add(const Usage& usage) {
    std::lock_guard lock(mutex_);
    total_ += usage;
  }
  Usage total() const {
    std::lock_guard lock(mutex_);
    return total_;
  }

 private:
  mutable std::mutex mutex_;
  Usage total_;
};

// Thrown by RunContext::child() past max_depth. Code budget_exhausted.
class DepthLimitExceeded : public Error {
 public:
  explicit DepthLimitExceeded(const std::string& message) : Error(ErrorCode::budget_exhausted, message) {}
};

// Thread-safe queue of events; a run drains it on the driving thread.
// push() stamps an event's time when it has none, under the queue's lock, so
// times never decrease along the queue (a clock stepped back repeats the
// last time). A closed queue (its run's handle is gone) takes nothing more.
class EventQueue {
 public:
  // False, and the event dropped, once the queue is closed.
  bool push(Event e);
  std::vector<Event> drain();
  void close();

 private:
  std::mutex mutex_;
  std::vector<Event> events_;
  std::chrono::system_clock::time_point last_{};
  bool closed_ = false;
  // Set (under the mutex) with each event pushed, cleared by the drain that
  // takes it: an empty queue drains without the lock, once a step.
  std::atomic<bool> pending_{false};
};

// Everything ambient to a run, handed to every tool call. Copying is cheap
// (shared handles); a copy shares budget, cancellation, observer and store.
// No process-wide state: two contexts built separately never see each other.
class RunContext {
 public:
  RunContext() = default;
  explicit RunContext(Scope s) : scope(std::move(s)) {}

  Scope scope;
  std::string correlation_id;  // the run id; keys idempotency and traces
  // The running agent's name, "<parent path>/<name>" for a sub-run (set by
  // the engine; a host may set a prefix of its own). Events carry it.
  std::string agent_path;
  int depth = 0;
  int max_depth = 5;
  Autonomy autonomy = Autonomy::automatic;
  // The tier the approval gate enforces: the stricter of `autonomy` now and
  // `autonomy` as the call entered the invoker (Invoker::invoke_tool records
  // it), so a middleware that lowers ctx.autonomy, or hands the rest of the
  // chain a context of its own making (treated as manual), cannot open the
  // gate.
  Autonomy gate_tier() const noexcept;
  std::shared_ptr<Budget> budget = std::make_shared<Budget>();
  // For a tool body, the call's own token (a child of the run's); for a
  // host, the root its runs derive theirs from.
  CancellationToken cancellation;
  std::shared_ptr<Observer> observer;
  // Set by a running agent; emit() queues there. A run started from a
  // context that has one (a tool body's, or its child()) queues its events
  // there too, so a sub-run's events reach the host through the parent's
  // drain_events() (or observer), on the host's thread, once.
  std::shared_ptr<EventQueue> events;
  std::shared_ptr<UsageMeter> usage;   // set by a running agent; sub-runs add their totals to it
  std::shared_ptr<state::Store> store;  // where durable state goes
  // The secret that signs the RunState a run hands back (RunResult::state)
  // and checks one handed to Agent::resume when there is no store: HMAC-
  // SHA256, so at least kMinStateKeyBytes random bytes, kept as secret as an
  // API key. Empty: states are not signed, and resuming a state needs a
  // store. A shorter key is refused with an agentkit::Error (invalid_argument) by
  // Agent::run, resume and recover, before anything runs.
  std::string state_key;
  static constexpr std::size_t kMinStateKeyBytes = 32;
  ModelResolver models;
  std::shared_ptr<const Invoker> invoker;
  std::shared_ptr<Executor> executor;  // where model and tool calls run; inline when null
  std::shared_ptr<const EgressAllowlist> egress;  // where tools may connect; null: anywhere
  // What tools take as Inject<T> parameters (<agentkit/inject.h>). A run
  // starts with its own copy (its per-run objects); a run whose tools need a
  // type this lacks fails at its start.
  std::shared_ptr<const Dependencies> dependencies;
  std::shared_ptr<spdlog::logger> logger;  // where library code logs; null: nowhere (never spdlog's default)
  // The run's span (set by the engine) and the span it
  // hangs under: the span of the run that started it; for a top-level run,
  // the caller's (continue_trace()). Events carry both.
  trace::SpanId span_id;
  trace::SpanId parent_span_id;
  // Set by the engine for a tool body when the run has a trace: the call's
  // execute_tool span. A sub-run the tool starts hangs its trace under it,
  // and traceparent() names it, so a REST or MCP peer joins the trace there.
  trace::SpanId call_span_id;
  // Where this run's spans go (<agentkit/trace.h>): shared by its sub-runs.
  // Null: the run makes no spans and costs nothing for them.
  std::shared_ptr<trace::SpanSink> tracer;
  // The W3C trace the run's spans belong to. Empty: a run
  // with a tracer starts a new trace; a resumed run continues the one its
  // state records. Set it with continue_trace() to join a caller's trace.
  trace::TraceId trace_id;
  // Joins the trace of a W3C `traceparent` value (an incoming request's):
  // trace_id and parent_span_id become its trace and span, so the next run
  // started from this context hangs under the caller's span. False, and
  // nothing changed, when the value is malformed.
  bool continue_trace(std::string_view traceparent);
  // The W3C `traceparent` for a request made from this context (a REST or
  // MCP tool's): its trace and call_span_id, else span_id. Empty when the
  // context has no trace.
  std::string traceparent() const;
  // Set for a tool body by the end of the invoker chain: the call's key,
  // unique within its run ("<turn>/<call id>"). A sub-run derives its run id
  // from it, so a recovered parent finds the sub-run again instead of
  // starting it over.
  std::string call_key;
  // Set by the engine for a tool body that runs again after its sub-run
  // suspended and the run was resumed: the sub-run's suspension, with the
  // decisions routed down to it. as_tool resumes the sub-run with them.
  // Null otherwise.
  std::shared_ptr<const NestedSuspension> resuming;

  // A scoped context for a sub-run: shares budget and cancellation, adds one
  // to depth, opens a child span. Throws DepthLimitExceeded past max_depth.
  RunContext child() const;

  // True once the host, the run or this call is cancelled, or the call is
  // past its deadline. Long-running tools poll this (or wait on
  // stop_token() until deadline()) and stop early: the run does not wait
  // for them after a cancel, and timeout() reports what they return late.
  bool cancelled() const noexcept { return cancellation.cancelled(); }
  // Stopped by a cancel of the host, the run or this call (not by the
  // deadline alone; see CancellationToken).
  std::stop_token stop_token() const noexcept { return cancellation.stop_token(); }
  // When this call (or run) must end: the earliest of timeout()'s limit, the
  // budget's wall_time and any deadline above it; nullopt: none.
  std::optional<std::chrono::steady_clock::time_point> deadline() const noexcept { return cancellation.deadline(); }

  // Sends an event to the run's queue (drained on the driving thread), or
  // straight to the observer when no run is driving this context. Stamps
  // the event's info first where the emitter left it unset: its time, and
  // its source from correlation_id, agent_path, span_id and parent_span_id.
  // An event that finds the run's queue closed (the run that started this
  // one has ended and its handle is gone) is dropped, with a debug line on
  // `logger`.
  void emit(Event event) const;
  // Whether an event emitted here reaches anyone: a run's queue or an
  // observer. When not, emit() drops it, and an emitter may skip building
  // it (a run driven by Agent::run without an observer makes none).
  bool observed() const noexcept { return events || observer; }

  // The source events emitted here carry: the one refresh_event_source()
  // cached while the four fields still match it, otherwise a new one (null
  // when all four are empty).
  std::shared_ptr<const EventSource> event_source() const;
  // Caches the source built from the fields, so every emit() (and every
  // copy of this context) shares it. The engine calls it once per run; call
  // it again after changing any of the four fields, or emit() builds a
  // source per event.
  void refresh_event_source();

  // A new unique id (for spans, runs and generated call ids): 64 random bits
  // per process (drawn again in a forked child) and a counter.
  static std::string new_id(std::string_view prefix);

 private:
  friend class Invoker;
  std::optional<Autonomy> entry_tier_;  // set by Invoker::invoke_tool for the chain's duration
  std::shared_ptr<const EventSource> source_;  // see refresh_event_source()
};

}  // namespace agentkit
