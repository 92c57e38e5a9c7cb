#include <agentkit/providers/openai_responses.h>

#include <algorithm>

#include <agentkit/errors.h>
#include <agentkit/providers/settings.h>
#include <agentkit/providers/tool_format.h>

#include "pending_call.h"
#include "stream_errors.h"

namespace agentkit::providers {
namespace {

constexpr const char* kProvider = "OpenAI Responses";
constexpr std::string_view kReasoningProvider = "openai";

[[noreturn]] void refuse(const std::string& setting, const std::string& problem) {
  throw UnsupportedSetting(kProvider, setting, problem);
}

std::string text_of(const Json& v) { return v.is_string() ? v.get<std::string>() : std::string(); }

std::string data_url(const std::string& media_type, const std::string& bytes) {
  return "data:" + media_type + ";base64," + base64_encode(bytes);
}

Schema typed(const char* type) {
  Schema part = Schema::object();
  part["type"] = type;
  return part;
}

Schema input_text(std::string text) {
  Schema part = typed("input_text");
  part["text"] = std::move(text);
  return part;
}

// A user message's content: a string when it is all text, else input parts.
Schema user_content(const Message& m) {
  const bool text_only = std::all_of(m.content.begin(), m.content.end(), [](const ContentPart& p) {
    return std::holds_alternative<TextPart>(p) || std::holds_alternative<ReasoningPart>(p);
  });
  if (text_only) return m.text();
  Schema parts = Schema::array();
  for (const auto& p : m.content) {
    if (const auto* t = std::get_if<TextPart>(&p)) {
      parts.push_back(input_text(t->text));
    } else if (const auto* image = std::get_if<ImagePart>(&p)) {
      Schema part = typed("input_image");
      part["image_url"] = image->url.empty() ? data_url(image->media_type, image->data) : image->url;
      part["detail"] = "auto";
      parts.push_back(std::move(part));
    } else if (const auto* file = std::get_if<FilePart>(&p)) {
      Schema part = typed("input_file");
      if (file->data.empty()) {
        part["file_url"] = file->url;
      } else {
        part["filename"] = file->name.empty() ? std::string("file") : file->name;
        part["file_data"] = data_url(file->media_type, file->data);
      }
      parts.push_back(std::move(part));
    } else if (const auto* refusal = std::get_if<RefusalPart>(&p)) {
      parts.push_back(input_text(refusal->text));
    }
  }
  return parts;
}

// Text of a message whose role takes text only; other parts become notes.
std::string text_with_notes(const Message& m, std::string_view where) {
  std::string out;
  for (const auto& p : m.content) {
    if (const auto* t = std::get_if<TextPart>(&p)) {
      out += t->text;
    } else if (const auto* r = std::get_if<RefusalPart>(&p)) {
      out += r->text;
    } else if (std::holds_alternative<ImagePart>(p) || std::holds_alternative<FilePart>(p)) {
      if (!out.empty()) out += '\n';
      out += omitted_note(p, "the Responses API takes " + std::string(part_type(p)) + "s in user messages only, not in " +
                                 std::string(where));
    }
  }
  return out;
}

Schema arguments_text(const ToolCall& c) {
  if (!c.arguments_text.empty()) return c.arguments_text;  // as the model sent it
  return c.arguments.is_null() ? std::string("{}") : canonical_dump(c.arguments);
}

// An assistant turn as output items: its parts in order (runs of text and
// refusals as `message` items, OpenAI reasoning as `reasoning` items), then
// its function calls.
void assistant_items(const Message& m, bool store, Schema& input) {
  Schema content = Schema::array();
  const auto flush = [&] {
    if (content.empty()) return;
    Schema message = typed("message");
    message["role"] = "assistant";
    message["content"] = std::exchange(content, Schema::array());
    input.push_back(std::move(message));
  };
  const auto output_text = [&](std::string text) {
    if (text.empty()) return;
    if (!content.empty() && content.back()["type"] == "output_text") {
      content.back()["text"] = content.back()["text"].get<std::string>() + text;
      return;
    }
    Schema part = typed("output_text");
    part["text"] = std::move(text);
    content.push_back(std::move(part));
  };
  const ReasoningPart* open = nullptr;  // the reasoning item being built (the last item of `input`)
  for (const auto& p : m.content) {
    const auto* r = std::get_if<ReasoningPart>(&p);
    if (r && r->provider != kReasoningProvider) continue;  // another provider's never leaves here
    if (r) {
      if (open && !r->signature.empty() && r->signature == open->signature) {
        // The next summary entry of the same item.
        if (!r->text.empty()) {
          Schema entry = typed("summary_text");
          entry["text"] = r->text;
          input.back()["summary"].push_back(std::move(entry));
        }
        continue;
      }
      open = nullptr;
      // Stateless, OpenAI resolves an item by its encrypted content; one
      // without it would be looked up by id, and not found.
      if (r->redacted.empty() && (!store || r->signature.empty())) continue;
      flush();
      Schema item = typed("reasoning");
      if (!r->signature.empty()) item["id"] = r->signature;
      Schema summary = Schema::array();
      if (!r->text.empty()) {
        Schema entry = typed("summary_text");
        entry["text"] = r->text;
        summary.push_back(std::move(entry));
      }
      item["summary"] = std::move(summary);
      if (!r->redacted.empty()) item["encrypted_content"] = r->redacted;
      input.push_back(std::move(item));
      open = r;
      continue;
    }
    open = nullptr;
    if (const auto* t = std::get_if<TextPart>(&p)) {
      output_text(t->text);
    } else if (const auto* refusal = std::get_if<RefusalPart>(&p)) {
      Schema part = typed("refusal");
      part["refusal"] = refusal->text;
      content.push_back(std::move(part));
    } else {
      output_text(omitted_note(p, "the Responses API takes " + std::string(part_type(p)) +
                                      "s in user messages only, not in assistant turns"));
    }
  }
  flush();
  for (const auto& c : m.tool_calls) {
    Schema call = typed("function_call");
    call["call_id"] = c.id;
    call["name"] = c.name;
    call["arguments"] = arguments_text(c);
    input.push_back(std::move(call));
  }
}

void append_items(const Message& m, bool store, Schema& input) {
  switch (m.role) {
    case Role::system: {
      Schema message = Schema::object();
      message["role"] = "system";
      message["content"] = text_with_notes(m, "system messages");
      input.push_back(std::move(message));
      return;
    }
    case Role::user: {
      Schema message = Schema::object();
      message["role"] = "user";
      message["content"] = user_content(m);
      input.push_back(std::move(message));
      return;
    }
    case Role::assistant:
      assistant_items(m, store, input);
      return;
    case Role::tool: {
      Schema output = typed("function_call_output");
      output["call_id"] = m.tool_call_id;
      output["output"] = text_with_notes(m, "tool results");
      input.push_back(std::move(output));
      return;
    }
  }
}

// A schema as strict mode takes it, or nullopt when strict mode cannot
// express it (it then goes as written, non-strict).
std::optional<Schema> strict_form(const Schema& schema, const std::string& where) {
  try {
    return compile_schema(schema, SchemaDialect::openai_strict, where, false);
  } catch (const ToolDefinitionError&) {
    return std::nullopt;
  }
}

Schema tool_json(const ToolSpec& spec, bool strict) {
  if (!spec.parameters) {
    throw ToolDefinitionError("tool '" + spec.name + "' is loop-invisible (no parameters schema) and cannot be advertised");
  }
  Schema out = typed("function");
  out["name"] = spec.name;
  out["description"] = spec.description;
  std::optional<Schema> rewritten;
  if (strict) rewritten = strict_form(*spec.parameters, "tool '" + spec.name + "' arguments");
  out["parameters"] = rewritten ? std::move(*rewritten) : *spec.parameters;
  out["strict"] = rewritten.has_value();
  return out;
}

bool advertises(const ModelRequest& request, std::string_view name) {
  return std::any_of(request.tools.begin(), request.tools.end(), [&](const ToolSpec* t) { return t->name == name; });
}

void apply_settings(Schema& body, const ModelRequest& request, const OpenAIResponsesOptions& options) {
  static const ModelSettings kNone;
  const ModelSettings& s = request.settings ? *request.settings : kNone;
  if (s.thinking_budget_tokens) refuse("thinking_budget_tokens", "is not supported (it is Anthropic's); use reasoning_effort");
  if (s.seed) refuse("seed", "is not supported: the Responses API has no seed");
  if (s.stop && !s.stop->empty()) refuse("stop", "is not supported: the Responses API has no stop sequences");
  if (s.temperature) body["temperature"] = *s.temperature;
  if (s.top_p) body["top_p"] = *s.top_p;
  if (s.max_output_tokens) body["max_output_tokens"] = *s.max_output_tokens;
  if (s.tool_choice) {
    const ToolChoice& choice = *s.tool_choice;
    if (choice.mode == ToolChoice::Mode::tool && !advertises(request, choice.tool)) {
      refuse("tool_choice", "names the tool '" + choice.tool + "', which this request does not advertise");
    }
    if (choice.mode == ToolChoice::Mode::required && request.tools.empty()) {
      refuse("tool_choice", "is 'required' but the request has no tools");
    }
    if (!request.tools.empty()) {
      switch (choice.mode) {
        case ToolChoice::Mode::automatic: body["tool_choice"] = "auto"; break;
        case ToolChoice::Mode::required: body["tool_choice"] = "required"; break;
        case ToolChoice::Mode::none: body["tool_choice"] = "none"; break;
        case ToolChoice::Mode::tool: {
          Schema named = typed("function");
          named["name"] = choice.tool;
          body["tool_choice"] = std::move(named);
          break;
        }
      }
    }
  }
  if (s.parallel_tool_calls && !request.tools.empty()) body["parallel_tool_calls"] = *s.parallel_tool_calls;
  if (s.reasoning_effort) {
    Schema reasoning = Schema::object();
    reasoning["effort"] = std::string(to_string(*s.reasoning_effort));
    if (!options.reasoning_summary.empty()) reasoning["summary"] = options.reasoning_summary;
    body["reasoning"] = std::move(reasoning);
  }
}

// ------------------------------------------------------------------ replies

Usage usage_of(const Json& u) {
  Usage usage;
  if (u.is_null()) return usage;
  if (!u.is_object()) throw ProviderError(ErrorCode::protocol, "usage is " + std::string(json_type_name(u)) + ", not an object");
  usage.input_tokens = detail::token_count(u, "input_tokens", "usage");
  usage.output_tokens = detail::token_count(u, "output_tokens", "usage");
  if (auto d = u.find("input_tokens_details"); d != u.end() && d->is_object()) {
    usage.cached_tokens = detail::token_count(*d, "cached_tokens", "usage.input_tokens_details");
  }
  return usage;
}

Json array_at(const Json& parent, const char* key, std::string_view what) {
  const auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) return Json::array();
  if (!it->is_array()) {
    throw ProviderError(ErrorCode::protocol, std::string(what) + "." + key + " is " + std::string(json_type_name(*it)) +
                                                 ", not an array");
  }
  return *it;
}

// One output item into `out`.
void decode_item(const Json& item, ModelResponse& out) {
  if (!item.is_object()) throw ProviderError(ErrorCode::protocol, "OpenAI Responses output item is not an object");
  const std::string type = text_of(item.value("type", Json()));
  if (type == "message") {
    for (const auto& part : array_at(item, "content", "OpenAI Responses message")) {
      if (!part.is_object()) throw ProviderError(ErrorCode::protocol, "OpenAI Responses message content is not an object");
      const std::string part_type = text_of(part.value("type", Json()));
      if (part_type == "output_text") {
        out.message.add_text(text_of(part.value("text", Json())));
      } else if (part_type == "refusal") {
        out.message.content.emplace_back(RefusalPart{text_of(part.value("refusal", Json()))});
      }
    }
  } else if (type == "function_call") {
    ToolCall call;
    call.id = text_of(item.value("call_id", Json()));
    if (call.id.empty()) call.id = text_of(item.value("id", Json()));
    call.name = text_of(item.value("name", Json()));
    const auto args = item.find("arguments");
    if (args != item.end() && !args->is_null() && !args->is_string()) {
      call.arguments_text = args->dump();  // not text: the engine refuses it, telling the model
    } else {
      call.arguments_text = text_of(args != item.end() ? *args : Json());
    }
    if (call.arguments_text.empty()) call.arguments_text = "{}";
    out.message.tool_calls.push_back(std::move(call));
  } else if (type == "reasoning") {
    const std::string id = text_of(item.value("id", Json()));
    std::string encrypted = text_of(item.value("encrypted_content", Json()));
    bool any = false;
    for (const auto& entry : array_at(item, "summary", "OpenAI Responses reasoning")) {
      if (!entry.is_object()) throw ProviderError(ErrorCode::protocol, "OpenAI Responses reasoning summary is not an object");
      out.message.content.emplace_back(
          ReasoningPart{text_of(entry.value("text", Json())), id, std::exchange(encrypted, std::string()),
                        std::string(kReasoningProvider)});
      any = true;
    }
    if (!any && (!id.empty() || !encrypted.empty())) {
      out.message.content.emplace_back(ReasoningPart{{}, id, std::move(encrypted), std::string(kReasoningProvider)});
    }
  }
  // Other items (built-in tool calls this adapter never asks for) carry nothing for the run.
}

[[noreturn]] void throw_failed(const Json& response) {
  const auto e = response.find("error");
  if (e != response.end() && !e->is_null()) throw detail::stream_error(*e);
  throw ProviderError(ErrorCode::unavailable, "OpenAI Responses: the response failed, with no error given");
}

// A response object; `implied_status` stands in for a missing status (the
// terminal event's type says it).
ModelResponse decode_response(const Json& r, std::string_view what, std::string_view implied_status,
                              const std::map<std::int64_t, Json>* streamed_items) {
  if (!r.is_object()) throw ProviderError(ErrorCode::protocol, std::string(what) + " is not a JSON object");
  std::string status = text_of(r.value("status", Json()));
  if (status.empty()) status = implied_status;
  if (status == "failed") throw_failed(r);
  if (auto e = r.find("error"); e != r.end() && !e->is_null()) throw detail::stream_error(*e);
  if (status != "completed" && status != "incomplete") {
    throw ProviderError(ErrorCode::protocol, std::string(what) + " is not a finished response (status '" +
                                                 (status.empty() ? std::string("none") : status) + "')");
  }
  ModelResponse out;
  out.message.role = Role::assistant;
  const Json output = array_at(r, "output", what);
  if (output.empty() && streamed_items) {
    for (const auto& [index, item] : *streamed_items) decode_item(item, out);
  } else {
    for (const auto& item : output) decode_item(item, out);
  }
  if (status == "incomplete") {
    const Json details = detail::object_at(r, "incomplete_details", what);
    out.finish_reason = text_of(details.value("reason", Json())) == "content_filter" ? "content_filter" : "length";
  } else {
    out.finish_reason = out.message.tool_calls.empty() ? "stop" : "tool_calls";
  }
  out.usage = usage_of(r.value("usage", Json()));
  out.id = text_of(r.value("id", Json()));
  out.model = text_of(r.value("model", Json()));
  return out;
}

// An `error` event: {"type": "error", "code", "message", "param"} in the
// API reference, the same fields under "error" in live streams.
ProviderError error_event(const Json& event) {
  if (auto e = event.find("error"); e != event.end() && e->is_object()) return detail::stream_error(*e);
  Json fields = Json::object();
  for (const char* key : {"code", "message", "param"}) {
    if (auto it = event.find(key); it != event.end()) fields[key] = *it;
  }
  return detail::stream_error(fields);
}

}  // namespace

