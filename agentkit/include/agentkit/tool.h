#pragma once
// The one interface for everything that acts: function tools, sub-agents
// (`as_tool`), HTTP endpoints, MCP tools and the `memory` file tool.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <typeindex>
#include <vector>

#include <agentkit/json.h>
#include <agentkit/messages.h>

namespace agentkit {

class RunContext;

// What a tool does to the world. Declared by the author, never guessed:
// approval gating, idempotency and caching all read it.
struct Effects {
  // Changes the world or has external effects (sends, writes, pays).
  bool side_effecting = true;
  // A repeat of the same call is safe (independent of side_effecting).
  bool idempotent = false;
  // Always pause for a human decision before running, at every autonomy tier.
  bool requires_approval = false;
  // memoize() may answer a call with a result cached by another run (of the
  // same scope). Off by default: a run's reads are its own.
  bool shared_cache = false;
};

// A type a tool has injected (an Inject<T> parameter; <agentkit/inject.h>):
// what a run checks its context provides before it starts.
struct InjectedType {
  std::type_index type;
  std::string name;  // as the source spells it
};

// Whether one call, with these arguments in this run, must wait for a
// human's decision (refunds over $100 do; under, they run). Evaluated by the
// end of the invoker chain before the call runs; a predicate that throws
// counts as true: an approval rule that cannot decide never lets a call
// through.
using ApprovalPredicate = std::function<bool(const Json& arguments, const RunContext& ctx)>;

// Everything known about a tool before it runs. Only name, description and
// parameters reach the model; the rest is for the host and the middleware.
struct ToolSpec {
  std::string name;
  std::string description;
  // JSON Schema of the argument object. nullopt makes the tool
  // loop-invisible: callable through the registry and invoker, never
  // advertised to the model.
  std::optional<Schema> parameters;
  // JSON Schema of the result, when one is declared or inferred.
  std::optional<Schema> output_schema;
  Effects effects;
  // Set: a call also needs approval when this says so (on top of
  // effects.requires_approval and the autonomy tier). See ApprovalPredicate.
  ApprovalPredicate approval_when;
  // Set: the tool is offered to the model only on turns where this is true,
  // evaluated on the run's context before each model call (a throw counts as
  // false). A call to it on a turn where it was not offered is refused with
  // a message the model sees, naming the tools it was offered.
  std::function<bool(const RunContext& ctx)> available;
  // Set: the description the model sees, computed before each model call
  // (a throw, or an empty result, keeps `description`).
  std::function<std::string(const RunContext& ctx)> describe;
  // The types the tool takes from RunContext::dependencies (its Inject<T>
  // parameters), never from the arguments.
  std::vector<InjectedType> injected;
  // The tool passes argument keys it does not advertise through to its body.
  bool accepts_extra_arguments = false;
  // Free-form labels and host data, invisible to the model.
  std::vector<std::string> tags;
  Json metadata = Json::object();
  // Renders a human-readable status line for a call in flight (spec 003's
  // `status`). Empty means "use the tool name".
  std::function<std::string(const Json& arguments)> status;
};

// What one call of a tool produced: its value, and content parts the model
// should see beside it (an image from a camera-frame tool, a screenshot, a
// PDF). Parts reach the model as parts where the provider accepts them in a
// tool result, and as a text note naming what was left out where it does not.
struct ToolOutput {
  Json value;
  std::vector<ContentPart> parts;
};

// A tool. Implementations MUST be safe to call from several runs at once.
//
// `run` receives the arguments the model sent (already parsed, not yet
// validated unless the implementation does it) and the run's context. It
// returns the result value or throws: ToolArgumentError for a bad call,
// ToolShapeError for a bad result, anything else for a failure. Arguments are
// immutable: what was authorised is what runs.
class Tool {
 public:
  virtual ~Tool() = default;

  virtual const ToolSpec& spec() const noexcept = 0;
  virtual Json run(const Json& arguments, RunContext& ctx) const = 0;
  // What the end of the invoker chain calls: run()'s value and no parts by
  // default. A tool whose results carry content parts overrides it (and
  // implements run() as its value). A wrapper MUST forward it.
  //
  // Example (a function tool returning parts):
  //   tool("camera_frame").doc("Grab the current camera frame.").side_effecting(false).fn([](RunContext&) {
  //     return ToolOutput{"frame 7", {ImagePart{.media_type = "image/jpeg", .data = grab()}}};
  //   });
  virtual ToolOutput run_output(const Json& arguments, RunContext& ctx) const { return {run(arguments, ctx), {}}; }

  const std::string& name() const noexcept { return spec().name; }
  const std::string& description() const noexcept { return spec().description; }
  bool side_effecting() const noexcept { return spec().effects.side_effecting; }
  // Whether one call has side effects. A tool with read and write commands
  // behind one name (the `memory` tool) narrows it per call, so a read is
  // gated, recorded and cached as a read; the spec's declaration is the upper
  // bound. A tool that wraps another (renamed(), plugins) MUST forward it.
  virtual bool side_effecting_for(const Json& /*arguments*/) const { return side_effecting(); }
  // Throws ToolArgumentError (every problem at once) when `arguments` is not
  // a valid call, without running anything: how a human's edited arguments
  // are checked before a resume runs them. The default checks the parameters
  // schema's top level (an object; required keys present; no undeclared keys
  // unless the tool accepts extra arguments or the schema allows them; each
  // property's "type" and "enum"). This default is the one schema-driven
  // validator: MCP tools run it before every call. Function and REST tools
  // check exactly what run() decodes (the Codec machinery of
  // <agentkit/schema.h>); for a wrong type, a missing or unexpected key or a
  // non-object the messages are the same. A wrapper MUST forward it, as it
  // forwards side_effecting_for.
  virtual void check_arguments(const Json& arguments) const;
  bool idempotent() const noexcept { return spec().effects.idempotent; }
  // Whether every call needs a human decision first (the declaration alone).
  bool requires_approval() const noexcept { return spec().effects.requires_approval; }
  // Whether this call needs one: requires_approval(), or the spec's
  // approval_when says so for these arguments in this run. May throw (a
  // predicate's failure); needs_approval() in <agentkit/invoker.h> takes a
  // throw as "yes". A wrapper MUST forward it.
  virtual bool requires_approval_for(const Json& arguments, const RunContext& ctx) const {
    return requires_approval() || (spec().approval_when && spec().approval_when(arguments, ctx));
  }
  // Whether a call interrupted after it started (its process died before
  // its outcome was recorded) may simply run again: its work is durable
  // itself and continues where it stopped instead of repeating effects (an
  // agent through as_tool recovers its sub-run by id). A durable run's
  // ledger then runs it again rather than answering outcome_unknown. A
  // wrapper MUST forward it.
  virtual bool reenterable() const noexcept { return false; }
  // The tool this one wraps (renamed(), with_approval()), or null.
  virtual const Tool* wrapped() const noexcept { return nullptr; }
  // Visible to the model (has a parameters schema).
  bool advertised() const noexcept { return spec().parameters.has_value(); }

  // The status line for a call with `arguments`: the spec's formatter, or the
  // tool name when there is none or it throws.
  std::string format_status(const Json& arguments) const;
};

using ToolPtr = std::shared_ptr<const Tool>;

}  // namespace agentkit
