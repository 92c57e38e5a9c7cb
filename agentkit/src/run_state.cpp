#include <agentkit/run_state.h>
#include <agentkit/trace.h>

#include <algorithm>

#include <agentkit/detail/enum_table.h>
#include <agentkit/detail/run_state_document.h>
#include <agentkit/errors.h>
#include <agentkit/json.h>

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
    case StopReason::guardrail_tripped: return ErrorCode::permission_denied;
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

namespace detail {

Json messages_json(const std::vector<Message>& messages, std::size_t from) {
  Json out = Json::array();
  for (std::size_t i = from; i < messages.size(); ++i) out.push_back(agentkit::to_json(messages[i]));
  return out;
}

Json run_state_document(const RunState& s, Json history_json) {
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
  if (!s.trace_id.empty()) doc["trace"] = {{"trace_id", s.trace_id}, {"span_id", s.trace_span_id}};
  if (s.window.compacted()) {
    doc["window"] = {{"from", s.window.from}, {"summary", s.window.summary}, {"compactions", s.window.compactions}};
  }
  if (s.handoff.happened()) {
    doc["handoff"] = {
        {"agent", s.handoff.agent}, {"from", s.handoff.from}, {"at", s.handoff.at}, {"handoffs", s.handoff.handoffs}};
  }
  if (!s.nested.empty()) {
    Json nested = Json::object();
    for (const auto& [call_id, n] : s.nested) {
      Json calls = Json::array();
      for (const auto& c : n.pending) calls.push_back(agentkit::to_json(c));
      Json decisions = Json::object();
      for (const auto& [id, d] : n.decisions) {
        static constexpr const char* kKinds[] = {"approve", "reject", "edit"};
        Json decision = {{"kind", kKinds[static_cast<int>(d.kind)]}};
        if (!d.message.empty()) decision["message"] = d.message;
        if (d.kind == Decision::Kind::edit) decision["arguments"] = d.arguments;
        decisions[id] = std::move(decision);
      }
      nested[call_id] = {{"run_id", n.run_id}, {"iterations", n.iterations}, {"pending", std::move(calls)},
                         {"agents", n.agents},  {"decided", n.decided},       {"decisions", std::move(decisions)}};
    }
    doc["nested"] = std::move(nested);
  }
  return doc;
}

}  // namespace detail

