#include <agentkit/cognition/engine.h>

#include <agentkit/detail/logging.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <deque>
#include <mutex>
#include <span>
#include <thread>

#include <spdlog/spdlog.h>

#include <agentkit/errors.h>
#include <agentkit/executor.h>
#include <agentkit/guardrail.h>
#include <agentkit/inject.h>
#include <agentkit/invoker.h>
#include <agentkit/session.h>

#include "checkpoint_writer.h"
#include "run_tracer.h"
#include "sub_run.h"

namespace agentkit::cognition {
namespace {

// Why a tool's parts cannot enter the run (malformed, or over the per-part
// cap), or nullopt. Checked here, so a camera that returns a 50 MB frame
// costs the model one error message, never a failed run.
std::optional<std::string> parts_problem(const ToolResult& result, const ContentLimits& limits) {
  for (const auto& part : result.parts) {
    try {
      check_part(part, limits);
    } catch (const Error& e) {  // InvalidContent, ContentTooLarge
      return std::string(e.what());
    }
  }
  return std::nullopt;
}

// Whether a tool guardrail checks calls to `tool` (no patterns: every tool).
bool applies(const ToolGuardrail& guardrail, std::string_view tool) {
  return guardrail.tools.empty() || matches_any(guardrail.tools, tool);
}

// Completion signal for work running on the executor. The work holds it
// (shared), so it outlives a driver that stopped waiting.
struct Pending {
  std::mutex mutex;
  std::condition_variable_any cv;
  int outstanding = 0;
  std::function<void()> when_idle;  // run by the last work to finish, once

  void add(int n) {
    std::lock_guard lock(mutex);
    outstanding += n;
  }
  void finish_one() {
    std::function<void()> last;
    {
      std::lock_guard lock(mutex);
      if (--outstanding == 0) last = std::exchange(when_idle, nullptr);
    }
    cv.notify_all();
    if (last) last();
  }
  bool idle() {
    std::lock_guard lock(mutex);
    return outstanding == 0;
  }
  // Blocks until the work is done or `cancel` is cancelled (or past its
  // deadline), or `max` has passed, whichever comes first.
  void wait_idle(const CancellationToken& cancel, std::optional<std::chrono::milliseconds> max) {
    std::unique_lock lock(mutex);
    const auto idle = [&] { return outstanding == 0; };
    std::optional<CancellationToken::Clock::time_point> deadline = cancel.deadline();
    if (max) {
      const auto until = CancellationToken::Clock::now() + *max;
      if (!deadline || until < *deadline) deadline = until;
    }
    if (deadline) {
      cv.wait_until(lock, cancel.stop_token(), *deadline, idle);
    } else {
      cv.wait(lock, cancel.stop_token(), idle);
    }
  }
  // Runs `action` now when nothing is outstanding, otherwise when the last
  // work finishes (on its thread).
  void then(std::function<void()> action) {
    {
      std::lock_guard lock(mutex);
      if (outstanding != 0) {
        when_idle = std::move(action);
        return;
      }
    }
    action();
  }
};

struct ModelSlot {
  // Owned copies for calls that may outlive the engine on a worker thread
  // (the history is shared with the engine's next calls: see model_history()).
  std::shared_ptr<const std::vector<Message>> messages;
  std::vector<const ToolSpec*> tools;
  std::shared_ptr<const std::vector<ToolSpec>> described;  // specs with this turn's descriptions, when any
  std::shared_ptr<const std::vector<ToolSpec>> transfers;  // the handoff tools `tools` may point into
  std::optional<std::string> system;  // this call's prompt, when not the agent's fixed one
  ModelResponse response;
  std::exception_ptr error;
  // Set for the context policy's summary call: the window it moves to.
  struct Compaction {
    std::size_t from = 0, to = 0;  // history[from, to) is summarised
    std::size_t tokens_before = 0;
    std::string model;  // the summarizer's model name
  };
  std::optional<Compaction> compaction;
};

// What a run under a context policy keeps to size its window cheaply: the
// per-message estimates, brought up to date as the history grows.
struct WindowCache {
  std::vector<std::size_t> sums{0};  // sums[i]: estimated tokens of history[0, i) the model is shown
  std::vector<bool> pinned;          // per message: ContextPolicy::pinned holds
  bool any_pinned = false;
  std::vector<bool> hidden;  // per message before a handoff: its keep filter hides the message's group
  bool screened = false;     // `hidden` is set
  std::shared_ptr<Model> summarizer;  // resolved once, for ContextPolicy::summary_model
};

// One guardrail check as it ran; reported (its event and span) on the run's
// thread.
struct GuardRecord {
  std::string name;
  const char* stage;
  std::string call_id;
  GuardrailVerdict verdict;  // as the guardrail gave it; a throw is a trip with the exception's message
  std::chrono::system_clock::time_point start, end;
};

// One stage of guardrail checks (the task's, the answer's, a batch's before
// or after checks). Its work runs on the executor when the run has a pool,
// so poll() never waits for a guardrail (one that runs an agent takes a
// model call), else inline; it owns copies of what it checks, never the
// engine. The run's thread reads the records and results back.
struct GuardJob {
  enum class Stage { input, output, before, after };
  Stage stage = Stage::input;
  std::vector<GuardRecord> log;
  std::optional<std::string> tripped;           // the run's failure message for the first tripwire
  std::map<std::size_t, CallOutcome> outcomes;  // tool stages: what answers a call instead, by batch index

  // Runs one check and logs it. A throw is a tripwire (fail closed), and so
  // is a repair where only tool guardrails may repair. A tripwire's message
  // comes back as the run's failure message, naming the guardrail.
  template <class Check>
  GuardrailVerdict check(const std::string& name, const char* where, const std::string& call_id, bool may_repair,
                         Check&& run) {
    GuardRecord record{name, where, call_id, {}, std::chrono::system_clock::now(), {}};
    std::string stop;
    try {
      record.verdict = run();
      stop = "guardrail '" + name + "' tripped: " + record.verdict.message;
    } catch (...) {
      record.verdict = GuardrailVerdict::trip(failure_of(std::current_exception()).message);
      stop = "guardrail '" + name + "' failed: " + record.verdict.message;
    }
    if (record.verdict.kind == GuardrailVerdict::Kind::repair && !may_repair) {
      record.verdict.kind = GuardrailVerdict::Kind::trip;
    }
    record.end = std::chrono::system_clock::now();
    GuardrailVerdict verdict = record.verdict;
    if (verdict.kind == GuardrailVerdict::Kind::trip) tripped = verdict.message = std::move(stop);
    log.push_back(std::move(record));
    return verdict;
  }
};

// One call of the batch in flight. The engine tells a call that never
// started (it may say "not run") from one that started (it may have taken
// effect) and from one that finished (its result is the record).
struct CallSlot {
  enum Stage : int { not_started, started, finished, skipped };

  // Made from the run's context, copied in place without its executor, and
  // the call's arguments (a default RunContext would allocate a budget and a
  // token, a default request an empty object, only to be overwritten).
  // Moved only while the engine builds the batch, before any worker can see
  // the slot.
  CallSlot(const RunContext& run, Json&& arguments) : request{.arguments = std::move(arguments)}, ctx(run) {
    ctx.executor = nullptr;
  }
  CallSlot(CallSlot&& other) noexcept
      : request(std::move(other.request)),
        ctx(std::move(other.ctx)),
        result(std::move(other.result)),
        span_id(other.span_id),
        started_at(other.started_at),
        ended_at(other.ended_at),
        stage(other.stage.load(std::memory_order_relaxed)) {}

  // Its arguments are the batch's own, moved here while the call is in
  // flight and handed back by return_arguments() (no copy per call).
  ToolRequest request;
  RunContext ctx;  // the call's own: its token is a child of the run's
  ToolResult result;
  trace::SpanId span_id;  // its execute_tool span when traced
  // When the tool body started and returned (written before `finished`).
  std::chrono::system_clock::time_point started_at{}, ended_at{};
  std::atomic<int> stage{not_started};  // result is written before `finished`

  // The one place a call starts: never once it was skipped or cancelled.
  bool begin() {
    int expected = not_started;
    if (ctx.cancelled()) {
      stage.compare_exchange_strong(expected, skipped);
      return false;
    }
    return stage.compare_exchange_strong(expected, started);
  }
  // The stage as the engine settles it: a call not yet started never will.
  Stage settle() {
    int expected = not_started;
    if (stage.compare_exchange_strong(expected, skipped)) return skipped;
    return static_cast<Stage>(expected);
  }
};

// The run engine: one per run. It keeps its own copy of the agent, and
// through it the strategy and its tools, so the host may drop the Agent (and
// the handle) while work is in flight: the work shares the copy
// (agent_owner_). It is the only ApprovalIssuer a run has.
class Engine final : public RunHandle::Driver, private ApprovalIssuer {
 public:
  Engine(const Agent& agent, RunState state, Decisions decisions, RunContext ctx,
         std::unique_ptr<Checkpoint> checkpoint)
      : agent_owner_(std::make_shared<const Agent>(agent)),
        agent_(agent_owner_.get()),
        strategy_(static_cast<const Strategy*>(&agent_->cognition())),
        st_(std::move(state)),
        ctx_(std::move(ctx)),
        checkpoint_(std::move(checkpoint)) {
    if (st_.run_id.empty()) st_.run_id = RunContext::new_id("run");
    st_.agent = agent_->name();
    if (st_.handoff.happened()) find_active();
    // The run's own token: cancel() stops this run, not the host's context.
    ctx_.cancellation = ctx_.cancellation.child();
    ctx_.correlation_id = st_.run_id;
    ctx_.resuming = nullptr;  // the call that started this run's, if any: never this run's calls'
    if (ctx_.span_id.empty()) ctx_.span_id = trace::new_span_id();
    base_path_ = ctx_.agent_path;
    ctx_.agent_path = base_path_.empty() ? agent_->name() : base_path_ + "/" + agent_->name();
    // A sub-run (its context carries the queue of the run that started it)
    // queues its events there, stamped as its own: the parent's host drains
    // them on its thread, and this run's own queue stays empty.
    if (!ctx_.events) ctx_.events = events_;
    parent_usage_ = std::exchange(ctx_.usage, std::make_shared<UsageMeter>());
    ctx_.usage->add(st_.usage);  // a resumed run keeps what its earlier steps used
    if (!ctx_.invoker) ctx_.invoker = std::make_shared<const Invoker>(default_middleware());
    if (ctx_.dependencies) ctx_.dependencies = ctx_.dependencies->for_run();
    adopt();
    tracer_.start(ctx_, st_, *agent_, model_.get(), checkpoint_ != nullptr);  // before the first save: the state records the trace
    ctx_.refresh_event_source();
    if (st_.phase == Phase::suspended) apply_decisions(decisions);
    claim();
  }

