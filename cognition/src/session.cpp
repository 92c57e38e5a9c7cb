#include <agentkit/session.h>

#include <algorithm>
#include <stdexcept>

#include <agentkit/state/keys.h>
#include <agentkit/state/store.h>

namespace agentkit {
namespace {

constexpr std::size_t kRememberedRuns = 64;  // run ids kept to make appends idempotent
constexpr int kMaxAttempts = 32;             // compare-and-set retries under contention

std::string session_key(const Scope& scope, std::string_view session) { return state::keys::session(scope, session); }

std::vector<Message> messages_of(const Json& doc) {
  std::vector<Message> messages;
  for (const auto& m : doc.at("messages")) messages.push_back(message_from_json(m));
  return messages;
}

Json parse_session(std::string_view session, const std::string& text) {
  try {
    Json doc = Json::parse(text);
    messages_of(doc);  // validates
    if (!doc.at("runs").is_array()) throw Error(ErrorCode::invalid_argument, "runs is not an array");
    return doc;
  } catch (const std::exception& e) {
    throw Error(ErrorCode::data_loss, "session '" + std::string(session) + "' is unreadable: " + e.what());
  }
}

// Where the last `turns` user turns begin (0 when there are fewer).
std::size_t turn_start(const std::vector<Message>& history, std::size_t turns) {
  if (turns == 0) return history.size();
  std::size_t seen = 0;
  for (std::size_t i = history.size(); i-- > 0;) {
    if (history[i].role == Role::user && ++seen == turns) return i;
  }
  return 0;
}

}  // namespace

std::vector<Message> session_history(state::Store& store, const Scope& scope, std::string_view session) {
  auto entry = store.get(session_key(scope, session));
  if (!entry) return {};
  return messages_of(parse_session(session, entry->value));
}

void clear_session(state::Store& store, const Scope& scope, std::string_view session) {
  store.erase(session_key(scope, session));
}

void append_to_session(state::Store& store, const Scope& scope, const RunState& state, const HistoryPolicy& policy) {
  const std::string key = session_key(scope, state.session);
  const auto first_new = state.history.begin() + std::min<std::ptrdiff_t>(state.session_base, state.history.size());
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    const auto entry = store.get(key);
    Json doc = entry ? parse_session(state.session, entry->value) : Json{{"messages", Json::array()}, {"runs", Json::array()}};
    auto& runs = doc["runs"];
    if (std::find(runs.begin(), runs.end(), state.run_id) != runs.end()) return;  // already appended
    std::vector<Message> messages = messages_of(doc);
    messages.insert(messages.end(), first_new, state.history.end());
    if (policy) messages = policy(std::move(messages));
    Json stored = Json::array();
    for (const auto& m : messages) stored.push_back(to_json(m));
    doc["messages"] = std::move(stored);
    runs.push_back(state.run_id);
    if (runs.size() > kRememberedRuns) runs.erase(runs.begin());
    const std::string text = doc.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (store.compare_and_set(key, entry ? entry->version : 0, text)) return;
  }
  throw Error(ErrorCode::aborted, "session '" + state.session + "': too many concurrent writers");
}

HistoryPolicy keep_last_turns(std::size_t turns) {
  return [turns](std::vector<Message> history) {
    history.erase(history.begin(), history.begin() + static_cast<std::ptrdiff_t>(turn_start(history, turns)));
    return history;
  };
}

HistoryPolicy summarize_older(std::size_t turns, Summarizer summarize) {
  if (turns == 0) throw Error(ErrorCode::invalid_argument, "summarize_older: keep at least one turn");
  if (!summarize) throw Error(ErrorCode::invalid_argument, "summarize_older: the summarizer is empty");
  return [turns, summarize = std::move(summarize)](std::vector<Message> history) {
    const std::size_t start = turn_start(history, turns);
    if (start == 0) return history;
    const std::vector<Message> older(history.begin(), history.begin() + static_cast<std::ptrdiff_t>(start));
    history.erase(history.begin(), history.begin() + static_cast<std::ptrdiff_t>(start));
    auto& first = history.front().content;
    first.insert(first.begin(), TextPart{"Summary of the earlier conversation: " + summarize(older) + "\n\n"});
    return history;
  };
}

}  // namespace agentkit
