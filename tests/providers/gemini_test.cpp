// The Gemini adapter (generateContent / streamGenerateContent?alt=sse):
// the schema dialect rule by rule, request bodies against the recorded
// requests in ../shared/fixtures/wire/gemini, replies and streams in any
// chunking, thought signatures back verbatim on their own parts (through a
// RunState document too), fail-closed reading, faults over loopback,
// routing, and whole agent runs over loopback.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <optional>
#include <filesystem>
#include <random>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/errors.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/gemini.h>
#include <agentkit/providers/models.h>
#include <agentkit/providers/settings.h>
#include <agentkit/providers/tool_format.h>
#include <agentkit/run_state.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/testing/wire_server.h>

#include "../helpers/files.h"
#include "../helpers/wire_fixtures.h"

namespace fs = std::filesystem;
using agentkit::ContentPart;
using agentkit::ErrorCode;
using agentkit::Json;
using agentkit::Message;
using agentkit::ModelRequest;
using agentkit::ModelSettings;
using agentkit::ReasoningPart;
using agentkit::Schema;
using agentkit::ToolCall;
using agentkit::ToolSpec;
using agentkit::testing::WireServer;
using namespace agentkit::providers;
using agentkit_test::error_of;
using agentkit_test::read_file;

namespace {

Json fixture(const fs::path& dir, const char* name) { return Json::parse(read_file(dir / name)); }

ToolSpec declared(std::string name, std::string description, Json parameters) {
  ToolSpec spec;
  spec.name = std::move(name);
  spec.description = std::move(description);
  spec.parameters = std::move(parameters);
  return spec;
}

agentkit::ToolPtr weather_tool() {
  return agentkit::tool("get_weather")
      .doc("Get the weather in a given city")
      .side_effecting(false)
      .params("city")
      .fn([](const std::string& city) { return std::string(city == "Paris" ? "18C, sunny" : "9C, rain"); });
}

HttpResponse sse_head() {
  HttpResponse head;
  head.status = 200;
  head.headers = {{"content-type", "text/event-stream"}};
  return head;
}

const char* const kUrl = "https://generativelanguage.googleapis.com/v1beta/models/m:streamGenerateContent?alt=sse";

agentkit::ModelResponse read_reply(const std::vector<std::string>& chunks, const HttpResponse& head, bool stream) {
  ReplyReader reader(gemini_reply(), kUrl, stream ? std::make_unique<GeminiStreamAccumulator>() : nullptr);
  reader.on_headers(head);
  for (const auto& c : chunks) reader.feed(c);
  return reader.finish();
}


// The Gemini dialect's output as plain JSON (compared without key order).
template <class J>
Json gem(const J& schema, const std::string& where = "t", bool root_object = true) {
  return Json::parse(compile_schema(Schema::parse(schema.dump()), SchemaDialect::gemini, where, root_object).dump());
}

std::string refusal_of(const Json& schema, const std::string& where = "tool 'lookup' arguments") {
  try {
    compile_schema(schema, SchemaDialect::gemini, where);
  } catch (const agentkit::ToolDefinitionError& e) {
    return e.what();
  }
  return {};
}

// One SSE event the way Gemini frames them (CRLF, data only).
std::string event(const Json& chunk) { return "data: " + chunk.dump() + "\r\n\r\n"; }

Json text_chunk(const std::string& text, const char* finish = nullptr) {
  Json candidate = Json::parse(R"({"content":{"role":"model","parts":[{"text":""}]},"index":0})");
  candidate["content"]["parts"][0]["text"] = text;
  if (finish) candidate["finishReason"] = finish;
  Json chunk = Json::parse(R"({"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":3}})");
  chunk["candidates"] = Json::array({candidate});
  return chunk;
}

// A Gemini 3 style reply with two parallel calls, the first one signed.
const char* const kSignature = "EpwICpkIAXLI2nx+lU6g/sWZaZHRYkX1orzuM8vSUFwaAt1JRxEC2hJzPA==";
std::string parallel_calls_stream() {
  Json chunk = Json::parse(R"({"candidates":[{"content":{"role":"model","parts":[
      {"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":""},
      {"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}}]},"index":0}],
      "usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":12,"thoughtsTokenCount":30},"responseId":"r1"})");
  chunk["candidates"][0]["content"]["parts"][0]["thoughtSignature"] = kSignature;
  const Json last = Json::parse(R"({"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}],
      "usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":12,"thoughtsTokenCount":30},"responseId":"r1"})");
  return event(chunk) + event(last);
}

WireServer::Response sse(const std::string& body) {
  WireServer::Response r;
  r.headers = {{"content-type", "text/event-stream"}};
  r.chunks = WireServer::split(body, 37);
  return r;
}

// "+/" base64 as URL-safe base64 ("-_"), the alphabet pydantic-ai re-encodes signatures in.
std::string url_safe(std::string s) {
  std::replace(s.begin(), s.end(), '+', '-');
  std::replace(s.begin(), s.end(), '/', '_');
  return s;
}

}  // namespace

// ------------------------------------------------------------------ schema

TEST_CASE("Gemini schema dialect: what it rewrites", "[gemini][schema]") {
  SECTION("$ref inlined from $defs, keywords beside it kept, no $defs left") {
    const Json s = Json::parse(R"({"type":"object","$defs":{"P":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}},
        "properties":{"from":{"$ref":"#/$defs/P","description":"start"},"to":{"$ref":"#/$defs/P"}},"required":["from"]})");
    const Json out = gem(s, "t");
    CHECK(out.dump().find("$ref") == std::string::npos);
    CHECK_FALSE(out.contains("$defs"));
    CHECK(out["properties"]["from"] == Json::parse(R"({"type":"object","properties":{"x":{"type":"number"}},"required":["x"],"description":"start"})"));
    CHECK(out["properties"]["to"]["required"] == Json::array({"x"}));
  }
  SECTION("a type list with null and anyOf with null become nullable") {
    const Json out = gem(Json::parse(R"({"type":"object","properties":{
        "a":{"type":["string","null"]},
        "b":{"anyOf":[{"type":"integer","minimum":0},{"type":"null"}],"description":"count"},
        "c":{"anyOf":[{"type":"integer"},{"type":"string"}]}}})"), "t");
    CHECK(out["properties"]["a"] == Json({{"type", "string"}, {"nullable", true}}));
    CHECK(out["properties"]["b"] == Json({{"type", "integer"}, {"minimum", 0}, {"description", "count"}, {"nullable", true}}));
    CHECK(out["properties"]["c"] == Json::parse(R"({"anyOf":[{"type":"integer"},{"type":"string"}]})"));
  }
  SECTION("a string const is a one-value enum; a nullable enum drops its null") {
    const Json out = gem(Json::parse(R"({"type":"object","properties":{
        "kind":{"const":"refund"},"unit":{"type":"string","enum":["c","f",null]}}})"), "t");
    CHECK(out["properties"]["kind"] == Json({{"enum", {"refund"}}, {"type", "string"}}));
    CHECK(out["properties"]["unit"] == Json({{"type", "string"}, {"enum", {"c", "f"}}, {"nullable", true}}));
  }
  SECTION("additionalProperties false and annotations are left out; Gemini's own fields stay") {
    const Json out = gem(Json::parse(R"({"$schema":"https://json-schema.org/draft/2020-12/schema",
        "type":"object","additionalProperties":false,"title":"Args","properties":{
        "when":{"type":"string","format":"date-time","examples":["2025-01-01T00:00:00Z"]},
        "tags":{"type":"array","items":{"type":"string","minLength":1,"maxLength":9,"pattern":"^[a-z]+$"},"minItems":1,"maxItems":4},
        "n":{"type":"integer","minimum":1,"maximum":9,"default":3}}})"), "t");
    CHECK(out == Json::parse(R"({"type":"object","title":"Args","properties":{
        "when":{"type":"string","format":"date-time"},
        "tags":{"type":"array","items":{"type":"string","minLength":1,"maxLength":9,"pattern":"^[a-z]+$"},"minItems":1,"maxItems":4},
        "n":{"type":"integer","minimum":1,"maximum":9,"default":3}}})"));
  }
  SECTION("a format Gemini has no value for is said in the description, not dropped") {
    const Json out = gem(Json::parse(R"({"type":"object","properties":{"site":{"type":"string","format":"uri","description":"Home page"}}})"),
                                      "t");
    CHECK(out["properties"]["site"] == Json({{"type", "string"}, {"description", "Home page (format: uri)"}}));
  }
  SECTION("agentkit's own shapes: std::optional, enums, unsigned, std::array") {
    auto tool = agentkit::tool("plan")
                    .doc("Plan a trip to a city for some nights.")
                    .side_effecting(false)
                    .params("city", "nights", "title", "point")
                    .fn([](const std::string&, unsigned, const std::optional<std::string>&, const std::array<double, 3>&) { return 1; });
    const Json out = gem(*tool->spec().parameters, "t");
    CHECK(out["properties"]["title"]["nullable"] == true);
    CHECK(out["properties"]["title"]["type"] == "string");
    CHECK(out["properties"]["nights"]["minimum"] == 0);
    CHECK(out["properties"]["point"]["minItems"] == 3);
    CHECK(out.dump().find("additionalProperties") == std::string::npos);
  }
  SECTION("the recorded declarations are already in the subset: compiled unchanged") {
    WIRE_FIXTURES_OR_SKIP(dir, "gemini");
    const Json request = fixture(*dir, "request_function_declarations_cookbook.json");
    for (const auto& d : request["tools"][0]["function_declarations"]) {
      INFO(d["name"]);
      CHECK(gem(d["parameters"], "t") == d["parameters"]);
    }
    const Json tools = fixture(*dir, "tools_function_calling_config_cookbook.json");
    const Json& color = tools["function_declarations"][1]["parameters"];
    CHECK(gem(color, "t") == color);
  }
}