  // What the run takes from the agent it is under (the one it started with,
  // or the one it handed off to): its tools and transfer tools, its model
  // (checked against them), its model settings.
  void adopt() {
    if (auto missing = missing_dependency(); missing && !unready_) {
      unready_ = std::make_unique<Failure>(Failure{.code = ErrorCode::invalid_argument, .message = std::move(*missing)});
    }
    specs_ = strategy_->tools().schemas();
    transfers_.reset();
    if (!agent_->options().handoffs.empty()) {
      auto transfers = std::make_shared<std::vector<ToolSpec>>();
      transfers->reserve(agent_->options().handoffs.size());  // stable addresses for specs_
      for (const Handoff& h : agent_->options().handoffs) {
        ToolSpec& spec = transfers->emplace_back();
        spec.name = handoff_tool_name(h.agent->name());
        spec.description = h.description.empty() ? "Hand the conversation to " + h.agent->name() + "." : h.description;
        spec.parameters = Schema{{"type", "object"}, {"properties", Schema::object()}, {"additionalProperties", false}};
      }
      for (const ToolSpec& spec : *transfers) specs_.push_back(&spec);
      std::sort(specs_.begin(), specs_.end(), [](const ToolSpec* a, const ToolSpec* b) { return a->name < b->name; });
      transfers_ = std::move(transfers);
    }
    turn_.reset();
    for (const ToolSpec* spec : specs_) {
      if (spec->available || spec->describe) {
        turn_ = std::make_unique<TurnTools>();
        turn_->offered = specs_;
        break;
      }
    }
    model_.reset();
    model_error_.reset();
    if (ctx_.models) {
      try {
        model_ = ctx_.models(agent_->model());
        // A tool the provider cannot take fails the run here, before any
        // call: never a 400 mid-run, never a weakened schema.
        if (model_) model_->check_schemas(specs_, agent_->options().output ? &agent_->options().output->schema : nullptr);
      } catch (...) {
        model_error_ = failure_of(std::current_exception());
        model_.reset();
      }
    }
    settings_ = std::make_shared<const ModelSettings>(
        agent_->options().model_settings.merged(st_.model_settings.value_or(ModelSettings{})));
    window_.reset();  // the estimates are the policy's, and the policy is the agent's
  }

  // A resumed or recovered run that handed off: its active agent (and the
  // handoff that led there), found by name through the starting agent's
  // graph. A name not there fails the run at its first step.
  void find_active() {
    const Agent* active = agent_owner_->find_agent(st_.handoff.agent);
    const Agent* from = agent_owner_->find_agent(st_.handoff.from);
    const Handoff* arrival = nullptr;
    if (from && active) {
      for (const Handoff& h : from->options().handoffs) {
        if (h.agent.get() == active) arrival = &h;
      }
    }
    const auto* strategy = active ? dynamic_cast<const Strategy*>(&active->cognition()) : nullptr;
    if (!arrival || !strategy) {
      unready_ = std::make_unique<Failure>(Failure{
          .code = ErrorCode::not_found,
          .message = "the run handed off to agent '" + st_.handoff.agent + "' (from '" + st_.handoff.from +
                     "'), which is not a handoff in the handoff graph of agent '" + agent_->name() + "'"});
      return;
    }
    agent_ = active;
    strategy_ = strategy;
    arrival_ = arrival;
  }

  // The handoff of the active agent that `tool` calls, or null.
  const Handoff* handoff_for(std::string_view tool) const {
    for (const Handoff& h : agent_->options().handoffs) {
      if (tool == handoff_tool_name(h.agent->name())) return &h;
    }
    return nullptr;
  }

  // The run continues under the handoff's target (see Handoff).
  void hand_off(const Handoff& handoff, const std::string& call_id) {
    const Agent& target = *handoff.agent;
    const auto* strategy = dynamic_cast<const Strategy*>(&target.cognition());
    if (!strategy) {
      cause_ = Failure{.code = ErrorCode::invalid_argument};
      return finish(StopReason::failed, "handoff to agent '" + target.name() +
                                            "': its cognition is not a cognition::Strategy the run engine can drive");
    }
    st_.handoff.from = agent_->name();
    st_.handoff.agent = target.name();
    st_.handoff.at = st_.history.size();
    ++st_.handoff.handoffs;
    HandoffOccurred event{st_.handoff.from, st_.handoff.agent, call_id, st_.handoff.at, {}};
    tracer_.handoff(event);
    ctx_.emit(std::move(event));
    agent_ = &target;
    strategy_ = strategy;
    arrival_ = &handoff;
    ctx_.agent_path = base_path_.empty() ? target.name() : base_path_ + "/" + target.name();
    ctx_.refresh_event_source();
    adopt();
  }

  ~Engine() override {
    // Work on the executor holds its own shared state; nothing to join. A
    // handle dropped mid-run cancels it, so cooperative work ends soon; late
    // results are dropped (a durable run's ledger still records them).
    if (!done_) {
      ctx_.cancellation.cancel();
      if (!ending_) tracer_.run_abandoned();
    }
    events_->close();  // late events of its sub-runs have no one to reach
  }

  bool poll() override {
    if (done_) return true;
    if (!ending_) step();
    if (ending_ && !writer_->behind(end_seq_)) complete_end();
    return done_;
  }

  void wait() override {
    if (done_) {
      if (writer_) writer_->wait_idle(std::nullopt);  // the end is in the store once wait() returns
    } else {
      wait_ready(std::nullopt);
    }
  }

  void wait_ready(std::chrono::milliseconds max) override {
    if (!done_) wait_ready(std::optional(max));
  }

  bool done() const override { return done_; }
  const RunResult& result() const override { return result_; }
  RunResult take_result() override { return std::move(result_); }
  std::vector<Event> drain_events() override { return events_->drain(); }
  void drop_events() override {
    if (ctx_.events != events_) return;  // a sub-run's events go to its parent's queue
    ctx_.events = nullptr;
    ctx_.observer = nullptr;  // which emit() would otherwise call from any thread
    events_->drain();
  }
  void cancel() override {
    ctx_.cancellation.cancel();
    if (in_flight_) in_flight_->cancel();
  }

 private:
  // A checkpoint was refused: the run stops where the store last has it.
  bool stopped_for_refusal() {
    auto failure = writer_ ? writer_->failure() : std::nullopt;
    if (!failure) return false;
    writer_.reset();
    checkpoint_.reset();  // nothing more is written by this engine
    cause_ = Failure{.code = failure->code};
    finish(StopReason::failed, failure->problem);
    return true;
  }

  void step() {
    if (stopped_for_refusal()) return;
    if (ctx_.cancelled()) return finish(StopReason::cancelled, "the run was cancelled");
    if (unready_ && (st_.phase == Phase::ask_model || st_.phase == Phase::act)) {
      auto unready = std::exchange(unready_, nullptr);
      cause_ = Failure{.code = unready->code};
      return finish(StopReason::failed, std::move(unready->message));
    }
    if (guard_) return busy() ? void() : guarded();
    switch (st_.phase) {
      case Phase::ask_model:
        return model_slot_ ? collect_model() : ask_model();
      case Phase::act:
        return calls_ ? collect_calls() : start_batch();
      case Phase::suspended:
        return finish(StopReason::suspended, {});
      case Phase::done:
        // A finished run comes back as it ended.
        cause_ = st_.failure;
        return finish(st_.stop_reason, st_.failure ? st_.failure->message : std::string());
    }
  }

  bool busy() const { return pending_ && !pending_->idle(); }

  // Blocks until poll() may make progress, or up to `max`. Unbounded, it
  // still returns every 10 ms while a reply or a save is awaited (their
  // waits are bounded); work on the executor is waited for until it is done
  // or the run is cancelled.
  void wait_ready(std::optional<std::chrono::milliseconds> max) {
    const auto slice = max ? *max : std::chrono::milliseconds(10);
    if (ending_) {
      writer_->wait_idle(slice);
    } else if (in_flight_) {
      in_flight_->wait(slice);
    } else if (busy()) {
      pending_->wait_idle(ctx_.cancellation, max);
    } else if (writer_ && !writer_->idle()) {
      writer_->wait_idle(slice);
    }
  }
  StepContext step_context() const { return {*agent_, ctx_}; }

