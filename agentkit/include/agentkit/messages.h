#pragma once
// The conversation vocabulary shared by agents, cognition and model adapters.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <agentkit/error.h>
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

// ---------------------------------------------------------------- content parts
//
// A message's content is a sequence of parts. Binary `data` is raw bytes in
// a std::string (any byte values; never treated as text, never changed by
// sanitize_utf8); documents and wire bodies carry it as base64.

// Plain text.
struct TextPart {
  std::string text;
  friend bool operator==(const TextPart&, const TextPart&) = default;
};

// An image: inline bytes with their media type ("image/png"), or a URL.
// Exactly one of `data` and `url` is set; bytes need a media type.
struct ImagePart {
  std::string media_type;
  std::string data;  // raw bytes
  std::string url;
  friend bool operator==(const ImagePart&, const ImagePart&) = default;
};

// A file or document (a PDF, ...): bytes with their media type and a file
// name, or a URL. Exactly one of `data` and `url` is set.
struct FilePart {
  std::string media_type;  // "application/pdf"
  std::string data;        // raw bytes
  std::string name;        // "report.pdf"; optional
  std::string url;
  friend bool operator==(const FilePart&, const FilePart&) = default;
};

// The model's reasoning: its thinking or a summary of it (`text`), with the
// provider's opaque `signature` and, for reasoning the provider keeps
// encrypted (Anthropic `redacted_thinking`), the opaque `redacted` content.
// Both are carried back verbatim in later requests to the same provider
// (`provider`: "anthropic", "openai", ... the adapter that produced it) and
// are never sent to another provider. Never shown as the answer: text()
// leaves it out.
struct ReasoningPart {
  std::string text;
  std::string signature;
  std::string redacted;
  std::string provider;
  friend bool operator==(const ReasoningPart&, const ReasoningPart&) = default;
};

// The model declined to answer; `text` says why (OpenAI `refusal`).
struct RefusalPart {
  std::string text;
  friend bool operator==(const RefusalPart&, const RefusalPart&) = default;
};

using ContentPart = std::variant<TextPart, ImagePart, FilePart, ReasoningPart, RefusalPart>;

// The part's type name as documents spell it: "text", "image", "file",
// "reasoning", "refusal".
std::string_view part_type(const ContentPart& part) noexcept;

// A part that is not well-formed: an image or file with neither or both of
// data and url, bytes without a media type, a media type that is not
// "type/subtype" (an image's must be "image/..."). Thrown by check_part and
// by part_from_json.
class InvalidContent : public Error {
 public:
  explicit InvalidContent(const std::string& message) : Error(ErrorCode::invalid_argument, message) {}
};
// Throws InvalidContent, naming the problem, when `part` is not well-formed.
void check_part(const ContentPart& part);

// Caps on content bytes: binary data (and text) of one part, and of all
// parts of one model request. Adapters check them before anything goes on
// the wire; the run loop checks tool results against them (a result over a
// cap becomes a model-visible error).
struct ContentLimits {
  std::size_t max_part_bytes = 20u << 20;     // 20 MiB
  std::size_t max_request_bytes = 32u << 20;  // 32 MiB
};

// Content over a ContentLimits cap (code invalid_argument).
class ContentTooLarge : public Error {
 public:
  ContentTooLarge(const std::string& message, std::size_t bytes, std::size_t limit)
      : Error(ErrorCode::invalid_argument, message), bytes_(bytes), limit_(limit) {}
  std::size_t bytes() const noexcept { return bytes_; }
  std::size_t limit() const noexcept { return limit_; }

 private:
  std::size_t bytes_;
  std::size_t limit_;
};

// The bytes a part counts against ContentLimits: its data (or text).
std::size_t part_bytes(const ContentPart& part) noexcept;

