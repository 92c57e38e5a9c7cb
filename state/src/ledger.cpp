#include <agentkit/state/ledger.h>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <string_view>
#include <utility>

#include <agentkit/context.h>
#include <agentkit/detail/fnv.h>
#include <agentkit/json.h>

#include "store_internal.h"

namespace agentkit::state {
namespace {

constexpr const char* kUnknown =
    "The outcome of this call is unknown: it started before the run was interrupted and recorded no result. It was "
    "not run again because it has side effects; check whether it took effect before calling it again.";

constexpr const char* kTakenOver =
    "This run was taken over by another worker while this one was paused; the call was not run here.";

// Records are written again while the store is briefly away or a write's
// outcome is unknown (as Checkpoint's blobs are).
constexpr int kWriteAttempts = 3;
constexpr Backoff kWriteBackoff{.base = std::chrono::milliseconds(10), .max = std::chrono::milliseconds(100)};

// `nonce` tells this begin()'s intent from any other's: a claim whose
// outcome was unknown is recognised as its own when tried again.
std::string intent_record(int attempt, const std::string& nonce) {
  return Json{{"state", "intent"}, {"attempt", attempt}, {"nonce", nonce}}.dump();
}

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

// The owner record (see Fencing in the header): who holds the run, and the
// version of the run's document its first save wrote; a finished run's
// record names no one. A bare writer id (a record from before the version
// was kept) or a record that does not read back names that text, at
// version 0, so any holder that saves again replaces it.
struct Owner {
  std::string writer;
  std::int64_t version = 0;
  bool finished = false;
};

Owner owner_of(const std::string& value) {
  const Json record = Json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object()) return {.writer = value};
  Owner owner;
  if (const auto finished = record.find("finished"); finished != record.end()) owner.finished = *finished == true;
  if (const auto writer = record.find("writer"); writer != record.end() && writer->is_string()) {
    owner.writer = writer->get<std::string>();
  }
  if (const auto version = record.find("version"); version != record.end() && version->is_number_integer()) {
    owner.version = version->get<std::int64_t>();
  }
  return owner;
}

constexpr const char* kFinishedOwner = R"({"finished":true})";

// Whether `key`, under a ledger's prefix, is the owner record of a sub-run's
// ledger: a sub-run's id extends its parent's ("<run>/<call key>", as_tool),
// so its records lie under the parent's prefix. Call and remembered records
// are objects with "state" or "call"; anything else at "<...>/owner" is an
// owner record (possibly hand-edited).
bool nested_owner_record(std::string_view key, const std::string& value) {
  if (!key.ends_with("/owner")) return false;
  const Json record = Json::parse(value, nullptr, /*allow_exceptions=*/false);
  return !record.is_object() || (!record.contains("state") && !record.contains("call"));
}

// A short, stable store key for a long call key.
std::string hashed(const std::string& text) { return detail::fnv1a_hex(text); }

}  // namespace

StoreLedger::StoreLedger(std::shared_ptr<Store> store, std::string prefix, std::string owner)
    : store_(std::move(store)), prefix_(std::move(prefix)), owner_(std::move(owner)) {}

std::optional<ToolResult> StoreLedger::begin(const ToolRequest& request) const {
  const std::string key = prefix_ + request.ledger_key;
  std::string mine;  // the intent this call wrote, once it tried
  return store_detail::retry_transient([&] { return claim(request, key, mine); }, kWriteAttempts, kWriteBackoff);
}

std::optional<ToolResult> StoreLedger::claim(const ToolRequest& request, const std::string& key,
                                             std::string& mine) const {
  const auto entry = store_->get(key);
  std::optional<std::int64_t> claimed;
  if (entry && !mine.empty() && entry->value == mine) {
    claimed = entry->version;  // an earlier try's write that landed (its outcome was unknown)
  } else {
    if (auto answered = recorded(request, entry)) return answered;
    int attempt = 1;
    if (entry) {
      const Json record = Json::parse(entry->value, nullptr, /*allow_exceptions=*/false);
      // The stored count, range-checked before it becomes an int; a record
      // that cannot say is counted as the first attempt.
      int previous = 0;
      if (record.is_object()) {
        const auto stored = record.find("attempt");
        if (stored != record.end() && stored->is_number()) previous = exact_integer<int>(stored->get<double>()).value_or(0);
      }
      const bool released = record.is_object() && record.value("state", "") == "released";
      if (!released) attempt = previous > 0 && previous < std::numeric_limits<int>::max() ? previous + 1 : 2;
    }
    // Claim the call. Losing the race means another worker runs it right now.
    mine = intent_record(attempt, RunContext::new_id("i"));
    claimed = store_->compare_and_set(key, entry ? entry->version : 0, mine);
    if (!claimed) {
      return ToolResult::outcome_unknown(
          "The outcome of this call is unknown: another worker started the same call at the same time. It was not "
          "run here.");
    }
  }
  if (!owner_.empty()) {
    const auto holder = store_->get(owner_key());
    if (!holder || owner_of(holder->value).writer != owner_) {
      // Fails only when the new holder already read the intent (then it
      // reported outcome_unknown, which stays the call's answer).
      (void)store_->compare_and_set(key, *claimed, Json{{"state", "released"}}.dump());
      return ToolResult::error(kTakenOver);
    }
  }
  return std::nullopt;
}

