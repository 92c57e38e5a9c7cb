// Content parts on the wire: both adapters map images, files, reasoning and
// refusals both ways; what a provider cannot take becomes a text note;
// content caps hold before anything is sent.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/anthropic.h>
#include <agentkit/providers/mcp.h>
#include <agentkit/providers/openai.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/testing/wire_server.h>

#include "../helpers/paths.h"
#include "../helpers/files.h"
#include "../helpers/sse_decode.h"

namespace fs = std::filesystem;
using namespace agentkit;
using namespace agentkit::providers;
using agentkit::testing::WireServer;
using agentkit_test::decode_stream;
using agentkit_test::read_file;

namespace {

const std::string kPng("\x89PNG\r\n\x1a\n\xff\x00\x01", 11);

std::string own_fixture(const char* name) {
  return read_file(fs::path(AGENTKIT_SOURCE_DIR) / "tests" / "providers" / "fixtures" / name);
}

Json body_of(const Schema& s) { return Json::parse(s.dump()); }

ModelRequest request_of(const std::vector<Message>& history) { return ModelRequest{"m", "Be brief.", history, {}}; }

const ReasoningPart kThinking{.text = "Check the weather.", .signature = "EqQBsig==", .provider = "anthropic"};

}  // namespace

// ------------------------------------------------------------------ OpenAI chat

TEST_CASE("OpenAI chat: user images go as image_url (data: URL or URL), files as file_data", "[parts][openai]") {
  const std::vector<Message> history{Message::user({TextPart{"What is this?"}, ImagePart{"image/png", kPng, ""},
                                                    ImagePart{.url = "https://example.com/a.jpg"},
                                                    FilePart{"application/pdf", "%PDF-1.4", "report.pdf", ""}})};
  const Json body = body_of(openai_chat_body(request_of(history), {}, false));
  const Json& content = body["messages"][1]["content"];
  REQUIRE(content.size() == 4);
  CHECK(content[0] == Json{{"type", "text"}, {"text", "What is this?"}});
  CHECK(content[1]["type"] == "image_url");
  CHECK(content[1]["image_url"]["url"] == "data:image/png;base64," + base64_encode(kPng));
  CHECK(content[2]["image_url"]["url"] == "https://example.com/a.jpg");
  CHECK(content[3] == Json{{"type", "file"},
                           {"file", {{"file_data", "data:application/pdf;base64," + base64_encode("%PDF-1.4")},
                                     {"filename", "report.pdf"}}}});
  // Text-only stays a string, as before parts.
  const std::vector<Message> plain{Message::user("hi")};
  CHECK(body_of(openai_chat_body(request_of(plain), {}, false))["messages"][1]["content"] == "hi");
}

TEST_CASE("OpenAI chat: an image in a tool result becomes a text note naming it, reasoning is never sent", "[parts][openai]") {
  Message tool = Message::tool_result("c1", "camera", "frame 7");
  tool.content.emplace_back(ImagePart{"image/jpeg", std::string(1234, 'x'), ""});
  const std::vector<Message> history{
      Message::user("look"),
      Message::assistant({kThinking, TextPart{"Looking."}}, {ToolCall{"c1", "camera", Json::object(), {}}}), tool};
  const Json body = body_of(openai_chat_body(request_of(history), {}, false));
  CHECK(body["messages"][2]["content"] == "Looking.");
  CHECK(body.dump().find("Check the weather") == std::string::npos);
  CHECK(body.dump().find("EqQBsig") == std::string::npos);
  const std::string note = body["messages"][3]["content"];
  CHECK_THAT(note, Catch::StartsWith("frame 7\n[image image/jpeg, 1234 bytes omitted:"));
}

