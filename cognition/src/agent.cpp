#include <agentkit/agent.h>

#include <algorithm>
#include <stdexcept>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <agentkit/cognition/react.h>
#include <agentkit/errors.h>
#include <agentkit/function_tool.h>
#include <agentkit/json.h>
#include <agentkit/session.h>
#include <agentkit/state/keys.h>
#include <agentkit/state/store.h>
#include <agentkit/workflow.h>

#include "sub_run.h"

namespace agentkit {

void RunHandle::drive(Observer* observer) {
  const auto deliver = [&] {
    for (const auto& event : driver_->drain_events()) {
      if (observer) observer->on_event(event);
    }
  };
  while (!driver_->poll()) {
    deliver();
    driver_->wait();
  }
  driver_->wait();  // a durable run's end is in its store once wait() returns
  deliver();
}

RunResult RunHandle::wait(Observer* observer) & {
  drive(observer);
  return driver_->result();
}

RunResult RunHandle::wait(Observer* observer) && {
  if (!observer) driver_->drop_events();  // a temporary: no one drains it after
  drive(observer);
  return driver_->take_result();
}

namespace {

// The names tool_choice may name: the tools the model is shown.
std::vector<std::string> advertised_tools(const Cognition& cognition, const std::vector<Handoff>& handoffs) {
  std::vector<std::string> names;
  for (const ToolSpec* spec : cognition.tools().schemas()) names.push_back(spec->name);
  for (const Handoff& h : handoffs) names.push_back(handoff_tool_name(h.agent->name()));
  return names;
}

// Every agent of the handoff graph under `agent`, itself first.
void collect_graph(const Agent& agent, std::vector<const Agent*>& seen) {
  if (std::find(seen.begin(), seen.end(), &agent) != seen.end()) return;
  seen.push_back(&agent);
  for (const Handoff& h : agent.options().handoffs) collect_graph(*h.agent, seen);
}

// The handoffs' checks (see AgentOptions::handoffs).
void check_handoffs(const std::string& name, const Cognition& cognition, const std::vector<Handoff>& handoffs) {
  const std::string where = "agent '" + name + "': ";
  std::vector<const Agent*> graph;
  for (const Handoff& h : handoffs) {
    if (!h.agent) throw ToolDefinitionError(where + "a handoff has no agent");
    const std::string tool = handoff_tool_name(h.agent->name());
    const bool valid = tool.size() <= 64 && !h.agent->name().empty() &&
                       h.agent->name().find_first_not_of(
                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == std::string::npos;
    if (!valid) {
      throw ToolDefinitionError(where + "the handoff to '" + h.agent->name() + "' makes the tool name '" + tool +
                                "', which is invalid: an agent one hands off to needs a name of 1 to 52 letters, "
                                "digits, '_' or '-'");
    }
    if (h.agent->name() == name) throw ToolDefinitionError(where + "an agent cannot hand off to an agent of its own name");
    for (const Handoff& other : handoffs) {
      if (&other == &h) break;
      if (other.agent->name() == h.agent->name()) {
        throw ToolDefinitionError(where + "two handoffs to agent '" + h.agent->name() + "'");
      }
    }
    if (cognition.tools().find(tool)) {
      throw ToolDefinitionError(where + "its tool '" + tool + "' clashes with the handoff to '" + h.agent->name() + "'");
    }
    collect_graph(*h.agent, graph);
  }
  for (std::size_t i = 0; i < graph.size(); ++i) {
    if (graph[i]->name() == name) {
      throw ToolDefinitionError(where + "its handoff graph holds another agent named '" + name +
                                "' (names in a handoff graph are unique; a target cannot hand back)");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (graph[j]->name() == graph[i]->name()) {
        throw ToolDefinitionError(where + "its handoff graph holds two different agents named '" + graph[i]->name() +
                                  "' (names in a handoff graph are unique)");
      }
    }
  }
}

}  // namespace

Schema close_objects(Schema schema) {
  if (!schema.is_object()) return schema;
  if (schema.contains("properties") && !schema.contains("additionalProperties")) schema["additionalProperties"] = false;
  for (const char* key : {"properties", "$defs", "definitions"}) {  // name -> schema
    if (auto it = schema.find(key); it != schema.end() && it->is_object()) {
      for (auto& [name, sub] : it->items()) sub = close_objects(std::move(sub));
    }
  }
  for (const char* key : {"items", "additionalProperties"}) {
    if (auto it = schema.find(key); it != schema.end()) *it = close_objects(std::move(*it));
  }
  for (const char* key : {"anyOf", "oneOf", "allOf", "prefixItems"}) {
    if (auto it = schema.find(key); it != schema.end() && it->is_array()) {
      for (auto& sub : *it) sub = close_objects(std::move(sub));
    }
  }
  return schema;
}

Agent::Agent(std::string name, std::string model, std::string prompt, std::shared_ptr<const Cognition> cognition,
             AgentOptions options) {
  auto data = std::make_shared<Data>(
      Data{std::move(name), std::move(model), std::move(prompt),
           cognition ? std::move(cognition) : std::make_shared<const cognition::ReActCognition>(), std::move(options)});
  check_handoffs(data->name, *data->cognition, data->options.handoffs);
  const std::vector<std::string> tools = advertised_tools(*data->cognition, data->options.handoffs);
  data->options.model_settings.validate(&tools);
  if (auto& policy = data->options.context_policy) {
    if (policy->max_tokens == 0) {
      throw std::invalid_argument("agent '" + data->name + "': context_policy.max_tokens must be above 0");
    }
    if (policy->target_tokens == 0) policy->target_tokens = policy->max_tokens / 2;
    if (policy->target_tokens >= policy->max_tokens) {
      throw std::invalid_argument("agent '" + data->name + "': context_policy.target_tokens (" +
                                  std::to_string(policy->target_tokens) + ") must be below max_tokens (" +
                                  std::to_string(policy->max_tokens) + ")");
    }
    if (!policy->estimate) policy->estimate = estimate_tokens;
  }
  data_ = std::move(data);
}

std::string handoff_tool_name(std::string_view agent) { return "transfer_to_" + std::string(agent); }

const Agent* Agent::find_agent(std::string_view name) const {
  std::vector<const Agent*> graph;
  collect_graph(*this, graph);
  for (const Agent* agent : graph) {
    if (agent->name() == name) return agent;
  }
  return nullptr;
}

std::size_t estimate_tokens(const Message& message) {
  std::size_t bytes = 0, tokens = 4;
  for (const auto& part : message.content) {
    if (const auto* text = std::get_if<TextPart>(&part)) {
      bytes += text->text.size();
    } else if (const auto* reasoning = std::get_if<ReasoningPart>(&part)) {
      bytes += reasoning->text.size();
    } else if (const auto* refusal = std::get_if<RefusalPart>(&part)) {
      bytes += refusal->text.size();
    } else {
      tokens += 512;  // an image or a file
    }
  }
  for (const auto& call : message.tool_calls) {
    bytes += call.name.size() + call.id.size() +
             (call.arguments_text.empty() ? call.arguments.dump(-1, ' ', false, Json::error_handler_t::replace).size()
                                          : call.arguments_text.size());
  }
  bytes += message.tool_call_id.size() + message.tool_name.size();
  return tokens + bytes / 4;
}

// ---------------------------------------------------------------- durability

namespace {

std::string phase_name(Phase phase) { return std::string(to_string(phase)); }

// A run that is already suspended or over, handed back as it stands.
class SettledDriver final : public RunHandle::Driver {
 public:
  explicit SettledDriver(RunState state) {
    result_.stop_reason = state.stop_reason;
    result_.output = state.output;
    result_.failure = state.failure;
    result_.usage = state.usage;
    result_.iterations = state.iterations;
    result_.agent = state.handoff.happened() ? state.handoff.agent : state.agent;
    if (state.phase == Phase::suspended) result_.suspended = suspension_of(state);
    result_.state = std::move(state);
  }
  bool poll() override { return true; }
  void wait() override {}
  bool done() const override { return true; }
  const RunResult& result() const override { return result_; }
  RunResult take_result() override { return std::move(result_); }
  std::vector<Event> drain_events() override { return {}; }
  void cancel() override {}