Schema openai_responses_body(const ModelRequest& request, const OpenAIResponsesOptions& options, bool stream) {
  check_content(request.messages, options.content_limits);
  Schema body = Schema::object();
  body["model"] = options.model.empty() ? std::string(request.model) : options.model;
  if (!request.system.empty()) body["instructions"] = std::string(request.system);
  Schema input = Schema::array();
  for (const auto& m : request.messages) append_items(m, options.store, input);
  body["input"] = std::move(input);
  if (!request.tools.empty()) {
    Schema tools = Schema::array();
    for (const ToolSpec* spec : request.tools) tools.push_back(tool_json(*spec, options.strict_tools));
    body["tools"] = std::move(tools);
  }
  body["store"] = options.store;
  body["stream"] = stream;
  if (options.include_encrypted_reasoning) body["include"] = Schema::array({"reasoning.encrypted_content"});
  if (!options.previous_response_id.empty()) body["previous_response_id"] = options.previous_response_id;
  if (request.output_schema) {
    Schema format = typed("json_schema");
    format["name"] = std::string(kFinalAnswerTool);
    std::optional<Schema> strict;
    if (options.strict_tools) strict = strict_form(*request.output_schema, "the output schema");
    format["schema"] = strict ? std::move(*strict) : *request.output_schema;
    format["strict"] = strict.has_value();
    Schema text = Schema::object();
    text["format"] = std::move(format);
    body["text"] = std::move(text);
  }
  apply_settings(body, request, options);
  if (request.settings) merge_extra(body, request.settings->extra);
  return body;
}

