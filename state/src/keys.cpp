#include <agentkit/state/keys.h>

#include <agentkit/state/store.h>

namespace agentkit::state::keys {
namespace {

std::string under(const Scope& scope, std::string_view folder, std::string_view id, std::string_view end = {}) {
  std::string key(folder);
  key += id;
  key += end;
  return scoped_key(scope, key);
}

}  // namespace

std::string run(const Scope& scope, std::string_view run_id) { return under(scope, "runs/", run_id); }
std::string history_segments(const Scope& scope, std::string_view run_id) {
  return under(scope, "run-history/", run_id, "#");
}
std::string blobs(const Scope& scope, std::string_view run_id) { return under(scope, "run-blobs/", run_id, "/"); }
std::string ledger(const Scope& scope, std::string_view run_id) { return under(scope, "ledger/", run_id, "/"); }
std::string trace_spans(const Scope& scope, std::string_view trace_id) {
  return under(scope, "traces/", trace_id, "/");
}
std::string session(const Scope& scope, std::string_view session_id) { return under(scope, "sessions/", session_id); }
std::string cli_run(const Scope& scope, std::string_view run_id) { return under(scope, "cli/runs/", run_id); }

}  // namespace agentkit::state::keys
