#include <agentkit/providers/openai.h>

#include <algorithm>
#include <mutex>

#include <agentkit/providers/settings.h>
#include <agentkit/providers/tool_format.h>

#include "json_text.h"
#include "pending_call.h"
#include "stream_errors.h"

namespace agentkit::providers {
namespace {

std::string data_url(const std::string& media_type, const std::string& bytes) {
  return "data:" + media_type + ";base64," + base64_encode(bytes);
}

// User content: a plain string when it is all text (the common case, and
// byte-identical to what text-only agentkit sent), else a list of
// text, image_url and file parts. Reasoning from any provider is not sent.
Schema user_content(const Message& m) {
  const bool text_only = std::all_of(m.content.begin(), m.content.end(), [](const ContentPart& p) {
    return std::holds_alternative<TextPart>(p) || std::holds_alternative<ReasoningPart>(p);
  });
  if (text_only) return m.text();
  Schema parts = Schema::array();
  const auto text = [&](std::string t) {
    Schema part = Schema::object();
    part["type"] = "text";
    part["text"] = std::move(t);
    parts.push_back(std::move(part));
  };
  for (const auto& p : m.content) {
    if (const auto* t = std::get_if<TextPart>(&p)) {
      text(t->text);
    } else if (const auto* image = std::get_if<ImagePart>(&p)) {
      Schema url = Schema::object();
      url["url"] = image->url.empty() ? data_url(image->media_type, image->data) : image->url;
      Schema part = Schema::object();
      part["type"] = "image_url";
      part["image_url"] = std::move(url);
      parts.push_back(std::move(part));
    } else if (const auto* file = std::get_if<FilePart>(&p)) {
      if (file->data.empty()) {
        text(omitted_note(p, "OpenAI chat takes files as bytes, not URLs"));
        continue;
      }
      Schema inner = Schema::object();
      inner["file_data"] = data_url(file->media_type, file->data);
      inner["filename"] = file->name.empty() ? std::string("file") : file->name;
      Schema part = Schema::object();
      part["type"] = "file";
      part["file"] = std::move(inner);
      parts.push_back(std::move(part));
    } else if (const auto* refusal = std::get_if<RefusalPart>(&p)) {
      text(refusal->text);
    }
  }
  return parts;
}

// Assistant and tool content is text only on OpenAI chat: other parts
// become notes (reasoning is dropped; a refusal goes in `refusal`).
std::string text_content(const Message& m, std::string_view role) {
  std::string out;
  for (const auto& p : m.content) {
    if (const auto* t = std::get_if<TextPart>(&p)) {
      out += t->text;
    } else if (std::holds_alternative<ImagePart>(p) || std::holds_alternative<FilePart>(p)) {
      if (!out.empty()) out += '\n';
      out += omitted_note(p, "OpenAI chat takes " + std::string(part_type(p)) + "s in user messages only, not in " +
                            std::string(role) + " messages");
    }
  }
  return out;
}

// The text of a message's parts (Message::text()) written as a JSON string,
// without a copy when there is one text part.
void append_text_parts(std::string& out, const Message& m) {
  if (m.content.size() == 1) {
    if (const auto* t = std::get_if<TextPart>(&m.content.front())) {
      detail::append_json_string(out, t->text);
      return;
    }
  }
  detail::append_json_string(out, m.text());
}

// text_content() written as a JSON string, without a copy when the content is one text part.
void append_text_content(std::string& out, const Message& m, std::string_view role) {
  if (m.content.size() == 1 && std::holds_alternative<TextPart>(m.content.front())) {
    detail::append_json_string(out, std::get<TextPart>(m.content.front()).text);
    return;
  }
  detail::append_json_string(out, text_content(m, role));
}

// One message as Chat Completions JSON, appended to `out`; the keys in the
// order the tree this replaces had them.
void append_message(std::string& out, const Message& m) {
  switch (m.role) {
    case Role::system:
      detail::append_literal(out, R"({"role":"system","content":)");
      append_text_parts(out, m);
      out += '}';
      return;
    case Role::user: {
      detail::append_literal(out, R"({"role":"user","content":)");
      const bool text_only = std::all_of(m.content.begin(), m.content.end(), [](const ContentPart& p) {
        return std::holds_alternative<TextPart>(p) || std::holds_alternative<ReasoningPart>(p);
      });
      if (text_only) {
        append_text_parts(out, m);
      } else {
        detail::append_json_value(out, user_content(m));
      }
      out += '}';
      return;
    }
    case Role::assistant: {
      detail::append_literal(out, R"({"role":"assistant","content":)");
      const bool single_text = m.content.size() == 1 && std::holds_alternative<TextPart>(m.content.front());
      if (single_text && !std::get<TextPart>(m.content.front()).text.empty()) {
        detail::append_json_string(out, std::get<TextPart>(m.content.front()).text);
      } else {
        const std::string text = text_content(m, "assistant");
        if (text.empty() && !m.tool_calls.empty()) {
          detail::append_literal(out, "null");
        } else {
          detail::append_json_string(out, text);
        }
      }
      const RefusalPart* refusal = nullptr;  // the last one, as repeated assignment left it
      for (const auto& p : m.content) {
        if (const auto* r = std::get_if<RefusalPart>(&p)) refusal = r;
      }
      if (refusal) {
        detail::append_literal(out, R"(,"refusal":)");
        detail::append_json_string(out, refusal->text);
      }
      if (!m.tool_calls.empty()) {
        detail::append_literal(out, R"(,"tool_calls":[)");
        bool first = true;
        for (const auto& c : m.tool_calls) {
          if (!first) out += ',';
          first = false;
          detail::append_literal(out, R"({"id":)");
          detail::append_json_string(out, c.id);
          detail::append_literal(out, R"(,"type":"function","function":{"name":)");
          detail::append_json_string(out, c.name);
          detail::append_literal(out, R"(,"arguments":)");
          // Arguments travel as a JSON string; "{}" for no-argument calls.
          if (!c.arguments_text.empty()) {
            detail::append_json_string(out, c.arguments_text);
          } else if (c.arguments.is_null()) {
            detail::append_literal(out, R"("{}")");
          } else {
            detail::append_canonical_as_string(out, c.arguments);
          }
          detail::append_literal(out, "}}");
        }
        out += ']';
      }
      out += '}';
      return;
    }
    case Role::tool:
      detail::append_literal(out, R"({"role":"tool","tool_call_id":)");
      detail::append_json_string(out, m.tool_call_id);
      detail::append_literal(out, R"(,"content":)");
      append_text_content(out, m, "tool");
      out += '}';
      return;
  }
  detail::append_literal(out, "{}");
}

Usage usage_of(const Json& u) {
  Usage usage;
  if (u.is_null()) return usage;
  if (!u.is_object()) throw ProviderError(ErrorCode::protocol, "usage is " + std::string(json_type_name(u)) + ", not an object");
  usage.input_tokens = detail::token_count(u, "prompt_tokens", "usage");
  usage.output_tokens = detail::token_count(u, "completion_tokens", "usage");
  if (auto d = u.find("prompt_tokens_details"); d != u.end() && d->is_object()) {
    usage.cached_tokens = detail::token_count(*d, "cached_tokens", "usage.prompt_tokens_details");
  }
  return usage;
}

// The string at `key` of `v` (text_of(v.value(key, Json())) without copies):
// empty when absent or not a string; value()'s type error when `v` is not an object.
std::string_view text_at(const Json& v, const char* key) {
  if (!v.is_object()) {
    (void)v.value(key, Json());  // throws: value() needs an object
    return {};
  }
  const auto it = v.find(key);
  if (it == v.end() || !it->is_string()) return {};
  return it->get_ref<const std::string&>();
}

// The text at `key` ("content", "refusal") of a message or delta: a string,
// or (compatible servers) an array of text parts, joined; absent or null is
// none. Anything else is ProviderError(protocol), never a silent empty reply.
std::string message_text(const Json& v, const char* key, const char* where) {
  const auto it = v.find(key);
  if (it == v.end() || it->is_null()) return {};
  if (it->is_string()) return it->get_ref<const std::string&>();
  const auto refuse = [&] {
    return ProviderError(ErrorCode::protocol, std::string(where) + "." + key + " is " +
                                                  std::string(json_type_name(*it)) + ", not text or text parts");
  };
  if (!it->is_array()) throw refuse();
  std::string text;
  for (const Json& part : *it) {
    const auto t = part.is_object() ? part.find("text") : Json::const_iterator();
    if (!part.is_object() || t == part.end() || !t->is_string()) throw refuse();
    text += t->get_ref<const std::string&>();
  }
  return text;
}

// The value at `key` of the object `v`, or null (v.value(key, Json()) without the copy).
const Json& value_at(const Json& v, const char* key) {
  static const Json kNull;
  const auto it = v.find(key);
  return it == v.end() ? kNull : *it;
}

constexpr const char* kProvider = "OpenAI chat";

[[noreturn]] void refuse(const std::string& setting, const std::string& problem) {
  throw UnsupportedSetting(kProvider, setting, problem);
}

bool advertises(const ModelRequest& request, std::string_view name) {
  return std::any_of(request.tools.begin(), request.tools.end(), [&](const ToolSpec* t) { return t->name == name; });
}

Schema tool_choice_json(const ToolChoice& choice) {
  switch (choice.mode) {
    case ToolChoice::Mode::automatic: return "auto";
    case ToolChoice::Mode::required: return "required";
    case ToolChoice::Mode::none: return "none";
    case ToolChoice::Mode::tool: break;
  }
  Schema function = Schema::object();
  function["name"] = choice.tool;
  Schema out = Schema::object();
  out["type"] = "function";
  out["function"] = std::move(function);
  return out;
}

// The settings Chat Completions cannot take: thinking_budget_tokens, more
// than 4 stop sequences, a tool_choice that needs a tool the request does not have.
void check_settings(const ModelRequest& request) {
  static const ModelSettings kNone;
  const ModelSettings& s = request.settings ? *request.settings : kNone;
  if (s.thinking_budget_tokens) {
    refuse("thinking_budget_tokens", "is not supported (it is Anthropic's); use reasoning_effort");
  }
  if (s.stop && !s.stop->empty() && s.stop->size() > 4) {
    refuse("stop", "takes at most 4 sequences, not " + std::to_string(s.stop->size()));
  }
  if (s.tool_choice) {
    const ToolChoice& choice = *s.tool_choice;
    if (choice.mode == ToolChoice::Mode::tool && !advertises(request, choice.tool)) {
      refuse("tool_choice", "names the tool '" + choice.tool + "', which this request does not advertise");
    }
    if (request.tools.empty() && choice.mode == ToolChoice::Mode::required) {
      refuse("tool_choice", "is 'required' but the request has no tools");
    }
  }
}

// A field `"key":value` after others.
template <class T>
void append_field(std::string& out, std::string_view key, const T& value) {
  out += ',';
  detail::append_json_key(out, key);
  detail::append_json_value(out, Schema(value));
}

// The settings as Chat Completions fields, written after response_format in
// the order the tree this replaces kept them. Tool fields are sent only with
// tools (the API refuses them otherwise). A tool_choice replaces
// OpenAIOptions::tool_choice in its place (`tool_choice_written`), and
// max_output_tokens replaces max_tokens (write_chat_body leaves that out).
void append_settings(std::string& out, const ModelRequest& request, bool tool_choice_written) {
  if (!request.settings) return;
  const ModelSettings& s = *request.settings;
  if (s.temperature) append_field(out, "temperature", *s.temperature);
  if (s.top_p) append_field(out, "top_p", *s.top_p);
  if (s.max_output_tokens) append_field(out, "max_completion_tokens", *s.max_output_tokens);
  if (s.stop && !s.stop->empty()) append_field(out, "stop", *s.stop);
  if (s.seed) append_field(out, "seed", *s.seed);
  if (s.tool_choice && !request.tools.empty() && !tool_choice_written) {
    detail::append_literal(out, R"(,"tool_choice":)");
    detail::append_json_value(out, tool_choice_json(*s.tool_choice));
  }
  if (s.parallel_tool_calls && !request.tools.empty()) append_field(out, "parallel_tool_calls", *s.parallel_tool_calls);
  if (s.reasoning_effort) append_field(out, "reasoning_effort", std::string(to_string(*s.reasoning_effort)));
}

// `extra` that changes a body: null and {} leave it as it is.
bool has_extra(const ModelRequest& request) {
  if (!request.settings) return false;
  const Json& extra = request.settings->extra;
  return !extra.is_null() && !(extra.is_object() && extra.empty());
}

}  // namespace

// Each advertised tool's JSON text, kept by the model that sends it: compiling
// a tool's schema and dumping it on every turn costs more than the rest of a
// short request. An entry is used only for the spec it was made from: the same
// ToolSpec object with the same name, description and parameters (compared,
// not trusted: a spec freed and another made at its address, or one changed in
// place, misses), so a stale encoding is never sent. Bounded; safe to share
// between runs on several threads.
class OpenAIToolCache {
 public:
  explicit OpenAIToolCache(bool strict) : strict_(strict) {}