 private:
  RunResult result_;
};

state::Store& store_of(const RunContext& ctx, const char* what) {
  if (!ctx.store) throw Error(ErrorCode::invalid_argument, std::string(what) + " needs a store on the context (ctx.store)");
  return *ctx.store;
}

// ---------------------------------------------------------------- integrity

constexpr std::string_view kSignatureScheme = "hmac-sha256:";

void check_state_key(const RunContext& ctx) {
  if (!ctx.state_key.empty() && ctx.state_key.size() < RunContext::kMinStateKeyBytes) {
    throw Error(ErrorCode::invalid_argument, "ctx.state_key is " + std::to_string(ctx.state_key.size()) +
                                " bytes; a state key needs at least " +
                                std::to_string(RunContext::kMinStateKeyBytes) + " random bytes");
  }
}

// The state's document as a signature covers it and a comparison reads it:
// everything but the signature.
Json unsigned_document(const RunState& state) {
  Json doc = state.to_json();
  doc.erase("signature");
  return doc;
}

std::string signature_of(const RunState& state, std::string_view key) {
  // Labelled, so a key that also signs something else never signs these bytes there.
  const std::string text = "agentkit.RunState\n" + canonical_dump(unsigned_document(state));
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(text.data()),
            text.size(), mac, &length)) {
    throw RunError("run '" + state.run_id + "': signing its state failed (HMAC-SHA256)");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string signature(kSignatureScheme);
  for (unsigned int i = 0; i < length; ++i) {
    signature += kHex[mac[i] >> 4];
    signature += kHex[mac[i] & 0xF];
  }
  return signature;
}

// A state handed in without a store: it must carry the signature the
// context's key gives it.
void check_signature(const RunState& state, const RunContext& ctx) {
  const std::string where = "resume: the state of run '" + state.run_id + "'";
  if (ctx.state_key.empty()) {
    throw StateUnsigned(where + " cannot be checked: the context has neither a store (ctx.store) to compare it with "
                                "nor a state key (ctx.state_key) to verify its signature");
  }
  if (state.signature.empty()) {
    throw StateUnsigned(where + " carries no signature; resume the RunResult::state a run under this state key "
                                "returned");
  }
  const std::string expected = signature_of(state, ctx.state_key);
  if (state.signature.size() != expected.size() ||
      CRYPTO_memcmp(state.signature.data(), expected.data(), expected.size()) != 0) {
    throw StateTampered(where + " does not match its signature: it was altered after it was signed, or signed "
                                "with another key");
  }
}

// The top-level fields in which two states differ, by name.
std::vector<std::string> differing_fields(const RunState& a, const RunState& b) {
  const Json x = unsigned_document(a);
  const Json y = unsigned_document(b);
  std::vector<std::string> fields;
  for (auto it = x.begin(); it != x.end(); ++it) {
    if (!y.contains(it.key()) || y.at(it.key()) != *it) fields.push_back(it.key());
  }
  for (auto it = y.begin(); it != y.end(); ++it) {
    if (!x.contains(it.key())) fields.push_back(it.key());
  }
  return fields;
}

// Hands the host a signed RunResult::state (RunContext::state_key).
class SigningDriver final : public RunHandle::Driver {
 public:
  SigningDriver(std::unique_ptr<RunHandle::Driver> inner, std::string key)
      : inner_(std::move(inner)), key_(std::move(key)) {
    seal();  // a settled run is done from the start
  }