TEST_CASE("Gemini schema dialect: what it refuses names the tool, the field and Gemini", "[gemini][schema]") {
  const auto property = [](const char* schema) {
    return Json{{"type", "object"}, {"properties", {{"field", Json::parse(schema)}}}};
  };
  const auto refused = [&](const char* schema, const std::string& what) {
    INFO(schema);
    const std::string why = refusal_of(property(schema));
    CHECK_THAT(why, Catch::Contains("Gemini cannot express") && Catch::Contains(what) &&
                        Catch::Contains("at tool 'lookup' arguments.field"));
  };
  refused(R"({"type":"integer","exclusiveMinimum":0})", "'exclusiveMinimum'");
  refused(R"({"type":"number","exclusiveMaximum":1})", "'exclusiveMaximum'");
  refused(R"({"type":"integer","multipleOf":5})", "'multipleOf'");
  refused(R"({"type":"array","items":{"type":"string"},"uniqueItems":true})", "'uniqueItems'");
  refused(R"({"oneOf":[{"type":"string"},{"type":"integer"}]})", "'oneOf'");
  refused(R"({"allOf":[{"type":"string"}]})", "'allOf'");
  refused(R"({"type":"string","not":{"enum":["x"]}})", "'not'");
  refused(R"({"type":"string","if":{"minLength":1},"then":{"maxLength":3}})", "'if'");
  refused(R"({"type":"object","properties":{"a":{"type":"string"}},"patternProperties":{"^x":{"type":"string"}}})", "'patternProperties'");
  refused(R"({"type":"object","properties":{"a":{"type":"string"}},"propertyNames":{"pattern":"^a"}})", "'propertyNames'");
  refused(R"({"type":"object","additionalProperties":{"type":"integer"}})", "the open object (a map");
  refused(R"({"type":"object","additionalProperties":true})", "the open object (a map");
  refused(R"({"type":"object"})", "an object without properties");
  refused(R"({"type":"integer","enum":[1,2,3]})", "a non-string enum value (1");
  refused(R"({"const":3})", "a 'const' that is not a string");
  refused(R"({"type":["string","integer"]})", "a list of types");
  refused(R"({"type":"null"})", "a value that can only be null");
  refused(R"({})", "the untyped value");
  refused(R"({"type":"array"})", "an array without 'items'");
  refused(R"({"type":"array","items":[{"type":"string"}]})", "tuple 'items'");
  refused(R"({"$ref":"#/properties/other"})", "the reference '#/properties/other'");
  refused(R"({"$ref":"#/$defs/Missing"})", "a missing definition");
  // A recursive $ref names the field where the recursion closes.
  const Json tree = Json::parse(R"({"type":"object","$defs":{"Node":{"type":"object","properties":{"label":{"type":"string"},
      "next":{"$ref":"#/$defs/Node"}}}},"properties":{"head":{"$ref":"#/$defs/Node"}}})");
  CHECK_THAT(refusal_of(tree, "tool 'walk' arguments"),
             Catch::Contains("Gemini cannot express the recursive reference '#/$defs/Node'") &&
                 Catch::Contains("at tool 'walk' arguments.head.next"));
  // Deeper fields are named by their path; array items by [].
  CHECK_THAT(refusal_of(property(R"({"type":"array","items":{"type":"object","properties":{"q":{"type":"integer","exclusiveMinimum":0}}}})")),
             Catch::Contains("at tool 'lookup' arguments.field[].q"));
  // The root of a tool's arguments must be an object.
  CHECK_THAT(refusal_of(Json{{"type", "string"}}), Catch::Contains("Gemini cannot express arguments that are not an object"));
  // An output schema need not be an object.
  CHECK(gem(Json{{"type", "array"}, {"items", {{"type", "string"}}}}, "the output schema", false) ==
        Json({{"type", "array"}, {"items", {{"type", "string"}}}}));
}

// ---------------------------------------------------------------- requests

