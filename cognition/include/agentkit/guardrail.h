#pragma once
// Guardrails: checks the run engine makes at fixed points of every run,
// each an event (GuardrailChecked) and a span (`guardrail {name}`):
//   - input guardrails, on the task, before the first model call;
//   - output guardrails, on the final answer, before the run answers;
//   - tool guardrails, on a call's arguments before it runs (`before`) and
//     on its result after (`after`).
// A tripwire (GuardrailVerdict::trip) stops the run with
// StopReason::guardrail_tripped; RunResult::failure (code permission_denied)
// names the guardrail and carries its message, and an answer a guardrail
// stopped is not handed out. A tool guardrail may instead repair
// (GuardrailVerdict::repair): the call is not run (before) or its result is
// replaced (after) by the message, which the model reads as an error result,
// and the run goes on. A guardrail that throws trips (fail closed), its
// message saying so.
//
// Where they run: on the run's executor when the context has a pool
// (ThreadPoolExecutor), one stage at a time and in order, so a slow check
// (one that asks an agent: <agentkit/agent_guardrails.h>) never blocks
// poll(); inline on the polling thread otherwise. A guardrail gets a copy of
// the run's context and MUST be safe to call from a worker thread.
//
// Example:
//   agentkit::AgentOptions options;
//   options.input_guardrails.push_back({"no_card_numbers", [](const std::string& task, const agentkit::RunContext&) {
//     return has_card_number(task) ? agentkit::GuardrailVerdict::trip("the task holds a card number")
//                                  : agentkit::GuardrailVerdict::pass();
//   }});
//   options.tool_guardrails.push_back({.name = "refund_cap", .tools = {"refund"},
//       .before = [](const agentkit::ToolCall& call, const agentkit::RunContext&) {
//         return call.arguments.value("amount_usd", 0.0) > 500
//                    ? agentkit::GuardrailVerdict::repair("refunds over $500 go through the finance team")
//                    : agentkit::GuardrailVerdict::pass();
//       }});
#include <functional>
#include <string>
#include <vector>

#include <agentkit/messages.h>
#include <agentkit/run_state.h>

namespace agentkit {

class RunContext;

// What a guardrail decided.
struct GuardrailVerdict {
  enum class Kind { pass, trip, repair };
  Kind kind = Kind::pass;
  std::string message;  // why it tripped, or what the model reads instead

  static GuardrailVerdict pass() { return {}; }
  static GuardrailVerdict trip(std::string why) { return {Kind::trip, std::move(why)}; }
  // Tool guardrails only (elsewhere it trips).
  static GuardrailVerdict repair(std::string message) { return {Kind::repair, std::move(message)}; }
};

struct InputGuardrail {
  std::string name;
  std::function<GuardrailVerdict(const std::string& task, const RunContext& ctx)> check;
};

struct OutputGuardrail {
  std::string name;
  std::function<GuardrailVerdict(const Message& answer, const RunContext& ctx)> check;
};

struct ToolGuardrail {
  std::string name;
  std::vector<std::string> tools;  // name patterns ('*' any run of characters); empty: every tool
  // Either may be unset.
  std::function<GuardrailVerdict(const ToolCall& call, const RunContext& ctx)> before;
  std::function<GuardrailVerdict(const ToolCall& call, const CallOutcome& result, const RunContext& ctx)> after;
};

}  // namespace agentkit
