#include <agentkit/agent.h>

#include <stdexcept>

#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>

namespace agentkit {
namespace {

constexpr std::pair<StopReason, std::string_view> kStopReasons[] = {
    {StopReason::answered, "answered"},     {StopReason::suspended, "suspended"},
    {StopReason::max_iterations, "max_iterations"}, {StopReason::budget_exhausted, "budget_exhausted"},
    {StopReason::cancelled, "cancelled"},   {StopReason::failed, "failed"}};

constexpr std::pair<Phase, std::string_view> kPhases[] = {
    {Phase::ask_model, "ask_model"}, {Phase::act, "act"}, {Phase::suspended, "suspended"}, {Phase::done, "done"}};

template <class E, std::size_t N>
E parse_enum(const std::pair<E, std::string_view> (&table)[N], const std::string& text, const char* what) {
  for (const auto& [value, name] : table) {
    if (name == text) return value;
  }
  throw std::invalid_argument(std::string("run state: unknown ") + what + " '" + text + "'");
}

template <class E, std::size_t N>
std::string_view enum_name(const std::pair<E, std::string_view> (&table)[N], E value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "unknown";
}

}  // namespace

std::string_view to_string(StopReason reason) noexcept { return enum_name(kStopReasons, reason); }

Json RunState::to_json() const {
  Json history_json = Json::array();
  for (const auto& m : history) history_json.push_back(agentkit::to_json(m));
  Json batch_json = Json::array();
  for (const auto& c : batch) batch_json.push_back(agentkit::to_json(c));
  Json outcomes_json = Json::array();
  for (const auto& o : outcomes) {
    outcomes_json.push_back(o ? Json{{"text", o->text}, {"is_error", o->is_error}, {"outcome", o->outcome}} : Json());
  }
  return {{"version", kVersion},
          {"run_id", run_id},
          {"agent", agent},
          {"task", task},
          {"phase", enum_name(kPhases, phase)},
          {"history", std::move(history_json)},
          {"iterations", iterations},
          {"repairs", repairs},
          {"batch", std::move(batch_json)},
          {"outcomes", std::move(outcomes_json)},
          {"pending", pending},
          {"usage", agentkit::to_json(usage)},
          {"stop_reason", enum_name(kStopReasons, stop_reason)},
          {"output", output},
          {"error", error}};
}

RunState RunState::from_json(const Json& j) {
  try {
    if (!j.is_object()) throw std::invalid_argument("run state: expected an object");
    const int version = j.at("version").get<int>();
    if (version > kVersion) {
      throw std::invalid_argument("run state: version " + std::to_string(version) +
                                  " was written by a newer agentkit (this one reads up to " +
                                  std::to_string(kVersion) + ")");
    }
    RunState s;
    s.run_id = j.at("run_id").get<std::string>();
    s.agent = j.at("agent").get<std::string>();
    s.task = j.at("task").get<std::string>();
    s.phase = parse_enum(kPhases, j.at("phase").get<std::string>(), "phase");
    for (const auto& m : j.at("history")) s.history.push_back(message_from_json(m));
    s.iterations = j.at("iterations").get<int>();
    s.repairs = j.at("repairs").get<int>();
    for (const auto& c : j.at("batch")) s.batch.push_back(tool_call_from_json(c));
    for (const auto& o : j.at("outcomes")) {
      if (o.is_null()) {
        s.outcomes.emplace_back();
      } else {
        s.outcomes.push_back(CallOutcome{o.at("text").get<std::string>(), o.at("is_error").get<bool>(),
                                         o.at("outcome").get<std::string>()});
      }
    }
    if (s.outcomes.size() != s.batch.size()) throw std::invalid_argument("run state: outcomes do not match the batch");
    s.pending = j.at("pending").get<std::vector<std::string>>();
    s.usage = usage_from_json(j.at("usage"));
    s.stop_reason = parse_enum(kStopReasons, j.at("stop_reason").get<std::string>(), "stop reason");
    s.output = j.at("output").get<std::string>();
    s.error = j.at("error").get<std::string>();
    return s;
  } catch (const Json::exception& e) {
    throw std::invalid_argument(std::string("run state: malformed document: ") + e.what());
  }
}

RunResult RunHandle::wait(Observer* observer) {
  const auto deliver = [&] {
    for (const auto& event : driver_->drain_events()) {
      if (observer) observer->on_event(event);
    }
  };
  while (!driver_->poll()) {
    deliver();
    driver_->wait();
  }
  deliver();
  return driver_->result();
}

Agent::Agent(std::string name, std::string model, std::string prompt, std::shared_ptr<const Cognition> cognition,
             AgentOptions options)
    : name_(std::move(name)),
      model_(std::move(model)),
      prompt_(std::move(prompt)),
      cognition_(cognition ? std::move(cognition) : std::make_shared<const cognition::ReActCognition>()),
      options_(std::move(options)) {}

RunHandle Agent::start(std::string task, RunContext& ctx) const {
  RunState state;
  state.task = std::move(task);
  return RunHandle(cognition_->drive(*this, std::move(state), {}, ctx));
}

RunResult Agent::run(std::string task, RunContext& ctx) const { return start(std::move(task), ctx).wait(ctx.observer.get()); }

RunHandle Agent::start_resume(RunState state, Decisions decisions, RunContext& ctx) const {
  if (state.phase != Phase::suspended) {
    throw std::invalid_argument("resume: run '" + state.run_id + "' is not suspended (phase " +
                                std::string(enum_name(kPhases, state.phase)) + ")");
  }
  return RunHandle(cognition_->drive(*this, std::move(state), std::move(decisions), ctx));
}

RunResult Agent::resume(RunState state, Decisions decisions, RunContext& ctx) const {
  return start_resume(std::move(state), std::move(decisions), ctx).wait(ctx.observer.get());
}

std::string render_result(const RunResult& result) {
  if (result.structured.is_object() && !result.structured.empty()) {
    std::string lines;
    for (const auto& [key, value] : result.structured.items()) {
      lines += (lines.empty() ? "" : "\n") + key + ": " + (value.is_string() ? value.get<std::string>() : value.dump());
    }
    return lines;
  }
  if (!result.output.empty()) return result.output;
  return "sub-run ended: " + std::string(to_string(result.stop_reason)) +
         (result.error.empty() ? "" : " (" + result.error + ")");
}

ToolPtr as_tool(std::shared_ptr<const Agent> agent, AsToolOptions options) {
  if (!agent) throw ToolDefinitionError("as_tool: agent is null");
  auto render = options.render ? options.render : Renderer(render_result);
  return tool(options.name)
      .description(options.description)
      .side_effecting(options.side_effecting)
      .params(param("task", "the sub-task / goal to run"))
      .fn([agent, render](const std::string& task, RunContext& ctx) {
        RunContext child = ctx.child();
        RunResult result = agent->run(task, child);
        if (result.stop_reason == StopReason::suspended) {
          throw std::runtime_error("sub-agent '" + agent->name() +
                                   "' suspended awaiting approval; approve its calls in its own run");
        }
        return render(result);
      });
}

}  // namespace agentkit
