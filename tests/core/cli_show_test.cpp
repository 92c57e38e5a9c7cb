// `agentkit runs` and `agentkit show`: stored runs listed and shown. The
// runs are made by the CLI itself against a loopback model (as in
// cli_test.cpp), or in-process on the same SQLite store when the test needs
// what YAML cannot declare (a tool that returns an image). The HTML page is
// also opened in headless Chromium when it is installed.
#include <catch2/catch.hpp>

#ifdef AGENTKIT_CLI

#include <algorithm>
#include <memory>
#include <set>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/state/checkpoint.h>
#include <agentkit/state/keys.h>
#include <agentkit/state/sqlite_store.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/span_recorder.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/paths.h"
#include "../helpers/wire_replies.h"
#include "cli_support.h"

using agentkit_test::json_reply;
using agentkit_test::read_file;
using namespace agentkit_test::cli;

namespace {

// What a hostile tool or model may return: it must reach the page as text.
const std::string kInjection =
    "</pre><script>document.body.setAttribute('data-pwned','script')</script>"
    "<img src=x onerror=\"document.body.setAttribute('data-pwned','img')\">";

// A 120x80 PNG: a crushed parcel, 230 bytes.
const std::string kParcelPng(
    "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x78\x00\x00\x00\x50"
    "\x08\x03\x00\x00\x00\xe5\x45\x41\xbb\x00\x00\x00\x0f\x50\x4c\x54\x45\xec\xf0\xf5\xb0\x7c\x48\x8c"
    "\x60\x34\x5a\x3c\x1e\xdc\x3c\x3c\xc8\xff\xd6\xa5\x00\x00\x00\x92\x49\x44\x41\x54\x78\xda\xed\xd8"
    "\x3b\x0e\x80\x20\x10\x00\x51\x57\xb9\xff\x99\x35\xf1\xaf\x68\x61\x74\xd6\x62\xa6\xa4\xe0\x05\xd8"
    "\x8a\xa6\x31\x33\x33\x33\x33\xe3\xea\x5e\xe9\x09\x1c\x77\xb5\x43\xbb\x85\x8b\x4d\xbe\x87\x23\x0d"
    "\x8e\x34\xb8\x46\x43\x70\x64\xc0\xa5\x94\x8a\x4c\x9c\xb8\x2a\x23\x57\x3d\xca\x91\xf0\xc6\x15\x19"
    "\x1a\xae\xb3\x4c\x4d\xf5\x49\xa6\xe0\x59\x0e\x1c\x3e\xca\x1c\x7c\x90\x41\x78\x2f\x93\xf0\x22\x07"
    "\x0d\x6f\x65\x16\xde\xc8\x30\xbc\xca\x34\xbc\xc8\x38\x3c\xcb\x3c\x3c\xc9\x09\x70\xd2\x1b\x0b\x0b"
    "\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\xff\x0c\xce\xfa\x36\x36\x33\xfb\x6b\x3d\xab\x5f\x0f\x73\x24\xb5"
    "\x6d\x13\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82",
    230);

// The run started by `agentkit run ... --json`: its id (the run_started
// line) and the process's outcome.
std::pair<std::string, Outcome> start_run(const TempDir& dir, const fs::path& file, const std::string& task) {
  Outcome r = run_cli(dir, {"run", file.string(), task, "--json", "--store", dir.store()});
  const auto lines = json_lines(r.out);
  REQUIRE(!lines.empty());
  REQUIRE(lines.front()["type"] == "run_started");
  return {lines.front()["run_id"].get<std::string>(), r};
}

// A model reply that takes `ms` to arrive, so calls have a duration.
WireServer::Response slow(WireServer::Response r, int ms = 15) {
  r.delay = std::chrono::milliseconds(ms);
  return r;
}

// The runs of the listing tests, each in the state database of `dir`.
struct Store {
  std::string answered, approved, failed, with_sub, suspended;
};

// A definition with the refund tool (behind approval) and the researcher
// sub-agent.
fs::path support_yaml(const TempDir& dir, const WireServer& model, const WireServer& shop) {
  dir.write("researcher.yaml",
            "name: researcher\n"
            "description: Researches facts about cities and reports them briefly.\n"
            "model: openai/gpt-mini\n"
            "base_url: " + model.base_url() + "/v1\n"
            "api_key_env: AGENTKIT_TEST_KEY\n"
            "prompt: You research.\n");
  return dir.write("atlas.yaml",
                   agent_yaml(model, "pricing: {input_usd_per_mtok: 1000, output_usd_per_mtok: 2000}\ntools:\n" +
                                         refund_tool(shop) +
                                         "  - agent: {file: researcher.yaml, name: research, side_effecting: false}\n"));
}

// An answered run that suspended for approval first and was resumed.
std::string approved_run(const TempDir& dir, WireServer& model, const fs::path& file) {
  model.enqueue(slow(calls({{"c1", "refund", {{"order_id", "A-1"}}}})));
  const auto [id, first] = start_run(dir, file, "Refund order A-1");
  REQUIRE(first.exit_code == 3);
  model.enqueue(slow(answer({"Refunded order A-1."})));
  REQUIRE(run_cli(dir, {"resume", id, "--approve", "all", "--store", dir.store()}).exit_code == 0);
  return id;
}

// A run that asked the researcher sub-agent.
std::string sub_agent_run(const TempDir& dir, WireServer& model, const fs::path& file) {
  model.enqueue(slow(calls({{"s1", "research", {{"task", "Find Lisbon's population"}}}})));
  model.enqueue(slow(answer({"About 545,000."})));  // the sub-agent's answer
  model.enqueue(slow(answer({"Lisbon has about 545,000 residents."})));
  const auto [id, r] = start_run(dir, file, "How big is Lisbon?");
  REQUIRE(r.exit_code == 0);
  return id;
}

// A run the provider refused (404: invalid_argument).
std::string failed_run(const TempDir& dir, WireServer& model, const fs::path& file) {
  WireServer::Response refused = json_reply({{"error", {{"message", "model not found"}, {"type", "invalid_request_error"}}}}, 404);
  refused.headers.emplace_back("x-should-retry", "false");
  model.enqueue(refused);
  const auto [id, r] = start_run(dir, file, "Hi");
  REQUIRE(r.exit_code == 11);
  return id;
}

// One of each, started in this order, ~10 ms apart.
Store fill_store(const TempDir& dir, WireServer& model, WireServer& shop) {
  shop.set_handler([](const WireServer::Request&) { return json_reply({{"refund", "R-9"}, {"status", "done"}}); });
  const auto file = support_yaml(dir, model, shop);
  Store ids;
  model.enqueue(slow(answer({"Hello."})));
  const auto [answered, a] = start_run(dir, file, "Say hello");
  REQUIRE(a.exit_code == 0);
  ids.answered = answered;
  ids.approved = approved_run(dir, model, file);
  ids.failed = failed_run(dir, model, file);
  ids.with_sub = sub_agent_run(dir, model, file);
  model.enqueue(slow(calls({{"c7", "refund", {{"order_id", "B-2"}}}})));
  const auto [suspended, s] = start_run(dir, file, "Refund order B-2");
  REQUIRE(s.exit_code == 3);
  ids.suspended = suspended;
  return ids;
}

Json line_of(const std::vector<Json>& lines, const std::string& run_id) {
  for (const Json& line : lines) {
    if (line.value("run_id", "") == run_id) return line;
  }
  FAIL("no line for run " << run_id);
  return {};
}

agentkit::RunState stored_state(const std::string& path, const std::string& run_id) {
  agentkit::state::SqliteStore store{fs::path(path)};
  auto state = agentkit::state::load_run(store, agentkit::Scope{}, run_id);
  REQUIRE(state);
  return *state;
}

}  // namespace

