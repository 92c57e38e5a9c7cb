#pragma once
// Agent: a named model + prompt + cognition. A run is a resumable state
// machine: run() drives it to the end, start() hands the host a RunHandle to
// advance itself without blocking.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <agentkit/context.h>
#include <agentkit/guardrail.h>
#include <agentkit/invoker.h>
#include <agentkit/messages.h>
#include <agentkit/registry.h>
#include <agentkit/run_state.h>
#include <agentkit/schema.h>
#include <agentkit/state/checkpoint.h>

namespace agentkit {

// StopReason: see <agentkit/events.h>.

// A run paused for a human: the calls that need a decision, with their
// arguments. None of them has run.
//
// `pending` holds the run's own calls and those of sub-agents (as_tool)
// that suspended inside one of its calls, in call order. A sub-agent's call
// has the id "<the call that runs the sub-agent>/<its id in the sub-run>"
// (deeper nesting adds a segment per level), so a Decisions map keyed by
// these ids routes each decision down to the run that holds the call; see
// as_tool. `agents[i]` is the agent whose call pending[i] is, as a path from
// the run's agent: "support" for its own, "support/billing" for a call of
// the billing sub-agent it runs as a tool.
//
// Decision, Decisions: see <agentkit/run_state.h>.
struct Suspended {
  std::string reason = "awaiting_approval";
  std::vector<ToolCall> pending;
  std::vector<std::string> agents;
};
// What a suspended run awaits, as its RunResult::suspended says: for a
// RunState from anywhere (a stored run from load_run, a host's copy).
Suspended suspension_of(const RunState& state);

// RunState (with Phase and CallOutcome), charge_spent and the RunError
// family: see <agentkit/run_state.h>. Checkpoint, SealedHistory, load_run
// and interrupted_runs live in agentkit::state (<agentkit/state/checkpoint.h>)
// and are named here too, as they always were.
using state::Checkpoint;
using state::interrupted_runs;
using state::load_run;
using state::SealedHistory;

struct RunResult {
  StopReason stop_reason = StopReason::answered;
  std::string output;  // the final answer, or the last text on a limit
  Json structured;     // the decoded answer when the agent declares an output type
  std::optional<Suspended> suspended;
  // Why the run stopped early, as a value a host branches on: set for every
  // stop reason but `answered` and `suspended`. Its code:
  //  - failed by a model call: the ModelError's code (every
  //    providers::ProviderError: truncated, protocol, rate_limited,
  //    unavailable, timeout, ...), with `model` and the provider's HTTP
  //    status, retryable flag and retry-after; another agentkit::Error's
  //    code, internal for any other exception. The call's usage so far is
  //    in `usage`.
  //  - failed otherwise: protocol when the model kept making bad calls past
  //    max_repairs or its final answer did not match the output type;
  //    aborted when another process took the run's checkpoint over; the
  //    store's code (unavailable) when a checkpoint could not be written;
  //    the resolver's code (not_found, invalid_argument, ...) when no model
  //    could be had for the agent.
  //  - budget_exhausted and max_iterations: budget_exhausted; cancelled:
  //    cancelled.
  // The message says what happened ("model call failed: HTTP 429 ...").
  //
  // Example:
  //   auto result = agent.run(task, ctx);
  //   if (result.failure && result.failure->code == agentkit::ErrorCode::rate_limited) {
  //     retry_later(result.failure->retry_after.value_or(std::chrono::seconds(30)));
  //   }
  std::optional<Failure> failure;
  // The name of the agent the run ended under: the one that answered (or
  // suspended, or failed). The agent the run started with unless it handed
  // off (see Handoff).
  std::string agent;
  Usage usage;        // this run's model calls plus those of sub-runs it started (as_tool)
  int iterations = 0;
  RunState state;  // feed to Agent::resume; signed when the context has a state_key
};

// A run in progress, advanced by the host. poll() never blocks: it advances
// the machine as far as it can without waiting and returns true once done.
// Events are queued and handed out by drain_events() on the host's thread,
// those of the sub-runs it starts (as_tool) included, in the order emitted.
//
// Durability: poll() never waits on storage. A durable run's checkpoints
// are written in order by its store's writer thread; a batch of tool
// calls starts only once the checkpoint naming it is written, so a crash
// loses at most the step in flight (which Agent::recover handles). A save
// the store refuses stops the run `failed` at the next poll(), and a run
// with a refused save never reports success. The end of a run is saved
// last: it may still be in flight when poll() first returns true, and it is
// in the store once wait() returns or the handle is destroyed. A host that
// resumes or recovers the run by id in the same process calls wait() first.
//
// Ownership: a handle owns everything its run and the run's work in flight
// need. At start the driver copies the Agent (name, model, prompt, options)
// and shares its cognition, tools and invoker with the work on the executor,
// so the host MAY destroy the Agent as soon as start() returns, and MAY drop
// the handle mid-call (a game unloading a level): dropping an unfinished
// handle cancels its run, and calls still running end on their worker
// without touching the handle, the Agent or the host's context object. (The
// executor itself MUST outlive the work submitted to it; see Executor.) A
// durable run dropped this way stays where its last checkpoint left it, for
// Agent::recover().
//
// Cancellation: the run has its own token, a child of ctx.cancellation, and
// every tool call a child of the run's (see CancellationToken). cancel() on
// the handle stops this run only; cancelling ctx.cancellation stops every run
// started from it. Either way the next poll() ends the run `cancelled`, and
// wait() (so Agent::run()) returns within milliseconds, without waiting for a
// tool that ignores its context, as long as calls run on an executor (inline
// calls hold the driving thread until they return). In the record, a call
// that finished keeps its result; one still running is outcome_unknown when
// side-effecting (an error "Interrupted" when read-only), and its late
// completion changes nothing but a durable run's ledger; only a call that
// never started says "Not run".
class RunHandle {
 public:
  class Driver {
   public:
    virtual ~Driver() = default;
    virtual bool poll() = 0;
    // Blocks until poll() can make progress, or the run is cancelled; once
    // the run is done, until its end is written to its store (if durable).
    virtual void wait() = 0;
    // Blocks up to `max` until poll() can make progress; returns at once
    // when the run is done. The default returns at once: a driver that
    // cannot wait leaves its host polling.
    virtual void wait_ready(std::chrono::milliseconds max) { (void)max; }
    virtual bool done() const = 0;
    virtual const RunResult& result() const = 0;
    // Hands the result of a done run over, moved where it can be; the
    // driver is not asked for its result again.
    virtual RunResult take_result() { return result(); }
    virtual std::vector<Event> drain_events() = 0;
    // No one will drain or observe this run's events (RunHandle::wait on a
    // temporary handle with no observer, as Agent::run without one does):
    // the driver may stop making them. Events a sub-run sends to the queue
    // of the run that started it are not this run's to drop.
    virtual void drop_events() {}
    virtual void cancel() = 0;
  };