TEST_CASE("Gemini request body: the recorded request shapes", "[gemini][request]") {
  WIRE_FIXTURES_OR_SKIP(dir, "gemini");
  SECTION("function declarations and a user turn (cookbook)") {
    const Json recorded = fixture(*dir, "request_function_declarations_cookbook.json");
    std::vector<ToolSpec> specs;
    for (const auto& d : recorded["tools"][0]["function_declarations"]) {
      specs.push_back(declared(d["name"], d["description"], d["parameters"]));
    }
    std::vector<const ToolSpec*> tools;
    for (const auto& s : specs) tools.push_back(&s);
    const std::vector<Message> history{Message::user(recorded["contents"]["parts"]["text"].get<std::string>())};
    const Json body = Json::parse(gemini_generate_body({"gemini/m", "", history, tools}, {}).dump());
    CHECK(body["tools"][0]["functionDeclarations"] == recorded["tools"][0]["function_declarations"]);
    CHECK(body["contents"] == Json::array({{{"role", "user"}, {"parts", {recorded["contents"]["parts"]}}}}));
    CHECK_FALSE(body.contains("systemInstruction"));
    CHECK_FALSE(body.contains("toolConfig"));
    CHECK_FALSE(body.contains("generationConfig"));
  }
  SECTION("a call with an id Gemini sent goes back with it, and its result with the same id (live)") {
    const Json recorded = fixture(*dir, "request_function_response_with_id_live.json");
    const Json& call = recorded["contents"][1]["parts"][0]["functionCall"];
    const std::vector<Message> history{
        Message::user("run bar for me please"),
        Message::assistant("", {ToolCall{call["id"], call["name"], call["args"], {}}}),
        Message::tool_result(call["id"], "bar", "hello")};
    const ToolSpec bar = declared("bar", "", Json::parse(R"({"type":"object","properties":{}})"));
    const ToolSpec* tools[] = {&bar};
    ModelSettings s;
    s.tool_choice = agentkit::ToolChoice::named("bar");
    const Json body = Json::parse(gemini_generate_body({"m", "", history, tools, nullptr, &s}, {}).dump());
    CHECK(body["contents"][0] == recorded["contents"][0]);
    CHECK(body["contents"][1] == recorded["contents"][1]);
    const Json& theirs = recorded["contents"][2]["parts"][0]["functionResponse"];
    const Json& ours = body["contents"][2]["parts"][0]["functionResponse"];
    CHECK(body["contents"][2]["role"] == "user");
    CHECK(ours["id"] == theirs["id"]);
    CHECK(ours["name"] == theirs["name"]);
    CHECK(ours["response"] == Json({{"output", "hello"}}));  // the SDK's documented key; pydantic-ai sends return_value
    CHECK(body["toolConfig"]["functionCallingConfig"]["mode"] == recorded["toolConfig"]["functionCallingConfig"]["mode"]);
    CHECK(body["toolConfig"]["functionCallingConfig"]["allowedFunctionNames"] == Json::array({"bar"}));
    // A tool without arguments declares no parameters.
    CHECK(body["tools"][0]["functionDeclarations"][0] == Json({{"name", "bar"}, {"description", ""}}));
  }
  SECTION("parallel calls decoded from a reply go back with the signature on the first part, results in one content") {
    const agentkit::ModelResponse reply =
        gemini_generate_response(fixture(*dir, "response_parallel_function_calls_thought_signature_live.json"));
    REQUIRE(reply.message.tool_calls.size() == 3);
    std::vector<Message> history{Message::user(""), reply.message};
    const char* topics[] = {"cars", "penguins", "cars"};
    for (std::size_t i = 0; i < 3; ++i) {
      history.push_back(Message::tool_result(reply.message.tool_calls[i].id, "generate_topic", topics[i]));
    }
    const std::string system = "Tell three jokes. Generate topics with the generate_topic tool.";
    const Json body = Json::parse(gemini_generate_body({"m", system, history, {}}, {}).dump());
    const Json recorded = fixture(*dir, "request_parallel_function_responses_live.json");
    CHECK(body["systemInstruction"]["parts"] == recorded["systemInstruction"]["parts"]);
    const Json& model_turn = body["contents"][1];
    const Json& theirs = recorded["contents"][1];
    CHECK(model_turn["role"] == "model");
    REQUIRE(model_turn["parts"].size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
      INFO("part " << i);
      Json their_call = theirs["parts"][i]["functionCall"];
      their_call.erase("id");  // client-minted by pydantic-ai; Gemini sent none, so neither do we
      CHECK(model_turn["parts"][i]["functionCall"] == their_call);
      CHECK(model_turn["parts"][i].contains("thoughtSignature") == theirs["parts"][i].contains("thoughtSignature"));
    }
    // Verbatim, as Gemini sent it (pydantic-ai re-encoded it URL-safe; the bytes are the same).
    const std::string sent = fixture(*dir, "response_parallel_function_calls_thought_signature_live.json")
                                 ["candidates"][0]["content"]["parts"][0]["thoughtSignature"];
    CHECK(model_turn["parts"][0]["thoughtSignature"] == sent);
    CHECK(url_safe(sent) == theirs["parts"][0]["thoughtSignature"]);
    const Json& results = body["contents"][2];
    CHECK(body["contents"].size() == 3);
    CHECK(results["role"] == "user");
    REQUIRE(results["parts"].size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
      const Json& r = results["parts"][i]["functionResponse"];
      CHECK(r == Json({{"name", "generate_topic"}, {"response", {{"output", topics[i]}}}}));
      CHECK(recorded["contents"][2]["parts"][i]["functionResponse"]["response"]["return_value"] == topics[i]);
    }
  }
  SECTION("the streamed call's signature goes back on its part (live stream, then its follow-up request)") {
    const auto reply = read_reply({read_file(*dir / "stream_function_call_thought_signature_live_crlf.sse")}, sse_head(), true);
    REQUIRE(reply.message.tool_calls.size() == 1);
    const std::vector<Message> history{Message::user("What is the capital of the user country? Call the tool"),
                                       reply.message,
                                       Message::tool_result(reply.message.tool_calls[0].id, "get_country", "Mexico")};
    const Json body = Json::parse(gemini_generate_body({"m", "", history, {}}, {}).dump());
    const Json recorded = fixture(*dir, "request_stream_function_response_live.json")["body"];
    CHECK(body["contents"][0] == recorded["contents"][0]);
    const Json& part = body["contents"][1]["parts"][0];
    Json their_call = recorded["contents"][1]["parts"][0]["functionCall"];
    their_call.erase("id");
    CHECK(part["functionCall"] == their_call);
    CHECK(url_safe(part["thoughtSignature"]) == recorded["contents"][1]["parts"][0]["thoughtSignature"]);
    CHECK(body["contents"][1]["parts"].size() == 1);
    CHECK(body["contents"][2]["parts"][0]["functionResponse"]["name"] == "get_country");
  }
  SECTION("tool_choice modes") {
    const ToolSpec bar = declared("bar", "", Json::parse(R"({"type":"object","properties":{"q":{"type":"string"}}})"));
    const ToolSpec* tools[] = {&bar};
    const std::vector<Message> history{Message::user("run bar for me please")};
    const auto mode = [&](agentkit::ToolChoice c) {
      ModelSettings s;
      s.tool_choice = c;
      return Json::parse(gemini_generate_body({"m", "", history, tools, nullptr, &s}, {}).dump())["toolConfig"]["functionCallingConfig"];
    };
    const Json recorded = fixture(*dir, "request_tool_config_any_noarg_live.json");
    CHECK(mode(agentkit::ToolChoice::required()) == Json({{"mode", recorded["toolConfig"]["functionCallingConfig"]["mode"]}}));
    CHECK(mode(agentkit::ToolChoice::automatic()) == Json({{"mode", "AUTO"}}));
    CHECK(mode(agentkit::ToolChoice::none()) == Json({{"mode", "NONE"}}));
  }
}

TEST_CASE("Gemini request body: content parts, system messages, other providers' reasoning", "[gemini][request][parts]") {
  const std::vector<Message> history{
      Message::system("Answer in French."),
      Message::user(std::vector<ContentPart>{agentkit::TextPart{"What is in these?"},
                                             agentkit::ImagePart{"image/png", "\x89PNG", ""},
                                             agentkit::ImagePart{"image/png", "", "https://example.com/a.png"},
                                             agentkit::ImagePart{"image/jpeg", "", "https://generativelanguage.googleapis.com/v1beta/files/abc"},
                                             agentkit::FilePart{"application/pdf", "%PDF", "a.pdf", ""},
                                             agentkit::FilePart{"application/zip", "PK", "a.zip", ""}}),
      Message::assistant(std::vector<ContentPart>{ReasoningPart{"theirs", "sig-anthropic", "", "anthropic"},
                                                  ReasoningPart{"I should look.", "sig-thought", "", "gemini"},
                                                  agentkit::TextPart{"A cat."}},
                         {ToolCall{"call_from_openai", "camera", Json::object(), {}}}),
      Message::tool_result("call_from_openai", "camera", std::vector<ContentPart>{agentkit::TextPart{"frame"}, agentkit::ImagePart{"image/jpeg", "JPEG", ""}}),
      Message::tool_result("call_2", "camera", "lens cap on", true)};
  const Json body = Json::parse(gemini_generate_body({"m", "", history, {}}, {}).dump());
  REQUIRE(body["contents"].size() == 4);
  CHECK(body["contents"][0] == Json({{"role", "user"}, {"parts", {{{"text", "Answer in French."}}}}}));
  const Json& user = body["contents"][1]["parts"];
  REQUIRE(user.size() == 6);
  CHECK(user[0] == Json({{"text", "What is in these?"}}));
  CHECK(user[1] == Json({{"inlineData", {{"mimeType", "image/png"}, {"data", agentkit::base64_encode("\x89PNG")}}}}));
  CHECK_THAT(user[2]["text"].get<std::string>(), Catch::Contains("https://example.com/a.png omitted: Gemini takes files as bytes or as Files API URIs"));
  CHECK(user[3] == Json({{"fileData", {{"mimeType", "image/jpeg"}, {"fileUri", "https://generativelanguage.googleapis.com/v1beta/files/abc"}}}}));
  CHECK(user[4] == Json({{"inlineData", {{"mimeType", "application/pdf"}, {"data", agentkit::base64_encode("%PDF")}}}}));
  CHECK_THAT(user[5]["text"].get<std::string>(), Catch::Contains("a.zip") && Catch::Contains("omitted"));
  const Json& model = body["contents"][2];
  CHECK(model["role"] == "model");
  CHECK(model["parts"] == Json::parse(R"([{"text":"I should look.","thought":true,"thoughtSignature":"sig-thought"},{"text":"A cat."},
      {"functionCall":{"name":"camera","args":{},"id":"call_from_openai"}}])"));
  CHECK(body.dump().find("sig-anthropic") == std::string::npos);
  CHECK(body.dump().find("theirs") == std::string::npos);
  // Both results of the turn in one content, in order; the image after them.
  const Json& results = body["contents"][3];
  CHECK(results["role"] == "user");
  CHECK(results["parts"] == Json::parse(R"([
      {"functionResponse":{"id":"call_from_openai","name":"camera","response":{"output":"frame"}}},
      {"functionResponse":{"id":"call_2","name":"camera","response":{"error":"lens cap on"}}},
      {"inlineData":{"mimeType":"image/jpeg","data":")" + agentkit::base64_encode("JPEG") + R"("}}])"));
  // Content over the caps never reaches the wire.
  CHECK_THROWS_AS(gemini_generate_body({"m", "", history, {}}, {.content_limits = {.max_part_bytes = 2}}), agentkit::ContentTooLarge);
}

