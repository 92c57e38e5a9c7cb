#include <agentkit/error.h>
#include <agentkit/events.h>
#include <agentkit/fleet.h>
#include <agentkit/state/checkpoint.h>
#include <agentkit/state/store.h>

#include "sub_run.h"

namespace agentkit {
namespace {

using Claim = state::PostgresRunQueue::Claim;
using Outcome = FleetRunReport::Outcome;

constexpr const char* kKinds[] = {"approve", "reject", "edit"};

std::string result_json(const RunResult& result) {
  Json doc = {{"stop_reason", std::string(to_string(result.stop_reason))}, {"output", result.output}};
  if (result.failure)
    doc["failure"] = {{"code", std::string(to_string(result.failure->code))}, {"message", result.failure->message}};
  return doc.dump();
}

std::string error_json(const std::string& error) {
  return Json{{"stop_reason", "failed"}, {"failure", {{"message", error}}}}.dump();
}

}  // namespace

std::string_view to_string(FleetRunReport::Outcome outcome) noexcept {
  switch (outcome) {
    case Outcome::done: return "done";
    case Outcome::suspended: return "suspended";
    case Outcome::lost: return "lost";
    case Outcome::released: return "released";
    case Outcome::retried: return "retried";
    case Outcome::abandoned: return "abandoned";
  }
  return "?";
}

std::string decisions_to_json(const Decisions& decisions) {
  Json doc = Json::object();
  for (const auto& [id, d] : decisions) {
    Json decision = {{"kind", kKinds[static_cast<int>(d.kind)]}};
    if (!d.message.empty()) decision["message"] = d.message;
    if (d.kind == Decision::Kind::edit) decision["arguments"] = d.arguments;
    doc[id] = std::move(decision);
  }
  return doc.dump();
}

Decisions decisions_from_json(std::string_view json) {
  const auto bad = [](const std::string& why) { return Error(ErrorCode::invalid_argument, "decisions: " + why); };
  const Json doc = Json::parse(json, nullptr, false);
  if (!doc.is_object()) throw bad("not a JSON object of decisions by call id");
  Decisions out;
  for (const auto& [id, d] : doc.items()) {
    if (!d.is_object() || !d.contains("kind") || !d["kind"].is_string()) throw bad(id + ": no \"kind\"");
    const std::string kind = d["kind"].get<std::string>();
    const std::string message =
        d.contains("message") && d["message"].is_string() ? d["message"].get<std::string>() : std::string();
    if (kind == "approve") {
      out[id] = Decision::approve();
    } else if (kind == "reject") {
      out[id] = Decision::reject(message);
    } else if (kind == "edit" && d.contains("arguments")) {
      out[id] = Decision::edit(d["arguments"]);
    } else {
      throw bad(id + ": kind \"" + kind + "\" is not approve, reject or edit (with arguments)");
    }
  }
  return out;
}

FleetWorker::FleetWorker(std::shared_ptr<state::PostgresRunQueue> queue, Agents agents, RunContext base,
                         FleetWorkerOptions options)
    : queue_(std::move(queue)), agents_(std::move(agents)), base_(std::move(base)), options_(std::move(options)) {
  const auto refuse = [](const std::string& why) { throw Error(ErrorCode::invalid_argument, "fleet worker: " + why); };
  if (!queue_) refuse("no queue");
  if (!base_.store) refuse("the base context has no store (the fleet's shared Store)");
  if (options_.name.empty()) refuse("no name");
  if (options_.scopes.empty()) refuse("no scopes to serve");
  if (options_.heartbeat >= options_.lease || options_.heartbeat.count() <= 0)
    refuse("the heartbeat must be positive and below the lease");
}

FleetWorker::~FleetWorker() { stop(); }

void FleetWorker::start() {
  if (thread_.joinable()) return;
  lease_thread_ = std::thread([this] { keep_leases(); });
  thread_ = std::thread([this] { loop(); });
}

void FleetWorker::stop() {
  {
    std::lock_guard lock(lease_mutex_);
    stopping_ = true;
  }
  lease_cv_.notify_all();
  queue_->interrupt();
  if (thread_.joinable()) thread_.join();
  if (lease_thread_.joinable()) lease_thread_.join();
}

void FleetWorker::hold(const Claim* claim) {
  std::lock_guard lock(lease_mutex_);
  if (claim) {
    held_ = *claim;
  } else {
    held_.reset();
  }
  lease_lost_ = false;
}

bool FleetWorker::lease_lost() {
  std::lock_guard lock(lease_mutex_);
  return lease_lost_;
}

// Beside the worker's thread, which may spend longer than a lease inside one
// poll() (a model or tool call run inline), this thread extends the lease of
// the claim being handled every `heartbeat`. A refused extension (the lease
// expired and another worker took the run) is noted for the worker's thread,
// which lets the run go at its next poll; an unconfirmed one (the server is
// away) is tried again at the next beat: if the lease is gone by then, the
// run's checkpoint and the fenced marks stop this worker.
void FleetWorker::keep_leases() {
  std::unique_lock lock(lease_mutex_);
  while (!stopping_) {
    lease_cv_.wait_for(lock, options_.heartbeat);
    if (stopping_ || !held_ || lease_lost_) continue;
    const Claim claim = *held_;
    lock.unlock();
    bool held = true;
    try {
      held = queue_->heartbeat(options_.name, claim, options_.lease);
    } catch (const std::exception&) {
    }
    lock.lock();
    if (!held && held_ && held_->lease_token == claim.lease_token && held_->run_id == claim.run_id) lease_lost_ = true;
  }
}

void FleetWorker::report(FleetRunReport report) const {
  if (options_.on_run) options_.on_run(report);
}

void FleetWorker::loop() {
  while (!stopping_) {
    const std::uint64_t seen = queue_->wakeups();
    std::optional<Claim> claim;
    try {
      claim = queue_->claim(options_.name, options_.scopes, options_.lease);
    } catch (const std::exception&) {
      // The server is away (or the claim's outcome is unknown: a run it took
      // comes back when the lease expires). Sleep on the queue, which a
      // reconnected LISTEN or stop() wakes.
      queue_->wait(seen, std::min(options_.idle_wait, options_.lease));
      continue;
    }
    if (!claim) {
      queue_->wait(seen, options_.idle_wait);
      continue;
    }
    ++claims_;
    try {
      handle(*claim);
    } catch (const std::exception& e) {
      // Nothing escapes the worker's thread: the run's lease expires and
      // another worker (or this one) recovers it.
      report({.outcome = FleetRunReport::Outcome::abandoned,
              .scope = claim->scope,
              .run_id = claim->run_id,
              .agent = claim->agent,
              .attempt = claim->attempt,
              .taken_over = claim->taken_over,
              .error = e.what()});
    }
  }
}

void FleetWorker::handle(const Claim& claim) {
  hold(&claim);
  struct Unhold {
    FleetWorker* worker;
    ~Unhold() { worker->hold(nullptr); }
  } unhold{this};
  FleetRunReport out{.scope = claim.scope,
                     .run_id = claim.run_id,
                     .agent = claim.agent,
                     .attempt = claim.attempt,
                     .taken_over = claim.taken_over};
  const auto finish = [&](Outcome outcome, std::string error = {}) {
    out.outcome = outcome;
    out.error = std::move(error);
    report(std::move(out));
  };
  // A mark the queue refuses means another worker holds the run now.
  const auto marked = [&](bool ok, Outcome outcome) {
    finish(ok ? outcome : Outcome::lost, ok ? "" : "the lease was lost before the run could be marked");
  };

  // Ends the run without running it: done, with `error` as its result.
  const auto give_up = [&](const std::string& error) {
    try {
      marked(queue_->mark_done(options_.name, claim, error_json(error)), Outcome::done);
    } catch (const std::exception& e) {
      finish(Outcome::abandoned, e.what());
    }
  };
  const auto found = agents_.find(claim.agent);
  if (found == agents_.end()) return give_up("no agent named '" + claim.agent + "' on worker " + options_.name);
  if (options_.max_attempts > 0 && claim.attempt > options_.max_attempts) {
    return give_up("claimed " + std::to_string(claim.attempt) + " times (max_attempts " +
                   std::to_string(options_.max_attempts) + "): its workers died or its end could not be stored");
  }
  const Agent& agent = *found->second;
  RunContext ctx = base_;
  ctx.scope = claim.scope;
  ctx.budget = std::make_shared<Budget>(base_.budget ? base_.budget->limits() : BudgetLimits{});

  std::optional<RunHandle> run;
  try {
    const std::optional<RunState> stored = state::load_run(*ctx.store, ctx.scope, claim.run_id);
    if (!stored) {
      run.emplace(agent.start(claim.task, ctx, {.run_id = claim.run_id}));
    } else if (stored->phase == Phase::suspended) {
      // No decisions: none were given, or an earlier claim took them (the
      // queue hands them to one claim; this may be the run's next
      // suspension, whose calls can reuse their ids). Asked for again.
      if (!claim.decisions) {
        marked(queue_->mark_suspended(options_.name, claim), Outcome::suspended);
        return;
      }
      Decisions decisions;
      try {
        decisions = decisions_from_json(*claim.decisions);
        run.emplace(agent.start_resume(claim.run_id, std::move(decisions), ctx));
      } catch (const Error& e) {
        // Decisions that do not fit (InvalidDecision, unreadable JSON): nothing
        // ran, and the run waits for decisions again.
        if (e.code() != ErrorCode::invalid_argument) throw;
        marked(queue_->mark_suspended(options_.name, claim), Outcome::suspended);
        return;
      }
    } else {
      // Mid-run (its worker died or stopped) or already ended: recover
      // continues it from the checkpoint, or hands back its end.
      run.emplace(agent.start_recover(claim.run_id, ctx));
    }
  } catch (const state::StoreError& e) {
    finish(Outcome::abandoned, e.what());  // the lease expires and another worker tries
    return;
  } catch (const Error& e) {
    // Another process advanced the run after it was loaded here (a holder
    // paused past its lease): the run is not over. It goes back to the
    // queue; the next claim continues it from the store.
    if (e.code() != ErrorCode::aborted && e.code() != ErrorCode::already_exists) return give_up(e.what());
    try {
      marked(queue_->release(options_.name, claim), Outcome::released);
    } catch (const std::exception& released) {
      finish(Outcome::abandoned, released.what());
    }
    return;
  } catch (const std::exception& e) {
    return give_up(e.what());
  }

  const auto slice = std::min<std::chrono::milliseconds>(options_.heartbeat, std::chrono::milliseconds(100));
  while (!run->poll()) {
    if (stopping_) {
      run.reset();  // the run stays at its last checkpoint
      try {
        marked(queue_->release(options_.name, claim), Outcome::released);
      } catch (const std::exception& e) {
        finish(Outcome::abandoned, e.what());
      }
      return;
    }
    if (lease_lost()) {
      run.reset();
      finish(Outcome::lost, "the lease was lost while the run advanced");
      return;
    }
    run->wait_ready(slice);
  }
  RunResult result = run->wait();
  run.reset();
  // The store is the truth: a run whose end it does not hold (a checkpoint
  // was refused or its outcome is unknown, so the run stopped `failed`
  // there, or its end save failed) did not end. It goes back to the queue
  // and is recovered from its last checkpoint, whose ledger runs no call
  // again; a checkpoint taken over by another worker fails the fence.
  std::string unstored;
  try {
    if (!detail::end_is_stored(*ctx.store, ctx.scope, claim.run_id, result)) {
      unstored = "the run's end is not in the store";
      if (result.failure) unstored += " (" + result.failure->message + ")";
    }
  } catch (const std::exception& e) {
    out.result = std::move(result);
    return finish(Outcome::abandoned, e.what());
  }
  if (!unstored.empty()) {
    out.result = std::move(result);
    try {
      const bool ok = queue_->release(options_.name, claim);
      return finish(ok ? Outcome::retried : Outcome::lost, ok ? unstored : "the lease was lost: " + unstored);
    } catch (const std::exception& e) {
      return finish(Outcome::abandoned, unstored + "; giving it back failed: " + e.what());
    }
  }
  try {
    const bool suspended = result.stop_reason == StopReason::suspended;
    const bool ok = suspended ? queue_->mark_suspended(options_.name, claim)
                              : queue_->mark_done(options_.name, claim, result_json(result));
    out.result = std::move(result);
    marked(ok, suspended ? Outcome::suspended : Outcome::done);
  } catch (const std::exception& e) {
    out.result = std::move(result);
    finish(Outcome::abandoned, e.what());
  }
}

}  // namespace agentkit
