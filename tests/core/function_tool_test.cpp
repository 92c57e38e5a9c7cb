// Declaring tools from typed callables: effects, argument errors, extras,
// context injection, output validation (spec 000).
#include <catch2/catch.hpp>

#include <agentkit/function_tool.h>
#include <agentkit/testing/test_context.h>

#include "spec_types.h"

using agentkit::Json;
using agentkit::ToolArgumentError;
using agentkit::ToolShapeError;

TEST_CASE("effects are declared: side_effecting, idempotent and requires_approval are separate", "[tool][spec]") {
  auto refund = agentkit::tool("refund")
                    .doc("Issue a refund against a customer order and return the confirmation id.")
                    .side_effecting(true)
                    .requires_approval()
                    .params("order_id", "amount_usd")
                    .fn([](const std::string& id, double amount) { return "refunded " + std::to_string(amount) + " on " + id; });
  CHECK(refund->side_effecting());
  CHECK_FALSE(refund->idempotent());
  CHECK(refund->requires_approval());

  auto lookup = agentkit::tool("lookup")
                    .doc("Look up the most recent census population for a named city.")
                    .side_effecting(false)
                    .idempotent()
                    .params("city")
                    .fn([](const std::string&) { return 1; });
  CHECK_FALSE(lookup->side_effecting());
  CHECK(lookup->idempotent());
  CHECK_FALSE(lookup->requires_approval());
}

TEST_CASE("tags, metadata and status ride along, invisible to the model", "[tool]") {
  auto refund = agentkit::tool("refund")
                    .doc("Issue a refund against a customer order and return the confirmation id.")
                    .side_effecting(true)
                    .tags({"billing", "money"})
                    .metadata({{"owner", "billing-team"}})
                    .status([](const Json& args) { return "Refunding order " + args.at("order_id").get<std::string>(); })
                    .params("order_id")
                    .fn([](const std::string& id) { return id; });
  CHECK(refund->spec().tags == std::vector<std::string>{"billing", "money"});
  CHECK(refund->spec().metadata.at("owner") == "billing-team");
  CHECK(refund->format_status({{"order_id", "o-123"}}) == "Refunding order o-123");
  CHECK(refund->format_status(Json::object()) == "refund");  // a throwing formatter falls back to the name
  const std::string advertised = refund->spec().parameters->dump() + refund->description();
  CHECK(advertised.find("billing") == std::string::npos);
}

TEST_CASE("notify: an unexpected argument is rejected, never silently defaulted", "[tool][spec]") {
  int sent = 0;
  auto notify = agentkit::tool("notify")
                    .doc("Page the on-call engineer with a short incident message.")
                    .side_effecting(true)
                    .params(agentkit::opt("msg", "default message"))
                    .fn([&](const std::string& msg) {
                      ++sent;
                      return "sent: " + msg;
                    });
  auto ctx = agentkit::testing::make_test_ctx();
  try {
    notify->run({{"message", "prod is down"}}, ctx);
    FAIL("expected ToolArgumentError");
  } catch (const ToolArgumentError& e) {
    CHECK(std::string(e.what()) ==
          "tool 'notify' call rejected: unexpected argument(s) ['message']. Accepted arguments: ['msg']");
    CHECK(e.unexpected() == std::vector<std::string>{"message"});
    CHECK(e.accepted() == std::vector<std::string>{"msg"});
    CHECK(e.tool() == "notify");
  }
  CHECK(sent == 0);
  CHECK(notify->run(Json::object(), ctx) == "sent: default message");
}

