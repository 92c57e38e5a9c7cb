#include "run_view.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include <agentkit/state/checkpoint.h>
#include <agentkit/state/keys.h>

namespace agentkit::cli {
namespace {

using trace::Span;

// Sub-runs nest no deeper than this in a view (a stored tree that loops
// through a malformed id cannot recurse forever).
constexpr int kMaxDepth = 16;

// Where the history the run made itself begins (after what came from its
// session), and its tool results by call id from there on.
std::size_t own_history_start(const RunState& state) {
  return std::min<std::size_t>(static_cast<std::size_t>(std::max(state.session_base, 0)), state.history.size());
}

std::map<std::string, const Message*> results_by_call(const RunState& state) {
  std::map<std::string, const Message*> results;
  for (std::size_t i = own_history_start(state); i < state.history.size(); ++i) {
    if (state.history[i].role == Role::tool) results[state.history[i].tool_call_id] = &state.history[i];
  }
  return results;
}

std::string text_attribute(const Span& span, std::string_view key) {
  if (const auto* value = span.attribute(key)) {
    if (const auto* text = std::get_if<std::string>(value)) return *text;
  }
  return {};
}

std::optional<double> number_attribute(const Span& span, std::string_view key) {
  if (const auto* value = span.attribute(key)) {
    if (const auto* i = std::get_if<std::int64_t>(value)) return static_cast<double>(*i);
    if (const auto* d = std::get_if<double>(value)) return *d;
  }
  return std::nullopt;
}

bool flag_attribute(const Span& span, std::string_view key) {
  if (const auto* value = span.attribute(key)) {
    if (const auto* b = std::get_if<bool>(value)) return *b;
  }
  return false;
}

// "chat", "execute_tool" or "invoke_agent": the attribute, else the name's
// first word.
std::string operation(const Span& span) {
  std::string op = text_attribute(span, "gen_ai.operation.name");
  if (op.empty()) op = span.name.substr(0, span.name.find(' '));
  return op;
}

// The span's name after its operation: "chat gpt-4o" -> "gpt-4o".
std::string subject(const Span& span) {
  const auto space = span.name.find(' ');
  return space == std::string::npos ? std::string() : span.name.substr(space + 1);
}

// The spans of one trace, indexed.
struct SpanIndex {
  std::map<std::string, Span> by_id;
  std::map<std::string, std::vector<const Span*>> children;             // by parent span id, in start order
  std::map<std::string, std::vector<const Span*>> invocations;          // invoke_agent spans by run id
  mutable std::set<std::string> used;                                   // spans placed in the view
};

// The spans a stored value holds: a segment (a JSON array of spans) or one
// span. Throws for a value that is neither, or a malformed span.
std::vector<Span> spans_in(const std::string& value) {
  Json doc;
  try {
    doc = Json::parse(value);
  } catch (const Json::exception& e) {
    throw Error(ErrorCode::invalid_argument, std::string("not JSON: ") + e.what());
  }
  std::vector<Span> out;
  if (doc.is_array()) {
    for (const auto& j : doc) out.push_back(trace::span_from_json(j));
  } else {
    out.push_back(trace::span_from_json(doc));
  }
  return out;
}

// Every span of the trace: its stored segments under keys::trace_spans and
// `pending`, the spans the runs' documents still carry. A span stored twice
// (a segment written again after a lost race) counts once.
SpanIndex load_spans(state::Store& store, const Scope& scope, const std::string& trace_id,
                     const std::vector<const Json*>& pending, std::vector<std::string>& problems) {
  SpanIndex index;
  if (trace_id.empty()) return index;
  const auto add = [&](Span span, const std::string& where) {
    if (span.trace_id != trace_id) {
      problems.push_back("span " + span.span_id.str() + " in " + where + " belongs to another trace (" +
                         span.trace_id.str() + ")");
      return;
    }
    const std::string id = span.span_id.str();
    index.by_id.insert_or_assign(id, std::move(span));
  };
  for (const auto& [key, entry] : store.list(state::keys::trace_spans(scope, trace_id))) {
    try {
      for (auto& span : spans_in(entry.value)) add(std::move(span), key);
    } catch (const std::exception& e) {
      problems.push_back("spans under " + key + " are unreadable: " + e.what());
    }
  }
  for (const Json* j : pending) {
    try {
      add(trace::span_from_json(*j), "a run document");
    } catch (const std::exception& e) {
      problems.push_back(std::string("a span in a run document is unreadable: ") + e.what());
    }
  }
  for (const auto& [id, span] : index.by_id) {
    index.children[span.parent_span_id.str()].push_back(&span);
    if (operation(span) == "invoke_agent") index.invocations[text_attribute(span, "agentkit.run.id")].push_back(&span);
  }
  const auto by_start = [](const Span* a, const Span* b) {
    return a->start != b->start ? a->start < b->start : a->span_id.view() < b->span_id.view();
  };
  for (auto& [_, list] : index.children) std::sort(list.begin(), list.end(), by_start);
  for (auto& [_, list] : index.invocations) std::sort(list.begin(), list.end(), by_start);
  return index;
}

// The call `call_id` as the run's history (or its current batch) holds it.
std::optional<ToolCall> find_call(const std::optional<RunState>& state, const std::string& call_id) {
  if (!state) return std::nullopt;
  for (auto m = state->history.rbegin(); m != state->history.rend(); ++m) {
    for (const auto& call : m->tool_calls) {
      if (call.id == call_id) return call;
    }
  }
  for (const auto& call : state->batch) {
    if (call.id == call_id) return call;
  }
  return std::nullopt;
}

// The stored runs under a run: its sub-runs ("<run id>/<step>/<call id>",
// and theirs), loaded once. One that cannot be read is a problem.
std::map<std::string, std::optional<state::StoredRun>> load_sub_runs(state::Store& store, const Scope& scope,
                                                                      const std::string& run_id,
                                                                      std::vector<std::string>& problems) {
  std::map<std::string, std::optional<state::StoredRun>> out;
  const std::size_t runs = state::keys::run(scope, "").size();
  for (const auto& [key, entry] : store.list(state::keys::run(scope, run_id + "/"))) {
    const std::string id = key.substr(runs);
    try {
      out.emplace(id, state::load_stored_run(store, scope, id));
    } catch (const std::exception& e) {
      problems.push_back("sub-run " + id + " is unreadable: " + e.what());
      out.emplace(id, std::nullopt);
    }
  }
  return out;
}

class ViewBuilder {
 public:
  ViewBuilder(state::Store& store, const Scope& scope, std::map<std::string, std::optional<state::StoredRun>>& sub_runs,
              std::vector<std::string>& problems)
      : store_(store), scope_(scope), sub_runs_(sub_runs), problems_(problems) {}

