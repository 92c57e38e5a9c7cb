#include <agentkit/agent.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <agentkit/cognition/react.h>
#include <agentkit/errors.h>
#include <agentkit/function_tool.h>
#include <agentkit/detail/enum_table.h>
#include <agentkit/json.h>
#include <agentkit/session.h>
#include <agentkit/state/ledger.h>
#include <agentkit/state/store.h>

namespace agentkit {
namespace {

constexpr EnumValue<Phase> kPhases[] = {
    {Phase::ask_model, "ask_model"}, {Phase::act, "act"}, {Phase::suspended, "suspended"}, {Phase::done, "done"}};

template <class E>
E parse_enum(std::optional<E> value, const std::string& text, const char* what) {
  if (!value) throw Error(ErrorCode::invalid_argument, std::string("run state: unknown ") + what + " '" + text + "'");
  return *value;
}

// The code a stop reason implies when nothing more specific is known (a
// document written before codes were).
ErrorCode default_code(StopReason reason) noexcept {
  switch (reason) {
    case StopReason::budget_exhausted:
    case StopReason::max_iterations: return ErrorCode::budget_exhausted;
    case StopReason::cancelled: return ErrorCode::cancelled;
    default: return ErrorCode::internal;
  }
}

}  // namespace

std::string_view to_string(Phase phase) noexcept { return detail::enum_text(kPhases, phase); }

std::vector<ToolCall> RunState::pending_calls() const {
  std::vector<ToolCall> calls;
  for (const auto& call : batch) {
    if (std::find(pending.begin(), pending.end(), call.id) != pending.end()) calls.push_back(call);
  }
  return calls;
}

namespace {

Json messages_json(const std::vector<Message>& messages, std::size_t from) {
  Json out = Json::array();
  for (std::size_t i = from; i < messages.size(); ++i) out.push_back(agentkit::to_json(messages[i]));
  return out;
}

// The state as a document whose "history" is `history_json`.
Json document(const RunState& s, Json history_json) {
  Json batch_json = Json::array();
  for (const auto& c : s.batch) batch_json.push_back(agentkit::to_json(c));
  Json outcomes_json = Json::array();
  for (const auto& o : s.outcomes) {
    if (!o) {
      outcomes_json.push_back(nullptr);
      continue;
    }
    Json outcome = {{"text", o->text}, {"is_error", o->is_error}, {"outcome", to_string(o->outcome)}};
    if (!o->parts.empty()) {
      Json parts = Json::array();
      for (const auto& part : o->parts) parts.push_back(agentkit::to_json(part));
      outcome["parts"] = std::move(parts);
    }
    outcomes_json.push_back(std::move(outcome));
  }
  Json doc = {{"version", RunState::kVersion},
               {"run_id", s.run_id},
               {"agent", s.agent},
               {"task", s.task},
               {"phase", to_string(s.phase)},
               {"history", std::move(history_json)},
               {"iterations", s.iterations},
               {"tool_calls", s.tool_calls},
               {"cost_usd", s.cost_usd},
               {"repairs", s.repairs},
               {"batch", std::move(batch_json)},
               {"outcomes", std::move(outcomes_json)},
               {"pending", s.pending},
               {"approved", s.approved},
               {"proposed", s.proposed},
               {"session", s.session},
               {"session_base", s.session_base},
               {"usage", agentkit::to_json(s.usage)},
               {"stop_reason", to_string(s.stop_reason)},
               {"output", s.output}};
  write_failure(doc, s.failure);
  if (s.model_settings) doc["model_settings"] = s.model_settings->to_json();
  return doc;
}

}  // namespace

Json RunState::to_json() const {
  Json doc = document(*this, messages_json(history, 0));
  if (!signature.empty()) doc["signature"] = signature;
  // Text a host put in the state (a task, an edit) may not be UTF-8; what
  // came from models and tools already is (see the run loop).
  return sanitize_utf8(std::move(doc));
}

RunState RunState::from_json(const Json& j) {
  try {
    if (!j.is_object()) throw Error(ErrorCode::invalid_argument, "run state: expected an object");
    const int version = json_integer<int>(j.at("version"), "run state: version");
    if (version < 1) throw Error(ErrorCode::invalid_argument, "run state: version " + std::to_string(version) + " is not valid");
    if (version > kVersion) {
      throw Error(ErrorCode::invalid_argument, "run state: version " + std::to_string(version) +
                                  " was written by a newer agentkit (this one reads up to " +
                                  std::to_string(kVersion) + ")");
    }
    // A count: an int in range (never a float cast into one), not negative.
    const auto count = [&](const char* key) {
      const int n = json_integer<int>(j.at(key), std::string("run state: ") + key);
      if (n < 0) throw Error(ErrorCode::invalid_argument, std::string("run state: ") + key + " is negative");
      return n;
    };
    RunState s;
    s.run_id = j.at("run_id").get<std::string>();
    s.agent = j.at("agent").get<std::string>();
    s.task = j.at("task").get<std::string>();
    const auto phase = j.at("phase").get<std::string>();
    s.phase = parse_enum(detail::enum_parse(kPhases, phase), phase, "phase");
    for (const auto& m : j.at("history")) s.history.push_back(message_from_json(m));
    s.iterations = count("iterations");
    s.repairs = count("repairs");
    for (const auto& c : j.at("batch")) s.batch.push_back(tool_call_from_json(c));
    for (const auto& o : j.at("outcomes")) {
      if (o.is_null()) {
        s.outcomes.emplace_back();
      } else {
        const auto status = o.at("outcome").get<std::string>();
        CallOutcome outcome{o.at("text").get<std::string>(), o.at("is_error").get<bool>(),
                            parse_enum(call_status_from_string(status), status, "call outcome"), {}};
        if (auto parts = o.find("parts"); parts != o.end()) {
          for (const auto& part : *parts) outcome.parts.push_back(part_from_json(part));
        }
        s.outcomes.push_back(std::move(outcome));
      }
    }
    if (s.outcomes.size() != s.batch.size()) throw Error(ErrorCode::invalid_argument, "run state: outcomes do not match the batch");
    s.pending = j.at("pending").get<std::vector<std::string>>();
    if (version >= 2) {
      s.approved = j.at("approved").get<std::vector<std::string>>();
      if (j.contains("proposed")) s.proposed = j.at("proposed").get<std::map<std::string, Json>>();
      s.session = j.at("session").get<std::string>();
      s.session_base = json_integer<int>(j.at("session_base"), "run state: session_base");
      if (s.session_base < 0 || static_cast<std::size_t>(s.session_base) > s.history.size()) {
        throw Error(ErrorCode::invalid_argument, "run state: session_base is out of range");
      }
    }
    if (version >= 3) {
      s.tool_calls = count("tool_calls");
      s.cost_usd = j.at("cost_usd").get<double>();
    }
    s.usage = usage_from_json(j.at("usage"));
    const auto stop_reason = j.at("stop_reason").get<std::string>();
    s.stop_reason = parse_enum(stop_reason_from_string(stop_reason), stop_reason, "stop reason");
    s.output = j.at("output").get<std::string>();
    s.signature = j.value("signature", std::string());
    if (s.stop_reason != StopReason::answered && s.stop_reason != StopReason::suspended) {
      s.failure = read_failure(j, default_code(s.stop_reason), "run state");
    } else {
      static_cast<void>(j.at("error").get<std::string>());  // every version writes it
    }
    if (auto settings = j.find("model_settings"); settings != j.end()) {
      try {
        s.model_settings = ModelSettings::from_json(*settings);
      } catch (const ModelSettingsError& e) {
        throw Error(ErrorCode::invalid_argument, std::string("run state: ") + e.what());
      }
    }
    return s;
  } catch (const Json::exception& e) {
    throw Error(ErrorCode::invalid_argument, std::string("run state: malformed document: ") + e.what());
  }
}

RunResult RunHandle::wait(Observer* observer) {
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
  return driver_->result();
}

namespace {

// The names tool_choice may name: the tools the model is shown.
std::vector<std::string> advertised_tools(const Cognition& cognition) {
  std::vector<std::string> names;
  for (const ToolSpec* spec : cognition.tools().schemas()) names.push_back(spec->name);
  return names;
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
             AgentOptions options)
    : name_(std::move(name)),
      model_(std::move(model)),
      prompt_(std::move(prompt)),
      cognition_(cognition ? std::move(cognition) : std::make_shared<const cognition::ReActCognition>()),
      options_(std::move(options)) {
  const std::vector<std::string> tools = advertised_tools(*cognition_);
  options_.model_settings.validate(&tools);
}

// ---------------------------------------------------------------- durability

namespace {

std::string run_key(const Scope& scope, std::string_view run_id) {
  return state::scoped_key(scope, "runs/" + std::string(run_id));
}

std::string segment_prefix(const Scope& scope, std::string_view run_id) {
  return state::scoped_key(scope, "run-history/" + std::string(run_id) + "#");
}

std::string blob_prefix(const Scope& scope, std::string_view run_id) {
  return state::scoped_key(scope, "run-blobs/" + std::string(run_id) + "/");
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr)) {
    throw RunError("hashing a content blob failed (SHA-256)");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xF];
  }
  return hex;
}

