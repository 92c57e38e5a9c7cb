#include "terminal.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cctype>
#include <ctime>
#include <type_traits>
#include <variant>

#include <agentkit/json.h>

namespace agentkit::cli {
namespace {

constexpr std::size_t kPreviewChars = 60;
constexpr std::size_t kErrorChars = 120;

Json call_json(const ToolCall& call) {
  Json arguments = call.arguments;
  if (!call.arguments_text.empty() && (arguments.is_null() || arguments.empty())) arguments = call.arguments_text;
  return {{"id", call.id}, {"name", call.name}, {"arguments", std::move(arguments)}};
}

std::int64_t millis(std::chrono::microseconds d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

bool plain_name(const std::string& key) {
  return !key.empty() &&
         std::all_of(key.begin(), key.end(), [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '-'; });
}

// "order_id: 'A-1', amount: 20" for a status line; bounded and single-line.
std::string arguments_preview(const ToolCall& call) {
  if (!call.arguments_text.empty() && (call.arguments.is_null() || call.arguments.empty())) {
    return first_line(call.arguments_text, kPreviewChars);
  }
  if (!call.arguments.is_object()) return preview(call.arguments, kPreviewChars);
  std::string out;
  for (const auto& [key, value] : call.arguments.items()) {
    if (out.size() > kPreviewChars) break;
    out += (out.empty() ? "" : ", ") + (plain_name(key) ? key : preview(Json(key), kPreviewChars)) + ": " +
           preview(value, kPreviewChars);
  }
  return first_line(out, kPreviewChars);
}

}  // namespace

std::string printable(std::string text) {
  for (char& c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7f) c = '?';
  }
  return text;
}

std::string first_line(const std::string& text, std::size_t max) {
  std::string line = printable(text.substr(0, text.find('\n')));
  if (line.size() <= max) return line;
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  return line.substr(0, cut) + "…";
}

std::string rfc3339_millis(std::chrono::system_clock::time_point time) {
  const auto ms = std::chrono::floor<std::chrono::milliseconds>(time);
  const auto seconds = std::chrono::floor<std::chrono::seconds>(ms);
  const std::time_t t = std::chrono::system_clock::to_time_t(seconds);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[96];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>((ms - seconds).count()));
  return text;
}

std::string call_preview(const ToolCall& call) {
  return first_line(call.name, kPreviewChars) + "(" + arguments_preview(call) + ")";
}