  bool poll() override {
    const bool done = inner_->poll();
    seal();
    return done;
  }
  void wait() override { inner_->wait(); }
  void wait_ready(std::chrono::milliseconds max) override { inner_->wait_ready(max); }
  bool done() const override { return inner_->done(); }
  const RunResult& result() const override { return signed_ ? *signed_ : inner_->result(); }
  RunResult take_result() override { return signed_ ? std::move(*signed_) : inner_->take_result(); }
  std::vector<Event> drain_events() override { return inner_->drain_events(); }
  void drop_events() override { inner_->drop_events(); }
  void cancel() override { inner_->cancel(); }

 private:
  // Signs once, when the run is over (a driver is done only after a poll).
  void seal() {
    if (signed_ || !inner_->done()) return;
    signed_ = inner_->take_result();  // the inner driver is done and never asked again
    signed_->state.signature = signature_of(signed_->state, key_);
  }

  std::unique_ptr<RunHandle::Driver> inner_;
  std::string key_;
  std::optional<RunResult> signed_;
};

RunHandle handle_for(std::unique_ptr<RunHandle::Driver> driver, const RunContext& ctx) {
  if (ctx.state_key.empty()) return RunHandle(std::move(driver));
  return RunHandle(std::make_unique<SigningDriver>(std::move(driver), ctx.state_key));
}

// The tools a suspended run's pending calls belong to: its active agent's
// (after a handoff), else the agent's. An active agent not in the graph
// fails the run as it starts (the engine says so); its decisions are
// checked against the agent's own tools meanwhile.
const ToolRegistry& tools_of(const Agent& agent, const RunState& state) {
  const Agent* active = state.handoff.happened() ? agent.find_agent(state.handoff.agent) : nullptr;
  return (active ? *active : agent).cognition().tools();
}

// Every decision names a pending call, and every edit is a valid call of its
// tool: checked before anything runs or is saved. A sub-agent's call
// ("<call id>/<its id>") is checked the same way in the sub-run's stored
// state, against the sub-agent's tools, when the store holds it; `prefix`
// qualifies the ids named in errors at that depth.
void check_decisions(const RunState& state, const Decisions& decisions, const Agent& agent, const RunContext& ctx,
                     const std::string& prefix = {}) {
  const ToolRegistry& tools = tools_of(agent, state);
  const std::vector<ToolCall> pending = state.pending_calls();
  const auto not_pending = [&](const std::string& id) {
    std::vector<std::string> ids;
    for (const auto& call : suspension_of(state).pending) ids.push_back(prefix + call.id);
    return InvalidDecision(prefix + id, "no such call is pending in run '" + state.run_id + "' (pending: " +
                                            quoted_list(ids) + ")");
  };
  std::set<std::string> sub_runs;  // calls whose sub-run's calls are decided
  for (const auto& entry : decisions) {
    const std::string& id = entry.first;  // not a structured binding: clang 14 cannot capture one
    const Decision& decision = entry.second;
    auto call = std::find_if(pending.begin(), pending.end(), [&](const ToolCall& c) { return c.id == id; });
    if (call == pending.end()) {
      const auto slash = id.find('/');
      const auto nested = slash == std::string::npos ? state.nested.end() : state.nested.find(id.substr(0, slash));
      if (nested == state.nested.end()) throw not_pending(id);
      const std::string inner = id.substr(slash + 1);
      const auto& calls = nested->second.pending;
      if (std::none_of(calls.begin(), calls.end(), [&](const ToolCall& c) { return c.id == inner; })) {
        throw not_pending(id);
      }
      sub_runs.insert(nested->first);
      continue;
    }
    if (state.nested.contains(id)) {
      throw InvalidDecision(prefix + id, "the call runs a sub-agent that awaits decisions on its own calls; decide "
                                         "those (their ids begin with '" + prefix + id + "/')");
    }
    if (decision.kind != Decision::Kind::edit) continue;
    ToolPtr tool = tools.find(call->name);
    if (!tool) throw InvalidDecision(prefix + id, "its tool '" + call->name + "' is not registered");
    try {
      tool->check_arguments(decision.arguments);
    } catch (const ToolArgumentError& e) {
      throw InvalidDecision(prefix + id, std::string("the edited arguments are not a valid call: ") + e.what());
    }
  }
  if (!ctx.store) return;
  for (const std::string& call_id : sub_runs) {
    const NestedSuspension& nested = state.nested.at(call_id);
    const auto call = std::find_if(pending.begin(), pending.end(), [&](const ToolCall& c) { return c.id == call_id; });
    const Agent* sub = detail::sub_agent(tools.find(call->name).get());
    auto stored = state::load_run(*ctx.store, ctx.scope, nested.run_id);
    // Elsewhere (a tool of another kind, a sub-run that moved on) the
    // sub-run's own resume checks them, inside the call.
    if (!sub || !stored || stored->phase != Phase::suspended || stored->iterations != nested.iterations) continue;
    check_decisions(*stored, detail::routed_decisions(decisions, call_id), *sub, ctx, prefix + call_id + "/");
  }
}

// Continues a stored, suspended run from its checkpoint.
RunHandle resume_stored(const Agent& agent, state::StoredRun stored, Decisions decisions, RunContext& ctx) {
  check_decisions(stored.state, decisions, agent, ctx);
  auto checkpoint = std::make_unique<Checkpoint>(ctx.store, ctx.scope, stored.state.run_id, stored.version,
                                                 std::move(stored.sealed));
  return handle_for(agent.cognition().drive(agent, std::move(stored.state), std::move(decisions), ctx,
                                            std::move(checkpoint)),
                    ctx);
}

// A run is resumed and recovered by the agent it started under
// (RunState::agent; a handoff's target is reached through it). Another
// agent would drive it with its own tools, approval rules and model, and
// its calls awaiting approval could run under another tool's rules.
void require_started_by(const Agent& agent, const RunState& state, std::string_view verb) {
  if (state.agent == agent.name()) return;
  throw Error(ErrorCode::invalid_argument, std::string(verb) + ": run '" + state.run_id + "' was started by agent '" +
                                               state.agent + "', not '" + agent.name() +
                                               "'; only that agent resumes or recovers it (nothing ran)");
}

void require_suspended(const state::StoredRun& stored) {
  if (stored.state.phase != Phase::suspended) {
    throw RunAlreadyResumed("run '" + stored.state.run_id + "' is not suspended (its checkpoint is at phase " +
                            phase_name(stored.state.phase) + "): it was already resumed");
  }
}

}  // namespace

double Pricing::cost(const Usage& usage) const noexcept {
  return (static_cast<double>(usage.input_tokens) * input_usd_per_mtok +
          static_cast<double>(usage.output_tokens) * output_usd_per_mtok) /
         1e6;
}

// ---------------------------------------------------------------- Agent

void Agent::check_model(const Model& model) const {
  const std::vector<const ToolSpec*> specs = data_->cognition->tools().schemas();
  model.check_schemas(specs, data_->options.output ? &data_->options.output->schema : nullptr);
}

RunHandle Agent::start(std::string task, RunContext& ctx, RunOptions options) const {
  check_state_key(ctx);
  RunState state;
  state.run_id = options.run_id.empty() ? RunContext::new_id("run") : std::move(options.run_id);
  state.task = sanitize_utf8(std::move(task));
  if (!options.model_settings.empty()) {
    const std::vector<std::string> tools = advertised_tools(*data_->cognition, data_->options.handoffs);
    options.model_settings.validate(&tools);
    state.model_settings = std::move(options.model_settings);
  }
  if (!options.session.empty()) {
    state.history = session_history(store_of(ctx, "a session"), ctx.scope, options.session);
    state.session = std::move(options.session);
    state.session_base = static_cast<int>(state.history.size());
  }
  state.history.push_back(Message::user(state.task));
  std::unique_ptr<Checkpoint> checkpoint;
  if (ctx.store) checkpoint = std::make_unique<Checkpoint>(ctx.store, ctx.scope, state.run_id, 0);
  return handle_for(data_->cognition->drive(*this, std::move(state), {}, ctx, std::move(checkpoint)), ctx);
}

RunResult Agent::run(std::string task, RunContext& ctx, RunOptions options) const {
  return start(std::move(task), ctx, std::move(options)).wait(ctx.observer.get());
}

RunHandle Agent::start_resume(RunState state, Decisions decisions, RunContext& ctx) const {
  check_state_key(ctx);
  if (state.phase != Phase::suspended) {
    throw Error(ErrorCode::invalid_argument, "resume: run '" + state.run_id + "' is not suspended (phase " +
                                phase_name(state.phase) + ")");
  }
  if (!ctx.store) {
    check_signature(state, ctx);
    require_started_by(*this, state, "resume");
    if (!state.nested.empty()) {
      throw Error(ErrorCode::invalid_argument,
                  "resume: run '" + state.run_id + "' awaits calls of a sub-agent whose run is in the store it ran "
                  "with; resume it with that store (ctx.store)");
    }
    check_decisions(state, decisions, *this, ctx);
    state.signature.clear();  // the run moves on; its next result is signed afresh
    return handle_for(data_->cognition->drive(*this, std::move(state), std::move(decisions), ctx, nullptr), ctx);
  }
  // The stored checkpoint is authoritative; the state handed in only names it
  // and must agree with it.
  auto stored = state::load_stored_run(*ctx.store, ctx.scope, state.run_id);
  if (!stored) {
    throw RunNotFound("resume: no checkpoint for run '" + state.run_id + "' in scope " + ctx.scope.key() +
                      "; with a store, only a stored run is resumed");
  }
  require_started_by(*this, stored->state, "resume");
  require_suspended(*stored);
  if (const auto fields = differing_fields(stored->state, state); !fields.empty()) {
    throw StateTampered("resume: the state handed in for run '" + state.run_id +
                        "' differs from its stored checkpoint in " + quoted_list(fields) + "; nothing ran");
  }
  return resume_stored(*this, *std::move(stored), std::move(decisions), ctx);
}

RunResult Agent::resume(RunState state, Decisions decisions, RunContext& ctx) const {
  return start_resume(std::move(state), std::move(decisions), ctx).wait(ctx.observer.get());
}

RunHandle Agent::start_resume(std::string_view run_id, Decisions decisions, RunContext& ctx) const {
  check_state_key(ctx);
  auto stored = state::load_stored_run(store_of(ctx, "resume by run id"), ctx.scope, run_id);
  if (!stored) throw RunNotFound("no checkpoint for run '" + std::string(run_id) + "' in scope " + ctx.scope.key());
  require_started_by(*this, stored->state, "resume");
  require_suspended(*stored);
  return resume_stored(*this, *std::move(stored), std::move(decisions), ctx);
}

RunResult Agent::resume(std::string_view run_id, Decisions decisions, RunContext& ctx) const {
  return start_resume(run_id, std::move(decisions), ctx).wait(ctx.observer.get());
}

RunHandle Agent::start_recover(std::string_view run_id, RunContext& ctx) const {
  check_state_key(ctx);
  auto stored = state::load_stored_run(store_of(ctx, "recover"), ctx.scope, run_id);
  if (!stored) throw RunNotFound("no checkpoint for run '" + std::string(run_id) + "' in scope " + ctx.scope.key());
  require_started_by(*this, stored->state, "recover");
  if (stored->state.phase == Phase::suspended || stored->state.phase == Phase::done) {
    return handle_for(std::make_unique<SettledDriver>(std::move(stored->state)), ctx);
  }
  auto checkpoint = std::make_unique<Checkpoint>(ctx.store, ctx.scope, stored->state.run_id, stored->version,
                                                 std::move(stored->sealed));
  return handle_for(data_->cognition->drive(*this, std::move(stored->state), {}, ctx, std::move(checkpoint)), ctx);
}

RunResult Agent::recover(std::string_view run_id, RunContext& ctx) const {
  return start_recover(run_id, ctx).wait(ctx.observer.get());
}

Suspended suspension_of(const RunState& state) {
  Suspended suspended;
  const std::string& agent = state.handoff.happened() ? state.handoff.agent : state.agent;
  for (const ToolCall& call : state.pending_calls()) {
    const auto nested = state.nested.find(call.id);
    if (nested == state.nested.end()) {
      suspended.pending.push_back(call);
      suspended.agents.push_back(agent);
      continue;
    }
    for (std::size_t i = 0; i < nested->second.pending.size(); ++i) {
      ToolCall& inner = suspended.pending.emplace_back(nested->second.pending[i]);
      inner.id = call.id + "/" + inner.id;
      suspended.agents.push_back(agent + "/" + nested->second.agents.at(i));
    }
  }
  return suspended;
}

namespace detail {

Error sub_run_error(std::string_view agent, const RunResult& result) {
  const bool suspended = result.stop_reason == StopReason::suspended;
  const ErrorCode code = result.failure ? result.failure->code
                         : suspended    ? ErrorCode::unimplemented
                                        : ErrorCode::internal;
  const std::string why = result.failure ? result.failure->message
                          : suspended    ? "it suspended awaiting approval, and its calls reach the parent run "
                                           "for a decision only when the run is durable (a store on the context)"
                                         : "it ended without an answer";
  return Error(code, "sub-agent '" + std::string(agent) + "' did not answer: " +
                         std::string(to_string(result.stop_reason)) + " [code " + std::string(to_string(code)) +
                         "]: " + why);
}

std::optional<ErrorCode> sub_run_code(std::string_view text) {
  constexpr std::string_view kOpen = " [code ";
  const auto open = text.find(kOpen);
  if (open == std::string_view::npos) return std::nullopt;
  const auto start = open + kOpen.size();
  const auto close = text.find(']', start);
  if (close == std::string_view::npos) return std::nullopt;
  return error_code_from_string(text.substr(start, close - start));
}

Decisions routed_decisions(const Decisions& decisions, std::string_view call_id) {
  const std::string prefix = std::string(call_id) + "/";
  Decisions routed;
  for (auto it = decisions.lower_bound(prefix); it != decisions.end() && it->first.starts_with(prefix); ++it) {
    routed.emplace(it->first.substr(prefix.size()), it->second);
  }
  return routed;
}

namespace {

// as_tool's tool: the function tool that runs the sub-agent, knowing it, so
// a resume can check decisions on the sub-agent's calls against its tools.
class AgentTool final : public Tool {
 public:
  AgentTool(ToolPtr inner, std::shared_ptr<const Agent> agent) : inner_(std::move(inner)), agent_(std::move(agent)) {}
  const ToolSpec& spec() const noexcept override { return inner_->spec(); }
  Json run(const Json& arguments, RunContext& ctx) const override { return inner_->run(arguments, ctx); }
  ToolOutput run_output(const Json& arguments, RunContext& ctx) const override {
    return inner_->run_output(arguments, ctx);
  }
  bool side_effecting_for(const Json& arguments) const override { return inner_->side_effecting_for(arguments); }
  void check_arguments(const Json& arguments) const override { inner_->check_arguments(arguments); }
  bool requires_approval_for(const Json& arguments, const RunContext& ctx) const override {
    return inner_->requires_approval_for(arguments, ctx);
  }
  // A durable sub-run is recovered by its id, never started over.
  bool reenterable() const noexcept override { return true; }
  const Agent& agent() const noexcept { return *agent_; }

