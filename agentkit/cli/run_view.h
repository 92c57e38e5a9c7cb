#pragma once
// What `agentkit runs` and `agentkit show` read from the store: a stored
// run's summary, and the run as a tree of parts, model calls, tool calls and
// sub-runs, built from its spans and its RunState. Spans are read from the
// trace's segments under keys::trace_spans (a JSON array of trace::to_json
// spans each, or one span per key) and from the spans a run's document still
// carries (StoredRun::sealed.spans); a span stored twice counts once.
//
// Everything here comes from the store, so it is untrusted: a document or
// span that cannot be read becomes a `problem` (a message naming the key)
// and the rest is still shown; strings are as stored (a renderer escapes or
// bounds them).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <agentkit/replay.h>
#include <agentkit/run_state.h>
#include <agentkit/state/checkpoint.h>
#include <agentkit/state/store.h>
#include <agentkit/trace.h>

namespace agentkit::cli {

using TimePoint = std::chrono::system_clock::time_point;

// One row of `agentkit runs`.
struct RunSummary {
  std::string run_id;
  std::optional<RunState> state;  // nullopt when the document is unreadable
  std::string problem;            // why it is unreadable, or why `started` is unknown
  std::optional<TimePoint> started;

  // The stop reason when the run is done or suspended, "running" when its
  // last checkpoint is mid-step, "unreadable" without a state.
  std::string status() const;
};

// The store's top-level runs (sub-runs, "<run id>/<step>/<call id>", are
// shown by `agentkit show` under their call), newest first: by the start of
// their first invoke_agent span, runs without one last (by id).
std::vector<RunSummary> list_runs(state::Store& store, const Scope& scope);

// The start of the run's first invoke_agent span (RunState::trace_span_id):
// from the run's document while it carries the span, else from the span's
// own key or the run's span segments under keys::trace_spans. nullopt when
// the run has no stored spans (written by an older agentkit, or its first
// part has not ended). Throws agentkit::Error when it is stored but
// malformed.
std::optional<TimePoint> run_started(state::Store& store, const Scope& scope, const state::StoredRun& run);

// An approval event of a tool call's span.
struct ApprovalMark {
  std::string kind;      // "requested" or "decided"
  std::string decision;  // approved, edited, rejected (decided only)
  TimePoint time{};
};

struct RunNode;

// One model call or tool call.
struct Step {
  enum class Kind { model, tool };
  Kind kind = Kind::model;
  std::string span_id;        // empty when built from history alone
  bool timed = false;         // start/end come from a span
  TimePoint start{}, end{};
  std::string error_type;     // error.type, when it failed
  std::string error_message;  // the span's status message

  // Model calls.
  std::string model;
  std::int64_t input_tokens = 0, output_tokens = 0;
  bool has_usage = false;
  std::optional<double> cost_usd;
  std::string finish_reason;
  int iteration = 0;  // 1-based within its run

  // Tool calls.
  std::string tool;
  std::string call_id;
  std::optional<ToolCall> call;  // from the history, for its arguments
  std::string outcome;           // ok, error, denied, awaiting_approval, outcome_unknown, interrupted
  std::vector<ApprovalMark> approvals;
  std::vector<RunNode> sub_runs;
};

// One invoke_agent span of a run: its first part, or a resumed one.
struct Part {
  std::string span_id;
  bool stored = false;   // its invoke_agent span is in the store (it ended)
  bool resumed = false;
  TimePoint start{}, end{};  // from its span, or its steps when not stored
  std::string stop_reason;   // how the part ended (agentkit.run.stop_reason)
  std::vector<Step> steps;   // in start order
};

// A run (the one shown, or a sub-run) and what it did.
struct RunNode {
  std::string run_id;
  std::string agent;
  std::string agent_path;
  std::optional<RunState> state;  // nullopt when its document is missing or unreadable
  bool from_spans = false;        // false: the steps come from the history alone
  std::vector<Part> parts;
};

struct RunView {
  RunNode root;
  std::vector<std::string> problems;  // unreadable spans or sub-runs, and what was left out
  std::optional<TimePoint> started;
  std::optional<TimePoint> ended;
};

// The run `run_id` as a tree. nullopt when there is no such run; throws
// CheckpointError when its document is unreadable.
std::optional<RunView> load_view(state::Store& store, const Scope& scope, const std::string& run_id);

// Every step of `node` and its sub-runs, depth first, with its depth (0 for
// the node's own steps).
struct FlatStep {
  const Step* step;
  const RunNode* run;
  int depth;
};
std::vector<FlatStep> flatten(const RunNode& node, int depth = 0);

// Two stored runs step by step (`agentkit show A --against B`), as
// agentkit::diff compares two cassettes: each run's own outcome ("run": task,
// status, answer, error), each model call by position ("model call 2": the
// model, then its reply), each tool call by position in the reply that asked
// for it ("tool call 2.1": tool, arguments, outcome, approval decisions,
// result), and a sub-run's steps under its call ("tool call 1.2 > model call
// 1"). One StepDifference per step that differs, with the first difference
// in that order; a step only one run has is "only in a" / "only in b".
// Positions, not ids, pair the steps, and call ids, times, token counts and
// costs are left out: two runs of the same behaviour compare equal.
std::vector<StepDifference> compare_runs(const RunView& a, const RunView& b);

// The status of a stored run (see RunSummary::status).
std::string run_status(const RunState& state);

}  // namespace agentkit::cli
