#include <agentkit/state/checkpoint.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string_view>
#include <thread>

#include <openssl/evp.h>

#include <agentkit/detail/run_state_document.h>
#include <agentkit/json.h>
#include <agentkit/state/keys.h>
#include <agentkit/state/ledger.h>
#include <agentkit/trace_ids.h>

#include "store_internal.h"

namespace agentkit::state {
namespace {

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr)) {
    throw RunError("hashing a content blob failed (SHA-256)");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xF];
  }
  return hex;
}

// Calls `f` on every content part document under `list` in each of `items`:
// the "content" of history messages, the "parts" of the batch's outcomes.
template <class F>
void for_each_part(Json& items, const char* list, F&& f) {
  if (!items.is_array()) return;
  for (auto& item : items) {
    if (!item.is_object()) continue;
    const auto parts = item.find(list);
    if (parts == item.end() || !parts->is_array()) continue;
    for (auto& part : *parts) {
      if (part.is_object()) f(part);
    }
  }
}

// A cheap estimate of a message's JSON size: enough to decide when to seal.
std::size_t approximate_size(const Message& m) {
  std::size_t size = 64;
  for (const auto& part : m.content) size += 16 + part_bytes(part) * 4 / 3;
  for (const auto& call : m.tool_calls) {
    size += 32 + call.id.size() + call.name.size() +
            (call.arguments_text.empty() ? canonical_dump(call.arguments).size() : call.arguments_text.size());
  }
  return size;
}

StoredRun read_run(Store& store, const Scope& scope, std::string_view run_id, const Entry& entry) {
  const auto unreadable = [&](const std::string& why) {
    return CheckpointError("checkpoint of run '" + std::string(run_id) + "' is unreadable: " + why);
  };
  try {
    Json doc = Json::parse(entry.value);
    StoredRun run{.version = entry.version};
    if (doc.is_object() && doc.contains("history_segments")) {
      const std::string prefix = keys::history_segments(scope, run_id);
      Json history = Json::array();
      for (const auto& name : doc.at("history_segments")) {
        const std::string key = prefix + name.get<std::string>();
        auto segment = store.get(key);
        if (!segment) throw unreadable("its history segment '" + key + "' is missing");
        Json messages = Json::parse(segment->value);
        if (!messages.is_array()) throw unreadable("its history segment '" + key + "' is not a list of messages");
        for (auto& m : messages) history.push_back(std::move(m));
        run.sealed.segments.push_back(name.get<std::string>());
      }
      run.sealed.messages = history.size();
      const auto sealed = json_integer<std::size_t>(doc.at("history_sealed"), "history_sealed");
      if (sealed != run.sealed.messages) {
        throw unreadable("its history segments hold " + std::to_string(run.sealed.messages) + " messages, not " +
                         std::to_string(sealed));
      }
      for (auto& m : doc.at("history")) history.push_back(std::move(m));
      doc["history"] = std::move(history);
      doc.erase("history_segments");
      doc.erase("history_sealed");
    }
    if (doc.is_object()) {
      if (auto spans = doc.find("spans"); spans != doc.end()) {
        if (!spans->is_array()) throw unreadable("its spans are not a list");
        for (auto& span : *spans) {
          // The first one names the trace the spans are written under.
          const auto id = span.is_object() ? span.find("trace_id") : Json::iterator();
          if (!span.is_object() || id == span.end() || !id->is_string() ||
              !trace::valid_trace_id(id->get_ref<const std::string&>())) {
            throw unreadable("a span it holds has no W3C trace id");
          }
          run.sealed.span_bytes += span.dump().size();
          run.sealed.spans.push_back(std::move(span));
        }
        doc.erase(spans);
      }
      const std::string prefix = keys::blobs(scope, run_id);
      const auto load_blob = [&](Json& part) {
        const auto blob = part.find("blob");
        if (blob == part.end()) return;
        const std::string key = prefix + (blob->is_string() ? blob->get<std::string>() : preview(*blob));
        auto stored = store.get(key);
        if (!stored) throw unreadable("its content blob '" + key + "' is missing");
        auto bytes = base64_decode(stored->value);
        if (!bytes || sha256_hex(*bytes) != blob->get<std::string>()) {
          throw unreadable("its content blob '" + key + "' does not match its SHA-256 hash (altered or corrupt)");
        }
        part.erase("blob");
        part["data"] = std::move(stored->value);
      };
      if (auto history = doc.find("history"); history != doc.end()) for_each_part(*history, "content", load_blob);
      if (auto outcomes = doc.find("outcomes"); outcomes != doc.end()) for_each_part(*outcomes, "parts", load_blob);
    }
    run.state = RunState::from_json(doc);
    return run;
  } catch (const CheckpointError&) {
    throw;
  } catch (const Error& e) {
    throw unreadable(e.what());
  } catch (const Json::exception& e) {
    throw unreadable(e.what());
  }
}

}  // namespace