TEST_CASE("Gemini settings map to generationConfig and toolConfig, and what Gemini cannot take is refused", "[gemini][settings]") {
  const auto tool = weather_tool();
  const agentkit::ToolSpec* tools[] = {&tool->spec()};
  const std::vector<Message> history{Message::user("hi")};
  const auto body_with = [&](ModelSettings s, const Schema* output = nullptr) {
    ModelRequest request{"m", "", history, tools, output, &s};
    return Json::parse(gemini_generate_body(request, {}).dump());
  };
  ModelSettings s;
  s.temperature = 0.2;
  s.top_p = 0.9;
  s.max_output_tokens = 64;
  s.stop = std::vector<std::string>{"END"};
  s.seed = 7;
  s.thinking_budget_tokens = 2048;
  s.parallel_tool_calls = true;
  s.extra = {{"safetySettings", {{{"category", "HARM_CATEGORY_HARASSMENT"}, {"threshold", "BLOCK_NONE"}}}},
             {"generationConfig", {{"candidateCount", 1}}}};
  const Json body = body_with(s);
  CHECK(body["generationConfig"] == Json::parse(R"({"temperature":0.2,"topP":0.9,"maxOutputTokens":64,"stopSequences":["END"],
      "seed":7,"thinkingConfig":{"thinkingBudget":2048,"includeThoughts":true},"candidateCount":1})"));
  CHECK(body["safetySettings"][0]["threshold"] == "BLOCK_NONE");
  CHECK_FALSE(body.contains("toolConfig"));
  ModelSettings effort;
  effort.reasoning_effort = agentkit::ReasoningEffort::low;
  CHECK(body_with(effort)["generationConfig"]["thinkingConfig"] == Json({{"thinkingLevel", "low"}, {"includeThoughts", true}}));
  const Schema answer = {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}, {"additionalProperties", false}};
  const Json structured = body_with({}, &answer);
  CHECK(structured["generationConfig"]["responseMimeType"] == "application/json");
  CHECK(structured["generationConfig"]["responseSchema"] == Json::parse(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})"));
  CHECK_FALSE(body_with({}).contains("generationConfig"));
  CHECK(body_with({})["tools"][0]["functionDeclarations"][0]["parameters"]["properties"]["city"]["type"] == "string");

  const auto refused = [&](ModelSettings bad, const std::string& setting, const Schema* output = nullptr) {
    try {
      body_with(bad, output);
      FAIL("accepted " << setting);
    } catch (const UnsupportedSetting& e) {
      CHECK(e.setting() == setting);
      CHECK(e.provider() == "Gemini");
      CHECK(e.code() == ErrorCode::invalid_argument);
    }
  };
  ModelSettings serial;
  serial.parallel_tool_calls = false;
  refused(serial, "parallel_tool_calls");
  ModelSettings both;
  both.thinking_budget_tokens = 1024;
  both.reasoning_effort = agentkit::ReasoningEffort::high;
  refused(both, "reasoning_effort");
  ModelSettings stops;
  stops.stop = std::vector<std::string>{"a", "b", "c", "d", "e", "f"};
  refused(stops, "stop");
  ModelSettings seed;
  seed.seed = std::int64_t{1} << 40;
  refused(seed, "seed");
  ModelSettings named;
  named.tool_choice = agentkit::ToolChoice::named("other_tool");
  refused(named, "tool_choice");
  // A schema Gemini cannot take is a definition error, never a weakened schema.
  const Schema map = {{"type", "object"}, {"additionalProperties", {{"type", "integer"}}}};
  CHECK_THROWS_WITH(body_with({}, &map), Catch::Contains("Gemini cannot express the open object (a map") &&
                                             Catch::Contains("the output schema"));
  // Without tools, required is refused; none is just nothing to send.
  ModelSettings required;
  required.tool_choice = agentkit::ToolChoice::required();
  CHECK_THROWS_AS(gemini_generate_body({"m", "", history, {}, nullptr, &required}, {}), UnsupportedSetting);
}

// ----------------------------------------------------------------- replies

TEST_CASE("Gemini replies: the recorded bodies decode", "[gemini][reply]") {
  WIRE_FIXTURES_OR_SKIP(dir, "gemini");
  const auto call = gemini_generate_response(fixture(*dir, "response_function_call_cookbook.json"));
  REQUIRE(call.message.tool_calls.size() == 1);
  CHECK(call.message.tool_calls[0].name == "find_theaters");
  CHECK(call.message.tool_calls[0].arguments == Json({{"movie", "Barbie"}, {"location", "Mountain View, CA"}}));
  CHECK(call.message.tool_calls[0].id == "gemini_call_0");  // Gemini sent none: a synthetic id
  CHECK(call.finish_reason == "tool_calls");  // finishReason is STOP for calls too
  CHECK(call.message.content.empty());
  CHECK(call.usage == agentkit::Usage{});
  CHECK(call.id.empty());  // the cookbook's reply has no responseId, nor modelVersion
  CHECK(call.model.empty());

  const auto noargs = gemini_generate_response(fixture(*dir, "response_function_call_noargs_live.json"));
  REQUIRE(noargs.message.tool_calls.size() == 1);
  CHECK(noargs.message.tool_calls[0].arguments == Json::object());
  CHECK(noargs.message.tool_calls[0].id == "gemini_call_LFteaOOfMaPG1PIPi5qVEA_0");
  CHECK(noargs.usage.input_tokens == 21);
  CHECK(noargs.usage.output_tokens == 1);
  CHECK(noargs.id == "LFteaOOfMaPG1PIPi5qVEA");
  CHECK(noargs.model == "gemini-2.0-flash");

  const Json parallel_body = fixture(*dir, "response_parallel_function_calls_thought_signature_live.json");
  const auto parallel = gemini_generate_response(parallel_body);
  REQUIRE(parallel.message.tool_calls.size() == 3);
  CHECK(parallel.message.tool_calls[0].id != parallel.message.tool_calls[1].id);
  CHECK(parallel.message.tool_calls[1].id != parallel.message.tool_calls[2].id);
  // The first call's signature, kept as Gemini-only reasoning after the content.
  REQUIRE(parallel.message.content.size() == 1);
  CHECK(std::get<ReasoningPart>(parallel.message.content[0]) ==
        ReasoningPart{"", parallel_body["candidates"][0]["content"]["parts"][0]["thoughtSignature"], "", "gemini"});
  CHECK(parallel.message.text().empty());
  CHECK(parallel.usage.input_tokens == 83);
  CHECK(parallel.usage.output_tokens == 30 + 190);  // thoughts are billed as output
  CHECK(parallel.id == "wOd8abGuO5rgz7IP5tLEGA");
  CHECK(parallel.model == "gemini-3-flash-preview");

  const auto answer = gemini_generate_response(fixture(*dir, "response_after_function_response_cookbook.json"));
  CHECK(answer.message.text() == "OK. I found two theaters in Mountain View that are showing the Barbie movie: AMC Mountain View 16 and Regal Edwards 14.");
  CHECK(answer.finish_reason == "stop");
  CHECK(answer.message.tool_calls.empty());

  // The notebook fragments, completed into a reply.
  for (const char* name : {"response_mode_any_fragment_cookbook.txt", "response_mode_auto_noargs_fragment_cookbook.txt"}) {
    const auto r = gemini_generate_response(Json::parse("{\"candidates\": [{" + read_file(*dir / name) + " \"index\": 0}]}"));
    REQUIRE(r.message.tool_calls.size() == 1);
    CHECK(r.message.tool_calls[0].arguments.is_object());
  }
}

