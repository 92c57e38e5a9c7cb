#include "run_tracer.h"

#include <agentkit/json.h>
#include <agentkit/tool.h>

namespace agentkit::cognition {
namespace {

using trace::Attribute;
using trace::Span;

template <class Value>
void add(Span& span, trace::AttributeKey key, Value&& value) {
  span.attributes.emplace_back(std::move(key), std::forward<Value>(value));
}

// The model's own name: "openai/gpt-4o@http://host" -> "gpt-4o" for a
// provider's model; a model of no provider keeps the agent's name for it.
std::string request_model(std::string_view name, std::string_view provider) {
  if (provider.empty()) return std::string(name);
  if (auto slash = name.find('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  if (auto at = name.find('@'); at != std::string_view::npos) name = name.substr(0, at);
  return std::string(name);
}

// One message in the conventions' content shape ({"role", "parts"}):
// binary parts by their media type and size, never their bytes.
Json message_json(const Message& m) {
  Json parts = Json::array();
  for (const auto& part : m.content) {
    if (const auto* text = std::get_if<TextPart>(&part)) {
      if (m.role == Role::tool) {
        parts.push_back({{"type", "tool_call_response"}, {"id", m.tool_call_id}, {"response", text->text}});
      } else {
        parts.push_back({{"type", "text"}, {"content", text->text}});
      }
    } else if (const auto* reasoning = std::get_if<ReasoningPart>(&part)) {
      parts.push_back({{"type", "reasoning"}, {"content", reasoning->text}});
    } else if (const auto* refusal = std::get_if<RefusalPart>(&part)) {
      parts.push_back({{"type", "refusal"}, {"content", refusal->text}});
    } else {
      parts.push_back({{"type", "blob"}, {"content", describe(part)}});
    }
  }
  for (const auto& call : m.tool_calls) {
    parts.push_back({{"type", "tool_call"},
                     {"id", call.id},
                     {"name", call.name},
                     {"arguments", call.arguments_text.empty() ? call.arguments : Json(call.arguments_text)}});
  }
  static constexpr std::string_view roles[] = {"system", "user", "assistant", "tool"};
  return {{"role", roles[static_cast<int>(m.role)]}, {"parts", std::move(parts)}};
}

void add_usage(Span& span, const Usage& usage) {
  add(span, "gen_ai.usage.input_tokens", usage.input_tokens);
  add(span, "gen_ai.usage.output_tokens", usage.output_tokens);
  if (usage.cached_tokens) add(span, "gen_ai.usage.cache_read.input_tokens", usage.cached_tokens);
}

void fail(Span& span, const Failure& failure) {
  add(span, "error.type", std::string(to_string(failure.code)));
  span.status = trace::SpanStatus::error;
  span.status_message = failure.message;
}

}  // namespace

Span RunTracer::open(std::string name, trace::SpanKind kind, trace::SpanId parent) const {
  Span span;
  span.trace_id = s_->trace_id;
  span.span_id = trace::new_span_id();
  span.parent_span_id = parent;
  span.name = std::move(name);
  span.kind = kind;
  span.start = Clock::now();
  // What a span usually carries, in one block under 1 KiB: a larger one
  // would make glibc's malloc consolidate its free lists on every span.
  span.attributes.reserve(12);
  return span;
}

void RunTracer::end(Span&& span) {
  if (s_->durable) {
    if (s_->sink) {
      // Both want it: a copy here is cheaper than JSON on the run's thread
      // (the checkpoint writer converts the stored copy on its own).
      s_->stored.push_back(span);
    } else {
      s_->stored.push_back(std::move(span));
      return;
    }
  }
  s_->sink->on_end(std::move(span));
}

void RunTracer::start(RunContext& ctx, RunState& state, const Agent& agent, const Model* model, bool durable) {
  if (!ctx.tracer && !durable) return;
  s_ = std::make_unique<State>();
  s_->sink = ctx.tracer;
  s_->durable = durable;
  s_->content = s_->sink && s_->sink->capture_content();
  // A sub-run's trace parent is the call that started it; its events' is the run.
  trace::SpanId parent = std::exchange(ctx.call_span_id, {});
  if (parent.empty()) parent = ctx.parent_span_id;
  if (!state.trace_id.empty()) {
    // A resumed (or recovered) run: the trace its first part began.
    s_->trace_id = trace::TraceId(state.trace_id);  // checked when the state loaded
    parent = trace::SpanId(state.trace_span_id);
  } else {
    s_->trace_id = ctx.trace_id.empty() ? trace::new_trace_id() : ctx.trace_id;
  }
  ctx.trace_id = s_->trace_id;
  s_->run = open("invoke_agent " + agent.name(), trace::SpanKind::internal, std::move(parent));
  ctx.span_id = s_->run.span_id;
  if (state.trace_id.empty()) {
    state.trace_id = s_->trace_id.str();
    state.trace_span_id = s_->run.span_id.str();
  }
  if (model) s_->provider = model->provider();
  s_->request_model = request_model(agent.model(), s_->provider);
  add(s_->run, "gen_ai.operation.name", std::string("invoke_agent"));
  add(s_->run, "gen_ai.agent.name", agent.name());
  add(s_->run, "gen_ai.conversation.id", state.session.empty() ? state.run_id : state.session);
  if (!s_->provider.empty()) add(s_->run, "gen_ai.provider.name", s_->provider);
  add(s_->run, "gen_ai.request.model", s_->request_model);
  add(s_->run, "agentkit.run.id", state.run_id);
  add(s_->run, "agentkit.agent.path", ctx.agent_path);
  if (state.iterations > 0 || state.phase != Phase::ask_model) add(s_->run, "agentkit.run.resumed", true);
  if (s_->content && !agent.prompt().empty()) {
    add(s_->run, "gen_ai.system_instructions",
        Json::array({{{"type", "text"}, {"content", agent.prompt()}}}).dump(-1, ' ', false, Json::error_handler_t::replace));
  }
}

std::string_view RunTracer::model_started(const ModelRequest& request) {
  if (!on()) return {};
  Span span = open("chat " + s_->request_model, trace::SpanKind::client, s_->run.span_id);
  add(span, "gen_ai.operation.name", std::string("chat"));
  if (!s_->provider.empty()) add(span, "gen_ai.provider.name", s_->provider);
  add(span, "gen_ai.request.model", s_->request_model);
  if (const ModelSettings* s = request.settings) {
    if (s->temperature) add(span, "gen_ai.request.temperature", *s->temperature);
    if (s->top_p) add(span, "gen_ai.request.top_p", *s->top_p);
    if (s->max_output_tokens) add(span, "gen_ai.request.max_tokens", std::int64_t{*s->max_output_tokens});
    if (s->seed) add(span, "gen_ai.request.seed", std::int64_t{*s->seed});
    if (s->stop && !s->stop->empty()) add(span, "gen_ai.request.stop_sequences", *s->stop);
  }
  if (s_->content) {
    Json messages = Json::array();
    for (const Message& m : request.messages) messages.push_back(message_json(m));
    add(span, "gen_ai.input.messages", messages.dump(-1, ' ', false, Json::error_handler_t::replace));
    if (!request.system.empty()) {
      add(span, "gen_ai.system_instructions",
          Json::array({{{"type", "text"}, {"content", request.system}}})
              .dump(-1, ' ', false, Json::error_handler_t::replace));
    }
  }
  // One trace for the whole run: after the first call only the span id changes.
  if (s_->chat_traceparent.empty()) {
    s_->chat_traceparent = trace::format_traceparent(s_->trace_id, span.span_id);
  } else {
    s_->chat_traceparent.replace(36, span.span_id.size(), span.span_id.view());  // "00-" <32 digits> "-" <span id>
  }
  s_->chat = std::move(span);
  return s_->chat_traceparent;
}

void RunTracer::model_finished(const ModelResponse& response, std::optional<double> cost_usd) {
  if (!s_ || !s_->chat) return;
  Span& span = *s_->chat;
  span.end = Clock::now();
  if (!response.id.empty()) add(span, "gen_ai.response.id", response.id);
  if (!response.model.empty()) add(span, "gen_ai.response.model", response.model);
  add(span, "gen_ai.response.finish_reasons", std::vector<std::string>{response.finish_reason});
  add_usage(span, response.usage);
  if (cost_usd) add(span, "agentkit.usage.cost_usd", *cost_usd);
  if (s_->content) {
    Json out = message_json(response.message);
    out["role"] = "assistant";
    out["finish_reason"] = response.finish_reason;
    add(span, "gen_ai.output.messages",
        Json::array({std::move(out)}).dump(-1, ' ', false, Json::error_handler_t::replace));
  }
  end(std::move(span));
  s_->chat.reset();
}

void RunTracer::model_failed(const Failure& failure, const Usage& usage) {
  if (!s_ || !s_->chat) return;
  Span& span = *s_->chat;
  span.end = Clock::now();
  if (usage.total() > 0) add_usage(span, usage);
  fail(span, failure);
  end(std::move(span));
  s_->chat.reset();
}

trace::SpanId RunTracer::tool_span_id() const { return on() ? trace::new_span_id() : trace::SpanId(); }

void RunTracer::tool_finished(trace::SpanId span_id, const ToolCall& call, const Tool* tool, CallStatus outcome,
                              std::string_view text, Clock::time_point start, Clock::time_point end) {
  if (!on()) return;
  Span span;
  span.trace_id = s_->trace_id;
  span.span_id = span_id.empty() ? trace::new_span_id() : span_id;
  span.parent_span_id = s_->run.span_id;
  span.name = "execute_tool " + call.name;
  span.attributes.reserve(12);  // as open() does
  span.start = start == Clock::time_point{} ? end : start;  // never started (a rejected call): an instant
  span.end = end < span.start ? span.start : end;
  add(span, "gen_ai.operation.name", std::string("execute_tool"));
  add(span, "gen_ai.tool.name", call.name);
  add(span, "gen_ai.tool.call.id", call.id);
  add(span, "gen_ai.tool.type", std::string("function"));
  if (tool && !tool->description().empty()) add(span, "gen_ai.tool.description", tool->description());
  add(span, "agentkit.tool.outcome", std::string(to_string(outcome)));
  if (auto it = s_->decided.find(call.id); it != s_->decided.end()) {
    span.events.push_back(std::move(it->second));
    s_->decided.erase(it);
  }
  switch (outcome) {
    case CallStatus::ok:
      break;
    case CallStatus::awaiting_approval:
      span.events.push_back(trace::SpanEvent{"agentkit.approval.requested", end, {}});
      break;
    default:
      add(span, "error.type", std::string(to_string(outcome)));
      span.status = trace::SpanStatus::error;
      span.status_message = std::string(text.substr(0, 256));
  }
  if (s_->content) {
    add(span, "gen_ai.tool.call.arguments",
        call.arguments.dump(-1, ' ', false, Json::error_handler_t::replace));
    add(span, "gen_ai.tool.call.result", std::string(text));
  }
  this->end(std::move(span));
}

void RunTracer::approval_decided(const ToolCall& call, ApprovalVerdict verdict, std::string_view reason) {
  if (!on()) return;
  trace::SpanEvent event{"agentkit.approval.decided", Clock::now(), {}};
  event.attributes.push_back(Attribute{"agentkit.approval.decision", std::string(to_string(verdict))});
  if (!reason.empty() && s_->content) event.attributes.push_back(Attribute{"agentkit.approval.reason", std::string(reason)});
  if (verdict == ApprovalVerdict::rejected) {
    const auto at = event.time;
    s_->decided.insert_or_assign(call.id, std::move(event));
    tool_finished({}, call, nullptr, CallStatus::denied, "rejected by a human reviewer", at, at);
    return;
  }
  s_->decided.insert_or_assign(call.id, std::move(event));
}

void RunTracer::guardrail_checked(const GuardrailChecked& check, Clock::time_point start, Clock::time_point end) {
  if (!on()) return;
  Span span = open("guardrail " + check.guardrail, trace::SpanKind::internal, s_->run.span_id);
  span.start = start;
  span.end = end < start ? start : end;
  add(span, "agentkit.guardrail.name", check.guardrail);
  add(span, "agentkit.guardrail.stage", check.stage);
  add(span, "agentkit.guardrail.verdict", check.verdict);
  if (!check.call_id.empty()) add(span, "gen_ai.tool.call.id", check.call_id);
  if (check.verdict == "trip") {
    add(span, "error.type", std::string("guardrail_tripped"));
    span.status = trace::SpanStatus::error;
    span.status_message = check.message.substr(0, 256);
  }
  this->end(std::move(span));
}

void RunTracer::handoff(const HandoffOccurred& handoff) {
  if (!on()) return;
  Span span = open("handoff " + handoff.to, trace::SpanKind::internal, s_->run.span_id);
  span.end = span.start;
  add(span, "agentkit.handoff.from", handoff.from);
  add(span, "agentkit.handoff.to", handoff.to);
  if (!handoff.call_id.empty()) add(span, "gen_ai.tool.call.id", handoff.call_id);
  this->end(std::move(span));
}

void RunTracer::run_finished(const RunState& state, const Usage& usage) {
  if (!on() || s_->ended) return;
  add(s_->run, "agentkit.run.stop_reason", std::string(to_string(state.stop_reason)));
  add_usage(s_->run, usage);
  if (state.cost_usd > 0) add(s_->run, "agentkit.usage.cost_usd", state.cost_usd);
  std::optional<Failure> failure;
  if (state.stop_reason != StopReason::answered && state.stop_reason != StopReason::suspended) failure = state.failure;
  end_run(failure);
}

void RunTracer::run_abandoned() {
  if (!on() || s_->ended) return;
  end_run(Failure{.code = ErrorCode::cancelled, .message = "the run's handle was dropped before it ended"});
}

void RunTracer::end_run(const std::optional<Failure>& failure) {
  if (s_->chat) model_failed(Failure{.code = ErrorCode::cancelled, .message = "the run ended during the call"}, {});
  s_->run.end = Clock::now();
  if (failure) fail(s_->run, *failure);
  s_->ended = true;
  end(std::move(s_->run));
}

}  // namespace agentkit::cognition
