#pragma once
// RunContext carries everything ambient to a run; child() scopes it.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <spdlog/fwd.h>

#include <agentkit/events.h>
#include <agentkit/model.h>

namespace agentkit {

class Invoker;
class Executor;
class EgressAllowlist;  // <agentkit/egress.h>
namespace state {
class Store;  // <agentkit/state/store.h>
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

// Cooperative cancellation shared by a run and its children. Copies share
// one flag.
class CancellationToken {
 public:
  CancellationToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
  void cancel() const noexcept { flag_->store(true, std::memory_order_release); }
  bool cancelled() const noexcept { return flag_->load(std::memory_order_acquire); }

 private:
  std::shared_ptr<std::atomic<bool>> flag_;
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

// Thrown by RunContext::child() past max_depth.
class DepthLimitExceeded : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thread-safe queue of events; a run drains it on the driving thread.
class EventQueue {
 public:
  void push(Event e);
  std::vector<Event> drain();

 private:
  std::mutex mutex_;
  std::vector<Event> events_;
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
  int depth = 0;
  int max_depth = 5;
  Autonomy autonomy = Autonomy::automatic;
  std::shared_ptr<Budget> budget = std::make_shared<Budget>();
  CancellationToken cancellation;
  std::shared_ptr<Observer> observer;
  std::shared_ptr<EventQueue> events;  // set by a running agent; emit() queues there
  std::shared_ptr<UsageMeter> usage;   // set by a running agent; sub-runs add their totals to it
  std::shared_ptr<state::Store> store;  // where durable state goes
  // The secret that signs the RunState a run hands back (RunResult::state)
  // and checks one handed to Agent::resume when there is no store: HMAC-
  // SHA256, so at least kMinStateKeyBytes random bytes, kept as secret as an
  // API key. Empty: states are not signed, and resuming a state needs a
  // store. A shorter key is refused with std::invalid_argument by
  // Agent::run, resume and recover, before anything runs.
  std::string state_key;
  static constexpr std::size_t kMinStateKeyBytes = 32;
  ModelResolver models;
  std::shared_ptr<const Invoker> invoker;
  std::shared_ptr<Executor> executor;  // where model and tool calls run; inline when null
  std::shared_ptr<const EgressAllowlist> egress;  // where tools may connect; null: anywhere
  std::shared_ptr<spdlog::logger> logger;
  std::string span_id;
  std::string parent_span_id;
  // Set for a tool body by the end of the invoker chain: the call's key,
  // unique within its run ("<turn>/<call id>"). A sub-run derives its run id
  // from it, so a recovered parent finds the sub-run again instead of
  // starting it over.
  std::string call_key;

  // A scoped context for a sub-run: shares budget and cancellation, adds one
  // to depth, opens a child span. Throws DepthLimitExceeded past max_depth.
  RunContext child() const;

  bool cancelled() const noexcept { return cancellation.cancelled(); }

  // Sends an event to the run's queue (drained on the driving thread), or
  // straight to the observer when no run is driving this context.
  void emit(Event event) const;

  // A new unique id (for spans, runs and generated call ids): 64 random bits
  // per process (drawn again in a forked child) and a counter.
  static std::string new_id(std::string_view prefix);
};

}  // namespace agentkit
