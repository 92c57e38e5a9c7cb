#include <agentkit/providers/ollama.h>

#include <algorithm>

#include <agentkit/providers/settings.h>
#include <agentkit/providers/tool_format.h>

#include "pending_call.h"
#include "stream_errors.h"

namespace agentkit::providers {
namespace {

constexpr const char* kProvider = "Ollama";
constexpr std::string_view kReasoningProvider = "ollama";

[[noreturn]] void refuse(const std::string& setting, const std::string& problem) {
  throw UnsupportedSetting(kProvider, setting, problem);
}

// Text, with what Ollama cannot take as text notes; images as base64 where
// the role may carry them (user and tool messages).
Schema message_json(const Message& m) {
  Schema out = Schema::object();
  out["role"] = std::string(to_string(m.role));
  const bool images_here = m.role == Role::user || m.role == Role::tool;
  std::string text, thinking;
  Schema images = Schema::array();
  const auto note = [&](const std::string& n) {
    if (!text.empty()) text += '\n';
    text += n;
  };
  for (const auto& p : m.content) {
    if (const auto* t = std::get_if<TextPart>(&p)) {
      text += t->text;
    } else if (const auto* image = std::get_if<ImagePart>(&p)) {
      if (!images_here) {
        note(omitted_note(p, "Ollama takes images in user and tool messages only"));
      } else if (image->data.empty()) {
        note(omitted_note(p, "Ollama takes images as bytes, not URLs"));
      } else {
        images.push_back(base64_encode(image->data));
      }
    } else if (std::holds_alternative<FilePart>(p)) {
      note(omitted_note(p, "Ollama does not take files"));
    } else if (const auto* r = std::get_if<ReasoningPart>(&p)) {
      if (r->provider == kReasoningProvider) thinking += r->text;  // another provider's never leaves here
    } else if (const auto* refusal = std::get_if<RefusalPart>(&p)) {
      text += refusal->text;
    }
  }
  out["content"] = std::move(text);
  if (!images.empty()) out["images"] = std::move(images);
  if (m.role == Role::assistant && !thinking.empty()) out["thinking"] = std::move(thinking);
  if (m.role == Role::assistant && !m.tool_calls.empty()) {
    Schema calls = Schema::array();
    for (const auto& c : m.tool_calls) {
      Schema function = Schema::object();
      function["name"] = c.name;
      // Arguments travel as an object: the call's text when it is one (a
      // history from another provider), else its parsed arguments ({} for a
      // call the engine refused: its tool result says why).
      Schema arguments = c.arguments.is_object() ? Schema(c.arguments) : Schema::object();
      if (!c.arguments_text.empty()) {
        try {
          if (Schema parsed = Schema::parse(c.arguments_text); parsed.is_object()) arguments = std::move(parsed);
        } catch (const Schema::exception&) {
        }
      }
      function["arguments"] = std::move(arguments);
      Schema call = Schema::object();
      if (!c.id.empty()) call["id"] = c.id;
      call["function"] = std::move(function);
      calls.push_back(std::move(call));
    }
    out["tool_calls"] = std::move(calls);
  }
  if (m.role == Role::tool) out["tool_name"] = m.tool_name;
  return out;
}

void apply_settings(Schema& body, const ModelRequest& request) {
  static const ModelSettings kNone;
  const ModelSettings& s = request.settings ? *request.settings : kNone;
  if (s.thinking_budget_tokens) refuse("thinking_budget_tokens", "is not supported (it is Anthropic's); use reasoning_effort");
  if (s.parallel_tool_calls && !*s.parallel_tool_calls) {
    refuse("parallel_tool_calls", "false cannot be enforced: Ollama has no such option");
  }
  if (s.tool_choice) {
    switch (s.tool_choice->mode) {
      case ToolChoice::Mode::automatic: break;
      case ToolChoice::Mode::none: body.erase("tools"); break;  // no tools: no call
      case ToolChoice::Mode::required:
      case ToolChoice::Mode::tool:
        refuse("tool_choice", "cannot require a tool call: Ollama's chat API has no tool_choice");
    }
  }
  Schema options = Schema::object();
  if (s.temperature) options["temperature"] = *s.temperature;
  if (s.top_p) options["top_p"] = *s.top_p;
  if (s.max_output_tokens) options["num_predict"] = *s.max_output_tokens;
  if (s.stop && !s.stop->empty()) options["stop"] = *s.stop;
  if (s.seed) options["seed"] = *s.seed;
  if (!options.empty()) body["options"] = std::move(options);
  if (s.reasoning_effort) {
    if (*s.reasoning_effort == ReasoningEffort::minimal) refuse("reasoning_effort", "'minimal' is not a level Ollama has (low, medium, high)");
    body["think"] = std::string(to_string(*s.reasoning_effort));
  }
}

std::string text_of(const Json& v) { return v.is_string() ? v.get<std::string>() : std::string(); }

std::string finish_reason_of(std::string_view reason, bool calls) {
  if (calls) return "tool_calls";
  if (reason == "length") return "length";
  return "stop";
}

Usage usage_of(const Json& body) {
  Usage usage;
  usage.input_tokens = detail::token_count(body, "prompt_eval_count", "Ollama reply");
  usage.output_tokens = detail::token_count(body, "eval_count", "Ollama reply");
  return usage;
}

// One tool call as Ollama sends it: whole, arguments an object.
ToolCall tool_call_of(const Json& c) {
  if (!c.is_object()) throw ProviderError(ErrorCode::protocol, "Ollama reply: a tool call is not an object");
  const Json function = detail::object_at(c, "function", "Ollama reply tool call");
  ToolCall call;
  call.id = text_of(c.value("id", Json()));
  call.name = text_of(function.value("name", Json()));
  const auto args = function.find("arguments");
  if (args == function.end() || args->is_null() || (args->is_string() && args->get_ref<const std::string&>().empty())) {
    call.arguments = Json::object();  // no arguments
  } else if (args->is_object()) {
    call.arguments = *args;
  } else {
    // Text the engine parses (bad text is a repair turn), or a value that is
    // not an object, which the engine refuses, telling the model.
    call.arguments = Json::object();
    call.arguments_text = args->is_string() ? args->get<std::string>() : args->dump();
  }
  return call;
}

// The message of a reply line or body: content, thinking and tool calls.
struct Decoded {
  std::string content, thinking;
  std::vector<ToolCall> calls;
};

Decoded decode_message(const Json& line, std::string_view what) {
  Decoded d;
  const Json message = detail::object_at(line, "message", what);
  d.content = text_of(message.value("content", Json()));
  d.thinking = text_of(message.value("thinking", Json()));
  if (auto calls = message.find("tool_calls"); calls != message.end() && !calls->is_null()) {
    if (!calls->is_array()) throw ProviderError(ErrorCode::protocol, std::string(what) + ": message.tool_calls is not an array");
    for (const auto& c : *calls) d.calls.push_back(tool_call_of(c));
  }
  return d;
}

void check_error(const Json& line) {
  if (auto e = line.find("error"); e != line.end() && !e->is_null()) throw detail::stream_error(*e);
}

void fill(ModelResponse& out, const std::string& content, const std::string& thinking) {
  out.message.role = Role::assistant;
  if (!thinking.empty()) out.message.content.emplace_back(ReasoningPart{thinking, {}, {}, std::string(kReasoningProvider)});
  out.message.add_text(content);
}

}  // namespace

Schema ollama_chat_body(const ModelRequest& request, const OllamaOptions& options, bool stream) {
  check_content(request.messages, options.content_limits);
  Schema body = Schema::object();
  body["model"] = options.model.empty() ? std::string(request.model) : options.model;
  Schema messages = Schema::array();
  if (!request.system.empty()) messages.push_back(message_json(Message::system(std::string(request.system))));
  for (const auto& m : request.messages) messages.push_back(message_json(m));
  body["messages"] = std::move(messages);
  body["stream"] = stream;
  if (!request.tools.empty()) {
    Schema tools = Schema::array();
    for (const ToolSpec* spec : request.tools) tools.push_back(function_tool(*spec, SchemaDialect::ollama));
    body["tools"] = std::move(tools);
  }
  if (request.output_schema) body["format"] = *request.output_schema;
  apply_settings(body, request);
  if (request.settings) merge_extra(body, request.settings->extra);
  return body;
}

ModelResponse ollama_chat_response(const Json& body) {
  return detail::read_json("Ollama response", [&] {
    if (!body.is_object()) throw ProviderError(ErrorCode::protocol, "Ollama response is not a JSON object");
    check_error(body);
    const auto done = body.find("done");
    if (done == body.end() || !done->is_boolean() || !done->get<bool>()) {
      throw ProviderError(ErrorCode::protocol, "Ollama response is not a finished chat reply (no \"done\": true)");
    }
    Decoded d = decode_message(body, "Ollama response");
    ModelResponse out;
    fill(out, d.content, d.thinking);
    out.message.tool_calls = std::move(d.calls);
    out.finish_reason = finish_reason_of(text_of(body.value("done_reason", Json())), !out.message.tool_calls.empty());
    out.usage = usage_of(body);
    out.model = text_of(body.value("model", Json()));
    return out;
  });
}

void OllamaStreamAccumulator::on_event(const SseEvent& event) {
  if (done_ || event.data.empty()) return;
  const Json line = parse_provider_json(event.data, "Ollama stream line");
  detail::read_json("Ollama stream line", [&] {
    if (!line.is_object()) throw ProviderError(ErrorCode::protocol, "Ollama stream line is not a JSON object");
    check_error(line);
    Decoded d = decode_message(line, "Ollama stream line");
    if (response_.model.empty()) response_.model = text_of(line.value("model", Json()));  // on every line
    count(d.content.size() + d.thinking.size());
    if (deltas_ && !d.thinking.empty()) deltas_(ReasoningDelta{d.thinking});
    if (deltas_ && !d.content.empty()) deltas_(TextDelta{d.content});
    content_ += d.content;
    thinking_ += d.thinking;
    for (auto& call : d.calls) {
      const std::string arguments = call.arguments_text.empty() ? canonical_dump(call.arguments) : call.arguments_text;
      count(call.name.size() + arguments.size());
      if (response_.message.tool_calls.size() >= 1024) throw ProviderError(ErrorCode::protocol, "Ollama stream: more than 1024 tool calls");
      if (deltas_) deltas_(ToolCallDelta{response_.message.tool_calls.size(), call.id, call.name, arguments});
      response_.message.tool_calls.push_back(std::move(call));
    }
    if (auto done = line.find("done"); done != line.end() && done->is_boolean() && done->get<bool>()) {
      response_.usage = usage_of(line);
      response_.finish_reason =
          finish_reason_of(text_of(line.value("done_reason", Json())), !response_.message.tool_calls.empty());
      done_ = true;
    }
  });
}

void OllamaStreamAccumulator::count(std::size_t bytes) { detail::count_streamed(streamed_, bytes, "Ollama stream"); }

ModelResponse OllamaStreamAccumulator::finish() {
  ModelResponse out = response_;
  out.message.content.clear();
  fill(out, content_, thinking_);
  if (out.finish_reason.empty()) out.finish_reason = out.message.tool_calls.empty() ? "stop" : "tool_calls";
  return out;
}

const ReplyFormat& ollama_chat_reply() {
  static constexpr ReplyFormat format{"Ollama", "a line with \"done\": true", &ollama_chat_response, Framing::ndjson};
  return format;
}

OllamaChatModel::OllamaChatModel(std::shared_ptr<Transport> transport, OllamaOptions options)
    : transport_(std::move(transport)), options_(std::move(options)) {
  options_.base_url = detail::without_trailing_slashes(std::move(options_.base_url));
}

std::unique_ptr<PendingCompletion> OllamaChatModel::begin(const ModelRequest& request, RunContext& ctx) {
  HttpRequest http = detail::json_post(request, options_.base_url + "/api/chat", "authorization", "Bearer ",
                                       options_.api_key, options_.extra_headers);
  http.body = ollama_chat_body(request, options_, options_.stream).dump();
  return detail::start_call(*transport_, std::move(http), ctx.cancellation, ollama_chat_reply(),
                            options_.stream ? std::make_unique<OllamaStreamAccumulator>(detail::run_deltas(ctx)) : nullptr);
}

ModelResponse OllamaChatModel::complete(const ModelRequest& request, RunContext& ctx) {
  return detail::complete_now(*begin(request, ctx));
}

void OllamaChatModel::check_schemas(std::span<const ToolSpec* const> tools, const Schema* output_schema) const {
  providers::check_schemas(tools, output_schema, SchemaDialect::ollama);
}

}  // namespace agentkit::providers