TEST_CASE("agentkit runs lists the store's runs newest first with status, steps, tokens, cost and pending approvals",
          "[cli][runs]") {
  TempDir dir;
  WireServer model, shop;
  const Store ids = fill_store(dir, model, shop);

  const Outcome json = run_cli(dir, {"runs", "--json", "--store", dir.store()});
  CHECK(json.exit_code == 0);
  const auto lines = json_lines(json.out);
  REQUIRE(lines.size() == 5);
  std::vector<std::string> order;
  for (const Json& line : lines) order.push_back(line["run_id"]);
  CHECK(order == std::vector<std::string>{ids.suspended, ids.with_sub, ids.failed, ids.approved, ids.answered});
  for (std::size_t i = 0; i < lines.size(); ++i) {
    INFO(lines[i].dump());
    REQUIRE(lines[i]["started"].is_string());
    CHECK(std::regex_match(lines[i]["started"].get<std::string>(),
                           std::regex(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)")));
    if (i > 0) CHECK(lines[i]["started"].get<std::string>() <= lines[i - 1]["started"].get<std::string>());
    CHECK(lines[i]["agent"] == "atlas");
  }
  const Json approved = line_of(lines, ids.approved);
  CHECK(approved["status"] == "answered");
  CHECK(approved["steps"] == 2);
  CHECK(approved["input_tokens"] == 80);
  CHECK(approved["output_tokens"] == 18);
  CHECK(approved["cost_usd"].get<double>() == Approx(2 * (40 * 1000 + 9 * 2000) / 1e6));
  CHECK(approved["pending"] == 0);
  const Json suspended = line_of(lines, ids.suspended);
  CHECK(suspended["status"] == "suspended");
  CHECK(suspended["pending"] == 1);
  CHECK(suspended["steps"] == 1);
  const Json failed = line_of(lines, ids.failed);
  CHECK(failed["status"] == "failed");
  CHECK(failed["error_code"] == "invalid_argument");
  CHECK(line_of(lines, ids.with_sub)["status"] == "answered");
  CHECK(line_of(lines, ids.with_sub)["steps"] == 2);  // the parent's model calls; the sub-run is not a row
  CHECK(line_of(lines, ids.answered)["steps"] == 1);

  SECTION("as an aligned table") {
    const Outcome table = run_cli(dir, {"runs", "--store", dir.store()});
    CHECK(table.exit_code == 0);
    std::vector<std::string> rows;
    std::istringstream in(table.out);
    for (std::string row; std::getline(in, row);) rows.push_back(row);
    REQUIRE(rows.size() == 6);
    CHECK_THAT(rows[0], Catch::Matches("RUN +AGENT +STATUS +STARTED +STEPS +TOKENS +COST +PENDING"));
    CHECK(rows[1].rfind(ids.suspended, 0) == 0);
    CHECK(rows[5].rfind(ids.answered, 0) == 0);
    // Every column starts where its heading does.
    for (const char* heading : {"AGENT", "STATUS", "STARTED", "STEPS", "TOKENS", "COST", "PENDING"}) {
      const auto at = rows[0].find(heading);
      for (std::size_t r = 1; r < rows.size(); ++r) {
        INFO(heading << " in row: " << rows[r]);
        REQUIRE(rows[r].size() > at);
        CHECK(rows[r][at - 1] == ' ');
        CHECK(rows[r][at] != ' ');
      }
    }
    const std::string& approved_row = rows[4];
    CHECK(approved_row.find(" answered ") != std::string::npos);
    CHECK(approved_row.find(" 80/18 ") != std::string::npos);
    CHECK_THAT(rows[1], Catch::Contains(" suspended ") && Catch::EndsWith(" 1"));
    CHECK_THAT(rows[3], Catch::Contains(" failed "));
  }
  SECTION("an empty or missing store lists nothing and creates nothing") {
    const std::string missing = (dir.path / "none" / "state.db").string();
    const Outcome none = run_cli(dir, {"runs", "--store", missing});
    CHECK(none.exit_code == 0);
    CHECK(none.out.empty());
    CHECK_THAT(none.err, Catch::Contains("no runs in"));
    CHECK_FALSE(fs::exists(missing));
  }
}

TEST_CASE("agentkit runs --status keeps only the runs with that status", "[cli][runs]") {
  TempDir dir;
  WireServer model, shop;
  const Store ids = fill_store(dir, model, shop);
  const auto ids_of = [&](const std::string& status) {
    const Outcome r = run_cli(dir, {"runs", "--status", status, "--json", "--store", dir.store()});
    CHECK(r.exit_code == 0);
    std::vector<std::string> out;
    for (const Json& line : json_lines(r.out)) {
      CHECK(line["status"] == status);
      out.push_back(line["run_id"]);
    }
    return out;
  };
  CHECK(ids_of("suspended") == std::vector<std::string>{ids.suspended});
  CHECK(ids_of("failed") == std::vector<std::string>{ids.failed});
  CHECK(ids_of("answered") == std::vector<std::string>{ids.with_sub, ids.approved, ids.answered});
  CHECK(ids_of("running").empty());
  CHECK(ids_of("cancelled").empty());
  const Outcome table = run_cli(dir, {"runs", "--status", "failed", "--store", dir.store()});
  CHECK(table.out.find(ids.failed) != std::string::npos);
  CHECK(table.out.find(ids.answered) == std::string::npos);
  const Outcome bad = run_cli(dir, {"runs", "--status", "done", "--store", dir.store()});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--status"));
}

TEST_CASE("agentkit show prints a resumed run's model calls, its call awaiting approval, the decision and the answer",
          "[cli][show][approval]") {
  TempDir dir;
  WireServer model, shop;
  shop.set_handler([](const WireServer::Request&) { return json_reply({{"refund", "R-9"}}); });
  const auto file = support_yaml(dir, model, shop);
  const std::string id = approved_run(dir, model, file);

  const Outcome r = run_cli(dir, {"show", id, "--store", dir.store()});
  CHECK(r.exit_code == 0);
  const std::string& out = r.out;
  CHECK_THAT(out, Catch::StartsWith("run " + id + "  agent atlas  answered\n"));
  CHECK_THAT(out, Catch::Contains("2 model calls") && Catch::Contains("80 in / 18 out tokens") &&
                      Catch::Contains("task: Refund order A-1"));
  // In order: the model call, the call that waited, the resumed part, the call that ran, the last model call.
  const std::vector<std::string> expected = {
      "model  gpt-test", "40 in / 9 out", "tool_calls", "⏸ refund(order_id: 'A-1')  awaiting_approval",
      "approval requested", "── resumed", "(part 2)", "✓ refund(order_id: 'A-1')  ok", "approval approved",
      "model  gpt-test", "stop", "answer:\nRefunded order A-1.\n"};
  std::size_t at = 0;
  for (const auto& piece : expected) {
    INFO("looking for '" << piece << "' after offset " << at << " in:\n" << out);
    const auto found = out.find(piece, at);
    REQUIRE(found != std::string::npos);
    at = found + piece.size();
  }
  CHECK(std::regex_search(out, std::regex(R"(\+\d+\.\d{3}s +model  gpt-test .* \d+ ms  tool_calls)")));

  SECTION("--json: the parts, the steps and the approvals") {
    const Outcome j = run_cli(dir, {"show", id, "--json", "--store", dir.store()});
    CHECK(j.exit_code == 0);
    const Json doc = Json::parse(j.out);
    CHECK(doc["run"]["run_id"] == id);
    CHECK(doc["status"] == "answered");
    CHECK(doc["from_spans"] == true);
    REQUIRE(doc["parts"].size() == 2);
    CHECK(doc["parts"][0]["resumed"] == false);
    CHECK(doc["parts"][0]["stop_reason"] == "suspended");
    CHECK(doc["parts"][1]["resumed"] == true);
    CHECK(doc["parts"][1]["stop_reason"] == "answered");
    const Json& first = doc["parts"][0]["steps"];
    REQUIRE(first.size() == 2);
    CHECK(first[0]["type"] == "model");
    CHECK(first[0]["input_tokens"] == 40);
    CHECK(first[0]["finish_reason"] == "tool_calls");
    CHECK(first[0]["duration_ms"].get<double>() >= 15);  // the model's reply took 15 ms
    CHECK(first[1]["type"] == "tool");
    CHECK(first[1]["outcome"] == "awaiting_approval");
    CHECK(first[1]["arguments"] == Json({{"order_id", "A-1"}}));
    CHECK(first[1]["approvals"][0]["event"] == "requested");
    const Json& second = doc["parts"][1]["steps"];
    REQUIRE(second.size() == 2);
    CHECK(second[0]["outcome"] == "ok");
    CHECK(second[0]["call_id"] == "c1");
    CHECK(second[0]["approvals"][0]["decision"] == "approved");
    CHECK(second[1]["type"] == "model");
    CHECK(second[1]["iteration"] == 2);
    CHECK(doc["output"] == "Refunded order A-1.");
  }
}

TEST_CASE("agentkit show marks a call a reviewer rejected, in the timeline and the page's approvals", "[cli][show][approval]") {
  TempDir dir;
  WireServer model, shop;
  const auto file = support_yaml(dir, model, shop);
  model.enqueue(slow(calls({{"c1", "refund", {{"order_id", "A-1"}}}})));
  const auto [id, first] = start_run(dir, file, "Refund order A-1");
  REQUIRE(first.exit_code == 3);
  model.enqueue(slow(answer({"I did not refund A-1."})));
  REQUIRE(run_cli(dir, {"resume", id, "--reject", "c1:not damaged", "--store", dir.store()}).exit_code == 0);
  CHECK(shop.requests().empty());

  const Outcome r = run_cli(dir, {"show", id, "--store", dir.store()});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("⊘ refund(order_id: 'A-1')  denied") && Catch::Contains("approval rejected"));
  const Outcome html = run_cli(dir, {"show", id, "--html", "-", "--store", dir.store()});
  CHECK(std::regex_search(html.out, std::regex("<tr data-call=\"c1\"><td>atlas</td><td><code>c1</code> refund\\([^<]*</td>"
                                               "<td>[^<]+ UTC</td><td><b>rejected</b></td><td>[^<]+ UTC</td></tr>")));
  CHECK(std::regex_search(html.out, std::regex("data-kind=\"tool\" data-outcome=\"denied\"[^>]*data-call=\"c1\"")));
}

TEST_CASE("agentkit show indents a sub-agent's run under the call that started it", "[cli][show][subagent]") {
  TempDir dir;
  WireServer model, shop;
  const auto file = support_yaml(dir, model, shop);
  const std::string id = sub_agent_run(dir, model, file);

  const Outcome r = run_cli(dir, {"show", id, "--store", dir.store()});
  CHECK(r.exit_code == 0);
  INFO(r.out);
  std::vector<std::string> rows;
  std::istringstream in(r.out);
  for (std::string row; std::getline(in, row);) rows.push_back(row);
  const auto row_with = [&](const std::string& text) {
    const auto it = std::find_if(rows.begin(), rows.end(), [&](const std::string& row) { return row.find(text) != std::string::npos; });
    REQUIRE(it != rows.end());
    return static_cast<std::size_t>(it - rows.begin());
  };
  const auto indent = [&](std::size_t row) { return rows[row].find_first_not_of(' '); };
  const std::size_t call = row_with("✓ research(task: ");
  const std::size_t sub = row_with("↳ sub-run " + id + "/1/s1 (agent researcher) answered");
  const std::size_t sub_model = row_with("model  gpt-mini");
  const std::size_t sub_answer = row_with("answer: About 545,000.");
  std::size_t last_model = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].find("model  gpt-test") != std::string::npos) last_model = i;
  }
  CHECK(call < sub);
  CHECK(sub < sub_model);
  CHECK(sub_model < sub_answer);
  CHECK(sub_answer < last_model);
  CHECK(indent(sub) > indent(call));
  CHECK(indent(sub_model) > indent(call));
  CHECK(indent(last_model) == indent(call));
  CHECK_THAT(r.out, Catch::EndsWith("answer:\nLisbon has about 545,000 residents.\n"));

  const Json doc = Json::parse(run_cli(dir, {"show", id, "--json", "--store", dir.store()}).out);
  const Json& steps = doc["parts"][0]["steps"];
  REQUIRE(steps.size() == 3);
  REQUIRE(steps[1]["sub_runs"].size() == 1);
  const Json& child = steps[1]["sub_runs"][0];
  CHECK(child["run_id"] == id + "/1/s1");
  CHECK(child["agent"] == "researcher");
  CHECK(child["agent_path"] == "atlas/researcher");
  CHECK(child["parts"][0]["steps"][0]["model"] == "gpt-mini");
  CHECK(child["output"] == "About 545,000.");
}