TEST_CASE("Gemini replies: thoughts, signatures on text, finish reasons, blocked prompts", "[gemini][reply]") {
  const Json thoughts = Json::parse(R"({"candidates":[{"content":{"role":"model","parts":[
      {"text":"Weighing the options.","thought":true},
      {"text":"Paris.","thoughtSignature":"sig-text"}]},"finishReason":"STOP"}],
      "usageMetadata":{"promptTokenCount":10,"cachedContentTokenCount":4,"candidatesTokenCount":2,"thoughtsTokenCount":5}})");
  const auto r = gemini_generate_response(thoughts);
  CHECK(r.message.text() == "Paris.");
  REQUIRE(r.message.content.size() == 3);
  CHECK(std::get<ReasoningPart>(r.message.content[0]) == ReasoningPart{"Weighing the options.", "", "", "gemini"});
  CHECK(std::get<ReasoningPart>(r.message.content[1]) == ReasoningPart{"", "sig-text", "", "gemini"});
  CHECK(r.usage == agentkit::Usage{10, 7, 4});
  // Sent back: the same parts, the signature on the text it came with.
  const std::vector<Message> history{Message::user("Capital of France?"), r.message};
  const Json body = Json::parse(gemini_generate_body({"m", "", history, {}}, {}).dump());
  CHECK(body["contents"][1]["parts"] == Json::parse(R"([{"text":"Weighing the options.","thought":true},
      {"text":"Paris.","thoughtSignature":"sig-text"}])"));

  const auto with_finish = [](const char* reason) {
    Json body = Json::parse(R"({"candidates":[{"content":{"parts":[{"text":"partial"}]},"finishMessage":"why"}]})");
    body["candidates"][0]["finishReason"] = reason;
    return body;
  };
  CHECK(gemini_generate_response(with_finish("MAX_TOKENS")).finish_reason == "length");
  for (const char* reason : {"SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII"}) {
    const auto filtered = gemini_generate_response(with_finish(reason));
    CHECK(filtered.finish_reason == "content_filter");
    REQUIRE(filtered.message.content.size() == 2);
    CHECK_THAT(std::get<agentkit::RefusalPart>(filtered.message.content[1]).text,
               Catch::Contains(std::string("finishReason ") + reason) && Catch::Contains("why"));
  }
  const auto malformed = error_of([&] { gemini_generate_response(with_finish("MALFORMED_FUNCTION_CALL")); });
  CHECK(malformed.code() == ErrorCode::protocol);
  CHECK_THAT(malformed.what(), Catch::Contains("MALFORMED_FUNCTION_CALL"));

  const auto blocked = error_of([] {
    gemini_generate_response(Json::parse(R"({"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":8}})"));
  });
  CHECK(blocked.code() == ErrorCode::permission_denied);
  CHECK_THAT(blocked.what(), Catch::Contains("blocked the prompt (blockReason SAFETY)"));
  CHECK(blocked.usage().input_tokens == 8);
  CHECK_FALSE(blocked.retryable());
  CHECK(error_of([] { gemini_generate_response(Json::object()); }).code() == ErrorCode::protocol);
  CHECK(error_of([] { gemini_generate_response(Json{{"candidates", "x"}}); }).code() == ErrorCode::protocol);
  CHECK(error_of([] { gemini_generate_response(Json::parse(R"({"candidates":[{"content":{"parts":[1]}}]})")); }).code() ==
        ErrorCode::protocol);
  CHECK(error_of([] { gemini_generate_response(Json::parse(R"({"candidates":[{}],"usageMetadata":{"promptTokenCount":-1}})")); })
            .code() == ErrorCode::protocol);
  // Arguments that are not an object reach the engine as text, for it to refuse to the model.
  const auto odd = gemini_generate_response(Json::parse(R"({"candidates":[{"content":{"parts":[{"functionCall":{"name":"a","args":[1,2]}}]}}]})"));
  REQUIRE(odd.message.tool_calls.size() == 1);
  CHECK(odd.message.tool_calls[0].arguments_text == "[1,2]");
}

TEST_CASE("thought signatures survive a RunState document and go back byte for byte", "[gemini][reply][state]") {
  // Text, then two calls of which only the second is signed.
  const Json reply = Json::parse(R"({"candidates":[{"content":{"role":"model","parts":[
      {"text":"Checking both."},
      {"functionCall":{"name":"get_weather","args":{"city":"Paris"}}},
      {"functionCall":{"name":"get_weather","args":{"city":"Oslo"}},"thoughtSignature":"c2lnLTI="}]},"finishReason":"STOP"}]})");
  const Message message = gemini_generate_response(reply).message;
  agentkit::RunState state;
  state.run_id = "r";
  state.history = {Message::user("Weather?"), message};
  const auto back = agentkit::RunState::from_json(Json::parse(state.to_json().dump()));
  REQUIRE(back.history.size() == 2);
  CHECK(back.history[1] == message);
  const Json body = Json::parse(gemini_generate_body({"m", "", back.history, {}}, {}).dump());
  CHECK(body["contents"][1]["parts"] == Json::parse(R"([{"text":"Checking both."},
      {"functionCall":{"name":"get_weather","args":{"city":"Paris"}}},
      {"functionCall":{"name":"get_weather","args":{"city":"Oslo"}},"thoughtSignature":"c2lnLTI="}])"));
}

TEST_CASE("Gemini replies: images the model generated come back as image parts, and go back as they came", "[gemini][reply][images]") {
  // A signed image, as image models send one (the signature on the image part).
  const std::string png("\x89PNG\r\n\x1a\n\0\x01", 10);
  Json reply = Json::parse(R"({"candidates":[{"content":{"role":"model","parts":[
      {"text":"Here is the cat."},
      {"inlineData":{"mimeType":"image/png","data":""},"thoughtSignature":"sig-img"}]},"finishReason":"STOP"}]})");
  reply["candidates"][0]["content"]["parts"][1]["inlineData"]["data"] = agentkit::base64_encode(png);
  const auto r = gemini_generate_response(reply);
  REQUIRE(r.message.content.size() == 3);
  CHECK(r.message.text() == "Here is the cat.");
  CHECK(std::get<ReasoningPart>(r.message.content[1]) == ReasoningPart{"", "sig-img", "", "gemini"});
  CHECK(std::get<agentkit::ImagePart>(r.message.content[2]) == agentkit::ImagePart{"image/png", png, ""});
  // The next request carries the image back on a model turn, its signature on it.
  const std::vector<Message> history{Message::user("Draw a cat"), r.message, Message::user("Make it orange")};
  const Json body = Json::parse(gemini_generate_body({"m", "", history, {}}, {}).dump());
  Json expected = Json::parse(R"([{"text":"Here is the cat."},
      {"inlineData":{"mimeType":"image/png","data":""},"thoughtSignature":"sig-img"}])");
  expected[1]["inlineData"]["data"] = agentkit::base64_encode(png);
  CHECK(body["contents"][1]["parts"] == expected);
  // Streamed, the same parts give the same message.
  const auto streamed = read_reply({event(reply)}, sse_head(), true);
  CHECK(streamed.message == r.message);

  // An inlineData that is not an image, or not base64, is the reply's error: never dropped, never a crash.
  Json audio = reply;
  audio["candidates"][0]["content"]["parts"][1]["inlineData"]["mimeType"] = "audio/wav";
  CHECK(error_of([&] { gemini_generate_response(audio); }).code() == ErrorCode::protocol);
  Json garbled = reply;
  garbled["candidates"][0]["content"]["parts"][1]["inlineData"]["data"] = "not base64!";
  CHECK_THAT(error_of([&] { gemini_generate_response(garbled); }).what(), Catch::Contains("not valid base64"));
  // A media type a RunState document would refuse to load (the fuzzer found it): refused here, not saved.
  Json mistyped = reply;
  mistyped["candidates"][0]["content"]["parts"][1]["inlineData"]["mimeType"] = "image/pn\x7fg";
  CHECK_THAT(error_of([&] { gemini_generate_response(mistyped); }).what(), Catch::Contains("not a media type"));
  Json empty = reply;  // no bytes: an image part with neither data nor a URL
  empty["candidates"][0]["content"]["parts"][1]["inlineData"]["data"] = "";
  CHECK_THAT(error_of([&] { gemini_generate_response(empty); }).what(), Catch::Contains("exactly one of data and url"));
  Json untyped = reply;
  untyped["candidates"][0]["content"]["parts"][1]["inlineData"].erase("mimeType");
  CHECK(error_of([&] { gemini_generate_response(untyped); }).code() == ErrorCode::protocol);
}

