// Approval rules in YAML, through the `agentkit` CLI against loopback peers:
// a REST tool's `approve_if` (a refund over $100 waits, under it runs), an
// MCP server's `include` / `exclude` / `requires_approval` / `approve_if`,
// and the errors a careless file gets (a rule that does not parse, a
// pattern that names no tool) before anything runs.
#include <catch2/catch.hpp>

#ifdef AGENTKIT_CLI

#include <algorithm>

#include "../helpers/paths.h"
#include "../helpers/wire_replies.h"
#include "cli_support.h"

using agentkit_test::json_reply;
using agentkit_test::read_file;
using namespace agentkit_test::cli;

namespace {

std::string rest_refund(const WireServer& shop, const std::string& rule) {
  return "tools:\n"
         "  - rest:\n"
         "      name: refund\n"
         "      description: Refund part of a damaged customer order and return the refund record.\n"
         "      method: POST\n"
         "      url: " +
         shop.base_url() +
         "/orders/{order_id}/refund\n"
         "      side_effecting: true\n"
         "      approve_if: " +
         rule +
         "\n"
         "      params:\n"
         "        - {name: order_id, description: The order to refund}\n"
         "        - {name: amount_usd, type: number, description: How much to refund}\n"
         "egress: [\"" +
         shop.base_url() + "\"]\n";
}

// An MCP server over stdio in POSIX sh with three tools; every tools/call
// line is appended to calls.log, so a test sees which calls reached it.
const char* const kShopServer = R"(while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/^{"id":\([0-9][0-9]*\),.*/\1/p')
  [ -z "$id" ] && continue
  case "$line" in
    *'"method":"initialize"'*) result='{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"shop","version":"1.0"}}' ;;
    *'"method":"tools/list"'*) result='{"tools":[
{"name":"get_order","description":"Look up a customer order by id.","inputSchema":{"type":"object","properties":{"order_id":{"type":"string"}}},"annotations":{"readOnlyHint":true}},
{"name":"refund","description":"Refund part of a customer order.","inputSchema":{"type":"object","properties":{"order_id":{"type":"string"},"amount_usd":{"type":"number"}}}},
{"name":"delete_everything","description":"Delete every order in the shop.","inputSchema":{"type":"object","properties":{}}}]}'
      result=$(printf '%s' "$result" | tr -d '\n') ;;
    *'"method":"tools/call"'*) printf '%s\n' "$line" >> calls.log; result='{"content":[{"type":"text","text":"done"}]}' ;;
    *) result='{}' ;;
  esac
  printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$id" "$result"
done
)";

std::string mcp_shop(const std::string& options) {
  return "tools:\n"
         "  - mcp:\n"
         "      name: shop\n"
         "      command: sh\n"
         "      args: [shop.sh]\n" +
         options;
}