TEST_CASE("weather: a legal enum arrives as the enum value, an illegal one is refused", "[tool][spec]") {
  bool ran_with_kelvin = false;
  auto weather = agentkit::tool("weather")
                     .doc("Report the weather for a city in the requested unit of measure.")
                     .side_effecting(false)
                     .params("city", "unit")
                     .fn([&](const std::string&, spec::Unit unit) {
                       ran_with_kelvin = true;
                       return unit == spec::Unit::celsius ? std::string("Unit=celsius") : std::string("Unit=fahrenheit");
                     });
  auto ctx = agentkit::testing::make_test_ctx();
  CHECK(weather->run({{"city", "Lisbon"}, {"unit", "celsius"}}, ctx) == "Unit=celsius");
  ran_with_kelvin = false;
  try {
    weather->run({{"city", "Lisbon"}, {"unit", "kelvin"}}, ctx);
    FAIL("expected ToolArgumentError");
  } catch (const ToolArgumentError& e) {
    REQUIRE(e.invalid().size() == 1);
    CHECK(e.invalid()[0].name == "unit");
    CHECK(e.invalid()[0].reason == "expected one of ['celsius', 'fahrenheit'], got 'kelvin'");  // as check_arguments says it
  }
  CHECK_FALSE(ran_with_kelvin);
}

TEST_CASE("all bad arguments are collected into one error before the body runs", "[tool]") {
  int calls = 0;
  auto t = agentkit::tool("book")
               .doc("Book a table at a restaurant for a party on a given day.")
               .side_effecting(true)
               .params("restaurant", "party_size", "unit")
               .fn([&](const std::string&, int, spec::Unit) { return ++calls; });
  auto ctx = agentkit::testing::make_test_ctx();
  try {
    t->run({{"party_size", "3"}, {"unit", 7}, {"when", "today"}}, ctx);
    FAIL("expected ToolArgumentError");
  } catch (const ToolArgumentError& e) {
    CHECK(e.missing() == std::vector<std::string>{"restaurant"});
    CHECK(e.unexpected() == std::vector<std::string>{"when"});
    REQUIRE(e.invalid().size() == 2);
    CHECK(e.invalid()[0].name == "party_size");
    CHECK(e.invalid()[0].reason == "expected integer, got string '3'");
    CHECK(e.invalid()[1].name == "unit");
    CHECK(e.accepted() == std::vector<std::string>{"restaurant", "party_size", "unit"});
    CHECK_THAT(e.what(), Catch::StartsWith("tool 'book' call rejected: missing required argument(s) ['restaurant']; "
                                           "unexpected argument(s) ['when']; invalid argument(s): party_size: "));
  }
  CHECK(calls == 0);
}

