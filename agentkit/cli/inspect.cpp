#include "inspect.h"

#include <algorithm>
#include <cinttypes>
#include <cstdint>

#include <agentkit/agent.h>

#include "terminal.h"

namespace agentkit::cli {
namespace {

constexpr std::size_t kIdChars = 40;
constexpr std::size_t kLineChars = 120;
constexpr std::int64_t kHour = 3'600'000'000;

std::int64_t micros(std::chrono::system_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

// "+12.345s" from the run's start, "+11m39.2s" past a minute, "+2h03m12s"
// past an hour.
std::string offset_text(std::int64_t us) {
  char text[48];
  if (us < 0) us = 0;
  if (us < 60'000'000) {
    std::snprintf(text, sizeof text, "+%.3fs", static_cast<double>(us) / 1e6);
  } else if (us < kHour) {
    std::snprintf(text, sizeof text, "+%" PRId64 "m%04.1fs", us / 60'000'000, static_cast<double>(us % 60'000'000) / 1e6);
  } else {
    std::snprintf(text, sizeof text, "+%" PRId64 "h%02" PRId64 "m%02" PRId64 "s", us / kHour, us / 60'000'000 % 60,
                  us / 1'000'000 % 60);
  }
  return text;
}

// Width in code points, so "…" counts once.
std::size_t display_width(const std::string& text) {
  std::size_t shown = 0;
  for (unsigned char c : text) shown += (c & 0xC0) != 0x80;
  return shown;
}

std::string pad(const std::string& text, std::size_t width) {
  const std::size_t shown = display_width(text);
  return shown >= width ? text : text + std::string(width - shown, ' ');
}

const char* outcome_mark(const std::string& outcome) {
  if (outcome == "ok") return "✓";
  if (outcome == "awaiting_approval") return "⏸";
  if (outcome == "denied") return "⊘";
  if (outcome == "interrupted") return "·";
  if (outcome == "outcome_unknown") return "?";
  if (outcome.empty()) return "·";
  return "✗";
}

std::string tool_preview(const Step& step) {
  if (step.call) return call_preview(*step.call);
  return first_line(step.tool, 60) + "(…)";
}

std::string status_of(const RunNode& node) { return node.state ? run_status(*node.state) : "unknown"; }

// ------------------------------------------------------------- text

class TextView {
 public:
  TextView(std::FILE* out, TimePoint origin) : out_(out), origin_(origin) {}

  void line(const std::string& text) { std::fputs((text + "\n").c_str(), out_); }

  void node(const RunNode& node, int depth) {
    const std::string indent(2 + 4 * static_cast<std::size_t>(depth), ' ');
    if (!node.from_spans) {
      line(indent + "(no spans stored for run " + first_line(node.run_id, kIdChars) +
           ": written by an older agentkit; the steps come from its history, without times or per-call usage)");
    }
    for (std::size_t p = 0; p < node.parts.size(); ++p) {
      const Part& part = node.parts[p];
      if (node.from_spans && !part.stored) {
        line(indent + "── part " + std::to_string(p + 1) +
             " (its span is not stored: the run is running, or its process ended mid-step) ──");
      } else if (part.resumed) {
        line(indent + "── resumed " + clock_text(part.start) + " (part " + std::to_string(p + 1) + ") ──");
      }
      for (const Step& step : part.steps) this->step(step, depth);
      if (part.stored && !part.stop_reason.empty() && node.parts.size() > 1) {
        line(indent + "   part " + std::to_string(p + 1) + " ended: " + first_line(part.stop_reason, kIdChars));
      }
    }
  }

  void ending(const RunNode& node, const std::string& indent) {
    if (!node.state) {
      line(indent + "(its stored state is missing or unreadable)");
      return;
    }
    const RunState& s = *node.state;
    const std::string status = run_status(s);
    if (status == "answered") {
      if (node.run_id.empty() || indent.size() > 2) {
        line(indent + "answer: " + first_line(s.output, kLineChars));
      } else {
        line(indent + "answer:");
        line(printable(s.output));
      }
    } else if (status == "suspended") {
      line(indent + "awaiting approval:");
      for (const auto& call : suspension_of(s).pending) line(indent + "  " + first_line(call.id, kIdChars) + "  " + call_preview(call));
    } else if (status == "running") {
      line(indent + "running, or interrupted at " + std::string(to_string(s.phase)) +
           " (agentkit resume " + first_line(s.run_id, kIdChars) + " recovers it)");
    } else if (s.failure) {
      line(indent + "error [" + std::string(to_string(s.failure->code)) + "]: " + first_line(s.failure->message, kLineChars));
    } else {
      line(indent + "stopped: " + status);
    }
  }

 private:
  std::string offset(const Step& step) const {
    return pad(step.timed ? offset_text(micros(step.start - origin_)) : std::string("step"), 12);
  }

  void step(const Step& step, int depth) {
    const std::string indent(2 + 4 * static_cast<std::size_t>(depth), ' ');
    const std::string blank(indent.size() + 12, ' ');
    const std::string took = step.timed ? "  " + duration_text(micros(step.end - step.start)) : "";
    if (step.kind == Step::Kind::model) {
      std::string text = indent + offset(step) + "model  " + pad(first_line(step.model.empty() ? "model" : step.model, 40), 24);
      if (step.has_usage) text += "  " + std::to_string(step.input_tokens) + " in / " + std::to_string(step.output_tokens) + " out";
      text += took;
      if (!step.finish_reason.empty()) text += "  " + first_line(step.finish_reason, kIdChars);
      if (step.cost_usd) text += "  " + cost_text(*step.cost_usd);
      if (!step.error_type.empty()) {
        text += "  ✗ " + first_line(step.error_type, kIdChars) + ": " + first_line(step.error_message, kLineChars);
      }
      line(text);
      return;
    }
    std::string text = indent + offset(step) + "tool   " + outcome_mark(step.outcome) + " " + tool_preview(step) + "  " +
                       (step.outcome.empty() ? std::string("no result") : first_line(step.outcome, kIdChars)) + took;
    if (!step.error_message.empty() && step.outcome != "awaiting_approval") {
      text += ": " + first_line(step.error_message, kLineChars);
    }
    line(text);
    for (const ApprovalMark& a : step.approvals) {
      line(blank + "       approval " + (a.kind == "requested" ? std::string("requested") : first_line(a.decision, kIdChars)) +
           " " + clock_text(a.time));
    }
    for (const RunNode& sub : step.sub_runs) {
      const std::string sub_indent(2 + 4 * static_cast<std::size_t>(depth + 1), ' ');
      line(sub_indent + "↳ sub-run " + first_line(sub.run_id, 2 * kIdChars) + " (agent " +
           first_line(sub.agent, kIdChars) + ") " + status_of(sub));
      node(sub, depth + 1);
      ending(sub, sub_indent + "  ");
    }
  }

  std::FILE* out_;
  TimePoint origin_;
};

// ------------------------------------------------------------- JSON

Json time_json(TimePoint t) { return t == TimePoint{} ? Json(nullptr) : Json(rfc3339_millis(t)); }

Json node_json(const RunNode& node);

Json step_json(const Step& step) {
  Json j = {{"type", step.kind == Step::Kind::model ? "model" : "tool"}};
  if (!step.span_id.empty()) j["span_id"] = step.span_id;
  if (step.timed) {
    j["start"] = time_json(step.start);
    j["duration_ms"] = static_cast<double>(micros(step.end - step.start)) / 1000.0;
  }
  if (!step.error_type.empty()) j["error_type"] = step.error_type;
  if (!step.error_message.empty()) j["error"] = step.error_message;
  if (step.kind == Step::Kind::model) {
    j["iteration"] = step.iteration;
    j["model"] = step.model;
    if (step.has_usage) {
      j["input_tokens"] = step.input_tokens;
      j["output_tokens"] = step.output_tokens;
    }
    if (step.cost_usd) j["cost_usd"] = *step.cost_usd;
    if (!step.finish_reason.empty()) j["finish_reason"] = step.finish_reason;
    return j;
  }
  j["name"] = step.tool;
  j["call_id"] = step.call_id;
  if (step.call) j["arguments"] = step.call->arguments_text.empty() ? step.call->arguments : Json(step.call->arguments_text);
  j["outcome"] = step.outcome;
  Json approvals = Json::array();
  for (const auto& a : step.approvals) {
    Json e = {{"event", a.kind}, {"time", time_json(a.time)}};
    if (!a.decision.empty()) e["decision"] = a.decision;
    approvals.push_back(std::move(e));
  }
  j["approvals"] = std::move(approvals);
  Json subs = Json::array();
  for (const auto& sub : step.sub_runs) subs.push_back(node_json(sub));
  j["sub_runs"] = std::move(subs);
  return j;
}

Json node_json(const RunNode& node) {
  Json j = {{"run_id", node.run_id}, {"agent", node.agent}, {"status", status_of(node)}, {"from_spans", node.from_spans}};
  if (!node.agent_path.empty()) j["agent_path"] = node.agent_path;
  if (node.state) {
    j["task"] = node.state->task;
    j["output"] = node.state->output;
    if (node.state->failure) {
      j["error"] = {{"code", to_string(node.state->failure->code)}, {"message", node.state->failure->message}};
    }
  }
  Json parts = Json::array();
  for (const Part& part : node.parts) {
    Json steps = Json::array();
    for (const Step& step : part.steps) steps.push_back(step_json(step));
    Json p = {{"stored", part.stored}, {"resumed", part.resumed}, {"steps", std::move(steps)}};
    if (!part.span_id.empty()) p["span_id"] = part.span_id;
    if (part.start != TimePoint{}) {
      p["start"] = time_json(part.start);
      p["end"] = time_json(part.end);
    }
    if (!part.stop_reason.empty()) p["stop_reason"] = part.stop_reason;
    parts.push_back(std::move(p));
  }
  j["parts"] = std::move(parts);
  return j;
}

}  // namespace

// "0.4 ms", "312 ms", "4.21 s", "3 min 12 s", "2 h 3 min".
std::string duration_text(std::int64_t us) {
  char text[48];
  if (us < 0) us = 0;
  if (us < 1000) {
    std::snprintf(text, sizeof text, "%.1f ms", static_cast<double>(us) / 1000.0);
  } else if (us < 1'000'000) {
    std::snprintf(text, sizeof text, "%" PRId64 " ms", us / 1000);
  } else if (us < 60'000'000) {
    std::snprintf(text, sizeof text, "%.2f s", static_cast<double>(us) / 1e6);
  } else if (us < kHour) {
    std::snprintf(text, sizeof text, "%" PRId64 " min %" PRId64 " s", us / 60'000'000, us / 1'000'000 % 60);
  } else {
    std::snprintf(text, sizeof text, "%" PRId64 " h %" PRId64 " min", us / kHour, us / 60'000'000 % 60);
  }
  return text;
}

// "2026-12-01 18:24:17 UTC".
std::string clock_text(TimePoint time) {
  std::string t = rfc3339_millis(time);
  return t.substr(0, 10) + " " + t.substr(11, 8) + " UTC";
}

std::string cost_text(double usd) {
  char text[32];
  std::snprintf(text, sizeof text, "$%.4f", usd);
  return text;
}

Json run_summary_json(const RunSummary& run) {
  Json j = {{"run_id", run.run_id}, {"status", run.status()}};
  j["started"] = run.started ? Json(rfc3339_millis(*run.started)) : Json(nullptr);
  if (const auto& s = run.state) {
    j["agent"] = s->agent;
    j["phase"] = to_string(s->phase);
    j["steps"] = s->iterations;
    j["tool_calls"] = s->tool_calls;
    j["input_tokens"] = s->usage.input_tokens;
    j["output_tokens"] = s->usage.output_tokens;
    j["cost_usd"] = s->cost_usd;
    j["pending"] = s->phase == Phase::suspended ? s->pending.size() : 0;
    if (s->failure && s->stop_reason != StopReason::answered && s->stop_reason != StopReason::suspended) {
      j["error_code"] = to_string(s->failure->code);
    }
  }
  if (!run.problem.empty()) j["problem"] = run.problem;
  return j;
}

void print_runs(const std::vector<RunSummary>& runs, std::FILE* out) {
  std::vector<std::vector<std::string>> rows = {{"RUN", "AGENT", "STATUS", "STARTED", "STEPS", "TOKENS", "COST", "PENDING"}};
  for (const auto& run : runs) {
    std::vector<std::string> row = {first_line(run.run_id, kIdChars), "?", run.status(),
                                    run.started ? clock_text(*run.started) : (run.problem.empty() || !run.state ? "-" : "?"),
                                    "?", "?", "?", "?"};
    if (const auto& s = run.state) {
      row[1] = first_line(s->agent, kIdChars);
      row[4] = std::to_string(s->iterations);
      row[5] = std::to_string(s->usage.input_tokens) + "/" + std::to_string(s->usage.output_tokens);
      row[6] = s->cost_usd > 0 ? cost_text(s->cost_usd) : "-";
      row[7] = std::to_string(s->phase == Phase::suspended ? s->pending.size() : 0);
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], display_width(row[c]));
  }
  for (const auto& row : rows) {
    std::string text;
    for (std::size_t c = 0; c < row.size(); ++c) text += c + 1 == row.size() ? row[c] : pad(row[c], widths[c] + 2);
    std::fputs((text + "\n").c_str(), out);
  }
}

void print_view(const RunView& view, std::FILE* out) {
  const RunNode& root = view.root;
  TextView text(out, view.started.value_or(TimePoint{}));
  const std::string status = status_of(root);
  text.line("run " + first_line(root.run_id, kIdChars) + "  agent " + first_line(root.agent, kIdChars) + "  " + status);
  if (root.state) {
    const RunState& s = *root.state;
    std::string totals = view.started ? "started " + clock_text(*view.started) : std::string("started -");
    if (view.started && view.ended) totals += " · " + duration_text(micros(*view.ended - *view.started));
    totals += " · " + std::to_string(s.iterations) + " model call" + (s.iterations == 1 ? "" : "s") + " · " +
              std::to_string(s.tool_calls) + " tool call" + (s.tool_calls == 1 ? "" : "s") + " · " +
              std::to_string(s.usage.input_tokens) + " in / " + std::to_string(s.usage.output_tokens) + " out tokens";
    if (s.cost_usd > 0) totals += " · " + cost_text(s.cost_usd);
    text.line(totals);
    text.line("task: " + first_line(s.task, kLineChars));
  }
  text.line("");
  text.node(root, 0);
  text.line("");
  text.ending(root, "");
}

Json view_json(const RunView& view) {
  RunSummary summary{view.root.run_id, view.root.state, {}, view.started};
  Json j = node_json(view.root);
  j["run"] = run_summary_json(summary);
  if (view.ended) j["end"] = rfc3339_millis(*view.ended);
  j["problems"] = view.problems;
  return j;
}

}  // namespace agentkit::cli