  RunNode build(const std::string& run_id, std::optional<RunState> state, const SpanIndex* spans, int depth) {
    RunNode node;
    node.run_id = run_id;
    node.state = std::move(state);
    if (node.state) node.agent = node.state->agent;
    // Spans that name a run inside itself (stored wrong, or altered) must
    // not recurse.
    if (!open_.insert(run_id).second) {
      problems_.push_back("run " + run_id + " is named as a sub-run of itself; its steps are shown once");
      return node;
    }
    if (spans) from_spans(node, *spans, depth);
    if (node.parts.empty() && node.state) from_history(node, depth);
    open_.erase(run_id);
    return node;
  }

  // Spans no part of the run took: their invoke_agent span (or the call
  // that started their sub-run) was never stored, because the process ended
  // mid-step. Shown in one more part rather than dropped.
  void add_leftovers(RunNode& root, const SpanIndex& spans, int depth) {
    for (const auto& [run_id, list] : spans.invocations) {
      if (run_id != root.run_id && run_id.rfind(root.run_id + "/", 0) != 0) return;  // another run shares the trace
    }
    Part extra;
    for (const auto& [run_id, list] : spans.invocations) {
      if (std::any_of(list.begin(), list.end(), [&](const Span* s) { return spans.used.contains(s->span_id.str()); })) continue;
      Step step;
      step.kind = Step::Kind::tool;
      step.tool = "(call not stored)";
      step.outcome = "outcome_unknown";
      step.call_id = run_id.substr(run_id.rfind('/') + 1);
      step.timed = true;
      step.start = list.front()->start;
      step.end = list.back()->end;
      step.sub_runs.push_back(build(run_id, load_sub_run(run_id), &spans, depth + 1));
      extra.steps.push_back(std::move(step));
    }
    for (const auto& [id, span] : spans.by_id) {
      const std::string op = operation(span);
      if (spans.used.contains(id) || (op != "chat" && op != "execute_tool")) continue;
      extra.steps.push_back(make_step(root, span, spans, depth));
    }
    if (extra.steps.empty()) return;
    std::stable_sort(extra.steps.begin(), extra.steps.end(), [](const Step& a, const Step& b) { return a.start < b.start; });
    problems_.push_back(std::to_string(extra.steps.size()) +
                        " step(s) whose run part was never stored (the process ended mid-step) are shown in a last part");
    finish_part(extra);
    root.parts.push_back(std::move(extra));
  }

