#include <agentkit/messages.h>

#include <stdexcept>

#include <agentkit/detail/enum_table.h>

namespace agentkit {
namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

// "type/subtype", both non-empty, no spaces or control characters.
bool is_media_type(std::string_view type) {
  const auto slash = type.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == type.size()) return false;
  if (type.find('/', slash + 1) != std::string_view::npos) return false;
  for (char c : type) {
    if (static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7F) return false;
  }
  return true;
}

// Image and file parts share their rules.
template <class P>
void check_binary(const P& part, std::string_view kind) {
  if (part.data.empty() == part.url.empty()) {
    throw InvalidContent(std::string(kind) + " part: exactly one of data and url must be set (" +
                         (part.data.empty() ? "neither is" : "both are") + ")");
  }
  if (!part.data.empty() && part.media_type.empty()) {
    throw InvalidContent(std::string(kind) + " part: " + std::to_string(part.data.size()) +
                         " bytes of data without a media type");
  }
  if (!part.media_type.empty() && !is_media_type(part.media_type)) {
    throw InvalidContent(std::string(kind) + " part: '" + sanitize_utf8(part.media_type) +
                         "' is not a media type (type/subtype)");
  }
}

std::string binary_field(const Json& j, const char* what) {
  const auto it = j.find("data");
  if (it == j.end()) return {};
  if (!it->is_string()) throw InvalidContent(std::string(what) + " part: data is not a base64 string");
  auto bytes = base64_decode(it->get_ref<const std::string&>());
  if (!bytes) throw InvalidContent(std::string(what) + " part: data is not valid base64");
  return *std::move(bytes);
}

}  // namespace

std::string_view part_type(const ContentPart& part) noexcept {
  static constexpr std::string_view kNames[] = {"text", "image", "file", "reasoning", "refusal"};
  return kNames[part.index()];
}

void check_part(const ContentPart& part) {
  if (const auto* image = std::get_if<ImagePart>(&part)) {
    check_binary(*image, "image");
    if (!image->media_type.empty() && image->media_type.rfind("image/", 0) != 0) {
      throw InvalidContent("image part: media type '" + sanitize_utf8(image->media_type) + "' is not an image type");
    }
  } else if (const auto* file = std::get_if<FilePart>(&part)) {
    check_binary(*file, "file");
  }
}

std::size_t part_bytes(const ContentPart& part) noexcept {
  return std::visit(Overloaded{[](const TextPart& p) { return p.text.size(); },
                               [](const ImagePart& p) { return p.data.size(); },
                               [](const FilePart& p) { return p.data.size(); },
                               [](const ReasoningPart& p) { return p.text.size() + p.redacted.size(); },
                               [](const RefusalPart& p) { return p.text.size(); }},
                    part);
}

std::string describe(const ContentPart& part) {
  const auto binary = [](std::string head, const auto& p) {
    if (!p.media_type.empty()) head += " " + sanitize_utf8(p.media_type);
    if (!p.url.empty()) return head + " at " + sanitize_utf8(p.url);
    return head + ", " + std::to_string(p.data.size()) + " bytes";
  };
  return std::visit(Overloaded{[](const TextPart& p) { return "text, " + std::to_string(p.text.size()) + " bytes"; },
                               [&](const ImagePart& p) { return binary("image", p); },
                               [&](const FilePart& p) {
                                 return binary(p.name.empty() ? std::string("file")
                                                              : "file '" + sanitize_utf8(p.name) + "'",
                                               p);
                               },
                               [](const ReasoningPart& p) { return "reasoning from " + p.provider; },
                               [](const RefusalPart&) { return std::string("refusal"); }},
                    part);
}

std::string omitted_note(const ContentPart& part, std::string_view why) {
  return "[" + describe(part) + " omitted: " + std::string(why) + "]";
}

void check_part(const ContentPart& part, const ContentLimits& limits) {
  check_part(part);
  const std::size_t bytes = part_bytes(part);
  if (bytes > limits.max_part_bytes) {
    throw ContentTooLarge("content part (" + describe(part) + ") is over the per-part cap of " +
                              std::to_string(limits.max_part_bytes) + " bytes",
                          bytes, limits.max_part_bytes);
  }
}

void check_content(std::span<const Message> messages, const ContentLimits& limits) {
  std::size_t total = 0;
  for (const auto& m : messages) {
    for (const auto& part : m.content) {
      check_part(part, limits);
      total += part_bytes(part);
    }
  }
  if (total > limits.max_request_bytes) {
    throw ContentTooLarge("a request's content parts hold " + std::to_string(total) +
                              " bytes, over the per-request cap of " + std::to_string(limits.max_request_bytes) +
                              " bytes",
                          total, limits.max_request_bytes);
  }
}

