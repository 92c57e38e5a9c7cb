#include <agentkit/providers/gemini.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <utility>

#include <agentkit/errors.h>
#include <agentkit/providers/settings.h>
#include <agentkit/providers/tool_format.h>

#include "pending_call.h"
#include "stream_errors.h"

namespace agentkit::providers {
namespace detail {

// One model turn as Gemini sends it, part by part, folded into agentkit's
// message (see "Thought signatures" in gemini.h); shared by the whole-body
// and the streamed decoding, so both give the same message for the same parts.
struct GeminiTurn {
  std::vector<ContentPart> content;
  std::vector<ToolCall> calls;
  std::vector<std::string> call_signatures;  // one per call, "" when unsigned
  Usage usage;
  std::string finish_reason, finish_message, response_id, model_version;
  bool had_candidate = false;
  std::size_t streamed = 0;

  void count(std::size_t bytes) { count_streamed(streamed, bytes, "Gemini reply"); }

  ReasoningPart* last_thought() {
    if (content.empty()) return nullptr;
    auto* r = std::get_if<ReasoningPart>(&content.back());
    return r && r->provider == "gemini" && !r->text.empty() ? r : nullptr;
  }

  // A text or thought part (or a fragment of one, streamed). A fragment
  // without a signature continues the part before it; a signed one starts
  // its own part, so its signature goes back on exactly that text.
  void add_text(const std::string& text, const std::string& signature, bool thought) {
    count(text.size() + signature.size());
    if (thought) {
      ReasoningPart* last = signature.empty() ? last_thought() : nullptr;
      if (last) {
        last->text += text;
      } else if (!text.empty() || !signature.empty()) {
        content.emplace_back(ReasoningPart{text, signature, {}, "gemini"});
      }
      return;
    }
    if (signature.empty()) {
      if (text.empty()) return;
      if (!content.empty() && std::holds_alternative<TextPart>(content.back())) {
        std::get<TextPart>(content.back()).text += text;
      } else {
        content.emplace_back(TextPart{text});
      }
      return;
    }
    content.emplace_back(ReasoningPart{{}, signature, {}, "gemini"});
    content.emplace_back(TextPart{text});
  }

  // An image the model generated (an inlineData part of a reply); a signed
  // one is preceded by its signature, as a signed text part is.
  void add_image(ImagePart image, const std::string& signature) {
    count(image.data.size() + signature.size());
    if (!signature.empty()) content.emplace_back(ReasoningPart{{}, signature, {}, "gemini"});
    content.emplace_back(std::move(image));
  }

  // `arguments`: the call's arguments as JSON text, as counted against the cap.
  void add_call(ToolCall call, std::string signature, std::size_t arguments) {
    if (calls.size() >= 1024) throw ProviderError(ErrorCode::protocol, "Gemini reply: more than 1024 function calls");
    count(call.name.size() + arguments + signature.size());
    calls.push_back(std::move(call));
    call_signatures.push_back(std::move(signature));
  }