// Calls `f` on every content part document of `messages` (a history).
template <class F>
void for_each_part(Json& messages, F&& f) {
  for (auto& m : messages) {
    const auto content = m.find("content");
    if (content == m.end() || !content->is_array()) continue;
    for (auto& part : *content) {
      if (part.is_object()) f(part);
    }
  }
}

// A cheap estimate of a message's JSON size: enough to decide when to seal.
std::size_t approximate_size(const Message& m) {
  std::size_t size = 64;
  for (const auto& part : m.content) size += 16 + part_bytes(part) * 4 / 3;
  for (const auto& call : m.tool_calls) {
    size += 32 + call.id.size() + call.name.size() +
            (call.arguments_text.empty() ? canonical_dump(call.arguments).size() : call.arguments_text.size());
  }
  return size;
}

// A stored run: its state (with the sealed history read back in), the
// document's version and where its sealed history lies.
struct StoredRun {
  RunState state;
  std::int64_t version = 0;
  SealedHistory sealed;
};

StoredRun read_run(state::Store& store, const Scope& scope, std::string_view run_id, const state::Entry& entry) {
  const auto unreadable = [&](const std::string& why) {
    return CheckpointError("checkpoint of run '" + std::string(run_id) + "' is unreadable: " + why);
  };
  try {
    Json doc = Json::parse(entry.value);
    StoredRun run{.version = entry.version};
    if (doc.is_object() && doc.contains("history_segments")) {
      const std::string prefix = segment_prefix(scope, run_id);
      Json history = Json::array();
      for (const auto& name : doc.at("history_segments")) {
        const std::string key = prefix + name.get<std::string>();
        auto segment = store.get(key);
        if (!segment) throw unreadable("its history segment '" + key + "' is missing");
        Json messages = Json::parse(segment->value);
        if (!messages.is_array()) throw unreadable("its history segment '" + key + "' is not a list of messages");
        for (auto& m : messages) history.push_back(std::move(m));
        run.sealed.segments.push_back(name.get<std::string>());
      }
      run.sealed.messages = history.size();
      const auto sealed = json_integer<std::size_t>(doc.at("history_sealed"), "history_sealed");
      if (sealed != run.sealed.messages) {
        throw unreadable("its history segments hold " + std::to_string(run.sealed.messages) + " messages, not " +
                         std::to_string(sealed));
      }
      for (auto& m : doc.at("history")) history.push_back(std::move(m));
      doc["history"] = std::move(history);
      doc.erase("history_segments");
      doc.erase("history_sealed");
    }
    if (auto history = doc.find("history"); doc.is_object() && history != doc.end() && history->is_array()) {
      const std::string prefix = blob_prefix(scope, run_id);
      for_each_part(*history, [&](Json& part) {
        const auto blob = part.find("blob");
        if (blob == part.end()) return;
        const std::string key = prefix + (blob->is_string() ? blob->get<std::string>() : preview(*blob));
        auto stored = store.get(key);
        if (!stored) throw unreadable("its content blob '" + key + "' is missing");
        auto bytes = base64_decode(stored->value);
        if (!bytes || sha256_hex(*bytes) != blob->get<std::string>()) {
          throw unreadable("its content blob '" + key + "' does not match its SHA-256 hash (altered or corrupt)");
        }
        part.erase("blob");
        part["data"] = std::move(stored->value);
      });
    }
    run.state = RunState::from_json(doc);
    return run;
  } catch (const CheckpointError&) {
    throw;
  } catch (const Error& e) {
    throw unreadable(e.what());
  } catch (const Json::exception& e) {
    throw unreadable(e.what());
  }
}

