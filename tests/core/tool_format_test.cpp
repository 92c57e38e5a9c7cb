// Provider-neutral export of tool schemas (OpenAI incl. strict mode, Anthropic).
#include <catch2/catch.hpp>

#include <agentkit/function_tool.h>
#include <agentkit/providers/tool_format.h>
#include <agentkit/registry.h>

#include "spec_types.h"

using agentkit::providers::anthropic_tool;
using agentkit::providers::openai_tool;

namespace {
agentkit::ToolPtr forecast() {
  return agentkit::tool("forecast")
      .doc("Return a short weather forecast for a city over the next few days.")
      .side_effecting(false)
      .params("city", agentkit::param("unit", "Temperature unit"), agentkit::opt("days", 3))
      .fn([](const std::string&, spec::Unit, int) { return std::string("mild"); });
}
}  // namespace

TEST_CASE("OpenAI function format", "[format]") {
  CHECK(openai_tool(forecast()->spec()).dump() ==
        R"({"type":"function","function":{"name":"forecast","description":"Return a short weather forecast for a )"
        R"(city over the next few days.","parameters":{"type":"object","properties":{"city":{"type":"string"},)"
        R"("unit":{"enum":["celsius","fahrenheit"],"type":"string","description":"Temperature unit"},)"
        R"("days":{"type":"integer"}},"required":["city","unit"]}}})");
}

TEST_CASE("OpenAI strict mode: every property required, optionals nullable, no extra properties", "[format]") {
  auto strict = openai_tool(forecast()->spec(), {.strict = true});
  CHECK(strict["function"]["strict"] == true);
  CHECK(strict["function"]["parameters"].dump() ==
        R"({"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["celsius","fahrenheit"],)"
        R"("type":"string","description":"Temperature unit"},"days":{"anyOf":[{"type":"integer"},{"type":"null"}]}},)"
        R"("required":["city","unit","days"],"additionalProperties":false})");

  SECTION("nested objects are closed too, and null means the default at call time") {
    auto search = agentkit::tool("search")
                      .doc("Search the product catalogue with a structured filter.")
                      .side_effecting(false)
                      .fn([](const spec::Filter& f) { return f.limit; });
    auto p = openai_tool(search->spec(), {.strict = true})["function"]["parameters"];
    CHECK(p["additionalProperties"] == false);
    CHECK(p["required"] == agentkit::Schema::array({"query", "limit", "range"}));
    const auto& range = p["properties"]["range"]["anyOf"][0];
    CHECK(range["additionalProperties"] == false);
    CHECK(range["required"] == agentkit::Schema::array({"low", "high"}));
    CHECK(p["properties"]["range"]["description"] == "Price range");
    agentkit::RunContext ctx;
    CHECK(search->run({{"query", "q"}, {"limit", nullptr}, {"range", nullptr}}, ctx) == 5);
  }
  SECTION("a schema strict mode cannot express is refused by name") {
    auto open = agentkit::tool("tally")
                    .doc("Sum the quantities of a shopping basket keyed by item.")
                    .side_effecting(false)
                    .params("basket")
                    .fn([](const std::map<std::string, int>&) { return 0; });
    CHECK_THROWS_WITH(openai_tool(open->spec(), {.strict = true}), Catch::Contains("open object (a map) at tool 'tally' arguments.basket"));
    CHECK_NOTHROW(openai_tool(open->spec()));
  }
}

TEST_CASE("Anthropic input_schema format", "[format]") {
  auto a = anthropic_tool(forecast()->spec());
  CHECK(a["name"] == "forecast");
  CHECK(a["input_schema"] == *forecast()->spec().parameters);
  CHECK(a.dump().find(R"({"name":"forecast","description":)") == 0);
}

TEST_CASE("registry export skips loop-invisible tools and keeps sorted order", "[format]") {
  auto hidden = agentkit::tool("aaa_hidden").doc("A hidden tool that the model never sees.").side_effecting(false).hidden().fn([] { return 1; });
  auto b = agentkit::tool("beta").doc("The second tool in sorted order of names.").side_effecting(false).fn([] { return 1; });
  auto registry = agentkit::ToolRegistry::from_tools({b, forecast(), hidden});
  auto tools = agentkit::providers::anthropic_tools(registry);
  REQUIRE(tools.size() == 2);
  CHECK(tools[0]["name"] == "beta");
  CHECK(tools[1]["name"] == "forecast");
  CHECK(agentkit::providers::openai_tools(registry).size() == 2);
  CHECK_THROWS_AS(openai_tool(hidden->spec()), agentkit::ToolDefinitionError);
}