TEST_CASE("agentkit show ends a failed run with its error code and message", "[cli][show]") {
  TempDir dir;
  WireServer model, shop;
  const auto file = support_yaml(dir, model, shop);
  const std::string id = failed_run(dir, model, file);
  const Outcome r = run_cli(dir, {"show", id, "--store", dir.store()});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("run " + id + "  agent atlas  failed\n"));
  CHECK(std::regex_search(r.out, std::regex(R"(model  gpt-test .*✗ invalid_argument: .*model not found)")));
  CHECK_THAT(r.out, Catch::Contains("\nerror [invalid_argument]: ") && Catch::Contains("model not found"));
  const Json doc = Json::parse(run_cli(dir, {"show", id, "--json", "--store", dir.store()}).out);
  CHECK(doc["error"]["code"] == "invalid_argument");
  CHECK_THAT(doc["error"]["message"].get<std::string>(), Catch::Contains("model not found"));
}

TEST_CASE("agentkit show of an unknown run exits 11 (not_found) and names the run", "[cli][show]") {
  TempDir dir;
  WireServer model, shop;
  const auto file = support_yaml(dir, model, shop);
  failed_run(dir, model, file);  // the store exists and holds a run
  const Outcome r = run_cli(dir, {"show", "run-nope", "--store", dir.store()});
  CHECK(r.exit_code == 11);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("[not_found]") && Catch::Contains("no run 'run-nope'"));
  const std::string missing = (dir.path / "none.db").string();
  const Outcome no_store = run_cli(dir, {"show", "run-nope", "--store", missing});
  CHECK(no_store.exit_code == 11);
  CHECK_FALSE(fs::exists(missing));
  CHECK(run_cli(dir, {"show", "--store", dir.store()}).exit_code == 2);  // no id
}

