// The CLI's YAML `tools:` entries are the library's tool data format
// (<agentkit/tool_data.h>): the same entries written as JSON and loaded by a
// ToolCatalog give the tools the CLI offers the model, and a bad entry is
// reported at its YAML line with the library's words.
#include <catch2/catch.hpp>

#ifdef AGENTKIT_CLI

#include <filesystem>
#include <map>
#include <set>

#include <agentkit/providers/tool_data.h>
#include <agentkit/providers/tool_format.h>
#include <agentkit/tool_data.h>

#include "../helpers/paths.h"
#include "cli_support.h"

using namespace agentkit_test::cli;

TEST_CASE("YAML tool entries give the tools a catalog loads from the same entries as JSON", "[cli][tool_data]") {
  TempDir dir;
  WireServer model;
  const std::string yaml_tools =
      "tools:\n"
      "  - rest:\n"
      "      name: refund\n"
      "      description: Refund part of a damaged customer order and return the refund record.\n"
      "      method: POST\n"
      "      url: https://shop.example.com/orders/{order_id}/refund\n"
      "      side_effecting: yes\n"
      "      idempotent: true\n"
      "      retries: 2\n"
      "      timeout_s: 2.5\n"
      "      approve_if: \"amount_usd > 100\"\n"
      "      headers: {Authorization: \"Bearer ${SHOP_TOKEN}\", X-Version: 2}\n"
      "      params:\n"
      "        - {name: order_id, description: The order to refund}\n"
      "        - {name: amount_usd, type: number, description: How much to refund}\n"
      "        - {name: reason, description: Why, required: false, enum: [damaged, late]}\n"
      "  - rest:\n"
      "      name: weather\n"
      "      description: Current weather for a city, as JSON from the weather service.\n"
      "      url: https://api.example.com/weather\n"
      "      side_effecting: false\n"
      "      params:\n"
      "        - {name: city, description: City name}\n"
      "        - {name: days, type: integer, default: 3, description: How many days}\n";
  const Json entries = Json::parse(R"([
      {"rest": {"name": "refund",
                "description": "Refund part of a damaged customer order and return the refund record.",
                "method": "POST", "url": "https://shop.example.com/orders/{order_id}/refund",
                "side_effecting": true, "idempotent": true, "retries": 2, "timeout_s": 2.5,
                "approve_if": "amount_usd > 100",
                "headers": {"Authorization": "Bearer ${SHOP_TOKEN}", "X-Version": "2"},
                "params": [{"name": "order_id", "description": "The order to refund"},
                           {"name": "amount_usd", "type": "number", "description": "How much to refund"},
                           {"name": "reason", "description": "Why", "required": false, "enum": ["damaged", "late"]}]}},
      {"rest": {"name": "weather",
                "description": "Current weather for a city, as JSON from the weather service.",
                "url": "https://api.example.com/weather", "side_effecting": false,
                "params": [{"name": "city", "description": "City name"},
                           {"name": "days", "type": "integer", "default": 3, "description": "How many days"}]}}
    ])");
  agentkit::ToolCatalog catalog;
  agentkit::providers::register_provider_kinds(catalog);
  std::map<std::string, Json> expected;
  for (const auto& tool : catalog.load_all(entries, "/tools")) {
    expected[tool->name()] = Json::parse(agentkit::providers::openai_tool(tool->spec()).dump());
  }
  REQUIRE(expected.size() == 2);

  model.enqueue(answer({"Nothing to do."}));
  const auto file = dir.write("a.yaml", agent_yaml(model, yaml_tools));
  const Outcome r = run_cli(dir, {"run", file.string(), "Hi", "--store", dir.store()});
  REQUIRE(r.exit_code == 0);
  std::map<std::string, Json> offered;
  const Json body = Json::parse(model.requests().at(0).body);
  for (const Json& t : body.at("tools")) offered[t["function"]["name"].get<std::string>()] = t;
  CHECK(offered == expected);
}

