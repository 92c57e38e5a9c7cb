// `agentkit show RUN_ID --html FILE`: one self-contained page per run.
//
// Everything from the run (model text, tool arguments and results, names,
// ids, media types) is untrusted: it goes through escape() into text or a
// quoted attribute, never into a script, a style or a URL other than a
// data: URI built from bytes we encode ourselves. As a second line of
// defence the page's Content-Security-Policy lets only its own script (by
// its SHA-256) run, and loads nothing but data: images.
#include <openssl/evp.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <regex>
#include <string_view>

#include "inspect.h"
#include "terminal.h"

namespace agentkit::cli {
namespace {

#ifdef AGENTKIT_VERSION
constexpr std::string_view kVersion = AGENTKIT_VERSION;
#else
constexpr std::string_view kVersion = "";
#endif

// HTML text or a double- or single-quoted attribute value.
std::string escape(std::string_view raw) {
  const std::string text = sanitize_utf8(std::string(raw));
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      case '\0': out += "&#xFFFD;"; break;
      default: out += c;
    }
  }
  return out;
}

std::int64_t micros(std::chrono::system_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

std::string fixed(double value, int digits) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

// The base64 SHA-256 of `text`, as a CSP source expression wants it.
std::string sha256_base64(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr)) {
    throw Error(ErrorCode::internal, "SHA-256 failed");
  }
  return base64_encode(std::string_view(reinterpret_cast<const char*>(digest), length));
}

std::string status_of(const RunNode& node) { return node.state ? run_status(*node.state) : "unknown"; }

// The CSS class of a bar: what kind of call, how it ended.
std::string outcome_class(const Step& step) {
  if (step.kind == Step::Kind::model) return step.error_type.empty() ? "model" : "failed";
  if (step.outcome == "ok") return "ok";
  if (step.outcome == "awaiting_approval") return "awaiting";
  if (step.outcome == "denied") return "denied";
  if (step.outcome == "interrupted") return "interrupted";
  if (step.outcome == "outcome_unknown") return "unknown";
  return "failed";
}

std::string tool_label(const Step& step) {
  if (step.call) return call_preview(*step.call);
  return first_line(step.tool, 60) + "(…)";
}

// Maps a time to a position on the timeline, 0..1. The run's parts are laid
// end to end with a fixed gap between them, so a run resumed hours later
// still shows its calls side by side.
class TimeAxis {
 public:
  static constexpr double kGap = 0.04;

  explicit TimeAxis(const RunNode& root) {
    for (const Part& part : root.parts) {
      if (part.start == TimePoint{}) continue;
      segments_.push_back({part.start, std::max(part.end, part.start)});
    }
    std::sort(segments_.begin(), segments_.end());
    std::vector<std::pair<TimePoint, TimePoint>> merged;
    for (const auto& s : segments_) {
      if (!merged.empty() && s.first <= merged.back().second) {
        merged.back().second = std::max(merged.back().second, s.second);
      } else {
        merged.push_back(s);
      }
    }
    segments_ = std::move(merged);
    for (const auto& [start, end] : segments_) active_ += std::max<std::int64_t>(micros(end - start), 1);
    active_share_ = segments_.size() > 1 ? 1.0 - kGap * static_cast<double>(segments_.size() - 1) : 1.0;
    double base = 0;
    for (const auto& [start, end] : segments_) {
      bases_.push_back(base);
      base += share(start, end) + kGap;
    }
  }

  bool usable() const { return !segments_.empty(); }

  double at(TimePoint t) const {
    for (std::size_t i = 0; i < segments_.size(); ++i) {
      const auto& [start, end] = segments_[i];
      if (t < start) return i == 0 ? 0.0 : bases_[i] - kGap / 2;
      if (t <= end) return bases_[i] + share(start, t);
    }
    return 1.0;
  }

  // Segment starts and the gaps between them, for the axis.
  struct Mark {
    double at;
    TimePoint time;
    std::int64_t gap_us;  // > 0: the idle time before this segment
  };
  std::vector<Mark> marks() const {
    std::vector<Mark> out;
    for (std::size_t i = 0; i < segments_.size(); ++i) {
      out.push_back({bases_[i], segments_[i].first, i == 0 ? 0 : micros(segments_[i].first - segments_[i - 1].second)});
    }
    if (!segments_.empty()) out.push_back({1.0, segments_.back().second, 0});
    return out;
  }
  const std::vector<std::pair<TimePoint, TimePoint>>& segments() const { return segments_; }

