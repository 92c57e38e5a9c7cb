#include <agentkit/context.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <mutex>

#include <spdlog/spdlog.h>

#include <agentkit/detail/logging.h>
#include <agentkit/trace.h>

#include "process_salt.h"

namespace agentkit {

std::string Scope::key() const {
  std::string out;
  if (org_id) out += "org" + std::to_string(*org_id);
  if (domain_id) out += (out.empty() ? "" : ":") + ("dom" + std::to_string(*domain_id));
  return out.empty() ? "global" : out;
}

Budget::Budget(BudgetLimits limits) : limits_(limits), start_(std::chrono::steady_clock::now()) {}

void Budget::charge_tokens(const Usage& usage) noexcept {
  tokens_.fetch_add(usage.total(), std::memory_order_relaxed);
}

void Budget::charge_cost(double usd) {
  std::lock_guard lock(cost_mutex_);
  cost_usd_ += usd;
}

double Budget::cost_usd() const {
  std::lock_guard lock(cost_mutex_);
  return cost_usd_;
}

std::chrono::milliseconds Budget::elapsed() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start_);
}

std::optional<std::string> Budget::exhausted(std::int64_t extra_tool_calls) const {
  if (limits_.model_steps && model_steps() >= *limits_.model_steps) {
    return "model_steps limit " + std::to_string(*limits_.model_steps) + " reached";
  }
  if (limits_.tool_calls && tool_calls() + extra_tool_calls > *limits_.tool_calls) {
    return "tool_calls limit " + std::to_string(*limits_.tool_calls) + " reached";
  }
  if (limits_.tokens && tokens() >= *limits_.tokens) {
    return "tokens limit " + std::to_string(*limits_.tokens) + " reached";
  }
  if (limits_.cost_usd && cost_usd() >= *limits_.cost_usd) return "cost limit reached";
  if (limits_.wall_time && elapsed() >= *limits_.wall_time) {
    return "wall_time limit " + std::to_string(limits_.wall_time->count()) + " ms reached";
  }
  return std::nullopt;
}

// A child's stop_source is stopped by a callback registered on its parent's
// stop_token, so cancelling a parent reaches every descendant without any
// token walking the tree; destroying a child deregisters it.
struct CancellationToken::State {
  struct Forward {
    std::stop_source target;
    void operator()() const noexcept { std::stop_source(target).request_stop(); }
  };

  std::stop_source source;
  std::optional<Clock::time_point> deadline;
  std::optional<std::stop_callback<Forward>> link;  // to the parent; declared last, destroyed first
};

CancellationToken::CancellationToken() : state_(std::make_shared<State>()) {}

void CancellationToken::cancel() const noexcept { state_->source.request_stop(); }

bool CancellationToken::stop_requested() const noexcept { return state_->source.stop_requested(); }

bool CancellationToken::past_deadline() const noexcept {
  return state_->deadline && Clock::now() >= *state_->deadline;
}

std::optional<CancellationToken::Clock::time_point> CancellationToken::deadline() const noexcept {
  return state_->deadline;
}

std::stop_token CancellationToken::stop_token() const noexcept { return state_->source.get_token(); }

CancellationToken CancellationToken::child(std::optional<Clock::time_point> deadline) const {
  auto state = std::make_shared<State>();
  state->deadline = state_->deadline;
  if (deadline && (!state->deadline || *deadline < *state->deadline)) state->deadline = deadline;
  // Registered after the child's own state exists; a parent already
  // cancelled stops the child here, on this thread.
  state->link.emplace(state_->source.get_token(), State::Forward{state->source});
  return CancellationToken(std::move(state));
}

void CancellationToken::sleep_for(Clock::duration duration, std::stop_token wake) const {
  auto until = Clock::now() + duration;
  if (state_->deadline) until = std::min(until, *state_->deadline);
  std::mutex mutex;
  std::condition_variable_any cv;
  bool woken = false;
  // Runs here at once when `wake` is already stopped; its destructor (after
  // `lock` releases the mutex) waits for a callback in flight.
  const std::stop_callback on_wake(wake, [&] {
    {
      std::lock_guard guard(mutex);
      woken = true;
    }
    cv.notify_all();
  });
  std::unique_lock lock(mutex);
  cv.wait_until(lock, stop_token(), until, [&] { return woken; });
}

