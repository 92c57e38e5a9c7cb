#pragma once
// Guardrails that ask an agent (see <agentkit/guardrail.h> for when each
// kind runs and what a verdict does). The guardrail runs `agent` as a
// sub-run (ctx.child(): budget, cancellation and events flow through, and
// its usage counts toward the run's) on what it checks, and reads the
// verdict from its answer. Like every guardrail, it runs on the run's
// executor when the context has a pool, so the model call it makes never
// blocks poll(); inline otherwise.
//
// Example:
//   auto judge = std::make_shared<const agentkit::Agent>(
//       "judge", "openai/gpt-4o-mini",
//       "Answer PASS if the request is about our products; otherwise say why not.");
//   agentkit::AgentOptions options;
//   options.input_guardrails.push_back(agentkit::input_guardrail("on_topic", judge));
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/guardrail.h>

namespace agentkit {

// Reads a guardrail agent's result as a verdict.
using VerdictReader = std::function<GuardrailVerdict(const RunResult& result)>;

// The default reading of a guardrail agent's answer:
//  - a structured answer (the agent declares AgentOptions::output) that is
//    an object with a boolean "tripwire": trips when it is true, with its
//    "reason" (a string, when present) as the message; passes otherwise;
//  - else the answer's text: "PASS" first (any case) passes; "REPAIR:"
//    first repairs with the rest as the model's message (tool guardrails;
//    elsewhere a repair trips); anything else trips with the text.
// A sub-run that did not answer (failed, a limit, suspended) throws, which
// trips the guardrail: a check that cannot decide lets nothing through.
GuardrailVerdict agent_verdict(const RunResult& result);

// On the run's task (the agent's task is the task itself).
InputGuardrail input_guardrail(std::string name, std::shared_ptr<const Agent> agent,
                               VerdictReader read = agent_verdict);
// On the final answer (the agent's task is the answer's text).
OutputGuardrail output_guardrail(std::string name, std::shared_ptr<const Agent> agent,
                                 VerdictReader read = agent_verdict);
// Before each call of a tool matching `tools` (all when empty) runs; the
// agent's task is "Tool call: <name> <arguments as JSON>".
ToolGuardrail tool_guardrail(std::string name, std::shared_ptr<const Agent> agent, std::vector<std::string> tools = {},
                             VerdictReader read = agent_verdict);

}  // namespace agentkit