  void append(std::string& out, const ToolSpec& spec) {
    {
      std::lock_guard lock(mutex_);
      for (const auto& e : entries_) {
        if (e.spec == &spec && e.name == spec.name && e.description == spec.description && spec.parameters &&
            e.parameters == *spec.parameters) {
          out += e.text;
          return;
        }
      }
    }
    Entry entry{&spec, spec.name, spec.description, Schema(), openai_tool(spec, {.strict = strict_}).dump()};
    entry.parameters = *spec.parameters;  // openai_tool refused a spec without parameters
    out += entry.text;
    std::lock_guard lock(mutex_);
    std::erase_if(entries_, [&](const Entry& e) { return e.spec == &spec; });
    if (entries_.size() >= kMaxEntries) entries_.erase(entries_.begin());
    entries_.push_back(std::move(entry));
  }

 private:
  static constexpr std::size_t kMaxEntries = 64;
  struct Entry {
    const ToolSpec* spec;
    std::string name;
    std::string description;
    Schema parameters;
    std::string text;
  };
  const bool strict_;
  std::mutex mutex_;
  std::vector<Entry> entries_;
};

namespace {

// The request body as JSON text, byte-identical to the dump of the tree
// openai_chat_body() returns (the one source of both).
// `tool_cache`, when set, encodes the tools (it was made for options.strict_tools).
std::string write_chat_body(const ModelRequest& request, const OpenAIOptions& options, bool stream,
                            OpenAIToolCache* tool_cache) {
  check_content(request.messages, options.content_limits);
  // What can be refused is refused before anything is written, in the order
  // the tree this replaces refused it: content, tool definitions, settings.
  std::string tools;
  if (!request.tools.empty()) {
    tools += '[';
    for (const ToolSpec* spec : request.tools) {
      if (tools.size() > 1) tools += ',';
      if (tool_cache) {
        tool_cache->append(tools, *spec);
      } else {
        detail::append_json_value(tools, openai_tool(*spec, {.strict = options.strict_tools}));
      }
    }
    tools += ']';
  }
  check_settings(request);
  std::string out;
  std::size_t estimate = 256 + request.system.size();
  for (const auto& m : request.messages) {
    estimate += 64 + m.tool_call_id.size();
    for (const auto& p : m.content) {
      if (const auto* t = std::get_if<TextPart>(&p)) estimate += t->text.size() + t->text.size() / 8;
    }
    for (const auto& c : m.tool_calls) estimate += 80 + c.id.size() + c.name.size() + 2 * c.arguments_text.size();
  }
  out.reserve(estimate + tools.size());
  detail::append_literal(out, R"({"model":)");
  detail::append_json_string(out, options.model.empty() ? request.model : std::string_view(options.model));
  detail::append_literal(out, R"(,"messages":[)");
  bool first = true;
  if (!request.system.empty()) {
    detail::append_literal(out, R"({"role":"system","content":)");
    detail::append_json_string(out, request.system);
    out += '}';
    first = false;
  }
  for (const auto& m : request.messages) {
    if (!first) out += ',';
    first = false;
    append_message(out, m);
  }
  out += ']';
  const ModelSettings* settings = request.settings;
  bool tool_choice_written = false;
  if (!tools.empty()) {
    detail::append_literal(out, R"(,"tools":)");
    out += tools;
    if (options.tool_choice) {
      detail::append_literal(out, R"(,"tool_choice":)");
      if (settings && settings->tool_choice) {
        detail::append_json_value(out, tool_choice_json(*settings->tool_choice));
      } else {
        detail::append_json_string(out, *options.tool_choice);
      }
      tool_choice_written = true;
    }
  }
  if (options.max_tokens && !(settings && settings->max_output_tokens)) append_field(out, "max_tokens", *options.max_tokens);
  if (stream) detail::append_literal(out, R"(,"stream":true,"stream_options":{"include_usage":true})");
  if (request.output_schema) {
    detail::append_literal(out, R"(,"response_format":{"type":"json_schema","json_schema":{"name":)");
    detail::append_json_string(out, kFinalAnswerTool);
    detail::append_literal(out, R"(,"schema":)");
    detail::append_json_value(out, *request.output_schema);
    if (openai_strict_compatible(*request.output_schema)) {
      detail::append_literal(out, R"(,"strict":true}})");
    } else {
      detail::append_literal(out, R"(,"strict":false}})");
    }
  }
  append_settings(out, request, tool_choice_written);
  out += '}';
  if (has_extra(request)) {
    Schema body = Schema::parse(out);
    merge_extra(body, request.settings->extra);
    return body.dump();
  }
  return out;
}

}  // namespace

std::string openai_finish_reason(std::string_view reason) {
  if (reason == "tool_calls" || reason == "function_call") return "tool_calls";
  if (reason == "length") return "length";
  if (reason == "content_filter") return "content_filter";
  return "stop";
}

std::string openai_chat_body_text(const ModelRequest& request, const OpenAIOptions& options, bool stream) {
  return write_chat_body(request, options, stream, nullptr);
}

Schema openai_chat_body(const ModelRequest& request, const OpenAIOptions& options, bool stream) {
  return Schema::parse(openai_chat_body_text(request, options, stream));
}

ModelResponse openai_chat_response(const Json& body) {
  return detail::read_json("OpenAI response", [&] {
    if (!body.is_object()) throw ProviderError(ErrorCode::protocol, "OpenAI response is not a JSON object");
    if (auto e = body.find("error"); e != body.end() && !e->is_null()) throw detail::stream_error(*e);
    auto choices = body.find("choices");
    if (choices == body.end() || !choices->is_array() || choices->empty() || !(*choices)[0].is_object()) {
      throw ProviderError(ErrorCode::protocol, "OpenAI response has no choices");
    }
    const Json& choice = (*choices)[0];
    const Json& message = detail::object_ref(choice, "message", "OpenAI response choices[0]");
    ModelResponse out;
    out.message.role = Role::assistant;
    out.message.add_text(message_text(message, "content", "OpenAI response message"));
    if (std::string refusal = message_text(message, "refusal", "OpenAI response message"); !refusal.empty()) {
      out.message.content.emplace_back(RefusalPart{std::move(refusal)});
    }
    if (auto calls = message.find("tool_calls"); calls != message.end() && calls->is_array()) {
      out.message.tool_calls.reserve(calls->size());
      for (const auto& c : *calls) {
        const Json& function = detail::object_ref(c, "function", "OpenAI response tool call");
        ToolCall call;
        call.id = text_at(c, "id");
        call.name = text_at(function, "name");
        // Text as the API sends it; any other value (an object from a lenient
        // server, a number) as its JSON, which the loop parses or refuses,
        // telling the model: never silently no arguments.
        if (const auto a = function.find("arguments"); a != function.end() && !a->is_null()) {
          call.arguments_text = a->is_string() ? a->get_ref<const std::string&>() : a->dump();
        }
        if (call.arguments_text.empty()) call.arguments_text = "{}";
        out.message.tool_calls.push_back(std::move(call));
      }
    }
    out.finish_reason = openai_finish_reason(text_at(choice, "finish_reason"));
    out.usage = usage_of(value_at(body, "usage"));
    out.id = text_at(body, "id");
    out.model = text_at(body, "model");
    return out;
  });
}

void OpenAIStreamAccumulator::on_event(const SseEvent& event) {
  if (done_ || event.data.empty()) return;
  if (event.data == "[DONE]") {
    done_ = true;
    return;
  }
  const Json chunk = parse_provider_json(event.data, "OpenAI stream event");
  detail::read_json("OpenAI stream event", [&] {
    if (!chunk.is_object()) throw ProviderError(ErrorCode::protocol, "OpenAI stream event is not a JSON object");
    if (auto e = chunk.find("error"); e != chunk.end() && !e->is_null()) throw detail::stream_error(*e);
    if (auto u = chunk.find("usage"); u != chunk.end() && u->is_object()) usage_ = usage_of(*u);
    // Every chunk repeats them: the first chunk's are kept.
    if (id_.empty()) id_ = text_at(chunk, "id");
    if (model_.empty()) model_ = text_at(chunk, "model");
    auto choices = chunk.find("choices");
    if (choices == chunk.end() || choices->is_null()) return;
    if (!choices->is_array()) throw ProviderError(ErrorCode::protocol, "OpenAI stream event: choices is not an array");
    for (const auto& choice : *choices) {
      if (!choice.is_object()) throw ProviderError(ErrorCode::protocol, "OpenAI stream event: a choice is not an object");
      const auto index = choice.find("index");
      if (index != choice.end() && json_integer<std::int64_t>(*index, "choices[].index") != 0) continue;  // n > 1: the first choice only
      const Json& delta = detail::object_ref(choice, "delta", "OpenAI stream event choices[]");
      const std::string text = message_text(delta, "content", "OpenAI stream delta");
      count(text.size());
      if (deltas_ && !text.empty()) deltas_(TextDelta{std::string(text)});
      content_ += text;
      const std::string refusal = message_text(delta, "refusal", "OpenAI stream delta");
      count(refusal.size());
      refusal_ += refusal;
      if (auto calls = delta.find("tool_calls"); calls != delta.end() && calls->is_array()) {
        for (const auto& c : *calls) {
          if (!c.is_object()) throw ProviderError(ErrorCode::protocol, "OpenAI stream event: a tool call is not an object");
          const auto at = c.find("index");
          const auto index = at == c.end() ? calls_.size() : json_integer<std::size_t>(*at, "tool_calls[].index");
          if (index > 1024) throw ProviderError(ErrorCode::protocol, "OpenAI stream: tool call index out of range");
          if (index >= calls_.size()) calls_.resize(index + 1);
          PartialCall& call = calls_[index];
          if (auto id = c.find("id"); id != c.end() && id->is_string()) call.id = id->get_ref<const std::string&>();
          const Json& function = detail::object_ref(c, "function", "OpenAI stream event tool call");
          if (auto n = function.find("name"); n != function.end() && n->is_string()) {
            const std::string& name = n->get_ref<const std::string&>();
            count(name.size());
            call.name += name;
          }
          std::string_view fragment;
          if (auto a = function.find("arguments"); a != function.end() && !a->is_null()) {
            if (!a->is_string()) {
              throw ProviderError(ErrorCode::protocol, "OpenAI stream event: tool_calls[].function.arguments is " +
                                                           std::string(json_type_name(*a)) + ", not a string");
            }
            fragment = a->get_ref<const std::string&>();
          }
          if (!fragment.empty() && call.id.empty() && call.name.empty()) {
            // A fragment without its index, or at a wrong one: whose
            // arguments these are is unknown, and dropping them would run
            // the call they belong to without them.
            throw ProviderError(ErrorCode::protocol, "OpenAI stream: tool call arguments arrived at index " +
                                                         std::to_string(index) + ", where no call (id or name) was announced");
          }
          count(fragment.size());
          call.arguments += fragment;
          if (deltas_ && (!call.announced || !fragment.empty())) {
            deltas_(ToolCallDelta{index, call.id, call.name, std::string(fragment)});
          }
          call.announced = true;
        }
      }
      if (auto f = choice.find("finish_reason"); f != choice.end() && f->is_string()) {
        finish_reason_ = f->get_ref<const std::string&>();
      }
    }
  });
}

void OpenAIStreamAccumulator::count(std::size_t bytes) { detail::count_streamed(streamed_, bytes, "OpenAI stream"); }

ModelResponse OpenAIStreamAccumulator::finish() {
  ModelResponse out;
  out.message.role = Role::assistant;
  out.message.add_text(content_);
  if (!refusal_.empty()) out.message.content.emplace_back(RefusalPart{refusal_});
  for (const auto& c : calls_) {
    if (c.name.empty() && c.id.empty()) continue;
    out.message.tool_calls.push_back(ToolCall{c.id, c.name, Json::object(), c.arguments.empty() ? "{}" : c.arguments});
  }
  out.finish_reason = finish_reason_.empty() ? (out.message.tool_calls.empty() ? "stop" : "tool_calls")
                                             : openai_finish_reason(finish_reason_);
  out.usage = usage_;
  out.id = id_;
  out.model = model_;
  return out;
}

const ReplyFormat& openai_chat_reply() {
  static constexpr ReplyFormat format{"OpenAI", "data: [DONE]", &openai_chat_response};
  return format;
}

OpenAIChatModel::OpenAIChatModel(std::shared_ptr<Transport> transport, OpenAIOptions options)
    : transport_(std::move(transport)),
      options_(std::move(options)),
      tool_cache_(std::make_shared<OpenAIToolCache>(options_.strict_tools)) {
  options_.base_url = detail::without_trailing_slashes(std::move(options_.base_url));
}

std::unique_ptr<PendingCompletion> OpenAIChatModel::begin(const ModelRequest& request, RunContext& ctx) {
  HttpRequest http = detail::json_post(request, options_.base_url + "/chat/completions", "authorization", "Bearer ",
                                       options_.api_key, options_.extra_headers);
  http.body = write_chat_body(request, options_, options_.stream, tool_cache_.get());
  return detail::start_call(*transport_, std::move(http), ctx.cancellation, openai_chat_reply(),
                            options_.stream ? std::make_unique<OpenAIStreamAccumulator>(detail::run_deltas(ctx)) : nullptr);
}

ModelResponse OpenAIChatModel::complete(const ModelRequest& request, RunContext& ctx) {
  return detail::complete_now(*begin(request, ctx));
}

void OpenAIChatModel::check_schemas(std::span<const ToolSpec* const> tools, const Schema* output_schema) const {
  // The output schema goes strict only when strict mode can express it
  // (openai_chat_body), so only the tools are compiled.
  (void)output_schema;
  providers::check_schemas(tools, nullptr, options_.strict_tools ? SchemaDialect::openai_strict : SchemaDialect::openai);
}

}  // namespace agentkit::providers
