#include <agentkit/messages.h>

#include <stdexcept>

#include <agentkit/detail/enum_table.h>

namespace agentkit {

namespace {
constexpr EnumValue<Role> kRoles[] = {
    {Role::system, "system"}, {Role::user, "user"}, {Role::assistant, "assistant"}, {Role::tool, "tool"}};
}  // namespace

std::string_view to_string(Role role) noexcept { return detail::enum_text(kRoles, role, "user"); }
std::optional<Role> role_from_string(std::string_view name) noexcept { return detail::enum_parse(kRoles, name); }

Json to_json(const ToolCall& call) {
  Json j = {{"id", call.id}, {"name", call.name}, {"arguments", call.arguments}};
  if (!call.arguments_text.empty()) j["arguments_text"] = call.arguments_text;
  return j;
}

Json to_json(const Message& m) {
  Json j = {{"role", to_string(m.role)}, {"content", m.content}};
  if (!m.tool_calls.empty()) {
    Json calls = Json::array();
    for (const auto& c : m.tool_calls) calls.push_back(to_json(c));
    j["tool_calls"] = std::move(calls);
  }
  if (m.role == Role::tool) {
    j["tool_call_id"] = m.tool_call_id;
    j["tool_name"] = m.tool_name;
    j["is_error"] = m.is_error;
  }
  return j;
}

Json to_json(const Usage& u) {
  return {{"input_tokens", u.input_tokens}, {"output_tokens", u.output_tokens}, {"cached_tokens", u.cached_tokens}};
}

ToolCall tool_call_from_json(const Json& j) {
  if (!j.is_object()) throw Error(ErrorCode::invalid_argument, "tool call: expected an object");
  ToolCall c;
  c.id = j.at("id").get<std::string>();
  c.name = j.at("name").get<std::string>();
  c.arguments = j.value("arguments", Json::object());
  c.arguments_text = j.value("arguments_text", std::string());
  return c;
}

Message sanitize_utf8(Message m) {
  m.content = sanitize_utf8(std::move(m.content));
  m.tool_call_id = sanitize_utf8(std::move(m.tool_call_id));
  m.tool_name = sanitize_utf8(std::move(m.tool_name));
  for (auto& call : m.tool_calls) {
    call.id = sanitize_utf8(std::move(call.id));
    call.name = sanitize_utf8(std::move(call.name));
    call.arguments = sanitize_utf8(std::move(call.arguments));
    call.arguments_text = sanitize_utf8(std::move(call.arguments_text));
  }
  return m;
}

Message message_from_json(const Json& j) {
  if (!j.is_object()) throw Error(ErrorCode::invalid_argument, "message: expected an object");
  Message m;
  const auto role = j.at("role").get<std::string>();
  const auto parsed = role_from_string(role);
  if (!parsed) throw Error(ErrorCode::invalid_argument, "message: unknown role '" + role + "'");
  m.role = *parsed;
  m.content = j.value("content", std::string());
  if (j.contains("tool_calls")) {
    for (const auto& c : j.at("tool_calls")) m.tool_calls.push_back(tool_call_from_json(c));
  }
  m.tool_call_id = j.value("tool_call_id", std::string());
  m.tool_name = j.value("tool_name", std::string());
  m.is_error = j.value("is_error", false);
  return m;
}

Usage usage_from_json(const Json& j) {
  if (!j.is_object()) throw Error(ErrorCode::invalid_argument, "usage: expected an object");
  const auto count = [&](const char* key) -> std::int64_t {
    const auto it = j.find(key);
    return it == j.end() ? 0 : json_integer<std::int64_t>(*it, std::string("usage.") + key);
  };
  return {count("input_tokens"), count("output_tokens"), count("cached_tokens")};
}

}  // namespace agentkit