TEST_CASE("a malformed run document or span is reported and hides no other run", "[cli][runs][show]") {
  TempDir dir;
  WireServer model, shop;
  const Store ids = fill_store(dir, model, shop);
  const agentkit::RunState answered = stored_state(dir.store(), ids.answered);
  const agentkit::RunState approved = stored_state(dir.store(), ids.approved);
  {
    agentkit::state::SqliteStore store{fs::path(dir.store())};
    const agentkit::Scope scope;
    store.put(agentkit::state::keys::run(scope, "run-broken"), "{not json");
    // Every stored span of the answered run: malformed.
    const std::string prefix = agentkit::state::keys::trace_spans(scope, answered.trace_id);
    REQUIRE_FALSE(store.list(prefix).empty());
    for (const auto& [key, entry] : store.list(prefix)) store.put(key, "[{\"span_id\": 7}]");
    // One more segment in the approved run's trace that is not spans at all.
    store.put(agentkit::state::keys::trace_spans(scope, approved.trace_id) + ids.approved + "#999999-garbage", "<html>");
  }
  const Outcome json = run_cli(dir, {"runs", "--json", "--store", dir.store()});
  CHECK(json.exit_code == 12);
  const auto lines = json_lines(json.out);
  CHECK(lines.size() == 6);
  const Json broken = line_of(lines, "run-broken");
  CHECK(broken["status"] == "unreadable");
  CHECK_THAT(broken["problem"].get<std::string>(), Catch::Contains("run-broken"));
  CHECK(line_of(lines, ids.answered)["started"].is_null());
  CHECK(line_of(lines, ids.answered).contains("problem"));
  CHECK(line_of(lines, ids.answered)["status"] == "answered");
  for (const auto& id : {ids.approved, ids.failed, ids.with_sub, ids.suspended}) {
    CHECK(line_of(lines, id)["started"].is_string());
    CHECK_FALSE(line_of(lines, id).contains("problem"));
  }
  CHECK_THAT(json.err, Catch::Contains("agentkit: run run-broken: ") && Catch::Contains("agentkit: run " + ids.answered));

  const Outcome table = run_cli(dir, {"runs", "--store", dir.store()});
  CHECK(table.exit_code == 12);
  CHECK(std::regex_search(table.out, std::regex("run-broken +\\? +unreadable")));
  for (const auto& id : {ids.answered, ids.approved, ids.failed, ids.with_sub, ids.suspended}) {
    CHECK(table.out.find(id) != std::string::npos);
  }

  const Outcome filtered = run_cli(dir, {"runs", "--status", "suspended", "--store", dir.store()});
  CHECK(filtered.exit_code == 12);
  CHECK_THAT(filtered.err, Catch::Contains("run-broken"));  // not a row under the filter, but not silent
  CHECK(filtered.out.find(ids.suspended) != std::string::npos);

  SECTION("show leaves the unreadable spans out, with a warning") {
    const Outcome show = run_cli(dir, {"show", ids.approved, "--store", dir.store()});
    CHECK(show.exit_code == 12);
    CHECK_THAT(show.err, Catch::Contains("warning: spans under ") && Catch::Contains("#999999-garbage"));
    CHECK_THAT(show.out, Catch::Contains("✓ refund(order_id: 'A-1')  ok") && Catch::Contains("Refunded order A-1."));
    const Outcome spanless = run_cli(dir, {"show", ids.answered, "--store", dir.store()});
    CHECK(spanless.exit_code == 12);
    CHECK_THAT(spanless.out, Catch::Contains("answer:\nHello."));
  }
  SECTION("show of the malformed run is a data_loss error, exit 12") {
    const Outcome show = run_cli(dir, {"show", "run-broken", "--store", dir.store()});
    CHECK(show.exit_code == 12);
    CHECK_THAT(show.err, Catch::Contains("[data_loss]") && Catch::Contains("run-broken"));
  }
}

TEST_CASE("agentkit show of a run stored without spans shows its steps from the history", "[cli][show]") {
  TempDir dir;
  WireServer model, shop;
  shop.set_handler([](const WireServer::Request&) { return json_reply({{"refund", "R-9"}}); });
  const auto file = support_yaml(dir, model, shop);
  const std::string id = approved_run(dir, model, file);
  {  // What an agentkit from before spans were stored leaves.
    agentkit::state::SqliteStore store{fs::path(dir.store())};
    const auto state = agentkit::state::load_run(store, agentkit::Scope{}, id);
    REQUIRE(state);
    for (const auto& [key, entry] : store.list(agentkit::state::keys::trace_spans(agentkit::Scope{}, state->trace_id))) {
      store.erase(key);
    }
  }
  const Outcome r = run_cli(dir, {"show", id, "--store", dir.store()});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("no spans stored for run " + id));
  CHECK(std::regex_search(r.out, std::regex("step +model .*tool_calls")));
  CHECK_THAT(r.out, Catch::Contains("✓ refund(order_id: 'A-1')  ok") && Catch::Contains("answer:\nRefunded order A-1."));
  const Json line = json_lines(run_cli(dir, {"runs", "--json", "--store", dir.store()}).out).at(0);
  CHECK(line["started"].is_null());
  const Outcome html = run_cli(dir, {"show", id, "--html", "-", "--store", dir.store()});
  CHECK(html.exit_code == 0);
  CHECK_THAT(html.out, Catch::Contains("No spans are stored for this run"));
}