 private:
  std::optional<RunState> load_sub_run(const std::string& run_id) {
    if (auto it = sub_runs_.find(run_id); it != sub_runs_.end()) {
      return it->second ? std::optional<RunState>(it->second->state) : std::nullopt;
    }
    return std::nullopt;  // not stored (or not under the shown run)
  }

  void from_spans(RunNode& node, const SpanIndex& spans, int depth) {
    std::vector<Part> parts;
    if (auto it = spans.invocations.find(node.run_id); it != spans.invocations.end()) {
      for (const Span* s : it->second) {
        Part part;
        part.span_id = s->span_id.str();
        part.stored = true;
        part.resumed = flag_attribute(*s, "agentkit.run.resumed") || !parts.empty();
        part.start = s->start;
        part.end = s->end;
        part.stop_reason = text_attribute(*s, "agentkit.run.stop_reason");
        if (node.agent.empty()) node.agent = text_attribute(*s, "gen_ai.agent.name");
        if (node.agent_path.empty()) node.agent_path = text_attribute(*s, "agentkit.agent.path");
        mark_used(spans, s->span_id.str());
        parts.push_back(std::move(part));
      }
    }
    // The first part's span is stored when the part ends: a run that is
    // running, or whose process died, has steps under a span not stored.
    if (node.state && !node.state->trace_span_id.empty() &&
        std::none_of(parts.begin(), parts.end(), [&](const Part& p) { return p.span_id == node.state->trace_span_id; })) {
      Part first;
      first.span_id = node.state->trace_span_id;
      parts.insert(parts.begin(), std::move(first));
    }
    int iteration = 0;
    for (Part& part : parts) {
      if (auto it = spans.children.find(part.span_id); it != spans.children.end()) {
        for (const Span* s : it->second) {
          const std::string op = operation(*s);
          if (op != "chat" && op != "execute_tool") continue;
          Step step = make_step(node, *s, spans, depth);
          if (step.kind == Step::Kind::model) step.iteration = ++iteration;
          part.steps.push_back(std::move(step));
        }
      }
      if (!part.stored) finish_part(part);
      if (part.stored || !part.steps.empty()) node.parts.push_back(std::move(part));
    }
    std::stable_sort(node.parts.begin(), node.parts.end(), [](const Part& a, const Part& b) { return a.start < b.start; });
    node.from_spans = !node.parts.empty();
  }

  static void mark_used(const SpanIndex& spans, const std::string& id) { spans.used.insert(id); }

