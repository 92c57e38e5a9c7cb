// Hostile arguments end in ToolArgumentError: never a crash, a stack overflow
// or UB (the sanitizer build runs these too).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include <agentkit/function_tool.h>
#include <agentkit/testing/test_context.h>

#include "spec_types.h"

using agentkit::Json;
using agentkit::ToolArgumentError;

namespace {

agentkit::ToolPtr make_target() {
  return agentkit::tool("target")
      .doc("A tool with a typed signature that hostile input is thrown at.")
      .side_effecting(true)
      .params("name", "count", "ratio", "filter", agentkit::opt("payload", Json::object()))
      .fn([](const std::string& name, int count, double ratio, const spec::Filter&, const Json&) {
        return name + std::to_string(count) + std::to_string(ratio);
      });
}

std::string nested_arrays(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

}  // namespace

TEST_CASE("arguments that are not an object are refused", "[hostile]") {
  auto t = make_target();
  auto ctx = agentkit::testing::make_test_ctx();
  for (const Json& bad : {Json(nullptr), Json(3), Json("x"), Json::array({1, 2})}) {
    CHECK_THROWS_WITH(t->run(bad, ctx), Catch::Contains("expected a JSON object"));
  }
  CHECK_THROWS_AS(agentkit::parse_arguments("target", "[1,2]").at("x"), std::exception);
}

TEST_CASE("100,000-deep nesting is refused at parse time without recursion", "[hostile]") {
  const std::string text = R"({"name": )" + nested_arrays(100'000) + "}";
  CHECK_THROWS_WITH(agentkit::parse_arguments("target", text), Catch::Contains("nested deeper than 64 levels"));
}

TEST_CASE("a 100,000-deep value built in memory is refused by the decoder", "[hostile]") {
  Json deep = Json::array();
  for (int i = 0; i < 100'000; ++i) {
    Json outer = Json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  auto t = make_target();
  auto ctx = agentkit::testing::make_test_ctx();
  Json args = {{"name", "x"}, {"count", 1}, {"ratio", 1.0}, {"filter", {{"query", "q"}}}};
  args["payload"] = std::move(deep);
  CHECK_THROWS_WITH(t->run(args, ctx), Catch::Contains("payload: nested deeper than 64 levels"));
  args["name"] = std::move(args["payload"]);  // a deep value where a string belongs: a type error, not a walk
  args["payload"] = Json::object();
  CHECK_THROWS_WITH(t->run(args, ctx), Catch::Contains("name: expected string, got array"));
}

TEST_CASE("a 10 MB string is refused", "[hostile]") {
  const std::string huge(10u << 20, 'a');
  CHECK_THROWS_WITH(agentkit::parse_arguments("target", R"({"name":")" + huge + R"("})"),
                    Catch::Contains("the limit is"));
  auto t = make_target();
  auto ctx = agentkit::testing::make_test_ctx();
  Json args = {{"name", huge}, {"count", 1}, {"ratio", 1.0}, {"filter", {{"query", "q"}}}};
  CHECK_THROWS_WITH(t->run(args, ctx), Catch::Contains("exceeds the limit"));
}

TEST_CASE("invalid UTF-8 is refused", "[hostile]") {
  CHECK_THROWS_AS(agentkit::parse_arguments("target", "{\"name\":\"\xff\xfe\"}"), ToolArgumentError);
  auto t = make_target();
  auto ctx = agentkit::testing::make_test_ctx();
  for (const char* bad : {"\xff", "\xc0\xaf", "\xed\xa0\x80", "abc\xe2\x82", "\xf4\x90\x80\x80"}) {
    Json args = {{"name", std::string(bad)}, {"count", 1}, {"ratio", 1.0}, {"filter", {{"query", "q"}}}};
    CHECK_THROWS_WITH(t->run(args, ctx), Catch::Contains("not valid UTF-8"));
  }
  CHECK(agentkit::is_valid_utf8("héllo \xe2\x80\xa8 \xf0\x9f\x98\x80"));
}

TEST_CASE("NaN, Infinity and out-of-range numbers are refused", "[hostile]") {
  for (const char* text : {R"({"ratio": NaN})", R"({"ratio": Infinity})", R"({"ratio": 1e400})", R"({"count": -})"}) {
    CAPTURE(text);
    CHECK_THROWS_AS(agentkit::parse_arguments("target", text), ToolArgumentError);
  }
  auto t = make_target();
  auto ctx = agentkit::testing::make_test_ctx();
  const auto args_with = [](Json count, Json ratio) {
    return Json{{"name", "x"}, {"count", std::move(count)}, {"ratio", std::move(ratio)}, {"filter", {{"query", "q"}}}};
  };
  CHECK_THROWS_AS(t->run(args_with(1, std::numeric_limits<double>::quiet_NaN()), ctx), ToolArgumentError);
  CHECK_THROWS_AS(t->run(args_with(1, std::numeric_limits<double>::infinity()), ctx), ToolArgumentError);
  CHECK_THROWS_AS(t->run(args_with(1e20, 1.0), ctx), ToolArgumentError);
  CHECK_THROWS_AS(t->run(args_with(std::numeric_limits<std::uint64_t>::max(), 1.0), ctx), ToolArgumentError);
  CHECK_THROWS_AS(t->run(args_with(std::numeric_limits<double>::quiet_NaN(), 1.0), ctx), ToolArgumentError);
  CHECK_THROWS_AS(t->run(args_with(-1e300, 1.0), ctx), ToolArgumentError);
  CHECK(t->run(args_with(2, 0.5), ctx) == "x20.500000");
}

TEST_CASE("parse_arguments accepts good input and treats empty text as no arguments", "[hostile]") {
  CHECK(agentkit::parse_arguments("t", "") == Json::object());
  CHECK(agentkit::parse_arguments("t", "  ") == Json::object());
  CHECK(agentkit::parse_arguments("t", R"({"a": [1, {"b": "c"}]})") == Json({{"a", {1, {{"b", "c"}}}}}));
  CHECK(agentkit::parse_arguments("t", nested_arrays(63)).is_array());
}

TEST_CASE("error messages stay short on huge values", "[hostile]") {
  auto t = make_target();
  auto ctx = agentkit::testing::make_test_ctx();
  Json big = Json::array();
  for (int i = 0; i < 100'000; ++i) big.push_back(i);
  Json args = {{"name", big}, {"count", 1}, {"ratio", 1.0}, {"filter", {{"query", "q"}}}};
  try {
    t->run(args, ctx);
    FAIL("expected ToolArgumentError");
  } catch (const ToolArgumentError& e) {
    CHECK(std::string(e.what()).size() < 400);
  }
}