// What an existing record answers without running the call (nullopt: run it).
std::optional<ToolResult> StoreLedger::recorded(const ToolRequest& request, const std::optional<Entry>& entry) const {
  if (!entry) return std::nullopt;
  const Json record = Json::parse(entry->value, nullptr, /*allow_exceptions=*/false);
  const std::string state = record.is_object() ? record.value("state", "") : "";
  // A call given back unrun by a fenced-out process (see Fencing) never started.
  if (state == "released") return std::nullopt;
  const bool done = state == "done";
  // Runs again: a call paused by its sub-run's suspension, or an
  // interrupted one whose tool continues its own durable work.
  const bool again = state == "paused" || (!done && request.tool && request.tool->reenterable());
  if (done && record.value("status", "") == "ok") return ToolResult::ok(record.value("value", Json()), parts_of(record));
  if (request.effectively_idempotent() || again) return std::nullopt;
  if (!done) return ToolResult::outcome_unknown(kUnknown);
  const std::string text = record.value("text", "Tool failed");
  return record.value("status", "") == "outcome_unknown" ? ToolResult::outcome_unknown(text) : ToolResult::error(text);
}

void StoreLedger::end(const ToolRequest& request, const ToolResult& result) const {
  Json record;
  if (result.status == ToolResult::Status::awaiting_approval) {
    // A sub-run suspended inside the call (CallSuspended): the call runs
    // again on resume, and the sub-run's own ledger keeps its effects once.
    record = {{"state", "paused"}};
  } else {
    record = {{"state", "done"}, {"status", to_string(result.status)}};
    if (result.is_ok()) {
      record["value"] = result.value;
      if (!result.parts.empty()) record["parts"] = parts_json(result.parts);
    } else {
      record["text"] = result.text;
    }
  }
  const std::string value = canonical_dump(record);
  store_detail::retry_transient([&] { return store_->put(prefix_ + request.ledger_key, value); }, kWriteAttempts,
                                kWriteBackoff);
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

bool StoreLedger::claim_owner(std::int64_t version) const {
  const std::string mine = canonical_dump(Json{{"version", version}, {"writer", owner_}});
  const std::string key = owner_key();
  return store_detail::retry_transient(
      [&] {
        // A lost compare-and-set means another holder wrote the record
        // meanwhile: read it again and compare.
        for (;;) {
          const auto current = store_->get(key);
          if (current) {
            if (current->value == mine) return true;  // an earlier try's write that landed
            const Owner holder = owner_of(current->value);
            if (holder.finished || holder.version >= version) return false;
          }
          if (store_->compare_and_set(key, current ? current->version : 0, mine)) return true;
        }
      },
      kWriteAttempts, kWriteBackoff);
}

void StoreLedger::clear() const {
  const std::string owner = owner_key();
  // Finished before any record goes: a stale holder then finds every call
  // key free but the run no one's.
  if (!owner_.empty()) store_->put(owner, kFinishedOwner);
  for (const auto& [key, entry] : store_->list(prefix_)) {
    if (!owner_.empty() && key == owner) continue;
    if (nested_owner_record(std::string_view(key).substr(prefix_.size()), entry.value)) {
      // A sub-run's owner record is marked finished, never dropped: its
      // parent is over, and a holder of the sub-run paused before naming
      // itself must not find the sub-run no one's and its calls free.
      if (entry.value != kFinishedOwner) store_->put(key, kFinishedOwner);
      continue;
    }
    store_->erase(key);
  }
}

}  // namespace agentkit::state
