#pragma once
// Checkpoint: how a durable run's RunState (<agentkit/run_state.h>) is saved
// to and loaded from a Store, under the key layout of
// <agentkit/state/keys.h>. The run engine saves through it at every step
// boundary; a host may use load_run() and interrupted_runs() directly. Also
// named in namespace agentkit by <agentkit/agent.h>.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <agentkit/backoff.h>
#include <agentkit/context.h>
#include <agentkit/invoker.h>
#include <agentkit/run_state.h>
#include <agentkit/state/store.h>
#include <agentkit/trace.h>

namespace agentkit::state {

class StoreLedger;  // <agentkit/state/ledger.h>

// Where a stored run's older history lies: its segments' names, in order,
// and how many messages they hold; and its ended spans not yet written to
// its trace (the document's "spans", as trace::to_json wrote them).
struct SealedHistory {
  std::vector<std::string> segments;
  std::size_t messages = 0;
  std::vector<Json> spans;
  std::size_t span_bytes = 0;  // their JSON's size, so a save need not measure them again
};

// Where a durable run persists (a context with a store makes every run
// durable): its RunState under "<scope>/runs/<run id>" at every step
// boundary, and exactly-once records of its side-effecting calls under
// "<scope>/ledger/<run id>/". Each save is a compare-and-set over the version
// last seen, so two processes never both advance one run.
//
// History is append-only, so a save does not rewrite all of it: once the
// messages not yet sealed exceed kSealBytes of JSON, they are written once as
// a segment ("<scope>/run-history/<run id>#<n>-<writer>") and the run's
// document lists its segments instead of carrying them. A save costs the
// unsealed tail plus the segment list, however long the run.
//
// Binary content (an image or file part over kBlobBytes, in a history
// message or in an outcome of the current batch, such as a tool's result
// kept across a suspension) is stored once, content-addressed, as a blob
// ("<scope>/run-blobs/<run id>/<sha256 hex of the bytes>", base64 text) and
// the document refers to it by hash, so a camera frame is not rewritten into
// every checkpoint. Loading checks each blob against its hash: a blob that
// is missing or does not match is a CheckpointError naming it, never an
// empty or altered image. (A RunState handed to a host, signed or not,
// carries its parts inline.)
//
// Failed writes: a blob or segment write the store refuses as unavailable
// (StoreError, a busy or briefly unreachable backend) is tried again, up to
// kWriteAttempts in all, waiting kWriteBackoff between tries; these writes
// are idempotent (a blob's key is its content, a segment's name is this
// writer's own), so a retry can only write the same bytes again. Any other
// error, or the last attempt's, leaves save() with that error, before the
// run's document is written: the stored checkpoint stays the last good one
// (what it lists is all in the store) and what the failed save wrote
// beside it is unlisted. The compare-and-set of the document itself is
// never retried: a write that failed may still have landed, and only a
// caller that re-reads the run can tell.
//
// Example (what the run engine does, without an Agent):
//   agentkit::state::Checkpoint checkpoint(store, scope, state.run_id, 0);  // a new run
//   if (!checkpoint.save(state)) { /* another writer has this run id */ }
//   auto loaded = agentkit::state::load_run(*store, scope, state.run_id);  // == state
class Checkpoint {
 public:
  static constexpr std::size_t kSealBytes = 16 * 1024;
  static constexpr std::size_t kBlobBytes = 4 * 1024;
  static constexpr int kWriteAttempts = 3;
  static constexpr Backoff kWriteBackoff{.base = std::chrono::milliseconds(10), .max = std::chrono::milliseconds(100)};

  // `version`: the stored version this run continues from (0: a new run);
  // `sealed`: that version's sealed history.
  Checkpoint(std::shared_ptr<Store> store, const Scope& scope, std::string run_id, std::int64_t version,
             SealedHistory sealed = {});

  // False when another writer advanced the run first; throws on store errors
  // (see "Failed writes" above).
  //
  // `spans`: the run's spans ended since the last save. They ride in the
  // document ("spans") until they pass kSealBytes or the run rests (done or
  // suspended); then they are written, as one JSON array, to a segment
  // under keys::trace_spans(scope, their trace id) + "<run id>#<n>-<writer>"
  // before the document that no longer lists them: a rested run's spans are
  // all in its trace, where `agentkit show` reads them, and a step costs no
  // write of its own.
  bool save(const RunState& state, const std::vector<trace::Span>& spans = {});
  std::int64_t version() const noexcept { return version_; }
  const std::string& run_id() const noexcept { return run_id_; }
  // The ledger for this run's side-effecting calls.
  std::shared_ptr<const CallLedger> ledger() const noexcept;
  // Drops what a finished run no longer needs: its ledger records and, for a
  // run continued from a stored version, history segments its document does
  // not list (left by a process that crashed or lost a race).
  void tidy() const;

 private:
  void store_blob(Json& part);
  void put(const std::string& key, const std::string& value);  // retried while unavailable

  std::shared_ptr<Store> store_;
  Scope scope_;
  std::string key_;
  std::string segment_prefix_;  // "<scope>/run-history/<run id>#"
  std::string blob_prefix_;     // "<scope>/run-blobs/<run id>/"
  std::string writer_;          // unique per Checkpoint: a lost race never overwrites the winner's segment
  std::string run_id_;
  std::int64_t version_;
  bool continued_;  // from a stored version: a crashed writer may have left strays
  bool claimed_ = false;  // a save succeeded and claimed the ledger's owner record (see StoreLedger)
  SealedHistory sealed_;
  std::set<std::string> blobs_;  // blob keys this writer has stored
  std::size_t span_segments_ = 0;  // trace segments this writer has written
  std::shared_ptr<const StoreLedger> ledger_;
};

// A stored run as a Checkpoint continues it: its state (sealed history and
// blobs read back in), the document's version and its sealed history.
struct StoredRun {
  RunState state;
  std::int64_t version = 0;
  SealedHistory sealed;
};

// The stored run, or nullopt. Throws CheckpointError when unreadable (a
// segment or blob missing or altered, a malformed or newer document).
//
// Example (continue a stored run, as Agent::recover does):
//   if (auto run = agentkit::state::load_stored_run(*store, scope, id)) {
//     agentkit::state::Checkpoint checkpoint(store, scope, id, run->version, run->sealed);
//   }
std::optional<StoredRun> load_stored_run(Store& store, const Scope& scope, std::string_view run_id);
// The stored state of a run, or nullopt. Throws CheckpointError when unreadable.
std::optional<RunState> load_run(Store& store, const Scope& scope, std::string_view run_id);
// Runs whose last checkpoint is mid-step (asking the model or acting): what a restarted process
// recovers with Agent::recover(). Suspended and finished runs are not listed, nor sub-runs (as_tool's
// "<run id>/<n>/<call id>" under a stored run <run id>): their parent's recovery recovers them.
std::vector<std::string> interrupted_runs(Store& store, const Scope& scope);

}  // namespace agentkit::state