std::size_t lines_in(const fs::path& file) {
  if (!fs::exists(file)) return 0;
  const std::string text = read_file(file);
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("a REST tool's approve_if: a refund over $100 waits for a human, under it runs", "[cli][approval][rule]") {
  TempDir dir;
  WireServer model, shop;
  shop.set_handler([](const WireServer::Request&) { return json_reply({{"refund", "R-1"}}); });
  const auto file = dir.write("support.yaml", agent_yaml(model, rest_refund(shop, "\"amount_usd > 100\"")));

  SECTION("under: runs without asking") {
    model.enqueue(calls({{"c1", "refund", {{"order_id", "A-1"}, {"amount_usd", 40}}}}));
    model.enqueue(answer({"Refunded $40."}));
    const Outcome r = run_cli(dir, {"run", file.string(), "Refund $40 on A-1", "--json", "--store", dir.store()});
    CHECK(r.exit_code == 0);
    CHECK(shop.requests().size() == 1);
  }
  SECTION("over: suspends, nothing sent; approved, it runs once") {
    model.enqueue(calls({{"c1", "refund", {{"order_id", "A-1"}, {"amount_usd", 250}}}}));
    const Outcome r = run_cli(dir, {"run", file.string(), "Refund $250 on A-1", "--json", "--store", dir.store()});
    CHECK(r.exit_code == 3);
    CHECK(shop.requests().empty());
    const Json result = json_lines(r.out).back();
    REQUIRE(result["pending"].size() == 1);
    CHECK(result["pending"][0]["arguments"]["amount_usd"] == 250);

    model.enqueue(answer({"Refunded $250."}));
    const Outcome resumed = run_cli(dir, {"resume", result["run_id"].get<std::string>(), "--approve", "all", "--store",
                                          dir.store()});
    CHECK(resumed.exit_code == 0);
    CHECK(shop.requests().size() == 1);
  }
  SECTION("an amount the rule cannot read (a string): it waits") {
    model.enqueue(calls({{"c1", "refund", {{"order_id", "A-1"}, {"amount_usd", "5"}}}}));
    const Outcome r = run_cli(dir, {"run", file.string(), "Refund A-1", "--json", "--store", dir.store()});
    CHECK(r.exit_code == 3);
    CHECK(shop.requests().empty());
  }
}

TEST_CASE("an approve_if that does not parse is refused at its line with the column, before any request",
          "[cli][approval][rule][config]") {
  TempDir dir;
  WireServer model, shop;
  const auto file = dir.write("support.yaml", agent_yaml(model, rest_refund(shop, "\"amount_usd >\"")));
  const Outcome r = run_cli(dir, {"run", file.string(), "Refund A-1", "--store", dir.store()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(file.string() + ":13: 'approve_if' in tools[0].rest: at column 13: expected a value after '>'"));
  CHECK(model.requests().empty());
}

TEST_CASE("an MCP server's include, exclude, requires_approval and approve_if", "[cli][approval][rule][mcp]") {
  TempDir dir;
  WireServer model;
  dir.write("shop.sh", kShopServer);
  const fs::path log = dir.path / "calls.log";

  SECTION("include and exclude decide what the model is offered") {
    model.enqueue(answer({"Nothing to do."}));
    const auto file = dir.write("a.yaml", agent_yaml(model, mcp_shop("      include: [\"*\"]\n"
                                                                     "      exclude: [\"delete_*\"]\n")));
    const Outcome r = run_cli(dir, {"run", file.string(), "Hi", "--store", dir.store()});
    CHECK(r.exit_code == 0);
    std::vector<std::string> offered;
    const Json body = Json::parse(model.requests().at(0).body);
    for (const Json& t : body.at("tools")) offered.push_back(t["function"]["name"]);
    std::sort(offered.begin(), offered.end());
    CHECK(offered == std::vector<std::string>{"shop_get_order", "shop_refund"});
  }
  SECTION("approve_if gates one tool by its arguments; requires_approval gates another on every call") {
    const auto file = dir.write("a.yaml", agent_yaml(model, mcp_shop("      requires_approval: [get_order]\n"
                                                                     "      approve_if: {refund: \"amount_usd > 100\"}\n")));
    model.enqueue(calls({{"c1", "shop_refund", {{"order_id", "A-1"}, {"amount_usd", 40}}},
                         {"c2", "shop_refund", {{"order_id", "A-2"}, {"amount_usd", 250}}},
                         {"c3", "shop_get_order", {{"order_id", "A-3"}}}}));
    const Outcome r = run_cli(dir, {"run", file.string(), "Refund", "--json", "--store", dir.store()});
    CHECK(r.exit_code == 3);
    const Json result = json_lines(r.out).back();
    std::vector<std::string> pending;
    for (const Json& p : result["pending"]) pending.push_back(p["id"]);
    CHECK(pending == std::vector<std::string>{"c2", "c3"});
    CHECK(lines_in(log) == 1);  // only the $40 refund reached the server
    CHECK_THAT(read_file(log), Catch::Contains("\"A-1\""));
  }
  SECTION("requires_approval: true gates every tool") {
    const auto file = dir.write("a.yaml", agent_yaml(model, mcp_shop("      requires_approval: true\n")));
    model.enqueue(calls({{"c1", "shop_get_order", {{"order_id", "A-3"}}}}));
    const Outcome r = run_cli(dir, {"run", file.string(), "Look", "--json", "--store", dir.store()});
    CHECK(r.exit_code == 3);
    CHECK(lines_in(log) == 0);
  }
  SECTION("a pattern that names no tool the agent gets is an error, before the model is asked") {
    const auto typo = dir.write("t.yaml", agent_yaml(model, mcp_shop("      approve_if: {refnd: \"amount_usd > 100\"}\n")));
    const Outcome r = run_cli(dir, {"run", typo.string(), "Refund", "--store", dir.store()});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("MCP server 'shop': approve_if 'refnd' names none of the tools the agent gets "
                                      "(get_order, refund, delete_everything)"));
    const auto excluded =
        dir.write("e.yaml", agent_yaml(model, mcp_shop("      exclude: [refund]\n"
                                                       "      approve_if: {refund: \"amount_usd > 100\"}\n")));
    CHECK_THAT(run_cli(dir, {"run", excluded.string(), "Refund", "--store", dir.store()}).err,
               Catch::Contains("approve_if 'refund' names none of the tools the agent gets (get_order, delete_everything)"));
    const auto include = dir.write("i.yaml", agent_yaml(model, mcp_shop("      include: [get_ordr]\n")));
    CHECK_THAT(run_cli(dir, {"run", include.string(), "Look", "--store", dir.store()}).err,
               Catch::Contains("include 'get_ordr' names none of its tools"));
    CHECK(model.requests().empty());
  }
  SECTION("a malformed approve_if is refused with its line") {
    const auto file = dir.write("a.yaml", agent_yaml(model, mcp_shop("      approve_if: [refund]\n")));
    const Outcome r = run_cli(dir, {"validate", file.string()});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("a.yaml:11: 'approve_if' in tools[0].mcp: must map tool names"));
  }
}

#endif  // AGENTKIT_CLI
