// The schema compiler: every reference tool of the suite through every
// provider dialect, what each dialect rewrites, what it refuses (naming the
// tool, the field and the dialect), and the refusal reaching a run before
// anything goes on the wire.
#include <catch2/catch.hpp>

#include <array>
#include <map>
#include <optional>
#include <variant>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/errors.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/anthropic.h>
#include <agentkit/providers/models.h>
#include <agentkit/providers/ollama.h>
#include <agentkit/providers/openai.h>
#include <agentkit/providers/tool_format.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/testing/wire_server.h>

#include "../core/spec_types.h"

using agentkit::Json;
using agentkit::Schema;
using agentkit::ToolDefinitionError;
using agentkit::ToolSpec;
using agentkit::providers::compile_schema;
using agentkit::providers::SchemaDialect;

namespace {

constexpr SchemaDialect kDialects[] = {SchemaDialect::openai, SchemaDialect::openai_strict, SchemaDialect::anthropic,
                                       SchemaDialect::gemini, SchemaDialect::ollama};

// A tool as an MCP server declares one: hand-written JSON Schema.
ToolSpec declared(std::string name, Json parameters) {
  ToolSpec spec;
  spec.name = std::move(name);
  spec.description = "A declared tool";
  spec.parameters = std::move(parameters);
  return spec;
}

struct Reference {
  agentkit::ToolPtr tool;  // or
  std::optional<ToolSpec> spec;
  const ToolSpec& get() const { return tool ? tool->spec() : *spec; }
};

// The reference tools: one for each shape agentkit derives from C++ types,
// and the declared shapes an MCP server sends.
std::vector<Reference> reference_tools() {
  std::vector<Reference> out;
  const auto add = [&](agentkit::ToolPtr t) { out.push_back({std::move(t), std::nullopt}); };
  add(agentkit::tool("forecast")
          .doc("Return a short weather forecast for a city over the next few days.")
          .side_effecting(false)
          .params("city", agentkit::param("unit", "Temperature unit"), agentkit::opt("days", 3))
          .fn([](const std::string&, spec::Unit, int) { return std::string("mild"); }));
  add(agentkit::tool("search")
          .doc("Search the product catalogue with a structured filter.")
          .side_effecting(false)
          .fn([](const spec::Filter& f) { return f.limit; }));
  add(agentkit::tool("tally")
          .doc("Sum the quantities of a shopping basket keyed by item.")
          .side_effecting(false)
          .params("basket")
          .fn([](const std::map<std::string, int>&) { return 0; }));
  add(agentkit::tool("count_to")
          .doc("Count from one up to a given number.")
          .side_effecting(false)
          .params("n")
          .fn([](unsigned n) { return n; }));
  add(agentkit::tool("note")
          .doc("Save a note with an optional title.")
          .side_effecting(false)
          .params("text", "title")
          .fn([](const std::string&, const std::optional<std::string>&) { return 1; }));
  add(agentkit::tool("lookup")
          .doc("Look up a record by number or name.")
          .side_effecting(false)
          .params("key")
          .fn([](const std::variant<int, std::string>&) { return 1; }));
  add(agentkit::tool("move_to")
          .doc("Move the robot arm to a point in space.")
          .side_effecting(false)
          .params("point")
          .fn([](const std::array<double, 3>&) { return 1; }));
  add(agentkit::tool("price_all")
          .doc("Price a list of quotes at market rates.")
          .side_effecting(false)
          .params("quotes")
          .fn([](const std::vector<spec::Quote>&) { return 1; }));
  add(agentkit::tool("ping").doc("Check that the service answers at all.").side_effecting(false).fn([] { return 1; }));
  out.push_back({nullptr, declared("mcp_refs", Json::parse(R"({"type":"object",
      "$defs":{"Point":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}},
      "properties":{"from":{"$ref":"#/$defs/Point"},"to":{"$ref":"#/$defs/Point"}},"required":["from","to"]})"))});
  out.push_back({nullptr, declared("mcp_one_of", Json::parse(R"({"type":"object",
      "properties":{"target":{"oneOf":[{"type":"string"},{"type":"integer"}]}},"required":["target"]})"))});
  return out;
}

// Which reference tools each dialect refuses, and the field it names.
struct Refusal {
  std::string tool, field;
};
std::vector<Refusal> refused_by(SchemaDialect d) {
  switch (d) {
    case SchemaDialect::openai:
    case SchemaDialect::anthropic: return {};
    case SchemaDialect::openai_strict: return {{"tally", "basket"}, {"mcp_one_of", "target"}};
    case SchemaDialect::gemini: return {{"tally", "basket"}, {"mcp_one_of", "target"}};
    case SchemaDialect::ollama:
      return {{"search", "range"}, {"tally", "basket"}, {"lookup", "key"}, {"mcp_refs", "from"}, {"mcp_one_of", "target"}};
  }
  return {};
}

std::string refusal_of(const Schema& schema, SchemaDialect d, const std::string& where) {
  try {
    compile_schema(schema, d, where);
  } catch (const ToolDefinitionError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("every reference tool through every dialect: compiled, or refused naming the tool, the field and the dialect",
          "[schema][dialect]") {
  const auto tools = reference_tools();
  for (SchemaDialect d : kDialects) {
    const auto refusals = refused_by(d);
    for (const auto& ref : tools) {
      const ToolSpec& spec = ref.get();
      INFO(std::string(to_string(d)) << " / " << spec.name);
      const std::string where = "tool '" + spec.name + "' arguments";
      const auto it = std::find_if(refusals.begin(), refusals.end(), [&](const Refusal& r) { return r.tool == spec.name; });
      const std::string why = refusal_of(*spec.parameters, d, where);
      if (it == refusals.end()) {
        CHECK(why.empty());
        if (!why.empty()) continue;
        const Schema out = compile_schema(*spec.parameters, d, where);
        CHECK(out.is_object());
        CHECK(out.value("type", Schema()) == "object");
      } else {
        CHECK_THAT(why, Catch::Contains(std::string(to_string(d)) + " cannot express"));
        CHECK_THAT(why, Catch::Contains("tool '" + spec.name + "' arguments." + it->field));
      }
    }
  }
}

TEST_CASE("each dialect's rewrites", "[schema][dialect]") {
  const auto tools = reference_tools();
  const auto params = [&](std::string_view name) -> const Schema& {
    for (const auto& r : tools) {
      if (r.get().name == name) return *r.get().parameters;
    }
    FAIL("no reference tool " << name);
    throw;
  };
  SECTION("openai and anthropic take the schema as declared") {
    for (auto name : {"forecast", "search", "tally", "mcp_refs"}) {
      CHECK(compile_schema(params(name), SchemaDialect::openai, "t") == params(name));
      CHECK(compile_schema(params(name), SchemaDialect::anthropic, "t") == params(name));
    }
  }
  SECTION("OpenAI strict: closed objects, all required, optionals nullable, $defs rewritten too") {
    const Schema refs = compile_schema(params("mcp_refs"), SchemaDialect::openai_strict, "t");
    CHECK(refs["additionalProperties"] == false);
    CHECK(refs["$defs"]["Point"]["additionalProperties"] == false);
    CHECK(refs["properties"]["from"] == Json({{"$ref", "#/$defs/Point"}}));
    const Schema note = compile_schema(params("note"), SchemaDialect::openai_strict, "t");
    CHECK(note["required"] == Json::array({"text", "title"}));
    // An object with no properties and no closing is a map strict mode cannot close.
    CHECK_THAT(refusal_of(Json::parse(R"({"type":"object","properties":{"blob":{"type":"object"}}})"),
                          SchemaDialect::openai_strict, "tool 'x' arguments"),
               Catch::Contains("open object (a map) at tool 'x' arguments.blob"));
  }
  SECTION("Ollama: optionals as type lists, value bounds said in the description") {
    const Schema note = compile_schema(params("note"), SchemaDialect::ollama, "t");
    CHECK(note["properties"]["title"]["type"] == Json::array({"string", "null"}));
    CHECK(note["required"] == Json::array({"text"}));
    const Schema count = compile_schema(params("count_to"), SchemaDialect::ollama, "t");
    CHECK(count["properties"]["n"] == Schema::parse(R"j({"type":"integer","description":"(minimum 0)"})j"));
    const Schema point = compile_schema(params("move_to"), SchemaDialect::ollama, "t");
    CHECK(point["properties"]["point"]["type"] == "array");
    CHECK(point["properties"]["point"]["items"] == Json({{"type", "number"}}));
    CHECK_THAT(point["properties"]["point"]["description"].get<std::string>(), Catch::Contains("maxItems 3"));
    CHECK_THAT(point["properties"]["point"]["description"].get<std::string>(), Catch::Contains("minItems 3"));
    const Schema forecast = compile_schema(params("forecast"), SchemaDialect::ollama, "t");
    CHECK(forecast["properties"]["unit"]["enum"] == Json::array({"celsius", "fahrenheit"}));
    CHECK(forecast["properties"]["unit"]["description"] == "Temperature unit");
  }
  SECTION("Gemini: $ref inlined, optionals nullable, no additionalProperties") {
    const Schema refs = compile_schema(params("mcp_refs"), SchemaDialect::gemini, "t");
    const std::string text = refs.dump();
    CHECK(text.find("$ref") == std::string::npos);
    CHECK(text.find("$defs") == std::string::npos);
    CHECK(text.find("additionalProperties") == std::string::npos);
    CHECK(refs["properties"]["from"]["properties"]["x"]["type"] != nullptr);
    const Schema note = compile_schema(params("note"), SchemaDialect::gemini, "t");
    CHECK(note["properties"]["title"]["nullable"] == true);
  }
  SECTION("every dialect wants an object at the root of a tool's arguments") {
    for (SchemaDialect d : kDialects) {
      CHECK_THAT(refusal_of(Json({{"type", "string"}}), d, "tool 'x' arguments"),
                 Catch::Contains("arguments that are not an object at tool 'x' arguments"));
    }
  }
}

TEST_CASE("a tool the provider cannot take fails the run before anything is sent, and Agent::check_model says so first",
          "[schema][dialect][loopback]") {
  agentkit::testing::WireServer server;
  auto tally = agentkit::tool("tally")
                   .doc("Sum the quantities of a shopping basket keyed by item.")
                   .side_effecting(false)
                   .params("basket")
                   .fn([](const std::map<std::string, int>&) { return 0; });
  agentkit::Agent agent("shopper", "ollama/llama3.2@" + server.base_url(), "You shop.",
                        agentkit::cognition::react({tally}));
  auto ctx = agentkit::testing::make_test_ctx();
  agentkit::providers::ProviderSettings keys;
  keys.openai_api_key = "sk-test";
  ctx.models = agentkit::providers::model_resolver(keys);
  const auto model = ctx.models(agent.model());
  REQUIRE(model);
  CHECK_THROWS_WITH(agent.check_model(*model), Catch::Contains("Ollama cannot express the open object (a map) at tool "
                                                                "'tally' arguments.basket"));
  const auto result = agent.run("Add up my basket", ctx);
  CHECK(result.stop_reason == agentkit::StopReason::failed);
  REQUIRE(result.failure);
  CHECK(result.failure->code == agentkit::ErrorCode::invalid_argument);
  CHECK_THAT(result.failure->message, Catch::Contains("tool 'tally' arguments.basket"));
  CHECK(server.requests().empty());

  // The same tool is fine for a provider whose dialect has maps.
  agentkit::Agent open_ai("shopper", "openai/gpt-4.1@" + server.base_url(), "You shop.",
                          agentkit::cognition::react({tally}));
  const auto chat = ctx.models(open_ai.model());
  REQUIRE(chat);
  CHECK_NOTHROW(open_ai.check_model(*chat));
}