TEST_CASE("primitives are never coerced", "[tool][spec]") {
  auto ctx = agentkit::testing::make_test_ctx();
  auto ints = agentkit::tool("ints")
                  .doc("Accept one 32-bit integer and return it unchanged.")
                  .side_effecting(false)
                  .params("n")
                  .fn([](int n) { return n; });
  CHECK_THROWS_AS(ints->run({{"n", "3"}}, ctx), ToolArgumentError);
  CHECK_THROWS_AS(ints->run({{"n", 3.5}}, ctx), ToolArgumentError);
  CHECK_THROWS_AS(ints->run({{"n", true}}, ctx), ToolArgumentError);
  CHECK_THROWS_WITH(ints->run({{"n", 1e20}}, ctx), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(ints->run({{"n", 2147483648LL}}, ctx), Catch::Contains("out of range"));
  CHECK(ints->run({{"n", 3.0}}, ctx) == 3);  // an integral number is an integer in JSON Schema
  CHECK(ints->run({{"n", -2147483648LL}}, ctx) == -2147483648LL);

  auto text = agentkit::tool("text")
                  .doc("Accept one string and return its length in bytes.")
                  .side_effecting(false)
                  .params("s")
                  .fn([](const std::string& s) { return s.size(); });
  CHECK_THROWS_AS(text->run({{"s", 3}}, ctx), ToolArgumentError);
  CHECK_THROWS_AS(text->run({{"s", nullptr}}, ctx), ToolArgumentError);

  auto flag = agentkit::tool("flag")
                  .doc("Accept one boolean flag and return it unchanged.")
                  .side_effecting(false)
                  .params("on")
                  .fn([](bool on) { return on; });
  CHECK_THROWS_AS(flag->run({{"on", "true"}}, ctx), ToolArgumentError);
  CHECK_THROWS_AS(flag->run({{"on", 1}}, ctx), ToolArgumentError);

  auto small = agentkit::tool("small")
                   .doc("Accept one unsigned byte and return it unchanged.")
                   .side_effecting(false)
                   .params("b")
                   .fn([](std::uint8_t b) { return b; });
  CHECK_THROWS_AS(small->run({{"b", -1}}, ctx), ToolArgumentError);
  CHECK_THROWS_AS(small->run({{"b", 256}}, ctx), ToolArgumentError);
  CHECK(small->run({{"b", 255}}, ctx) == 255);
}

TEST_CASE("flexible: extras pass through only to a tool that declares it accepts them", "[tool][spec]") {
  auto flexible = agentkit::tool("flexible")
                      .doc("Search the catalogue with a free-form set of extra filter keys.")
                      .side_effecting(false)
                      .params("query")
                      .fn([](const std::string& query, const agentkit::Extras& filters) {
                        std::string keys;
                        for (const auto& [k, v] : filters.values.items()) keys += (keys.empty() ? "" : ", ") + ("'" + k + "'");
                        return query + " + [" + keys + "]";
                      });
  auto ctx = agentkit::testing::make_test_ctx();
  CHECK(flexible->run({{"query", "boots"}, {"colour", "red"}, {"size", 42}}, ctx) == "boots + ['colour', 'size']");
  CHECK(flexible->spec().parameters->dump() ==
        R"({"type":"object","properties":{"query":{"type":"string"}},"required":["query"]})");
  CHECK(flexible->spec().accepts_extra_arguments);
}

TEST_CASE("list_projects: a context parameter is injected and never advertised", "[tool][spec]") {
  auto list_projects = agentkit::tool("list_projects")
                           .doc("List the calling tenant's projects whose name starts with a prefix.")
                           .side_effecting(false)
                           .idempotent()
                           .params("prefix")
                           .fn([](const std::string& prefix, agentkit::RunContext& ctx) {
                             return std::vector<std::string>{ctx.scope.key() + "/" + prefix + "-alpha",
                                                             ctx.scope.key() + "/" + prefix + "-beta"};
                           });
  CHECK(list_projects->spec().parameters->dump() ==
        R"({"type":"object","properties":{"prefix":{"type":"string"}},"required":["prefix"]})");
  auto ctx = agentkit::testing::make_test_ctx({.scope = {.org_id = 7, .domain_id = 1}});
  CHECK(list_projects->run({{"prefix", "web"}}, ctx) == Json::array({"org7:dom1/web-alpha", "org7:dom1/web-beta"}));

  SECTION("a ctx key from the model is dropped when the tool takes a context") {
    CHECK(list_projects->run({{"prefix", "web"}, {"ctx", "spoofed"}}, ctx).size() == 2);
  }
  SECTION("a tool with no context parameter rejects a ctx key like any other") {
    auto plain = agentkit::tool("plain")
                     .doc("Echo a prefix back to the caller without any context.")
                     .side_effecting(false)
                     .params("prefix")
                     .fn([](const std::string& p) { return p; });
    CHECK_THROWS_WITH(plain->run({{"prefix", "web"}, {"ctx", 1}}, ctx), Catch::Contains("unexpected argument(s) ['ctx']"));
  }
  SECTION("a data parameter called context stays advertised and is passed normally") {
    auto t = agentkit::tool("summarise")
                 .doc("Summarise the given context text in a single sentence.")
                 .side_effecting(false)
                 .params("context")
                 .fn([](const std::string& context, agentkit::RunContext&) { return context; });
    CHECK(t->spec().parameters->at("required") == Json::array({"context"}));
    CHECK(t->run({{"context", "abc"}}, ctx) == "abc");
  }
}

TEST_CASE("get_quote: a result not matching the declared output type is a ToolShapeError", "[tool][spec]") {
  auto get_quote = agentkit::tool("get_quote")
                       .doc("Return the latest traded price for a stock ticker symbol.")
                       .side_effecting(false)
                       .idempotent()
                       .output<spec::Quote>()
                       .params("symbol")
                       .fn([](const std::string&) { return Json("not a Quote at all"); });  // the bug this catches
  CHECK(get_quote->spec().output_schema->dump() ==
        R"({"type":"object","properties":{"symbol":{"type":"string"},"price":{"type":"number"}},"required":["symbol","price"]})");
  auto ctx = agentkit::testing::make_test_ctx();
  try {
    get_quote->run({{"symbol", "ACME"}}, ctx);
    FAIL("expected ToolShapeError");
  } catch (const ToolShapeError& e) {
    CHECK(std::string(e.what()) == "tool 'get_quote' returned value not matching schema 'Quote'");
    CHECK(e.raw() == "not a Quote at all");
    CHECK(e.expected() == "Quote");
  }

  SECTION("the output type is inferred from a described return type") {
    auto typed = agentkit::tool("get_quote")
                     .doc("Return the latest traded price for a stock ticker symbol.")
                     .side_effecting(false)
                     .params("symbol")
                     .fn([](const std::string& s) { return spec::Quote{s, s == "NAN" ? std::nan("") : 12.5}; });
    REQUIRE(typed->spec().output_schema.has_value());
    CHECK(typed->run({{"symbol", "ACME"}}, ctx) == Json({{"symbol", "ACME"}, {"price", 12.5}}));
    CHECK_THROWS_AS(typed->run({{"symbol", "NAN"}}, ctx), ToolShapeError);  // NaN has no JSON form
  }
  SECTION("a primitive return type pays nothing and declares no output schema") {
    auto t = agentkit::tool("plain")
                 .doc("Return the latest traded price for a stock ticker symbol.")
                 .side_effecting(false)
                 .params("symbol")
                 .fn([](const std::string&) { return 1.5; });
    CHECK_FALSE(t->spec().output_schema.has_value());
  }
  SECTION("no_output_check opts out") {
    auto t = agentkit::tool("get_quote")
                 .doc("Return the latest traded price for a stock ticker symbol.")
                 .side_effecting(false)
                 .output<spec::Quote>()
                 .no_output_check()
                 .params("symbol")
                 .fn([](const std::string&) { return Json("whatever"); });
    CHECK(t->run({{"symbol", "ACME"}}, ctx) == "whatever");
  }
}

TEST_CASE("definition errors: bad names and duplicate parameters", "[tool]") {
  CHECK_THROWS_AS(agentkit::tool("has space")
                      .doc("A tool whose name providers would refuse outright.")
                      .side_effecting(false)
                      .fn([] { return 1; }),
                  agentkit::ToolDefinitionError);
  CHECK_THROWS_WITH(agentkit::tool("dup")
                        .doc("A tool that names the same parameter twice over.")
                        .side_effecting(false)
                        .params("a", "a")
                        .fn([](int, int) { return 1; }),
                    "tool 'dup' declares parameter 'a' twice");
  CHECK_THROWS_AS(agentkit::tool("thin").doc("Too short.").side_effecting(false).fn([] { return 1; }),
                  agentkit::ToolDefinitionError);
}

TEST_CASE("a no-argument tool advertises an empty object and a hidden tool advertises nothing", "[tool]") {
  auto ctx = agentkit::testing::make_test_ctx();
  auto now = agentkit::tool("now")
                 .doc("Return the current server time as an ISO-8601 string.")
                 .side_effecting(false)
                 .fn([] { return std::string("2026-01-01T00:00:00Z"); });
  CHECK(now->spec().parameters->dump() == R"({"type":"object","properties":{}})");
  CHECK(now->run(Json::object(), ctx) == "2026-01-01T00:00:00Z");
  auto hidden = agentkit::tool("internal")
                    .doc("An internal step the cognition drives by itself only.")
                    .side_effecting(false)
                    .hidden()
                    .fn([] { return 7; });
  CHECK_FALSE(hidden->advertised());
  CHECK(hidden->run(Json::object(), ctx) == 7);
  auto nothing = agentkit::tool("fire")
                     .doc("Fire and forget: returns nothing at all to the caller.")
                     .side_effecting(true)
                     .fn([] {});
  CHECK(nothing->run(Json::object(), ctx).is_null());
}
