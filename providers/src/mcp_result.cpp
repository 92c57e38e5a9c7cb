// MCP tool descriptions and results as agentkit sees them: specs from
// tools/list entries, argument checks from inputSchema, and model text from
// tools/call content blocks.
#include <cmath>

#include <agentkit/errors.h>

#include "mcp_detail.h"

namespace agentkit::providers {
namespace mcp_detail {
namespace {

constexpr std::size_t kMaxToolName = 64;

std::string string_field(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool hint(const Json& annotations, const char* key) {
  const auto it = annotations.find(key);
  return it != annotations.end() && it->is_boolean() && it->get<bool>();
}

// Provider APIs accept [A-Za-z0-9_-]{1,64}; MCP names may also hold '.',
// '/' and more, and run to 128 characters.
std::string sanitized_name(const std::string& name) {
  std::string out = name.substr(0, kMaxToolName);
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return out.empty() ? std::string("_") : out;
}

// The reason a value breaks `schema`'s "type" (a name or a list of names), or "".
std::string size_note(const Json& block, const char* data_key) {
  const auto bytes = base64_decode(string_field(block, data_key));
  return bytes ? std::to_string(bytes->size()) + " bytes" : std::string("not valid base64");
}

std::string with_mime(std::string head, const Json& block) {
  const std::string mime = string_field(block, "mimeType");
  if (!mime.empty()) head += " " + mime;
  return head;
}

std::string render_resource(const Json& block) {
  const Json resource = block.value("resource", Json::object());
  if (!resource.is_object()) return "[resource]";
  std::string head = with_mime("[resource " + string_field(resource, "uri"), resource);
  if (resource.contains("text")) return head + "]\n" + string_field(resource, "text");
  if (resource.contains("blob")) return head + ", " + size_note(resource, "blob") + "]";
  return head + "]";
}

std::string render_block(const Json& block) {
  if (!block.is_object()) return "[content " + preview(block) + "]";
  const std::string type = string_field(block, "type");
  if (type == "text") return string_field(block, "text");
  if (type == "image" || type == "audio") return with_mime("[" + type, block) + ", " + size_note(block, "data") + "]";
  if (type == "resource_link") {
    std::string head = "[resource_link " + string_field(block, "uri");
    if (const std::string name = string_field(block, "name"); !name.empty()) head += " \"" + name + "\"";
    head = with_mime(head, block) + "]";
    const std::string description = string_field(block, "description");
    return description.empty() ? head : head + " " + description;
  }
  if (type == "resource") return render_resource(block);
  return "[" + (type.empty() ? std::string("untyped") : type) + " content]";
}

}  // namespace

std::string preview_text(std::string_view text, std::size_t max_chars) {
  // preview() escapes control characters, replaces invalid UTF-8 and quotes
  // the string as 'text' (or 'text'... when cut): drop the quotes.
  std::string out = preview(Json(std::string(text.substr(0, max_chars * 4))), max_chars);
  const bool cut = out.size() >= 4 && out.compare(out.size() - 3, 3, "...") == 0;
  if (cut) out.resize(out.size() - 3);
  if (!out.empty() && out.front() == '\'') out.erase(0, 1);
  if (!out.empty() && out.back() == '\'') out.pop_back();
  return cut ? out + "..." : out;
}

std::optional<Json> parse_message(std::string_view text, std::string& problem) {
  // nlohmann parses iteratively, but the values are walked recursively
  // later on: refuse absurd nesting with a cheap scan first.
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxMessageDepth) {
        problem = "nests deeper than " + std::to_string(kMaxMessageDepth) + " levels";
        return std::nullopt;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  try {
    return Json::parse(text);
  } catch (const Json::exception&) {
    problem = "is not JSON";
    return std::nullopt;
  }
}

McpToolInfo tool_info(const Json& entry) {
  if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
      entry["name"].get_ref<const std::string&>().empty()) {
    throw McpError(McpError::Kind::protocol, "tools/list entry without a name: " + preview(entry));
  }
  McpToolInfo info;
  info.name = entry["name"].get<std::string>();
  info.title = string_field(entry, "title");
  info.description = string_field(entry, "description");
  if (auto it = entry.find("inputSchema"); it != entry.end() && it->is_object()) info.input_schema = *it;
  if (!info.input_schema.contains("type")) info.input_schema["type"] = "object";
  if (auto it = entry.find("outputSchema"); it != entry.end() && it->is_object()) info.output_schema = *it;
  if (auto it = entry.find("annotations"); it != entry.end() && it->is_object()) info.annotations = *it;
  return info;
}

ToolSpec tool_spec(const McpToolInfo& info, const std::string& server_name) {
  ToolSpec spec;
  spec.name = sanitized_name(info.name);
  spec.description = !info.description.empty() ? info.description
                     : !info.title.empty()      ? info.title
                                                : "MCP tool '" + info.name + "' of server '" + server_name + "'";
  spec.parameters = Schema(info.input_schema);
  if (!info.output_schema.is_null()) spec.output_schema = Schema(info.output_schema);
  // Annotations are hints: a tool is read-only only when it says so, and
  // idempotency is never taken on the server's word (it would license retries).
  spec.effects.side_effecting = !hint(info.annotations, "readOnlyHint");
  spec.effects.idempotent = false;
  const auto extra = info.input_schema.find("additionalProperties");
  spec.accepts_extra_arguments = !(extra != info.input_schema.end() && extra->is_boolean() && !extra->get<bool>());
  spec.tags = {"mcp", "mcp:" + server_name};
  spec.metadata["mcp"] = {
      {"server", server_name},
      {"name", info.name},
      {"title", info.title},
      {"annotations", info.annotations},
      {"read_only_hint", hint(info.annotations, "readOnlyHint")},
      {"destructive_hint", info.annotations.value("destructiveHint", !hint(info.annotations, "readOnlyHint"))},
      {"idempotent_hint", hint(info.annotations, "idempotentHint")},
      {"open_world_hint", info.annotations.value("openWorldHint", true)},
  };
  return spec;
}

McpCallResult call_result(const Json& result) {
  if (!result.is_object()) throw McpError(McpError::Kind::protocol, "tools/call result is not an object: " + preview(result));
  McpCallResult out;
  out.raw = result;
  if (auto it = result.find("content"); it != result.end() && it->is_array()) out.content = *it;
  if (auto it = result.find("structuredContent"); it != result.end()) out.structured = *it;
  out.is_error = hint(result, "isError");
  return out;
}

}  // namespace mcp_detail

std::string McpCallResult::text() const {
  std::string out;
  for (const auto& block : content) {
    if (!out.empty()) out += '\n';
    out += mcp_detail::render_block(block);
  }
  return out;
}

std::vector<ContentPart> McpCallResult::parts() const {
  std::vector<ContentPart> out;
  for (const auto& block : content) {
    if (block.is_object() && mcp_detail::string_field(block, "type") == "image") {
      ImagePart image{mcp_detail::string_field(block, "mimeType"), {}, {}};
      auto bytes = base64_decode(mcp_detail::string_field(block, "data"));
      if (bytes && !bytes->empty()) {
        image.data = *std::move(bytes);
        try {
          check_part(image);
          out.emplace_back(std::move(image));
          continue;
        } catch (const InvalidContent&) {
        }  // a bad media type: the text note below says what it was
      }
    }
    if (!out.empty() && std::holds_alternative<TextPart>(out.back())) {
      std::get<TextPart>(out.back()).text += '\n' + mcp_detail::render_block(block);
    } else {
      out.emplace_back(TextPart{mcp_detail::render_block(block)});
    }
  }
  return out;
}

Json McpCallResult::value() const {
  if (!structured.is_null()) return structured;
  return text();
}

}  // namespace agentkit::providers
