// ToolRegistry: lookup only (spec 000 "ToolRegistry is lookup, and nothing else", spec 003 plugins/merge).
#include <catch2/catch.hpp>

#include <agentkit/function_tool.h>
#include <agentkit/registry.h>
#include <agentkit/testing/test_context.h>

using agentkit::Json;
using agentkit::OnConflict;
using agentkit::ToolDefinitionError;
using agentkit::ToolPtr;
using agentkit::ToolRegistry;

namespace {

ToolPtr make_tool(const std::string& name, std::string result = "ok", bool hidden = false) {
  auto builder = agentkit::tool(name).doc("A test tool that returns a fixed string result.").side_effecting(false);
  if (hidden) builder = std::move(builder).hidden();
  return std::move(builder).fn([result] { return result; });
}

struct CatalogPlugin {
  std::string shop;
  std::vector<ToolPtr> tools() {
    return {agentkit::tool("search")
                .doc("Search the connected product catalogue by free text.")
                .side_effecting(false)
                .params("q")
                .fn([this](const std::string& q) { return shop + ":" + q; }),
            make_tool("get_product")};
  }
};

}  // namespace

TEST_CASE("a name collision is an error unless replacement is explicit", "[registry][spec]") {
  auto forecast = make_tool("forecast", "mild");
  auto registry = ToolRegistry::from_tools({forecast});
  CHECK_THROWS_WITH(registry.add(forecast), "ToolRegistry: tool 'forecast' already registered. Pass "
                                            "OnConflict::replace to swap deliberately.");
  CHECK_THROWS_AS(registry.add(forecast), ToolDefinitionError);
  registry.add(make_tool("forecast", "stormy"), OnConflict::replace);
  auto ctx = agentkit::testing::make_test_ctx();
  CHECK(registry.find("forecast")->run(Json::object(), ctx) == "stormy");
}

TEST_CASE("schemas() lists advertised tools in sorted name order", "[registry][spec]") {
  auto registry = ToolRegistry::from_tools({make_tool("zeta"), make_tool("alpha"), make_tool("hidden_step", "x", true),
                                            make_tool("mid")});
  std::vector<std::string> names;
  for (const auto* spec : registry.schemas()) names.push_back(spec->name);
  CHECK(names == std::vector<std::string>{"alpha", "mid", "zeta"});
  CHECK(registry.names() == std::vector<std::string>{"alpha", "hidden_step", "mid", "zeta"});

  SECTION("a loop-invisible tool is still callable") {
    auto ctx = agentkit::testing::make_test_ctx();
    REQUIRE(registry.find("hidden_step"));
    CHECK(registry.find("hidden_step")->run(Json::object(), ctx) == "x");
  }
  SECTION("unknown names are nullptr, remove works") {
    CHECK(registry.find("nope") == nullptr);
    CHECK(registry.remove("mid"));
    CHECK_FALSE(registry.remove("mid"));
    CHECK(registry.size() == 3);
  }
}

TEST_CASE("requires_approval is answered by the registry", "[registry]") {
  auto refund = agentkit::tool("refund")
                    .doc("Issue a refund against a customer order and return the id.")
                    .side_effecting(true)
                    .requires_approval()
                    .fn([] { return 1; });
  auto registry = ToolRegistry::from_tools({refund, make_tool("lookup")});
  CHECK(registry.requires_approval("refund"));
  CHECK_FALSE(registry.requires_approval("lookup"));
  CHECK_FALSE(registry.requires_approval("unknown"));
}

TEST_CASE("registries merge, atomically on a collision", "[registry]") {
  auto a = ToolRegistry::from_tools({make_tool("one"), make_tool("two")});
  auto b = ToolRegistry::from_tools({make_tool("three"), make_tool("two", "other")});
  CHECK_THROWS_AS(a.merge(b), ToolDefinitionError);
  CHECK(a.names() == std::vector<std::string>{"one", "two"});  // unchanged
  a.merge(b, OnConflict::replace);
  CHECK(a.names() == std::vector<std::string>{"one", "three", "two"});
  auto ctx = agentkit::testing::make_test_ctx();
  CHECK(a.find("two")->run(Json::object(), ctx) == "other");
}

TEST_CASE("a plugin registers atomically under a name prefix", "[registry]") {
  CatalogPlugin plugin{"shop1"};
  ToolRegistry registry;
  registry.add_plugin("catalog", plugin);
  CHECK(registry.names() == std::vector<std::string>{"catalog_get_product", "catalog_search"});
  auto search = registry.find("catalog_search");
  CHECK(search->spec().metadata.at("plugin") == "catalog");
  CHECK(search->spec().metadata.at("local_name") == "search");
  auto ctx = agentkit::testing::make_test_ctx();
  CHECK(search->run({{"q", "boots"}}, ctx) == "shop1:boots");

  SECTION("one collision leaves the registry unchanged") {
    ToolRegistry other = ToolRegistry::from_tools({make_tool("catalog_search")});
    CHECK_THROWS_AS(other.add_plugin("catalog", plugin), ToolDefinitionError);
    CHECK(other.names() == std::vector<std::string>{"catalog_search"});
  }
  SECTION("a null tool is refused and nothing is registered") {
    ToolRegistry other;
    CHECK_THROWS_AS(other.add_plugin("p", std::vector<ToolPtr>{make_tool("a"), nullptr}), ToolDefinitionError);
    CHECK(other.empty());
  }
}