std::optional<StoredRun> read_run(state::Store& store, const Scope& scope, std::string_view run_id) {
  auto entry = store.get(run_key(scope, run_id));
  if (!entry) return std::nullopt;
  return read_run(store, scope, run_id, *entry);
}

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
    if (state.phase == Phase::suspended) result_.suspended = Suspended{.pending = state.pending_calls()};
    result_.state = std::move(state);
  }
  bool poll() override { return true; }
  void wait() override {}
  bool done() const override { return true; }
  const RunResult& result() const override { return result_; }
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
  bool done() const override { return inner_->done(); }
  const RunResult& result() const override { return signed_ ? *signed_ : inner_->result(); }
  std::vector<Event> drain_events() override { return inner_->drain_events(); }
  void cancel() override { inner_->cancel(); }

 private:
  // Signs once, when the run is over (a driver is done only after a poll).
  void seal() {
    if (signed_ || !inner_->done()) return;
    signed_ = inner_->result();
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

// Every decision names a pending call, and every edit is a valid call of its
// tool: checked before anything runs or is saved.
void check_decisions(const RunState& state, const Decisions& decisions, const ToolRegistry& tools) {
  const std::vector<ToolCall> pending = state.pending_calls();
  for (const auto& entry : decisions) {
    const std::string& id = entry.first;  // not a structured binding: clang 14 cannot capture one
    const Decision& decision = entry.second;
    auto call = std::find_if(pending.begin(), pending.end(), [&](const ToolCall& c) { return c.id == id; });
    if (call == pending.end()) {
      std::vector<std::string> ids;
      for (const auto& c : pending) ids.push_back(c.id);
      throw InvalidDecision(id, "no such call is pending in run '" + state.run_id + "' (pending: " + quoted_list(ids) +
                                    ")");
    }
    if (decision.kind != Decision::Kind::edit) continue;
    ToolPtr tool = tools.find(call->name);
    if (!tool) throw InvalidDecision(id, "its tool '" + call->name + "' is not registered");
    try {
      tool->check_arguments(decision.arguments);
    } catch (const ToolArgumentError& e) {
      throw InvalidDecision(id, std::string("the edited arguments are not a valid call: ") + e.what());
    }
  }
}

// Continues a stored, suspended run from its checkpoint.
RunHandle resume_stored(const Agent& agent, StoredRun stored, Decisions decisions, RunContext& ctx) {
  check_decisions(stored.state, decisions, agent.cognition().tools());
  auto checkpoint = std::make_unique<Checkpoint>(ctx.store, ctx.scope, stored.state.run_id, stored.version,
                                                 std::move(stored.sealed));
  return handle_for(agent.cognition().drive(agent, std::move(stored.state), std::move(decisions), ctx,
                                            std::move(checkpoint)),
                    ctx);
}

void require_suspended(const StoredRun& stored) {
  if (stored.state.phase != Phase::suspended) {
    throw RunAlreadyResumed("run '" + stored.state.run_id + "' is not suspended (its checkpoint is at phase " +
                            phase_name(stored.state.phase) + "): it was already resumed");
  }
}

}  // namespace