  Step make_step(const RunNode& node, const Span& s, const SpanIndex& spans, int depth) {
    mark_used(spans, s.span_id.str());
    Step step;
    step.span_id = s.span_id.str();
    step.timed = true;
    step.start = s.start;
    step.end = s.end;
    step.error_type = text_attribute(s, "error.type");
    if (s.status == trace::SpanStatus::error) step.error_message = s.status_message;
    if (operation(s) == "chat") {
      step.kind = Step::Kind::model;
      step.model = text_attribute(s, "gen_ai.request.model");
      if (step.model.empty()) step.model = subject(s);
      const auto in = number_attribute(s, "gen_ai.usage.input_tokens");
      const auto out = number_attribute(s, "gen_ai.usage.output_tokens");
      step.has_usage = in || out;
      step.input_tokens = static_cast<std::int64_t>(in.value_or(0));
      step.output_tokens = static_cast<std::int64_t>(out.value_or(0));
      step.cost_usd = number_attribute(s, "agentkit.usage.cost_usd");
      if (const auto* value = s.attribute("gen_ai.response.finish_reasons")) {
        if (const auto* list = std::get_if<std::vector<std::string>>(value)) {
          for (const auto& reason : *list) step.finish_reason += (step.finish_reason.empty() ? "" : ",") + reason;
        }
      }
      return step;
    }
    step.kind = Step::Kind::tool;
    step.tool = text_attribute(s, "gen_ai.tool.name");
    if (step.tool.empty()) step.tool = subject(s);
    step.call_id = text_attribute(s, "gen_ai.tool.call.id");
    step.outcome = text_attribute(s, "agentkit.tool.outcome");
    step.call = find_call(node.state, step.call_id);
    for (const auto& event : s.events) {
      if (event.name == "agentkit.approval.requested") {
        step.approvals.push_back({"requested", "", event.time});
      } else if (event.name == "agentkit.approval.decided") {
        std::string decision;
        for (const auto& a : event.attributes) {
          if (a.key != "agentkit.approval.decision") continue;
          if (const auto* text = std::get_if<std::string>(&a.value)) decision = *text;
        }
        step.approvals.push_back({"decided", decision, event.time});
      }
    }
    std::sort(step.approvals.begin(), step.approvals.end(),
              [](const ApprovalMark& a, const ApprovalMark& b) { return a.time < b.time; });
    if (depth >= kMaxDepth) return step;
    // Sub-runs the call started: invoke_agent spans under it, one node per run.
    std::vector<std::string> sub_ids;
    if (auto it = spans.children.find(s.span_id.str()); it != spans.children.end()) {
      for (const Span* child : it->second) {
        if (operation(*child) != "invoke_agent") continue;
        const std::string id = text_attribute(*child, "agentkit.run.id");
        if (std::find(sub_ids.begin(), sub_ids.end(), id) == sub_ids.end()) sub_ids.push_back(id);
      }
    }
    for (const auto& id : sub_ids) {
      step.sub_runs.push_back(build(id, id.empty() ? std::nullopt : load_sub_run(id), &spans, depth + 1));
    }
    return step;
  }

  // The run's steps from its history alone: a run stored without spans (by
  // an older agentkit). No times, no per-call usage.
  void from_history(RunNode& node, int depth) {
    const RunState& state = *node.state;
    Part part;
    const auto results = results_by_call(state);
    const std::size_t first = own_history_start(state);
    int iteration = 0;
    for (std::size_t i = first; i < state.history.size(); ++i) {
      const Message& m = state.history[i];
      if (m.role != Role::assistant) continue;
      Step model;
      model.kind = Step::Kind::model;
      model.iteration = ++iteration;
      model.finish_reason = m.tool_calls.empty() ? "stop" : "tool_calls";
      part.steps.push_back(std::move(model));
      for (const auto& call : m.tool_calls) {
        Step step;
        step.kind = Step::Kind::tool;
        step.tool = call.name;
        step.call_id = call.id;
        step.call = call;
        if (auto r = results.find(call.id); r != results.end()) {
          step.outcome = r->second->is_error ? "error" : "ok";
        } else if (std::find(state.pending.begin(), state.pending.end(), call.id) != state.pending.end()) {
          step.outcome = "awaiting_approval";
        }
        if (depth < kMaxDepth) {
          const std::string sub_id = node.run_id + "/" + std::to_string(iteration) + "/" + call.id;
          if (auto sub = load_sub_run(sub_id)) step.sub_runs.push_back(build(sub_id, std::move(sub), nullptr, depth + 1));
        }
        part.steps.push_back(std::move(step));
      }
    }
    node.parts.push_back(std::move(part));
    node.from_spans = false;
  }

  // A part whose invoke_agent span is not stored spans its steps.
  static void finish_part(Part& part) {
    bool first = true;
    for (const Step& step : part.steps) {
      if (!step.timed) continue;
      part.start = first ? step.start : std::min(part.start, step.start);
      part.end = first ? step.end : std::max(part.end, step.end);
      first = false;
    }
  }

