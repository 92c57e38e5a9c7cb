#include <agentkit/providers/anthropic.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>

#include <agentkit/providers/settings.h>
#include <agentkit/providers/tool_format.h>

#include "pending_call.h"
#include "stream_errors.h"

namespace agentkit::providers {
namespace {

Usage usage_of(const Json& u) {
  Usage usage;
  if (u.is_null()) return usage;
  if (!u.is_object()) throw ProviderError(ErrorCode::protocol, "usage is " + std::string(json_type_name(u)) + ", not an object");
  usage.input_tokens = detail::token_count(u, "input_tokens", "usage");
  usage.output_tokens = detail::token_count(u, "output_tokens", "usage");
  usage.cached_tokens = detail::token_count(u, "cache_read_input_tokens", "usage");
  return usage;
}

std::string text_of(const Json& v) { return v.is_string() ? v.get<std::string>() : std::string(); }

Schema text_block(const std::string& text) {
  Schema block = Schema::object();
  block["type"] = "text";
  block["text"] = text;
  return block;
}

bool one_of(std::string_view value, std::initializer_list<std::string_view> options) {
  return std::find(options.begin(), options.end(), value) != options.end();
}

// A part Anthropic cannot take here, as a text block in its place.
Schema omitted(const ContentPart& part, std::string_view why) {
  return text_block(omitted_note(part, why));
}

// {"type": "base64", "media_type", "data"} or {"type": "url", "url"}.
template <class P>
Schema source_of(const P& part) {
  Schema source = Schema::object();
  if (!part.url.empty()) {
    source["type"] = "url";
    source["url"] = part.url;
  } else {
    source["type"] = "base64";
    source["media_type"] = part.media_type;
    source["data"] = base64_encode(part.data);
  }
  return source;
}

// One part as a content block, or null for a part not sent: reasoning from
// another provider, or any reasoning outside an assistant turn. Images are
// JPEG, PNG, GIF or WebP; documents PDF (others become text notes).
Schema block_of(const ContentPart& part, Role role) {
  if (const auto* t = std::get_if<TextPart>(&part)) return text_block(t->text);
  if (const auto* r = std::get_if<RefusalPart>(&part)) return text_block(r->text);
  if (const auto* image = std::get_if<ImagePart>(&part)) {
    if (role == Role::assistant) return omitted(part, "Anthropic takes images in user turns and tool results");
    if (!image->data.empty() && !one_of(image->media_type, {"image/jpeg", "image/png", "image/gif", "image/webp"})) {
      return omitted(part, "Anthropic takes image/jpeg, image/png, image/gif and image/webp");
    }
    Schema block = Schema::object();
    block["type"] = "image";
    block["source"] = source_of(*image);
    return block;
  }
  if (const auto* file = std::get_if<FilePart>(&part)) {
    if (role == Role::assistant) return omitted(part, "Anthropic takes documents in user turns and tool results");
    if (!file->data.empty() && file->media_type != "application/pdf") {
      return omitted(part, "Anthropic takes documents as application/pdf");
    }
    Schema block = Schema::object();
    block["type"] = "document";
    block["source"] = source_of(*file);
    if (!file->name.empty()) block["title"] = file->name;
    return block;
  }
  const auto& reasoning = std::get<ReasoningPart>(part);
  if (role != Role::assistant || reasoning.provider != "anthropic") return Schema(nullptr);
  Schema block = Schema::object();
  if (!reasoning.redacted.empty()) {
    block["type"] = "redacted_thinking";
    block["data"] = reasoning.redacted;
  } else {
    block["type"] = "thinking";
    block["thinking"] = reasoning.text;
    block["signature"] = reasoning.signature;
  }
  return block;
}

// A message's parts as content blocks; a single string when they are all
// text (what text-only agentkit always sent).
Schema content_of(const Message& m) {
  const bool text_only = std::all_of(m.content.begin(), m.content.end(), [&](const ContentPart& p) {
    return std::holds_alternative<TextPart>(p) ||
           (std::holds_alternative<ReasoningPart>(p) &&
            (m.role != Role::assistant || std::get<ReasoningPart>(p).provider != "anthropic"));
  });
  if (text_only && m.tool_calls.empty()) return m.text();
  Schema blocks = Schema::array();
  for (const auto& part : m.content) {
    Schema block = block_of(part, m.role);
    if (block.is_null()) continue;
    // Adjacent text parts travel as one block, as the text they make.
    if (block["type"] == "text" && !blocks.empty() && blocks.back()["type"] == "text" &&
        std::holds_alternative<TextPart>(part)) {
      blocks.back()["text"] = blocks.back()["text"].get<std::string>() + block["text"].get<std::string>();
      continue;
    }
    blocks.push_back(std::move(block));
  }
  // An empty text block is refused by the API.
  if (!blocks.empty() && blocks.back()["type"] == "text" && blocks.back()["text"] == "") blocks.erase(blocks.size() - 1);
  return blocks;
}

// Arguments as an object for `tool_use.input`; text that never parsed (a
// repaired call) is sent back as an empty input.
Schema input_of(const ToolCall& c) {
  if (c.arguments.is_object()) return Schema::parse(c.arguments.dump());
  return Schema::object();
}

constexpr const char* kProvider = "Anthropic";

[[noreturn]] void refuse(const std::string& setting, const std::string& problem) {
  throw UnsupportedSetting(kProvider, setting, problem);
}

// Anthropic's input_schema must be an object schema: any other output type
// travels wrapped as {"value": ...}.
bool wraps_output(const Schema& schema) { return !(schema.is_object() && schema.value("type", Schema()) == "object"); }

Schema final_answer_tool(const Schema& output) {
  Schema tool = Schema::object();
  tool["name"] = std::string(kFinalAnswerTool);
  tool["description"] =
      "Give your final answer. Call this once, when you have everything you need, with the answer as its input; "
      "call the other tools first if you need them.";
  if (wraps_output(output)) {
    Schema wrapped = Schema::object();
    wrapped["type"] = "object";
    wrapped["properties"] = Schema::object();
    wrapped["properties"]["value"] = output;
    wrapped["required"] = Schema::array({"value"});
    tool["input_schema"] = std::move(wrapped);
  } else {
    tool["input_schema"] = output;
  }
  return tool;
}

Schema tool_choice_json(const ToolChoice& choice) {
  Schema out = Schema::object();
  switch (choice.mode) {
    case ToolChoice::Mode::automatic: out["type"] = "auto"; break;
    case ToolChoice::Mode::required: out["type"] = "any"; break;
    case ToolChoice::Mode::none: out["type"] = "none"; break;
    case ToolChoice::Mode::tool:
      out["type"] = "tool";
      out["name"] = choice.tool;
      break;
  }
  return out;
}

// The settings as Messages fields, the declared output type as a
// final_answer tool, and the tool_choice that goes with both.
void apply_settings(Schema& body, const ModelRequest& request, const AnthropicOptions& options) {
  static const ModelSettings kNone;
  const ModelSettings& s = request.settings ? *request.settings : kNone;
  if (s.seed) refuse("seed", "is not supported by the Messages API");
  if (s.reasoning_effort) refuse("reasoning_effort", "is not supported (it is OpenAI's); use thinking_budget_tokens");
  if (s.temperature) {
    if (*s.temperature > 1) refuse("temperature", "must be from 0 to 1, not " + std::to_string(*s.temperature));
    body["temperature"] = *s.temperature;
  }
  if (s.top_p) body["top_p"] = *s.top_p;
  const int max_tokens = s.max_output_tokens.value_or(options.max_tokens);
  body["max_tokens"] = max_tokens;
  if (s.stop && !s.stop->empty()) body["stop_sequences"] = *s.stop;
  const bool thinking = s.thinking_budget_tokens.has_value();
  if (thinking) {
    const int budget = *s.thinking_budget_tokens;
    if (budget < 1024) refuse("thinking_budget_tokens", "must be at least 1024, not " + std::to_string(budget));
    if (budget >= max_tokens && !options.interleaved_thinking) {
      refuse("thinking_budget_tokens", "(" + std::to_string(budget) + ") must be less than max_tokens (" +
                                           std::to_string(max_tokens) + "); raise max_output_tokens");
    }
    // Extended thinking samples at its own temperature.
    if (s.temperature && *s.temperature != 1) {
      refuse("temperature", "must be 1 (or unset) with thinking_budget_tokens (extended thinking), not " +
                                std::to_string(*s.temperature));
    }
    if (s.top_p && *s.top_p < 0.95) {
      refuse("top_p", "must be from 0.95 to 1 with thinking_budget_tokens (extended thinking), not " +
                          std::to_string(*s.top_p));
    }
    Schema block = Schema::object();
    block["type"] = "enabled";
    block["budget_tokens"] = budget;
    body["thinking"] = std::move(block);
  }

  const auto advertises = [&](std::string_view name) {
    return std::any_of(request.tools.begin(), request.tools.end(), [&](const ToolSpec* t) { return t->name == name; });
  };
  std::optional<Schema> choice;
  if (s.tool_choice) {
    const ToolChoice& c = *s.tool_choice;
    if (c.mode == ToolChoice::Mode::tool && !advertises(c.tool)) {
      refuse("tool_choice", "names the tool '" + c.tool + "', which this request does not advertise");
    }
    if (thinking && (c.mode == ToolChoice::Mode::required || c.mode == ToolChoice::Mode::tool)) {
      refuse("tool_choice", "cannot force tool use while thinking_budget_tokens (extended thinking) is set");
    }
    if (request.tools.empty() && !request.output_schema) {
      if (c.mode == ToolChoice::Mode::required) refuse("tool_choice", "is 'required' but the request has no tools");
    } else {
      choice = tool_choice_json(c);
    }
  }
  if (request.output_schema) {
    if (advertises(kFinalAnswerTool)) {
      refuse("output", "needs the tool name '" + std::string(kFinalAnswerTool) +
                           "' for the final answer, but the agent has a tool of that name");
    }
    if (!body.contains("tools")) body["tools"] = Schema::array();
    body["tools"].push_back(final_answer_tool(*request.output_schema));
    // Forced when nothing else needs calling first; "any" keeps the real
    // tools callable; extended thinking allows no forcing at all.
    if (!choice) {
      Schema forced = Schema::object();
      if (thinking) {
        forced["type"] = "auto";
      } else if (request.tools.empty()) {
        forced["type"] = "tool";
        forced["name"] = std::string(kFinalAnswerTool);
      } else {
        forced["type"] = "any";
      }
      choice = std::move(forced);
    }
  }
  if (s.parallel_tool_calls && body.contains("tools")) {
    if (!choice) choice = tool_choice_json(ToolChoice::automatic());
    (*choice)["disable_parallel_tool_use"] = !*s.parallel_tool_calls;
  }
  if (choice) body["tool_choice"] = std::move(*choice);
}

// The final_answer call as the answer text the run loop validates: its
// input (unwrapped from {"value": ...}) as JSON. Beside other tool calls it
// is dropped: the model answers again once their results are in.
void take_final_answer(ModelResponse& response, bool wrapped) {
  auto& calls = response.message.tool_calls;
  auto it = std::find_if(calls.begin(), calls.end(), [](const ToolCall& c) { return c.name == kFinalAnswerTool; });
  if (it == calls.end()) return;
  if (calls.size() > 1) {
    calls.erase(it);
    return;
  }
  std::string text;
  Json input = it->arguments;
  if (!it->arguments_text.empty()) {
    try {
      input = parse_json(it->arguments_text, JsonLimits{}, "the final answer");
    } catch (const JsonError&) {
      text = it->arguments_text;  // not JSON (cut short, too deep): the loop's validation repairs it
    }
  }
  if (text.empty()) {
    if (wrapped && input.is_object() && input.contains("value")) input = input["value"];
    text = input.dump();
  }
  std::erase_if(response.message.content, [](const ContentPart& part) { return std::holds_alternative<TextPart>(part); });
  response.message.add_text(std::move(text));
  calls.clear();
  if (response.finish_reason == "tool_calls") response.finish_reason = "stop";
}

// A call whose response goes through take_final_answer.
class FinalAnswerCompletion final : public PendingCompletion {
 public:
  FinalAnswerCompletion(std::unique_ptr<PendingCompletion> inner, bool wrapped)
      : inner_(std::move(inner)), wrapped_(wrapped) {}
  bool poll() override { return inner_->poll(); }
  void wait(std::chrono::milliseconds max) override { inner_->wait(max); }
  ModelResponse take() override {
    ModelResponse response = inner_->take();
    take_final_answer(response, wrapped_);
    return response;
  }
  void cancel() override { inner_->cancel(); }

