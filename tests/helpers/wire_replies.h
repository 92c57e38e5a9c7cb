// Replies of the loopback WireServer that stand in for a provider or service.
#pragma once

#include <string>

#include <agentkit/json.h>
#include <agentkit/testing/wire_server.h>

namespace agentkit_test {

// `body` as an application/json reply with `status`.
inline agentkit::testing::WireServer::Response json_reply(const agentkit::Json& body, int status = 200) {
  agentkit::testing::WireServer::Response r;
  r.status = status;
  r.headers = {{"content-type", "application/json"}};
  r.body = body.dump();
  return r;
}

// An OpenAI chat completion (non-streaming) asking for one tool call.
inline agentkit::testing::WireServer::Response openai_call(const std::string& id, const std::string& name,
                                                           const agentkit::Json& arguments) {
  const agentkit::Json call = {{"id", id}, {"type", "function"},
                               {"function", {{"name", name}, {"arguments", arguments.dump()}}}};
  return json_reply({{"choices", {{{"index", 0}, {"finish_reason", "tool_calls"},
                                   {"message", {{"role", "assistant"}, {"content", nullptr},
                                                {"tool_calls", agentkit::Json::array({call})}}}}}}});
}

// An OpenAI chat completion (non-streaming) answering with `text`.
inline agentkit::testing::WireServer::Response openai_text(const std::string& text) {
  return json_reply({{"choices", {{{"index", 0}, {"finish_reason", "stop"},
                                   {"message", {{"role", "assistant"}, {"content", text}}}}}}});
}

}  // namespace agentkit_test