TEST_CASE("a run whose process died mid-step is listed as running and shown from its last checkpoint",
          "[cli][runs][show][recovery]") {
  TempDir dir;
  WireServer model;
  model.enqueue(slow(calls({{"v1", "memory", {{"command", "view"}, {"path", "/memories"}}}})));
  WireServer::Response stall;
  stall.fault = WireServer::Fault::stall;
  model.enqueue(stall);
  const auto file = dir.write("atlas.yaml", agent_yaml(model, "tools:\n  - memory:\n"));
  const pid_t pid = spawn_cli(dir, {"run", file.string(), "Look around", "--json", "--store", dir.store()}, {}, "killed");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (model.requests().size() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(model.requests().size() == 2);  // the first step is checkpointed; the second model call hangs
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const std::string id = json_lines(read_file(dir.path / "killed.out")).at(0)["run_id"];

  const Outcome runs = run_cli(dir, {"runs", "--status", "running", "--json", "--store", dir.store()});
  CHECK(runs.exit_code == 0);
  const auto lines = json_lines(runs.out);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0]["run_id"] == id);
  CHECK(lines[0]["status"] == "running");
  CHECK(lines[0]["started"].is_null());  // its first invoke_agent span never ended
  CHECK(lines[0]["steps"] == 1);
  CHECK(run_cli(dir, {"runs", "--store", dir.store()}).out.find(" running ") != std::string::npos);

  // The steps it checkpointed, from the spans its document carries.
  const Outcome show = run_cli(dir, {"show", id, "--store", dir.store()});
  CHECK(show.exit_code == 0);
  CHECK_THAT(show.out, Catch::Contains("── part 1 (its span is not stored") && Catch::Contains("model  gpt-test") &&
                           Catch::Contains("✓ memory(command: 'view', path: '/memories')  ok") &&
                           Catch::Contains("running, or interrupted at ask_model (agentkit resume " + id));

  // Recovered, its second part hangs under the first.
  model.enqueue(slow(answer({"Nothing stored yet."})));
  REQUIRE(run_cli(dir, {"resume", id, "--store", dir.store()}).exit_code == 0);
  const Json doc = Json::parse(run_cli(dir, {"show", id, "--json", "--store", dir.store()}).out);
  REQUIRE(doc["parts"].size() == 2);
  CHECK(doc["parts"][0]["stored"] == false);
  CHECK(doc["parts"][0]["steps"].size() == 2);
  CHECK(doc["parts"][1]["stored"] == true);
  CHECK(doc["parts"][1]["resumed"] == true);
  CHECK(doc["parts"][1]["steps"].back()["type"] == "model");
  CHECK(doc["output"] == "Nothing stored yet.");
}

