// openai_chat_body_text against the tree it replaced: the body the adapter
// built as an ordered_json tree and dumped (kept here verbatim as the
// reference) and the text it now writes directly must be the same bytes for
// every shape of request, so nothing on the wire changed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <agentkit/function_tool.h>
#include <agentkit/providers/openai.h>
#include <agentkit/providers/settings.h>
#include <agentkit/providers/tool_format.h>

namespace {

using namespace agentkit;
using namespace agentkit::providers;

// --- the reference: openai_chat_body as a tree, before it was written as text ---
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

Schema reference_body(const ModelRequest& request, const OpenAIOptions& options, bool stream) {
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


// --- the comparison ---

ToolPtr weather_tool() {
  return tool("get_weather")
      .doc("Get the current weather for a city, in \"degrees\" Celsius.\n\tÜnïcode ✓")
      .side_effecting(false)
      .params("city")
      .fn([](const std::string& c) { return c + ": 21C"; });
}

ToolPtr add_tool() {
  return tool("add").doc("Add two integers and return their sum.").side_effecting(false).params("a", "b").fn([](std::int64_t a, std::int64_t b) { return a + b; });
}

std::vector<Message> rich_history() {
  std::string controls;
  for (int c = 0; c < 0x20; ++c) controls += static_cast<char>(c);
  controls += "\x7f \"quoted\" back\\slash / é 日本 🎉";
  std::vector<Message> h;
  h.push_back(Message::system("an extra system message " + controls));
  h.push_back(Message::user("hello " + controls));
  h.push_back(Message::user(std::vector<ContentPart>{TextPart{"look"}, ImagePart{.media_type = "image/png", .data = "\x89PNG"},
                                                     ImagePart{.url = "https://example.com/a.png"},
                                                     FilePart{.media_type = "application/pdf", .data = "%PDF", .name = "r.pdf"},
                                                     FilePart{.media_type = "application/pdf", .url = "https://x/y.pdf"},
                                                     RefusalPart{"no"}, ReasoningPart{.text = "hmm"}}));
  h.push_back(Message::user(std::vector<ContentPart>{TextPart{"a"}, ReasoningPart{.text = "r"}, TextPart{"b"}}));
  ToolCall parsed{"call_1", "add", Json{{"b", 2}, {"a", 1}}, ""};
  ToolCall text{"call_2", "add", Json::object(), R"({"a": 1, "b": 2})"};
  ToolCall none{"call_3", "add", Json(), ""};
  ToolCall odd{"call_\"4\"", "we\nird", Json{{"s", controls}}, ""};
  ToolCall mixed{"call_5", "add",
                 Json{{"f", 1.5}, {"n", {1, -2, nullptr, true, false, "x", Json::object(), Json::array()}},
                      {"u", 18446744073709551615ull}, {"z", -9223372036854775807ll - 1}, {"nested", {{"k", {{"q", "\u00e9"}}}}}},
                 ""};
  ToolCall invalid{"call_6", "add", Json{{"bad", "\xff\xfe ok"}, {"\xc3", 1}}, ""};
  ToolCall floats{"call_7", "add", Json{{"x", 1e300}, {"y", -0.0}, {"w", 100.0}}, ""};
  h.push_back(Message::assistant("", {parsed, text, none, odd, mixed, invalid, floats}));
  h.push_back(Message::tool_result("call_1", "add", "3"));
  h.push_back(Message::tool_result("call_2", "add", controls, true));
  h.push_back(Message::tool_result("call_3", "add", std::vector<ContentPart>{TextPart{"x"}, ImagePart{.media_type = "image/png", .data = "b"}, TextPart{"y"}}));
  h.push_back(Message::tool_result("call_\"4\"", "we\nird", ""));
  h.push_back(Message::assistant("some text", {parsed}));
  h.push_back(Message::assistant(std::vector<ContentPart>{TextPart{"t1"}, RefusalPart{"r1"}, TextPart{"t2"}, RefusalPart{"r2"}}));
  h.push_back(Message::assistant(std::vector<ContentPart>{ImagePart{.media_type = "image/png", .data = "b"}}, {none}));
  h.push_back(Message::assistant(std::vector<ContentPart>{ReasoningPart{.text = "thinking"}}, {parsed}));
  h.push_back(Message::assistant(""));
  h.push_back(Message::user(""));
  return h;
}

void check_same(const ModelRequest& request, const OpenAIOptions& options) {
  for (const bool stream : {false, true}) {
    const std::string expected = reference_body(request, options, stream).dump();
    CHECK(openai_chat_body_text(request, options, stream) == expected);
    CHECK(openai_chat_body(request, options, stream).dump() == expected);
  }
}

}  // namespace

TEST_CASE("OpenAI chat: the body written as text is byte for byte the tree's dump", "[openai][body]") {
  auto weather = weather_tool();
  auto add = add_tool();
  const ToolSpec* specs[] = {&add->spec(), &weather->spec()};
  const std::vector<Message> history = rich_history();
  const Schema output = Schema::parse(R"({"type":"object","properties":{"x":{"type":"number"}},"required":["x"]})");
  const Schema loose = Schema::parse(R"({"type":"object"})");

  std::vector<ModelSettings> settings(1);
  ModelSettings all;
  all.temperature = 0.7;
  all.top_p = 0.25;
  all.max_output_tokens = 123;
  all.stop = std::vector<std::string>{"END", "\n\n"};
  all.seed = -42;
  all.tool_choice = ToolChoice::named("get_weather");
  all.parallel_tool_calls = false;
  all.reasoning_effort = ReasoningEffort::minimal;
  settings.push_back(all);
  for (auto choice : {ToolChoice::automatic(), ToolChoice::required(), ToolChoice::none()}) {
    ModelSettings s;
    s.tool_choice = choice;
    s.parallel_tool_calls = true;
    settings.push_back(s);
  }
  ModelSettings empty_stop;
  empty_stop.stop = std::vector<std::string>{};
  empty_stop.temperature = 1e-7;
  settings.push_back(empty_stop);
  ModelSettings extra = all;
  extra.extra = {{"service_tier", "flex"}, {"metadata", {{"team", "ops"}}}, {"temperature", 0.1}};
  settings.push_back(extra);
  ModelSettings empty_extra;
  empty_extra.extra = Json::object();
  settings.push_back(empty_extra);

  std::vector<OpenAIOptions> options(1);
  options.push_back({.model = "gpt-test", .max_tokens = 99, .tool_choice = "auto"});
  options.push_back({.model = "m", .strict_tools = true, .max_tokens = 7});
  options.push_back({.tool_choice = "required"});

  for (const auto& o : options) {
    for (const auto& s : settings) {
      for (const bool tools : {false, true}) {
        for (const Schema* out : {static_cast<const Schema*>(nullptr), &output, &loose}) {
          for (const std::string_view system : {std::string_view(), std::string_view("You add numbers.\n\"Be\" brief.")}) {
            const bool needs_tool = s.tool_choice && (s.tool_choice->mode == ToolChoice::Mode::tool ||
                                                      s.tool_choice->mode == ToolChoice::Mode::required);
            if (needs_tool && !tools) continue;  // refused, checked below
            ModelRequest request{"openai/add-model", system, history,
                                 tools ? std::span<const ToolSpec* const>(specs) : std::span<const ToolSpec* const>(),
                                 out, &s};
            check_same(request, o);
          }
        }
      }
    }
  }
  ModelRequest bare{"openai/add-model", "", history, specs};
  check_same(bare, {});
  ModelRequest nothing{"m", "", {}, {}};
  check_same(nothing, {});
}

TEST_CASE("OpenAI chat: the text body refuses what the tree refused, with the same message", "[openai][body]") {
  auto add = add_tool();
  const ToolSpec* specs[] = {&add->spec()};
  const std::vector<Message> history{Message::user("hi")};
  const auto message = [](auto&& build) -> std::string {
    try {
      build();
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  std::vector<ModelSettings> bad(4);
  bad[0].thinking_budget_tokens = 2048;
  bad[1].stop = std::vector<std::string>{"a", "b", "c", "d", "e"};
  bad[2].tool_choice = ToolChoice::named("nope");
  bad[3].tool_choice = ToolChoice::required();
  for (const auto& s : bad) {
    for (const bool tools : {false, true}) {
      ModelRequest r{"m", "", history, tools ? std::span<const ToolSpec* const>(specs) : std::span<const ToolSpec* const>(),
                     nullptr, &s};
      const std::string expected = message([&] { reference_body(r, {}, false); });
      if (expected.empty()) continue;
      CHECK(message([&] { openai_chat_body_text(r, {}, false); }) == expected);
    }
  }
  // Invalid UTF-8: the same json::type_error the tree's dump() threw.
  const std::vector<Message> bad_text{Message::user("ok \xC3\x28 not")};
  ModelRequest r{"m", "", bad_text, {}};
  const std::string expected = message([&] { (void)reference_body(r, {}, false).dump(); });
  CHECK_FALSE(expected.empty());
  CHECK(message([&] { openai_chat_body_text(r, {}, false); }) == expected);
}
