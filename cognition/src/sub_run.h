#pragma once
// How as_tool reports a sub-run that did not answer, and how a workflow
// reads the sub-run's code back from that report. The engine keeps a tool's
// error as text only (its ToolResult has no code), so the code travels in
// the text, written and read in this one place.
#include <optional>
#include <string>
#include <string_view>

#include <agentkit/agent.h>

namespace agentkit::detail {

// What as_tool throws for a sub-run of `agent` that did not answer: an
// Error with the run's failure code (unimplemented for a suspended run) and
// the message "sub-agent 'research' did not answer: failed [code
// rate_limited]: <why>".
Error sub_run_error(std::string_view agent, const RunResult& result);
// The code a sub_run_error() message names (its first one, so the
// outermost sub-run's), wherever the text sits in `text`; nullopt if none.
std::optional<ErrorCode> sub_run_code(std::string_view text);

// The decisions for calls of the sub-run inside call `call_id` (those
// keyed "<call_id>/<id>"), keyed by the sub-run's own ids.
Decisions routed_decisions(const Decisions& decisions, std::string_view call_id);
// The agent an as_tool tool runs (seen through wrappers such as
// renamed()), or null for any other tool.
const Agent* sub_agent(const Tool* tool);

// Whether `store` holds the end a durable run's `result` reports (its
// document suspended for a suspended result, done for any other): a run
// whose end save failed, or that stopped because a checkpoint failed, did
// not end as far as the store knows. The store is the truth for whoever
// acts on the run next (a fleet worker marking it, a parent run taking a
// sub-run's answer). Throws what the store throws.
bool end_is_stored(state::Store& store, const Scope& scope, std::string_view run_id, const RunResult& result);

}  // namespace agentkit::detail