TEST_CASE("agentkit show --html writes one self-contained page with every string from the run escaped",
          "[cli][show][html]") {
  TempDir dir;
  WireServer model, shop;
  shop.set_handler([](const WireServer::Request&) { return json_reply({{"note", kInjection}}); });
  const auto file = dir.write(
      "atlas.yaml", agent_yaml(model, "tools:\n"
                                      "  - rest:\n"
                                      "      name: lookup\n"
                                      "      description: Look up an order's notes by its id and return them as JSON.\n"
                                      "      url: " + shop.base_url() + "/orders/{order_id}\n"
                                      "      side_effecting: false\n"
                                      "      params:\n"
                                      "        - {name: order_id, description: The order to look up}\n"));
  model.enqueue(slow(calls({{"c1", "lookup", {{"order_id", "A-1\"><script>alert(1)</script>"}}}})));
  model.enqueue(slow(answer({"Done: <script>alert('answer')</script>"})));
  const auto [id, r] = start_run(dir, file, "Check <b>order</b> A-1");
  REQUIRE(r.exit_code == 0);
  REQUIRE(shop.requests().size() == 1);

  const fs::path page = dir.path / "run.html";
  const Outcome html = run_cli(dir, {"show", id, "--html", page.string(), "--store", dir.store()});
  CHECK(html.exit_code == 0);
  CHECK(html.out.empty());
  const std::string text = read_file(page);
  REQUIRE_THAT(text, Catch::StartsWith("<!DOCTYPE html>"));
  // The tool's result, the model's answer, the task and the arguments are all there, as text.
  CHECK_THAT(text, Catch::Contains("&lt;/pre&gt;&lt;script&gt;document.body.setAttribute(&#39;data-pwned&#39;"));
  CHECK_THAT(text, Catch::Contains("Done: &lt;script&gt;alert(&#39;answer&#39;)&lt;/script&gt;"));
  CHECK_THAT(text, Catch::Contains("Check &lt;b&gt;order&lt;/b&gt; A-1"));
  // Nothing from the run became markup: one script (the page's own), no injected image or handler.
  const auto count = [&](const std::string& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  };
  CHECK(count("<script") == 1);
  CHECK(count("</script>") == 1);
  CHECK(count("<img") == 0);
  CHECK(count("onerror=\"") == 0);
  CHECK(count("<b>order") == 0);
  // Self-contained: nothing is fetched, and only the page's own script may run.
  CHECK(count("src=\"http") == 0);
  CHECK(count("href=") == 0);
  CHECK(count("<link") == 0);
  CHECK(count("url(") == 0);
  CHECK(std::regex_search(text, std::regex("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                                           "img-src data:; style-src 'unsafe-inline'; script-src 'sha256-[A-Za-z0-9+/]{43}='")));
  // Its timeline has a row per call, its tables the tokens.
  CHECK(count("class=\"row step\" data-kind=\"model\"") == 2);
  CHECK(count("class=\"row step\" data-kind=\"tool\"") == 1);
  CHECK_THAT(text, Catch::Contains("data-tool=\"lookup\""));
  CHECK_THAT(text, Catch::Contains("<tr class=\"total\"><td></td><td>total</td><td></td><td></td><td></td><td class=\"num\">80</td>"));

  const Outcome to_stdout = run_cli(dir, {"show", id, "--html", "-", "--store", dir.store()});
  CHECK(to_stdout.out == text);
  CHECK(run_cli(dir, {"show", id, "--html", page.string(), "--json", "--store", dir.store()}).exit_code == 2);
}

namespace {

// A model that takes `delay` per call, so the timeline has widths.
class SlowModel final : public agentkit::Model {
 public:
  SlowModel(std::shared_ptr<agentkit::Model> inner, std::chrono::milliseconds delay)
      : inner_(std::move(inner)), delay_(delay) {}
  agentkit::ModelResponse complete(const agentkit::ModelRequest& request, agentkit::RunContext& ctx) override {
    std::this_thread::sleep_for(delay_);
    return inner_->complete(request, ctx);
  }

 private:
  std::shared_ptr<agentkit::Model> inner_;
  std::chrono::milliseconds delay_;
};

// The sample run the HTML tests and the README's picture use, made
// in-process into the SQLite store at `path`: a support agent looks an
// order up (a hostile note in the result), takes a camera frame (an image),
// asks a researcher sub-agent (whose search fails once), and refunds after a
// human approves; priced, so every model call has a cost. Its spans are also
// recorded by `recorder`.
std::string sample_run(const std::string& path, const std::shared_ptr<agentkit::testing::SpanRecorder>& recorder) {
  using namespace agentkit;
  using testing::Turn;
  auto llm = testing::FakeLLM::script({
      Turn{.tool_calls = {{"call_lookup", "lookup_order", {{"order_id", "A-1"}}}, {"call_photo", "camera_frame", Json::object()}},
           .usage = {812, 46, 0}},
      Turn{.tool_calls = {{"call_policy", "research", {{"task", "What does the carrier cover for parcels crushed in transit?"}}}},
           .usage = {1290, 38, 0}},
      Turn{.tool_calls = {{"call_search", "search_policies", {{"query", "carrier damage policy"}}}}, .usage = {301, 22, 0}},
      Turn{.content = "Parcels crushed in transit are covered in full when reported within 14 days.", .usage = {388, 31, 0}},
      Turn{.tool_calls = {{"call_refund", "refund", {{"order_id", "A-1"}, {"amount_usd", 42.5}}}}, .usage = {1502, 41, 0}},
      Turn{.content = "I refunded $42.50 for order A-1: the photo shows a crushed parcel and the carrier covers it.",
           .usage = {1630, 52, 0}},
  });
  auto model = std::make_shared<SlowModel>(llm, std::chrono::milliseconds(40));
  auto lookup = tool("lookup_order")
                    .doc("Look up a customer order by its id and return its status and notes.")
                    .side_effecting(false)
                    .params("order_id")
                    .fn([](const std::string& id) {
                      std::this_thread::sleep_for(std::chrono::milliseconds(25));
                      return Json{{"order", id}, {"status", "delivered"}, {"note", kInjection}}.dump();
                    });
  auto camera = tool("camera_frame")
                    .doc("Grab the latest photo of the returned parcel from the depot camera.")
                    .side_effecting(false)
                    .fn([](RunContext&) {
                      std::this_thread::sleep_for(std::chrono::milliseconds(35));
                      return ToolOutput{"frame 7 of the depot camera", {ImagePart{"image/png", kParcelPng, ""}}};
                    });
  auto search = tool("search_policies")
                    .doc("Search the carrier's published policies and return the matching passages.")
                    .side_effecting(false)
                    .params("query")
                    .fn([](const std::string&) -> std::string {
                      std::this_thread::sleep_for(std::chrono::milliseconds(20));
                      throw std::runtime_error("policy index unavailable (503)");
                    });
  auto refund = tool("refund")
                    .doc("Refund part or all of a customer order and return the refund record.")
                    .side_effecting(true)
                    .requires_approval()
                    .params("order_id", "amount_usd")
                    .fn([](const std::string& id, double amount) {
                      std::this_thread::sleep_for(std::chrono::milliseconds(30));
                      return "refund R-" + id + " of " + std::to_string(amount) + " USD issued";
                    });
  const AgentOptions priced{.pricing = Pricing{.input_usd_per_mtok = 2.5, .output_usd_per_mtok = 10}};
  auto researcher = std::make_shared<const Agent>(
      "researcher", "gpt-4.1-nano", "You research carrier policies.",
      std::make_shared<cognition::ReActCognition>(std::vector<ToolPtr>{search}), priced);
  const Agent support("support", "gpt-4o-mini", "You handle refunds for damaged orders.",
                      std::make_shared<cognition::ReActCognition>(std::vector<ToolPtr>{
                          lookup, camera, refund,
                          as_tool(researcher, {.name = "research",
                                               .description = "Research a question about carrier policies and answer briefly.",
                                               .side_effecting = false})}),
                      priced);
  auto store = std::make_shared<state::SqliteStore>(fs::path(path));
  RunContext ctx = testing::make_test_ctx({.llm = model, .store = store});
  ctx.tracer = recorder;
  const std::string id = "run-5a3c0e9d7b214f68";
  const RunResult first = support.run("Order A-1 arrived crushed. Check the photo and refund it if the carrier covers it.",
                                      ctx, {.run_id = id});
  REQUIRE(first.stop_reason == StopReason::suspended);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));  // a person reads the request
  const RunResult second = support.resume(id, {{"call_refund", Decision::approve()}}, ctx);
  REQUIRE(second.stop_reason == StopReason::answered);
  return id;
}

std::optional<std::string> chromium() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (::access(path, X_OK) == 0) return std::string(path);
  }
  return std::nullopt;
}

// Headless Chromium as root in a container: no sandbox, no GPU, nothing
// fetched in the background, a fresh profile.
std::vector<std::string> chromium_flags(const TempDir& dir) {
  static int profiles = 0;
  return {"--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-quic",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
          "--hide-scrollbars",
          "--enable-logging=stderr",
          "--v=0",
          "--user-data-dir=" + (dir.path / ("profile" + std::to_string(profiles++))).string()};
}

}  // namespace

TEST_CASE("agentkit show --html shows a tool's image inline as a data: URI from the run's parts", "[cli][show][html]") {
  TempDir dir;
  const std::string id = sample_run(dir.store(), std::make_shared<agentkit::testing::SpanRecorder>());
  const Outcome html = run_cli(dir, {"show", id, "--html", "-", "--store", dir.store()});
  CHECK(html.exit_code == 0);
  CHECK_THAT(html.out, Catch::Contains("<img class=\"part\" alt=\"image image/png, 230 bytes\" src=\"data:image/png;base64," +
                                       agentkit::base64_encode(kParcelPng) + "\">"));
  // The approval: requested in the first part, approved in the second.
  CHECK(std::regex_search(html.out, std::regex("<tr data-call=\"call_refund\"><td>support</td><td><code>call_refund</code> "
                                               "refund\\([^<]*</td><td>\\d{4}-\\d\\d-\\d\\d [0-9:]{8} UTC</td><td><b>approved</b>")));
  CHECK_THAT(html.out, Catch::Contains("policy index unavailable (503)"));
  CHECK_THAT(html.out, Catch::Contains("sub-run <code>" + id + "/2/call_policy</code>"));
}