TEST_CASE("a bad YAML tool entry is reported at its line with the library's JSON path in words", "[cli][tool_data]") {
  TempDir dir;
  WireServer model;
  const auto file = dir.write("bad.yaml", agent_yaml(model,
                                                     "tools:\n"
                                                     "  - rest:\n"
                                                     "      name: weather\n"
                                                     "      description: Current weather for a city, from the service.\n"
                                                     "      url: https://api.example.com/weather\n"
                                                     "      side_effecting: false\n"
                                                     "      params:\n"
                                                     "        - {name: city, description: City name}\n"
                                                     "        - name: days\n"
                                                     "          description: How many days\n"
                                                     "          type: integr\n"));
  const Outcome r = run_cli(dir, {"validate", file.string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(file.string() + ":16: 'type' in tools[0].rest.params[1]: must be one of string, "
                                                    "integer, number, boolean, array, object, not 'integr'"));
  const auto unknown = dir.write("u.yaml", agent_yaml(model,
                                                      "tools:\n"
                                                      "  - mcp:\n"
                                                      "      name: fs\n"
                                                      "      command: fs-server\n"
                                                      "      colour: red\n"));
  CHECK_THAT(run_cli(dir, {"validate", unknown.string()}).err,
             Catch::Contains(unknown.string() + ":10: 'colour' in tools[0].mcp: unknown key; accepted keys: approve_if, "
                                                "args, command, cwd, env, exclude, headers, include, inherit_env, name, "
                                                "requires_approval, timeout_s, url"));
}

TEST_CASE("YAML workspace and command entries give the file and command tools, rooted beside the file",
          "[cli][tool_data][workspace]") {
  TempDir dir;
  WireServer model;
  std::filesystem::create_directories(dir.path / "project");
  dir.write("project/notes.txt", "the launch code is 7781\n");
  model.enqueue(calls({{"c1", "read_file", {{"path", "notes.txt"}}}, {"c2", "run_command", {{"program", "ls"}}}}));
  model.enqueue(answer({"Read it."}));
  const auto file = dir.write("ws.yaml", agent_yaml(model,
                                                    "tools:\n"
                                                    "  - workspace: {root: project, tools: [read_file, list_dir], max_entries: 10}\n"
                                                    "  - command:\n"
                                                    "      root: project\n"
                                                    "      programs: [ls]\n"
                                                    "      requires_approval: false\n"
                                                    "      isolation: none\n"
                                                    "      timeout_ms: 5000\n"));
  const Outcome r = run_cli(dir, {"run", file.string(), "Read the notes", "--store", dir.store()});
  REQUIRE(r.exit_code == 0);
  std::set<std::string> offered;
  const Json first = Json::parse(model.requests().at(0).body);
  for (const Json& t : first.at("tools")) {
    offered.insert(t["function"]["name"].get<std::string>());
  }
  CHECK(offered == std::set<std::string>{"list_dir", "read_file", "run_command"});
  // The tools ran in the directory the file names: the note's text, and ls listing it.
  const std::string second = model.requests().at(1).body;
  CHECK_THAT(second, Catch::Contains("the launch code is 7781"));
  CHECK_THAT(second, Catch::Contains("\\\"stdout\\\":\\\"notes.txt\\\\n"));

  const auto bad = dir.write("bad.yaml", agent_yaml(model,
                                                    "tools:\n"
                                                    "  - workspace:\n"
                                                    "      root: project\n"
                                                    "      max_entries: many\n"));
  CHECK_THAT(run_cli(dir, {"validate", bad.string()}).err,
             Catch::Contains(bad.string() + ":9: 'max_entries' in tools[0].workspace:"));
  const auto missing = dir.write("missing.yaml", agent_yaml(model, "tools:\n  - command: {root: nowhere, programs: [ls]}\n"));
  const Outcome m = run_cli(dir, {"validate", missing.string()});
  CHECK(m.exit_code == 2);
  CHECK_THAT(m.err, Catch::Contains("tools[0].command"));
  CHECK_THAT(m.err, Catch::Contains("nowhere"));
}

#endif  // AGENTKIT_CLI