std::string Message::text() const {
  std::string out;
  for (const auto& part : content) {
    if (const auto* t = std::get_if<TextPart>(&part)) out += t->text;
  }
  return out;
}

void Message::add_text(std::string text) {
  if (text.empty()) return;
  if (!content.empty()) {
    if (auto* t = std::get_if<TextPart>(&content.back())) {
      t->text += text;
      return;
    }
  }
  content.emplace_back(TextPart{std::move(text)});
}

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

Json to_json(const ContentPart& part) {
  const auto binary = [](Json j, const auto& p) {
    if (!p.media_type.empty()) j["media_type"] = p.media_type;
    if (!p.data.empty()) j["data"] = base64_encode(p.data);
    if (!p.url.empty()) j["url"] = p.url;
    return j;
  };
  return std::visit(
      Overloaded{[](const TextPart& p) { return Json{{"type", "text"}, {"text", p.text}}; },
                 [&](const ImagePart& p) { return binary(Json{{"type", "image"}}, p); },
                 [&](const FilePart& p) {
                   Json j{{"type", "file"}};
                   if (!p.name.empty()) j["name"] = p.name;
                   return binary(std::move(j), p);
                 },
                 [](const ReasoningPart& p) {
                   Json j{{"type", "reasoning"}, {"text", p.text}, {"provider", p.provider}};
                   if (!p.signature.empty()) j["signature"] = p.signature;
                   if (!p.redacted.empty()) j["redacted"] = p.redacted;
                   return j;
                 },
                 [](const RefusalPart& p) { return Json{{"type", "refusal"}, {"text", p.text}}; }},
      part);
}

ContentPart part_from_json(const Json& j) {
  if (!j.is_object()) throw InvalidContent("content part: expected an object");
  const auto field = [&](const char* key) {
    const auto it = j.find(key);
    if (it == j.end()) return std::string();
    if (!it->is_string()) throw InvalidContent(std::string("content part: ") + key + " is not a string");
    return it->get<std::string>();
  };
  const std::string type = field("type");
  ContentPart part;
  if (type == "text") {
    part = TextPart{field("text")};
  } else if (type == "image") {
    part = ImagePart{field("media_type"), binary_field(j, "image"), field("url")};
  } else if (type == "file") {
    part = FilePart{field("media_type"), binary_field(j, "file"), field("name"), field("url")};
  } else if (type == "reasoning") {
    part = ReasoningPart{field("text"), field("signature"), field("redacted"), field("provider")};
  } else if (type == "refusal") {
    part = RefusalPart{field("text")};
  } else {
    throw InvalidContent("content part: unknown type '" + sanitize_utf8(type) + "'");
  }
  check_part(part);
  return part;
}

Json to_json(const Message& m) {
  Json content = Json::array();
  for (const auto& part : m.content) content.push_back(to_json(part));
  Json j = {{"role", to_string(m.role)}, {"content", std::move(content)}};
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

namespace {

// In place: a string that is valid UTF-8 (the common case) is only read.
void sanitize_text(std::string& text) {
  if (!is_valid_utf8(text)) text = sanitize_utf8(std::move(text));
}

}  // namespace

Message sanitize_utf8(Message m) {
  for (auto& part : m.content) {
    std::visit(Overloaded{[](TextPart& p) { sanitize_text(p.text); },
                          [](ImagePart& p) { sanitize_text(p.media_type); },
                          [](FilePart& p) {
                            sanitize_text(p.media_type);
                            sanitize_text(p.name);
                          },
                          [](ReasoningPart& p) { sanitize_text(p.text); },
                          [](RefusalPart& p) { sanitize_text(p.text); }},
               part);
  }
  sanitize_text(m.tool_call_id);
  sanitize_text(m.tool_name);
  for (auto& call : m.tool_calls) {
    sanitize_text(call.id);
    sanitize_text(call.name);
    call.arguments = sanitize_utf8(std::move(call.arguments));
    sanitize_text(call.arguments_text);
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
  if (const auto content = j.find("content"); content != j.end()) {
    if (content->is_string()) {
      m.add_text(content->get<std::string>());  // written before content parts: one string
    } else if (content->is_array()) {
      for (const auto& part : *content) m.content.push_back(part_from_json(part));
    } else if (!content->is_null()) {
      throw Error(ErrorCode::invalid_argument, "message: content is neither a list of parts nor a string");
    }
  }
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
