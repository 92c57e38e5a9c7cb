#pragma once
// The store key layout: every key agentkit itself builds, named in one place.
// Each is scoped (scoped_key, "<scope key>/..."), so tenants sharing one
// store never see each other's runs.
//
//   <scope>/runs/<run id>                     a durable run's document (RunState v4)
//   <scope>/run-history/<run id>#<n>-<writer> a sealed segment of its history
//   <scope>/run-blobs/<run id>/<sha256 hex>   a binary content part, base64
//   <scope>/ledger/<run id>/<call key>        exactly-once records of its calls
//   <scope>/ledger/<run id>/owner             the Checkpoint that holds the run (StoreLedger's fence)
//   <scope>/traces/<trace id>/<run id>#<n>-<writer>  a segment of a durable run's spans
//   <scope>/sessions/<session id>             a session's history
//   <scope>/cli/runs/<run id>                 the CLI's record of a run's definition
//
// Everything under a run's prefixes belongs to that run: Checkpoint::tidy()
// drops its ledger and stray segments once it is over.
//
// Example:
//   const auto entry = store.get(agentkit::state::keys::run(ctx.scope, "run-1"));
#include <string>
#include <string_view>

#include <agentkit/context.h>

namespace agentkit::state::keys {

// "<scope>/runs/<run id>"; with an empty id, the prefix of every run's key.
std::string run(const Scope& scope, std::string_view run_id);
// "<scope>/run-history/<run id>#": the prefix of the run's history segments.
std::string history_segments(const Scope& scope, std::string_view run_id);
// "<scope>/run-blobs/<run id>/": the prefix of the run's content blobs.
std::string blobs(const Scope& scope, std::string_view run_id);
// "<scope>/ledger/<run id>/": the prefix of the run's StoreLedger.
std::string ledger(const Scope& scope, std::string_view run_id);
// "<scope>/traces/<trace id>/": the prefix of the span segments a trace's
// durable runs stored, each a JSON array of trace::to_json spans (a run,
// its sub-runs and its resumed parts share a trace; see RunState::trace_id
// and Checkpoint::save). Kept after a run ends: they are its record.
std::string trace_spans(const Scope& scope, std::string_view trace_id);
// "<scope>/sessions/<session id>".
std::string session(const Scope& scope, std::string_view session_id);
// "<scope>/cli/runs/<run id>": where the `agentkit` CLI remembers which
// definition a run was started from.
std::string cli_run(const Scope& scope, std::string_view run_id);

}  // namespace agentkit::state::keys
