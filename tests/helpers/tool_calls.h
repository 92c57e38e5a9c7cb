// A ToolCall for a scripted model turn or a RunState batch:
//   Turn{.tool_calls = {call("c1", "lookup", {{"key", "a"}})}}
#pragma once

#include <string>
#include <utility>

#include <agentkit/json.h>
#include <agentkit/messages.h>

namespace agentkit_test {

inline agentkit::ToolCall call(std::string id, std::string name, agentkit::Json args = agentkit::Json::object()) {
  return agentkit::ToolCall{std::move(id), std::move(name), std::move(args), {}};
}

}  // namespace agentkit_test