  // Takes the strategy's step. ask: the run asks the model next; the others
  // move the run on at once.
  void apply(Next next) {
    switch (next.kind) {
      case Next::Kind::ask:
        st_.phase = Phase::ask_model;
        return;
      case Next::Kind::run_calls:
        return admit_calls(std::move(next.message));
      case Next::Kind::answer:
        next.message.role = Role::assistant;
        if (!agent_->options().output_guardrails.empty()) {
          auto work = [answer = next.message, agent = agent_, owner = agent_owner_,
                       ctx = worker_context()](GuardJob& job) {
            for (const OutputGuardrail& g : agent->options().output_guardrails) {
              const GuardrailVerdict v = job.check(g.name, "output", {}, false, [&] { return g.check(answer, ctx); });
              if (v.kind != GuardrailVerdict::Kind::pass) return;
            }
          };
          return guard(GuardJob::Stage::output, std::move(work), std::make_unique<Next>(std::move(next)));
        }
        return answer(std::move(next));
      case Next::Kind::stop:
        if (next.reason == StopReason::failed) cause_ = Failure{.code = next.code};
        return finish(next.reason, std::move(next.why));
    }
  }

  void answer(Next next) {
    st_.output = next.message.text();
    structured_ = std::move(next.structured);
    st_.history.push_back(std::move(next.message));
    finish(StopReason::answered, {});
  }

  // ------------------------------------------------------------ guardrails

  // Starts a stage of guardrail checks: `work` runs inline without a pool
  // executor (reported at once), else on the pool (reported by the poll()
  // that finds it done). `answer`: the output stage's answer, held until
  // its checks pass.
  void guard(GuardJob::Stage stage, std::function<void(GuardJob&)> work, std::unique_ptr<Next> answer = nullptr) {
    guard_ = std::make_shared<GuardJob>();
    guard_->stage = stage;
    answer_ = std::move(answer);
    auto executor = ctx_.executor;
    if (!executor || executor->inline_execution()) {
      work(*guard_);
      return guarded();
    }
    pending_ = std::make_shared<Pending>();
    pending_->add(1);
    executor->submit([job = guard_, work = std::move(work), pending = pending_] {
      work(*job);
      pending->finish_one();
    });
  }

  bool before_guardrails() const {
    const auto& all = agent_->options().tool_guardrails;
    return std::any_of(all.begin(), all.end(), [](const ToolGuardrail& g) { return static_cast<bool>(g.before); });
  }
  bool after_guardrails() const {
    const auto& all = agent_->options().tool_guardrails;
    return std::any_of(all.begin(), all.end(), [](const ToolGuardrail& g) { return static_cast<bool>(g.after); });
  }

  // A stage's checks are done: each is an event and a span, in order; a
  // tripwire stops the run, repairs answer their calls, and the run goes on
  // from where the stage began.
  void guarded() {
    auto job = std::exchange(guard_, nullptr);
    for (GuardRecord& record : job->log) {
      static constexpr const char* kVerdicts[] = {"pass", "trip", "repair"};
      GuardrailChecked event{record.name, record.stage, kVerdicts[static_cast<int>(record.verdict.kind)],
                             std::move(record.verdict.message), record.call_id, {}};
      tracer_.guardrail_checked(event, record.start, record.end);
      ctx_.emit(std::move(event));
    }
    for (auto& [i, outcome] : job->outcomes) st_.outcomes[i] = std::move(outcome);
    auto held = std::exchange(answer_, nullptr);
    if (job->tripped) return finish(StopReason::guardrail_tripped, std::move(*job->tripped));
    switch (job->stage) {
      case GuardJob::Stage::input: return ask_model();
      case GuardJob::Stage::output:
        answer(std::move(*held));
        return;
      case GuardJob::Stage::before:
        before_checked_ = true;
        return start_batch();
      case GuardJob::Stage::after: return calls_checked();
    }
  }

  // ------------------------------------------------------------ durability

  // The first save: it claims the run, so a second resume or recovery of the
  // same checkpoint fails here, before anything runs.
  // The first save, on the caller's thread: it claims the run, so a second
  // resume or recovery of the same checkpoint fails here, before anything
  // runs. Every later save goes to the writer.
  void claim() {
    if (!checkpoint_) return;
    if (!checkpoint_->save(st_)) {
      if (checkpoint_->version() == 0) throw RunError("a run with id '" + st_.run_id + "' already exists in the store");
      throw RunAlreadyResumed("run '" + st_.run_id + "' was resumed or recovered by another caller first");
    }
    writer_ = std::make_unique<CheckpointWriter>(checkpoint_, st_.history, ctx_.store);
    sent_ = st_.history.size();
  }

  // The state for the writer: everything but the history, and the messages
  // appended since the last save.
  std::unique_ptr<CheckpointWriter::Save> snapshot() {
    auto save = std::make_unique<CheckpointWriter::Save>();
    std::vector<Message> history = std::move(st_.history);
    save->state = st_;
    st_.history = std::move(history);
    if (st_.history.size() < sent_) sent_ = 0;  // never shrinks; if it did, it is sent whole
    save->from = sent_;
    save->appended.assign(st_.history.begin() + static_cast<std::ptrdiff_t>(sent_), st_.history.end());
    sent_ = st_.history.size();
    save->spans = tracer_.take_stored();
    return save;
  }

  // Queues a save of the state at a step boundary; poll() never waits for
  // it. A save the store refuses stops the run at the next poll().
  // Nothing once the run is ending: its end save is queued, and the state
  // has moved to the result.
  void checkpoint() {
    if (writer_ && !ending_) writer_->save(snapshot());
  }

  // The final save, the cleanup and the session update of a run that is
  // over (or suspended), queued on the writer; the run is done once they
  // are written. A run that lost its checkpoint to another process leaves
  // all three to that process. Failures are logged: the result stands.
  void persist_end(const std::shared_ptr<Pending>& abandoned) {
    if (!writer_) return;
    const bool over = st_.phase == Phase::done;
    end_seq_ = writer_->save(
        snapshot(), [checkpoint = checkpoint_, abandoned, over, store = ctx_.store, scope = ctx_.scope,
                     agent = agent_owner_, logger = ctx_.logger](const std::optional<std::string>& problem,
                                                                 const RunState& state) {
          if (problem) {
            agentkit::detail::logger_or_null(logger)
                ->error("run '{}': saving its end state failed: {}", state.run_id, *problem);
          }
          if (problem || !over) return;
          try {
            if (abandoned) {
              abandoned->then([checkpoint, run_id = state.run_id, logger] {
                try {
                  checkpoint->tidy();
                } catch (const std::exception& e) {
                  agentkit::detail::logger_or_null(logger)
                      ->error("run '{}': tidying its store after its last call ended failed: {}", run_id, e.what());
                }
              });
            } else {
              checkpoint->tidy();
            }
            if (!state.session.empty() && store) {
              append_to_session(*store, scope, state, agent->options().history_policy);
            }
          } catch (const std::exception& e) {
            agentkit::detail::logger_or_null(logger)
                ->error("run '{}': saving its end state failed: {}", state.run_id, e.what());
          }
        });
  }

  // The run is over and its end is written (or it is not durable).
  void complete_end() {
    if (writer_) {
      if (auto failure = writer_->failure(); failure && failure->seq < end_seq_) {
        // A checkpoint before the end was refused: the store never saw the
        // run get this far, so the run did not succeed.
        result_.stop_reason = result_.state.stop_reason = StopReason::failed;
        result_.failure = result_.state.failure = Failure{.code = failure->code, .message = failure->problem};
        result_.suspended.reset();
        if (result_.state.phase == Phase::suspended) result_.state.phase = Phase::done;
      }
    }
    ctx_.emit(RunFinished{result_.stop_reason, result_.output});
    done_ = true;
  }

  // The context handed to work on the executor. It does not own the
  // executor: work must never hold the last reference to the pool running it
  // (its destructor would join its own thread). Sub-runs started from a
  // worker run inline on that worker.
  RunContext worker_context() const {
    RunContext ctx = ctx_;
    ctx.executor = nullptr;
    return ctx;
  }

  // ------------------------------------------------------------ model

