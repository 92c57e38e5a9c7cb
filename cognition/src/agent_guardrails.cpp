#include <agentkit/agent_guardrails.h>

#include <cctype>

#include <agentkit/errors.h>

#include "sub_run.h"

namespace agentkit {
namespace {

// Whether `text` starts with `word`, ignoring case and leading blanks; the
// rest after it (and a ':' and blanks) in `rest`.
bool starts_with_word(std::string_view text, std::string_view word, std::string& rest) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  if (text.size() < word.size()) return false;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(text[i])) != word[i]) return false;
  }
  text.remove_prefix(word.size());
  if (!text.empty() && std::isalnum(static_cast<unsigned char>(text.front()))) return false;  // "PASSPORT"
  while (!text.empty() && (text.front() == ':' || std::isspace(static_cast<unsigned char>(text.front())))) {
    text.remove_prefix(1);
  }
  rest = std::string(text);
  return true;
}

// Runs the guardrail's agent on `task` as a sub-run and reads its verdict.
GuardrailVerdict ask(const Agent& agent, const VerdictReader& read, std::string task, const RunContext& ctx) {
  RunContext child = ctx.child();
  RunResult result = agent.run(std::move(task), child);
  if (result.stop_reason != StopReason::answered) throw detail::sub_run_error(agent.name(), result);
  return read(result);
}

void require(const std::shared_ptr<const Agent>& agent, const VerdictReader& read, const std::string& name) {
  if (!agent) throw Error(ErrorCode::invalid_argument, "guardrail '" + name + "': the agent is null");
  if (!read) throw Error(ErrorCode::invalid_argument, "guardrail '" + name + "': the verdict reader is empty");
}

}  // namespace

GuardrailVerdict agent_verdict(const RunResult& result) {
  if (result.structured.is_object()) {
    const auto tripwire = result.structured.find("tripwire");
    if (tripwire == result.structured.end() || !tripwire->is_boolean()) {
      return GuardrailVerdict::trip("the guardrail agent's structured answer has no boolean \"tripwire\"");
    }
    if (!tripwire->get<bool>()) return GuardrailVerdict::pass();
    const auto reason = result.structured.find("reason");
    return GuardrailVerdict::trip(reason != result.structured.end() && reason->is_string() ? reason->get<std::string>()
                                                                                          : "tripwire set");
  }
  std::string rest;
  if (starts_with_word(result.output, "PASS", rest)) return GuardrailVerdict::pass();
  if (starts_with_word(result.output, "REPAIR", rest)) return GuardrailVerdict::repair(rest);
  return GuardrailVerdict::trip(result.output.empty() ? "the guardrail agent answered with no text" : result.output);
}

InputGuardrail input_guardrail(std::string name, std::shared_ptr<const Agent> agent, VerdictReader read) {
  require(agent, read, name);
  return {std::move(name), [agent, read](const std::string& task, const RunContext& ctx) {
            return ask(*agent, read, task, ctx);
          }};
}

OutputGuardrail output_guardrail(std::string name, std::shared_ptr<const Agent> agent, VerdictReader read) {
  require(agent, read, name);
  return {std::move(name), [agent, read](const Message& answer, const RunContext& ctx) {
            return ask(*agent, read, answer.text(), ctx);
          }};
}

ToolGuardrail tool_guardrail(std::string name, std::shared_ptr<const Agent> agent, std::vector<std::string> tools,
                             VerdictReader read) {
  require(agent, read, name);
  return {.name = std::move(name),
          .tools = std::move(tools),
          .before = [agent, read](const ToolCall& call, const RunContext& ctx) {
            const std::string arguments = call.arguments_text.empty()
                                              ? call.arguments.dump(-1, ' ', false, Json::error_handler_t::replace)
                                              : call.arguments_text;
            return ask(*agent, read, "Tool call: " + call.name + " " + arguments, ctx);
          },
          .after = {}};
}

}  // namespace agentkit
