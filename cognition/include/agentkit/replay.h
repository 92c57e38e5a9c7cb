#pragma once
// Record and replay (spec 002's Agent Replay): a Recorder writes every model
// request and response and every tool result of a run, sub-runs included,
// into a Cassette; a Replayer runs the agent again against it with no
// network, checking each request against the recorded one; fork() and diff()
// continue a recorded run with changed state and compare two runs.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <agentkit/context.h>
#include <agentkit/invoker.h>
#include <agentkit/model.h>

namespace agentkit {
namespace state {
class Store;
}

// How a replay treats a recorded call of a tool (spec 002, `replay_class`).
enum class ReplayClass {
  read_only,       // runs again
  idempotent,      // the recorded result is injected (ReplayOptions::run_idempotent: runs again)
  side_effecting,  // the recorded result is injected; never runs
};
// "read_only", "idempotent", "side_effecting".
std::string_view to_string(ReplayClass c) noexcept;

// The replay class of one call, from the tool's declaration only:
// spec().metadata["replay_class"] when set (one of the three names; anything
// else throws ToolDefinitionError naming the tool), else read_only when the
// call is not side-effecting (ToolRequest::effectively_side_effecting: a
// declared read, such as the `memory` tool's view), else idempotent when the
// tool declares Effects::idempotent, else side_effecting (the safe default).
// A request without a tool (an unknown name) is read_only: nothing can run.
ReplayClass replay_class(const ToolRequest& request);

// A cassette that cannot be read: not JSON, the wrong format or version, a
// field of the wrong type. The message names the source (a file path or a
// store key) and the field. Code data_loss.
class CassetteError : public Error {
 public:
  explicit CassetteError(const std::string& message) : Error(ErrorCode::data_loss, message) {}
};

// A replayed request that is not the recorded one, or a step the cassette
// lacks. The run fails with it (code invalid_argument), and nothing is sent
// anywhere. `step()` names the step ("run1#2": the run's
// replay key and its model step, 1-based; a sub-run's key is its parent's
// plus "/<turn>/<call id>"); `difference()` the first difference as a JSON
// path and both values, shortened ("/messages/2/content/0/text: recorded
// \"545000\", replayed \"9\""), or "no such step in the cassette".
class ReplayMismatch : public ModelError {
 public:
  ReplayMismatch(std::string step, std::string difference)
      : ModelError(ErrorCode::invalid_argument, "replay: step " + step + ": " + difference),
        step_(std::move(step)),
        difference_(std::move(difference)) {}
  const std::string& step() const noexcept { return step_; }
  const std::string& difference() const noexcept { return difference_; }

 private:
  std::string step_;
  std::string difference_;
};

// One model call: the request as agentkit saw it (model name, system,
// messages, tool specs, output schema, settings; never a header or a key)
// and the response, or the error the call threw ({"code", "message"}).
struct ModelStep {
  std::string run;  // the run's replay key ("run1", "run1/1/c2")
  int step = 0;     // 1-based, per run
  std::string agent;  // RunContext::agent_path
  Json request;
  Json response;  // null when the call failed
  Json error;     // null when it answered
  std::int64_t seq = 0;  // order within the recording (at the request)
};

// One tool call: its key in its run ("<turn>/<call id>"), the tool, the
// arguments, and every result it returned, in order (a call that awaited
// approval and ran after the resume has two).
struct ToolStep {
  std::string run;
  std::string call;
  std::string tool;
  Json arguments;
  std::string replay_class;
  std::vector<Json> results;  // {"status", "value", "text", "retryable", "parts"}
  std::int64_t seq = 0;       // order within the recording (at the last result)
};

// A recorded run: JSON on disk or in a Store. from_json/load check every
// field and throw CassetteError on anything else, never crash.
//
// Example:
//   cassette.save("run.cassette.json");
//   auto again = agentkit::Cassette::load("run.cassette.json");
//   cassette.save(*ctx.store, "cassettes/refund-1");
struct Cassette {
  std::vector<ModelStep> model_steps;
  std::vector<ToolStep> tool_steps;

  const ModelStep* find_model(std::string_view run, int step) const;
  const ToolStep* find_tool(std::string_view run, std::string_view call) const;

