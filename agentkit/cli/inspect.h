#pragma once
// How `agentkit runs` and `agentkit show` present stored runs: an aligned
// table or JSON lines for the list; a timeline on the terminal, one JSON
// document, or a self-contained HTML page (run_html.cpp) for one run.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <agentkit/json.h>
#include <agentkit/replay.h>

#include "run_view.h"

namespace agentkit::cli {

// "0.4 ms", "312 ms", "4.21 s", "3 min 12 s", "2 h 3 min".
std::string duration_text(std::int64_t micros);
// "2026-12-01 18:24:17 UTC".
std::string clock_text(TimePoint time);
// "$0.0123".
std::string cost_text(double usd);

// The `runs` table: RUN, AGENT, STATUS, STARTED, STEPS, TOKENS (in/out),
// COST, PENDING, one row per run, columns aligned. An unreadable run is a
// row with status "unreadable" (why goes to stderr).
void print_runs(const std::vector<RunSummary>& runs, std::FILE* out);

// One run as a `runs --json` line: {"run_id", "agent", "status", "phase",
// "started" (RFC 3339 or null), "steps", "input_tokens", "output_tokens",
// "cost_usd", "pending", "error_code" (a failed run's), "problem" (what could
// not be read)}.
Json run_summary_json(const RunSummary& run);

// The run as a timeline for a person: a header (id, agent, status, start,
// totals, task), every part (resumed ones marked), model call (tokens,
// duration, finish reason) and tool call (arguments preview, outcome,
// duration, approvals) in order, sub-runs indented under their call, then
// the answer, the typed error or the calls awaiting approval. Text from the
// run is shown with control characters replaced.
void print_view(const RunView& view, std::FILE* out);

// The same as one JSON document: {"run": run_summary_json, "task",
// "output", "error": {"code", "message"}, "from_spans", "parts": [{"span_id",
// "stored", "resumed", "start", "end", "stop_reason", "steps": [...]}],
// "problems"}; a step is {"type": "model" | "tool", ...} and a tool step's
// "sub_runs" are nodes of the same shape as the run.
Json view_json(const RunView& view);

// The run as one self-contained HTML page (inline CSS and JS, no network):
// a Gantt timeline, the model calls' tokens and cost, the conversation with
// its tool calls, results and images, and the approvals. Every string from
// the run is escaped; a Content-Security-Policy lets only the page's own
// script run. Its script marks #ak-status with data-state="ok" when it ran,
// and writes any script error into #ak-errors.
//
// With `against` (`agentkit show A --against B`), a "Compared with run B"
// section after the header lists compare_runs' differences as a table
// (#ak-against), or says there are none.
struct RunComparison {
  std::string run_id;
  std::vector<StepDifference> differences;
};
std::string view_html(const RunView& view, const std::optional<RunComparison>& against = std::nullopt);

// Two cassettes' differences (agentkit::diff) as one self-contained HTML
// page: a table of step, what differs, the JSON path and both values, every
// string escaped, no script. `a` and `b` name the two files in its header.
std::string diff_html(const std::vector<StepDifference>& differences, const std::string& a, const std::string& b);

}  // namespace agentkit::cli