  explicit RunHandle(std::unique_ptr<Driver> driver) : driver_(std::move(driver)) {}

  bool poll() { return driver_->poll(); }
  // Blocks up to `max` until poll() can make progress: a reply arrived, a
  // tool finished, a save completed. For a host thread with nothing else to
  // do between polls (an event loop, a server's worker), so it sleeps
  // instead of spinning on poll(). It advances nothing: call poll() after.
  // Returns at once when the run is done.
  //
  //   auto handle = agent.start(task, ctx);
  //   while (!handle.poll()) handle.wait_ready(std::chrono::milliseconds(10));
  void wait_ready(std::chrono::milliseconds max) { driver_->wait_ready(max); }
  bool done() const { return driver_->done(); }
  std::vector<Event> drain_events() { return driver_->drain_events(); }
  // Cancels the run: the loop stops at the next poll(), work in flight is
  // abandoned (and told through its context), and the result says
  // `cancelled`. The context the run was started with is not cancelled.
  void cancel() { driver_->cancel(); }
  const RunResult& result() const { return driver_->result(); }
  // Drives to the end on the calling thread, delivering events to `observer`.
  // A handle kept by the host keeps its result (result() still answers); a
  // temporary one (`agent.start(...).wait()`, which Agent::run is) hands it
  // over without copying the history.
  RunResult wait(Observer* observer = nullptr) &;
  RunResult wait(Observer* observer = nullptr) &&;