 private:
  std::unique_ptr<PendingCompletion> inner_;
  bool wrapped_;
};

}  // namespace

std::string anthropic_stop_reason(std::string_view reason) {
  if (reason == "tool_use") return "tool_calls";
  if (reason == "max_tokens") return "length";
  if (reason == "refusal") return "content_filter";
  return "stop";
}

Schema anthropic_body(const ModelRequest& request, const AnthropicOptions& options, bool stream) {
  check_content(request.messages, options.content_limits);
  Schema body = Schema::object();
  body["model"] = options.model.empty() ? std::string(request.model) : options.model;
  body["max_tokens"] = options.max_tokens;
  if (!request.system.empty()) body["system"] = std::string(request.system);
  Schema messages = Schema::array();
  for (const auto& m : request.messages) {
    if (m.role == Role::tool) {
      // Tool results open the next user turn; consecutive results share it.
      Schema block = Schema::object();
      block["type"] = "tool_result";
      block["tool_use_id"] = m.tool_call_id;
      block["content"] = content_of(m);
      if (m.is_error) block["is_error"] = true;
      const bool extend = !messages.empty() && messages.back()["role"] == "user" &&
                          messages.back()["content"].is_array() && !messages.back()["content"].empty() &&
                          messages.back()["content"].back()["type"] == "tool_result";
      if (extend) {
        messages.back()["content"].push_back(std::move(block));
      } else {
        Schema msg = Schema::object();
        msg["role"] = "user";
        msg["content"] = Schema::array({std::move(block)});
        messages.push_back(std::move(msg));
      }
      continue;
    }
    Schema msg = Schema::object();
    msg["role"] = m.role == Role::assistant ? "assistant" : "user";
    if (m.role == Role::assistant && !m.tool_calls.empty()) {
      Schema content = content_of(m);
      for (const auto& c : m.tool_calls) {
        Schema block = Schema::object();
        block["type"] = "tool_use";
        block["id"] = c.id;
        block["name"] = c.name;
        block["input"] = input_of(c);
        content.push_back(std::move(block));
      }
      msg["content"] = std::move(content);
    } else {
      msg["content"] = content_of(m);
    }
    messages.push_back(std::move(msg));
  }
  body["messages"] = std::move(messages);
  if (!request.tools.empty()) {
    Schema tools = Schema::array();
    for (const ToolSpec* spec : request.tools) tools.push_back(anthropic_tool(*spec));
    body["tools"] = std::move(tools);
  }
  if (stream) body["stream"] = true;
  apply_settings(body, request, options);
  if (request.settings) merge_extra(body, request.settings->extra);
  return body;
}

ModelResponse anthropic_response(const Json& body) {
  return detail::read_json("Anthropic response", [&] {
    if (!body.is_object()) throw ProviderError(ErrorCode::protocol, "Anthropic response is not a JSON object");
    if (text_of(body.value("type", Json())) == "error") throw detail::stream_error(body.value("error", Json()));
    auto content = body.find("content");
    if (content == body.end() || !content->is_array()) {
      throw ProviderError(ErrorCode::protocol, "Anthropic response has no content array");
    }
    ModelResponse out;
    out.message.role = Role::assistant;
    for (const auto& block : *content) {
      if (!block.is_object()) continue;
      const std::string type = text_of(block.value("type", Json()));
      if (type == "text") {
        out.message.add_text(text_of(block.value("text", Json())));
      } else if (type == "thinking") {
        out.message.content.emplace_back(ReasoningPart{text_of(block.value("thinking", Json())),
                                                       text_of(block.value("signature", Json())), {}, "anthropic"});
      } else if (type == "redacted_thinking") {
        out.message.content.emplace_back(ReasoningPart{{}, {}, text_of(block.value("data", Json())), "anthropic"});
      } else if (type == "tool_use") {
        ToolCall call{text_of(block.value("id", Json())), text_of(block.value("name", Json())), Json::object(), {}};
        if (const auto input = block.find("input"); input != block.end() && input->is_object()) {
          call.arguments = *input;
        } else if (input != block.end() && !input->is_null()) {
          call.arguments_text = input->dump();  // not an object: text the loop refuses, telling the model
        }
        out.message.tool_calls.push_back(std::move(call));
      }
    }
    out.finish_reason = anthropic_stop_reason(text_of(body.value("stop_reason", Json())));
    out.usage = usage_of(body.value("usage", Json()));
    out.id = text_of(body.value("id", Json()));
    out.model = text_of(body.value("model", Json()));
    return out;
  });
}

void AnthropicStreamAccumulator::on_event(const SseEvent& event) {
  if (done_ || event.data.empty()) return;
  const Json e = parse_provider_json(event.data, "Anthropic stream event");
  detail::read_json("Anthropic stream event", [&] {
    if (!e.is_object()) throw ProviderError(ErrorCode::protocol, "Anthropic stream event is not a JSON object");
    const std::string type = text_of(e.value("type", Json()));
    if (type == "error" || event.event == "error") throw detail::stream_error(e.value("error", Json()));
    if (type == "message_start") {
      const Json message = detail::object_at(e, "message", "Anthropic message_start");
      usage_ = usage_of(message.value("usage", Json()));
      id_ = text_of(message.value("id", Json()));
      model_ = text_of(message.value("model", Json()));
      return;
    }
    if (type == "message_stop") {
      done_ = true;
      return;
    }
    if (type == "message_delta") {
      const Json delta = detail::object_at(e, "delta", "Anthropic message_delta");
      if (auto r = delta.find("stop_reason"); r != delta.end() && r->is_string()) stop_reason_ = r->get<std::string>();
      if (auto u = e.find("usage"); u != e.end() && u->is_object()) {
        // Cumulative: replaces, never adds to, what message_start said.
        if (u->contains("output_tokens")) usage_.output_tokens = detail::token_count(*u, "output_tokens", "usage");
        if (u->contains("input_tokens")) usage_.input_tokens = detail::token_count(*u, "input_tokens", "usage");
        if (u->contains("cache_read_input_tokens")) {
          usage_.cached_tokens = detail::token_count(*u, "cache_read_input_tokens", "usage");
        }
      }
      return;
    }
    if (type != "content_block_start" && type != "content_block_delta" && type != "content_block_stop") return;
    const auto at = e.find("index");
    const auto index = at == e.end() ? std::size_t{0} : json_integer<std::size_t>(*at, "index");
    if (index > 1024) throw ProviderError(ErrorCode::protocol, "Anthropic stream: content block index out of range");
    if (index >= blocks_.size()) blocks_.resize(index + 1);
    Block& block = blocks_[index];
    // A block's type is set once, by its start: a second start, or a delta
    // or stop before any, would mix or drop what the block carries.
    const auto where = [index] { return "Anthropic stream: content block " + std::to_string(index); };
    if (type == "content_block_start") {
      if (!block.type.empty()) throw ProviderError(ErrorCode::protocol, where() + " started twice");
      const Json cb = detail::object_at(e, "content_block", "Anthropic content_block_start");
      block.type = text_of(cb.value("type", Json()));
      if (block.type.empty()) throw ProviderError(ErrorCode::protocol, where() + " starts without a type");
      block.id = text_of(cb.value("id", Json()));
      block.name = text_of(cb.value("name", Json()));
      block.text = text_of(cb.value(block.type == "thinking" ? "thinking" : "text", Json()));
      block.signature = text_of(cb.value("signature", Json()));
      block.data = text_of(cb.value("data", Json()));
      count(block.text.size());
      if (block.type == "tool_use") {
        block.hidden = !hidden_tool_.empty() && block.name == hidden_tool_;
        if (!block.hidden) block.call = calls_++;
      }
      if (deltas_) {
        if (block.type == "tool_use" && !block.hidden) deltas_(ToolCallDelta{block.call, block.id, block.name, {}});
        if (block.type == "text" && !block.text.empty()) deltas_(TextDelta{block.text});
        if (block.type == "thinking" && !block.text.empty()) deltas_(ReasoningDelta{block.text});
      }
    } else if (block.type.empty()) {
      throw ProviderError(ErrorCode::protocol, where() + " has a " + type + " before its content_block_start");
    } else if (type == "content_block_delta") {
      const Json delta = detail::object_at(e, "delta", "Anthropic content_block_delta");
      const std::string dt = text_of(delta.value("type", Json()));
      // Each fragment is kept for the message; the kind its block is
      // streams as a delta (a tool_use block's own, a thinking block's
      // text), a signature never.
      const auto fragment = [&](const char* key) {
        const auto value = delta.find(key);
        if (value != delta.end() && !value->is_string()) {
          throw ProviderError(ErrorCode::protocol, where() + ": delta." + key + " is " +
                                                       std::string(json_type_name(*value)) + ", not a string");
        }
        std::string text = value == delta.end() ? std::string() : value->get<std::string>();
        count(text.size());
        return text;
      };
      if (dt == "text_delta") {
        const std::string text = fragment("text");
        if (deltas_ && !text.empty() && block.type == "text") deltas_(TextDelta{text});
        block.text += text;
      }
      if (dt == "input_json_delta") {
        const std::string json = fragment("partial_json");
        if (deltas_ && !json.empty() && block.type == "tool_use" && !block.hidden) {
          deltas_(ToolCallDelta{block.call, block.id, block.name, json});
        }
        block.partial_json += json;
      }
      if (dt == "thinking_delta") {
        const std::string thinking = fragment("thinking");
        if (deltas_ && !thinking.empty() && block.type == "thinking") deltas_(ReasoningDelta{thinking});
        block.text += thinking;
      }
      if (dt == "signature_delta") block.signature += fragment("signature");
    } else {
      block.stopped = true;
    }
  });
}

void AnthropicStreamAccumulator::count(std::size_t bytes) { detail::count_streamed(streamed_, bytes, "Anthropic stream"); }

ModelResponse AnthropicStreamAccumulator::finish() {
  ModelResponse out;
  out.message.role = Role::assistant;
  for (const auto& block : blocks_) {
    if (block.type == "text") {
      out.message.add_text(block.text);
    } else if (block.type == "thinking") {
      out.message.content.emplace_back(ReasoningPart{block.text, block.signature, {}, "anthropic"});
    } else if (block.type == "redacted_thinking") {
      out.message.content.emplace_back(ReasoningPart{{}, {}, block.data, "anthropic"});
    } else if (block.type == "tool_use") {
      ToolCall call{block.id, block.name, Json::object(), {}};
      // A no-argument tool sends "" as its only delta: that is {}. Text is
      // handed to the loop unparsed, so an input cut by max_tokens becomes a
      // repair.
      if (!block.partial_json.empty()) call.arguments_text = block.partial_json;
      if (!block.stopped && call.arguments_text.empty()) call.arguments_text = "{";
      out.message.tool_calls.push_back(std::move(call));
    }
  }
  out.finish_reason = stop_reason_.empty() ? (out.message.tool_calls.empty() ? "stop" : "tool_calls")
                                           : anthropic_stop_reason(stop_reason_);
  out.usage = usage_;
  out.id = id_;
  out.model = model_;
  return out;
}

const ReplyFormat& anthropic_reply() {
  static constexpr ReplyFormat format{"Anthropic", "message_stop", &anthropic_response};
  return format;
}

namespace {

// Adds `feature` to the request's anthropic-beta header (one comma-separated
// list, so a beta the host set in extra_headers stays).
void add_beta(Headers& headers, std::string_view feature) {
  constexpr std::string_view kBeta = "anthropic-beta";
  for (auto& [name, value] : headers) {
    if (std::equal(name.begin(), name.end(), kBeta.begin(), kBeta.end(),
                   [](unsigned char a, unsigned char b) { return std::tolower(a) == b; })) {
      if (value.find(feature) == std::string::npos) value += "," + std::string(feature);
      return;
    }
  }
  headers.emplace_back("anthropic-beta", std::string(feature));
}

}  // namespace

AnthropicModel::AnthropicModel(std::shared_ptr<Transport> transport, AnthropicOptions options)
    : transport_(std::move(transport)), options_(std::move(options)) {
  options_.base_url = detail::without_trailing_slashes(std::move(options_.base_url));
}

std::unique_ptr<PendingCompletion> AnthropicModel::begin(const ModelRequest& request, RunContext& ctx) {
  HttpRequest http = detail::json_post(request, options_.base_url + "/v1/messages", "x-api-key", "", options_.api_key,
                                       options_.extra_headers, {{"anthropic-version", options_.version}});
  if (options_.interleaved_thinking && request.settings && request.settings->thinking_budget_tokens) {
    add_beta(http.headers, "interleaved-thinking-2025-05-14");
  }
  http.body = anthropic_body(request, options_, options_.stream).dump();
  std::unique_ptr<AnthropicStreamAccumulator> accumulator;
  if (options_.stream) {
    // The final-answer tool's input is the answer being written, not a
    // call: it streams no ToolCallDelta (the answer arrives whole).
    accumulator = std::make_unique<AnthropicStreamAccumulator>(
        detail::run_deltas(ctx), request.output_schema ? std::string(kFinalAnswerTool) : std::string());
  }
  auto call = detail::start_call(*transport_, std::move(http), ctx.cancellation, anthropic_reply(), std::move(accumulator));
  if (!request.output_schema) return call;
  return std::make_unique<FinalAnswerCompletion>(std::move(call), wraps_output(*request.output_schema));
}

ModelResponse AnthropicModel::complete(const ModelRequest& request, RunContext& ctx) {
  return detail::complete_now(*begin(request, ctx));
}

void AnthropicModel::check_schemas(std::span<const ToolSpec* const> tools, const Schema* output_schema) const {
  providers::check_schemas(tools, output_schema, SchemaDialect::anthropic);
}

}  // namespace agentkit::providers
