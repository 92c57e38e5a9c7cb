#pragma once
// Agent: a named model + prompt + cognition. A run is a resumable state
// machine: run() drives it to the end, start() hands the host a RunHandle to
// advance itself without blocking.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <agentkit/context.h>
#include <agentkit/messages.h>
#include <agentkit/registry.h>
#include <agentkit/schema.h>

namespace agentkit {

enum class StopReason { answered, suspended, max_iterations, budget_exhausted, cancelled, failed };
std::string_view to_string(StopReason reason) noexcept;

// A run paused for a human: the calls that need a decision, with their
// arguments. None of them has run.
struct Suspended {
  std::string reason = "awaiting_approval";
  std::vector<ToolCall> pending;
};

// A human's decision on one pending call.
struct Decision {
  enum class Kind { approve, reject, edit };
  Kind kind = Kind::reject;
  std::string message;  // reject: why (shown to the model)
  Json arguments;       // edit: the arguments to run instead

  static Decision approve() { return {Kind::approve, {}, {}}; }
  static Decision reject(std::string why = {}) { return {Kind::reject, std::move(why), {}}; }
  static Decision edit(Json arguments) { return {Kind::edit, {}, std::move(arguments)}; }
};
// Decisions by call id. A pending call without a decision is rejected.
using Decisions = std::map<std::string, Decision>;

// Where the state machine stands. Serialisable at every step boundary.
enum class Phase { ask_model, act, suspended, done };

// Outcome of one call of the current batch, kept across a suspension.
struct CallOutcome {
  std::string text;
  bool is_error = false;
  std::string outcome;  // ok, error, denied, outcome_unknown
};

// The whole state of a run: what resume() needs, nothing process-bound.
struct RunState {
  static constexpr int kVersion = 1;

  std::string run_id;
  std::string agent;
  std::string task;
  Phase phase = Phase::ask_model;
  std::vector<Message> history;  // user task first; the prompt is the agent's
  int iterations = 0;            // model calls made
  int repairs = 0;               // consecutive turns with a bad call
  // The current batch (the last assistant message's calls) and the outcomes
  // known so far, in call order.
  std::vector<ToolCall> batch;
  std::vector<std::optional<CallOutcome>> outcomes;
  std::vector<std::string> pending;  // call ids awaiting a decision
  Usage usage;
  StopReason stop_reason = StopReason::answered;
  std::string output;
  std::string error;

  Json to_json() const;
  // Throws std::invalid_argument for a malformed document or a newer version.
  static RunState from_json(const Json& j);
};

struct RunResult {
  StopReason stop_reason = StopReason::answered;
  std::string output;  // the final answer, or the last text on a limit
  Json structured;     // the decoded answer when the agent declares an output type
  std::optional<Suspended> suspended;
  std::string error;  // why a run failed or stopped early
  Usage usage;        // this run's model calls plus those of sub-runs it started (as_tool)
  int iterations = 0;
  RunState state;  // feed to Agent::resume
};

// A run in progress, advanced by the host. poll() never blocks: it advances
// the machine as far as it can without waiting and returns true once done.
// Events are queued and handed out by drain_events() on the host's thread.
class RunHandle {
 public:
  class Driver {
   public:
    virtual ~Driver() = default;
    virtual bool poll() = 0;
    virtual void wait() = 0;  // block until poll() can make progress
    virtual bool done() const = 0;
    virtual const RunResult& result() const = 0;
    virtual std::vector<Event> drain_events() = 0;
    virtual void cancel() = 0;
  };

  explicit RunHandle(std::unique_ptr<Driver> driver) : driver_(std::move(driver)) {}

  bool poll() { return driver_->poll(); }
  bool done() const { return driver_->done(); }
  std::vector<Event> drain_events() { return driver_->drain_events(); }
  // Cancels the run: the loop stops, pending work is abandoned, and the
  // result says `cancelled`.
  void cancel() { driver_->cancel(); }
  const RunResult& result() const { return driver_->result(); }
  // Drives to the end on the calling thread, delivering events to `observer`.
  RunResult wait(Observer* observer = nullptr);

 private:
  std::unique_ptr<Driver> driver_;
};

class Agent;

// A reasoning strategy: owns the tools and the state machine's transitions.
class Cognition {
 public:
  virtual ~Cognition() = default;
  virtual const ToolRegistry& tools() const = 0;
  virtual std::unique_ptr<RunHandle::Driver> drive(const Agent& agent, RunState state, Decisions decisions,
                                                   RunContext ctx) const = 0;
};

// A declared output type for an agent's final answer (see output_type<T>()).
struct OutputSpec {
  Schema schema;
  std::string type_name;
  // Decodes the answer; false (with errors in the state) on mismatch.
  std::function<bool(const Json&, DecodeState&)> validate;
};

template <class T>
OutputSpec output_type() {
  return {schema_of<T>(), Codec<T>::type_name(), [](const Json& v, DecodeState& st) {
            T tmp{};
            return Codec<T>::decode(v, tmp, st);
          }};
}

struct AgentOptions {
  int max_iterations = 10;  // model calls per run
  int max_repairs = 3;      // consecutive turns with bad calls before failing
  std::optional<OutputSpec> output;
};

// Example:
//   agentkit::Agent agent("atlas", "fake", "You answer questions about cities.",
//                         std::make_shared<agentkit::cognition::ReActCognition>(
//                             std::vector<agentkit::ToolPtr>{city_population}));
//   agentkit::RunResult result = agent.run("How big is Lisbon?", ctx);
class Agent {
 public:
  // A null cognition means ReActCognition with no tools.
  Agent(std::string name, std::string model, std::string prompt, std::shared_ptr<const Cognition> cognition = nullptr,
        AgentOptions options = {});

  const std::string& name() const noexcept { return name_; }
  const std::string& model() const noexcept { return model_; }
  const std::string& prompt() const noexcept { return prompt_; }
  const AgentOptions& options() const noexcept { return options_; }
  const Cognition& cognition() const noexcept { return *cognition_; }

  // Drives a run to its end on the calling thread.
  RunResult run(std::string task, RunContext& ctx) const;
  // Starts a run for the host to advance with RunHandle::poll().
  RunHandle start(std::string task, RunContext& ctx) const;
  // Continues a suspended run with decisions for its pending calls.
  RunResult resume(RunState state, Decisions decisions, RunContext& ctx) const;
  RunHandle start_resume(RunState state, Decisions decisions, RunContext& ctx) const;

 private:
  std::string name_;
  std::string model_;
  std::string prompt_;
  std::shared_ptr<const Cognition> cognition_;
  AgentOptions options_;
};

// Wraps anything with `RunResult run(std::string, RunContext&)` into a tool
// with the fixed schema {"task": string}. The sub-run executes on
// ctx.child(), so budget, cancellation, depth and observation flow through.
using Renderer = std::function<std::string(const RunResult&)>;
std::string render_result(const RunResult& result);

struct AsToolOptions {
  std::string name;
  std::string description;
  bool side_effecting = false;
  Renderer render = render_result;
};
ToolPtr as_tool(std::shared_ptr<const Agent> agent, AsToolOptions options);

}  // namespace agentkit