 private:
  void drive(Observer* observer);

  std::unique_ptr<Driver> driver_;
};

class Agent;

// How runs of an agent are driven: its tools and a driver for each run.
// Every cognition agentkit ships is a cognition::Strategy, whose drive()
// hands the run to the run engine (<agentkit/cognition/engine.h>); write a
// Strategy rather than a Cognition. The engine is the only ApprovalIssuer: it
// mints an Approval for a call of RunState::approved, and only for those,
// when it sends the call to the invoker. The decisions a driver is handed
// have been checked (Agent::start_resume throws InvalidDecision first).
class Cognition {
 public:
  virtual ~Cognition() = default;
  virtual const ToolRegistry& tools() const = 0;
  // `checkpoint` is null for a run without a store. A durable driver saves
  // at construction (claiming the run: it throws RunAlreadyResumed, or
  // RunError for a new run whose id exists, when the save loses) and at
  // every step boundary after. `agent` is the Agent whose cognition this is;
  // a driver MUST NOT keep a reference to it (or to this cognition) beyond
  // what it owns: copy the agent and hold the copy's shared cognition, so
  // the host may destroy both while the run is in flight (see RunHandle).
  virtual std::unique_ptr<RunHandle::Driver> drive(const Agent& agent, RunState state, Decisions decisions,
                                                   RunContext ctx, std::unique_ptr<Checkpoint> checkpoint) const = 0;
};

// A declared output type for an agent's final answer (see output_type<T>()).
struct OutputSpec {
  Schema schema;
  std::string type_name;
  // Decodes the answer; false (with errors in the state) on mismatch.
  std::function<bool(const Json&, DecodeState&)> validate;
};

// `schema` with "additionalProperties": false on every object schema that
// lists `properties` and says nothing about other keys: what a described
// struct's decoder already enforces (it refuses unknown keys), written into
// the schema so a provider's strict mode can take it (see output_type<T>()).
Schema close_objects(Schema schema);

// The schema is schema_of<T>() closed with close_objects(): a struct whose
// fields are all required then meets OpenAI's strict structured-output rules.
template <class T>
OutputSpec output_type() {
  return {close_objects(schema_of<T>()), Codec<T>::type_name(), [](const Json& v, DecodeState& st) {
            T tmp{};
            return Codec<T>::decode(v, tmp, st);
          }};
}

// Shapes a session's history before it is stored (see <agentkit/session.h>
// for truncation and summarisation that keep tool calls with their results).
using HistoryPolicy = std::function<std::vector<Message>(std::vector<Message>)>;

// Keeps a long run within its model's context window. Before each model
// call the engine estimates the tokens the model would see (the prompt
// aside); past `max_tokens` it compacts: older messages leave the model's
// view, from the oldest, until the estimate is at most `target_tokens`. The
// task (the first message) and `pinned` messages always stay; a tool call
// never leaves without its results (the view starts at a message that is
// not a tool result) and the latest turn always stays. `summarize` set: a
// model call without tools (on `summary_model`, or the agent's model when
// empty) folds what left, and the earlier summary, into a new summary the
// model then sees with the task; its usage is charged to the run like any
// call's, and a failed or empty summary fails the run, typed.
// Unset: what left is dropped. The run's history itself is never cut: the
// view is RunState::window, saved with every checkpoint, and each
// compaction is a ContextCompacted event.
//
// Example (keep a 500-step robot task near 8k tokens):
//   options.context_policy = agentkit::ContextPolicy{.max_tokens = 8000, .summarize = true};
struct ContextPolicy {
  std::size_t max_tokens = 0;     // required, > 0
  std::size_t target_tokens = 0;  // 0: half of max_tokens; must be below max_tokens
  bool summarize = false;
  std::string summary_model;
  // The summarizer's instructions (the system prompt of its call).
  std::string summary_prompt =
      "Summarise the conversation below for the assistant that continues it: keep every fact, figure, decision, "
      "tool result and open question it will need; drop pleasantries. Answer with the summary only.";
  // Messages that never leave the view (with their tool call or results).
  std::function<bool(const Message&)> pinned;
  // The estimate of one message's tokens. Unset: a token per 4 bytes of
  // text, tool arguments and names, 4 per message and 512 per image or
  // file part.
  std::function<std::size_t(const Message&)> estimate;
};

// The default ContextPolicy::estimate.
std::size_t estimate_tokens(const Message& message);

// What the agent's model costs, in USD per million tokens. Cached input
// tokens are charged at the input rate (an upper bound).
struct Pricing {
  double input_usd_per_mtok = 0;
  double output_usd_per_mtok = 0;