TEST_CASE("OpenAI chat: a refusal is read as a RefusalPart and sent back as refusal", "[parts][openai]") {
  const Json reply = Json::parse(R"({"choices":[{"index":0,"message":{"role":"assistant","content":null,
      "refusal":"I can't help with that."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":6}})");
  const ModelResponse r = openai_chat_response(reply);
  REQUIRE(r.message.content.size() == 1);
  CHECK(std::get<RefusalPart>(r.message.content[0]).text == "I can't help with that.");
  CHECK(r.message.text().empty());

  const std::string stream =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"refusal\":\"\"}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"I can't \"}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"help.\"},\"finish_reason\":\"stop\"}]}\n\n"
      "data: [DONE]\n\n";
  const ModelResponse s = decode_stream<OpenAIStreamAccumulator>(stream);
  REQUIRE(s.message.content.size() == 1);
  CHECK(std::get<RefusalPart>(s.message.content[0]).text == "I can't help.");

  const std::vector<Message> history{Message::user("x"), s.message, Message::user("why?")};
  const Json body = body_of(openai_chat_body(request_of(history), {}, false));
  CHECK(body["messages"][2]["refusal"] == "I can't help.");
}

// ------------------------------------------------------------------ Anthropic

TEST_CASE("Anthropic: image and document blocks, base64 or url, in user turns and tool results", "[parts][anthropic]") {
  Message tool = Message::tool_result("toolu_01A09q90qw90lq917835lq9", "get_weather", "15 degrees");
  tool.content.emplace_back(ImagePart{"image/jpeg", kPng, ""});
  const std::vector<Message> history{
      Message::user({TextPart{"Summarise"}, FilePart{"application/pdf", "%PDF", "a.pdf", ""},
                     ImagePart{.url = "https://example.com/a.png"}}),
      Message::assistant("", {ToolCall{"toolu_01A09q90qw90lq917835lq9", "get_weather", Json::object(), {}}}), tool};
  const Json body = body_of(anthropic_body(request_of(history), {}, false));
  const Json& user = body["messages"][0]["content"];
  CHECK(user[1] == Json{{"type", "document"},
                        {"source", {{"type", "base64"}, {"media_type", "application/pdf"}, {"data", base64_encode("%PDF")}}},
                        {"title", "a.pdf"}});
  CHECK(user[2] == Json{{"type", "image"}, {"source", {{"type", "url"}, {"url", "https://example.com/a.png"}}}});
  // The documented shape of a tool result with an image
  // (../shared/fixtures/wire/anthropic/request_tool_result_blocks_content_docs.json).
  const Json expected = Json::parse(R"([{"type":"text","text":"15 degrees"},
      {"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":")" + base64_encode(kPng) + R"("}}])");
  const Json& result = body["messages"][2]["content"][0];
  CHECK(result["type"] == "tool_result");
  CHECK(result["content"] == expected);
  const fs::path docs = fs::path(AGENTKIT_SHARED_DIR) / "fixtures/wire/anthropic/request_tool_result_blocks_content_docs.json";
  if (fs::exists(docs)) {
    Json fixture = Json::parse(read_file(docs))["content"][0]["content"];
    fixture[1]["source"]["data"] = base64_encode(kPng);
    CHECK(fixture == expected);
  } else {
    WARN("../shared/fixtures/wire absent: the documented tool-result shape was not compared");
  }
}

TEST_CASE("Anthropic: what it cannot take becomes a text note naming it", "[parts][anthropic]") {
  const std::vector<Message> history{Message::user({TextPart{"a"}, ImagePart{"image/tiff", "II*", ""}})};
  const Json body = body_of(anthropic_body(request_of(history), {}, false));
  CHECK(body["messages"][0]["content"][1]["text"] ==
        "[image image/tiff, 3 bytes omitted: Anthropic takes image/jpeg, image/png, image/gif and image/webp]");
}