Checkpoint::Checkpoint(std::shared_ptr<state::Store> store, const Scope& scope, std::string run_id,
                       std::int64_t version, SealedHistory sealed)
    : store_(std::move(store)),
      key_(run_key(scope, run_id)),
      segment_prefix_(segment_prefix(scope, run_id)),
      blob_prefix_(blob_prefix(scope, run_id)),
      writer_(RunContext::new_id("w")),
      run_id_(std::move(run_id)),
      version_(version),
      continued_(version != 0),
      sealed_(std::move(sealed)),
      ledger_(std::make_shared<state::StoreLedger>(store_, state::scoped_key(scope, "ledger/" + run_id_ + "/"))) {}

bool Checkpoint::save(const RunState& state) {
  SealedHistory sealed = sealed_;
  // History only grows; should it ever shrink, it is stored whole again.
  if (state.history.size() < sealed.messages) sealed = {};
  std::size_t unsealed = 0;
  for (std::size_t i = sealed.messages; i < state.history.size(); ++i) unsealed += approximate_size(state.history[i]);
  Json tail = messages_json(state.history, sealed.messages);
  store_blobs(tail);
  if (unsealed > kSealBytes) {
    // Written under a name only this writer uses, before the document that
    // lists it: a crash or a lost race leaves an unlisted segment behind,
    // never a listed one that is missing or overwritten.
    char seq[24];
    std::snprintf(seq, sizeof seq, "%08zu-", sealed.segments.size());
    std::string name = seq + writer_;
    store_->put(segment_prefix_ + name, canonical_dump(tail));
    sealed.segments.push_back(std::move(name));
    sealed.messages = state.history.size();
    tail = Json::array();
  }
  Json doc = document(state, std::move(tail));
  if (!sealed.segments.empty()) {
    doc["history_segments"] = sealed.segments;
    doc["history_sealed"] = sealed.messages;
  }
  auto written = store_->compare_and_set(key_, version_, canonical_dump(doc));
  if (!written) return false;
  version_ = *written;
  sealed_ = std::move(sealed);
  return true;
}