// The per-part checks of check_content, for one part: throws InvalidContent
// when `part` is not well-formed (check_part) and ContentTooLarge when it is
// over limits.max_part_bytes. The run loop uses it on a tool's parts.
void check_part(const ContentPart& part, const ContentLimits& limits);
// A short description for errors and text notes: "image image/png, 1234 bytes".
std::string describe(const ContentPart& part);
// The text note an adapter sends in place of a part its provider cannot
// take, never dropping it silently: "[image image/png, 1234 bytes omitted: <why>]".
std::string omitted_note(const ContentPart& part, std::string_view why);

// One message of a conversation. Assistant messages may carry tool calls;
// tool messages answer exactly one call (`tool_call_id`) and may carry parts
// beyond text (an image a tool returned).
//
// Example:
//   Message::user("What is in this picture?");
//   Message::user({TextPart{"What is in this picture?"}, ImagePart{.media_type = "image/jpeg", .data = jpeg}});
//   message.text();  // the text parts joined
struct Message {
  Role role = Role::user;
  std::vector<ContentPart> content;
  std::vector<ToolCall> tool_calls;  // assistant only
  std::string tool_call_id;          // tool only
  std::string tool_name;             // tool only
  bool is_error = false;             // tool only: the content is an error text

  // The text parts, joined without a separator. Reasoning and refusals are
  // not part of it.
  std::string text() const;
  // Appends `text` to the last part when it is text, else as a new TextPart
  // (empty text adds nothing).
  void add_text(std::string text);

  // Empty text gives no part.
  static Message user(std::string text) { return {Role::user, text_content(std::move(text))}; }
  static Message user(std::vector<ContentPart> parts) { return {Role::user, std::move(parts)}; }
  static Message system(std::string text) { return {Role::system, text_content(std::move(text))}; }
  static Message assistant(std::string text, std::vector<ToolCall> calls = {}) {
    return {Role::assistant, text_content(std::move(text)), std::move(calls)};
  }
  static Message assistant(std::vector<ContentPart> parts, std::vector<ToolCall> calls = {}) {
    return {Role::assistant, std::move(parts), std::move(calls)};
  }
  static Message tool_result(std::string call_id, std::string name, std::string text, bool is_error = false) {
    return {Role::tool, text_content(std::move(text)), {}, std::move(call_id), std::move(name), is_error};
  }
  static Message tool_result(std::string call_id, std::string name, std::vector<ContentPart> parts,
                             bool is_error = false) {
    return {Role::tool, std::move(parts), {}, std::move(call_id), std::move(name), is_error};
  }
  friend bool operator==(const Message&, const Message&) = default;

 private:
  static std::vector<ContentPart> text_content(std::string text) {
    std::vector<ContentPart> parts;
    if (!text.empty()) parts.emplace_back(TextPart{std::move(text)});
    return parts;
  }
};

// Throws ContentTooLarge when a part of `messages` is over
// limits.max_part_bytes or all their parts together are over
// limits.max_request_bytes, and InvalidContent for a part that is not
// well-formed (check_part). Adapters call it before building a body.
void check_content(std::span<const Message> messages, const ContentLimits& limits);

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
// A part as a document: {"type": "image", "media_type": ..., "data": <base64>}
// and so on, binary data as base64.
Json to_json(const ContentPart& part);
// A message as a document; its "content" is a list of parts (to_json of each).
Json to_json(const Message& message);
Json to_json(const Usage& usage);
// Inverse of to_json; throws agentkit::Error (invalid_argument) on a malformed document.
ToolCall tool_call_from_json(const Json& j);
// Throws InvalidContent for a part that is not well-formed (check_part), bad
// base64 or an unknown type.
ContentPart part_from_json(const Json& j);
// Reads "content" as a list of parts, or as one string (documents written
// before content parts: one TextPart, none when empty).
Message message_from_json(const Json& j);
Usage usage_from_json(const Json& j);

// `message` with every text in it (the text of its parts, ids, names,
// tool-call arguments) made well-formed UTF-8 by sanitize_utf8
// (<agentkit/json.h>). Binary data, URLs and the opaque signature and
// redacted content of reasoning are left exactly as they are. The run loop
// applies it to each model reply before it enters the run's state.
Message sanitize_utf8(Message message);

}  // namespace agentkit