 private:
  ToolPtr inner_;
  std::shared_ptr<const Agent> agent_;
};

}  // namespace

const Agent* sub_agent(const Tool* tool) {
  for (; tool; tool = tool->wrapped()) {
    if (const auto* agent_tool = dynamic_cast<const AgentTool*>(tool)) return &agent_tool->agent();
  }
  return nullptr;
}

bool end_is_stored(state::Store& store, const Scope& scope, std::string_view run_id, const RunResult& result) {
  const Phase expected = result.stop_reason == StopReason::suspended ? Phase::suspended : Phase::done;
  // The document's phase alone: its history segments need not be read.
  const auto entry = store.get(state::keys::run(scope, run_id));
  if (!entry) return false;
  const Json doc = Json::parse(entry->value, nullptr, /*allow_exceptions=*/false);
  return doc.is_object() && doc.value("phase", "") == to_string(expected);
}

}  // namespace detail

std::string render_result(const RunResult& result) {
  // A workflow's answer is already its terminal outputs ("name: output"
  // lines when there are several); its structured record is not the answer.
  if (workflow_result(result)) return result.output;
  if (result.structured.is_object() && !result.structured.empty()) {
    std::string lines;
    for (const auto& [key, value] : result.structured.items()) {
      lines += (lines.empty() ? "" : "\n") + key + ": " + (value.is_string() ? value.get<std::string>() : value.dump());
    }
    return lines;
  }
  if (!result.output.empty()) return result.output;
  return "sub-run ended: " + std::string(to_string(result.stop_reason)) +
         (result.failure ? " (" + result.failure->message + ")" : "");
}

ToolPtr as_tool(std::shared_ptr<const Agent> agent, AsToolOptions options) {
  if (!agent) throw ToolDefinitionError("as_tool: agent is null");
  if (!options.side_effecting) {
    throw ToolDefinitionError("as_tool('" + options.name +
                              "'): set AsToolOptions::side_effecting to true or false: whether the sub-agent changes "
                              "the world depends on its tools, and there is no safe default");
  }
  auto render = options.render ? options.render : Renderer(render_result);
  auto run = tool(options.name)
                 .description(options.description)
                 .side_effecting(*options.side_effecting)
                 .params(param("task", "the sub-task / goal to run"))
                 .fn([agent, render](const std::string& task, RunContext& ctx) {
                   RunContext child = ctx.child();
                   RunResult result;
                   const bool durable = ctx.store && !ctx.correlation_id.empty() && !ctx.call_key.empty();
                   if (durable) {
                     // The sub-run's id follows from the call, so when this call runs again (a
                     // recovered parent, a resumed one) the sub-run is recovered or resumed, or
                     // its result returned, instead of started over.
                     const std::string id = ctx.correlation_id + "/" + ctx.call_key;
                     // A sub-run the store failed under ended nowhere the parent can
                     // build on, and one another caller claimed first (a parent's earlier
                     // attempt still alive, or a second recovery) is not this attempt's to
                     // report on: either way the parent stops, and its recovery runs this
                     // call again, finding the sub-run where its store has it.
                     const auto interrupted = [&](ErrorCode code, const std::string& why) {
                       return RunInterrupted(code, "sub-agent '" + agent->name() + "' (run " + id + "): " + why);
                     };
                     try {
                       const auto stored = load_run(*ctx.store, ctx.scope, id);
                       const NestedSuspension* decided =
                           ctx.resuming && ctx.resuming->run_id == id ? ctx.resuming.get() : nullptr;
                       if (!stored) {
                         result = agent->run(task, child, {.run_id = id});
                       } else if (decided && stored->phase == Phase::suspended &&
                                  stored->iterations == decided->iterations) {
                         result = agent->resume(id, decided->decisions, child);
                       } else {
                         result = agent->recover(id, child);  // still suspended: it asks again
                       }
                       if (!detail::end_is_stored(*ctx.store, ctx.scope, id, result)) {
                         throw interrupted(ErrorCode::unavailable,
                                           "its end is not in the store" +
                                               (result.failure ? " (" + result.failure->message + ")" : std::string()));
                       }
                     } catch (const state::StoreError& e) {
                       throw interrupted(ErrorCode::unavailable, std::string("its store failed: ") + e.what());
                     } catch (const RunError& e) {
                       // Claimed first (RunAlreadyResumed), or created first by another
                       // attempt (a plain RunError: the id already exists).
                       if (e.code() != ErrorCode::aborted && e.code() != ErrorCode::already_exists) throw;
                       throw interrupted(ErrorCode::aborted, e.what());
                     }
                     if (result.stop_reason == StopReason::suspended && result.suspended) {
                       // Its calls surface on the parent run, which routes their decisions back.
                       auto nested = std::make_shared<NestedSuspension>();
                       nested->run_id = id;
                       nested->iterations = result.state.iterations;
                       nested->pending = std::move(result.suspended->pending);
                       nested->agents = std::move(result.suspended->agents);
                       throw CallSuspended(std::move(nested));
                     }
                   } else {
                     result = agent->run(task, child);
                   }
                   // A sub-run that did not answer is the call's error, never a
                   // result that reads like one: the parent (a model, a workflow)
                   // must not take "failed" text for the sub-agent's answer.
                   if (result.stop_reason != StopReason::answered) {
                     throw detail::sub_run_error(agent->name(), result);
                   }
                   return render(result);
                 });
  return std::make_shared<detail::AgentTool>(std::move(run), std::move(agent));
}

}  // namespace agentkit