namespace {

std::string call_key(const std::string& call_id, bool nested) { return (nested ? "sub:" : "") + call_id; }

constexpr const char* kGreen = "\033[32m";
constexpr const char* kRed = "\033[31m";
constexpr const char* kYellow = "\033[33m";
constexpr const char* kDim = "\033[2m";

// A status symbol, coloured on a terminal.
std::string mark(bool styled, const char* colour, const char* glyph) {
  return styled ? std::string(colour) + glyph + "\033[0m" : std::string(glyph);
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// "✓ lookup 12 ms", "⏸ refund needs approval", "⊘ refund denied: <why>",
// "✗ lookup: <error>".
std::string finished_line(const ToolCallFinished& e, std::chrono::microseconds took, bool styled) {
  const std::string name = first_line(e.name, kPreviewChars);
  if (e.outcome == CallStatus::ok) return mark(styled, kGreen, "✓") + " " + name + " " + std::to_string(millis(took)) + " ms";
  if (e.outcome == CallStatus::awaiting_approval) return mark(styled, kYellow, "⏸") + " " + name + " needs approval";
  if (e.outcome == CallStatus::denied)
    return mark(styled, kYellow, "⊘") + " " + name + " denied: " + first_line(e.text, kErrorChars);
  return mark(styled, kRed, "✗") + " " + name + ": " + first_line(e.text, kErrorChars);
}

// The JSON line of each event type.
Json fields(const ModelCallStarted& e) { return {{"type", "model_call_started"}, {"iteration", e.iteration}}; }
Json fields(const TextDelta& e) { return {{"type", "text_delta"}, {"text", e.text}}; }
Json fields(const ModelCallFinished& e) {
  return {{"type", "model_call_finished"},
          {"iteration", e.iteration},
          {"finish_reason", e.finish_reason},
          {"usage", to_json(e.usage)}};
}
Json fields(const ToolCallStarted& e) {
  Json call = call_json(e.call);
  return {{"type", "tool_call_started"},
          {"call_id", call["id"]},
          {"name", call["name"]},
          {"arguments", call["arguments"]},
          {"status", e.status}};
}
Json fields(const ToolCallFinished& e) {
  return {{"type", "tool_call_finished"},
          {"call_id", e.call_id},
          {"name", e.name},
          {"outcome", to_string(e.outcome)},
          {"text", e.text}};
}
Json fields(const ToolSpan& e) {
  return {{"type", "tool_span"},
          {"call_id", e.call_id},
          {"name", e.tool},
          {"outcome", to_string(e.outcome)},
          {"duration_ms", millis(e.duration)},
          {"span_id", e.span_id.view()},
          {"parent_span_id", e.parent_span_id.view()}};
}
Json fields(const RunSuspended& e) {
  Json pending = Json::array();
  for (const auto& call : e.pending) pending.push_back(call_json(call));
  return {{"type", "run_suspended"}, {"pending", std::move(pending)}};
}
Json fields(const RunFinished& e) {
  return {{"type", "run_finished"}, {"stop_reason", to_string(e.stop_reason)}, {"output", e.output}};
}
Json fields(const GuardrailChecked& e) {
  Json j = {{"type", "guardrail_checked"}, {"guardrail", e.guardrail}, {"stage", e.stage}, {"verdict", e.verdict}};
  if (!e.message.empty()) j["message"] = e.message;
  if (!e.call_id.empty()) j["call_id"] = e.call_id;
  return j;
}
Json fields(const ToolCallRefused& e) {
  Json call = call_json(e.call);
  return {{"type", "tool_call_refused"},
          {"call_id", call["id"]},
          {"name", call["name"]},
          {"arguments", call["arguments"]},
          {"error", e.error}};
}
Json fields(const ApprovalDecided& e) {
  Json call = call_json(e.call);
  Json out = {{"type", "approval_decided"},
              {"call_id", call["id"]},
              {"name", call["name"]},
              {"arguments", call["arguments"]},
              {"decision", to_string(e.decision)}};
  if (!e.reason.empty()) out["reason"] = e.reason;
  return out;
}
Json fields(const Progress& e) { return {{"type", "progress"}, {"message", e.message}}; }
Json fields(const ToolCallDelta& e) {
  return {{"type", "tool_call_delta"}, {"index", e.index}, {"call_id", e.id}, {"name", e.name}, {"arguments", e.arguments}};
}
Json fields(const ReasoningDelta& e) { return {{"type", "reasoning_delta"}, {"text", e.text}}; }
Json fields(const ContextCompacted& e) {
  Json j = {{"type", "context_compacted"},     {"previous_from", e.previous_from}, {"from", e.from},
            {"tokens_before", e.tokens_before}, {"tokens_after", e.tokens_after},   {"summarized", e.summarized}};
  if (e.summarized) j["usage"] = to_json(e.usage);
  return j;
}
Json fields(const HandoffOccurred& e) {
  return {{"type", "handoff"}, {"from", e.from}, {"to", e.to}, {"call_id", e.call_id}, {"at", e.at}};
}
Json fields(const McpProgress& e) {
  Json out = {{"type", "mcp_progress"},
              {"server", e.server},
              {"tool", e.tool},
              {"progress", e.progress},
              {"message", e.message}};
  if (e.total) out["total"] = *e.total;
  return out;
}

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace

Exit exit_code(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::budget_exhausted: return Exit::budget_exhausted;
    case ErrorCode::cancelled: return Exit::cancelled;
    case ErrorCode::unauthenticated:
    case ErrorCode::permission_denied: return Exit::unauthenticated;
    case ErrorCode::rate_limited:
    case ErrorCode::quota_exceeded:
    case ErrorCode::overloaded: return Exit::rate_limited;
    case ErrorCode::unavailable:
    case ErrorCode::timeout: return Exit::unavailable;
    case ErrorCode::protocol:
    case ErrorCode::truncated: return Exit::protocol;
    case ErrorCode::invalid_argument:
    case ErrorCode::not_found:
    case ErrorCode::already_exists: return Exit::rejected;
    case ErrorCode::aborted:
    case ErrorCode::data_loss: return Exit::state;
    case ErrorCode::outcome_unknown:
    case ErrorCode::unimplemented:
    case ErrorCode::internal: return Exit::failed;
  }
  return Exit::failed;
}

Exit exit_code(const RunResult& result) noexcept {
  switch (result.stop_reason) {
    case StopReason::answered: return Exit::answered;
    case StopReason::suspended: return Exit::suspended;
    case StopReason::max_iterations: return Exit::max_iterations;
    case StopReason::budget_exhausted: return Exit::budget_exhausted;
    case StopReason::cancelled: return Exit::cancelled;
    case StopReason::guardrail_tripped:  // refused by policy
    case StopReason::failed: break;
  }
  return result.failure ? exit_code(result.failure->code) : Exit::failed;
}

Json event_json(const Event& event, bool nested) {
  Json j = std::visit([](const auto& e) { return fields(e); }, event);
  if (nested) j["nested"] = true;
  const EventInfo& info = info_of(event);
  if (info.time != std::chrono::system_clock::time_point{}) j["time"] = rfc3339_millis(info.time);
  const auto field = [&](const char* name, std::string_view value) {
    if (!value.empty()) j[name] = std::string(value);
  };
  field("run_id", info.run_id());
  field("agent_path", info.agent_path());
  // A ToolSpan's own span ids name the call's span; the run's stay in info.
  if (!j.contains("span_id")) field("span_id", info.span_id());
  if (!j.contains("parent_span_id")) field("parent_span_id", info.parent_span_id());
  return j;
}

Json result_json(const RunResult& result, const std::string& resume_command) {
  Json pending = Json::array();
  if (result.suspended) {
    for (const auto& call : result.suspended->pending) pending.push_back(call_json(call));
  }
  Json j = {{"type", "result"},
            {"run_id", result.state.run_id},
            {"stop_reason", std::string(to_string(result.stop_reason))},
            {"exit_code", static_cast<int>(exit_code(result))},
            {"output", result.output},
            {"iterations", result.iterations},
            {"usage", to_json(result.usage)},
            {"pending", std::move(pending)}};
  write_failure(j, result.failure);
  if (result.stop_reason == StopReason::suspended) j["resume"] = resume_command + " --approve all";
  return j;
}

Terminal::Terminal(Options options, std::FILE* out, std::FILE* err) : options_(options), out_(out), err_(err) {}

void Terminal::started(const std::string& run_id, const std::string& agent, bool resumed) {
  if (!options_.json) {
    note((resumed ? "resuming run " : "run ") + run_id + " (agent " + first_line(agent, kPreviewChars) + ")");
    return;
  }
  const Json line = {{"type", "run_started"}, {"run_id", run_id}, {"agent", agent}, {"resumed", resumed}};
  std::fputs((canonical_dump(line) + "\n").c_str(), out_);
  std::fflush(out_);
}

void Terminal::show(const Event& event, bool nested) {
  if (options_.json) {
    show_json(event, nested);
  } else {
    show_text(event, nested);
  }
}

void Terminal::show_json(const Event& event, bool nested) {
  std::fputs((canonical_dump(event_json(event, nested)) + "\n").c_str(), out_);
  std::fflush(out_);
}

void Terminal::show_text(const Event& event, bool nested) {
  const std::string indent = nested ? "  " : "";
  const bool styled = options_.styled;
  std::visit(Overloaded{
                 [&](const ModelCallStarted&) {
                   if (!nested) streamed_answer_ = false;
                 },
                 [&](const TextDelta& e) {
                   if (nested) return;  // a sub-agent's text reaches the parent as its tool result
                   close_status();
                   std::fputs((options_.text_on_terminal ? printable(e.text) : e.text).c_str(), out_);
                   std::fflush(out_);
                   text_open_ = !e.text.empty() && e.text.back() != '\n';
                   streamed_answer_ = true;
                 },
                 [&](const ModelCallFinished&) {
                   if (!nested) end_text_line();
                 },
                 [&](const ToolCallStarted& e) {
                   const std::string key = call_key(e.call.id, nested);
                   started_[key] = std::chrono::steady_clock::now();
                   const std::string what = e.status.empty() || e.status == e.call.name
                                                ? call_preview(e.call)
                                                : first_line(e.status, kErrorChars);
                   status(indent + mark(styled, kDim, "⋯") + " " + what, {}, key);
                 },
                 [&](const ToolSpan& e) { spans_[call_key(e.call_id, nested)] = e.duration; },
                 [&](const ToolCallFinished& e) {
                   const std::string key = call_key(e.call_id, nested);
                   status(indent + finished_line(e, took(key), styled), key, {});
                   started_.erase(key);
                   spans_.erase(key);
                 },
                 [&](const ToolCallRefused& e) {
                   status(indent + mark(styled, kRed, "✗") + " " + call_preview(e.call) + ": " +
                              first_line(e.error, kErrorChars),
                          {}, {});
                 },
                 [&](const ApprovalDecided& e) {
                   std::string line = indent;
                   if (e.decision == ApprovalVerdict::rejected) {
                     line += mark(styled, kYellow, "⊘") + " " + first_line(e.call.name, kPreviewChars) + " rejected";
                     if (!e.reason.empty()) line += ": " + first_line(e.reason, kErrorChars);
                   } else {
                     line += mark(styled, kGreen, "✓") + " " + call_preview(e.call) + " " + std::string(to_string(e.decision));
                   }
                   status(line, {}, {});
                 },
                 [&](const Progress& e) { status(indent + "  · " + first_line(e.message, kErrorChars), {}, {}); },
                 [&](const McpProgress& e) {
                   std::string line = indent + "  · " + e.server + "/" + e.tool + " " + number(e.progress);
                   if (e.total) line += "/" + number(*e.total);
                   if (!e.message.empty()) line += " " + first_line(e.message, kErrorChars);
                   status(line, {}, {});
                 },
                 [](const RunSuspended&) {},
                 [](const RunFinished&) {},
                 // The call shows when it starts; reasoning is not shown.
                 [](const ToolCallDelta&) {},
                 [](const ReasoningDelta&) {},
                 [&](const ContextCompacted& e) {
                   status(indent + "  · context " + (e.summarized ? "summarised" : "trimmed") + ": ~" +
                              std::to_string(e.tokens_before) + " -> ~" + std::to_string(e.tokens_after) + " tokens",
                          {}, {});
                 },
                 [&](const HandoffOccurred& e) {
                   status(indent + mark(styled, kGreen, "→") + " handoff: " + e.from + " -> " + e.to, {}, {});
                 },
                 [&](const GuardrailChecked& e) {
                   if (e.verdict == "pass") return;
                   status(indent + mark(styled, e.verdict == "trip" ? kRed : kYellow, "⛨") + " guardrail " +
                              e.guardrail + " (" + e.stage + "): " + e.verdict + ": " + first_line(e.message, kErrorChars),
                          {}, {});
                 },
             },
             event);
}

std::chrono::microseconds Terminal::took(const std::string& key) const {
  // The tracing span's duration when there is one, else the time since the
  // started event was shown.
  if (auto span = spans_.find(key); span != spans_.end()) return span->second;
  if (auto start = started_.find(key); start != started_.end()) {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start->second);
  }
  return std::chrono::microseconds(0);
}