  double cost(const Usage& usage) const noexcept;
};

class Agent;

// One agent this agent may hand the conversation to (AgentOptions::handoffs).
// The model sees a tool `transfer_to_<agent name>`, taking no arguments,
// beside the agent's own tools; calling it hands the run over. The engine
// answers that call itself ("Transferred to <name>."; it never reaches the
// invoker, needs no approval and costs no tool call), the batch's other
// calls run as usual, and once their results are in the history the run
// continues under the target: its prompt (or instructions), cognition and
// tools, model (checked with Model::check_schemas as at a run's start),
// model settings (the run's RunOptions::model_settings still override
// them), options (max_iterations counts the whole run's model calls,
// output type, guardrails, context policy) and its own handoffs. The
// history is carried whole; a HandoffOccurred event and a "handoff <name>"
// span record the switch, and RunResult::agent names the agent that
// answered. Of two transfer calls in one turn the first wins; the others
// get an error result ("only one handoff per turn").
//
// `keep` (optional) filters what the target's model sees of the messages
// before the handoff: a group (a message and the tool results after it, so
// a call never shows without its results) stays when `keep` holds for each
// of its messages. The task (and a session's history) always stays; the
// history itself is never edited (this is a view, like the context
// window's). Only the latest handoff's `keep` applies.
//
// Durable: RunState::handoff names the active agent, and a resumed or
// recovered run finds it again by name through the starting agent's
// handoff graph (a name not found there fails the run at its start,
// not_found). So names in one graph are unique: Agent's
// constructor refuses two different agents of one name, itself included.
// Agents are immutable and built before the agents that list them, so the
// graph cannot hold a cycle (and no shared_ptr cycle leaks): a target
// cannot hand back to the agent that lists it.
//
// Example:
//   auto billing = std::make_shared<const agentkit::Agent>("billing", "fake", "You handle refunds.", billing_tools);
//   agentkit::AgentOptions options;
//   options.handoffs.push_back({billing, "Refunds, invoices and charges."});
//   agentkit::Agent triage("triage", "fake", "Route the customer.", nullptr, std::move(options));
struct Handoff {
  std::shared_ptr<const Agent> agent;  // required
  std::string description;             // empty: "Hand the conversation to <name>."
  std::function<bool(const Message&)> keep;
};

// The tool name the model calls to hand the conversation to `agent`.
std::string handoff_tool_name(std::string_view agent);

struct AgentOptions {
  int max_iterations = 10;  // model calls per run
  int max_repairs = 3;      // consecutive turns with bad calls before failing
  std::optional<OutputSpec> output;
  HistoryPolicy history_policy;  // applied to session history; null keeps everything
  // Set: every model call charges its cost to ctx.budget (which is what
  // BudgetLimits::cost_usd limits) and to RunState::cost_usd.
  std::optional<Pricing> pricing;
  // How every run of this agent asks its model (temperature, max output
  // tokens, tool_choice, ...; see <agentkit/model.h>). Checked by Agent's
  // constructor: a value out of range, or a tool_choice naming a tool the
  // cognition does not advertise, throws ModelSettingsError.
  ModelSettings model_settings;
  // Caps on content parts a tool returns: a part over max_part_bytes, or one
  // that is not well-formed (check_part), makes the call's result a
  // model-visible error instead. Adapters apply their own caps to requests.
  ContentLimits content_limits;
  // Set: the agent's prompt is this function of the run's context,
  // evaluated before each model call (so what it reads, a refreshed Skills
  // listing, the time, the user's account, reaches the model as it changes);
  // the prompt given to the constructor is then only its name in traces. A
  // throw fails the run (its Failure's code from the exception). A strategy
  // that replaces the prompt for a call (ModelCall::system) still wins.
  std::function<std::string(const RunContext& ctx)> instructions;
  // Checks at fixed points of every run; see <agentkit/guardrail.h>.
  std::vector<InputGuardrail> input_guardrails;
  std::vector<OutputGuardrail> output_guardrails;
  std::vector<ToolGuardrail> tool_guardrails;
  // Compacts what the model sees of a long run; see ContextPolicy. Checked
  // by Agent's constructor (std::invalid_argument).
  std::optional<ContextPolicy> context_policy;
  // The agents this agent may hand the conversation to; see Handoff.
  // Checked by Agent's constructor (ToolDefinitionError naming the agent):
  // a null target, one listed twice, a name that makes no valid tool name,
  // a transfer tool's name taken by one of the agent's tools, or two
  // different agents of one name in the handoff graph.
  std::vector<Handoff> handoffs;
};

struct RunOptions {
  std::string run_id;  // empty: a new unique id
  // Continue this session: its stored history comes first, and the run's new
  // messages are appended to it when the run ends (not while suspended).
  // Needs ctx.store.
  std::string session;
  // This run's settings: each field set here overrides the agent's
  // (AgentOptions::model_settings), the others keep the agent's; `extra`
  // deep-merges. Checked by start() like the agent's (ModelSettingsError,
  // before anything runs), and kept in RunState::model_settings so they
  // still apply after a suspension is resumed or a crash recovered.
  ModelSettings model_settings;
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