  state::Store& store_;
  Scope scope_;
  std::map<std::string, std::optional<state::StoredRun>>& sub_runs_;
  std::vector<std::string>& problems_;
  std::set<std::string> open_;  // the runs being built, outermost first
};

void time_range(const RunNode& node, RunView& view) {
  for (const Part& part : node.parts) {
    if (part.start == TimePoint{}) continue;
    if (!view.started || part.start < *view.started) view.started = part.start;
    if (!view.ended || part.end > *view.ended) view.ended = part.end;
    for (const Step& step : part.steps) {
      if (step.timed && step.end > *view.ended) view.ended = step.end;
    }
  }
}

}  // namespace

std::string run_status(const RunState& state) {
  if (state.phase == Phase::done || state.phase == Phase::suspended) return std::string(to_string(state.stop_reason));
  return "running";
}

std::string RunSummary::status() const { return state ? run_status(*state) : "unreadable"; }

std::optional<TimePoint> run_started(state::Store& store, const Scope& scope, const state::StoredRun& run) {
  const RunState& state = run.state;
  if (state.trace_id.empty() || state.trace_span_id.empty()) return std::nullopt;
  // Not yet in a segment: the run's document carries it.
  for (const Json& j : run.sealed.spans) {
    if (j.is_object() && j.value("span_id", "") == state.trace_span_id) return trace::span_from_json(j).start;
  }
  const std::string prefix = state::keys::trace_spans(scope, state.trace_id);
  // A store that keeps one key per span.
  if (const auto entry = store.get(prefix + state.trace_span_id)) return spans_in(entry->value).front().start;
  // The run's own span segments ("<run id>#<n>-<writer>").
  std::optional<Error> unreadable;
  for (const auto& [key, entry] : store.list(prefix + state.run_id + "#")) {
    try {
      for (const Span& span : spans_in(entry.value)) {
        if (span.span_id == state.trace_span_id) return span.start;
      }
    } catch (const Error& e) {
      unreadable = Error(e.code(), key + ": " + e.what());
    }
  }
  if (unreadable) throw *unreadable;
  return std::nullopt;
}

std::vector<RunSummary> list_runs(state::Store& store, const Scope& scope) {
  const std::string prefix = state::keys::run(scope, "");
  std::vector<RunSummary> runs;
  for (const auto& [key, entry] : store.list(prefix)) {
    RunSummary run;
    run.run_id = key.substr(prefix.size());
    if (run.run_id.find('/') != std::string::npos) continue;  // a sub-run
    std::optional<state::StoredRun> stored;
    try {
      stored = state::load_stored_run(store, scope, run.run_id);
      if (!stored) continue;  // removed meanwhile
    } catch (const std::exception& e) {
      run.problem = e.what();
      runs.push_back(std::move(run));
      continue;
    }
    try {
      run.started = run_started(store, scope, *stored);
    } catch (const std::exception& e) {
      run.problem = std::string("its first span is unreadable: ") + e.what();
    }
    run.state = std::move(stored->state);
    runs.push_back(std::move(run));
  }
  std::stable_sort(runs.begin(), runs.end(), [](const RunSummary& a, const RunSummary& b) {
    if (a.started && b.started) return *a.started > *b.started;
    return a.started.has_value() && !b.started.has_value();
  });
  return runs;
}

std::optional<RunView> load_view(state::Store& store, const Scope& scope, const std::string& run_id) {
  auto stored = state::load_stored_run(store, scope, run_id);
  if (!stored) return std::nullopt;
  RunView view;
  auto sub_runs = load_sub_runs(store, scope, run_id, view.problems);
  std::vector<const Json*> pending;
  for (const Json& j : stored->sealed.spans) pending.push_back(&j);
  for (const auto& [id, sub] : sub_runs) {
    if (sub) {
      for (const Json& j : sub->sealed.spans) pending.push_back(&j);
    }
  }
  const SpanIndex spans = load_spans(store, scope, stored->state.trace_id, pending, view.problems);
  ViewBuilder builder(store, scope, sub_runs, view.problems);
  view.root = builder.build(run_id, std::move(stored->state), spans.by_id.empty() ? nullptr : &spans, 0);
  if (!spans.by_id.empty()) builder.add_leftovers(view.root, spans, 0);
  time_range(view.root, view);
  return view;
}

std::vector<FlatStep> flatten(const RunNode& node, int depth) {
  std::vector<FlatStep> out;
  for (const Part& part : node.parts) {
    for (const Step& step : part.steps) {
      out.push_back({&step, &node, depth});
      for (const RunNode& sub : step.sub_runs) {
        auto nested = flatten(sub, depth + 1);
        out.insert(out.end(), nested.begin(), nested.end());
      }
    }
  }
  return out;
}

namespace {

// One step of a run as compare_runs sees it: its position and the fields
// compared, in order.
struct Comparable {
  std::string where;
  std::vector<std::pair<std::string, Json>> fields;
};

// A message without the ids a model makes up, which differ between any two runs.
Json without_call_ids(Json message) {
  message.erase("tool_call_id");
  if (auto calls = message.find("tool_calls"); calls != message.end() && calls->is_array()) {
    for (Json& call : *calls) {
      if (call.is_object()) call.erase("id");
    }
  }
  return message;
}

void comparables(const RunNode& node, const std::string& prefix, std::vector<Comparable>& out) {
  const RunState* state = node.state ? &*node.state : nullptr;
  const bool answered = state && state->phase == Phase::done && !state->failure;
  out.push_back({prefix + "run",
                 {{"task", state ? Json(state->task) : Json()},
                  {"status", state ? run_status(*state) : "unknown"},
                  {"answer", answered ? Json(state->output) : Json()},
                  {"error", state && state->failure ? Json{{"code", to_string(state->failure->code)},
                                                           {"message", state->failure->message}}
                                                    : Json()}}});
  if (!state) return;
  std::map<int, const Step*> model_steps;
  std::map<std::string, std::vector<const Step*>> tool_steps;
  for (const Part& part : node.parts) {
    for (const Step& step : part.steps) {
      if (step.kind == Step::Kind::model) {
        model_steps.emplace(step.iteration, &step);
      } else {
        tool_steps[step.call_id].push_back(&step);
      }
    }
  }
  const auto results = results_by_call(*state);
  int iteration = 0;
  for (std::size_t i = own_history_start(*state); i < state->history.size(); ++i) {
    const Message& reply = state->history[i];
    if (reply.role != Role::assistant) continue;
    const std::string model_call = std::to_string(++iteration);
    const auto step = model_steps.find(iteration);
    out.push_back({prefix + "model call " + model_call,
                   {{"model", step == model_steps.end() ? Json() : Json(step->second->model)},
                    {"response", without_call_ids(to_json(reply))}}});
    for (std::size_t t = 0; t < reply.tool_calls.size(); ++t) {
      const ToolCall& call = reply.tool_calls[t];
      const std::string where = prefix + "tool call " + model_call + "." + std::to_string(t + 1);
      // A call that waited for approval has a step per part: its last outcome counts.
      std::string outcome;
      Json decisions = Json::array();
      const RunNode* sub_run = nullptr;
      if (const auto steps = tool_steps.find(call.id); steps != tool_steps.end()) {
        for (const Step* s : steps->second) {
          if (!s->outcome.empty()) outcome = s->outcome;
          for (const ApprovalMark& mark : s->approvals) {
            if (mark.kind == "decided") decisions.push_back(mark.decision);
          }
          if (!s->sub_runs.empty()) sub_run = &s->sub_runs.back();
        }
      }
      const auto result = results.find(call.id);
      out.push_back({where,
                     {{"tool", call.name},
                      {"arguments", call.arguments_text.empty() ? call.arguments : Json(call.arguments_text)},
                      {"outcome", outcome},
                      {"approval", std::move(decisions)},
                      {"result", result == results.end() ? Json() : without_call_ids(to_json(*result->second))}}});
      if (sub_run) comparables(*sub_run, where + " > ", out);
    }
  }
}

}  // namespace

std::vector<StepDifference> compare_runs(const RunView& a, const RunView& b) {
  std::vector<Comparable> steps_a, steps_b;
  comparables(a.root, "", steps_a);
  comparables(b.root, "", steps_b);
  std::map<std::string, const Comparable*> in_b;
  for (const Comparable& step : steps_b) in_b.emplace(step.where, &step);
  std::vector<StepDifference> out;
  std::set<std::string> seen;
  for (const Comparable& x : steps_a) {
    seen.insert(x.where);
    const auto y = in_b.find(x.where);
    if (y == in_b.end()) {
      out.push_back({x.where, "only in a", {}, {}, {}});
      continue;
    }
    // The same position is the same kind of step: the same fields, in the same order.
    for (std::size_t f = 0; f < x.fields.size() && f < y->second->fields.size(); ++f) {
      if (auto d = first_difference(x.fields[f].second, y->second->fields[f].second)) {
        d->where = x.where;
        d->what = x.fields[f].first;
        out.push_back(std::move(*d));
        break;
      }
    }
  }
  for (const Comparable& y : steps_b) {
    if (!seen.count(y.where)) out.push_back({y.where, "only in b", {}, {}, {}});
  }
  return out;
}

}  // namespace agentkit::cli