  void ask_model() {
    if (auto why = ctx_.budget->exhausted()) return finish(StopReason::budget_exhausted, *why);
    if (st_.iterations >= agent_->options().max_iterations) {
      return finish(StopReason::max_iterations,
                    "max_iterations (" + std::to_string(agent_->options().max_iterations) + ") reached");
    }
    if (st_.iterations == 0 && !input_checked_) {
      input_checked_ = true;
      if (!agent_->options().input_guardrails.empty()) {
        return guard(GuardJob::Stage::input,
                     [task = st_.task, agent = agent_, owner = agent_owner_, ctx = worker_context()](GuardJob& job) {
                       for (const InputGuardrail& g : agent->options().input_guardrails) {
                         const GuardrailVerdict v = job.check(g.name, "input", {}, false, [&] { return g.check(task, ctx); });
                         if (v.kind != GuardrailVerdict::Kind::pass) return;
                       }
                     });
      }
    }
    if (st_.history.empty()) st_.history.push_back(Message::user(st_.task));
    if (const auto& policy = agent_->options().context_policy) {
      // Before the strategy decides: a summary call ends this step, and the
      // next one decides with the new window.
      if (compact(*policy) || done_ || ending_) return;
    }
    Next next = strategy_->next_call(step_context(), st_);
    if (next.kind != Next::Kind::ask) {
      apply(std::move(next));
      if (!done_) checkpoint();
      return;
    }
    // Checked only now: a strategy that never asks a model (a workflow
    // routed by the host) needs none.
    if (!model_) {
      cause_ = model_error_.value_or(Failure{.code = ErrorCode::not_found});
      return finish(StopReason::failed, model_error_ ? model_error_->message
                                                     : "no model for '" + agent_->model() +
                                                           "': the context has no model resolver or it "
                                                           "returned null");
    }
    std::optional<std::string> prompt = std::move(next.call.system);
    if (!prompt && agent_->options().instructions) {
      try {
        prompt = agent_->options().instructions(ctx_);
      } catch (...) {
        cause_ = failure_of(std::current_exception());
        return finish(StopReason::failed, "the agent's instructions failed: " + cause_->message);
      }
    }
    ctx_.budget->charge_model_step();
    ctx_.emit(ModelCallStarted{st_.iterations + 1});
    model_slot_ = std::make_shared<ModelSlot>();
    const Schema* output_schema =
        agent_->options().output && next.call.output_schema ? &agent_->options().output->schema : nullptr;
    if (next.call.tools && turn_) offer_tools();
    const std::span<const ToolSpec* const> tools =
        next.call.tools ? offered_tools() : std::span<const ToolSpec* const>();
    if (turn_) model_slot_->described = turn_->described;
    model_slot_->transfers = transfers_;
    model_slot_->system = std::move(prompt);
    if (st_.window.compacted() || filtered()) {
      try {
        model_slot_->messages = window_view();
      } catch (...) {
        model_slot_.reset();
        cause_ = failure_of(std::current_exception());
        return finish(StopReason::failed, "the handoff's keep filter failed: " + cause_->message);
      }
    }
    const std::string_view system = model_slot_->system ? std::string_view(*model_slot_->system) : agent_->prompt();
    ModelRequest request{agent_->model(), system,
                         model_slot_->messages ? std::span<const Message>(*model_slot_->messages)
                                               : std::span<const Message>(st_.history),
                         tools, output_schema, settings_.get()};
    launch(model_, request, settings_);
  }

  // Starts the call in model_slot_: advanced from poll() when the model has
  // a non-blocking call, else made inline (an inline executor, or none) or
  // on the executor. `request` views the slot, the run's history or the
  // agent copy; on the executor the work rebuilds it from the slot and the
  // agent copy, and `settings` (what request.settings points to) rides along.
  void launch(const std::shared_ptr<Model>& model, ModelRequest& request,
              std::shared_ptr<const ModelSettings> settings) {
    request.traceparent = tracer_.model_started(request);
    try {
      if ((in_flight_ = model->begin(request, ctx_))) return;
    } catch (...) {
      model_slot_->error = std::current_exception();
      return;
    }
    auto executor = ctx_.executor;
    if (!executor || executor->inline_execution()) {
      // Same thread: the request views the run's own history, no copies.
      try {
        model_slot_->response = model->complete(request, ctx_);
      } catch (...) {
        model_slot_->error = std::current_exception();
      }
      return;
    }
    if (!model_slot_->messages) model_slot_->messages = model_history();
    model_slot_->tools.assign(request.tools.begin(), request.tools.end());
    pending_ = std::make_shared<Pending>();
    pending_->add(1);
    // The work shares the slot (its messages, tools and prompt) and the agent
    // copy (the model's name, the prompt, the output schema), never the engine.
    executor->submit([slot = model_slot_, pending = pending_, model, ctx = worker_context(), owner = agent_owner_,
                      agent = agent_, name = request.model, output_schema = request.output_schema, settings = std::move(settings),
                      traceparent = std::string(request.traceparent)]() mutable {
      const std::string_view system = slot->system ? std::string_view(*slot->system) : agent->prompt();
      ModelRequest request{name, system, *slot->messages, slot->tools, output_schema, settings.get()};
      request.traceparent = traceparent;
      try {
        slot->response = model->complete(request, ctx);
      } catch (...) {
        slot->error = std::current_exception();
      }
      pending->finish_one();
    });
  }

  // The history for a model call on the executor: the engine's copy, brought
  // up to date by appending what was added since the last call (the history
  // is append-only), so a step does not copy the whole history. Only called
  // once the last call's work is done (nothing reads the copy meanwhile); a
  // call still running when the run ended keeps its copy, and the engine
  // makes no more.
  std::shared_ptr<const std::vector<Message>> model_history() {
    if (!model_history_ || model_history_->size() > st_.history.size()) {
      model_history_ = std::make_shared<std::vector<Message>>(st_.history);
    } else {
      model_history_->insert(model_history_->end(),
                             st_.history.begin() + static_cast<std::ptrdiff_t>(model_history_->size()),
                             st_.history.end());
    }
    return model_history_;
  }

  void collect_model() {
    if (in_flight_) {
      if (!in_flight_->poll()) return;
      try {
        model_slot_->response = in_flight_->take();
      } catch (...) {
        model_slot_->error = std::current_exception();
      }
      in_flight_.reset();
    }
    if (busy()) return;
    auto slot = std::exchange(model_slot_, nullptr);
    if (slot->compaction) return summarized(*slot);
    if (slot->error) return model_call_failed(*slot, agent_->model(), "model call failed: ");
    ModelResponse& response = slot->response;
    ++st_.iterations;
    const double cost_before = st_.cost_usd;
    charge(response.usage);
    ctx_.emit(ModelCallFinished{st_.iterations, response.usage, response.finish_reason});
    tracer_.model_finished(response, agent_->options().pricing ? std::optional(st_.cost_usd - cost_before) : std::nullopt);
    // Text enters the run's state here and in collect_calls(), made valid UTF-8 once.
    Message message = sanitize_utf8(std::move(response.message));
    message.role = Role::assistant;
    if (response.finish_reason == "length" && message.tool_calls.empty()) {
      // Text cut at the output limit is no answer (cut calls are repaired):
      // the run fails, the partial text kept as its output.
      st_.history.push_back(std::move(message));
      cause_ = Failure{.code = ErrorCode::truncated, .model = agent_->model()};
      return finish(StopReason::failed,
                    "the model's reply was cut at its output token limit (finish reason length); its text is the "
                    "run's output, unfinished: raise ModelSettings::max_output_tokens");
    }
    apply(strategy_->on_reply(step_context(), st_, std::move(message)));
    if (!done_) checkpoint();
  }

  // A model call that threw (the agent's, or the context policy's summary
  // call): the run fails with its cause, naming `model`, and `what` before
  // the cause's message.
  void model_call_failed(const ModelSlot& slot, const std::string& model, std::string_view what) {
    cause_ = failure_of(slot.error);
    cause_->model = model;
    Usage spent;
    try {
      std::rethrow_exception(slot.error);
    } catch (const ModelError& e) {
      spent = e.usage();
      charge(spent);  // a failed call may still have spent tokens (a stream cut short)
    } catch (...) {
    }
    tracer_.model_failed(*cause_, spent);
    finish(StopReason::failed, std::string(what) + cause_->message);
  }

  // One model call's usage, charged to the run, its meter and its budget.
  void charge(const Usage& usage) {
    st_.usage += usage;
    ctx_.usage->add(usage);
    ctx_.budget->charge_tokens(usage);
    if (const auto& pricing = agent_->options().pricing) {
      const double cost = pricing->cost(usage);
      st_.cost_usd += cost;
      ctx_.budget->charge_cost(cost);
    }
  }

  // The assistant's message with tool calls enters the history, and its
  // calls become the batch: every call the engine can tell is bad is refused
  // here (an error result the model sees, ToolCallRefused), before anything
  // runs.
  void admit_calls(Message message) {
    message.role = Role::assistant;
    const std::size_t n = message.tool_calls.size();
    st_.outcomes.assign(n, std::nullopt);
    auto& calls = message.tool_calls;
    const auto id_taken = [&](std::size_t i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (calls[j].id == calls[i].id) return true;
      }
      return false;
    };
    bool handed_off = false;
    for (std::size_t i = 0; i < n; ++i) {
      ToolCall& call = calls[i];
      std::string problem;
      if (call.id.empty()) call.id = RunContext::new_id("call");
      if (call.arguments.is_null()) call.arguments = Json::object();  // "no arguments"
      if (id_taken(i)) {
        const std::string original = call.id;
        call.id = RunContext::new_id(original + "_dup");
        problem = "duplicate tool call id '" + original + "' in one turn; this call was not run. Issue each call with a distinct id.";
      } else if (call.name.empty()) {
        problem = "tool call has an empty name; advertised tools: " + quoted_list(advertised_names());
      } else if (const Handoff* handoff = handoff_for(call.name)) {
        // The engine answers a transfer itself; the switch comes once the
        // batch's results are in (collect_calls).
        if (handed_off) {
          problem = "only one handoff per turn: an earlier call of this turn already transfers the conversation; "
                    "this call was not run.";
        } else {
          handed_off = true;
          call.arguments_text.clear();
          st_.outcomes[i] = CallOutcome{"Transferred to " + handoff->agent->name() + ".", false, CallStatus::ok};
        }
      } else if (ToolPtr tool = strategy_->tools().find(call.name); !tool || !tool->advertised()) {
        // A hidden tool is the host's and the strategy's, never the model's.
        problem = "unknown tool '" + call.name + "'. Advertised tools: " + quoted_list(advertised_names());
      } else if (turn_ && !offered(call.name)) {
        problem = "tool '" + call.name + "' is not available now; this call was not run. Available tools: " +
                  quoted_list(advertised_names());
      } else if (!call.arguments_text.empty()) {
        try {
          call.arguments = parse_arguments(call.name, call.arguments_text);
          call.arguments_text.clear();
        } catch (const ToolArgumentError& e) {
          problem = e.what();
        }
      }
      if (!problem.empty()) {
        ctx_.emit(ToolCallRefused{call, problem});
        st_.outcomes[i] = CallOutcome{problem, true, CallStatus::error};
      }
    }
    st_.batch = message.tool_calls;
    st_.history.push_back(std::move(message));
    st_.phase = Phase::act;
  }

