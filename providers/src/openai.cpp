#include <agentkit/providers/openai.h>

#include <algorithm>

#include <agentkit/providers/settings.h>
#include <agentkit/providers/tool_format.h>

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

Schema message_json(const Message& m) {
  Schema out = Schema::object();
  switch (m.role) {
    case Role::system:
      out["role"] = "system";
      out["content"] = m.text();
      return out;
    case Role::user:
      out["role"] = "user";
      out["content"] = user_content(m);
      return out;
    case Role::assistant: {
      out["role"] = "assistant";
      const std::string text = text_content(m, "assistant");
      out["content"] = text.empty() && !m.tool_calls.empty() ? Schema(nullptr) : Schema(text);
      for (const auto& p : m.content) {
        if (const auto* r = std::get_if<RefusalPart>(&p)) out["refusal"] = r->text;
      }
      if (!m.tool_calls.empty()) {
        Schema calls = Schema::array();
        for (const auto& c : m.tool_calls) {
          Schema function = Schema::object();
          function["name"] = c.name;
          // Arguments travel as a JSON string; "{}" for no-argument calls.
          function["arguments"] = c.arguments_text.empty()
                                      ? (c.arguments.is_null() ? std::string("{}") : canonical_dump(c.arguments))
                                      : c.arguments_text;
          Schema call = Schema::object();
          call["id"] = c.id;
          call["type"] = "function";
          call["function"] = std::move(function);
          calls.push_back(std::move(call));
        }
        out["tool_calls"] = std::move(calls);
      }
      return out;
    }
    case Role::tool:
      out["role"] = "tool";
      out["tool_call_id"] = m.tool_call_id;
      out["content"] = text_content(m, "tool");
      return out;
  }
  return out;
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

std::string text_of(const Json& v) { return v.is_string() ? v.get<std::string>() : std::string(); }

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

// The settings as Chat Completions fields. Tool fields are sent only with
// tools (the API refuses them otherwise); a choice that needs a tool when
// there is none is refused.
void apply_settings(Schema& body, const ModelRequest& request) {
  static const ModelSettings kNone;
  const ModelSettings& s = request.settings ? *request.settings : kNone;
  if (s.thinking_budget_tokens) {
    refuse("thinking_budget_tokens", "is not supported (it is Anthropic's); use reasoning_effort");
  }
  if (s.temperature) body["temperature"] = *s.temperature;
  if (s.top_p) body["top_p"] = *s.top_p;
  if (s.max_output_tokens) {
    // The current field (reasoning models refuse max_tokens); it replaces OpenAIOptions::max_tokens.
    body.erase("max_tokens");
    body["max_completion_tokens"] = *s.max_output_tokens;
  }
  if (s.stop && !s.stop->empty()) {
    if (s.stop->size() > 4) refuse("stop", "takes at most 4 sequences, not " + std::to_string(s.stop->size()));
    body["stop"] = *s.stop;
  }
  if (s.seed) body["seed"] = *s.seed;
  if (s.tool_choice) {
    const ToolChoice& choice = *s.tool_choice;
    if (choice.mode == ToolChoice::Mode::tool && !advertises(request, choice.tool)) {
      refuse("tool_choice", "names the tool '" + choice.tool + "', which this request does not advertise");
    }
    if (request.tools.empty()) {
      if (choice.mode == ToolChoice::Mode::required) refuse("tool_choice", "is 'required' but the request has no tools");
      body.erase("tool_choice");
    } else {
      body["tool_choice"] = tool_choice_json(choice);
    }
  }
  if (s.parallel_tool_calls && !request.tools.empty()) body["parallel_tool_calls"] = *s.parallel_tool_calls;
  if (s.reasoning_effort) body["reasoning_effort"] = std::string(to_string(*s.reasoning_effort));
}

}  // namespace

std::string openai_finish_reason(std::string_view reason) {
  if (reason == "tool_calls" || reason == "function_call") return "tool_calls";
  if (reason == "length") return "length";
  if (reason == "content_filter") return "content_filter";
  return "stop";
}