// Moves each binary part over kBlobBytes out of `messages` into a blob
// (written once per writer: it is content-addressed), leaving its hash.
void Checkpoint::store_blobs(Json& messages) {
  for_each_part(messages, [&](Json& part) {
    const auto data = part.find("data");
    if (data == part.end() || !data->is_string() || data->get_ref<const std::string&>().size() < kBlobBytes * 4 / 3) {
      return;
    }
    auto bytes = base64_decode(data->get_ref<const std::string&>());
    if (!bytes) return;  // to_json wrote it: cannot happen; kept inline if it did
    const std::string hash = sha256_hex(*bytes);
    const std::string key = blob_prefix_ + hash;
    if (!blobs_.contains(key)) {
      store_->put(key, data->get<std::string>());
      blobs_.insert(key);
    }
    part.erase("data");
    part["blob"] = hash;
  });
}

std::shared_ptr<const CallLedger> Checkpoint::ledger() const noexcept { return ledger_; }

void Checkpoint::tidy() const {
  ledger_->clear();
  if (!continued_) return;  // a run written by this process alone leaves no strays
  for (const auto& [key, entry] : store_->list(segment_prefix_)) {
    const std::string name = key.substr(segment_prefix_.size());
    if (name.find('#') != std::string::npos) continue;  // a run whose id extends this one's with '#'
    if (std::find(sealed_.segments.begin(), sealed_.segments.end(), name) == sealed_.segments.end()) {
      store_->erase(key);
    }
  }
}

std::optional<RunState> load_run(state::Store& store, const Scope& scope, std::string_view run_id) {
  auto run = read_run(store, scope, run_id);
  if (!run) return std::nullopt;
  return std::move(run->state);
}

void charge_spent(Budget& budget, const RunState& state) {
  for (int i = 0; i < state.iterations; ++i) budget.charge_model_step();
  budget.charge_tool_calls(state.tool_calls);
  budget.charge_tokens(state.usage);
  budget.charge_cost(state.cost_usd);
}

double Pricing::cost(const Usage& usage) const noexcept {
  return (static_cast<double>(usage.input_tokens) * input_usd_per_mtok +
          static_cast<double>(usage.output_tokens) * output_usd_per_mtok) /
         1e6;
}