ModelResponse openai_responses_response(const Json& body) {
  return detail::read_json("OpenAI Responses response", [&] {
    return decode_response(body, "OpenAI Responses response", "", nullptr);
  });
}

void OpenAIResponsesStreamAccumulator::on_event(const SseEvent& event) {
  if (done_ || event.data.empty()) return;
  const Json data = parse_provider_json(event.data, "OpenAI Responses stream event");
  detail::read_json("OpenAI Responses stream event", [&] {
    if (!data.is_object()) throw ProviderError(ErrorCode::protocol, "OpenAI Responses stream event is not a JSON object");
    std::string type = text_of(data.value("type", Json()));
    if (type.empty()) type = event.event;
    const auto output_index = [&]() -> std::optional<std::int64_t> {
      const auto it = data.find("output_index");
      if (it == data.end() || it->is_null()) return std::nullopt;
      return json_integer<std::int64_t>(*it, "output_index");
    };
    if (type == "response.output_text.delta" || type == "response.reasoning_summary_text.delta" ||
        type == "response.reasoning_text.delta" || type == "response.refusal.delta") {
      const std::string delta = text_of(data.value("delta", Json()));
      count(delta.size());
      if (!deltas_ || delta.empty()) return;
      if (type == "response.output_text.delta") {
        deltas_(TextDelta{delta});
      } else if (type != "response.refusal.delta") {
        deltas_(ReasoningDelta{delta});
      }
    } else if (type == "response.output_item.added") {
      const Json item = detail::object_at(data, "item", "OpenAI Responses stream event");
      if (text_of(item.value("type", Json())) != "function_call") return;
      if (calls_.size() >= 1024) throw ProviderError(ErrorCode::protocol, "OpenAI Responses stream: more than 1024 tool calls");
      Call call{calls_.size(), text_of(item.value("call_id", Json())), text_of(item.value("name", Json()))};
      const std::string id = text_of(item.value("id", Json()));
      count(id.size() + call.call_id.size() + call.name.size());
      if (auto at = output_index()) call_at_[*at] = id;
      if (deltas_) deltas_(ToolCallDelta{call.index, call.call_id, call.name, ""});
      calls_[id] = std::move(call);
    } else if (type == "response.function_call_arguments.delta") {
      // Only the item id and output index: the call is the one added before.
      auto it = calls_.find(text_of(data.value("item_id", Json())));
      if (it == calls_.end()) {
        if (auto at = output_index(); at && call_at_.count(*at)) it = calls_.find(call_at_[*at]);
      }
      if (it == calls_.end()) {
        throw ProviderError(ErrorCode::protocol, "OpenAI Responses stream: arguments for a function call never announced");
      }
      const auto delta = data.find("delta");
      if (delta == data.end() || !delta->is_string()) {
        throw ProviderError(ErrorCode::protocol, "OpenAI Responses stream: a function_call_arguments delta is not a string");
      }
      const std::string& fragment = delta->get_ref<const std::string&>();
      count(fragment.size());
      if (deltas_ && !fragment.empty()) deltas_(ToolCallDelta{it->second.index, it->second.call_id, it->second.name, fragment});
    } else if (type == "response.output_item.done") {
      const auto at = output_index();
      const auto item = data.find("item");
      if (!at || item == data.end() || !item->is_object()) {
        throw ProviderError(ErrorCode::protocol, "OpenAI Responses stream: response.output_item.done without its item");
      }
      count(event.data.size());
      items_[*at] = *item;
    } else if (type == "response.completed" || type == "response.incomplete") {
      const auto r = data.find("response");
      if (r == data.end()) throw ProviderError(ErrorCode::protocol, "OpenAI Responses stream: " + type + " without its response");
      response_ = decode_response(*r, "OpenAI Responses stream " + type, type == "response.completed" ? "completed" : "incomplete",
                                  &items_);
      done_ = true;
    } else if (type == "response.failed") {
      throw_failed(detail::object_at(data, "response", "OpenAI Responses stream event"));
    } else if (type == "error") {
      throw error_event(data);
    }
    // Other events (created, in_progress, content_part.*, *.done) repeat what
    // the terminal event carries.
  });
}