  // Copies share one definition (a copy costs a reference count; a run
  // keeps one), so the functions in AgentOptions are shared by every run of
  // every copy. A moved-from Agent is still this agent: moving copies.
  Agent(const Agent&) = default;
  Agent& operator=(const Agent&) = default;

  const std::string& name() const noexcept { return data_->name; }
  const std::string& model() const noexcept { return data_->model; }
  const std::string& prompt() const noexcept { return data_->prompt; }
  const AgentOptions& options() const noexcept { return data_->options; }
  const Cognition& cognition() const noexcept { return *data_->cognition; }
  // The agent named `name` in this agent's handoff graph (this agent, its
  // handoffs' targets, theirs, ...), or null. A run resumed or recovered
  // after a handoff finds its active agent so (RunState::handoff).
  const Agent* find_agent(std::string_view name) const;
  // Throws ToolDefinitionError when `model` cannot take one of this agent's
  // tools or its output schema (Model::check_schemas), naming the tool, the
  // field and the provider's dialect. Every run checks the same when it
  // resolves its model; a host calls this to fail when it builds the agent.
  void check_model(const Model& model) const;

  // Drives a run to its end on the calling thread. With ctx.store the run
  // is durable: checkpointed at every step boundary.
  RunResult run(std::string task, RunContext& ctx, RunOptions options = {}) const;
  // Starts a run for the host to advance with RunHandle::poll(). The handle
  // does not borrow this Agent: the Agent may be destroyed before it.
  RunHandle start(std::string task, RunContext& ctx, RunOptions options = {}) const;
  // Continues a suspended run with decisions for its pending calls. The
  // state is checked before anything runs:
  //  - with ctx.store, the run's stored checkpoint is authoritative: a run
  //    not in the store (say, a changed run_id) throws RunNotFound, one no
  //    longer suspended throws RunAlreadyResumed, and a state that differs
  //    from the checkpoint in any field throws StateTampered. Resuming
  //    claims the checkpoint: of two resumes of one run exactly one
  //    proceeds, the other throws RunAlreadyResumed. ctx.state_key is not
  //    consulted.
  //  - without a store, ctx.state_key must be set and the state must carry
  //    the signature a run under that key returned (RunResult::state):
  //    none throws StateUnsigned, one that does not match throws
  //    StateTampered. Without a store nothing remembers that a run was
  //    resumed, so the same signed state can be resumed again: a host that
  //    needs once-only resumes uses a store.
  //  - with neither, every state is refused with StateUnsigned: nothing
  //    could tell an approval the host made from one written into the JSON.
  // A state not suspended, or a run another agent started (RunState::agent), throws Error (invalid_argument).
  //
  // Example (no store; the key comes from the host's secret storage):
  //   ctx.state_key = load_secret("agentkit-state-key");  // >= 32 bytes
  //   auto result = agent.run("Refund order A-1 for $20", ctx);  // suspended, signed
  //   std::string saved = result.state.to_json().dump();
  //   auto state = agentkit::RunState::from_json(agentkit::Json::parse(saved));
  //   result = agent.resume(std::move(state), {{"c1", agentkit::Decision::approve()}}, ctx);
  RunResult resume(RunState state, Decisions decisions, RunContext& ctx) const;
  RunHandle start_resume(RunState state, Decisions decisions, RunContext& ctx) const;
  // The same from the store (ctx.store, ctx.scope), e.g. in another process:
  // the stored checkpoint is the state. Throws RunNotFound,
  // RunAlreadyResumed or CheckpointError, and another agent's run as above.
  RunResult resume(std::string_view run_id, Decisions decisions, RunContext& ctx) const;
  RunHandle start_resume(std::string_view run_id, Decisions decisions, RunContext& ctx) const;
  // Continues a run from its last checkpoint after its process died. Calls
  // with a recorded outcome are not run again; a side-effecting call that
  // started but recorded nothing is reported as outcome_unknown (unless the
  // tool is idempotent). A suspended or finished run comes back as it is; another agent's run throws, as above.
  RunResult recover(std::string_view run_id, RunContext& ctx) const;
  RunHandle start_recover(std::string_view run_id, RunContext& ctx) const;

