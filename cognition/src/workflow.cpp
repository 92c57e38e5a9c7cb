#include <agentkit/workflow.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

#include <agentkit/cognition/engine.h>
#include <agentkit/errors.h>

#include "sub_run.h"

namespace agentkit {
namespace {

using cognition::ModelCall;
using cognition::Next;
using cognition::StepContext;

// The node tools' description: shown to no model (a workflow never offers
// its tools), but a tool's description is required.
std::string node_description(const Agent& node) {
  return "Runs the workflow node '" + node.name() + "' on a task and returns its answer.";
}

// What the workflow's history says so far: the output of every node whose
// call has a result, and whether one of them is an error.
struct Progress {
  std::map<std::string, std::string> outputs;  // node (tool) name -> result text
  const Message* failed = nullptr;              // the first error result, if any
};

Progress progress_of(const RunState& state) {
  Progress p;
  for (const Message& m : state.history) {
    if (m.role != Role::tool) continue;
    if (m.is_error && !p.failed) p.failed = &m;
    p.outputs[m.tool_name] = m.text();
  }
  return p;
}

// "billing", " 'Billing'. " and "\"billing\"" all name the route billing.
std::string normalized_route(std::string text) {
  const auto blank = [](unsigned char c) { return std::isspace(c) || c == '"' || c == '\'' || c == '`' || c == '.'; };
  while (!text.empty() && blank(text.back())) text.pop_back();
  std::size_t start = 0;
  while (start < text.size() && blank(text[start])) ++start;
  text.erase(0, start);
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

Next node_failed(const std::string& workflow, const std::string& node, const std::string& text, CallStatus status) {
  ErrorCode code = ErrorCode::internal;
  if (auto named = detail::sub_run_code(text)) {
    code = *named;
  } else if (status == CallStatus::outcome_unknown) {
    code = ErrorCode::outcome_unknown;
  } else if (status == CallStatus::denied) {
    code = ErrorCode::permission_denied;
  } else if (status == CallStatus::interrupted) {
    code = ErrorCode::cancelled;
  }
  return Next::stop(StopReason::failed, "workflow '" + workflow + "': node '" + node + "' failed: " + text, code);
}

// A host function (step task, join, picker) threw: the workflow fails with
// the exception's code.
Next host_failed(const std::string& workflow, const char* what) {
  Failure failure = failure_of(std::current_exception());
  return Next::stop(StopReason::failed, "workflow '" + workflow + "': the " + what + " failed: " + failure.message,
                    failure.code);
}

// The strategy of every workflow. Nodes run as calls of their as_tool()
// tools, one batch per step; where the run stands is read from the
// history's tool results alone (see <agentkit/workflow.h>).
//
// The node tools are declared read-only (side_effecting = false), which is
// what a node call is: running it again after a crash recovers the node's
// durable sub-run by its id ("<run id>/<call key>", see as_tool) instead of
// starting it over, and a sub-run's own side-effecting calls are guarded by
// its own ledger. Declared side-effecting, the call would be recorded in
// the workflow's ledger and a crash mid-node would leave it
// outcome_unknown, failing the workflow instead of recovering the node.
class WorkflowCognition final : public cognition::Strategy {
 public:
  enum class Kind { sequence, parallel, router };

  WorkflowCognition(Kind kind, std::string name, std::vector<std::shared_ptr<const Agent>> nodes)
      : kind_(kind), name_(std::move(name)), nodes_(std::move(nodes)) {
    const std::string what = "workflow '" + name_ + "'";
    if (nodes_.empty()) throw WorkflowDefinitionError(what + " has no nodes; give it at least one agent");
    std::set<std::string> names;
    std::vector<ToolPtr> tools;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (!nodes_[i]) throw WorkflowDefinitionError(what + ": node " + std::to_string(i + 1) + " is null");
      if (!names.insert(nodes_[i]->name()).second) {
        throw WorkflowDefinitionError(what + ": two nodes are named '" + nodes_[i]->name() +
                                      "'; node names identify their outputs and must be unique");
      }
      tools.push_back(as_tool(nodes_[i], {.name = nodes_[i]->name(),
                                          .description = node_description(*nodes_[i]),
                                          .side_effecting = false}));
    }
    tools_ = ToolRegistry::from_tools(tools);
  }

  StepTask step_task;
  Join join;
  RoutePicker pick;        // router: the host's picker; null: the model picks
  std::string route_list;  // model router: "- name: description" lines

  const ToolRegistry& tools() const override { return tools_; }

  Next next_call(const StepContext& step, RunState& state) const override {
    const Progress done = progress_of(state);
    if (done.failed) return node_failed(name_, done.failed->tool_name, done.failed->text(), CallStatus::error);
    switch (kind_) {
      case Kind::sequence:
        return next_in_sequence(state, done);
      case Kind::parallel:
        return done.outputs.empty() ? run(branches(state.task)) : answer_parallel(state, done);
      case Kind::router:
        return next_in_router(step, state, done);
    }
    return Next::stop(StopReason::failed, "workflow '" + name_ + "': unknown kind", ErrorCode::internal);
  }

  // Only a model router asks a model: its reply must name a route.
  Next on_reply(const StepContext& step, RunState& state, Message reply) const override {
    const std::string said = normalized_route(reply.text());
    for (const auto& node : nodes_) {
      if (normalized_route(node->name()) != said) continue;
      reply.tool_calls = {call(*node, state.task)};  // the reply, with the call it stands for
      state.repairs = 0;
      return Next::run_calls(std::move(reply));
    }
    reply.tool_calls.clear();  // a call nobody answers would break the history
    const std::string text = reply.text();
    state.history.push_back(std::move(reply));
    state.history.push_back(Message::user("'" + text + "' is not one of the routes. Reply with exactly one route name "
                                          "and nothing else:\n" + route_list));
    const int max_repairs = step.agent.options().max_repairs;
    if (++state.repairs > max_repairs) {
      return Next::stop(StopReason::failed, "workflow '" + name_ + "': the model named no route in " +
                                                std::to_string(state.repairs) + " replies (max_repairs " +
                                                std::to_string(max_repairs) + "); last reply: '" + text + "'",
                        ErrorCode::protocol);
    }
    return Next::ask({.tools = false, .output_schema = false});
  }

  Next after_calls(const StepContext&, RunState& state) const override {
    for (std::size_t i = 0; i < state.batch.size(); ++i) {
      const auto& outcome = state.outcomes[i];
      if (!outcome) return node_failed(name_, state.batch[i].name, "it did not run", CallStatus::interrupted);
      if (outcome->outcome != CallStatus::ok) {
        return node_failed(name_, state.batch[i].name, outcome->text, outcome->outcome);
      }
    }
    return Next::ask();  // next_call reads the results, appended by then, and takes the next step
  }

 private:
  static ToolCall call(const Agent& node, std::string task) {
    return ToolCall{.id = node.name(), .name = node.name(), .arguments = {{"task", std::move(task)}}};
  }
  static Next run(std::vector<ToolCall> calls) { return Next::run_calls(Message::assistant("", std::move(calls))); }

  std::vector<ToolCall> branches(const std::string& task) const {
    std::vector<ToolCall> calls;
    for (const auto& node : nodes_) calls.push_back(call(*node, task));
    return calls;
  }

  Next answer(std::string text, const Progress& done, std::vector<std::string> terminal) const {
    Json outputs = Json::object();
    for (const auto& [node, output] : done.outputs) outputs[node] = output;
    return Next::answer(Message::assistant(std::move(text)),
                        Json{{"workflow", name_}, {"outputs", std::move(outputs)}, {"terminal", std::move(terminal)}});
  }

  Next next_in_sequence(const RunState& state, const Progress& done) const {
    std::size_t next = 0;
    while (next < nodes_.size() && done.outputs.count(nodes_[next]->name())) ++next;
    if (next == nodes_.size()) {
      const std::string& last = nodes_.back()->name();
      return answer(done.outputs.at(last), done, {last});
    }
    if (next == 0) return run({call(*nodes_[0], state.task)});
    const std::string& previous = done.outputs.at(nodes_[next - 1]->name());
    std::string task;
    try {
      task = step_task ? step_task(state.task, previous) : previous;
    } catch (...) {
      return host_failed(name_, "step task");
    }
    return run({call(*nodes_[next], std::move(task))});
  }

  Next answer_parallel(const RunState& state, const Progress& done) const {
    std::vector<NodeOutput> outputs;
    std::vector<std::string> terminal;
    for (const auto& node : nodes_) {
      outputs.push_back({node->name(), done.outputs.at(node->name())});
      terminal.push_back(node->name());
    }
    std::string text;
    if (join) {
      try {
        text = join(state.task, outputs);
      } catch (...) {
        return host_failed(name_, "join");
      }
    } else if (outputs.size() == 1) {
      text = outputs.front().output;
    } else {
      for (const auto& [node, output] : outputs) text += (text.empty() ? "" : "\n") + node + ": " + output;
    }
    return answer(std::move(text), done, std::move(terminal));
  }

  Next next_in_router(const StepContext& step, const RunState& state, const Progress& done) const {
    if (!done.outputs.empty()) {
      const auto& [route, output] = *done.outputs.begin();
      return answer(output, done, {route});
    }
    if (!pick) return Next::ask({.tools = false, .output_schema = false});
    std::string chosen;
    try {
      chosen = pick(state.task, step.run);
    } catch (...) {
      return host_failed(name_, "route picker");
    }
    for (const auto& node : nodes_) {
      if (node->name() == chosen) return run({call(*node, state.task)});
    }
    std::vector<std::string> names;
    for (const auto& node : nodes_) names.push_back(node->name());
    return Next::stop(StopReason::failed, "workflow '" + name_ + "': the route picker chose '" + chosen +
                                              "', which is not a route (routes: " + quoted_list(names) + ")",
                      ErrorCode::invalid_argument);
  }

  Kind kind_;
  std::string name_;
  std::vector<std::shared_ptr<const Agent>> nodes_;
  ToolRegistry tools_;
};

std::vector<std::shared_ptr<const Agent>> route_agents(const std::vector<Route>& routes) {
  std::vector<std::shared_ptr<const Agent>> agents;
  for (const auto& route : routes) agents.push_back(route.agent);
  return agents;
}

}  // namespace

Agent sequence(std::string name, std::vector<std::shared_ptr<const Agent>> steps, StepTask step_task) {
  auto strategy = std::make_shared<WorkflowCognition>(WorkflowCognition::Kind::sequence, name, std::move(steps));
  strategy->step_task = std::move(step_task);
  return Agent(std::move(name), "", "", std::move(strategy));
}

Agent parallel(std::string name, std::vector<std::shared_ptr<const Agent>> branches, Join join) {
  auto strategy = std::make_shared<WorkflowCognition>(WorkflowCognition::Kind::parallel, name, std::move(branches));
  strategy->join = std::move(join);
  return Agent(std::move(name), "", "", std::move(strategy));
}

Agent router(std::string name, std::vector<Route> routes, RoutePicker pick) {
  if (!pick) throw WorkflowDefinitionError("router '" + name + "' has no route picker");
  auto strategy = std::make_shared<WorkflowCognition>(WorkflowCognition::Kind::router, name, route_agents(routes));
  strategy->pick = std::move(pick);
  return Agent(std::move(name), "", "", std::move(strategy));
}

Agent model_router(std::string name, std::string model, std::vector<Route> routes, AgentOptions options) {
  auto strategy = std::make_shared<WorkflowCognition>(WorkflowCognition::Kind::router, name, route_agents(routes));
  for (const auto& route : routes) {
    const std::string& about = route.description;
    strategy->route_list += "- " + route.agent->name() + (about.empty() ? "" : ": " + about) + "\n";
  }
  std::string prompt = "You route a task to the one route best suited to it. The routes:\n" + strategy->route_list +
                       "Reply with exactly one route name and nothing else.";
  return Agent(std::move(name), std::move(model), std::move(prompt), std::move(strategy), std::move(options));
}

std::optional<WorkflowResult> workflow_result(const RunResult& result) {
  const Json& s = result.structured;
  if (result.stop_reason != StopReason::answered || !s.is_object() || s.size() != 3) return std::nullopt;
  const auto workflow = s.find("workflow");
  const auto outputs = s.find("outputs");
  const auto terminal = s.find("terminal");
  if (workflow == s.end() || !workflow->is_string() || outputs == s.end() || !outputs->is_object() ||
      terminal == s.end() || !terminal->is_array()) {
    return std::nullopt;
  }
  WorkflowResult record{.workflow = workflow->get<std::string>()};
  for (const auto& [node, output] : outputs->items()) {
    if (!output.is_string()) return std::nullopt;
    record.outputs[node] = output.get<std::string>();
  }
  for (const auto& node : *terminal) {
    if (!node.is_string()) return std::nullopt;
    record.terminal.push_back(node.get<std::string>());
  }
  return record;
}

}  // namespace agentkit