  // What the run's tools need injected that its context does not provide:
  // the run fails at its start, before the model is asked or a call runs.
  std::optional<std::string> missing_dependency() const {
    for (const ToolPtr& tool : strategy_->tools().tools()) {
      for (const InjectedType& needed : tool->spec().injected) {
        if (ctx_.dependencies && ctx_.dependencies->provides(needed.type)) continue;
        return "tool '" + tool->name() + "' needs Inject<" + needed.name + ">, and the run's context provides none " +
               "(RunContext::dependencies)";
      }
    }
    return std::nullopt;
  }

  // The tools offered on the last model call (the advertised ones, less
  // those whose ToolSpec::available says no).
  std::vector<std::string> advertised_names() const {
    std::vector<std::string> names;
    for (const ToolSpec* spec : offered_tools()) names.push_back(spec->name);
    return names;
  }

  // This turn's tools: each advertised tool whose availability holds, with
  // its description for this turn. A predicate or describer that throws
  // withholds the tool or keeps its fixed description, and is logged.
  void offer_tools() {
    auto& offered = turn_->offered;
    offered.clear();
    auto described = std::make_shared<std::vector<ToolSpec>>();
    described->reserve(specs_.size());  // stable addresses for `offered`
    const auto warn = [&](const ToolSpec& spec, const char* what) {
      try {
        agentkit::detail::logger_or_null(ctx_.logger)
            ->warn("tool '{}': its {} failed: {}", spec.name, what, failure_of(std::current_exception()).message);
      } catch (...) {
      }
    };
    for (const ToolSpec* spec : specs_) {
      if (spec->available) {
        bool available = false;
        try {
          available = spec->available(ctx_);
        } catch (...) {
          warn(*spec, "availability check");
        }
        if (!available) continue;
      }
      std::string description;
      if (spec->describe) {
        try {
          description = spec->describe(ctx_);
        } catch (...) {
          warn(*spec, "describer");
        }
      }
      if (description.empty()) {
        offered.push_back(spec);
        continue;
      }
      ToolSpec& copy = described->emplace_back(*spec);
      copy.description = std::move(description);
      offered.push_back(&copy);
    }
    turn_->described = std::move(described);
  }

  // The tools offered on the last model call: every advertised one, unless
  // some tool's availability or description depends on the context.
  std::span<const ToolSpec* const> offered_tools() const {
    return turn_ ? std::span<const ToolSpec* const>(turn_->offered) : std::span<const ToolSpec* const>(specs_);
  }

  bool offered(std::string_view name) const {
    for (const ToolSpec* spec : offered_tools()) {
      if (spec->name == name) return true;
    }
    return false;
  }

  // ------------------------------------------------------------ context window

  // The messages that never leave the view: the session's history and the task.
  std::size_t kept_prefix() const {
    return std::min(static_cast<std::size_t>(st_.session_base) + 1, st_.history.size());
  }
  // Where the view's history part starts.
  std::size_t window_from() const { return std::max(st_.window.from, kept_prefix()); }

  // Brings the estimates up to the history's end (it only grows). A message
  // the model is not shown (screen()) counts nothing.
  void measure(const ContextPolicy& policy) {
    WindowCache& w = *window_;
    for (std::size_t i = w.sums.size() - 1; i < st_.history.size(); ++i) {
      const bool shown = i >= w.hidden.size() || !w.hidden[i];
      w.sums.push_back(w.sums.back() + (shown ? policy.estimate(st_.history[i]) : 0));
      w.pinned.push_back(policy.pinned && policy.pinned(st_.history[i]));
      w.any_pinned = w.any_pinned || w.pinned.back();
    }
  }
  std::size_t tokens(std::size_t from, std::size_t to) const { return window_->sums[to] - window_->sums[from]; }
  static std::size_t summary_tokens(const std::string& summary) { return summary.empty() ? 0 : 16 + summary.size() / 4; }

  // The end of the group that starts at `begin`: a message and the tool
  // results after it (an assistant's calls never leave without them).
  std::size_t group_end(std::size_t begin, std::size_t limit) const {
    std::size_t end = begin + 1;
    while (end < limit && st_.history[end].role == Role::tool) ++end;
    return end;
  }
  bool group_pinned(std::size_t begin, std::size_t end) const {
    if (!window_ || !window_->any_pinned) return false;
    for (std::size_t i = begin; i < end; ++i) {
      if (window_->pinned[i]) return true;
    }
    return false;
  }
  // The estimate of the pinned groups between the kept prefix and `to`,
  // which stay in view when the window starts at `to`.
  std::size_t pinned_tokens(std::size_t to) const {
    std::size_t sum = 0;
    for (std::size_t g = kept_prefix(); g < to;) {
      const std::size_t end = group_end(g, to);
      if (group_pinned(g, end)) sum += tokens(g, end);
      g = end;
    }
    return sum;
  }

  // What the model sees once the window was compacted: the kept prefix (the
  // task carrying the summary), the pinned groups that left, and the window.
  std::shared_ptr<const std::vector<Message>> window_view() const {
    auto view = std::make_shared<std::vector<Message>>();
    const auto at = [&](std::size_t i) { return st_.history.begin() + static_cast<std::ptrdiff_t>(i); };
    const std::size_t kept = kept_prefix(), from = window_from();
    view->insert(view->end(), at(0), at(kept));
    if (!st_.window.summary.empty() && !view->empty()) {
      view->back().content.push_back(TextPart{"\n\nSummary of the earlier conversation: " + st_.window.summary});
    }
    for (std::size_t g = kept; g < from;) {
      const std::size_t end = group_end(g, from);
      if (group_pinned(g, end) && !hidden(g, end)) view->insert(view->end(), at(g), at(end));
      g = end;
    }
    // Before a handoff, the groups its keep filter holds.
    const std::size_t cut = filtered() ? std::max(from, std::min(st_.handoff.at, st_.history.size())) : from;
    for (std::size_t g = from; g < cut;) {
      const std::size_t end = group_end(g, cut);
      if (!hidden(g, end)) view->insert(view->end(), at(g), at(end));
      g = end;
    }
    view->insert(view->end(), at(cut), st_.history.end());
    return view;
  }

  // Whether the handoff that led to the active agent filters what it sees.
  bool filtered() const { return arrival_ && arrival_->keep && st_.handoff.happened(); }
  // Whether the group history[begin, end), before the handoff, is hidden
  // from the active agent's model (Handoff::keep fails for one of its messages).
  bool hidden(std::size_t begin, std::size_t end) const {
    if (!filtered() || begin >= st_.handoff.at) return false;
    for (std::size_t i = begin; i < end; ++i) {
      if (!arrival_->keep(st_.history[i])) return true;
    }
    return false;
  }

  // Marks, once per window cache, the messages before the handoff whose
  // group its keep filter hides from the active agent's model, as
  // window_view() leaves them out: the estimate is of what the model is
  // shown. The groups before the handoff are all in by then, and a handoff
  // starts a new cache (adopt()). A keep filter that throws fails the run,
  // as it would building the view: returns false then.
  bool screen() {
    WindowCache& w = *window_;
    if (w.screened) return true;
    w.screened = true;
    if (!filtered()) return true;
    try {
      const std::size_t cut = std::min(st_.handoff.at, st_.history.size());
      w.hidden.assign(cut, false);
      for (std::size_t g = kept_prefix(); g < cut;) {
        const std::size_t end = group_end(g, cut);
        if (hidden(g, end)) std::fill_n(w.hidden.begin() + static_cast<std::ptrdiff_t>(g), end - g, true);
        g = end;
      }
    } catch (...) {
      cause_ = failure_of(std::current_exception());
      finish(StopReason::failed, "the handoff's keep filter failed: " + cause_->message);
      return false;
    }
    return true;
  }