std::optional<StoredRun> load_stored_run(Store& store, const Scope& scope, std::string_view run_id) {
  auto entry = store.get(keys::run(scope, run_id));
  if (!entry) return std::nullopt;
  return read_run(store, scope, run_id, *entry);
}

Checkpoint::Checkpoint(std::shared_ptr<Store> store, const Scope& scope, std::string run_id,
                       std::int64_t version, SealedHistory sealed)
    : store_(std::move(store)),
      scope_(scope),
      key_(keys::run(scope, run_id)),
      segment_prefix_(keys::history_segments(scope, run_id)),
      blob_prefix_(keys::blobs(scope, run_id)),
      writer_(RunContext::new_id("w")),
      run_id_(std::move(run_id)),
      version_(version),
      continued_(version != 0),
      sealed_(std::move(sealed)),
      ledger_(std::make_shared<StoreLedger>(store_, keys::ledger(scope, run_id_), writer_)) {}

bool Checkpoint::save(const RunState& state, const std::vector<trace::Span>& spans) {
  SealedHistory sealed = sealed_;
  for (const auto& span : spans) {
    sealed.span_bytes += sealed.spans.emplace_back(trace::to_json(span)).dump().size();
  }
  if (!sealed.spans.empty() &&
      (sealed.span_bytes > kSealBytes || state.phase == Phase::done || state.phase == Phase::suspended)) {
    // Under a name only this writer uses, like a history segment: a lost
    // race leaves a duplicate segment of the same spans, never a lost one.
    char seq[24];
    std::snprintf(seq, sizeof seq, "#%06zu-", span_segments_++);
    const std::string trace_id = sealed.spans.front().at("trace_id").get<std::string>();
    put(keys::trace_spans(scope_, trace_id) + run_id_ + seq + writer_,
        Json(std::move(sealed.spans)).dump(-1, ' ', false, Json::error_handler_t::replace));
    sealed.spans.clear();
    sealed.span_bytes = 0;
  }
  // History only grows; should it ever shrink, it is stored whole again
  // (the spans not yet written stay: they are not history).
  if (state.history.size() < sealed.messages) {
    sealed.segments.clear();
    sealed.messages = 0;
  }
  std::size_t unsealed = 0;
  for (std::size_t i = sealed.messages; i < state.history.size(); ++i) unsealed += approximate_size(state.history[i]);
  Json tail = detail::messages_json(state.history, sealed.messages);
  for_each_part(tail, "content", [&](Json& part) { store_blob(part); });
  if (unsealed > kSealBytes) {
    // Written under a name only this writer uses, before the document that
    // lists it: a crash or a lost race leaves an unlisted segment behind,
    // never a listed one that is missing or overwritten.
    char seq[24];
    std::snprintf(seq, sizeof seq, "%08zu-", sealed.segments.size());
    std::string name = seq + writer_;
    put(segment_prefix_ + name, canonical_dump(tail));
    sealed.segments.push_back(std::move(name));
    sealed.messages = state.history.size();
    tail = Json::array();
  }
  Json doc = detail::run_state_document(state, std::move(tail));
  if (!sealed.segments.empty()) {
    doc["history_segments"] = sealed.segments;
    doc["history_sealed"] = sealed.messages;
  }
  if (!sealed.spans.empty()) doc["spans"] = sealed.spans;
  for_each_part(doc.at("outcomes"), "parts", [&](Json& part) { store_blob(part); });
  // Not retried (see "Failed writes" in the header): an error here may
  // have landed, and a second try could only be told apart by re-reading.
  auto written = store_->compare_and_set(key_, version_, canonical_dump(doc));
  if (!written) return false;
  // The first save claimed the run: its calls run from now on only while
  // the ledger's owner record names this writer (see StoreLedger's Fencing),
  // written before any of them starts. Not written when a later holder has
  // already claimed it: this writer's calls are then given back unrun, and
  // its next save fails.
  version_ = *written;
  if (!claimed_) (void)ledger_->claim_owner(version_);
  claimed_ = true;
  sealed_ = std::move(sealed);
  return true;
}