TEST_CASE("Anthropic: a thinking stream with signature_delta parses into a ReasoningPart", "[parts][anthropic]") {
  const ModelResponse r = decode_stream<AnthropicStreamAccumulator>(own_fixture("anthropic_thinking_tool_use.sse"));
  REQUIRE(r.message.content.size() == 2);
  const auto& thinking = std::get<ReasoningPart>(r.message.content[0]);
  CHECK(thinking.provider == "anthropic");
  CHECK(thinking.text == "The user wants the weather in Paris. I should call get_weather with city=Paris.");
  CHECK_THAT(thinking.signature, Catch::StartsWith("EqQBCkYIBxgCKkBJ7cBX") && Catch::EndsWith("iIBh+Ws/="));
  CHECK(r.message.text() == "Let me check.");
  REQUIRE(r.message.tool_calls.size() == 1);
  CHECK(r.finish_reason == "tool_calls");

  const ModelResponse redacted = decode_stream<AnthropicStreamAccumulator>(own_fixture("anthropic_after_tool_result.sse"));
  CHECK(std::get<ReasoningPart>(redacted.message.content[0]).redacted.starts_with("EmwKAhgBEgy3va3p"));
  CHECK(redacted.message.text() == "It is sunny in Paris.");
}

TEST_CASE("Anthropic: thinking and redacted_thinking in a JSON reply, unknown block types are ignored", "[parts][anthropic]") {
  const Json reply = Json::parse(R"({"type":"message","role":"assistant","content":[
      {"type":"thinking","thinking":"Hmm.","signature":"sig-A"},
      {"type":"redacted_thinking","data":"opaque-B"},
      {"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}},
      {"type":"text","text":"Done."}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":4}})");
  const ModelResponse r = anthropic_response(reply);
  REQUIRE(r.message.content.size() == 3);
  CHECK(std::get<ReasoningPart>(r.message.content[0]) == ReasoningPart{"Hmm.", "sig-A", "", "anthropic"});
  CHECK(std::get<ReasoningPart>(r.message.content[1]) == ReasoningPart{"", "", "opaque-B", "anthropic"});
  CHECK(r.message.text() == "Done.");
}

TEST_CASE("Anthropic: thinking goes back verbatim before tool_use, another provider's reasoning never", "[parts][anthropic]") {
  const std::vector<Message> history{
      Message::user("Weather in Paris?"),
      Message::assistant({kThinking, ReasoningPart{.redacted = "opaque-B", .provider = "anthropic"},
                          ReasoningPart{.text = "openai summary", .signature = "enc", .provider = "openai"},
                          TextPart{"Let me check."}},
                         {ToolCall{"toolu_1", "get_weather", {{"city", "Paris"}}, {}}}),
      Message::tool_result("toolu_1", "get_weather", "sunny")};
  const Json body = body_of(anthropic_body(request_of(history), {}, false));
  const Json& content = body["messages"][1]["content"];
  REQUIRE(content.size() == 4);
  CHECK(content[0] == Json{{"type", "thinking"}, {"thinking", "Check the weather."}, {"signature", "EqQBsig=="}});
  CHECK(content[1] == Json{{"type", "redacted_thinking"}, {"data", "opaque-B"}});
  CHECK(content[2] == Json{{"type", "text"}, {"text", "Let me check."}});
  CHECK(content[3]["type"] == "tool_use");
  CHECK(body.dump().find("openai summary") == std::string::npos);
}

TEST_CASE("a run over loopback passes Anthropic thinking back unchanged on the next turn", "[parts][anthropic][loopback]") {
  WireServer server;
  const auto sse = [](std::string body) {
    WireServer::Response r;
    r.headers = {{"content-type", "text/event-stream"}};
    r.body = std::move(body);
    return r;
  };
  server.enqueue(sse(own_fixture("anthropic_thinking_tool_use.sse")));
  server.enqueue(sse(own_fixture("anthropic_after_tool_result.sse")));
  auto transport = std::make_shared<Transport>(TransportOptions{.max_retries = 0});
  auto claude = std::make_shared<AnthropicModel>(transport, AnthropicOptions{.base_url = server.base_url(), .model = "m"});
  auto ctx = agentkit::testing::make_test_ctx({.llm = claude});
  auto weather = tool("get_weather").doc("Get the current weather for a named city.").side_effecting(false).params("city").fn([](const std::string&) {
    return std::string("sunny");
  });
  const Agent agent("w", "m", "Be brief.", std::make_shared<cognition::ReActCognition>(std::vector<ToolPtr>{weather}));
  const RunResult result = agent.run("Weather in Paris?", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(result.output == "It is sunny in Paris.");
  const auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  const Json second = Json::parse(requests[1].body);
  const Json& assistant = second["messages"][1]["content"];
  CHECK(assistant[0]["type"] == "thinking");
  CHECK(assistant[0]["thinking"] == "The user wants the weather in Paris. I should call get_weather with city=Paris.");
  CHECK(assistant[0]["signature"] ==
        "EqQBCkYIBxgCKkBJ7cBXi0fXh1U7q3rZ7tG0f8kZ2q+X4s9f0pQm3b3bK1nV9dP8hQmW2yXz5vR4aW6sT1uY0oN3eL7iJ+gKhDcIEgw9rJk1Qm3"
        "hH7kLp2QaDG4q2m9tJ6kLr+pZ0SIwPq3lM8nV2xY7cB5dF0gH9jK1lM3nO5pQ7rS9tU1vW3xY5zA7bC9dE1fG3hI5jK7lMiIBh+Ws/=");
  CHECK(assistant[2]["type"] == "tool_use");
  // The reasoning survived the run's durable checkpoint too.
  CHECK(std::get<ReasoningPart>(result.state.history[1].content[0]).signature == assistant[0]["signature"]);
}

// ------------------------------------------------------------------ limits

TEST_CASE("content over a cap is ContentTooLarge before any byte goes on the wire", "[parts][limits]") {
  WireServer server;
  auto transport = std::make_shared<Transport>(TransportOptions{.max_retries = 0});
  const ContentLimits limits{.max_part_bytes = 1000, .max_request_bytes = 1500};
  OpenAIChatModel gpt(transport, {.base_url = server.base_url() + "/v1", .model = "m", .content_limits = limits});
  AnthropicModel claude(transport, {.base_url = server.base_url(), .model = "m", .content_limits = limits});
  auto ctx = agentkit::testing::make_test_ctx();
  const std::vector<Message> big{Message::user({ImagePart{"image/png", std::string(1001, 'x'), ""}})};
  const std::vector<Message> many{Message::user({ImagePart{"image/png", std::string(800, 'x'), ""}}),
                                  Message::user({ImagePart{"image/png", std::string(800, 'y'), ""}})};
  CHECK_THROWS_AS(gpt.complete(request_of(big), ctx), ContentTooLarge);
  CHECK_THROWS_AS(claude.complete(request_of(big), ctx), ContentTooLarge);
  CHECK_THROWS_WITH(claude.complete(request_of(many), ctx), Catch::Contains("per-request cap of 1500"));
  CHECK_THROWS_AS(gpt.complete(request_of(std::vector<Message>{Message::user({ImagePart{"", "x", ""}})}), ctx),
                  InvalidContent);
  CHECK(server.requests().empty());
}

// ------------------------------------------------------------------ MCP

TEST_CASE("an MCP image block becomes an ImagePart, a bad one stays a text note", "[parts][mcp]") {
  McpCallResult r;
  r.content = Json::array({Json{{"type", "text"}, {"text", "frame"}},
                           Json{{"type", "image"}, {"mimeType", "image/png"}, {"data", base64_encode(kPng)}},
                           Json{{"type", "image"}, {"mimeType", "image/png"}, {"data", "%%%"}},
                           Json{{"type", "audio"}, {"mimeType", "audio/wav"}, {"data", "AAAA"}}});
  const auto parts = r.parts();
  REQUIRE(parts.size() == 3);
  CHECK(std::get<TextPart>(parts[0]).text == "frame");
  CHECK(std::get<ImagePart>(parts[1]) == ImagePart{"image/png", kPng, ""});
  CHECK(std::get<TextPart>(parts[2]).text == "[image image/png, not valid base64]\n[audio audio/wav, 3 bytes]");
}