  // Applies the policy before a model call. Returns true when it started a
  // summary call (the step ends; summarized() takes its reply). A policy
  // function that throws fails the run.
  bool compact(const ContextPolicy& policy) {
    if (!window_) window_ = std::make_unique<WindowCache>();
    if (!screen()) return false;
    std::size_t from = 0, to = 0, before = 0, after = 0;
    try {
      measure(policy);
      const std::size_t n = st_.history.size(), kept = kept_prefix();
      from = window_from();
      before = tokens(0, kept) + pinned_tokens(from) + summary_tokens(st_.window.summary) + tokens(from, n);
      if (before <= policy.max_tokens) return false;
      // The latest turn stays: the window never starts past the last group.
      std::size_t last = n;
      while (last > from && (last == n || st_.history[last].role == Role::tool)) --last;
      after = before;
      to = from;
      while (after > policy.target_tokens && to < last) {
        const std::size_t end = group_end(to, last);
        if (!group_pinned(to, end)) after -= tokens(to, end);
        to = end;
      }
      if (to == from) return false;  // nothing can leave: the model sees it all
    } catch (...) {
      cause_ = failure_of(std::current_exception());
      finish(StopReason::failed, "the context policy failed: " + cause_->message);
      return false;
    }
    if (!policy.summarize) {
      move_window(from, to, before, after, {}, {});
      return false;
    }
    std::shared_ptr<Model> summarizer = model_;
    if (!policy.summary_model.empty()) {
      if (!window_->summarizer) {
        try {
          if (ctx_.models) window_->summarizer = ctx_.models(policy.summary_model);
        } catch (...) {
          cause_ = failure_of(std::current_exception());
          finish(StopReason::failed, "the context policy's summary model failed: " + cause_->message);
          return false;
        }
      }
      summarizer = window_->summarizer;
    }
    const std::string& summary_model = policy.summary_model.empty() ? agent_->model() : policy.summary_model;
    if (!summarizer) {
      cause_ = Failure{.code = ErrorCode::not_found};
      finish(StopReason::failed, "no model for '" + summary_model + "' to summarise the context with");
      return false;
    }
    model_slot_ = std::make_shared<ModelSlot>();
    model_slot_->compaction = ModelSlot::Compaction{from, to, before, summary_model};
    model_slot_->system = policy.summary_prompt;
    model_slot_->messages =
        std::make_shared<const std::vector<Message>>(std::vector<Message>{Message::user(transcript(from, to))});
    ModelRequest request{model_slot_->compaction->model, *model_slot_->system, *model_slot_->messages, {}, nullptr,
                         nullptr};
    launch(summarizer, request, nullptr);
    return true;
  }

  // The messages leaving the window as text for the summarizer, after the
  // summary they extend; pinned groups stay in view and are left out, and
  // so are groups a handoff's keep hides from the model (screen()): the
  // summary must not show it what the filter withholds.
  std::string transcript(std::size_t from, std::size_t to) const {
    std::string out;
    if (!st_.window.summary.empty()) out += "Summary so far: " + st_.window.summary + "\n\n";
    out += "Conversation:\n";
    const std::vector<bool>& hidden = window_->hidden;
    for (std::size_t g = from; g < to;) {
      const std::size_t end = group_end(g, to);
      if (!group_pinned(g, end) && !(g < hidden.size() && hidden[g])) {
        for (std::size_t i = g; i < end; ++i) {
          const Message& m = st_.history[i];
          const std::string text = m.text();
          switch (m.role) {
            case Role::tool:
              out += "tool " + m.tool_name + (m.is_error ? " (error): " : ": ") + text + "\n";
              break;
            case Role::assistant:
              if (!text.empty()) out += "assistant: " + text + "\n";
              for (const ToolCall& call : m.tool_calls) {
                out += "assistant called " + call.name + " " +
                       (call.arguments_text.empty() ? call.arguments.dump(-1, ' ', false, Json::error_handler_t::replace)
                                                    : call.arguments_text) +
                       "\n";
              }
              break;
            default:
              out += std::string(to_string(m.role)) + ": " + text + "\n";
          }
          for (const ContentPart& part : m.content) {
            if (std::holds_alternative<ImagePart>(part) || std::holds_alternative<FilePart>(part)) {
              out += "[" + std::string(part_type(part)) + " omitted]\n";
            }
          }
        }
      }
      g = end;
    }
    return out;
  }

  // The summary call's reply: the window moves past what it summarised. A
  // failed call, or one with no text, fails the run (recover() asks again).
  void summarized(ModelSlot& slot) {
    const ModelSlot::Compaction& c = *slot.compaction;
    if (slot.error) return model_call_failed(slot, c.model, "summarising the context failed: ");
    ModelResponse& response = slot.response;
    const double cost_before = st_.cost_usd;
    charge(response.usage);
    tracer_.model_finished(response, agent_->options().pricing ? std::optional(st_.cost_usd - cost_before) : std::nullopt);
    std::string summary = sanitize_utf8(std::move(response.message)).text();
    if (summary.empty()) {
      cause_ = Failure{.code = ErrorCode::protocol, .model = c.model};
      return finish(StopReason::failed, "summarising the context failed: the summary model answered with no text");
    }
    const std::size_t after =
        tokens(0, kept_prefix()) + pinned_tokens(c.to) + summary_tokens(summary) + tokens(c.to, st_.history.size());
    move_window(c.from, c.to, c.tokens_before, after, std::move(summary), response.usage);
  }

  // Records a compaction in the state (the next save carries it) and tells the host.
  void move_window(std::size_t from, std::size_t to, std::size_t before, std::size_t after,
                   std::optional<std::string> summary, Usage usage) {
    st_.window.from = to;
    ++st_.window.compactions;
    const bool summarized = summary.has_value();
    if (summary) st_.window.summary = std::move(*summary);
    ctx_.emit(ContextCompacted{from, to, before, after, summarized, usage, {}});
    checkpoint();
  }

  // ------------------------------------------------------------ tools

  void start_batch() {
    // The batch runs only once the checkpoint naming it is written: a crash
    // must never leave a call's ledger record without the batch it belongs to.
    if (writer_ && !writer_->idle()) return;
    // Refused after step() looked (a failed save counts as done): the batch
    // that checkpoint names never runs.
    if (stopped_for_refusal()) return;
    // Before-guardrails, in every process that would run the batch (after a
    // suspension or a crash too): a tripwire stops the run before any call
    // starts; a repair answers the call without running it.
    if (!std::exchange(before_checked_, false) && before_guardrails()) {
      std::vector<std::pair<std::size_t, ToolCall>> calls;
      for (std::size_t i = 0; i < st_.batch.size(); ++i) {
        if (!st_.outcomes[i]) calls.emplace_back(i, st_.batch[i]);
      }
      if (!calls.empty()) {
        return guard(GuardJob::Stage::before, [calls = std::move(calls), agent = agent_, owner = agent_owner_,
                                               ctx = worker_context()](GuardJob& job) {
          for (const auto& entry : calls) {  // not a structured binding: clang 14 cannot capture one
            const ToolCall& call = entry.second;
            for (const ToolGuardrail& g : agent->options().tool_guardrails) {
              if (!g.before || !applies(g, call.name)) continue;
              const GuardrailVerdict v =
                  job.check(g.name, "tool_before", call.id, true, [&] { return g.before(call, ctx); });
              if (v.kind == GuardrailVerdict::Kind::trip) return;
              if (v.kind == GuardrailVerdict::Kind::repair) {
                job.outcomes.emplace(entry.first, CallOutcome{v.message, true, CallStatus::denied});
                break;
              }
            }
          }
        });
      }
    }
    std::vector<std::size_t> to_run;
    for (std::size_t i = 0; i < st_.batch.size(); ++i) {
      if (!st_.outcomes[i]) to_run.push_back(i);
    }
    if (auto why = ctx_.budget->exhausted(static_cast<std::int64_t>(to_run.size()))) {
      return finish(StopReason::budget_exhausted, *why);
    }
    calls_ = std::make_shared<std::vector<CallSlot>>();
    calls_->reserve(to_run.size());
    st_.tool_calls += static_cast<int>(to_run.size());
    const auto deadline = call_deadline();
    call_index_ = std::move(to_run);
    for (const std::size_t i : call_index_) {
      ToolCall& call = st_.batch[i];
      ToolPtr tool = strategy_->tools().find(call.name);
      if (ctx_.observed()) ctx_.emit(ToolCallStarted{call, tool ? tool->format_status(call.arguments) : call.name});
      auto& slot = calls_->emplace_back(ctx_, std::move(call.arguments));  // a slot always holds its call's arguments
      slot.ctx.cancellation = ctx_.cancellation.child(deadline);
      if (tracer_.on()) slot.ctx.call_span_id = slot.span_id = tracer_.tool_span_id();  // a sub-run hangs under the call
      slot.request.call_id = call.id;
      slot.request.name = call.name;
      slot.request.tool = tool;
      slot.request.side_effecting = tool && tool->side_effecting_for(slot.request.arguments);
      if (std::find(st_.approved.begin(), st_.approved.end(), call.id) != st_.approved.end()) {
        auto proposed = st_.proposed.find(call.id);
        slot.request.approval = issue(slot.request, proposed == st_.proposed.end() ? Json() : proposed->second);
      }
      if (auto nested = st_.nested.find(call.id); nested != st_.nested.end() && nested->second.decided) {
        slot.ctx.resuming = std::make_shared<const NestedSuspension>(nested->second);
      }
      slot.request.ledger_key = std::to_string(st_.iterations) + "/" + call.id;
      if (checkpoint_) slot.request.ledger = checkpoint_->ledger();
    }
    auto executor = ctx_.executor;
    if (!executor || executor->inline_execution()) {
      for (auto& slot : *calls_) {
        slot.ctx.executor = ctx_.executor;
        run_call(slot);
      }
      return;
    }
    pending_ = std::make_shared<Pending>();
    pending_->add(static_cast<int>(calls_->size()));
    for (std::size_t k = 0; k < calls_->size(); ++k) {
      // The work owns what it touches (the slots and their requests and
      // contexts), never the driver: the host may drop the handle.
      executor->submit([calls = calls_, k, pending = pending_]() {
        run_call((*calls)[k]);
        pending->finish_one();
      });
    }
  }