void Terminal::status(const std::string& line, const std::string& replaces, const std::string& opens) {
  // On a terminal, a call's finished line replaces its started line when
  // nothing was printed in between: the started line is left open (no
  // newline) until then.
  if (options_.styled && !replaces.empty() && replaces == open_status_) {
    std::fputs("\r\033[2K", err_);
    open_status_.clear();
  } else {
    close_status();
    end_text_line();
  }
  std::fputs(line.c_str(), err_);
  if (options_.styled && !opens.empty()) {
    open_status_ = opens;
  } else {
    std::fputs("\n", err_);
  }
  std::fflush(err_);
}

void Terminal::close_status() {
  if (open_status_.empty()) return;
  std::fputs("\n", err_);
  std::fflush(err_);
  open_status_.clear();
}

void Terminal::end_text_line() {
  if (text_open_) {
    std::fputs("\n", out_);
    std::fflush(out_);
    text_open_ = false;
  }
}

void Terminal::note(const std::string& text) {
  close_status();
  end_text_line();
  std::fputs((text + "\n").c_str(), err_);
  std::fflush(err_);
}

void Terminal::outcome(const RunResult& result, const std::string& resume_command) {
  if (options_.json) {
    std::fputs((canonical_dump(result_json(result, resume_command)) + "\n").c_str(), out_);
    std::fflush(out_);
    return;
  }
  close_status();
  end_text_line();
  switch (result.stop_reason) {
    case StopReason::answered:
      if (!streamed_answer_) {
        std::fputs(((options_.text_on_terminal ? printable(result.output) : result.output) + "\n").c_str(), out_);
      }
      break;
    case StopReason::suspended: {
      std::string text = "Run " + result.state.run_id + " is waiting for approval:\n";
      if (result.suspended) {
        for (const auto& call : result.suspended->pending) {
          text += "  " + call.id + "  " + call_preview(call) + "\n";
        }
      }
      text += "Approve with: " + resume_command + " --approve all\n";
      text += "  (or --approve ID, --reject ID[:reason]; without them on a terminal, it asks)\n";
      std::fputs(text.c_str(), out_);
      break;
    }
    default:
      note("run " + result.state.run_id + " stopped (" + std::string(to_string(result.stop_reason)) + ")" +
           (result.failure ? ": " + result.failure->message + " [" + std::string(to_string(result.failure->code)) + "]" : ""));
      break;
  }
  std::fflush(out_);
}

