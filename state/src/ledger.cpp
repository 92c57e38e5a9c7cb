#include <agentkit/state/ledger.h>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <utility>

#include <agentkit/detail/fnv.h>
#include <agentkit/json.h>

namespace agentkit::state {
namespace {

constexpr const char* kUnknown =
    "The outcome of this call is unknown: it started before the run was interrupted and recorded no result. It was "
    "not run again because it has side effects; check whether it took effect before calling it again.";

std::string intent_record(int attempt) { return Json{{"state", "intent"}, {"attempt", attempt}}.dump(); }

// A result's content parts, recorded with its value so that a call answered
// from the record shows the model what the call returned (an image too).
Json parts_json(const std::vector<ContentPart>& parts) {
  Json out = Json::array();
  for (const auto& part : parts) out.push_back(to_json(part));
  return out;
}

// A record's parts; a record whose parts do not read back has none.
std::vector<ContentPart> parts_of(const Json& record) {
  std::vector<ContentPart> parts;
  const auto it = record.find("parts");
  if (it == record.end() || !it->is_array()) return parts;
  try {
    for (const auto& part : *it) parts.push_back(part_from_json(part));
  } catch (const std::invalid_argument&) {
    parts.clear();
  }
  return parts;
}

// A short, stable store key for a long call key.
std::string hashed(const std::string& text) { return detail::fnv1a_hex(text); }

}  // namespace

StoreLedger::StoreLedger(std::shared_ptr<Store> store, std::string prefix)
    : store_(std::move(store)), prefix_(std::move(prefix)) {}

std::optional<ToolResult> StoreLedger::begin(const ToolRequest& request) const {
  const std::string key = prefix_ + request.ledger_key;
  const bool idempotent = request.effectively_idempotent();
  const auto entry = store_->get(key);
  int attempt = 1;
  if (entry) {
    const Json record = Json::parse(entry->value, nullptr, /*allow_exceptions=*/false);
    const bool done = record.is_object() && record.value("state", "") == "done";
    // Runs again: a call paused by its sub-run's suspension, or an
    // interrupted one whose tool continues its own durable work.
    const bool again = (record.is_object() && record.value("state", "") == "paused") ||
                       (!done && request.tool && request.tool->reenterable());
    if (done && record.value("status", "") == "ok") return ToolResult::ok(record.value("value", Json()), parts_of(record));
    if (!idempotent && !again) {
      if (!done) return ToolResult::outcome_unknown(kUnknown);
      const std::string text = record.value("text", "Tool failed");
      return record.value("status", "") == "outcome_unknown" ? ToolResult::outcome_unknown(text)
                                                              : ToolResult::error(text);
    }
    // The stored count, range-checked before it becomes an int; a record that
    // cannot say is counted as the first attempt.
    const auto stored = record.find("attempt");
    const auto previous = stored != record.end() && stored->is_number() ? exact_integer<int>(stored->get<double>())
                                                                        : std::nullopt;
    attempt = previous && *previous > 0 && *previous < std::numeric_limits<int>::max() ? *previous + 1 : 2;
  }
  // Claim the call. Losing the race means another worker runs it right now.
  if (!store_->compare_and_set(key, entry ? entry->version : 0, intent_record(attempt))) {
    return ToolResult::outcome_unknown(
        "The outcome of this call is unknown: another worker started the same call at the same time. It was not "
        "run here.");
  }
  return std::nullopt;
}

void StoreLedger::end(const ToolRequest& request, const ToolResult& result) const {
  if (result.status == ToolResult::Status::awaiting_approval) {
    // A sub-run suspended inside the call (CallSuspended): the call runs
    // again on resume, and the sub-run's own ledger keeps its effects once.
    store_->put(prefix_ + request.ledger_key, canonical_dump(Json{{"state", "paused"}}));
    return;
  }
  Json record{{"state", "done"}, {"status", to_string(result.status)}};
  if (result.is_ok()) {
    record["value"] = result.value;
    if (!result.parts.empty()) record["parts"] = parts_json(result.parts);
  } else {
    record["text"] = result.text;
  }
  store_->put(prefix_ + request.ledger_key, canonical_dump(record));
}

std::optional<ToolResult> StoreLedger::recall(const std::string& call) const {
  const auto entry = store_->get(prefix_ + "same/" + hashed(call));
  if (!entry) return std::nullopt;
  const Json record = Json::parse(entry->value, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object() || record.value("call", "") != call) return std::nullopt;
  return ToolResult::ok(record.value("value", Json()), parts_of(record));
}

void StoreLedger::remember(const std::string& call, const ToolResult& result) const {
  if (!result.is_ok()) return;  // failures are never kept
  Json record{{"call", call}, {"value", result.value}};
  if (!result.parts.empty()) record["parts"] = parts_json(result.parts);
  store_->put(prefix_ + "same/" + hashed(call), canonical_dump(record));
}

void StoreLedger::clear() const {
  for (const auto& [key, entry] : store_->list(prefix_)) store_->erase(key);
}

}  // namespace agentkit::state
