#pragma once
// What the `agentkit` CLI shows: a run's events and outcome, for a person
// (streamed text, one status line per tool call) or for a program (one JSON
// object per line), and the approval prompt.
#include <chrono>
#include <cstdio>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/events.h>

namespace agentkit::cli {

// The CLI's exit codes (the README's table). A run's stop reason picks the
// first few; a failed run's ErrorCode picks its class (exit_code()).
enum class Exit : int {
  answered = 0,
  failed = 1,  // internal, unimplemented, outcome_unknown, or an exception that is not an agentkit::Error
  usage = 2,   // bad arguments, an invalid definition, or a run that could not start or resume
  suspended = 3,
  max_iterations = 4,
  budget_exhausted = 5,  // also a failure with ErrorCode::budget_exhausted
  cancelled = 6,         // also a failure with ErrorCode::cancelled
  unauthenticated = 7,   // unauthenticated, permission_denied: fix the key or the policy
  rate_limited = 8,      // rate_limited, quota_exceeded, overloaded: back off, or raise the quota
  unavailable = 9,       // unavailable, timeout: the provider or a peer is down or slow; retry later
  protocol = 10,         // protocol, truncated: a reply that was not what it claimed
  rejected = 11,         // invalid_argument, not_found, already_exists: the provider or a tool refused the request
  state = 12,            // aborted, data_loss: another process took the run over, or its state is unreadable
  not_pending = 13,      // approve: the call (or the run) is not awaiting a decision
};
// The exit code of an error of class `code`.
Exit exit_code(ErrorCode code) noexcept;
// The exit code of a finished run: answered, suspended and max_iterations
// by their stop reason, any other by its failure's code.
Exit exit_code(const RunResult& result) noexcept;

// An event as one JSON object: {"type": "tool_call_started", ...fields},
// then its metadata where set: "time" (RFC 3339, UTC, milliseconds),
// "run_id", "agent_path", "span_id", "parent_span_id" (a tool_span keeps its
// own call span ids). `nested` marks events of a sub-agent's run.
Json event_json(const Event& event, bool nested = false);

// A call as a status line shows it: "refund(order_id: 'A-1')", bounded.
std::string call_preview(const ToolCall& call);

// `text` with control characters other than newline and tab shown as '?', so
// text from a model or a server cannot move the cursor or restyle a terminal.
std::string printable(std::string text);
// The first line of `text`, printable, at most `max` bytes (cut on a UTF-8
// boundary, then "…").
std::string first_line(const std::string& text, std::size_t max);
// "2026-12-01T18:24:17.123Z": RFC 3339, UTC, milliseconds.
std::string rfc3339_millis(std::chrono::system_clock::time_point time);

// A run's outcome as the final JSON line: {"type": "result", "run_id",
// "stop_reason", "exit_code", "output", "error", "iterations", "usage",
// "pending": [{"id", "name", "arguments"}], "resume"}, plus, for a run
// that stopped early, "error_code" (to_string(ErrorCode)) and, when a
// provider failed it, "failure": {"model", "http_status", "retryable",
// "retry_after_ms"} (each only when known).
Json result_json(const RunResult& result, const std::string& resume_command);

// Renders one run for the terminal or for a program.
//
// Human mode: assistant text goes to `out` (stdout) as it streams; status
// lines go to `err` (stderr): "run run-1f2e (agent support)" when the run
// starts; "⋯ lookup(order_id: 'A-1')" when a call starts, then "✓ lookup
// 12 ms", "✗ lookup: <error>", "⊘ refund denied: <why>" or "⏸ refund needs
// approval"; "✗ lookup(...): <why>" for a call refused without running (an
// unknown tool, arguments that are not JSON); "✓ refund(order_id: 'A-1')
// approved" (or "edited") and "⊘ refund rejected: <why>" for decisions. With
// `styled` (stderr is a terminal) the finished line replaces the started one
// and symbols are coloured; otherwise every line is plain and kept.
//
// JSON mode: every event is one line on `out`; nothing else is written there.
//
// Example:
//   Terminal ui({.json = false, .styled = isatty(2) != 0});
//   for (const Event& e : handle.drain_events()) ui.show(e);
//   ui.outcome(handle.result(), "agentkit resume " + id);
class Terminal {
 public:
  struct Options {
    bool json = false;
    bool styled = false;            // stderr is a terminal
    bool text_on_terminal = false;  // stdout is a terminal: control characters in text show as '?'
  };

  explicit Terminal(Options options, std::FILE* out = stdout, std::FILE* err = stderr);

  // The run's id, before anything else of the run: on `err` in human mode
  // ("run run-1f2e (agent support)", "resuming run ..."); in JSON mode the
  // first line, {"type": "run_started", "run_id", "agent", "resumed"}, so a
  // program knows the id before the run ends.
  void started(const std::string& run_id, const std::string& agent, bool resumed);
  void show(const Event& event, bool nested = false);
  // The outcome: the answer (unless it already streamed), the suspension
  // with the command that resumes it, or why the run stopped. JSON mode: the
  // result line. `resume_command` is e.g. "agentkit resume run-1f2e".
  void outcome(const RunResult& result, const std::string& resume_command);
  // A line on stderr (both modes), e.g. "resumed run-1f2e".
  void note(const std::string& text);

 private:
  void show_json(const Event& event, bool nested);
  void show_text(const Event& event, bool nested);
  // Writes a status line to `err`; `replaces` / `opens` name the call whose
  // started line it replaces / it is.
  void status(const std::string& line, const std::string& replaces, const std::string& opens);
  void close_status();
  // How long the call under `key` took.
  std::chrono::microseconds took(const std::string& key) const;
  void end_text_line();

  Options options_;
  std::FILE* out_;
  std::FILE* err_;
  bool text_open_ = false;        // the last text on `out` has no newline yet
  bool streamed_answer_ = false;  // the last model call's text was shown as it streamed
  std::string open_status_;       // the call whose "started" line is the last line on `err`
  std::map<std::string, std::chrono::steady_clock::time_point> started_;  // by call key
  std::map<std::string, std::chrono::microseconds> spans_;                // by call key
};

// Asks for a decision on each pending call, on `prompt` (stderr), reading
// answers from `in`: [a]pprove, [r]eject (with an optional reason) or [e]dit
// (new arguments as a JSON object, asked again until valid). nullopt when
// `in` ends or fails (EOF, an interrupt) before every call has a decision.
std::optional<Decisions> ask_decisions(const std::vector<ToolCall>& pending, std::istream& in, std::FILE* prompt);

}  // namespace agentkit::cli