namespace {

// Asks until the answer is a JSON object; nullopt when input ends.
template <class Ask>
std::optional<Json> ask_arguments(const Ask& ask, std::FILE* prompt) {
  while (true) {
    const auto text = ask("  arguments (a JSON object): ");
    if (!text) return std::nullopt;
    try {
      Json arguments = Json::parse(*text);
      if (arguments.is_object()) return arguments;
      std::fputs("  not a JSON object\n", prompt);
    } catch (const Json::exception& e) {
      std::fputs(("  not JSON: " + first_line(e.what(), kErrorChars) + "\n").c_str(), prompt);
    }
  }
}

}  // namespace

std::optional<Decisions> ask_decisions(const std::vector<ToolCall>& pending, std::istream& in, std::FILE* prompt) {
  auto ask = [&](const std::string& question) -> std::optional<std::string> {
    std::fputs(question.c_str(), prompt);
    std::fflush(prompt);
    std::string line;
    if (!std::getline(in, line)) return std::nullopt;
    return line;
  };
  Decisions decisions;
  for (const ToolCall& call : pending) {
    std::fputs(
        ("? " + first_line(call.name, kPreviewChars) + " " + canonical_dump(call_json(call)["arguments"]) + "\n").c_str(),
        prompt);
    while (!decisions.contains(call.id)) {
      const auto choice = ask("  [a]pprove, [r]eject, [e]dit? ");
      if (!choice) return std::nullopt;
      if (*choice == "a" || *choice == "approve" || *choice == "y" || *choice == "yes") {
        decisions[call.id] = Decision::approve();
      } else if (*choice == "r" || *choice == "reject" || *choice == "n" || *choice == "no") {
        const auto reason = ask("  reason (optional): ");
        if (!reason) return std::nullopt;
        decisions[call.id] = Decision::reject(*reason);
      } else if (*choice == "e" || *choice == "edit") {
        auto arguments = ask_arguments(ask, prompt);
        if (!arguments) return std::nullopt;
        decisions[call.id] = Decision::edit(std::move(*arguments));
      } else {
        std::fputs("  answer a, r or e\n", prompt);
      }
    }
  }
  return decisions;
}

}  // namespace agentkit::cli
