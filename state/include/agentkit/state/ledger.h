#pragma once
// StoreLedger: exactly-once records for side-effecting tool calls, kept in a
// Store so they survive the process. A durable run gives each call a ledger
// key; the invoker records the intent before the tool body runs and the
// outcome after (see agentkit::CallLedger).
//
// On a second attempt at the same call (a recovery after a crash, a replay):
// - a recorded success is returned as recorded, without running the tool;
// - a call with an intent and no outcome is not run again unless the tool is
//   idempotent or reenterable (Tool::reenterable: an agent through as_tool):
//   the model and the caller get `outcome_unknown`;
// - a call whose sub-run suspended (awaiting_approval, see CallSuspended) is
//   recorded as paused, and runs again when the run resumes;
// - a recorded failure (or unknown outcome) is returned as recorded, unless
//   the tool is idempotent (then it runs again).
//
// Fencing (`owner`): a run can be taken over while the process that held
// it still lives (a fleet worker paused past its lease). The ledger alone
// stops that process from running a call the new holder ran, as long as the
// records exist; but a finished run's records are dropped (clear()), and a
// call's key free again. So a ledger with an owner runs a call only while
// the record `prefix` + "owner" names that owner, checked after the call's
// intent is recorded: either the new holder claimed the run after that
// check, and then finds the intent (outcome_unknown, never run twice), or
// the check sees the new holder, and the call is given back unrun (its
// record marked released, which a later attempt treats as never started)
// with an error result the stale process can only discard.
//
// The owner record names a holder and the version of the run's document its
// first save wrote (claim_owner(), called by Checkpoint right after that
// save claims the run). It is only ever replaced by a holder with a later
// version: a process paused between its save and that write, or retrying
// it, never takes the record back from the holder that took the run over
// after it. clear() leaves it, marked finished, and a finished record is
// never replaced: a stale holder cannot reclaim a finished run's free keys.
// That one record outlives the run (as its document does). A sub-run's
// ledger (as_tool's run "<run>/<call key>") lies under its parent's prefix:
// the parent's clear() drops the sub-run's records too but marks its owner
// record finished, never drops it.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <agentkit/invoker.h>
#include <agentkit/state/store.h>

namespace agentkit::state {

class StoreLedger final : public CallLedger {
 public:
  // Records live under `prefix` + each request's ledger_key. `owner`: see
  // Fencing above (empty: no fence).
  StoreLedger(std::shared_ptr<Store> store, std::string prefix, std::string owner = {});

  // The record naming the ledger's owner: `prefix` + "owner" (no call key
  // lacks a '/').
  std::string owner_key() const { return prefix_ + "owner"; }
  // Names this ledger's owner in the owner record, as the holder whose first
  // save wrote the run's document at `version`, unless a holder with a later
  // version (or the run's end) is recorded there. False: the run is no
  // longer this owner's, and its calls are given back unrun.
  bool claim_owner(std::int64_t version) const;

  std::optional<ToolResult> begin(const ToolRequest& request) const override;
  void end(const ToolRequest& request, const ToolResult& result) const override;
  // Under `prefix` + "same/" + a 64-bit hash of `call`; the record holds
  // `call` itself, so a hash collision reads as nothing remembered.
  std::optional<ToolResult> recall(const std::string& call) const override;
  void remember(const std::string& call, const ToolResult& result) const override;

  // Drops every record under the prefix (once the run no longer needs them),
  // but the owner record of a fenced ledger, which it marks finished first,
  // and its sub-runs' owner records, which it marks finished.
  void clear() const;

 private:
  std::optional<ToolResult> claim(const ToolRequest& request, const std::string& key, std::string& mine) const;
  std::optional<ToolResult> recorded(const ToolRequest& request, const std::optional<Entry>& entry) const;

  std::shared_ptr<Store> store_;
  std::string prefix_;
  std::string owner_;
};

}  // namespace agentkit::state