 private:
  struct Data {
    std::string name;
    std::string model;
    std::string prompt;
    std::shared_ptr<const Cognition> cognition;
    AgentOptions options;
  };
  std::shared_ptr<const Data> data_;
};

// Wraps anything with `RunResult run(std::string, RunContext&)` into a tool
// with the fixed schema {"task": string}. The sub-run executes on
// ctx.child(), so budget, cancellation, depth and observation flow through:
// its events (agent path "<parent>/<name>", its own run id) go to the
// parent run's queue, delivered once by the parent's drain or observer.
using Renderer = std::function<std::string(const RunResult&)>;
std::string render_result(const RunResult& result);

//
// `side_effecting` is required, as .side_effecting() is for function tools:
// whether a sub-agent changes the world depends on its tools, and there is
// no safe default. as_tool() throws ToolDefinitionError when it is unset.
//
// Example:
//   auto research = agentkit::as_tool(researcher, {.name = "research",
//       .description = "Delegate a research sub-task and get a summary back.",
//       .side_effecting = false});
struct AsToolOptions {
  std::string name;
  std::string description;
  std::optional<bool> side_effecting;  // required
  Renderer render = render_result;
};
ToolPtr as_tool(std::shared_ptr<const Agent> agent, AsToolOptions options);

}  // namespace agentkit