// ----------------------------------------------------------------- streams

TEST_CASE("Gemini streams: the recorded streams in any chunking", "[gemini][stream]") {
  WIRE_FIXTURES_OR_SKIP(dir, "gemini");
  const std::string calls = read_file(*dir / "stream_function_call_thought_signature_live_crlf.sse");
  const std::string text = read_file(*dir / "stream_after_function_response_live_crlf.sse");
  const std::string signature = Json::parse(calls.substr(6, calls.find("\r\n") - 6))["candidates"][0]["content"]["parts"][0]["thoughtSignature"];
  const auto whole_calls = read_reply({calls}, sse_head(), true);
  REQUIRE(whole_calls.message.tool_calls.size() == 1);
  CHECK(whole_calls.message.tool_calls[0].name == "get_country");
  CHECK(whole_calls.message.tool_calls[0].arguments == Json::object());
  CHECK(whole_calls.message.tool_calls[0].id == "gemini_call_QUVVadTSNJ6_qtsPvN7J8Q0_0");
  CHECK(whole_calls.finish_reason == "tool_calls");
  CHECK(whole_calls.usage == agentkit::Usage{29, 212, 0});
  CHECK(whole_calls.id == "QUVVadTSNJ6_qtsPvN7J8Q0");
  CHECK(whole_calls.model == "gemini-3-pro-preview");
  REQUIRE(whole_calls.message.content.size() == 1);  // the call's signature; the closing {"text": ""} adds nothing
  CHECK(std::get<ReasoningPart>(whole_calls.message.content[0]).signature == signature);
  const auto whole_text = read_reply({text}, sse_head(), true);
  CHECK(whole_text.message.text() == "The capital of Mexico is Mexico City.");
  CHECK(whole_text.finish_reason == "stop");
  CHECK(whole_text.usage.input_tokens == 257);  // the last usageMetadata
  CHECK(whole_text.usage.output_tokens == 8);
  CHECK(whole_text.id == "REVVabaiCdq4qtsPnZu96Qo");
  CHECK(whole_text.model == "gemini-3-pro-preview");

  for (const auto* body : {&calls, &text}) {
    const auto& whole = body == &calls ? whole_calls : whole_text;
    for (std::size_t cut = 1; cut < body->size(); ++cut) {
      const auto r = read_reply({body->substr(0, cut), body->substr(cut)}, sse_head(), true);
      CHECK(r.message == whole.message);
      CHECK(r.usage == whole.usage);
      CHECK(r.id == whole.id);
      CHECK(r.model == whole.model);
    }
    std::mt19937 rng(20261203);
    for (int round = 0; round < 20; ++round) {
      std::vector<std::string> chunks;
      for (std::size_t at = 0; at < body->size();) {
        const std::size_t n = std::min<std::size_t>(1 + rng() % 23, body->size() - at);
        chunks.push_back(body->substr(at, n));
        at += n;
      }
      const auto r = read_reply(chunks, sse_head(), true);
      CHECK(r.message == whole.message);
      CHECK(r.finish_reason == whole.finish_reason);
    }
  }
  // The headers recorded with the stream: the content type the reader goes by.
  const Json headers = fixture(*dir, "stream_function_call_thought_signature_live_crlf.headers.json");
  HttpResponse head;
  head.status = 200;
  head.headers = {{"content-type", headers["content-type"][0]}};
  CHECK(read_reply({calls}, head, true).message == whole_calls.message);
}

TEST_CASE("Gemini streams: deltas as they come, a stream cut between events is truncated", "[gemini][stream][fail_closed]") {
  std::vector<StreamDelta> deltas;
  GeminiStreamAccumulator acc([&](StreamDelta d) { deltas.push_back(std::move(d)); });
  const auto feed = [&](const Json& chunk) {
    SseEvent e;
    e.data = chunk.dump();
    acc.on_event(e);
  };
  feed(Json::parse(R"({"candidates":[{"content":{"parts":[{"text":"Let me ","thought":true}]}}]})"));
  feed(Json::parse(R"({"candidates":[{"content":{"parts":[{"text":"check.","thought":true}]}}]})"));
  feed(text_chunk("Sure: "));
  CHECK_FALSE(acc.done());
  feed(Json::parse(parallel_calls_stream().substr(6, parallel_calls_stream().find("\r\n") - 6)));
  feed(text_chunk("", "STOP"));
  REQUIRE(acc.done());
  feed(text_chunk("after the end"));  // ignored
  const auto r = acc.finish();
  CHECK(r.message.text() == "Sure: ");
  CHECK(std::get<ReasoningPart>(r.message.content.at(0)).text == "Let me check.");
  REQUIRE(r.message.tool_calls.size() == 2);
  CHECK(r.message.tool_calls[0].id == "gemini_call_r1_0");
  CHECK(r.message.tool_calls[1].id == "gemini_call_r1_1");
  CHECK(r.finish_reason == "tool_calls");
  REQUIRE(deltas.size() == 5);
  CHECK(std::get<agentkit::ReasoningDelta>(deltas[0]).text == "Let me ");
  CHECK(std::get<agentkit::TextDelta>(deltas[2]).text == "Sure: ");
  const auto& second = std::get<agentkit::ToolCallDelta>(deltas[4]);
  CHECK(second.index == 1);
  CHECK(second.name == "get_weather");
  CHECK(Json::parse(second.arguments) == Json({{"city", "Oslo"}}));

  const std::string body = parallel_calls_stream();
  const std::string first = body.substr(0, body.find("\r\n\r\n") + 4);
  SECTION("cut cleanly after a complete chunk without finishReason") {
    const auto e = error_of([&] { read_reply({first}, sse_head(), true); });
    CHECK(e.code() == ErrorCode::truncated);
    CHECK_THAT(e.what(), Catch::Contains("finishReason") && Catch::Contains("generativelanguage.googleapis.com"));
    CHECK(e.usage().input_tokens == 40);  // what was reported before the cut is charged
  }
  SECTION("cut inside the last event") {
    const auto e = error_of([&] { read_reply({body.substr(0, body.size() - 12)}, sse_head(), true); });
    CHECK((e.code() == ErrorCode::truncated || e.code() == ErrorCode::protocol));
  }
  SECTION("an error event under HTTP 200") {
    const auto e = error_of([&] {
      read_reply({first + event(Json::parse(R"({"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}})"))},
                 sse_head(), true);
    });
    CHECK(e.code() == ErrorCode::rate_limited);
    CHECK_THAT(e.what(), Catch::Contains("Resource has been exhausted"));
    CHECK(e.usage().input_tokens == 40);
  }
  SECTION("a blocked prompt, a malformed call") {
    CHECK(error_of([&] { read_reply({event(Json::parse(R"({"promptFeedback":{"blockReason":"OTHER"}})"))}, sse_head(), true); }).code() ==
          ErrorCode::permission_denied);
    const auto bad = error_of([&] { read_reply({event(text_chunk("", "MALFORMED_FUNCTION_CALL"))}, sse_head(), true); });
    CHECK(bad.code() == ErrorCode::protocol);
    CHECK(bad.usage().input_tokens == 7);
  }
  SECTION("an HTML page, an event stream answering a non-streaming request, data that is not JSON") {
    for (bool stream : {true, false}) {
      const auto e = error_of([&] { read_reply({"<html>Sign in</html>"}, {200, {{"content-type", "text/html"}}}, stream); });
      CHECK(e.code() == ErrorCode::protocol);
      CHECK_THAT(e.what(), Catch::Contains("text/html"));
    }
    CHECK(error_of([&] { read_reply({body}, sse_head(), false); }).code() == ErrorCode::protocol);
    CHECK(error_of([&] { read_reply({"data: not json\r\n\r\n"}, sse_head(), true); }).code() == ErrorCode::protocol);
    CHECK(error_of([&] { read_reply({"data: [1]\r\n\r\n"}, sse_head(), true); }).code() == ErrorCode::protocol);
  }
  SECTION("a whole JSON reply answering a streaming request is that reply") {
    const auto whole = read_reply({text_chunk("Bonjour.", "STOP").dump()}, {200, {{"content-type", "application/json"}}}, true);
    CHECK(whole.message.text() == "Bonjour.");
  }
  SECTION("an endless stream of fragments is cut off at the cap") {
    GeminiStreamAccumulator big;
    SseEvent e;
    e.data = text_chunk(std::string(1 << 20, 'x')).dump();
    const auto over = error_of([&] {
      for (int i = 0; i < 20; ++i) big.on_event(e);
    });
    CHECK(over.code() == ErrorCode::protocol);
  }
}