  // A call's deadline: when the run's wall_time budget runs out, if it has
  // one (timeout() may set an earlier one for its part of the chain).
  std::optional<CancellationToken::Clock::time_point> call_deadline() const {
    const auto& wall_time = ctx_.budget->limits().wall_time;
    if (!wall_time) return std::nullopt;
    return CancellationToken::Clock::now() + (*wall_time - ctx_.budget->elapsed());
  }

  static void run_call(CallSlot& slot) {
    if (!slot.begin()) return;
    slot.started_at = std::chrono::system_clock::now();
    try {
      slot.result = slot.ctx.invoker->invoke_tool(slot.request, slot.ctx);
    } catch (...) {
      slot.result = ToolResult::error(failure_text(std::current_exception()));
    }
    slot.ended_at = std::chrono::system_clock::now();
    slot.stage.store(CallSlot::finished, std::memory_order_release);
  }

  // Hands each call's arguments back to the batch, once per batch, first
  // thing once it is collected or abandoned (record_calls, or a stop that
  // records none). A call still running on a worker only reads its own, so
  // the batch gets a copy of those; a call not yet started never will be
  // once settled.
  void return_arguments(std::vector<CallSlot>& calls) {
    for (std::size_t k = 0; k < calls.size(); ++k) {
      Json& arguments = st_.batch[call_index_[k]].arguments;
      if (calls[k].settle() == CallSlot::started) {
        arguments = calls[k].request.arguments;
      } else {
        arguments = std::move(calls[k].request.arguments);
      }
    }
  }

  // What the run records for a call of the batch in flight, when the run
  // ends (`stopping`) or collects the batch; nullopt: it never started.
  // Awaiting approval comes back as is.
  std::optional<ToolResult> settled_result(CallSlot& slot, std::optional<StopReason> stopping) const {
    switch (slot.settle()) {
      case CallSlot::finished:
        return slot.result;
      case CallSlot::started: {
        const std::string why = "the run stopped (" + std::string(to_string(stopping.value_or(StopReason::failed))) +
                                ") while this call was running, before it returned";
        if (slot.request.effectively_side_effecting()) {
          return ToolResult::outcome_unknown("Outcome unknown: " + why + "; it may or may not have taken effect.");
        }
        return ToolResult::error("Interrupted: " + why + "; its result was not awaited.");
      }
      case CallSlot::not_started:
      case CallSlot::skipped:
        break;
    }
    return std::nullopt;
  }

  // Records the outcomes of the batch in flight (a call awaiting approval
  // joins st_.pending). `stopping`: the run is ending, so calls still running
  // are abandoned (their late results go nowhere but the ledger) and calls
  // not run are left for finish() to mark.
  // Returns the batch indices whose outcome a result recorded (what the
  // after-guardrails check), when not stopping.
  std::vector<std::size_t> record_calls(std::vector<CallSlot>& calls, std::optional<StopReason> stopping) {
    return_arguments(calls);
    std::vector<std::size_t> recorded;
    for (std::size_t k = 0; k < calls.size(); ++k) {
      const std::size_t i = call_index_[k];
      const ToolCall& call = st_.batch[i];
      std::optional<ToolResult> r = settled_result(calls[k], stopping);
      if (!r) {
        if (!stopping) st_.outcomes[i] = CallOutcome{"Not run: the call was cancelled before it started.", true, CallStatus::interrupted};
        continue;  // a stopping run says "Not run" for it below
      }
      if (r->status == ToolResult::Status::awaiting_approval && stopping) {
        if (!r->nested) continue;  // held by the gate, it did not run: "Not run" below
        // A sub-run that suspended may have run calls first: never "not run".
        *r = ToolResult::outcome_unknown(
            "Outcome unknown: the run stopped (" + std::string(to_string(*stopping)) +
            ") while this call's sub-agent awaited approval; the calls it ran before that may have taken effect, "
            "the ones awaiting approval did not run.");
      }
      std::vector<ContentPart> parts;
      if (r->is_ok() && !r->parts.empty()) {
        if (auto problem = parts_problem(*r, agent_->options().content_limits)) {
          *r = ToolResult::error("Tool '" + call.name + "' returned content this run cannot take: " + *problem);
        } else {
          parts = sanitize_utf8(Message::user(std::move(r->parts))).content;
          if (r->value.is_null()) r->value = "";  // the parts are the result
        }
      }
      std::string text = sanitize_utf8(r->model_text());
      if (ctx_.observed()) ctx_.emit(ToolCallFinished{call.id, call.name, r->status, text, {}});
      if (tracer_.on()) {
        // A call abandoned mid-run has no end of its own: the run's stop is it.
        const auto ended = calls[k].ended_at == std::chrono::system_clock::time_point{} ? std::chrono::system_clock::now()
                                                                                         : calls[k].ended_at;
        tracer_.tool_finished(calls[k].span_id, call, calls[k].request.tool.get(), r->status, text,
                              calls[k].started_at, ended);
      }
      if (r->status == ToolResult::Status::awaiting_approval) {
        st_.pending.push_back(call.id);
        // A sub-run's suspension (as_tool): its calls are what the run awaits.
        if (r->nested) {
          st_.nested.insert_or_assign(call.id, *r->nested);
        } else {
          st_.nested.erase(call.id);
        }
      } else {
        st_.nested.erase(call.id);
        st_.outcomes[i] = CallOutcome{std::move(text), !r->is_ok(), r->status, std::move(parts)};
        if (!stopping) recorded.push_back(i);
      }
    }
    return recorded;
  }

  void collect_calls() {
    if (busy()) return;
    auto calls = std::exchange(calls_, nullptr);
    for (const CallSlot& slot : *calls) {
      if (!slot.result.interrupted) continue;
      // A call's own durable run lost its store (RunInterrupted): the run
      // stops where its store last has it, and its recovery runs the call
      // again. Nothing more is written by this engine.
      writer_.reset();
      checkpoint_.reset();
      cause_ = Failure{.code = *slot.result.interrupted};
      std::string why = "the run was interrupted: " + slot.result.text;
      // The result still says what each call did (the interrupted one: its
      // outcome is unknown), never "not run"; the store keeps them unanswered.
      record_calls(*calls, StopReason::failed);
      return finish(StopReason::failed, std::move(why));
    }
    const std::vector<std::size_t> recorded = record_calls(*calls, std::nullopt);
    if (!recorded.empty() && after_guardrails()) {
      // After-guardrails on the results: a repair replaces what the model
      // reads (and what the next guardrail sees); a tripwire stops the run.
      struct Checked {
        std::size_t index;
        ToolCall call;
        CallOutcome outcome;
      };
      std::vector<Checked> results;
      for (std::size_t i : recorded) results.push_back({i, st_.batch[i], *st_.outcomes[i]});
      return guard(GuardJob::Stage::after, [results = std::move(results), agent = agent_, owner = agent_owner_,
                                            ctx = worker_context()](GuardJob& job) mutable {
        for (Checked& r : results) {
          bool repaired = false;
          for (const ToolGuardrail& g : agent->options().tool_guardrails) {
            if (!g.after || !applies(g, r.call.name)) continue;
            const GuardrailVerdict v =
                job.check(g.name, "tool_after", r.call.id, true, [&] { return g.after(r.call, r.outcome, ctx); });
            if (v.kind == GuardrailVerdict::Kind::trip) return;
            if (v.kind == GuardrailVerdict::Kind::repair) {
              const CallStatus status = r.outcome.outcome == CallStatus::ok ? CallStatus::error : r.outcome.outcome;
              r.outcome = CallOutcome{v.message, true, status};
              repaired = true;
            }
          }
          if (repaired) job.outcomes.emplace(r.index, std::move(r.outcome));
        }
      });
    }
    calls_checked();
  }

  // The batch's results are recorded and checked: the run suspends, or the
  // strategy takes its next step with them.
  void calls_checked() {
    if (!st_.pending.empty()) {
      st_.phase = Phase::suspended;
      return finish(StopReason::suspended, {});
    }
    Next next = strategy_->after_calls(step_context(), st_);
    // A transfer answered in this batch (the first: the others were refused).
    const Handoff* handoff = nullptr;
    std::string call_id;
    for (std::size_t i = 0; i < st_.batch.size() && !handoff; ++i) {
      const auto& outcome = st_.outcomes[i];
      if (outcome && outcome->outcome == CallStatus::ok && !outcome->is_error) {
        if ((handoff = handoff_for(st_.batch[i].name))) call_id = st_.batch[i].id;
      }
    }
    append_results();
    if (handoff) {
      hand_off(*handoff, call_id);
      if (done_ || ending_) return;
      if (next.kind != Next::Kind::stop) next = Next::ask();  // the target's model is asked next
    }
    apply(std::move(next));
    if (!done_) checkpoint();
  }

  // Tool results in call order, so the history is valid on the wire.
  void append_results() {
    // The batch and its outcomes are cleared below: their strings move.
    for (std::size_t i = 0; i < st_.batch.size(); ++i) {
      ToolCall& call = st_.batch[i];
      auto& outcome = st_.outcomes[i];
      st_.history.push_back(Message::tool_result(std::move(call.id), std::move(call.name), std::move(outcome->text),
                                                 outcome->is_error));
      auto& content = st_.history.back().content;
      content.insert(content.end(), std::make_move_iterator(outcome->parts.begin()),
                     std::make_move_iterator(outcome->parts.end()));
    }
    st_.batch.clear();
    st_.outcomes.clear();
    st_.approved.clear();
    st_.proposed.clear();
    st_.nested.clear();
  }

