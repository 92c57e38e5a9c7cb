#pragma once
// Workflows: agents composed into a sequence, a parallel fan-out with a
// join, or a router that runs one branch picked by a host function or by a
// model. A workflow IS an Agent (its cognition is a workflow strategy of the
// run engine, <agentkit/cognition/engine.h>), so it runs, streams events,
// traces, cancels, charges budgets, checkpoints, resumes and recovers like
// any agent, nests in another workflow as a node, and is exposed to a model
// with as_tool() unchanged.
//
// Each node is an Agent (or a workflow) and runs as a tool call of the
// workflow's run (the node's name is the call's tool name, {"task": ...} its
// arguments), through as_tool(): the node's run is a sub-run on ctx.child(),
// and a durable sub-run when the context has a store (its run id is
// "<workflow run id>/<call key>"). Where a workflow stands is read from its
// run's history alone (the results of the nodes that finished), so a
// resumed or recovered workflow continues where it stopped: a finished node
// never runs again, and a node that was running is recovered from its own
// checkpoint instead of started over.
//
// A node that does not answer (it failed, hit a limit, was cancelled,
// suspended for approval) fails the whole workflow: the run stops `failed`
// with the node's code in RunResult::failure, never a partial success.
//
// The answer (RunResult::output, and what as_tool's render_result hands a
// model): the last node's output for a sequence, the routed branch's output
// for a router, and for a parallel workflow the join's text, or without a
// join one "name: output" line per branch, in branch order (one branch: its
// output verbatim). RunResult::structured holds the record that
// workflow_result() reads.
//
// Example (a three-node workflow):
//   auto research = std::make_shared<const agentkit::Agent>("research", "gpt", "You research.");
//   auto draft = std::make_shared<const agentkit::Agent>("draft", "gpt", "You draft a reply.");
//   auto review = std::make_shared<const agentkit::Agent>("review", "gpt", "You polish drafts.");
//   agentkit::Agent pipeline = agentkit::sequence("support_reply", {research, draft, review});
//   agentkit::RunResult result = pipeline.run("Customer asks about refunds", ctx);
//   auto record = agentkit::workflow_result(result);  // record->outputs["draft"]: what draft said
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/error.h>

namespace agentkit {

// A workflow that cannot be built as declared: no nodes, a null node, two
// nodes with one name. Thrown by the factories below, before any run.
// Code invalid_argument. (A node name that is not a valid tool name throws
// ToolDefinitionError from as_tool.)
class WorkflowDefinitionError : public Error {
 public:
  explicit WorkflowDefinitionError(const std::string& message) : Error(ErrorCode::invalid_argument, message) {}
};

// What one node of a workflow answered.
struct NodeOutput {
  std::string node;  // the node's name (Agent::name)
  std::string output;
};

// Shapes the task of a sequence's next step from the workflow's task and the
// previous step's output. Without one, each step's task is the previous
// step's output verbatim. Runs on the thread that polls the workflow: it
// MUST NOT block. A throw fails the workflow (the exception's code).
using StepTask = std::function<std::string(const std::string& task, const std::string& previous_output)>;

// The answer of a parallel workflow from its branches' outputs, in branch
// order. Same rules as StepTask: quick, and a throw fails the workflow.
using Join = std::function<std::string(const std::string& task, const std::vector<NodeOutput>& outputs)>;

// One branch of a router. `description` tells a routing model when to take
// it (model_router lists it); a host picker may ignore it.
struct Route {
  std::shared_ptr<const Agent> agent;
  std::string description;
};

// Picks the route to run, by its agent's name, from the workflow's task and
// the run's context (its scope, dependencies, ...). Quick, as StepTask. A
// name that is no route's fails the workflow (invalid_argument), as does a
// throw (the exception's code).
using RoutePicker = std::function<std::string(const std::string& task, const RunContext& ctx)>;

// Runs `steps` one after another: the first gets the workflow's task, each
// next one the previous step's output (or what `step_task` makes of it); the
// last step's output is the answer.
//
// Example:
//   auto pipeline = agentkit::sequence("translate_then_summarise", {translator, summariser},
//       [](const std::string& task, const std::string& translated) {
//         return "Summarise for a customer who asked: " + task + "\n\n" + translated;
//       });
Agent sequence(std::string name, std::vector<std::shared_ptr<const Agent>> steps, StepTask step_task = {});

// Runs every branch on the workflow's task, as ONE batch of calls, so they
// run concurrently when ctx.executor is a pool; the workflow answers once
// all have answered, with `join`'s text, or "name: output" lines.
//
// Example:
//   auto opinions = agentkit::parallel("second_opinion", {optimist, pessimist},
//       [](const std::string&, const std::vector<agentkit::NodeOutput>& outputs) {
//         return outputs[0].output + "\n---\n" + outputs[1].output;
//       });
Agent parallel(std::string name, std::vector<std::shared_ptr<const Agent>> branches, Join join = {});

// Runs exactly one of `routes`, the one `pick` names; its output is the
// answer. The picker decides before any node runs, and a recovered run
// does not ask it again once the chosen route has started.
//
// Example:
//   auto desk = agentkit::router("desk", {{billing, "invoices and refunds"}, {tech, "bugs and outages"}},
//       [](const std::string& task, const agentkit::RunContext&) {
//         return task.find("invoice") != std::string::npos ? "billing" : "tech";
//       });
Agent router(std::string name, std::vector<Route> routes, RoutePicker pick);

// A router whose route a model picks: one call of `model` without tools,
// whose system prompt lists the routes' names and descriptions and asks for
// exactly one name. A reply that names no route (after trimming blanks,
// quotes and a final period; case-insensitive) gets a repair message and
// another call, up to options.max_repairs times; past that the workflow
// fails with ErrorCode::protocol. The routing calls count against
// options.max_iterations and the budget like any model call.
//
// Example:
//   auto desk = agentkit::model_router("desk", "openai/gpt-4o-mini",
//       {{billing, "invoices, refunds and payment methods"}, {tech, "bugs, outages and error messages"}});
Agent model_router(std::string name, std::string model, std::vector<Route> routes, AgentOptions options = {});

// The record of a workflow run's answer (RunResult::structured).
struct WorkflowResult {
  std::string workflow;                        // the workflow's name
  std::map<std::string, std::string> outputs;  // node name -> output, for every node that ran
  std::vector<std::string> terminal;           // the nodes whose outputs make the answer, in order
};

// The record of `result`, when it is the answer of a workflow run; nullopt
// otherwise (another agent's result, or a workflow that did not answer). A
// finished run recovered from its checkpoint carries no structured value
// (none does), so it has no record; its output is still the answer.
std::optional<WorkflowResult> workflow_result(const RunResult& result);

}  // namespace agentkit
