// Schema derivation from C++ types (spec 000, "The schema comes from the signature").
#include <catch2/catch.hpp>

#include <agentkit/function_tool.h>
#include <agentkit/testing/test_context.h>

#include "spec_types.h"

using agentkit::Json;
using agentkit::schema_of;

TEST_CASE("primitive types map to JSON Schema types", "[schema]") {
  CHECK(schema_of<std::string>().dump() == R"({"type":"string"})");
  CHECK(schema_of<int>().dump() == R"({"type":"integer"})");
  CHECK(schema_of<std::int64_t>().dump() == R"({"type":"integer"})");
  CHECK(schema_of<unsigned>().dump() == R"({"type":"integer","minimum":0})");
  CHECK(schema_of<double>().dump() == R"({"type":"number"})");
  CHECK(schema_of<float>().dump() == R"({"type":"number"})");
  CHECK(schema_of<bool>().dump() == R"({"type":"boolean"})");
  CHECK(schema_of<Json>().dump() == R"({})");
}

TEST_CASE("containers map to arrays and open objects", "[schema]") {
  CHECK(schema_of<std::vector<int>>().dump() == R"({"type":"array","items":{"type":"integer"}})");
  CHECK(schema_of<std::set<std::string>>().dump() == R"({"type":"array","items":{"type":"string"}})");
  CHECK(schema_of<std::array<double, 2>>().dump() ==
        R"({"type":"array","items":{"type":"number"},"minItems":2,"maxItems":2})");
  CHECK(schema_of<std::map<std::string, int>>().dump() ==
        R"({"type":"object","additionalProperties":{"type":"integer"}})");
  CHECK(schema_of<std::vector<spec::Unit>>().dump() ==
        R"({"type":"array","items":{"enum":["celsius","fahrenheit"],"type":"string"}})");
}

TEST_CASE("optional and variant map to anyOf", "[schema]") {
  CHECK(schema_of<std::optional<int>>().dump() == R"({"anyOf":[{"type":"integer"},{"type":"null"}]})");
  CHECK(schema_of<std::variant<int, std::string>>().dump() == R"({"anyOf":[{"type":"integer"},{"type":"string"}]})");
}

TEST_CASE("a described struct is a nested object schema with per-field descriptions", "[schema]") {
  CHECK(schema_of<spec::Filter>().dump() ==
        R"({"type":"object","description":"A catalogue filter","properties":{)"
        R"("query":{"type":"string","description":"What to search for"},)"
        R"("limit":{"type":"integer","description":"At most this many hits"},)"
        R"("range":{"type":"object","properties":{"low":{"type":"integer","description":"Lowest value"},)"
        R"("high":{"type":"integer","description":"Highest value"}},"required":["low"],)"
        R"("description":"Price range"}},"required":["query"]})");
}

TEST_CASE("forecast: the seed's schema, byte for byte, in declaration order", "[schema][spec]") {
  auto forecast = agentkit::tool("forecast")
                      .doc("Return a short weather forecast for a city over the next few days.")
                      .side_effecting(false)
                      .idempotent()
                      .params("city", "unit", agentkit::opt("days", 3), agentkit::opt("mode", spec::Mode::daily))
                      .fn([](const std::string& city, spec::Unit, int days, spec::Mode) {
                        return city + ": mild for " + std::to_string(days) + " days";
                      });
  // Python's json.dumps separators; the same bytes as the seed's output.
  CHECK(forecast->spec().parameters->dump() ==
        R"({"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["celsius","fahrenheit"],)"
        R"("type":"string"},"days":{"type":"integer"},"mode":{"enum":["hourly","daily"],"type":"string"}},)"
        R"("required":["city","unit"]})");

  SECTION("derivation is deterministic") {
    auto again = agentkit::tool("forecast")
                     .doc("Return a short weather forecast for a city over the next few days.")
                     .side_effecting(false)
                     .params("city", "unit", agentkit::opt("days", 3), agentkit::opt("mode", spec::Mode::daily))
                     .fn([](const std::string&, spec::Unit, int, spec::Mode) { return std::string(); });
    CHECK(again->spec().parameters->dump() == forecast->spec().parameters->dump());
  }

  SECTION("defaults apply when omitted, enums arrive as enum values") {
    auto ctx = agentkit::testing::make_test_ctx();
    CHECK(forecast->run({{"city", "Lisbon"}, {"unit", "celsius"}}, ctx) == "Lisbon: mild for 3 days");
    CHECK(forecast->run({{"city", "Porto"}, {"unit", "fahrenheit"}, {"days", 5}}, ctx) == "Porto: mild for 5 days");
  }
}

TEST_CASE("city_population: a one-parameter tool", "[schema][spec]") {
  auto city_population = agentkit::tool("city_population")
                             .doc("Look up the most recent census population for a named city.")
                             .side_effecting(false)
                             .idempotent()
                             .params("city")
                             .fn([](const std::string& city) { return city == "Lisbon" ? 545000 : 0; });
  CHECK(city_population->spec().parameters->dump() ==
        R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})");
  auto ctx = agentkit::testing::make_test_ctx();
  CHECK(city_population->run({{"city", "Lisbon"}}, ctx) == 545000);
}