void OpenAIResponsesStreamAccumulator::count(std::size_t bytes) { detail::count_streamed(streamed_, bytes, "OpenAI Responses stream"); }

ModelResponse OpenAIResponsesStreamAccumulator::finish() {
  if (done_) return response_;
  // Cut before its terminal event: ReplyReader refuses it as truncated.
  ModelResponse partial;
  partial.message.role = Role::assistant;
  return partial;
}

const ReplyFormat& openai_responses_reply() {
  static constexpr ReplyFormat format{"OpenAI Responses", "response.completed or response.incomplete",
                                      &openai_responses_response};
  return format;
}

OpenAIResponsesModel::OpenAIResponsesModel(std::shared_ptr<Transport> transport, OpenAIResponsesOptions options)
    : transport_(std::move(transport)), options_(std::move(options)) {
  options_.base_url = detail::without_trailing_slashes(std::move(options_.base_url));
}

std::unique_ptr<PendingCompletion> OpenAIResponsesModel::begin(const ModelRequest& request, RunContext& ctx) {
  HttpRequest http = detail::json_post(request, options_.base_url + "/responses", "authorization", "Bearer ",
                                       options_.api_key, options_.extra_headers);
  http.body = openai_responses_body(request, options_, options_.stream).dump();
  return detail::start_call(*transport_, std::move(http), ctx.cancellation, openai_responses_reply(),
                            options_.stream ? std::make_unique<OpenAIResponsesStreamAccumulator>(detail::run_deltas(ctx))
                                            : nullptr);
}

ModelResponse OpenAIResponsesModel::complete(const ModelRequest& request, RunContext& ctx) {
  return detail::complete_now(*begin(request, ctx));
}

void OpenAIResponsesModel::check_schemas(std::span<const ToolSpec* const> tools, const Schema* output_schema) const {
  providers::check_schemas(tools, output_schema, SchemaDialect::openai);
}

}  // namespace agentkit::providers
