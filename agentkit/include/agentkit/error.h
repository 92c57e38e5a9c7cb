#pragma once
// The one error vocabulary. Every exception agentkit throws derives from
// agentkit::Error (a std::runtime_error) and carries a canonical ErrorCode,
// in the spirit of absl::StatusCode: a host branches on the code, not on a
// message string. Specific errors add fields (a provider's HTTP status and
// retry-after, a tool's argument problems), never a second hierarchy. A run
// that fails does not throw: its RunResult carries the same code as a value
// (Failure; see <agentkit/agent.h>).
//
// Example:
//   try {
//     agent.resume(run_id, decisions, ctx);
//   } catch (const agentkit::Error& e) {
//     if (e.code() == agentkit::ErrorCode::not_found) ...  // no such run
//     log("{}: {}", agentkit::to_string(e.code()), e.what());
//   }
//
// Error derives from std::runtime_error only. Types that used to derive from
// std::invalid_argument (ToolDefinitionError, ToolArgumentError, JsonError,
// UrlError) no longer do: inheriting from both would give them two
// std::exception bases, and `catch (const std::exception&)` would then
// silently stop matching them. Catch agentkit::Error (code invalid_argument)
// or the specific type instead.
#include <chrono>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace agentkit {

// Why something failed. Names (to_string) are stable: they appear in
// RunState documents, the CLI's --json events and its exit codes.
enum class ErrorCode {
  invalid_argument,   // the caller's input is wrong: a bad definition, argument, document or request (HTTP 400/404/409/413/422 from a provider)
  not_found,          // the thing named does not exist: a run id, a model, an MCP method
  already_exists,     // a new thing's name is taken: a run id already in the store
  permission_denied,  // refused by policy: an egress rule, HTTP 403
  unauthenticated,    // credentials missing or wrong (HTTP 401), or a RunState that fails its integrity check
  rate_limited,       // HTTP 429 that a retry after a while may fix
  quota_exceeded,     // HTTP 429 insufficient_quota: a retry will not fix it
  overloaded,         // the provider is overloaded (529)
  unavailable,        // a peer or backend cannot be reached or failed: 5xx, refused, reset, DNS, a store error
  timeout,            // a deadline passed: connect, total, idle or request timeout
  truncated,          // a reply that ended before its terminal event
  protocol,           // a reply that is not what it claims: malformed, the wrong kind, or a model that kept making bad calls
  cancelled,          // the caller cancelled
  budget_exhausted,   // a limit of the run was reached: steps, tokens, cost, wall time, iterations, depth
  aborted,            // a conflict: another writer advanced or resumed the run first
  outcome_unknown,    // a side-effecting call that may or may not have taken effect
  data_loss,          // stored state is unreadable, or was written by a newer agentkit
  unimplemented,      // a feature the component or provider does not support
  internal,           // a bug, or a failure with no better code (an exception that is not an agentkit::Error)
};

// The code's canonical name: "rate_limited".
std::string_view to_string(ErrorCode code) noexcept;
// The code named `name` (its to_string), or nullopt.
std::optional<ErrorCode> error_code_from_string(std::string_view name) noexcept;

// The base of every agentkit exception.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  Error(ErrorCode code, const char* message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

// A failure as a value: what a run that stopped early carries in
// RunResult::failure. `code` and `message` are always set. When a model call
// failed the run, `model` names the agent's model and the provider's details
// follow (0 / false / nullopt when the provider gave none, or the failure
// came from elsewhere).
struct Failure {
  ErrorCode code = ErrorCode::internal;
  std::string message;
  std::string model;                                 // the model spec whose call failed
  int http_status = 0;                               // the provider's HTTP status
  bool retryable = false;                            // the provider says a later retry may succeed
  std::optional<std::chrono::milliseconds> retry_after;  // the provider's Retry-After

  friend bool operator==(const Failure&, const Failure&) = default;
};

// What an exception amounts to as a Failure: an agentkit::Error's code and
// message (a ModelError's HTTP status, retryable flag and retry-after too);
// code internal and the what() of any other exception ("unknown error" for
// a non-std one).
Failure failure_of(std::exception_ptr error);

// Writes a run's failure into `doc` (a JSON object) as RunState documents and
// the CLI's --json result spell it: "error" (the message; "" when there is no
// failure), "error_code" (to_string), and a "failure" object with "model",
// "http_status", "retryable" and "retry_after_ms", each only when set (no
// object when none is).
void write_failure(nlohmann::json& doc, const std::optional<Failure>& failure);
// Reads back what write_failure wrote: the message from "error", the code
// from "error_code" (`default_code` when absent, as in documents written
// before codes; the names "invalid" and "permission" of RunState v3 are
// read as invalid_argument and permission_denied), and the provider's
// details. Throws Error (invalid_argument), its message prefixed by `what`
// ("run state: unknown error code 'x'"), for an unknown code or a detail of
// the wrong type; nlohmann's exceptions for a missing or non-string "error".
Failure read_failure(const nlohmann::json& doc, ErrorCode default_code, std::string_view what);

}  // namespace agentkit
