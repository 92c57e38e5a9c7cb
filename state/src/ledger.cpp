#include <agentkit/state/ledger.h>

#include <utility>

namespace agentkit::state {
namespace {

constexpr const char* kUnknown =
    "The outcome of this call is unknown: it started before the run was interrupted and recorded no result. It was "
    "not run again because it has side effects; check whether it took effect before calling it again.";

std::string intent_record(int attempt) { return Json{{"state", "intent"}, {"attempt", attempt}}.dump(); }

std::string dump(const Json& record) { return record.dump(-1, ' ', false, Json::error_handler_t::replace); }

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
    if (done && record.value("status", "") == "ok") return ToolResult::ok(record.value("value", Json()));
    if (!idempotent) {
      return done ? ToolResult::error(record.value("text", "Tool failed")) : ToolResult::outcome_unknown(kUnknown);
    }
    attempt = (record.is_object() ? record.value("attempt", 1) : 1) + 1;
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
  Json record{{"state", "done"}, {"status", result.is_ok() ? "ok" : "error"}};
  if (result.is_ok()) {
    record["value"] = result.value;
  } else {
    record["text"] = result.text;
  }
  store_->put(prefix_ + request.ledger_key, dump(record));
}

void StoreLedger::clear() const {
  for (const auto& [key, entry] : store_->list(prefix_)) store_->erase(key);
}

}  // namespace agentkit::state