// Moves a binary part over kBlobBytes into a blob (written once per writer:
// it is content-addressed), leaving its hash.
void Checkpoint::store_blob(Json& part) {
  const auto data = part.find("data");
  if (data == part.end() || !data->is_string() || data->get_ref<const std::string&>().size() < kBlobBytes * 4 / 3) {
    return;
  }
  auto bytes = base64_decode(data->get_ref<const std::string&>());
  if (!bytes) return;  // to_json wrote it: cannot happen; kept inline if it did
  const std::string hash = sha256_hex(*bytes);
  const std::string key = blob_prefix_ + hash;
  if (!blobs_.contains(key)) {
    put(key, data->get<std::string>());
    blobs_.insert(key);
  }
  part.erase("data");
  part["blob"] = hash;
}

// Blobs and segments only: writing one again writes the same bytes under
// the same key, so a transient refusal, or a write that may or may not have
// happened, is worth another try.
void Checkpoint::put(const std::string& key, const std::string& value) {
  store_detail::retry_transient([&] { return store_->put(key, value); }, kWriteAttempts, kWriteBackoff);
}

std::shared_ptr<const CallLedger> Checkpoint::ledger() const noexcept { return ledger_; }

void Checkpoint::tidy() const {
  ledger_->clear();
  if (!continued_) return;  // a run written by this process alone leaves no strays
  for (const auto& [key, entry] : store_->list(segment_prefix_)) {
    const std::string name = key.substr(segment_prefix_.size());
    if (name.find('#') != std::string::npos) continue;  // a run whose id extends this one's with '#'
    if (std::find(sealed_.segments.begin(), sealed_.segments.end(), name) == sealed_.segments.end()) {
      store_->erase(key);
    }
  }
}

std::optional<RunState> load_run(Store& store, const Scope& scope, std::string_view run_id) {
  auto run = load_stored_run(store, scope, run_id);
  if (!run) return std::nullopt;
  return std::move(run->state);
}

namespace {

// Whether `id` is a sub-run's ("<parent>/<n>/<call id>", as_tool's) of a
// run in `ids`.
bool is_sub_run(std::string_view id, const std::set<std::string_view>& ids) {
  for (std::size_t slash = id.find('/'); slash != std::string_view::npos; slash = id.find('/', slash + 1)) {
    const std::string_view rest = id.substr(slash + 1);
    const std::size_t digits = rest.find_first_not_of("0123456789");
    if (digits == 0 || digits == std::string_view::npos || rest[digits] != '/') continue;
    if (ids.contains(id.substr(0, slash))) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> interrupted_runs(Store& store, const Scope& scope) {
  const std::string prefix = keys::run(scope, "");
  const auto runs = store.list(prefix);
  std::set<std::string_view> all;
  for (const auto& [key, entry] : runs) all.insert(std::string_view(key).substr(prefix.size()));
  std::vector<std::string> ids;
  for (const auto& [key, entry] : runs) {
    const std::string id = key.substr(prefix.size());
    if (is_sub_run(id, all)) continue;
    const Phase phase = read_run(store, scope, id, entry).state.phase;
    if (phase == Phase::ask_model || phase == Phase::act) ids.push_back(id);
  }
  return ids;
}

}  // namespace agentkit::state