Schema openai_chat_body(const ModelRequest& request, const OpenAIOptions& options, bool stream) {
  check_content(request.messages, options.content_limits);
  Schema body = Schema::object();
  body["model"] = options.model.empty() ? std::string(request.model) : options.model;
  Schema messages = Schema::array();
  if (!request.system.empty()) messages.push_back(message_json(Message::system(std::string(request.system))));
  for (const auto& m : request.messages) messages.push_back(message_json(m));
  body["messages"] = std::move(messages);
  if (!request.tools.empty()) {
    Schema tools = Schema::array();
    for (const ToolSpec* spec : request.tools) tools.push_back(openai_tool(*spec, {.strict = options.strict_tools}));
    body["tools"] = std::move(tools);
    if (options.tool_choice) body["tool_choice"] = *options.tool_choice;
  }
  if (options.max_tokens) body["max_tokens"] = *options.max_tokens;
  if (stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  if (request.output_schema) {
    Schema json_schema = Schema::object();
    json_schema["name"] = std::string(kFinalAnswerTool);
    json_schema["schema"] = *request.output_schema;
    json_schema["strict"] = openai_strict_compatible(*request.output_schema);
    Schema format = Schema::object();
    format["type"] = "json_schema";
    format["json_schema"] = std::move(json_schema);
    body["response_format"] = std::move(format);
  }
  apply_settings(body, request);
  if (request.settings) merge_extra(body, request.settings->extra);
  return body;
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
    const Json message = detail::object_at(choice, "message", "OpenAI response choices[0]");
    ModelResponse out;
    out.message.role = Role::assistant;
    out.message.add_text(text_of(message.value("content", Json())));
    if (const std::string refusal = text_of(message.value("refusal", Json())); !refusal.empty()) {
      out.message.content.emplace_back(RefusalPart{refusal});
    }
    if (auto calls = message.find("tool_calls"); calls != message.end() && calls->is_array()) {
      for (const auto& c : *calls) {
        const Json function = detail::object_at(c, "function", "OpenAI response tool call");
        ToolCall call;
        call.id = text_of(c.value("id", Json()));
        call.name = text_of(function.value("name", Json()));
        call.arguments_text = text_of(function.value("arguments", Json()));
        if (call.arguments_text.empty()) call.arguments_text = "{}";
        out.message.tool_calls.push_back(std::move(call));
      }
    }
    out.finish_reason = openai_finish_reason(text_of(choice.value("finish_reason", Json())));
    out.usage = usage_of(body.value("usage", Json()));
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
    auto choices = chunk.find("choices");
    if (choices == chunk.end() || choices->is_null()) return;
    if (!choices->is_array()) throw ProviderError(ErrorCode::protocol, "OpenAI stream event: choices is not an array");
    for (const auto& choice : *choices) {
      if (!choice.is_object()) throw ProviderError(ErrorCode::protocol, "OpenAI stream event: a choice is not an object");
      const auto index = choice.find("index");
      if (index != choice.end() && json_integer<std::int64_t>(*index, "choices[].index") != 0) continue;  // n > 1: the first choice only
      const Json delta = detail::object_at(choice, "delta", "OpenAI stream event choices[]");
      const std::string text = text_of(delta.value("content", Json()));
      count(text.size());
      if (deltas_ && !text.empty()) deltas_(TextDelta{text});
      content_ += text;
      const std::string refusal = text_of(delta.value("refusal", Json()));
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
          if (auto id = c.find("id"); id != c.end() && id->is_string()) call.id = id->get<std::string>();
          const Json function = detail::object_at(c, "function", "OpenAI stream event tool call");
          if (auto n = function.find("name"); n != function.end() && n->is_string()) {
            count(n->get_ref<const std::string&>().size());
            call.name += n->get<std::string>();
          }
          std::string fragment;
          if (auto a = function.find("arguments"); a != function.end() && !a->is_null()) {
            if (!a->is_string()) {
              throw ProviderError(ErrorCode::protocol, "OpenAI stream event: tool_calls[].function.arguments is " +
                                                           std::string(json_type_name(*a)) + ", not a string");
            }
            fragment = a->get<std::string>();
          }
          count(fragment.size());
          call.arguments += fragment;
          if (deltas_ && (!call.announced || !fragment.empty())) deltas_(ToolCallDelta{index, call.id, call.name, fragment});
          call.announced = true;
        }
      }
      if (auto f = choice.find("finish_reason"); f != choice.end() && f->is_string()) finish_reason_ = f->get<std::string>();
    }
  });
}

void OpenAIStreamAccumulator::count(std::size_t bytes) {
  streamed_ += bytes;
  if (streamed_ > kMaxStreamedReplyBytes) {
    throw ProviderError(ErrorCode::protocol, "OpenAI stream: the reply's fragments are over " +
                                                 std::to_string(kMaxStreamedReplyBytes) + " bytes");
  }
}

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
  return out;
}

const ReplyFormat& openai_chat_reply() {
  static constexpr ReplyFormat format{"OpenAI", "data: [DONE]", &openai_chat_response};
  return format;
}

OpenAIChatModel::OpenAIChatModel(std::shared_ptr<Transport> transport, OpenAIOptions options)
    : transport_(std::move(transport)), options_(std::move(options)) {
  options_.base_url = detail::without_trailing_slashes(std::move(options_.base_url));
}

std::unique_ptr<PendingCompletion> OpenAIChatModel::begin(const ModelRequest& request, RunContext& ctx) {
  HttpRequest http;
  http.url = options_.base_url + "/chat/completions";
  http.headers = {{"content-type", "application/json"}};
  if (!options_.api_key.empty()) http.headers.emplace_back("authorization", "Bearer " + options_.api_key);
  for (const auto& h : options_.extra_headers) http.headers.push_back(h);
  http.body = openai_chat_body(request, options_, options_.stream).dump();
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