bool EventQueue::push(Event e) {
  std::lock_guard lock(mutex_);
  if (closed_) return false;
  auto& time = info_of(e).time;
  if (time == std::chrono::system_clock::time_point{}) time = std::max(std::chrono::system_clock::now(), last_);
  last_ = std::max(last_, time);
  events_.push_back(std::move(e));
  pending_.store(true, std::memory_order_release);
  return true;
}

void EventQueue::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
}

std::vector<Event> EventQueue::drain() {
  // A push not yet seen here is taken by the next drain (the run's last one
  // follows every push of its work).
  if (!pending_.load(std::memory_order_acquire)) return {};
  std::lock_guard lock(mutex_);
  pending_.store(false, std::memory_order_relaxed);
  return std::exchange(events_, {});
}

RunContext RunContext::child() const {
  if (depth + 1 > max_depth) {
    throw DepthLimitExceeded("depth limit " + std::to_string(max_depth) + " reached: a sub-run at depth " +
                             std::to_string(depth + 1) + " was refused");
  }
  RunContext c = *this;
  c.depth = depth + 1;
  c.parent_span_id = span_id;
  c.span_id = trace::new_span_id();
  return c;
}

void RunContext::emit(Event event) const {
  if (!observed()) return;
  EventInfo& info = info_of(event);
  if (!info.source) info.source = event_source();
  if (events) {
    if (!events->push(std::move(event))) {
      detail::logger_or_null(logger)->debug("run '{}' ({}): an event was dropped: the run it reports to has ended",
                                            correlation_id, agent_path);
    }
  } else if (observer) {
    if (info.time == std::chrono::system_clock::time_point{}) info.time = std::chrono::system_clock::now();
    observer->on_event(event);
  }
}

std::shared_ptr<const EventSource> RunContext::event_source() const {
  if (source_ && source_->run_id == correlation_id && source_->agent_path == agent_path &&
      source_->span_id == span_id && source_->parent_span_id == parent_span_id) {
    return source_;
  }
  if (correlation_id.empty() && agent_path.empty() && span_id.empty() && parent_span_id.empty()) return nullptr;
  return std::make_shared<const EventSource>(EventSource{correlation_id, agent_path, span_id, parent_span_id});
}

void RunContext::refresh_event_source() {
  source_.reset();
  source_ = event_source();
}

std::string RunContext::new_id(std::string_view prefix) {
  // Random salt + counter: unique, cheap, no shared mutable state beyond two
  // atomics.
  static std::atomic<std::uint64_t> counter{0};
  char buf[48];
  buf[0] = '_';
  char* end = std::to_chars(buf + 1, buf + sizeof buf, detail::process_salt(), 16).ptr;
  *end++ = '_';
  end = std::to_chars(end, buf + sizeof buf, counter.fetch_add(1, std::memory_order_relaxed), 16).ptr;
  std::string id;
  id.reserve(prefix.size() + static_cast<std::size_t>(end - buf));  // one allocation
  id.append(prefix).append(buf, end);
  return id;
}

bool RunContext::continue_trace(std::string_view traceparent) {
  auto parent = trace::parse_traceparent(traceparent);
  if (!parent) return false;
  trace_id = parent->trace_id;
  parent_span_id = parent->span_id;
  return true;
}

std::string RunContext::traceparent() const {
  const trace::SpanId& span = call_span_id.empty() ? span_id : call_span_id;
  if (trace_id.empty() || span.empty()) return {};
  return trace::format_traceparent(trace_id, span);
}

Autonomy RunContext::gate_tier() const noexcept {
  // Autonomy's enumerators run from strictest (manual) to most permissive.
  if (!entry_tier_) return Autonomy::manual;
  return std::min(*entry_tier_, autonomy);
}

}  // namespace agentkit