TEST_CASE("the HTML page runs in headless Chromium without errors, injects nothing and shows every step",
          "[cli][show][html][browser]") {
  const auto browser = chromium();
  if (!browser) {
    WARN("SKIPPED: chromium is not installed (/usr/bin/chromium; `make deps` installs it): the page is not opened in a browser");
    return;
  }
  TempDir dir;
  auto recorder = std::make_shared<agentkit::testing::SpanRecorder>();
  const std::string id = sample_run(dir.store(), recorder);
  const fs::path page = dir.path / "run.html";
  REQUIRE(run_cli(dir, {"show", id, "--html", page.string(), "--store", dir.store()}).exit_code == 0);
  const std::string url = "file://" + page.string();

  // The DOM once the page's script ran: its marker set, no error caught,
  // nothing from the run executed, no console message at all.
  auto args = chromium_flags(dir);
  args.insert(args.end(), {"--dump-dom", url});
  const Outcome dom = run_program(dir, *browser, args);
  REQUIRE(dom.exit_code == 0);
  INFO("DOM:\n" << dom.out.substr(0, 4000));
  CHECK(std::regex_search(dom.out, std::regex("<span id=\"ak-status\" data-state=\"ok\" data-steps=\"12\">rendered: 12 steps</span>")));
  CHECK(std::regex_search(dom.out, std::regex("<pre id=\"ak-errors\" hidden=\"\"></pre>")));
  CHECK_FALSE(std::regex_search(dom.out, std::regex("<body[^>]*data-pwned")));
  CHECK(dom.out.find("<img src=\"x\"") == std::string::npos);
  CHECK(dom.err.find(":CONSOLE") == std::string::npos);  // no console message, no CSP violation, no uncaught error

  // Every model and tool call the run made (as its spans recorded them) has its row.
  std::size_t models = 0, tools = 0;
  for (const auto& span : recorder->spans()) {
    const bool model = span.name.rfind("chat ", 0) == 0, tool = span.name.rfind("execute_tool ", 0) == 0;
    if (!model && !tool) continue;
    (model ? models : tools) += 1;
    INFO(span.name << " " << span.span_id);
    CHECK(std::regex_search(dom.out, std::regex("<div class=\"row step\" data-kind=\"" + std::string(model ? "model" : "tool") +
                                                "\"[^>]* data-span=\"" + span.span_id.str() + "\"")));
  }
  CHECK(models == 6);  // four of the support agent, two of the researcher
  CHECK(tools == 6);   // lookup, photo, research, search, refund asked, refund run
  for (const char* name : {"lookup_order", "camera_frame", "research", "search_policies", "refund"}) {
    CHECK(dom.out.find(std::string("data-tool=\"") + name + "\"") != std::string::npos);
  }
  CHECK(std::regex_search(dom.out, std::regex("data-kind=\"tool\" data-outcome=\"failed\"[^>]*data-tool=\"search_policies\"")));
  CHECK(std::regex_search(dom.out, std::regex("data-kind=\"tool\" data-outcome=\"awaiting\"[^>]*data-tool=\"refund\"")));

  // A picture of it.
  const fs::path png = dir.path / "run.png";
  args = chromium_flags(dir);
  args.insert(args.end(), {"--screenshot=" + png.string(), "--window-size=1280,900", url});
  const Outcome shot = run_program(dir, *browser, args);
  CHECK(shot.exit_code == 0);
  const std::string bytes = read_file(png);
  REQUIRE(bytes.size() > 10000);
  CHECK(bytes.rfind("\x89PNG\r\n\x1a\n", 0) == 0);
  if (const char* keep = std::getenv("AGENTKIT_RUN_VIEW_PNG"); keep && *keep) {
    fs::copy_file(png, keep, fs::copy_options::overwrite_existing);
    WARN("screenshot saved to " << keep);
  }
}

TEST_CASE("example 03 keeps its store when asked, and agentkit runs / show read the refund it approved in a second process",
          "[cli][show][example]") {
#ifndef AGENTKIT_EXAMPLE_03
  WARN("example 03 is not built (AGENTKIT_BUILD_EXAMPLES=OFF): skipped");
#else
  TempDir dir;
  const Outcome example = run_program(dir, AGENTKIT_EXAMPLE_03, {"--store", dir.store()});
  REQUIRE(example.exit_code == 0);
  std::smatch m;
  REQUIRE(std::regex_search(example.out, m, std::regex(R"(\] run (\S+): suspended)")));
  const std::string id = m[1];
  CHECK_THAT(example.out, Catch::Contains("agentkit show " + id + " --store " + dir.store()));

  const Outcome runs = run_cli(dir, {"runs", "--json", "--store", dir.store()});
  CHECK(runs.exit_code == 0);
  const auto lines = json_lines(runs.out);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0]["run_id"] == id);
  CHECK(lines[0]["agent"] == "support");
  CHECK(lines[0]["status"] == "answered");
  CHECK(lines[0]["pending"] == 0);

  const Outcome show = run_cli(dir, {"show", id, "--json", "--store", dir.store()});
  CHECK(show.exit_code == 0);
  const Json doc = Json::parse(show.out);
  CHECK(doc["from_spans"] == true);
  REQUIRE(doc["parts"].size() == 2);  // suspended in the first process, resumed in the second
  CHECK(doc["parts"][0]["stop_reason"] == "suspended");
  CHECK(doc["parts"][1]["stop_reason"] == "answered");
  Json refund;
  for (const Json& step : doc["parts"][1]["steps"]) {
    if (step.value("name", "") == "refund") refund = step;
  }
  INFO(doc.dump(2));
  REQUIRE(refund.is_object());
  CHECK(refund["outcome"] == "ok");
  CHECK(refund["approvals"][0]["decision"] == "approved");
  CHECK_THAT(doc["output"].get<std::string>(), Catch::Contains("refunded"));
#endif
}

#endif  // AGENTKIT_CLI