TEST_CASE("rich parameter types arrive as C++ values", "[schema]") {
  auto ctx = agentkit::testing::make_test_ctx();
  SECTION("a set parameter arrives as a set") {
    auto t = agentkit::tool("tagger")
                 .doc("Count the distinct tags the caller supplied in one list.")
                 .side_effecting(false)
                 .params("tags")
                 .fn([](const std::set<std::string>& tags) { return tags.size(); });
    CHECK(t->run({{"tags", {"a", "b", "a"}}}, ctx) == 2);
  }
  SECTION("a list of enums arrives as enum values") {
    auto t = agentkit::tool("units")
                 .doc("Report how many of the given units are Fahrenheit units.")
                 .side_effecting(false)
                 .params("units")
                 .fn([](const std::vector<spec::Unit>& units) {
                   return std::count(units.begin(), units.end(), spec::Unit::fahrenheit);
                 });
    CHECK(t->run({{"units", {"celsius", "fahrenheit", "fahrenheit"}}}, ctx) == 2);
  }
  SECTION("a nested struct arrives as a struct with its defaults") {
    auto t = agentkit::tool("search")
                 .doc("Search the product catalogue with a structured filter.")
                 .side_effecting(false)
                 .params("filter")
                 .fn([](const spec::Filter& f) {
                   return f.query + "/" + std::to_string(f.limit) + "/" + std::to_string(f.range.low) + "-" +
                          std::to_string(f.range.high);
                 });
    CHECK(t->run({{"filter", {{"query", "boots"}, {"range", {{"low", 2}}}}}}, ctx) == "boots/5/2-10");
    CHECK(t->spec().parameters->at("properties").at("filter").at("type") == "object");
  }
  SECTION("a single described struct is the whole argument object") {
    auto t = agentkit::tool("search")
                 .doc("Search the product catalogue with a structured filter.")
                 .side_effecting(false)
                 .fn([](const spec::Filter& f) { return f.query + "/" + std::to_string(f.limit); });
    CHECK(t->run({{"query", "boots"}, {"limit", 2}}, ctx) == "boots/2");
    CHECK(t->spec().parameters->at("required") == Json::array({"query"}));
    CHECK_FALSE(t->spec().parameters->contains("description"));
  }
  SECTION("optional: absent or null is nullopt and not required") {
    auto t = agentkit::tool("greet")
                 .doc("Greet a person by name, or greet the world when none is given.")
                 .side_effecting(false)
                 .params("name")
                 .fn([](const std::optional<std::string>& name) { return "hello " + name.value_or("world"); });
    CHECK(t->run(Json::object(), ctx) == "hello world");
    CHECK(t->run({{"name", nullptr}}, ctx) == "hello world");
    CHECK(t->run({{"name", "ada"}}, ctx) == "hello ada");
    CHECK_FALSE(t->spec().parameters->contains("required"));
  }
  SECTION("variant: the first matching alternative wins") {
    auto t = agentkit::tool("ident")
                 .doc("Describe whether an identifier is numeric or textual.")
                 .side_effecting(false)
                 .params("id")
                 .fn([](const std::variant<std::int64_t, std::string>& id) {
                   return id.index() == 0 ? std::string("number") : std::string("text");
                 });
    CHECK(t->run({{"id", 42}}, ctx) == "number");
    CHECK(t->run({{"id", "x42"}}, ctx) == "text");
    CHECK_THROWS_AS(t->run({{"id", true}}, ctx), agentkit::ToolArgumentError);
  }
  SECTION("a map parameter arrives as a map") {
    auto t = agentkit::tool("total")
                 .doc("Sum the quantities of a shopping basket keyed by item.")
                 .side_effecting(false)
                 .params(agentkit::param("basket", "item -> quantity"))
                 .fn([](const std::map<std::string, int>& basket) {
                   int sum = 0;
                   for (const auto& [k, v] : basket) sum += v;
                   return sum;
                 });
    CHECK(t->run({{"basket", {{"apple", 2}, {"pear", 3}}}}, ctx) == 5);
    CHECK(t->spec().parameters->at("properties").at("basket").at("description") == "item -> quantity");
  }
  SECTION("a std::array needs exactly N items") {
    auto t = agentkit::tool("point")
                 .doc("Return the distance of a 2D point from the origin.")
                 .side_effecting(false)
                 .params("xy")
                 .fn([](const std::array<double, 2>& xy) { return std::hypot(xy[0], xy[1]); });
    CHECK(t->run({{"xy", {3, 4}}}, ctx) == 5.0);
    CHECK_THROWS_AS(t->run({{"xy", {3, 4, 5}}}, ctx), agentkit::ToolArgumentError);
  }
}

TEST_CASE("a default that does not fit its parameter type is a definition error", "[schema]") {
  CHECK_THROWS_WITH(agentkit::tool("bad_default")
                        .doc("A tool whose default does not fit the declared type.")
                        .side_effecting(false)
                        .params(agentkit::opt("days", "three"))
                        .fn([](int days) { return days; }),
                    Catch::Contains("default for parameter 'days' does not fit its type integer"));
}