// ------------------------------------------------------------------ routing

TEST_CASE("gemini/<model> routes to the Gemini adapter, keys from GEMINI_API_KEY, else GOOGLE_API_KEY", "[gemini][models]") {
  const auto target = resolve_model("gemini/gemini-2.5-flash", {.gemini_api_key = "g-key"});
  CHECK(target.provider == "gemini");
  CHECK(target.model == "gemini-2.5-flash");
  CHECK(target.api_key == "g-key");
  CHECK(target.api_key_variable == "GEMINI_API_KEY");
  CHECK(target.api_key_required);
  auto model = make_model("gemini/gemini-2.5-flash", {}, nullptr);
  auto* gemini = dynamic_cast<GeminiModel*>(model.get());
  REQUIRE(gemini != nullptr);
  CHECK(gemini->options().base_url == "https://generativelanguage.googleapis.com/v1beta");
  CHECK(gemini->options().model == "gemini-2.5-flash");
  CHECK(resolve_model("gemini/m@https://proxy.example/v1beta", {}).base_url == "https://proxy.example/v1beta");
  CHECK_THROWS_AS(make_model("gemini/m@proxy.example/v1beta", {}, nullptr), agentkit::Error);

  struct Saved {
    const char* name;
    std::optional<std::string> value;
  };
  std::vector<Saved> saved;
  for (const char* name : {"GEMINI_API_KEY", "GOOGLE_API_KEY", "GEMINI_BASE_URL"}) {
    const char* v = std::getenv(name);
    saved.push_back({name, v ? std::optional<std::string>(v) : std::nullopt});
  }
  ::setenv("GEMINI_API_KEY", "from-gemini", 1);
  ::setenv("GOOGLE_API_KEY", "from-google", 1);
  ::setenv("GEMINI_BASE_URL", "https://gemini-proxy.example/v1beta", 1);
  CHECK(settings_from_environment().gemini_api_key == "from-gemini");
  CHECK(settings_from_environment().gemini_base_url == "https://gemini-proxy.example/v1beta");
  CHECK(settings_from_environment({.gemini_api_key = "given"}).gemini_api_key == "given");
  ::unsetenv("GEMINI_API_KEY");
  CHECK(settings_from_environment().gemini_api_key == "from-google");
  for (const auto& s : saved) {
    if (s.value) {
      ::setenv(s.name, s.value->c_str(), 1);
    } else {
      ::unsetenv(s.name);
    }
  }
}

// ----------------------------------------------------------------- loopback

TEST_CASE("Gemini over loopback: the key in a header only, faults typed, retries where they may", "[gemini][loopback][fail_closed]") {
  WireServer server;
  const std::string key = "AIzaSy-test-secret-0123456789";
  auto transport = std::make_shared<Transport>(TransportOptions{.max_retries = 0});
  GeminiModel model(transport, {.base_url = server.base_url() + "/v1beta/", .api_key = key, .model = "gemini-test"});
  GeminiModel whole(transport, {.base_url = server.base_url() + "/v1beta", .api_key = key, .model = "gemini-test", .stream = false});
  auto ctx = agentkit::testing::make_test_ctx();
  const std::vector<Message> history{Message::user("hi")};
  const ModelRequest request{"gemini/gemini-test", "Be brief.", history, {}};

  server.enqueue(sse(event(text_chunk("Hello ")) + event(text_chunk("there.", "STOP"))));
  CHECK(model.complete(request, ctx).message.text() == "Hello there.");
  WireServer::Response json;
  json.headers = {{"content-type", "application/json"}};
  json.body = text_chunk("Whole.", "STOP").dump(2);  // non-streaming bodies come pretty-printed
  server.enqueue(json);
  CHECK(whole.complete(request, ctx).message.text() == "Whole.");
  auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].path == "/v1beta/models/gemini-test:streamGenerateContent?alt=sse");
  CHECK(requests[1].path == "/v1beta/models/gemini-test:generateContent");
  for (const auto& r : requests) {
    CHECK(r.header("x-goog-api-key") == key);
    CHECK(r.header("authorization").empty());
    CHECK(r.path.find(key) == std::string::npos);
    CHECK(r.header("content-type") == "application/json");
  }
  CHECK(Json::parse(requests[0].body)["systemInstruction"] == Json({{"parts", {{{"text", "Be brief."}}}}}));

  SECTION("429 RESOURCE_EXHAUSTED: rate_limited, retryable, RetryInfo's delay as retry-after") {
    WireServer::Response limited;
    limited.status = 429;
    limited.headers = {{"content-type", "application/json"}};
    limited.body = R"({"error":{"code":429,"message":"Quota exceeded for generate_content_free_tier_requests","status":"RESOURCE_EXHAUSTED",
        "details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}})";
    if (auto dir = agentkit_test::wire_fixtures("gemini")) {
      // The recorded body has no RetryInfo: only the status counts there.
      WireServer::Response recorded = limited;
      recorded.body = read_file(*dir / "error_429_resource_exhausted_from_issue.json");
      server.enqueue(recorded);
      const auto e = error_of([&] { model.complete(request, ctx); });
      CHECK(e.code() == ErrorCode::rate_limited);
      CHECK(e.retryable());
      CHECK(e.http_status() == 429);
      CHECK_THAT(e.what(), Catch::Contains("You exceeded your current quota"));
    }
    server.enqueue(limited);
    const auto e = error_of([&] { model.complete(request, ctx); });
    CHECK(e.code() == ErrorCode::rate_limited);
    CHECK(e.retry_after() == std::chrono::milliseconds(37000));
  }
  SECTION("400 INVALID_ARGUMENT names Gemini's complaint") {
    WireServer::Response bad;
    bad.status = 400;
    bad.headers = {{"content-type", "application/json"}};
    bad.body = R"({"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"additionalProperties\"","status":"INVALID_ARGUMENT"}})";
    if (auto dir = agentkit_test::wire_fixtures("gemini")) bad.body = read_file(*dir / "error_400_unknown_schema_field_RECONSTRUCTED.json");
    server.enqueue(bad);
    const auto e = error_of([&] { model.complete(request, ctx); });
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK_FALSE(e.retryable());
    CHECK_THAT(e.what(), Catch::Contains("Unknown name \"additionalProperties\""));
  }
  SECTION("a server echoing the key in its error never puts it in ours") {
    WireServer::Response denied;
    denied.status = 400;
    denied.headers = {{"content-type", "application/json"}};
    denied.body = R"({"error":{"code":400,"message":"API key not valid: )" + key + R"(","status":"INVALID_ARGUMENT"}})";
    server.enqueue(denied);
    const auto e = error_of([&] { model.complete(request, ctx); });
    CHECK_THAT(e.what(), !Catch::Contains(key));
  }
  SECTION("5xx, a reset mid-stream, a truncated body") {
    WireServer::Response down;
    down.status = 503;
    down.headers = {{"content-type", "application/json"}};
    down.body = R"({"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}})";
    server.enqueue(down);
    const auto e = error_of([&] { model.complete(request, ctx); });
    CHECK(e.code() == ErrorCode::unavailable);
    CHECK(e.retryable());
    WireServer::Response reset = sse(event(text_chunk("Hel")) + event(text_chunk("lo", "STOP")));
    reset.fault = WireServer::Fault::reset_mid_stream;
    reset.fault_after_chunks = 1;
    server.enqueue(reset);
    CHECK(error_of([&] { model.complete(request, ctx); }).code() == ErrorCode::unavailable);
    WireServer::Response cut = sse(event(text_chunk("Hel")) + event(text_chunk("lo", "STOP")));
    cut.fault = WireServer::Fault::truncate;
    cut.fault_after_chunks = 1;
    server.enqueue(cut);
    const auto t = error_of([&] { model.complete(request, ctx); });
    CHECK((t.code() == ErrorCode::unavailable || t.code() == ErrorCode::truncated));
  }
  SECTION("a stream cut cleanly between events, with no framing to tell: truncated") {
    WireServer::Response cut = sse(event(text_chunk("Hello ")));
    cut.unframed = true;
    server.enqueue(cut);
    const auto e = error_of([&] { model.complete(request, ctx); });
    CHECK(e.code() == ErrorCode::truncated);
    CHECK_THAT(e.what(), Catch::Contains(server.base_url() + "/v1beta/models/gemini-test:streamGenerateContent"));
  }
  SECTION("a 200 HTML page from a proxy, streaming or not") {
    for (GeminiModel* m : {&model, &whole}) {
      WireServer::Response html;
      html.headers = {{"content-type", "text/html"}};
      html.body = "<html><body>Sign in to the proxy</body></html>";
      server.enqueue(html);
      const auto e = error_of([&] { m->complete(request, ctx); });
      CHECK(e.code() == ErrorCode::protocol);
      CHECK_THAT(e.what(), Catch::Contains("text/html"));
    }
  }
  SECTION("a 200 JSON error body is that error") {
    WireServer::Response error;
    error.headers = {{"content-type", "application/json"}};
    error.body = R"({"error":{"code":403,"message":"Permission denied on resource project","status":"PERMISSION_DENIED"}})";
    server.enqueue(error);
    CHECK(error_of([&] { whole.complete(request, ctx); }).code() == ErrorCode::permission_denied);
  }
}

