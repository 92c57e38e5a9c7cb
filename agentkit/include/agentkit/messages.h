#pragma once
// The conversation vocabulary shared by agents, cognition and model adapters.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <agentkit/json.h>

namespace agentkit {

// One tool call the model asked for.
struct ToolCall {
  std::string id;
  std::string name;
  // Parsed arguments. When `arguments_text` is non-empty it is authoritative:
  // the loop parses it under JsonLimits and a parse failure becomes a repair
  // message to the model (providers hand arguments over as text).
  Json arguments = Json::object();
  std::string arguments_text;

  friend bool operator==(const ToolCall&, const ToolCall&) = default;
};

enum class Role { system, user, assistant, tool };

// One message of a conversation. Assistant messages may carry tool calls;
// tool messages answer exactly one call (`tool_call_id`).
struct Message {
  Role role = Role::user;
  std::string content;
  std::vector<ToolCall> tool_calls;  // assistant only
  std::string tool_call_id;          // tool only
  std::string tool_name;             // tool only
  bool is_error = false;             // tool only: the content is an error text

  static Message user(std::string text) { return {Role::user, std::move(text)}; }
  static Message assistant(std::string text, std::vector<ToolCall> calls = {}) {
    return {Role::assistant, std::move(text), std::move(calls)};
  }
  static Message tool_result(std::string call_id, std::string name, std::string text, bool is_error = false) {
    return {Role::tool, std::move(text), {}, std::move(call_id), std::move(name), is_error};
  }
  friend bool operator==(const Message&, const Message&) = default;
};

// Token usage of one model call or a total.
struct Usage {
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  std::int64_t cached_tokens = 0;

  Usage& operator+=(const Usage& o) {
    input_tokens += o.input_tokens;
    output_tokens += o.output_tokens;
    cached_tokens += o.cached_tokens;
    return *this;
  }
  std::int64_t total() const { return input_tokens + output_tokens; }
  friend bool operator==(const Usage&, const Usage&) = default;
};

// "system", "user", "assistant", "tool".
std::string_view to_string(Role role) noexcept;
std::optional<Role> role_from_string(std::string_view name) noexcept;
Json to_json(const ToolCall& call);
Json to_json(const Message& message);
Json to_json(const Usage& usage);
// Inverse of to_json; throws agentkit::Error (invalid_argument) on a malformed document.
ToolCall tool_call_from_json(const Json& j);
Message message_from_json(const Json& j);
Usage usage_from_json(const Json& j);

// `message` with every text in it (content, ids, names, tool-call arguments)
// made well-formed UTF-8 by sanitize_utf8 (<agentkit/json.h>). The run loop
// applies it to each model reply before it enters the run's state.
Message sanitize_utf8(Message message);

}  // namespace agentkit