  Json to_json() const;
  static Cassette from_json(const Json& doc, std::string_view source = "cassette");
  // Throws CassetteError when the file cannot be written or read.
  void save(const std::string& path) const;
  static Cassette load(const std::string& path);
  // Under `key` as is (scope it with state::scoped_key when tenants share a store).
  void save(state::Store& store, std::string_view key) const;
  static Cassette load(state::Store& store, std::string_view key);
};

// ToolResult as a cassette stores it, and back (throws CassetteError).
Json result_to_json(const ToolResult& result);
ToolResult result_from_json(const Json& j);

namespace detail {
struct RecordState;
struct ReplayState;
}

// Records runs started from a context it is attached to. attach() wraps
// ctx.models with a recording model (complete and begin both recorded;
// provider() and check_schemas() forwarded) and sets ctx.invoker to a new
// Invoker whose chain is the recording layer, then `chain` (an Invoker's
// chain is fixed, so pass the host's own middleware here). Sub-runs (agents
// through as_tool) are recorded too. Record a run and its resumes with the
// same Recorder, so their steps share one key. Thread-safe.
//
// Example:
//   agentkit::Recorder recorder;
//   recorder.attach(ctx);  // ctx.models already set; default_middleware() chain
//   agent.run("Is Lisbon bigger than Porto?", ctx);
//   recorder.cassette().save("lisbon.cassette.json");
class Recorder {
 public:
  Recorder();
  void attach(RunContext& ctx, std::vector<Middleware> chain = default_middleware());
  // The pieces attach() installs, for hosts that compose their own.
  ModelResolver models(ModelResolver inner);
  Middleware middleware();
  // What was recorded so far.
  Cassette cassette() const;

 private:
  std::shared_ptr<detail::RecordState> state_;
};

// How a Replayer answers.
struct ReplayOptions {
  // Idempotent tools run again instead of getting their recorded result.
  bool run_idempotent = false;
  // Compare the system prompt of each request (false: a changed prompt
  // replays; see fork()).
  bool compare_system = true;
  // Results injected for these calls instead of the recorded ones or a run:
  // keyed by call id ("c2") or call key ("1/c2").
  std::map<std::string, ToolResult> tool_overrides;
  // Set: a model step the cassette lacks is asked of this model instead of
  // failing, and from then on a call the cassette lacks runs live (a fork).
  // Null: every step must be in the cassette.
  std::shared_ptr<Model> after;
};

// Replays a cassette. attach() sets ctx.models to a resolver whose model
// answers each request with the recorded response once the request matches
// the recorded one (ReplayMismatch otherwise), and ctx.invoker to the replay
// layer followed by `chain`. Tool calls follow their replay class: read_only
// ones run (through `chain`), the others get their recorded result (the last
// one that is not awaiting_approval); an injected call with no recorded
// result is an error result naming it, never a run (unless the replay has
// gone past the cassette into ReplayOptions::after). Runs are matched by
// replay key, not run id: top-level runs in order ("run1", "run2"), a
// sub-run under its parent's call. A
// call that needs approval and has none goes to the chain's gate, which
// answers awaiting_approval: a replay never makes a decision up.
//
// Example:
//   agentkit::Replayer replay(agentkit::Cassette::load("lisbon.cassette.json"));
//   replay.attach(ctx);
//   auto result = agent.run("Is Lisbon bigger than Porto?", ctx);  // offline
class Replayer {
 public:
  explicit Replayer(Cassette cassette, ReplayOptions options = {});
  void attach(RunContext& ctx, std::vector<Middleware> chain = default_middleware());
  ModelResolver models();
  Middleware middleware();
  // How many tool calls were answered from the cassette, and how many ran.
  int injected() const;
  int ran() const;

 private:
  std::shared_ptr<detail::ReplayState> state_;
};

// The cassette cut after model step `step` of its first top-level run: that
// run's steps 1..step, and every tool call and sub-run step recorded before
// its step `step + 1` began. Replay it with ReplayOptions::after set to
// continue from there live (another model, overridden tool results, a
// changed prompt with compare_system = false). Throws std::invalid_argument
// for step < 0.
//
// Example:
//   agentkit::Replayer replay(agentkit::fork(cassette, 1),
//                             {.compare_system = false, .tool_overrides = {{"c1", agentkit::ToolResult::ok(9)}},
//                              .after = other_model});
Cassette fork(const Cassette& cassette, int step);

// One difference between two recorded runs.
struct StepDifference {
  std::string where;  // "run1#2" (a model step) or "run1 call 1/c1" (a tool call)
  std::string what;   // "request", "response", "error", "result", "only in a", "only in b"
  std::string path;   // the JSON path of the first difference ("" for only in a/b)
  std::string a, b;   // both values, shortened
};

// The steps of `a` and `b` side by side (model steps by run and step, tool
// calls by run and call key), each that differs once with its first
// difference. Empty: the runs are the same.
std::vector<StepDifference> diff(const Cassette& a, const Cassette& b);
// One line per difference: "run1#2 request /messages/1/content/0/text: a \"x\", b \"y\"".
std::string render(const std::vector<StepDifference>& differences);
// The first difference between two JSON values as {path, a, b} (values
// shortened), or nullopt when they are equal.
std::optional<StepDifference> first_difference(const Json& a, const Json& b);

}  // namespace agentkit