Json RunState::to_json() const {
  Json doc = detail::run_state_document(*this, detail::messages_json(history, 0));
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
    // The batch's ids name one call each (the loop renames a repeated id);
    // a call awaiting a decision is one of them with no outcome yet: a
    // decision never lands on another call, nor over an outcome.
    for (std::size_t i = 0; i < s.batch.size(); ++i) {
      for (std::size_t k = 0; k < i; ++k) {
        if (s.batch[k].id == s.batch[i].id) {
          throw Error(ErrorCode::invalid_argument, "run state: the batch holds call id '" + s.batch[i].id + "' twice");
        }
      }
    }
    // The batch's call with `id`, or its end.
    const auto call_of = [&](const std::string& id) {
      return std::find_if(s.batch.begin(), s.batch.end(), [&](const ToolCall& c) { return c.id == id; });
    };
    for (const std::string& id : s.pending) {
      const auto call = call_of(id);
      if (call == s.batch.end() || s.outcomes[static_cast<std::size_t>(call - s.batch.begin())]) {
        throw Error(ErrorCode::invalid_argument,
                    "run state: pending call '" + id + "' is not a call of the batch still awaiting its outcome");
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
    if (auto trace = j.find("trace"); trace != j.end()) {
      s.trace_id = trace->at("trace_id").get<std::string>();
      s.trace_span_id = trace->at("span_id").get<std::string>();
      if (!trace::valid_trace_id(s.trace_id) || !trace::valid_span_id(s.trace_span_id)) {
        throw Error(ErrorCode::invalid_argument, "run state: trace holds an id that is not a W3C trace or span id");
      }
    }
    if (auto window = j.find("window"); window != j.end()) {
      s.window.from = json_integer<std::size_t>(window->at("from"), "run state: window.from");
      s.window.summary = window->at("summary").get<std::string>();
      s.window.compactions = json_integer<int>(window->at("compactions"), "run state: window.compactions");
      if (s.window.compactions < 1 || s.window.from > s.history.size() ||
          (s.window.from < s.history.size() && s.window.from > 0 && s.history[s.window.from].role == Role::tool)) {
        throw Error(ErrorCode::invalid_argument,
                    "run state: window does not fit the history (from " + std::to_string(s.window.from) + " of " +
                        std::to_string(s.history.size()) + " messages, " + std::to_string(s.window.compactions) +
                        " compactions)");
      }
    }
    if (auto handoff = j.find("handoff"); handoff != j.end()) {
      s.handoff.agent = handoff->at("agent").get<std::string>();
      s.handoff.from = handoff->at("from").get<std::string>();
      s.handoff.at = json_integer<std::size_t>(handoff->at("at"), "run state: handoff.at");
      s.handoff.handoffs = json_integer<int>(handoff->at("handoffs"), "run state: handoff.handoffs");
      if (s.handoff.agent.empty() || s.handoff.from.empty() || s.handoff.at < 1 || s.handoff.at > s.history.size() ||
          s.handoff.handoffs < 1) {
        throw Error(ErrorCode::invalid_argument,
                    "run state: handoff does not fit the run (agent '" + s.handoff.agent + "' from '" +
                        s.handoff.from + "' at " + std::to_string(s.handoff.at) + " of " +
                        std::to_string(s.history.size()) + " messages, " + std::to_string(s.handoff.handoffs) +
                        " handoffs)");
      }
    }
    if (auto nested = j.find("nested"); nested != j.end()) {
      for (auto entry = nested->begin(); entry != nested->end(); ++entry) {
        // Not a structured binding: clang 14 cannot capture one.
        const std::string& call_id = entry.key();
        const Json& n = entry.value();
        const auto problem = [&](const std::string& what) {
          return Error(ErrorCode::invalid_argument, "run state: nested['" + call_id + "'] " + what);
        };
        if (call_of(call_id) == s.batch.end()) {
          throw problem("is not a call of the batch");
        }
        NestedSuspension suspension;
        suspension.run_id = n.at("run_id").get<std::string>();
        suspension.iterations = json_integer<int>(n.at("iterations"), "run state: nested.iterations");
        for (const auto& c : n.at("pending")) suspension.pending.push_back(tool_call_from_json(c));
        suspension.agents = n.at("agents").get<std::vector<std::string>>();
        suspension.decided = n.at("decided").get<bool>();
        for (const auto& [id, d] : n.at("decisions").items()) {
          const auto kind = d.at("kind").get<std::string>();
          Decision decision;
          if (kind == "approve") {
            decision = Decision::approve();
          } else if (kind == "reject") {
            decision = Decision::reject(d.value("message", std::string()));
          } else if (kind == "edit") {
            decision = Decision::edit(d.at("arguments"));
          } else {
            throw problem("holds a decision of unknown kind '" + kind + "'");
          }
          suspension.decisions.emplace(id, std::move(decision));
        }
        const bool pending = std::find(s.pending.begin(), s.pending.end(), call_id) != s.pending.end();
        if (suspension.run_id.empty() || suspension.iterations < 0 || suspension.pending.empty() ||
            suspension.agents.size() != suspension.pending.size() || (!suspension.decided && !suspension.decisions.empty()) ||
            suspension.decided == pending) {
          throw problem("does not describe a suspended sub-run (a run id, its pending calls, an agent path for each; "
                        "pending until decided, and decisions only once decided)");
        }
        s.nested.emplace(call_id, std::move(suspension));
      }
    }
    return s;
  } catch (const Json::exception& e) {
    throw Error(ErrorCode::invalid_argument, std::string("run state: malformed document: ") + e.what());
  }
}

void charge_spent(Budget& budget, const RunState& state) {
  for (int i = 0; i < state.iterations; ++i) budget.charge_model_step();
  budget.charge_tool_calls(state.tool_calls);
  budget.charge_tokens(state.usage);
  budget.charge_cost(state.cost_usd);
}

}  // namespace agentkit