TEST_CASE("a whole agent run through Gemini over loopback: parallel calls, the signature echoed, results in one turn",
          "[gemini][loopback][agent]") {
  WireServer server;
  WireServer::Response limited;
  limited.status = 429;
  limited.headers = {{"content-type", "application/json"}, {"retry-after", "0"}};
  limited.body = R"({"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}})";
  server.enqueue(limited);
  server.enqueue(sse(parallel_calls_stream()));
  server.enqueue(sse(event(text_chunk("Paris is sunny, ")) + event(text_chunk("Oslo is rainy.", "STOP"))));
  agentkit::Agent agent("forecaster", "gemini/gemini-3-test@" + server.base_url() + "/v1beta", "You report the weather.",
                        agentkit::cognition::react({weather_tool()}));
  auto ctx = agentkit::testing::make_test_ctx();
  ctx.models = model_resolver({.gemini_api_key = "gm-test-key-123456"});
  const auto result = agent.run("Weather in Paris and Oslo?", ctx);
  REQUIRE(result.stop_reason == agentkit::StopReason::answered);
  CHECK(result.output == "Paris is sunny, Oslo is rainy.");
  CHECK(result.usage.input_tokens == 40 + 7);
  CHECK(result.usage.output_tokens == 42 + 3);
  const auto requests = server.requests();
  REQUIRE(requests.size() == 3);  // the 429 was retried once
  CHECK(requests[1].header("x-goog-api-key") == "gm-test-key-123456");
  CHECK(requests[1].path == "/v1beta/models/gemini-3-test:streamGenerateContent?alt=sse");
  const Json first = Json::parse(requests[1].body);
  CHECK(first["tools"][0]["functionDeclarations"][0]["name"] == "get_weather");
  const Json last = Json::parse(requests[2].body);
  REQUIRE(last["contents"].size() == 3);
  CHECK(last["contents"][0] == Json({{"role", "user"}, {"parts", {{{"text", "Weather in Paris and Oslo?"}}}}}));
  // The model turn as Gemini sent it: the signature on the first call's part, no ids.
  CHECK(last["contents"][1] == Json::parse(std::string(R"({"role":"model","parts":[
      {"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":")") + kSignature + R"("},
      {"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}}]})"));
  // Both results in one user content, in call order.
  CHECK(last["contents"][2] == Json::parse(R"({"role":"user","parts":[
      {"functionResponse":{"name":"get_weather","response":{"output":"18C, sunny"}}},
      {"functionResponse":{"name":"get_weather","response":{"output":"9C, rain"}}}]})"));
  // The run's document holds what the next request needs.
  const auto state = agentkit::RunState::from_json(Json::parse(result.state.to_json().dump()));
  CHECK(state.history == result.state.history);

  // A stream cut between events fails the run truncated; the tools never run.
  WireServer::Response cut = sse(parallel_calls_stream().substr(0, parallel_calls_stream().find("\r\n\r\n") + 4));
  cut.unframed = true;
  server.enqueue(cut);
  auto cut_ctx = agentkit::testing::make_test_ctx();
  cut_ctx.models = model_resolver({.gemini_api_key = "gm-test-key-123456"});
  const auto failed = agent.run("Weather in Paris and Oslo?", cut_ctx);
  CHECK(failed.stop_reason == agentkit::StopReason::failed);
  REQUIRE(failed.failure);
  CHECK(failed.failure->code == ErrorCode::truncated);
  CHECK(failed.state.history.size() == 1);  // the task only: no call was admitted
  CHECK_THAT(failed.failure->message, !Catch::Contains("gm-test-key-123456"));
}

TEST_CASE("a tool Gemini cannot take fails the run before anything is sent", "[gemini][loopback][schema]") {
  WireServer server;
  auto tally = agentkit::tool("tally")
                   .doc("Sum the quantities of a basket keyed by item.")
                   .side_effecting(false)
                   .params("basket")
                   .fn([](const std::map<std::string, int>&) { return 0; });
  agentkit::Agent agent("shopper", "gemini/gemini-test@" + server.base_url() + "/v1beta", "You shop.",
                        agentkit::cognition::react({tally}));
  auto ctx = agentkit::testing::make_test_ctx();
  ctx.models = model_resolver({});
  const auto result = agent.run("Add up my basket", ctx);
  CHECK(result.stop_reason == agentkit::StopReason::failed);
  REQUIRE(result.failure);
  CHECK(result.failure->code == ErrorCode::invalid_argument);
  CHECK_THAT(result.failure->message, Catch::Contains("Gemini cannot express the open object (a map") &&
                                          Catch::Contains("tool 'tally' arguments.basket"));
  CHECK(server.requests().empty());
}