std::vector<std::string> interrupted_runs(state::Store& store, const Scope& scope) {
  std::vector<std::string> ids;
  const std::string prefix = run_key(scope, "");
  for (const auto& [key, entry] : store.list(prefix)) {
    const std::string id = key.substr(prefix.size());
    const Phase phase = read_run(store, scope, id, entry).state.phase;
    if (phase == Phase::ask_model || phase == Phase::act) ids.push_back(id);
  }
  return ids;
}

// ---------------------------------------------------------------- Agent

RunHandle Agent::start(std::string task, RunContext& ctx, RunOptions options) const {
  check_state_key(ctx);
  RunState state;
  state.run_id = options.run_id.empty() ? RunContext::new_id("run") : std::move(options.run_id);
  state.task = sanitize_utf8(std::move(task));
  if (!options.model_settings.empty()) {
    const std::vector<std::string> tools = advertised_tools(*cognition_);
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
  return handle_for(cognition_->drive(*this, std::move(state), {}, ctx, std::move(checkpoint)), ctx);
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
    check_decisions(state, decisions, cognition_->tools());
    state.signature.clear();  // the run moves on; its next result is signed afresh
    return handle_for(cognition_->drive(*this, std::move(state), std::move(decisions), ctx, nullptr), ctx);
  }
  // The stored checkpoint is authoritative; the state handed in only names it
  // and must agree with it.
  auto stored = read_run(*ctx.store, ctx.scope, state.run_id);
  if (!stored) {
    throw RunNotFound("resume: no checkpoint for run '" + state.run_id + "' in scope " + ctx.scope.key() +
                      "; with a store, only a stored run is resumed");
  }
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
  auto stored = read_run(store_of(ctx, "resume by run id"), ctx.scope, run_id);
  if (!stored) throw RunNotFound("no checkpoint for run '" + std::string(run_id) + "' in scope " + ctx.scope.key());
  require_suspended(*stored);
  return resume_stored(*this, *std::move(stored), std::move(decisions), ctx);
}

RunResult Agent::resume(std::string_view run_id, Decisions decisions, RunContext& ctx) const {
  return start_resume(run_id, std::move(decisions), ctx).wait(ctx.observer.get());
}

RunHandle Agent::start_recover(std::string_view run_id, RunContext& ctx) const {
  check_state_key(ctx);
  auto stored = read_run(store_of(ctx, "recover"), ctx.scope, run_id);
  if (!stored) throw RunNotFound("no checkpoint for run '" + std::string(run_id) + "' in scope " + ctx.scope.key());
  if (stored->state.phase == Phase::suspended || stored->state.phase == Phase::done) {
    return handle_for(std::make_unique<SettledDriver>(std::move(stored->state)), ctx);
  }
  auto checkpoint = std::make_unique<Checkpoint>(ctx.store, ctx.scope, stored->state.run_id, stored->version,
                                                 std::move(stored->sealed));
  return handle_for(cognition_->drive(*this, std::move(stored->state), {}, ctx, std::move(checkpoint)), ctx);
}

RunResult Agent::recover(std::string_view run_id, RunContext& ctx) const {
  return start_recover(run_id, ctx).wait(ctx.observer.get());
}

std::string render_result(const RunResult& result) {
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
  return tool(options.name)
      .description(options.description)
      .side_effecting(*options.side_effecting)
      .params(param("task", "the sub-task / goal to run"))
      .fn([agent, render](const std::string& task, RunContext& ctx) {
        RunContext child = ctx.child();
        RunResult result;
        if (ctx.store && !ctx.correlation_id.empty() && !ctx.call_key.empty()) {
          // Durable: the sub-run's id follows from the call, so when a
          // recovered parent runs this call again, the sub-run is recovered
          // (or its result returned) instead of started over.
          const std::string id = ctx.correlation_id + "/" + ctx.call_key;
          result = load_run(*ctx.store, ctx.scope, id) ? agent->recover(id, child)
                                                       : agent->run(task, child, {.run_id = id});
        } else {
          result = agent->run(task, child);
        }
        if (result.stop_reason == StopReason::suspended) {
          throw Error(ErrorCode::unimplemented, "sub-agent '" + agent->name() +
                                                    "' suspended awaiting approval; approve its calls in its own run");
        }
        return render(result);
      });
}

}  // namespace agentkit