  Message message() const {
    Message m;
    m.role = Role::assistant;
    m.content = content;
    // The calls' signatures close the content, in call order, up to the
    // last signed call.
    std::size_t signed_calls = call_signatures.size();
    while (signed_calls > 0 && call_signatures[signed_calls - 1].empty()) --signed_calls;
    for (std::size_t k = 0; k < signed_calls; ++k) m.content.emplace_back(ReasoningPart{{}, call_signatures[k], {}, "gemini"});
    m.tool_calls = calls;
    return m;
  }
};

}  // namespace detail

namespace {

using detail::GeminiTurn;

constexpr const char* kProvider = "Gemini";
constexpr std::string_view kReasoningProvider = "gemini";

[[noreturn]] void refuse(const std::string& setting, const std::string& problem) {
  throw UnsupportedSetting(kProvider, setting, problem);
}

bool synthetic(std::string_view id) { return id.starts_with(kGeminiSyntheticIdPrefix); }

// A ReasoningPart of Gemini's that only carries the signature of another part.
bool signature_only(const ContentPart& p) {
  const auto* r = std::get_if<ReasoningPart>(&p);
  return r && r->provider == kReasoningProvider && r->text.empty();
}

Schema text_part(const std::string& text) {
  Schema part = Schema::object();
  part["text"] = text;
  return part;
}

// A Files API file (or a Cloud Storage object): what fileData.fileUri takes.
bool gemini_file_uri(std::string_view url) {
  return url.starts_with("https://generativelanguage.googleapis.com/") || url.starts_with("gs://");
}

bool inline_type(std::string_view type) {
  return type == "application/pdf" || type.starts_with("text/") || type.starts_with("image/") ||
         type.starts_with("audio/") || type.starts_with("video/");
}

// An image or file as an inlineData or fileData part, or a text note.
template <class P>
Schema media_part(const P& p, const ContentPart& part) {
  if (!p.url.empty()) {
    if (!gemini_file_uri(p.url) || p.media_type.empty()) {
      return text_part(omitted_note(part, "Gemini takes files as bytes or as Files API URIs with a media type"));
    }
    Schema data = Schema::object();
    data["mimeType"] = p.media_type;
    data["fileUri"] = p.url;
    Schema out = Schema::object();
    out["fileData"] = std::move(data);
    return out;
  }
  if (!inline_type(p.media_type)) {
    return text_part(omitted_note(part, "Gemini takes PDF, text, image, audio and video files inline"));
  }
  Schema data = Schema::object();
  data["mimeType"] = p.media_type;
  data["data"] = base64_encode(p.data);
  Schema out = Schema::object();
  out["inlineData"] = std::move(data);
  return out;
}

Schema media_of(const ContentPart& p) {
  if (const auto* image = std::get_if<ImagePart>(&p)) return media_part(*image, p);
  return media_part(std::get<FilePart>(p), p);
}

// A user turn's parts: reasoning never goes here.
Schema user_parts(const Message& m) {
  Schema parts = Schema::array();
  for (const auto& p : m.content) {
    if (const auto* t = std::get_if<TextPart>(&p)) {
      parts.push_back(text_part(t->text));
    } else if (const auto* r = std::get_if<RefusalPart>(&p)) {
      parts.push_back(text_part(r->text));
    } else if (std::holds_alternative<ImagePart>(p) || std::holds_alternative<FilePart>(p)) {
      parts.push_back(media_of(p));
    }
  }
  if (parts.empty()) parts.push_back(text_part(""));  // Gemini refuses a content without parts
  return parts;
}

// Arguments as an object for functionCall.args: the call's text when it is
// one (a history from another provider), else its parsed arguments ({} for
// a call the engine refused: its result says why).
Schema args_of(const ToolCall& c) {
  Schema args = c.arguments.is_object() ? Schema(c.arguments) : Schema::object();
  if (!c.arguments_text.empty()) {
    try {
      if (Schema parsed = Schema::parse(c.arguments_text); parsed.is_object()) args = std::move(parsed);
    } catch (const Schema::exception&) {
    }
  }
  return args;
}

// An inlineData part of a reply: an image the model generated. Anything
// but image bytes in valid base64 is the reply's error, not dropped.
ImagePart image_of(const Json& inline_data, std::string_view what) {
  const auto field = [&](const char* key) {
    const auto it = inline_data.find(key);
    if (it == inline_data.end() || !it->is_string()) {
      throw ProviderError(ErrorCode::protocol, std::string(what) + ": inlineData without a string " + key);
    }
    return it->get_ref<const std::string&>();
  };
  const std::string& media_type = field("mimeType");
  if (!media_type.starts_with("image/")) {
    throw ProviderError(ErrorCode::protocol, std::string(what) + ": inlineData of type '" + sanitize_utf8(media_type.substr(0, 60)) +
                                                 "', which this adapter does not take from a model");
  }
  auto bytes = base64_decode(field("data"));
  if (!bytes) throw ProviderError(ErrorCode::protocol, std::string(what) + ": inlineData is not valid base64");
  ImagePart image{media_type, std::move(*bytes), {}};
  try {
    check_part(image);  // what a RunState document holding the reply will demand of it
  } catch (const InvalidContent& e) {
    throw ProviderError(ErrorCode::protocol, std::string(what) + ": inlineData: " + e.what());
  }
  return image;
}

// An assistant turn as "model" parts, each signature back on its own part
// (the layout is described in gemini.h).
Schema model_parts(const Message& m) {
  const auto& content = m.content;
  std::size_t end = content.size();
  while (end > 0 && signature_only(content[end - 1])) --end;
  Schema parts = Schema::array();
  std::string pending;  // the signature of the next part
  const auto push = [&](Schema part) {
    if (!pending.empty()) {
      if (part.contains("thoughtSignature")) {
        Schema carrier = text_part("");
        carrier["thoughtSignature"] = std::exchange(pending, std::string());
        parts.push_back(std::move(carrier));
      } else {
        part["thoughtSignature"] = std::exchange(pending, std::string());
      }
    }
    parts.push_back(std::move(part));
  };
  for (std::size_t i = 0; i < end; ++i) {
    const ContentPart& p = content[i];
    if (const auto* r = std::get_if<ReasoningPart>(&p)) {
      if (r->provider != kReasoningProvider) continue;  // another provider's never leaves here
      if (r->text.empty()) {
        if (!r->signature.empty()) {
          if (!pending.empty()) push(text_part(""));
          pending = r->signature;
        }
        continue;
      }
      Schema thought = text_part(r->text);
      thought["thought"] = true;
      if (!r->signature.empty()) thought["thoughtSignature"] = r->signature;
      push(std::move(thought));
    } else if (const auto* t = std::get_if<TextPart>(&p)) {
      if (!t->text.empty() || !pending.empty()) push(text_part(t->text));
    } else if (const auto* refusal = std::get_if<RefusalPart>(&p)) {
      push(text_part(refusal->text));
    } else if (std::holds_alternative<ImagePart>(p)) {
      push(media_of(p));  // an image the model generated goes back as it came
    } else {
      push(text_part(omitted_note(p, "Gemini takes files in user turns and tool results")));
    }
  }
  std::vector<std::string> signatures;
  for (std::size_t i = end; i < content.size(); ++i) signatures.push_back(std::get<ReasoningPart>(content[i]).signature);
  for (std::size_t k = 0; k < m.tool_calls.size(); ++k) {
    const ToolCall& c = m.tool_calls[k];
    Schema call = Schema::object();
    call["name"] = c.name;
    call["args"] = args_of(c);
    if (!c.id.empty() && !synthetic(c.id)) call["id"] = c.id;
    Schema part = Schema::object();
    part["functionCall"] = std::move(call);
    if (k < signatures.size() && !signatures[k].empty()) part["thoughtSignature"] = signatures[k];
    push(std::move(part));
  }
  // Signatures with no part of theirs left (a hand-built history): on empty
  // text parts, never lost.
  for (std::size_t k = m.tool_calls.size(); k < signatures.size(); ++k) {
    if (signatures[k].empty()) continue;
    Schema carrier = text_part("");
    carrier["thoughtSignature"] = signatures[k];
    push(std::move(carrier));
  }
  if (!pending.empty()) push(text_part(""));
  if (parts.empty()) parts.push_back(text_part(""));
  return parts;
}

// One tool result: its functionResponse part, and its images and files,
// which follow the group's responses.
Schema function_response(const Message& m, Schema& media) {
  std::string text;
  for (const auto& p : m.content) {
    if (const auto* t = std::get_if<TextPart>(&p)) {
      text += t->text;
    } else if (const auto* r = std::get_if<RefusalPart>(&p)) {
      text += r->text;
    } else if (std::holds_alternative<ImagePart>(p) || std::holds_alternative<FilePart>(p)) {
      Schema part = media_of(p);
      if (part.contains("text")) {
        if (!text.empty()) text += '\n';
        text += part["text"].get<std::string>();
      } else {
        media.push_back(std::move(part));
      }
    }
  }
  Schema response = Schema::object();
  response[m.is_error ? "error" : "output"] = std::move(text);
  Schema call = Schema::object();
  if (!m.tool_call_id.empty() && !synthetic(m.tool_call_id)) call["id"] = m.tool_call_id;
  call["name"] = m.tool_name;
  call["response"] = std::move(response);
  Schema part = Schema::object();
  part["functionResponse"] = std::move(call);
  return part;
}

Schema declaration(const ToolSpec& spec) {
  if (!spec.parameters) {
    throw ToolDefinitionError("tool '" + spec.name + "' is loop-invisible (no parameters schema) and cannot be advertised");
  }
  Schema parameters = compile_schema(*spec.parameters, SchemaDialect::gemini, "tool '" + spec.name + "' arguments");
  Schema out = Schema::object();
  out["name"] = spec.name;
  out["description"] = spec.description;
  // A tool without arguments declares none: older Gemini models refuse an
  // OBJECT with no properties ("should be non-empty for OBJECT type").
  const bool takes_arguments =
      (parameters.contains("properties") && !parameters["properties"].empty()) || parameters.contains("anyOf");
  if (takes_arguments) out["parameters"] = std::move(parameters);
  return out;
}

void apply_settings(Schema& body, const ModelRequest& request) {
  static const ModelSettings kNone;
  const ModelSettings& s = request.settings ? *request.settings : kNone;
  if (s.parallel_tool_calls && !*s.parallel_tool_calls) {
    refuse("parallel_tool_calls", "false cannot be enforced: Gemini has no such option");
  }
  Schema config = Schema::object();
  if (s.temperature) config["temperature"] = *s.temperature;
  if (s.top_p) config["topP"] = *s.top_p;
  if (s.max_output_tokens) config["maxOutputTokens"] = *s.max_output_tokens;
  if (s.stop && !s.stop->empty()) {
    if (s.stop->size() > 5) refuse("stop", "has " + std::to_string(s.stop->size()) + " sequences; Gemini takes at most 5");
    config["stopSequences"] = *s.stop;
  }
  if (s.seed) {
    if (*s.seed < std::numeric_limits<std::int32_t>::min() || *s.seed > std::numeric_limits<std::int32_t>::max()) {
      refuse("seed", "must fit in 32 bits for Gemini, not " + std::to_string(*s.seed));
    }
    config["seed"] = *s.seed;
  }
  if (s.thinking_budget_tokens && s.reasoning_effort) {
    refuse("reasoning_effort", "cannot be combined with thinking_budget_tokens: Gemini takes a thinkingBudget or a "
                               "thinkingLevel, not both");
  }
  if (s.thinking_budget_tokens || s.reasoning_effort) {
    Schema thinking = Schema::object();
    if (s.thinking_budget_tokens) thinking["thinkingBudget"] = *s.thinking_budget_tokens;
    if (s.reasoning_effort) thinking["thinkingLevel"] = std::string(to_string(*s.reasoning_effort));
    thinking["includeThoughts"] = true;
    config["thinkingConfig"] = std::move(thinking);
  }
  if (request.output_schema) {
    config["responseMimeType"] = "application/json";
    config["responseSchema"] = compile_schema(*request.output_schema, SchemaDialect::gemini, "the output schema", false);
  }
  if (!config.empty()) body["generationConfig"] = std::move(config);

  if (!s.tool_choice) return;
  const ToolChoice& c = *s.tool_choice;
  const auto advertises = [&](std::string_view name) {
    return std::any_of(request.tools.begin(), request.tools.end(), [&](const ToolSpec* t) { return t->name == name; });
  };
  Schema calling = Schema::object();
  switch (c.mode) {
    case ToolChoice::Mode::automatic: calling["mode"] = "AUTO"; break;
    case ToolChoice::Mode::none: calling["mode"] = "NONE"; break;
    case ToolChoice::Mode::required:
      if (request.tools.empty()) refuse("tool_choice", "is 'required' but the request has no tools");
      calling["mode"] = "ANY";
      break;
    case ToolChoice::Mode::tool:
      if (!advertises(c.tool)) refuse("tool_choice", "names the tool '" + c.tool + "', which this request does not advertise");
      calling["mode"] = "ANY";
      calling["allowedFunctionNames"] = Schema::array({c.tool});
      break;
  }
  if (request.tools.empty()) return;  // no tools: nothing to choose among
  body["toolConfig"]["functionCallingConfig"] = std::move(calling);
}

// ------------------------------------------------------------------ replies

std::string text_of(const Json& v) { return v.is_string() ? v.get<std::string>() : std::string(); }

std::int64_t sum(std::int64_t a, std::int64_t b, std::string_view what) {
  if (a > std::numeric_limits<std::int64_t>::max() - b) throw JsonError(std::string(what) + " is out of range");
  return a + b;
}

Usage usage_of(const Json& u) {
  if (!u.is_object()) throw ProviderError(ErrorCode::protocol, "Gemini usageMetadata is " + std::string(json_type_name(u)) + ", not an object");
  constexpr std::string_view what = "usageMetadata";
  Usage usage;
  usage.input_tokens = sum(detail::token_count(u, "promptTokenCount", what),
                           detail::token_count(u, "toolUsePromptTokenCount", what), what);
  usage.output_tokens = sum(detail::token_count(u, "candidatesTokenCount", what),
                            detail::token_count(u, "thoughtsTokenCount", what), what);
  usage.cached_tokens = detail::token_count(u, "cachedContentTokenCount", what);
  return usage;
}

ToolCall call_of(const Json& fc, const GeminiTurn& turn) {
  if (!fc.is_object()) throw ProviderError(ErrorCode::protocol, "Gemini reply: a functionCall is not an object");
  ToolCall call;
  call.id = text_of(fc.value("id", Json()));
  call.name = text_of(fc.value("name", Json()));
  if (call.id.empty()) {
    call.id = std::string(kGeminiSyntheticIdPrefix) + (turn.response_id.empty() ? "" : turn.response_id.substr(0, 64) + "_") +
              std::to_string(turn.calls.size());
  }
  const auto args = fc.find("args");
  if (args == fc.end() || args->is_null()) {
    call.arguments = Json::object();
  } else if (args->is_object()) {
    call.arguments = *args;
  } else {
    // Not an object: text the engine refuses, telling the model.
    call.arguments = Json::object();
    call.arguments_text = args->dump();
  }
  return call;
}

// One GenerateContentResponse (a whole reply, or one chunk of a stream)
// into `turn`; deltas, when given, receive its fragments.
void read_chunk(const Json& body, std::string_view what, GeminiTurn& turn, const DeltaSink* deltas) {
  if (!body.is_object()) throw ProviderError(ErrorCode::protocol, std::string(what) + " is not a JSON object");
  if (auto e = body.find("error"); e != body.end() && !e->is_null()) throw detail::stream_error(*e);
  if (auto id = body.find("responseId"); id != body.end() && id->is_string()) turn.response_id = id->get<std::string>();
  if (auto version = body.find("modelVersion"); version != body.end() && version->is_string()) {
    turn.model_version = version->get<std::string>();
  }
  if (auto u = body.find("usageMetadata"); u != body.end() && !u->is_null()) turn.usage = usage_of(*u);
  const auto candidates = body.find("candidates");
  if (candidates == body.end() || candidates->is_null() || (candidates->is_array() && candidates->empty())) {
    const Json feedback = detail::object_at(body, "promptFeedback", what);
    if (const std::string reason = text_of(feedback.value("blockReason", Json())); !reason.empty()) {
      std::string message = "Gemini blocked the prompt (blockReason " + reason + ")";
      if (const std::string m = text_of(feedback.value("blockReasonMessage", Json())); !m.empty()) message += ": " + m;
      throw ProviderError(ErrorCode::permission_denied, message, 0, false, std::nullopt, turn.usage);
    }
    return;
  }
  if (!candidates->is_array()) throw ProviderError(ErrorCode::protocol, std::string(what) + ": candidates is not an array");
  const Json& candidate = candidates->front();
  if (!candidate.is_object()) throw ProviderError(ErrorCode::protocol, std::string(what) + ": a candidate is not an object");
  turn.had_candidate = true;
  const Json content = detail::object_at(candidate, "content", what);
  if (auto parts = content.find("parts"); parts != content.end() && !parts->is_null()) {
    if (!parts->is_array()) throw ProviderError(ErrorCode::protocol, std::string(what) + ": content.parts is not an array");
    for (const auto& part : *parts) {
      if (!part.is_object()) throw ProviderError(ErrorCode::protocol, std::string(what) + ": a part is not an object");
      const std::string signature = text_of(part.value("thoughtSignature", Json()));
      if (auto fc = part.find("functionCall"); fc != part.end() && !fc->is_null()) {
        ToolCall call = call_of(*fc, turn);
        std::string arguments = call.arguments_text.empty() ? canonical_dump(call.arguments) : call.arguments_text;
        const std::size_t index = turn.calls.size();
        const std::size_t bytes = arguments.size();
        if (deltas && *deltas) (*deltas)(ToolCallDelta{index, call.id, call.name, std::move(arguments)});
        turn.add_call(std::move(call), signature, bytes);
      } else if (auto text = part.find("text"); text != part.end() && text->is_string()) {
        const bool thought = part.value("thought", Json()) == true;
        const std::string& t = text->get_ref<const std::string&>();
        turn.add_text(t, signature, thought);
        if (deltas && *deltas && !t.empty()) {
          if (thought) {
            (*deltas)(ReasoningDelta{t});
          } else {
            (*deltas)(TextDelta{t});
          }
        }
      } else if (auto inline_data = part.find("inlineData"); inline_data != part.end() && inline_data->is_object()) {
        turn.add_image(image_of(*inline_data, what), signature);
      }
      // Other parts (executableCode, codeExecutionResult, ...) answer
      // features this adapter never asks for.
    }
  }
  if (auto reason = candidate.find("finishReason"); reason != candidate.end() && reason->is_string() && !reason->empty()) {
    turn.finish_reason = reason->get<std::string>();
    turn.finish_message = text_of(candidate.value("finishMessage", Json()));
  }
}

bool one_of(std::string_view value, std::initializer_list<std::string_view> options) {
  return std::find(options.begin(), options.end(), value) != options.end();
}

// A finish reason that says the model's output was a failed call: the
// error it is (nothing usable came back).
std::optional<ProviderError> failed_call(const GeminiTurn& turn) {
  if (!one_of(turn.finish_reason, {"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"})) {
    return std::nullopt;
  }
  std::string message = "Gemini ended the reply with finishReason " + turn.finish_reason;
  if (!turn.finish_message.empty()) message += ": " + turn.finish_message.substr(0, 300);
  return ProviderError(ErrorCode::protocol, message, 0, false, std::nullopt, turn.usage);
}

ModelResponse response_of(const GeminiTurn& turn) {
  ModelResponse out;
  out.message = turn.message();
  out.usage = turn.usage;
  out.id = turn.response_id;
  out.model = turn.model_version;
  const std::string& reason = turn.finish_reason;
  const bool calls = !out.message.tool_calls.empty();
  if (reason == "MAX_TOKENS") {
    out.finish_reason = "length";
  } else if (one_of(reason, {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
                             "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "LANGUAGE"})) {
    out.finish_reason = "content_filter";
    std::string why = "Gemini stopped the reply (finishReason " + reason + ")";
    if (!turn.finish_message.empty()) why += ": " + turn.finish_message;
    out.message.content.emplace_back(RefusalPart{std::move(why)});
  } else if (reason.empty() || reason == "STOP" || reason == "FINISH_REASON_UNSPECIFIED") {
    out.finish_reason = calls ? "tool_calls" : "stop";
  } else {
    out.finish_reason = calls ? "tool_calls" : "error";  // OTHER, a failed call, a reason added later
  }
  return out;
}

}  // namespace

Schema gemini_generate_body(const ModelRequest& request, const GeminiOptions& options) {
  check_content(request.messages, options.content_limits);
  Schema body = Schema::object();
  if (!request.system.empty()) {
    Schema system = Schema::object();
    system["parts"] = Schema::array({text_part(std::string(request.system))});
    body["systemInstruction"] = std::move(system);
  }
  Schema contents = Schema::array();
  Schema responses = Schema::array(), media = Schema::array();  // the tool results of one turn
  const auto close_results = [&] {
    if (responses.empty()) return;
    for (auto& m : media) responses.push_back(std::move(m));
    Schema content = Schema::object();
    content["role"] = "user";
    content["parts"] = std::exchange(responses, Schema::array());
    media = Schema::array();
    contents.push_back(std::move(content));
  };
  for (const auto& m : request.messages) {
    if (m.role == Role::tool) {
      responses.push_back(function_response(m, media));
      continue;
    }
    close_results();
    Schema content = Schema::object();
    content["role"] = m.role == Role::assistant ? "model" : "user";
    content["parts"] = m.role == Role::assistant ? model_parts(m) : user_parts(m);
    contents.push_back(std::move(content));
  }
  close_results();
  body["contents"] = std::move(contents);
  if (!request.tools.empty()) {
    Schema declarations = Schema::array();
    for (const ToolSpec* spec : request.tools) declarations.push_back(declaration(*spec));
    Schema tool = Schema::object();
    tool["functionDeclarations"] = std::move(declarations);
    body["tools"] = Schema::array({std::move(tool)});
  }
  apply_settings(body, request);
  if (request.settings) merge_extra(body, request.settings->extra);
  return body;
}

ModelResponse gemini_generate_response(const Json& body) {
  return detail::read_json("Gemini response", [&] {
    GeminiTurn turn;
    read_chunk(body, "Gemini response", turn, nullptr);
    if (!turn.had_candidate) throw ProviderError(ErrorCode::protocol, "Gemini response has no candidates");
    if (auto e = failed_call(turn)) throw *e;
    return response_of(turn);
  });
}

GeminiStreamAccumulator::GeminiStreamAccumulator(DeltaSink deltas)
    : deltas_(std::move(deltas)), turn_(std::make_unique<detail::GeminiTurn>()) {}

GeminiStreamAccumulator::~GeminiStreamAccumulator() = default;

void GeminiStreamAccumulator::on_event(const SseEvent& event) {
  if (done_ || event.data.empty()) return;
  const Json chunk = parse_provider_json(event.data, "Gemini stream event");
  detail::read_json("Gemini stream event", [&] {
    read_chunk(chunk, "Gemini stream event", *turn_, &deltas_);
    if (turn_->finish_reason.empty()) return;
    if (auto e = failed_call(*turn_)) throw *e;
    done_ = true;
  });
}

ModelResponse GeminiStreamAccumulator::finish() { return response_of(*turn_); }

const ReplyFormat& gemini_reply() {
  static constexpr ReplyFormat format{"Gemini", "a chunk with a finishReason", &gemini_generate_response, Framing::sse};
  return format;
}

GeminiModel::GeminiModel(std::shared_ptr<Transport> transport, GeminiOptions options)
    : transport_(std::move(transport)), options_(std::move(options)) {
  options_.base_url = detail::without_trailing_slashes(std::move(options_.base_url));
}

std::unique_ptr<PendingCompletion> GeminiModel::begin(const ModelRequest& request, RunContext& ctx) {
  std::string model = options_.model.empty() ? std::string(request.model) : options_.model;
  if (model.starts_with("models/")) model.erase(0, 7);
  const bool plain = !model.empty() && std::all_of(model.begin(), model.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '.' || c == '_';
  });
  if (!plain) {
    throw ProviderError(ErrorCode::invalid_argument,
                        "Gemini model name '" + sanitize_utf8(model.substr(0, 80)) +
                            "' is not usable in a URL: letters, digits, '-', '.' and '_' only");
  }
  HttpRequest http = detail::json_post(
      request, options_.base_url + "/models/" + model + (options_.stream ? ":streamGenerateContent?alt=sse" : ":generateContent"),
      "x-goog-api-key", "", options_.api_key, options_.extra_headers);
  http.body = gemini_generate_body(request, options_).dump();
  return detail::start_call(*transport_, std::move(http), ctx.cancellation, gemini_reply(),
                            options_.stream ? std::make_unique<GeminiStreamAccumulator>(detail::run_deltas(ctx)) : nullptr);
}

ModelResponse GeminiModel::complete(const ModelRequest& request, RunContext& ctx) {
  return detail::complete_now(*begin(request, ctx));
}

void GeminiModel::check_schemas(std::span<const ToolSpec* const> tools, const Schema* output_schema) const {
  providers::check_schemas(tools, output_schema, SchemaDialect::gemini);
}

}  // namespace agentkit::providers