namespace {

// How one run of the comparison test's support agent goes: what the order
// lookup says, what the researcher answers, whether the refund is approved,
// the answer, and whether the model looks up a second order as well. The
// model's call ids differ between runs (they are `prefix` + n).
struct Variant {
  std::string prefix, status, research, answer;
  bool approve = true, second_lookup = false;
};

// Runs the support agent (lookup, a researcher sub-agent, a refund behind
// approval) as `id` into the SQLite store at `path`, spans recorded.
void support_run(const std::string& path, const std::string& id, const Variant& v) {
  using namespace agentkit;
  using testing::Turn;
  std::vector<ToolCall> first = {{v.prefix + "1", "lookup_order", {{"order_id", "A-1"}}},
                                 {v.prefix + "2", "research", {{"task", "Does the carrier cover crushed parcels?"}}}};
  if (v.second_lookup) first.push_back({v.prefix + "4", "lookup_order", {{"order_id", "A-2"}}});
  auto llm = testing::FakeLLM::script({
      Turn{.tool_calls = first},
      Turn{.content = v.research},  // the researcher's only turn
      Turn{.tool_calls = {{v.prefix + "3", "refund", {{"order_id", "A-1"}, {"amount_usd", 42.5}}}}},
      Turn{.content = v.answer},
  });
  auto lookup = tool("lookup_order")
                    .doc("Look up a customer order by its id and return its status.")
                    .side_effecting(false)
                    .params("order_id")
                    .fn([status = v.status](const std::string& order) { return order + " is " + status; });
  auto refund = tool("refund")
                    .doc("Refund part or all of a customer order and return the refund record.")
                    .side_effecting(true)
                    .requires_approval()
                    .params("order_id", "amount_usd")
                    .fn([](const std::string& order, double amount) {
                      return "refund of " + std::to_string(amount) + " USD for " + order + " issued";
                    });
  auto researcher = std::make_shared<const Agent>("researcher", "gpt-4.1-nano", "You research carrier policies.",
                                                  std::make_shared<cognition::ReActCognition>(std::vector<ToolPtr>{}));
  const Agent support("support", "gpt-4o-mini", "You handle refunds for damaged orders.",
                      std::make_shared<cognition::ReActCognition>(std::vector<ToolPtr>{
                          lookup, refund,
                          as_tool(researcher, {.name = "research",
                                               .description = "Research a question about carrier policies and answer briefly.",
                                               .side_effecting = false})}));
  auto store = std::make_shared<state::SqliteStore>(fs::path(path));
  RunContext ctx = testing::make_test_ctx({.llm = llm, .store = store});
  ctx.tracer = std::make_shared<testing::SpanRecorder>();
  REQUIRE(support.run("Order A-1 arrived crushed: refund it if the carrier covers it.", ctx, {.run_id = id}).stop_reason ==
          StopReason::suspended);
  const Decision decision = v.approve ? Decision::approve() : Decision::reject("not covered");
  REQUIRE(support.resume(id, {{v.prefix + "3", decision}}, ctx).stop_reason == StopReason::answered);
}

}  // namespace

TEST_CASE("agentkit show --against compares two stored runs step by step: timeline, JSON and page",
          "[cli][show][against]") {
  TempDir dir;
  const Variant a{.prefix = "call_", .status = "delivered", .research = "Crushed parcels are covered.",
                  .answer = "I refunded $42.50 for A-1."};
  Variant same = a;
  same.prefix = "toolu_";  // only the ids differ
  Variant b{.prefix = "fc_", .status = "in transit <b>late</b>", .research = "Crushed parcels are not covered.",
            .answer = "I could not refund A-1.", .approve = false, .second_lookup = true};
  support_run(dir.store(), "run-a", a);
  support_run(dir.store(), "run-same", same);
  support_run(dir.store(), "run-b", b);

  SECTION("the same behaviour with other call ids: no differences") {
    const Outcome r = run_cli(dir, {"show", "run-a", "--against", "run-same", "--store", dir.store()});
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::StartsWith("run run-a  agent support  answered\n") &&
                          Catch::EndsWith("\ncompared with run run-same: no differences\n"));
    const Json doc = Json::parse(run_cli(dir, {"show", "run-a", "--against", "run-same", "--json", "--store", dir.store()}).out);
    CHECK(doc["against"]["run_id"] == "run-same");
    CHECK(doc["against"]["differences"] == Json::array());
    const Outcome page = run_cli(dir, {"show", "run-a", "--against", "run-same", "--html", "-", "--store", dir.store()});
    CHECK_THAT(page.out, Catch::Contains("<p id=\"ak-against\">No differences"));
  }

  SECTION("each step that differs once, in order, with its first difference; sub-run steps under their call") {
    const Json doc = Json::parse(run_cli(dir, {"show", "run-a", "--against", "run-b", "--json", "--store", dir.store()}).out);
    REQUIRE(doc.contains("against"));
    const Json& d = doc["against"]["differences"];
    INFO(d.dump(1));
    std::vector<std::pair<std::string, std::string>> seen;
    for (const Json& x : d) seen.emplace_back(x["where"], x["what"]);
    CHECK(seen == std::vector<std::pair<std::string, std::string>>{
                      {"run", "answer"},
                      {"model call 1", "response"},
                      {"tool call 1.1", "result"},
                      {"tool call 1.2", "result"},
                      {"tool call 1.2 > run", "answer"},
                      {"tool call 1.2 > model call 1", "response"},
                      {"tool call 2.1", "outcome"},
                      {"model call 3", "response"},
                      {"tool call 1.3", "only in b"},
                  });
    REQUIRE(d.size() == 9);
    CHECK(d[0]["a"] == "'I refunded $42.50 for A-1.'");
    CHECK(d[0]["b"] == "'I could not refund A-1.'");
    CHECK(d[1]["path"] == "/tool_calls/2");
    CHECK(d[1]["a"] == "(absent)");
    CHECK(d[2]["path"] == "/content/0/text");
    CHECK(d[2]["b"] == "'A-1 is in transit <b>late</b>'");
    CHECK(d[6]["a"] == "'ok'");
    CHECK(d[6]["b"] == "'denied'");
    CHECK(d[8]["path"] == "");

    // The timeline, then the same differences as lines.
    const Outcome r = run_cli(dir, {"show", "run-a", "--against", "run-b", "--store", dir.store()});
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("\ncompared with run run-b: run answer /: a 'I refunded $42.50 for A-1.', "
                                      "b 'I could not refund A-1.'\nmodel call 1 response /tool_calls/2: a (absent), b ") &&
                          Catch::Contains("\ntool call 2.1 outcome /: a 'ok', b 'denied'\n") &&
                          Catch::EndsWith("\ntool call 1.3 only in b\n"));

    // The page: a section before the timeline, a row per difference, every string escaped.
    const Outcome page = run_cli(dir, {"show", "run-a", "--against", "run-b", "--html", "-", "--store", dir.store()});
    CHECK(page.exit_code == 0);
    const std::string& html = page.out;
    const auto section = html.find("<h2>Compared with run <span class=\"mono\">run-b</span></h2>");
    REQUIRE(section != std::string::npos);
    CHECK(section < html.find("<h2>Timeline</h2>"));
    const auto table = html.find("<table id=\"ak-against\">");
    REQUIRE(table != std::string::npos);
    const std::string rows = html.substr(table, html.find("</table>", table) - table);
    std::size_t count = 0;
    for (auto at = rows.find("<tr><td class=\"mono\">"); at != std::string::npos; at = rows.find("<tr><td class=\"mono\">", at + 1)) ++count;
    CHECK(count == 9);
    CHECK_THAT(rows, Catch::Contains("<td class=\"mono\">tool call 1.2 &gt; model call 1</td><td>response</td>"));
    CHECK_THAT(rows, Catch::Contains("in transit &lt;b&gt;late&lt;/b&gt;"));
    CHECK(rows.find("<b>late</b>") == std::string::npos);
    CHECK_THAT(html, Catch::Contains("9 steps differ (a: this run, b: run run-b)"));
  }

  SECTION("an unknown run to compare with exits 11 and names it") {
    const Outcome r = run_cli(dir, {"show", "run-a", "--against", "run-nope", "--store", dir.store()});
    CHECK(r.exit_code == 11);
    CHECK_THAT(r.err, Catch::Contains("no run 'run-nope'"));
    CHECK(r.out.empty());
  }
}
