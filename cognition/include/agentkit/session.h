#pragma once
// Sessions: conversation history that outlives runs. A run started with
// RunOptions{.session = id} sees the session's history before its task, and
// its new messages are appended when it ends. History lives in the context's
// store under "<scope>/sessions/<id>".
//
// Example:
//   agentkit::RunResult first = agent.run("My name is Ada.", ctx, {.session = "user-42"});
//   agentkit::RunResult second = agent.run("What is my name?", ctx, {.session = "user-42"});
//
// A history policy (AgentOptions::history_policy) bounds what is kept. The
// policies here cut only at a user turn, so an assistant's tool calls always
// stay with their results.
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <agentkit/agent.h>

namespace agentkit {

// The stored history of a session (empty when there is none).
std::vector<Message> session_history(state::Store& store, const Scope& scope, std::string_view session);
// Forgets a session's history.
void clear_session(state::Store& store, const Scope& scope, std::string_view session);
// Appends a finished run's new messages (past state.session_base) to its
// session, applying `policy`. Idempotent per run id, and safe against
// concurrent runs of one session (compare-and-set, re-read on conflict).
void append_to_session(state::Store& store, const Scope& scope, const RunState& state, const HistoryPolicy& policy);

// Keeps the last `turns` user turns (a turn is a user message and everything
// after it up to the next one).
HistoryPolicy keep_last_turns(std::size_t turns);

// Keeps the last `turns` user turns and folds everything before them into a
// summary written by `summarize`, prepended to the first kept user message.
// An earlier summary is part of what is summarised next time.
using Summarizer = std::function<std::string(const std::vector<Message>& older)>;
HistoryPolicy summarize_older(std::size_t turns, Summarizer summarize);

}  // namespace agentkit