 private:
  double share(TimePoint start, TimePoint t) const {
    return static_cast<double>(std::max<std::int64_t>(micros(t - start), 0)) / static_cast<double>(active_) * active_share_;
  }

  std::vector<std::pair<TimePoint, TimePoint>> segments_;
  std::vector<double> bases_;
  std::int64_t active_ = 0;
  double active_share_ = 1.0;
};

std::string percent(double fraction) { return fixed(std::clamp(fraction, 0.0, 1.0) * 100.0, 3) + "%"; }

constexpr std::string_view kStyle = R"CSS(
:root{--model:#4f6bed;--ok:#2e9d5b;--failed:#d64545;--denied:#e08a1e;--awaiting:#d8b21c;--unknown:#8e5bd6;--interrupted:#9aa0a6;--ink:#1d2330;--muted:#667085;--line:#e4e7ec;--bg:#f7f8fa}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
main{max-width:1400px;margin:0 auto;padding:20px 24px 48px}
h1{font-size:20px;margin:0 0 6px;word-break:break-all}
h2{font-size:16px;margin:28px 0 10px}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre{white-space:pre-wrap;word-break:break-word;margin:4px 0}
.badges span{display:inline-block;margin:2px 6px 2px 0;padding:2px 8px;border-radius:10px;background:#fff;border:1px solid var(--line)}
.status-answered{background:#e3f4ea!important;border-color:#b5dfc5!important}
.status-failed,.status-cancelled,.status-unreadable,.status-budget_exhausted,.status-max_iterations,.status-guardrail_tripped{background:#fbe4e4!important;border-color:#f1b8b8!important}
.status-suspended,.status-running{background:#fdf5d8!important;border-color:#eddc9c!important}
.box{background:#fff;border:1px solid var(--line);border-radius:8px;padding:10px 14px;margin:10px 0}
.box.error{border-color:#f1b8b8;background:#fff6f6}
.box.warn{border-color:#eddc9c;background:#fffbeb}
.label{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
#ak-timeline{background:#fff;border:1px solid var(--line);border-radius:8px;padding:6px 0}
.row{display:grid;grid-template-columns:minmax(220px,30%) 1fr 90px;align-items:center;min-height:24px;padding:0 10px}
.row.step{cursor:pointer}
.row.step:hover{background:#f2f4f7}
.row .name{white-space:nowrap;overflow:hidden;text-overflow:ellipsis;padding-right:8px}
.row .track{position:relative;height:16px}
.row .took{text-align:right;color:var(--muted);font-size:12px}
.bar{position:absolute;top:2px;height:12px;border-radius:3px;min-width:3px}
.bar.model{background:var(--model)}.bar.ok{background:var(--ok)}.bar.failed{background:var(--failed)}.bar.denied{background:var(--denied)}
.bar.awaiting{background:var(--awaiting)}.bar.unknown{background:var(--unknown)}.bar.interrupted{background:var(--interrupted)}
.bar.run{background:#c9d3f8;height:6px;top:5px}.bar.part{background:#d0d5dd;height:4px;top:6px}
.row.part .name,.row.run .name{color:var(--muted);font-size:12px}
.axis{position:relative;height:22px;border-bottom:1px solid var(--line)}
.gapband{position:absolute;top:0;bottom:0;background:repeating-linear-gradient(135deg,#eef0f4 0 4px,#fff 4px 8px)}
.axis span{position:absolute;top:2px;font-size:11px;color:var(--muted);white-space:nowrap;transform:translateX(-50%)}
.axis span.first{transform:none}.axis span.last{transform:translateX(-100%)}
.legend span{display:inline-block;margin-right:12px;font-size:12px;color:var(--muted)}
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;vertical-align:-1px}
table{border-collapse:collapse;background:#fff;border:1px solid var(--line);border-radius:8px;width:100%}
th,td{text-align:left;padding:5px 10px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:12px;color:var(--muted);font-weight:600;background:#fbfcfd}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr.total td{font-weight:600}
.msg{background:#fff;border:1px solid var(--line);border-left:4px solid #d0d5dd;border-radius:6px;padding:8px 12px;margin:8px 0}
.msg.user{border-left-color:#7a8699}.msg.assistant{border-left-color:var(--model)}.msg.tool{border-left-color:var(--ok)}
.msg.tool.is-error{border-left-color:var(--failed)}.msg.session{opacity:.7}
.msg .who{font-size:12px;color:var(--muted);margin-bottom:2px}
.call{border:1px dashed #c7cede;border-radius:6px;padding:6px 10px;margin:6px 0;background:#fafbff}
.reasoning summary,.sub summary{cursor:pointer;color:var(--muted)}
.sub{margin:8px 0 8px 18px;padding-left:10px;border-left:2px solid #c9d3f8}
.refusal{color:var(--failed)}
img.part{max-width:480px;max-height:360px;display:block;margin:6px 0;border:1px solid var(--line);border-radius:4px}
.flash{outline:3px solid var(--awaiting);outline-offset:2px}
#ak-errors{color:var(--failed)}
footer{margin-top:32px;color:var(--muted);font-size:12px}
)CSS";

// The page's only script: clicking a timeline row shows its call in the
// conversation; then it marks #ak-status as rendered. Its errors go to
// #ak-errors. No data from the run is in it (the CSP hash covers it).
constexpr std::string_view kScript = R"JS(
(function () {
  'use strict';
  var errors = document.getElementById('ak-errors');
  function report(message) {
    errors.hidden = false;
    errors.textContent += message + '\n';
  }
  window.addEventListener('error', function (e) { report('error: ' + (e.message || 'unknown')); });
  try {
    var steps = document.querySelectorAll('#ak-timeline .row.step');
    var targets = document.querySelectorAll('#ak-conversation [data-call]');
    Array.prototype.forEach.call(steps, function (row) {
      row.addEventListener('click', function () {
        var call = row.getAttribute('data-call'), run = row.getAttribute('data-run');
        var target = null;
        Array.prototype.forEach.call(targets, function (el) {
          if (!target && el.getAttribute('data-call') === call && el.getAttribute('data-run') === run) target = el;
        });
        if (!target) {
          Array.prototype.forEach.call(document.querySelectorAll('#ak-steps tr[data-span]'), function (tr) {
            if (!target && tr.getAttribute('data-span') === row.getAttribute('data-span')) target = tr;
          });
        }
        if (!target) return;
        for (var up = target.parentElement; up; up = up.parentElement) {
          if (up.tagName === 'DETAILS') up.open = true;
        }
        target.scrollIntoView({block: 'center'});
        target.classList.add('flash');
        setTimeout(function () { target.classList.remove('flash'); }, 1500);
      });
    });
    var status = document.getElementById('ak-status');
    status.setAttribute('data-steps', String(steps.length));
    status.setAttribute('data-state', 'ok');
    status.textContent = 'rendered: ' + steps.length + ' steps';
  } catch (e) {
    report('error: ' + (e && e.message ? e.message : String(e)));
  }
})();
)JS";

// Step differences as a table with the given id: step, what, path, a, b.
std::string differences_table(const std::vector<StepDifference>& differences, std::string_view id) {
  std::string out = "<table id=\"" + std::string(id) + "\">\n<tr><th>step</th><th>what</th><th>path</th><th>a</th><th>b</th></tr>\n";
  for (const StepDifference& d : differences) {
    out += "<tr><td class=\"mono\">" + escape(d.where) + "</td><td>" + escape(d.what) + "</td><td class=\"mono\">" +
           escape(d.path) + "</td><td><pre>" + escape(d.a) + "</pre></td><td><pre>" + escape(d.b) + "</pre></td></tr>\n";
  }
  return out + "</table>\n";
}

class Page {
 public:
  Page(const RunView& view, const std::optional<RunComparison>& against)
      : view_(view), against_(against), axis_(view.root) {}

  std::string render() {
    const RunNode& root = view_.root;
    out_ += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    out_ += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
            "style-src 'unsafe-inline'; script-src 'sha256-" +
            sha256_base64(kScript) + "'; base-uri 'none'; form-action 'none'\">\n";
    out_ += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    out_ += "<title>agentkit run " + escape(root.run_id) + "</title>\n<style>" + std::string(kStyle) + "</style>\n";
    out_ += "</head>\n<body>\n<main>\n";
    header();
    comparison();
    timeline();
    steps_table();
    conversation();
    approvals();
    out_ += "<footer>agentkit " + escape(kVersion) +
            " · <span id=\"ak-status\" data-state=\"static\">static page (script not run)</span>"
            "<pre id=\"ak-errors\" hidden></pre></footer>\n";
    out_ += "</main>\n<script>" + std::string(kScript) + "</script>\n</body>\n</html>\n";
    return std::move(out_);
  }

 private:
  void header() {
    const RunNode& root = view_.root;
    const std::string status = status_of(root);
    out_ += "<h1>Run <span class=\"mono\">" + escape(root.run_id) + "</span></h1>\n<div class=\"badges\">";
    out_ += "<span>agent <b>" + escape(root.agent) + "</b></span>";
    out_ += "<span class=\"status-" + escape(status) + "\" id=\"ak-run-status\">" + escape(status) + "</span>";
    if (view_.started) out_ += "<span>started " + escape(clock_text(*view_.started)) + "</span>";
    if (view_.started && view_.ended) out_ += "<span>" + escape(duration_text(micros(*view_.ended - *view_.started))) + "</span>";
    if (const auto& s = root.state) {
      out_ += "<span>" + std::to_string(s->iterations) + (s->iterations == 1 ? " model call" : " model calls") + "</span>";
      out_ += "<span>" + std::to_string(s->tool_calls) + (s->tool_calls == 1 ? " tool call" : " tool calls") + "</span>";
      out_ += "<span>" + std::to_string(s->usage.input_tokens) + " in / " + std::to_string(s->usage.output_tokens) +
              " out tokens</span>";
      if (s->cost_usd > 0) out_ += "<span>" + escape(cost_text(s->cost_usd)) + "</span>";
    }
    out_ += "</div>\n";
    if (const auto& s = root.state) {
      out_ += "<div class=\"box\"><div class=\"label\">Task</div><pre>" + escape(s->task) + "</pre></div>\n";
      if (status == "answered") {
        out_ += "<div class=\"box\" id=\"ak-answer\"><div class=\"label\">Answer</div><pre>" + escape(s->output) +
                "</pre></div>\n";
      } else if (status == "suspended") {
        out_ += "<div class=\"box warn\" id=\"ak-pending\"><div class=\"label\">Awaiting approval</div>";
        for (const auto& call : s->pending_calls()) {
          out_ += "<div><code>" + escape(call.id) + "</code> " + escape(call_preview(call)) + "</div>";
        }
        out_ += "<div class=\"mono\">agentkit resume " + escape(s->run_id) + " --approve all</div></div>\n";
      } else if (status == "running") {
        out_ += "<div class=\"box warn\">Running, or interrupted mid-step (" + escape(to_string(s->phase)) +
                "): <span class=\"mono\">agentkit resume " + escape(s->run_id) + "</span> recovers it.</div>\n";
      } else if (s->failure) {
        out_ += "<div class=\"box error\" id=\"ak-error\"><div class=\"label\">Stopped: " + escape(status) +
                "</div><b>" + escape(to_string(s->failure->code)) + "</b>: <pre>" + escape(s->failure->message) +
                "</pre></div>\n";
      }
    }
    std::vector<std::string> notes = view_.problems;
    if (!root.from_spans) {
      notes.insert(notes.begin(), "No spans are stored for this run (written by an older agentkit): the steps come "
                                  "from its history, without times or per-call usage.");
    }
    if (!notes.empty()) {
      out_ += "<div class=\"box warn\" id=\"ak-problems\">";
      for (const auto& note : notes) out_ += "<div>" + escape(note) + "</div>";
      out_ += "</div>\n";
    }
  }

  void comparison() {
    if (!against_) return;
    const auto& differences = against_->differences;
    out_ += "<h2>Compared with run <span class=\"mono\">" + escape(against_->run_id) + "</span></h2>\n";
    if (differences.empty()) {
      out_ += "<p id=\"ak-against\">No differences: the runs took the same steps with the same results.</p>\n";
      return;
    }
    out_ += "<p>" + std::to_string(differences.size()) + (differences.size() == 1 ? " step differs" : " steps differ") +
            " (a: this run, b: run " + escape(against_->run_id) + "); each with its first difference.</p>\n";
    out_ += differences_table(differences, "ak-against");
  }

  void timeline() {
    out_ += "<h2>Timeline</h2>\n<div class=\"legend\">";
    for (const auto& [cls, name] : std::vector<std::pair<const char*, const char*>>{
             {"model", "model call"}, {"ok", "tool ok"}, {"failed", "error"}, {"denied", "denied"},
             {"awaiting", "awaiting approval"}, {"unknown", "outcome unknown"}, {"interrupted", "interrupted"}}) {
      out_ += std::string("<span><i style=\"background:var(--") + cls + ")\"></i>" + name + "</span>";
    }
    out_ += "</div>\n<div id=\"ak-timeline\">\n";
    if (axis_.usable()) {
      out_ += "<div class=\"row\"><div class=\"name label\">time</div><div class=\"axis\">" + gap_bands();
      const auto marks = axis_.marks();
      const TimePoint origin = axis_.segments().front().first;
      for (std::size_t i = 0; i < marks.size(); ++i) {
        const auto& m = marks[i];
        std::string text = i == 0 ? "0" : "+" + duration_text(micros(m.time - origin));
        if (m.gap_us > 0) text = "⋯ " + duration_text(m.gap_us) + " idle";
        const char* cls = i == 0 ? "first" : (i + 1 == marks.size() ? "last" : "");
        out_ += std::string("<span class=\"") + cls + "\" style=\"left:" + percent(m.at) + "\">" + escape(text) + "</span>";
      }
      out_ += "</div><div></div></div>\n";
    }
    rows(view_.root, 0);
    out_ += "</div>\n";
  }

  // The idle time between the run's parts, hatched on every track.
  const std::string& gap_bands() {
    if (gaps_) return *gaps_;
    std::string& out = gaps_.emplace();
    const auto marks = axis_.marks();
    for (const auto& m : marks) {
      if (m.gap_us > 0) {
        out += "<div class=\"gapband\" style=\"left:" + percent(m.at - TimeAxis::kGap) + ";width:" + percent(TimeAxis::kGap) +
               "\"></div>";
      }
    }
    return out;
  }

  void bar(const std::string& cls, bool timed, TimePoint start, TimePoint end, const std::string& title) {
    out_ += "<div class=\"track\">" + gap_bands();
    if (timed && axis_.usable()) {
      const double left = axis_.at(start);
      const double width = std::max(axis_.at(end) - left, 0.0);
      out_ += "<div class=\"bar " + cls + "\" style=\"left:" + percent(left) + ";width:" + percent(width) +
              "\" title=\"" + escape(title) + "\"></div>";
    }
    out_ += "</div>";
  }

  static std::string indent(int depth) { return "padding-left:" + std::to_string(depth * 18) + "px"; }

  void rows(const RunNode& node, int depth) {
    for (std::size_t p = 0; p < node.parts.size(); ++p) {
      const Part& part = node.parts[p];
      if (part.resumed || (node.from_spans && !part.stored)) {
        const std::string label = part.resumed ? "resumed (part " + std::to_string(p + 1) + ")"
                                               : "part " + std::to_string(p + 1) + " (span not stored)";
        out_ += "<div class=\"row part\"><div class=\"name\" style=\"" + indent(depth) + "\">" + escape(label) + "</div>";
        bar("part", part.start != TimePoint{}, part.start, part.end, label);
        out_ += "<div class=\"took\"></div></div>\n";
      }
      for (const Step& step : part.steps) {
        row(node, step, depth);
        for (const RunNode& sub : step.sub_runs) {
          TimePoint start{}, end{};
          for (const Part& sp : sub.parts) {
            if (sp.start == TimePoint{}) continue;
            start = start == TimePoint{} ? sp.start : std::min(start, sp.start);
            end = std::max(end, sp.end);
          }
          const std::string label = "↳ " + first_line(sub.agent, 40) + " · sub-run · " + status_of(sub);
          out_ += "<div class=\"row run\" data-run=\"" + escape(sub.run_id) + "\"><div class=\"name\" style=\"" +
                  indent(depth + 1) + "\" title=\"" + escape(sub.run_id) + "\">" + escape(label) + "</div>";
          bar("run", start != TimePoint{}, start, end, sub.run_id);
          out_ += "<div class=\"took\"></div></div>\n";
          rows(sub, depth + 1);
        }
      }
    }
  }

  void row(const RunNode& node, const Step& step, int depth) {
    const bool model = step.kind == Step::Kind::model;
    const std::string took = step.timed ? duration_text(micros(step.end - step.start)) : "";
    std::string label, title;
    if (model) {
      label = "chat " + first_line(step.model.empty() ? "model" : step.model, 60);
      title = label;
      if (step.has_usage) title += " · " + std::to_string(step.input_tokens) + " in / " + std::to_string(step.output_tokens) + " out";
      if (!step.finish_reason.empty()) title += " · " + step.finish_reason;
    } else {
      label = tool_label(step);
      title = step.tool + " · " + (step.outcome.empty() ? "no result" : step.outcome);
      for (const auto& a : step.approvals) title += " · approval " + (a.kind == "requested" ? a.kind : a.decision);
    }
    if (!took.empty()) title += " · " + took;
    if (!step.error_message.empty()) title += " · " + first_line(step.error_message, 200);
    out_ += "<div class=\"row step\" data-kind=\"" + std::string(model ? "model" : "tool") + "\" data-outcome=\"" +
            escape(outcome_class(step)) + "\" data-run=\"" + escape(node.run_id) + "\"";
    if (!step.span_id.empty()) out_ += " data-span=\"" + escape(step.span_id) + "\"";
    if (!model) out_ += " data-call=\"" + escape(step.call_id) + "\" data-tool=\"" + escape(step.tool) + "\"";
    out_ += "><div class=\"name\" style=\"" + indent(depth) + "\" title=\"" + escape(title) + "\">" + escape(label) + "</div>";
    bar(outcome_class(step), step.timed, step.start, step.end, title);
    out_ += "<div class=\"took\">" + escape(took) + "</div></div>\n";
  }

  void steps_table() {
    out_ += "<h2>Model calls</h2>\n<table id=\"ak-steps\"><thead><tr><th>#</th><th>agent</th><th>model</th><th>start</th>"
            "<th class=\"num\">duration</th><th class=\"num\">input tokens</th><th class=\"num\">output tokens</th>"
            "<th class=\"num\">cost</th><th>finish</th><th>tool calls after it</th></tr></thead><tbody>\n";
    std::int64_t in = 0, out = 0;
    double cost = 0;
    bool priced = false;
    const auto flat = flatten(view_.root);
    const TimePoint origin = view_.started.value_or(TimePoint{});
    for (std::size_t i = 0; i < flat.size(); ++i) {
      const Step& step = *flat[i].step;
      if (step.kind != Step::Kind::model) continue;
      std::string tools;
      for (std::size_t j = i + 1; j < flat.size() && !(flat[j].run == flat[i].run && flat[j].step->kind == Step::Kind::model); ++j) {
        if (flat[j].run != flat[i].run) continue;
        tools += (tools.empty() ? "" : ", ") + first_line(flat[j].step->tool, 60) + " (" + flat[j].step->outcome + ")";
      }
      in += step.input_tokens;
      out += step.output_tokens;
      if (step.cost_usd) {
        cost += *step.cost_usd;
        priced = true;
      }
      const std::string run = flat[i].run->agent + (flat[i].depth > 0 ? " (sub-run)" : "");
      out_ += "<tr data-span=\"" + escape(step.span_id) + "\"><td>" + std::to_string(step.iteration) + "</td><td>" +
              escape(run) + "</td><td>" + escape(step.model) + "</td><td>" +
              (step.timed ? escape("+" + duration_text(micros(step.start - origin))) : "") + "</td><td class=\"num\">" +
              (step.timed ? escape(duration_text(micros(step.end - step.start))) : "") + "</td><td class=\"num\">" +
              (step.has_usage ? std::to_string(step.input_tokens) : "") + "</td><td class=\"num\">" +
              (step.has_usage ? std::to_string(step.output_tokens) : "") + "</td><td class=\"num\">" +
              (step.cost_usd ? escape(cost_text(*step.cost_usd)) : "") + "</td><td>" + escape(step.finish_reason) +
              (step.error_type.empty() ? "" : " <b>" + escape(step.error_type) + "</b>") + "</td><td>" + escape(tools) +
              "</td></tr>\n";
    }
    out_ += "<tr class=\"total\"><td></td><td>total</td><td></td><td></td><td></td><td class=\"num\">" +
            std::to_string(in) + "</td><td class=\"num\">" + std::to_string(out) + "</td><td class=\"num\">" +
            (priced ? escape(cost_text(cost)) : "") + "</td><td></td><td></td></tr>\n</tbody></table>\n";
  }

  // The sub-runs each call of `node` started, by call id.
  static std::multimap<std::string, const RunNode*> sub_runs_by_call(const RunNode& node) {
    std::multimap<std::string, const RunNode*> out;
    for (const Part& part : node.parts) {
      for (const Step& step : part.steps) {
        for (const RunNode& sub : step.sub_runs) out.emplace(step.call_id, &sub);
      }
    }
    return out;
  }

  void content(const ContentPart& part) {
    std::visit(
        [&](const auto& p) {
          using T = std::decay_t<decltype(p)>;
          if constexpr (std::is_same_v<T, TextPart>) {
            out_ += "<pre>" + escape(p.text) + "</pre>";
          } else if constexpr (std::is_same_v<T, ImagePart>) {
            static const std::regex kImageType("image/(png|jpeg|gif|webp|bmp)");
            if (!p.data.empty() && std::regex_match(p.media_type, kImageType)) {
              out_ += "<img class=\"part\" alt=\"" + escape(describe(part)) + "\" src=\"data:" + p.media_type +
                      ";base64," + base64_encode(p.data) + "\">";
            } else {
              out_ += "<div class=\"mono\">[" + escape(describe(part)) + (p.url.empty() ? "" : ", not loaded") + "]</div>";
            }
          } else if constexpr (std::is_same_v<T, FilePart>) {
            out_ += "<div class=\"mono\">[" + escape(describe(part)) + "]</div>";
          } else if constexpr (std::is_same_v<T, ReasoningPart>) {
            out_ += "<details class=\"reasoning\"><summary>reasoning</summary><pre>" +
                    escape(p.text.empty() ? std::string("(redacted by the provider)") : p.text) + "</pre></details>";
          } else {
            out_ += "<div class=\"refusal\">refused: " + escape(p.text) + "</div>";
          }
        },
        part);
  }

  void messages(const RunNode& node) {
    if (!node.state) {
      out_ += "<div class=\"box warn\">The stored state of run " + escape(node.run_id) + " is missing or unreadable.</div>";
      return;
    }
    const RunState& s = *node.state;
    const auto subs = sub_runs_by_call(node);
    for (std::size_t i = 0; i < s.history.size(); ++i) {
      const Message& m = s.history[i];
      const bool from_session = static_cast<int>(i) < s.session_base;
      std::string cls = std::string(to_string(m.role));
      if (m.is_error) cls += " is-error";
      if (from_session) cls += " session";
      out_ += "<div class=\"msg " + cls + "\"";
      if (m.role == Role::tool) out_ += " data-call=\"" + escape(m.tool_call_id) + "\" data-run=\"" + escape(node.run_id) + "\"";
      out_ += "><div class=\"who\">" + escape(to_string(m.role));
      if (m.role == Role::tool) {
        out_ += " · result of <b>" + escape(m.tool_name) + "</b> <code>" + escape(m.tool_call_id) + "</code>";
        if (m.is_error) out_ += " · error";
      }
      if (from_session) out_ += " · from the session";
      out_ += "</div>";
      for (const auto& part : m.content) content(part);
      for (const auto& call : m.tool_calls) {
        const Json args = call.arguments_text.empty() ? call.arguments : Json(call.arguments_text);
        out_ += "<div class=\"call\" data-call=\"" + escape(call.id) + "\" data-run=\"" + escape(node.run_id) +
                "\"><div class=\"who\">call <b>" + escape(call.name) + "</b> <code>" + escape(call.id) +
                "</code>";
        if (auto it = s.proposed.find(call.id); it != s.proposed.end()) {
          out_ += " · edited by a reviewer; the model proposed <code>" +
                  escape(it->second.dump(-1, ' ', false, Json::error_handler_t::replace)) + "</code>";
        }
        out_ += "</div><pre>" + escape(args.dump(2, ' ', false, Json::error_handler_t::replace)) + "</pre></div>";
      }
      if (m.role == Role::tool) {
        const auto [from, to] = subs.equal_range(m.tool_call_id);
        for (auto it = from; it != to; ++it) sub_conversation(*it->second);
      }
      out_ += "</div>\n";
    }
  }

  void sub_conversation(const RunNode& sub) {
    out_ += "<details class=\"sub\"><summary>sub-run <code>" + escape(sub.run_id) + "</code> · agent " +
            escape(sub.agent) + " · " + escape(status_of(sub)) + "</summary>";
    messages(sub);
    if (sub.state && sub.state->failure && run_status(*sub.state) != "answered") {
      out_ += "<div class=\"box error\"><b>" + escape(to_string(sub.state->failure->code)) + "</b>: " +
              escape(sub.state->failure->message) + "</div>";
    }
    out_ += "</details>";
  }

  void conversation() {
    out_ += "<h2>Conversation</h2>\n<div id=\"ak-conversation\">\n";
    messages(view_.root);
    out_ += "</div>\n";
  }

  void approvals() {
    out_ += "<h2>Approvals</h2>\n";
    // One row per call that asked: its request (in the part that suspended)
    // and its decision (in the part that resumed) are on two spans.
    struct Row {
      const RunNode* run;
      std::string call_id, label, requested, decision, decided;
    };
    std::vector<Row> rows;
    const auto row_of = [&](const RunNode* run, const std::string& call_id, const std::string& label) -> Row& {
      for (Row& r : rows) {
        if (r.run == run && r.call_id == call_id) return r;
      }
      return rows.emplace_back(Row{run, call_id, label, {}, {}, {}});
    };
    for (const FlatStep& f : flatten(view_.root)) {
      const Step& step = *f.step;
      if (step.kind != Step::Kind::tool || (step.approvals.empty() && step.outcome != "awaiting_approval")) continue;
      Row& r = row_of(f.run, step.call_id, tool_label(step));
      for (const auto& a : step.approvals) {
        if (a.kind == "requested") {
          r.requested = clock_text(a.time);
        } else {
          r.decision = a.decision;
          r.decided = clock_text(a.time);
        }
      }
    }
    if (const auto& s = view_.root.state; s && s->phase == Phase::suspended) {
      for (const auto& call : s->pending_calls()) row_of(&view_.root, call.id, call_preview(call)).decision = "pending";
    }
    if (rows.empty()) {
      out_ += "<p id=\"ak-approvals\">No call asked for approval.</p>\n";
      return;
    }
    out_ += "<table id=\"ak-approvals\"><thead><tr><th>agent</th><th>call</th><th>requested</th><th>decision</th>"
            "<th>decided</th></tr></thead><tbody>\n";
    for (const Row& r : rows) {
      out_ += "<tr data-call=\"" + escape(r.call_id) + "\"><td>" + escape(r.run->agent) + "</td><td><code>" +
              escape(r.call_id) + "</code> " + escape(r.label) + "</td><td>" + escape(r.requested) + "</td><td><b>" +
              escape(r.decision.empty() ? std::string("none") : r.decision) + "</b></td><td>" + escape(r.decided) +
              "</td></tr>\n";
    }
    out_ += "</tbody></table>\n";
  }

  const RunView& view_;
  const std::optional<RunComparison>& against_;
  TimeAxis axis_;
  std::optional<std::string> gaps_;
  std::string out_;
};

}  // namespace

std::string view_html(const RunView& view, const std::optional<RunComparison>& against) {
  return Page(view, against).render();
}

std::string diff_html(const std::vector<StepDifference>& differences, const std::string& a, const std::string& b) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
         "base-uri 'none'; form-action 'none'\">\n";
  out += "<title>agentkit diff</title>\n<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n<main>\n";
  out += "<h1>Diff</h1>\n<div class=\"badges\"><span>a <b class=\"mono\">" + escape(a) +
         "</b></span><span>b <b class=\"mono\">" + escape(b) + "</b></span><span id=\"ak-diff-count\">" +
         std::to_string(differences.size()) + " differences</span></div>\n";
  out += differences_table(differences, "ak-diff");
  out += "</main>\n</body>\n</html>\n";
  return out;
}

}  // namespace agentkit::cli