  void apply_decisions(const Decisions& decisions) {
    for (const std::string& id : st_.pending) {
      std::size_t i = 0;
      while (i < st_.batch.size() && st_.batch[i].id != id) ++i;
      if (i == st_.batch.size()) continue;
      if (auto nested = st_.nested.find(id); nested != st_.nested.end()) {
        // A sub-run's calls: their decisions go down to it (by its own call
        // ids), and the call runs again to resume it.
        nested->second.decisions = detail::routed_decisions(decisions, id);
        nested->second.decided = true;
        continue;
      }
      auto it = decisions.find(id);
      const ToolCall& call = st_.batch[i];
      if (it == decisions.end() || it->second.kind == Decision::Kind::reject) {
        std::string text = "A human reviewer rejected the call to '" + call.name + "'; it did not run.";
        if (it != decisions.end() && !it->second.message.empty()) text += " Reason: " + it->second.message;
        st_.outcomes[i] = CallOutcome{text, true, CallStatus::denied};
        ctx_.emit(ApprovalDecided{call, ApprovalVerdict::rejected, it == decisions.end() ? "" : it->second.message});
        tracer_.approval_decided(call, ApprovalVerdict::rejected, it == decisions.end() ? "" : it->second.message);
        continue;
      }
      const bool edited = it->second.kind == Decision::Kind::edit;
      if (edited) edit_call(i, it->second.arguments);
      ctx_.emit(ApprovalDecided{st_.batch[i], edited ? ApprovalVerdict::edited : ApprovalVerdict::approved, {}});
      tracer_.approval_decided(st_.batch[i], edited ? ApprovalVerdict::edited : ApprovalVerdict::approved, {});
      st_.approved.push_back(id);
    }
    st_.pending.clear();
    st_.phase = Phase::act;
  }

  // A human's edit: the call runs with `arguments`, and the history shows it
  // so (the model must not report what it did not do); the model's own
  // arguments are kept for the audit.
  void edit_call(std::size_t i, const Json& arguments) {
    ToolCall& call = st_.batch[i];
    st_.proposed.insert_or_assign(call.id, call.arguments);
    call.arguments = arguments;
    for (auto it = st_.history.rbegin(); it != st_.history.rend(); ++it) {
      if (it->role != Role::assistant) continue;
      for (ToolCall& shown : it->tool_calls) {
        if (shown.id == call.id) {
          shown.arguments = arguments;
          shown.arguments_text.clear();
        }
      }
      break;  // the batch is the last assistant message's calls
    }
  }

  // ------------------------------------------------------------ end

  // The failure a run stopping for `reason` carries: none for answered and
  // suspended; for failed, the cause's code and details (internal when no
  // cause was recorded); for the other early stops, the reason's own code.
  static std::optional<Failure> failure_for(StopReason reason, std::string message, std::optional<Failure> cause) {
    switch (reason) {
      case StopReason::answered:
      case StopReason::suspended: return std::nullopt;
      case StopReason::failed: break;
      case StopReason::budget_exhausted:
      case StopReason::max_iterations: return Failure{.code = ErrorCode::budget_exhausted, .message = std::move(message)};
      case StopReason::cancelled: return Failure{.code = ErrorCode::cancelled, .message = std::move(message)};
      case StopReason::guardrail_tripped:
        return Failure{.code = ErrorCode::permission_denied, .message = std::move(message)};
    }
    Failure f = cause.value_or(Failure{});
    f.message = std::move(message);
    return f;
  }

  void finish(StopReason reason, std::string error) {
    if (done_ || ending_) return;
    // Calls in flight: a finished one keeps its result, a started one is
    // abandoned (outcome_unknown when side-effecting), one not started never
    // will be. Work still running holds its own state; the store is tidied
    // only after the last of it ends, so its late ledger record is not left.
    std::shared_ptr<Pending> abandoned;
    if (auto calls = std::exchange(calls_, nullptr); calls && reason != StopReason::suspended) {
      record_calls(*calls, reason);
      if (busy()) abandoned = pending_;
    } else if (calls) {
      return_arguments(*calls);  // the suspended state keeps its batch whole
    }
    if (reason != StopReason::suspended && !st_.batch.empty()) {
      // A stop mid-batch: every call still gets a result, so the history
      // stays valid on the wire and nothing is re-run later.
      for (auto& outcome : st_.outcomes) {
        if (!outcome) outcome = CallOutcome{"Not run: the run stopped (" + std::string(to_string(reason)) + ") before this call.", true, CallStatus::interrupted};
      }
      append_results();
    }
    if (reason != StopReason::suspended) st_.phase = Phase::done;
    st_.stop_reason = reason;
    st_.failure = failure_for(reason, std::move(error), std::exchange(cause_, std::nullopt));
    if (reason != StopReason::answered && st_.output.empty()) {
      for (auto it = st_.history.rbegin(); it != st_.history.rend(); ++it) {
        if (it->role != Role::assistant) continue;
        if (std::string text = it->text(); !text.empty()) {
          st_.output = std::move(text);
          break;
        }
      }
    }
    result_.stop_reason = reason;
    result_.output = st_.output;
    result_.structured = structured_;
    result_.failure = st_.failure;
    result_.usage = ctx_.usage->total();  // this run's steps plus its sub-runs'
    if (parent_usage_) parent_usage_->add(result_.usage);
    result_.iterations = st_.iterations;
    result_.agent = agent_->name();
    if (reason == StopReason::suspended) {
      Suspended s = suspension_of(st_);
      ctx_.emit(RunSuspended{s.pending});
      result_.suspended = std::move(s);
    }
    tracer_.run_finished(st_, result_.usage);
    persist_end(abandoned);
    result_.state = std::move(st_);  // the engine is done with it; no second copy of the history
    if (writer_ && writer_->behind(end_seq_)) {
      // Done once the saves before the end are written: one refused means
      // the run did not succeed (see complete_end).
      ending_ = true;
      return;
    }
    complete_end();
  }

  std::shared_ptr<const Agent> agent_owner_;  // shared with work in flight; owns the handoff graph
  const Agent* agent_;        // the agent the run is under: agent_owner_, or a handoff's target in its graph
  const Strategy* strategy_;  // agent_'s, kept alive by agent_owner_
  const Handoff* arrival_ = nullptr;  // the handoff that led to agent_, if any
  std::string base_path_;             // the agent path of the run that started this one, if any
  RunState st_;
  RunContext ctx_;
  std::shared_ptr<EventQueue> events_ = std::make_shared<EventQueue>();
  RunTracer tracer_;  // the run's spans; inert without ctx.tracer
  std::shared_ptr<Model> model_;
  std::optional<Failure> model_error_;  // why the resolver gave no model
  std::optional<Failure> cause_;        // what fails the run: its code and details (finish() adds the message)
  std::shared_ptr<UsageMeter> parent_usage_;  // the run that started this one, if any
  std::vector<const ToolSpec*> specs_;  // every advertised tool
  // What only some runs need is allocated when they do, so an engine stays small.
  struct TurnTools {
    std::vector<const ToolSpec*> offered;  // those offered on the last model call
    std::shared_ptr<const std::vector<ToolSpec>> described;  // what `offered` points into for described tools
  };
  std::unique_ptr<TurnTools> turn_;      // set when some tool's availability or description depends on the context
  std::unique_ptr<Failure> unready_;  // a dependency the tools need and the context lacks, or an unknown active agent
  std::shared_ptr<const std::vector<ToolSpec>> transfers_;  // the active agent's handoff tools, when it has handoffs
  std::shared_ptr<GuardJob> guard_;      // a stage of guardrail checks under way
  std::unique_ptr<Next> answer_;         // an answer its output guardrails are checking
  bool before_checked_ = false;          // the batch's before-guardrails ran; it starts now
  std::unique_ptr<WindowCache> window_;   // with a context policy
  bool input_checked_ = false;            // the input guardrails ran (once per run)
  // The agent's model settings overridden by the run's (kept in its state).
  std::shared_ptr<const ModelSettings> settings_;  // set by adopt()
  std::shared_ptr<Checkpoint> checkpoint_;  // null: not durable
  std::unique_ptr<CheckpointWriter> writer_;  // set once the run is claimed
  std::size_t sent_ = 0;                      // history messages handed to the writer
  std::uint64_t end_seq_ = 0;                 // the writer's sequence number of the end save
  bool ending_ = false;                       // finished; waiting for the writer to write the end
  std::shared_ptr<Pending> pending_;
  std::shared_ptr<ModelSlot> model_slot_;
  std::shared_ptr<std::vector<Message>> model_history_;  // see model_history()
  std::unique_ptr<PendingCompletion> in_flight_;  // a model call advanced from poll()
  std::shared_ptr<std::vector<CallSlot>> calls_;
  std::vector<std::size_t> call_index_;
  Json structured_;
  RunResult result_;
  bool done_ = false;
};

}  // namespace

std::unique_ptr<RunHandle::Driver> Strategy::drive(const Agent& agent, RunState state, Decisions decisions,
                                                   RunContext ctx, std::unique_ptr<Checkpoint> checkpoint) const {
  if (&agent.cognition() != this) {
    throw Error(ErrorCode::invalid_argument, "Strategy::drive: agent '" + agent.name() +
                                "' runs another cognition; runs are started by Agent");
  }
  return std::make_unique<Engine>(agent, std::move(state), std::move(decisions), std::move(ctx),
                                  std::move(checkpoint));
}

}  // namespace agentkit::cognition
