// The `agentkit` CLI, run as a separate process against YAML definitions the
// tests write. The model is a loopback WireServer speaking OpenAI Chat
// Completions; REST tools call a second loopback server.
#include <catch2/catch.hpp>

#ifdef AGENTKIT_CLI

#include <poll.h>

#include <optional>

#include "../helpers/paths.h"
#include "../helpers/wire_replies.h"
#include "cli_support.h"

using agentkit_test::json_reply;
using agentkit_test::read_file;
using namespace agentkit_test::cli;

namespace {

// Runs `agentkit args...` on a pseudo-terminal (stdin, stdout and stderr
// all on it), answering each prompt of `dialogue` in turn when its text
// appears. `out` is the whole transcript; `err` stays empty.
Outcome run_on_terminal(const TempDir& dir, std::vector<std::string> args,
                        const std::vector<std::pair<std::string, std::string>>& dialogue) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(master >= 0);
  REQUIRE(::grantpt(master) == 0);
  REQUIRE(::unlockpt(master) == 0);
  const std::string terminal = ::ptsname(master);
  args.insert(args.begin(), AGENTKIT_CLI);
  auto env = child_environment(dir, {"TERM=xterm"});
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, master);
  posix_spawn_file_actions_addopen(&actions, 0, terminal.c_str(), O_RDWR, 0);
  posix_spawn_file_actions_adddup2(&actions, 0, 1);
  posix_spawn_file_actions_adddup2(&actions, 0, 2);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, AGENTKIT_CLI, &actions, nullptr, c_strings(args).data(), c_strings(env).data());
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);

  Outcome outcome;
  std::size_t next = 0, seen = 0;  // the next prompt to answer; where to look for it
  const auto deadline = std::chrono::steady_clock::now() + kProcessDeadline;
  int status = 0;
  bool exited = false;
  while (true) {
    pollfd fd{master, POLLIN, 0};
    if (::poll(&fd, 1, 20) > 0) {
      char buffer[4096];
      const ssize_t n = ::read(master, buffer, sizeof buffer);
      if (n > 0) outcome.out.append(buffer, static_cast<std::size_t>(n));
      if (n <= 0 && exited) break;  // EIO once the child's side is closed
    } else if (exited) {
      break;
    }
    if (next < dialogue.size()) {
      if (const auto at = outcome.out.find(dialogue[next].first, seen); at != std::string::npos) {
        const std::string line = dialogue[next].second + "\n";
        REQUIRE(::write(master, line.data(), line.size()) == static_cast<ssize_t>(line.size()));
        seen = at + dialogue[next].first.size();
        ++next;
      }
    }
    if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) exited = true;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ::close(master);
      FAIL("agentkit did not finish within the deadline; transcript:\n" << outcome.out);
    }
  }
  ::close(master);
  CHECK(next == dialogue.size());
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

// ------------------------------------------------------------ the model

// Waits, up to a minute, until `model` has received a request.
void await_first_request(const WireServer& model) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (model.requests().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// One turn calling `name` with `arguments` exactly as the model wrote them.
WireServer::Response raw_call(const std::string& id, const std::string& name, const std::string& arguments) {
  return sse({{{"tool_calls",
                {{{"index", 0}, {"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}}}}}},
             "tool_calls");
}

// The lines of `lines` whose type is `type`.
std::vector<Json> of_type(const std::vector<Json>& lines, const std::string& type) {
  std::vector<Json> out;
  for (const Json& line : lines) {
    if (line.value("type", "") == type) out.push_back(line);
  }
  return out;
}

}  // namespace

TEST_CASE("agentkit run answers and streams the model's text to stdout", "[cli]") {
  TempDir dir;
  WireServer model;
  model.enqueue(answer({"Lisbon has about ", "545,000 residents."}));
  const auto file = dir.write("atlas.yaml", agent_yaml(model));

  const Outcome r = run_cli(dir, {"run", file.string(), "How big is Lisbon?", "--store", dir.store()});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "Lisbon has about 545,000 residents.\n");
  const auto requests = model.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].header("authorization") == "Bearer " + kApiKey);
  const Json body = Json::parse(requests[0].body);
  CHECK(body["model"] == "gpt-test");
  CHECK(body["messages"][0]["content"] == "You answer questions about cities.");
  CHECK(body["messages"][1]["content"] == "How big is Lisbon?");
  CHECK(r.out.find(kApiKey) == std::string::npos);
  CHECK(r.err.find(kApiKey) == std::string::npos);
}

TEST_CASE("text from an Anthropic stream arrives as text_delta events", "[cli]") {
  TempDir dir;
  WireServer model;
  WireServer::Response r;
  r.headers = {{"content-type", "text/event-stream"}};
  auto event = [](const std::string& type, const Json& data) {
    return "event: " + type + "\ndata: " + data.dump() + "\n\n";
  };
  r.chunks = {
      event("message_start", {{"type", "message_start"}, {"message", {{"usage", {{"input_tokens", 9}}}}}}),
      event("content_block_start",
            {{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}}),
      event("content_block_delta",
            {{"type", "content_block_delta"}, {"index", 0}, {"delta", {{"type", "text_delta"}, {"text", "Bom "}}}}),
      event("content_block_delta",
            {{"type", "content_block_delta"}, {"index", 0}, {"delta", {{"type", "text_delta"}, {"text", "dia."}}}}),
      event("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}}),
      event("message_delta",
            {{"type", "message_delta"}, {"delta", {{"stop_reason", "end_turn"}}}, {"usage", {{"output_tokens", 3}}}}),
      event("message_stop", {{"type", "message_stop"}})};
  model.enqueue(r);
  const auto file = dir.write("a.yaml", "name: atlas\nmodel: anthropic/claude-test\nbase_url: " + model.base_url() +
                                            "\napi_key_env: AGENTKIT_TEST_KEY\nprompt: Greet.\n");
  const Outcome out = run_cli(dir, {"run", file.string(), "Greet me", "--json", "--store", dir.store()});
  CHECK(out.exit_code == 0);
  std::vector<std::string> deltas;
  for (const Json& line : json_lines(out.out)) {
    if (line["type"] == "text_delta") deltas.push_back(line["text"]);
  }
  CHECK(deltas == std::vector<std::string>{"Bom ", "dia."});
  CHECK(model.requests().at(0).header("x-api-key") == kApiKey);
}

TEST_CASE("agentkit run routes ollama/<model> to Ollama's native chat API at OLLAMA_HOST, with no key", "[cli][ollama]") {
  TempDir dir;
  WireServer model;
  WireServer::Response r;
  r.headers = {{"content-type", "application/x-ndjson"}};
  r.chunks = {R"({"message":{"role":"assistant","content":"Ola, "},"done":false})" "\n",
              R"({"message":{"role":"assistant","content":"Lisboa."},"done":false})" "\n",
              R"({"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":12,"eval_count":4})" "\n"};
  model.enqueue(r);
  const auto file = dir.write("a.yaml", "name: atlas\nmodel: ollama/llama3.2\nprompt: Greet.\n");
  // OLLAMA_HOST as Ollama's own client takes it: host:port, no scheme.
  const std::string host = model.base_url().substr(std::string("http://").size());
  const Outcome out = run_cli(dir, {"run", file.string(), "Greet me", "--store", dir.store()}, {"OLLAMA_HOST=" + host});
  CHECK(out.exit_code == 0);
  CHECK(out.out == "Ola, Lisboa.\n");
  const auto requests = model.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].path == "/api/chat");
  CHECK(requests[0].header("authorization").empty());
  const Json body = Json::parse(requests[0].body);
  CHECK(body["model"] == "llama3.2");
  CHECK(body["messages"][1] == Json({{"role", "user"}, {"content", "Greet me"}}));
}

TEST_CASE("agentkit run routes openai-responses/<model> to the Responses API with OpenAI's key and base URL", "[cli][responses]") {
  TempDir dir;
  WireServer model;
  WireServer::Response r;
  r.headers = {{"content-type", "text/event-stream"}};
  const auto event = [](const std::string& type, Json data) {
    data["type"] = type;
    return "event: " + type + "\ndata: " + data.dump() + "\n\n";
  };
  r.chunks = {event("response.output_text.delta", {{"delta", "Ola, "}}),
              event("response.output_text.delta", {{"delta", "Lisboa."}}),
              event("response.completed",
                    {{"response", {{"status", "completed"},
                                   {"output", {{{"type", "message"}, {"content", {{{"type", "output_text"}, {"text", "Ola, Lisboa."}}}}}}},
                                   {"usage", {{"input_tokens", 12}, {"output_tokens", 4}}}}}})};
  model.enqueue(r);
  const auto file = dir.write("a.yaml", "name: atlas\nmodel: openai-responses/gpt-5\nprompt: Greet.\n");
  // Without a key it says which variable: the same one as openai/.
  const Outcome missing = run_cli(dir, {"run", file.string(), "Greet me", "--store", dir.store()});
  CHECK(missing.exit_code != 0);
  CHECK_THAT(missing.err, Catch::Contains("OPENAI_API_KEY"));
  const Outcome out = run_cli(dir, {"run", file.string(), "Greet me", "--store", dir.store()},
                              {"OPENAI_API_KEY=" + kApiKey, "OPENAI_BASE_URL=" + model.base_url() + "/v1"});
  CHECK(out.exit_code == 0);
  CHECK(out.out == "Ola, Lisboa.\n");
  const auto requests = model.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].path == "/v1/responses");
  CHECK(requests[0].header("authorization") == "Bearer " + kApiKey);
  const Json body = Json::parse(requests[0].body);
  CHECK(body["model"] == "gpt-5");
  CHECK(body["instructions"] == "Greet.");
  CHECK(body["input"][0] == Json({{"role", "user"}, {"content", "Greet me"}}));
  CHECK(body["store"] == false);
}

TEST_CASE("agentkit run routes gemini/<model> to Gemini with GEMINI_API_KEY, else GOOGLE_API_KEY", "[cli][gemini]") {
  TempDir dir;
  WireServer model;
  const auto reply = [] {
    WireServer::Response r;
    r.headers = {{"content-type", "text/event-stream"}};
    const Json chunk = {{"candidates", {{{"content", {{"role", "model"}, {"parts", {{{"text", "Ola, Lisboa."}}}}}},
                                         {"finishReason", "STOP"},
                                         {"index", 0}}}},
                        {"usageMetadata", {{"promptTokenCount", 12}, {"candidatesTokenCount", 4}}}};
    r.chunks = {"data: " + chunk.dump() + "\r\n\r\n"};
    return r;
  };
  model.enqueue(reply());
  model.enqueue(reply());
  const auto file = dir.write("a.yaml", "name: atlas\nmodel: gemini/gemini-2.5-flash\nprompt: Greet.\n");
  const Outcome missing = run_cli(dir, {"run", file.string(), "Greet me", "--store", dir.store()});
  CHECK(missing.exit_code != 0);
  CHECK_THAT(missing.err, Catch::Contains("GEMINI_API_KEY"));
  const std::string base = "GEMINI_BASE_URL=" + model.base_url() + "/v1beta";
  const Outcome out = run_cli(dir, {"run", file.string(), "Greet me", "--store", dir.store()},
                              {"GEMINI_API_KEY=" + kApiKey, base});
  CHECK(out.exit_code == 0);
  CHECK(out.out == "Ola, Lisboa.\n");
  CHECK(out.err.find(kApiKey) == std::string::npos);
  // GOOGLE_API_KEY when GEMINI_API_KEY is not set, as Google's SDKs read it.
  const Outcome google = run_cli(dir, {"run", file.string(), "Greet me", "--store", dir.store()},
                                 {"GOOGLE_API_KEY=google-" + kApiKey, base});
  CHECK(google.exit_code == 0);
  const auto requests = model.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
  CHECK(requests[0].header("x-goog-api-key") == kApiKey);
  CHECK(requests[0].header("authorization").empty());
  CHECK(requests[1].header("x-goog-api-key") == "google-" + kApiKey);
  const Json body = Json::parse(requests[0].body);
  CHECK(body["systemInstruction"]["parts"][0]["text"] == "Greet.");
  CHECK(body["contents"][0] == Json({{"role", "user"}, {"parts", {{{"text", "Greet me"}}}}}));
}

// One Anthropic turn: thinking, then the answer text.
WireServer::Response thinking_then_text() {
  WireServer::Response r;
  r.headers = {{"content-type", "text/event-stream"}};
  auto event = [](const std::string& type, const Json& data) {
    return "event: " + type + "\ndata: " + data.dump() + "\n\n";
  };
  auto delta = [&](int index, const Json& d) {
    return event("content_block_delta", {{"type", "content_block_delta"}, {"index", index}, {"delta", d}});
  };
  r.chunks = {
      event("message_start", {{"type", "message_start"}, {"message", {{"usage", {{"input_tokens", 9}}}}}}),
      event("content_block_start", {{"type", "content_block_start"}, {"index", 0},
                                    {"content_block", {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}}}),
      delta(0, {{"type", "thinking_delta"}, {"thinking", "A greeting, "}}),
      delta(0, {{"type", "thinking_delta"}, {"thinking", "in Portuguese."}}),
      delta(0, {{"type", "signature_delta"}, {"signature", "c2lnbmF0dXJl"}}),
      event("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}}),
      event("content_block_start",
            {{"type", "content_block_start"}, {"index", 1}, {"content_block", {{"type", "text"}, {"text", ""}}}}),
      delta(1, {{"type", "text_delta"}, {"text", "Bom dia."}}),
      event("content_block_stop", {{"type", "content_block_stop"}, {"index", 1}}),
      event("message_delta",
            {{"type", "message_delta"}, {"delta", {{"stop_reason", "end_turn"}}}, {"usage", {{"output_tokens", 3}}}}),
      event("message_stop", {{"type", "message_stop"}})};
  return r;
}

TEST_CASE("agentkit run --json prints reasoning_delta lines, and the human view shows the text, not the reasoning", "[cli][deltas]") {
  TempDir dir;
  WireServer model;
  model.enqueue(thinking_then_text());
  model.enqueue(thinking_then_text());
  const auto file = dir.write("a.yaml", "name: atlas\nmodel: anthropic/claude-test\nbase_url: " + model.base_url() +
                                            "\napi_key_env: AGENTKIT_TEST_KEY\nprompt: Greet.\n");
  const Outcome json = run_cli(dir, {"run", file.string(), "Greet me", "--json", "--store", dir.store()});
  CHECK(json.exit_code == 0);
  std::vector<std::string> reasoning, types;
  for (const Json& line : json_lines(json.out)) {
    types.push_back(line["type"]);
    if (line["type"] == "reasoning_delta") reasoning.push_back(line["text"]);
  }
  CHECK(reasoning == std::vector<std::string>{"A greeting, ", "in Portuguese."});
  CHECK(json.out.find("c2lnbmF0dXJl") == std::string::npos);  // the signature never streams
  const auto first_text = std::find(types.begin(), types.end(), "text_delta");
  CHECK(std::find(types.begin(), first_text, "reasoning_delta") != first_text);  // stream order

  const Outcome human = run_cli(dir, {"run", file.string(), "Greet me", "--store", dir.store()});
  CHECK(human.exit_code == 0);
  CHECK(human.out.find("Bom dia.") != std::string::npos);
  CHECK(human.out.find("Portuguese") == std::string::npos);
  CHECK(human.err.find("Portuguese") == std::string::npos);
}

TEST_CASE("agentkit run --json prints tool_call_delta lines that join to the call's arguments", "[cli][deltas][memory]") {
  TempDir dir;
  WireServer model;
  const Json arguments = {{"command", "create"}, {"path", "/memories/lisbon.md"}, {"file_text", "Population: 545,000\n"}};
  model.enqueue(calls({{"c1", "memory", arguments}}));
  model.enqueue(answer({"Noted."}));
  const auto file = dir.write("atlas.yaml", agent_yaml(model, "tools:\n  - memory: {dir: ./notes}\n"));
  const Outcome r = run_cli(dir, {"run", file.string(), "Remember Lisbon's size", "--json", "--store", dir.store()});
  CHECK(r.exit_code == 0);
  std::vector<Json> deltas;
  std::vector<std::string> types;
  for (const Json& line : json_lines(r.out)) {
    types.push_back(line["type"]);
    if (line["type"] == "tool_call_delta") deltas.push_back(line);
  }
  REQUIRE_FALSE(deltas.empty());
  std::string joined;
  for (const Json& d : deltas) {
    CHECK(d["index"] == 0);
    CHECK(d["call_id"] == "c1");
    CHECK(d["name"] == "memory");
    joined += d["arguments"].get<std::string>();
  }
  CHECK(Json::parse(joined) == arguments);
  const auto delta_at = std::find(types.begin(), types.end(), "tool_call_delta");
  const auto started_at = std::find(types.begin(), types.end(), "tool_call_started");
  CHECK(delta_at < started_at);
}

TEST_CASE("agentkit run keeps runs in AGENTKIT_HOME by default", "[cli]") {
  TempDir dir;
  WireServer model;
  model.enqueue(answer({"Done."}));
  const auto file = dir.write("atlas.yaml", agent_yaml(model));
  const Outcome r = run_cli(dir, {"run", file.string(), "Hi"}, {"AGENTKIT_HOME=" + (dir.path / "home").string()});
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(dir.path / "home" / "state.db"));
}

TEST_CASE("agentkit run --json prints one event per line and ends with the result", "[cli][memory]") {
  TempDir dir;
  WireServer model;
  model.enqueue(
      calls({{"c1",
              "memory",
              {{"command", "create"}, {"path", "/memories/lisbon.md"}, {"file_text", "Population: 545,000\n"}}}}));
  model.enqueue(answer({"Noted: ", "545,000."}));
  const auto file = dir.write("atlas.yaml", agent_yaml(model, "tools:\n  - memory: {dir: ./notes}\n"));

  const Outcome r = run_cli(dir, {"run", file.string(), "Remember Lisbon's size", "--json", "--store", dir.store()});
  CHECK(r.exit_code == 0);
  const std::vector<Json> lines = json_lines(r.out);
  REQUIRE(lines.size() >= 6);
  std::string streamed;
  std::vector<std::string> types;
  for (const Json& line : lines) {
    types.push_back(line.at("type"));
    if (line["type"] == "text_delta") streamed += line["text"].get<std::string>();
  }
  CHECK(types.front() == "run_started");
  CHECK(lines.front()["run_id"] == lines.back()["run_id"]);
  CHECK(types.at(1) == "model_call_started");
  CHECK(std::count(types.begin(), types.end(), "result") == 1);
  CHECK(streamed == "Noted: 545,000.");
  const Json& result = lines.back();
  CHECK(result["type"] == "result");
  CHECK(result["stop_reason"] == "answered");
  CHECK(result["exit_code"] == 0);
  CHECK(result["output"] == "Noted: 545,000.");
  CHECK(result["iterations"] == 2);
  CHECK(result["run_id"].get<std::string>().rfind("run-", 0) == 0);
  const auto started = std::find(types.begin(), types.end(), "tool_call_started") - types.begin();
  REQUIRE(started < static_cast<long>(lines.size()));
  CHECK(lines[started]["name"] == "memory");
  CHECK(lines[started]["arguments"]["path"] == "/memories/lisbon.md");
  const auto finished = std::find(types.begin(), types.end(), "tool_call_finished") - types.begin();
  REQUIRE(finished < static_cast<long>(lines.size()));
  CHECK(lines[finished]["outcome"] == "ok");
  // Every event line carries its metadata: when (RFC 3339, UTC, ms), which run and agent, which span.
  const std::regex rfc3339(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)");
  for (std::size_t i = 1; i + 1 < lines.size(); ++i) {
    INFO(lines[i].dump());
    CHECK(std::regex_match(lines[i].value("time", std::string()), rfc3339));
    CHECK(lines[i]["run_id"] == lines.front()["run_id"]);
    CHECK(lines[i]["agent_path"] == "atlas");
    CHECK(lines[i].contains("span_id"));
    if (lines[i]["type"] == "tool_span") {
      CHECK(lines[i]["parent_span_id"] == lines[1]["span_id"]);  // the call's span, under the run's
    } else {
      CHECK(lines[i]["span_id"] == lines[1]["span_id"]);
      CHECK_FALSE(lines[i].contains("parent_span_id"));  // empty for a top-level run: omitted
    }
  }
  CHECK(lines[1].value("time", std::string()) <= lines[lines.size() - 2].value("time", std::string()));
  // The memory tool wrote into the directory the definition names, relative to it.
  CHECK(read_file(dir.path / "notes" / "lisbon.md") == "Population: 545,000\n");
  CHECK(r.out.find(kApiKey) == std::string::npos);
}

TEST_CASE("a run that needs approval suspends off a terminal and resume continues it in another process",
          "[cli][approval]") {
  TempDir dir;
  WireServer model, shop;
  model.enqueue(calls({{"c1", "refund", {{"order_id", "A-1"}}}}));
  model.enqueue(answer({"Refunded order A-1."}));
  shop.set_handler([](const WireServer::Request&) { return json_reply({{"refund", "R-9"}, {"status", "done"}}); });
  const auto file = dir.write("support.yaml", agent_yaml(model, "tools:\n" + refund_tool(shop)));

  const Outcome first = run_cli(dir, {"run", file.string(), "Refund order A-1", "--store", dir.store()});
  CHECK(first.exit_code == 3);
  const std::string run_id = run_id_in(first.out);
  CHECK(first.out.find("agentkit resume " + run_id + " --store " + dir.store() + " --approve all") !=
        std::string::npos);
  CHECK(first.out.find("refund(order_id: 'A-1')") != std::string::npos);
  CHECK(first.err.find("refund needs approval") != std::string::npos);
  CHECK(shop.requests().empty());  // nothing ran before the decision

  SECTION("approved in a second invocation, the call runs once") {
    const Outcome second = run_cli(dir, {"resume", run_id, "--approve", "all", "--store", dir.store()});
    CHECK(second.exit_code == 0);
    CHECK(second.out == "Refunded order A-1.\n");
    CHECK(second.err.find("✓ refund") != std::string::npos);
    REQUIRE(shop.requests().size() == 1);
    CHECK(shop.requests()[0].method == "POST");
    CHECK(shop.requests()[0].path == "/orders/A-1/refund");
    const Json last = Json::parse(model.requests().at(1).body)["messages"].back();
    CHECK(last["role"] == "tool");
    CHECK(last["content"].get<std::string>().find("R-9") != std::string::npos);

    const Outcome again = run_cli(dir, {"resume", run_id, "--approve", "all", "--store", dir.store()});
    CHECK(again.exit_code == 2);
    CHECK(again.err.find("already ended (answered)") != std::string::npos);
    CHECK(shop.requests().size() == 1);
  }
  SECTION("rejected with a reason, the call never runs and the model is told why") {
    const Outcome second = run_cli(dir, {"resume", run_id, "--reject", "c1:not damaged", "--store", dir.store()});
    CHECK(second.exit_code == 0);
    CHECK(shop.requests().empty());
    const Json last = Json::parse(model.requests().at(1).body)["messages"].back();
    CHECK(last["content"].get<std::string>().find("Reason: not damaged") != std::string::npos);
  }
  SECTION("without a decision and without a terminal, resume refuses and the run stays suspended") {
    const Outcome second = run_cli(dir, {"resume", run_id, "--store", dir.store()});
    CHECK(second.exit_code == 2);
    CHECK(second.err.find("awaits a decision on:") != std::string::npos);
    CHECK(second.err.find("c1  refund") != std::string::npos);
    CHECK(run_cli(dir, {"resume", run_id, "--approve", "c9", "--store", dir.store()}).exit_code == 2);
    CHECK(run_cli(dir, {"resume", run_id, "--approve", "c1", "--store", dir.store()}).exit_code == 0);
    CHECK(shop.requests().size() == 1);
  }
}

TEST_CASE("the budget covers the whole run: a resume does not start the count again", "[cli][approval]") {
  TempDir dir;
  WireServer model, shop;
  model.enqueue(calls({{"c1", "refund", {{"order_id", "A-1"}}}}));
  model.enqueue(calls({{"c2", "refund", {{"order_id", "A-2"}}}}));
  shop.set_handler([](const WireServer::Request&) { return json_reply({{"refund", "R-9"}}); });
  const auto file = dir.write("limited.yaml", agent_yaml(model, "budget: {steps: 2}\ntools:\n" + refund_tool(shop)));

  const Outcome first = run_cli(dir, {"run", file.string(), "Refund orders A-1 and A-2", "--store", dir.store()});
  REQUIRE(first.exit_code == 3);
  // The resume takes the run's second and last step; counted from zero, the
  // second refund would suspend for approval (exit 3) instead.
  const Outcome second = run_cli(dir, {"resume", run_id_in(first.out), "--approve", "all", "--store", dir.store()});
  CHECK(second.exit_code == 5);
  CHECK(second.err.find("model_steps limit 2 reached") != std::string::npos);
  CHECK(shop.requests().size() == 1);  // the approved refund ran
  CHECK(model.requests().size() == 2);
}

TEST_CASE("on a terminal approval is asked for and the run continues in-process", "[cli][approval][tty]") {
  TempDir dir;
  WireServer model, shop;
  shop.set_handler([](const WireServer::Request&) { return json_reply({{"refund", "R-5"}}); });
  const auto file = dir.write("support.yaml", agent_yaml(model, "tools:\n" + refund_tool(shop)));
  model.enqueue(calls({{"c1", "refund", {{"order_id", "A-1"}}}}));
  model.enqueue(answer({"Refunded.\x1b[2J"}));  // a control sequence in model text

  SECTION("edit: the arguments are asked for until they are a JSON object, and the edited call runs") {
    const Outcome r = run_on_terminal(dir, {"run", file.string(), "Refund A-1", "--store", dir.store()},
                                      {{"[e]dit? ", "e"},
                                       {"arguments (a JSON object): ", "{bad"},
                                       {"arguments (a JSON object): ", "[1]"},
                                       {"arguments (a JSON object): ", R"({"order_id": "B-2"})"}});
    INFO(r.out);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("? refund {\"order_id\":\"A-1\"}") != std::string::npos);
    CHECK(r.out.find("not JSON: ") != std::string::npos);
    CHECK(r.out.find("not a JSON object") != std::string::npos);
    CHECK(r.out.find("Refunded.?[2J") != std::string::npos);  // shown, not obeyed
    CHECK(r.out.find("\x1b[2J") == std::string::npos);
    CHECK(r.out.find("\033[32m") != std::string::npos);  // styled status lines on a terminal
    REQUIRE(shop.requests().size() == 1);
    CHECK(shop.requests()[0].path == "/orders/B-2/refund");
  }
  SECTION("resume without flags asks, then approves") {
    const Outcome first = run_cli(dir, {"run", file.string(), "Refund A-1", "--store", dir.store()});
    REQUIRE(first.exit_code == 3);
    const Outcome r =
        run_on_terminal(dir, {"resume", run_id_in(first.out), "--store", dir.store()}, {{"[e]dit? ", "a"}});
    INFO(r.out);
    CHECK(r.exit_code == 0);
    REQUIRE(shop.requests().size() == 1);
    CHECK(shop.requests()[0].path == "/orders/A-1/refund");
  }
  SECTION("input ends before a decision: the run stays suspended") {
    const Outcome r =
        run_on_terminal(dir, {"run", file.string(), "Refund A-1", "--store", dir.store()}, {{"[e]dit? ", "\x04"}});
    CHECK(r.exit_code == 3);
    CHECK(r.out.find("is waiting for approval") != std::string::npos);
    CHECK(shop.requests().empty());
  }
}

TEST_CASE("resume recovers a run whose process was killed mid-step", "[cli][recovery]") {
  TempDir dir;
  WireServer model;
  WireServer::Response stall;
  stall.fault = WireServer::Fault::stall;
  model.enqueue(stall);
  model.enqueue(answer({"Recovered answer."}));
  const auto file = dir.write("atlas.yaml", agent_yaml(model));

  const pid_t pid = spawn_cli(dir, {"run", file.string(), "Hi", "--json", "--store", dir.store()}, {}, "killed");
  await_first_request(model);
  REQUIRE(model.requests().size() == 1);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const auto lines = json_lines(read_file(dir.path / "killed.out"));
  REQUIRE(!lines.empty());
  REQUIRE(lines.front()["type"] == "run_started");
  const std::string run_id = lines.front()["run_id"];

  const Outcome r = run_cli(dir, {"resume", run_id, "--store", dir.store()});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "Recovered answer.\n");
  CHECK(r.err.find("recovering run " + run_id) != std::string::npos);
  CHECK(model.requests().size() == 2);
}

TEST_CASE("the session option continues a conversation across invocations", "[cli]") {
  TempDir dir;
  WireServer model;
  model.enqueue(answer({"Hello Ada."}));
  model.enqueue(answer({"Your name is Ada."}));
  const auto file = dir.write("atlas.yaml", agent_yaml(model));
  CHECK(run_cli(dir, {"run", file.string(), "My name is Ada.", "--session", "s1", "--store", dir.store()}).exit_code ==
        0);
  CHECK(run_cli(dir, {"run", file.string(), "What is my name?", "--session", "s1", "--store", dir.store()}).exit_code ==
        0);
  const Json messages = Json::parse(model.requests().at(1).body)["messages"];
  REQUIRE(messages.size() == 4);  // system, the first exchange, the new task
  CHECK(messages[1]["content"] == "My name is Ada.");
  CHECK(messages[2]["content"] == "Hello Ada.");
  CHECK(messages[3]["content"] == "What is my name?");
}

TEST_CASE("the yes option approves in-process and --json reports a suspension in the result line", "[cli][approval]") {
  TempDir dir;
  WireServer model, shop;
  shop.set_handler([](const WireServer::Request&) { return json_reply({{"refund", "R-1"}}); });
  const auto file = dir.write("support.yaml", agent_yaml(model, "tools:\n" + refund_tool(shop)));

  SECTION("--yes") {
    model.enqueue(calls({{"c1", "refund", {{"order_id", "A-1"}}}}));
    model.enqueue(answer({"Done."}));
    const Outcome r = run_cli(dir, {"run", file.string(), "Refund A-1", "--yes", "--store", dir.store()});
    CHECK(r.exit_code == 0);
    CHECK(shop.requests().size() == 1);
  }
  SECTION("--json") {
    model.enqueue(calls({{"c1", "refund", {{"order_id", "A-1"}}}}));
    const Outcome r = run_cli(dir, {"run", file.string(), "Refund A-1", "--json", "--store", dir.store()});
    CHECK(r.exit_code == 3);
    const auto lines = json_lines(r.out);
    REQUIRE(!lines.empty());
    const Json& result = lines.back();
    CHECK(result["stop_reason"] == "suspended");
    CHECK(result["exit_code"] == 3);
    REQUIRE(result["pending"].size() == 1);
    CHECK(result["pending"][0]["id"] == "c1");
    CHECK(result["pending"][0]["arguments"]["order_id"] == "A-1");
    CHECK(result["resume"].get<std::string>().find(result["run_id"].get<std::string>()) != std::string::npos);
    CHECK(std::any_of(lines.begin(), lines.end(), [](const Json& l) { return l["type"] == "run_suspended"; }));
    CHECK(shop.requests().empty());
  }
}

TEST_CASE("a REST tool declared in YAML sends path and query and an env-resolved header under the egress allowlist",
          "[cli][rest]") {
  TempDir dir;
  WireServer model, weather;
  weather.set_handler([](const WireServer::Request&) { return json_reply({{"temp_c", 21}}); });
  const std::string tool =
      "tools:\n"
      "  - rest:\n"
      "      name: weather\n"
      "      description: Current weather for a named city, in degrees Celsius.\n"
      "      url: " +
      weather.base_url() +
      "/weather/{city}\n"
      "      side_effecting: false\n"
      "      params:\n"
      "        - {name: city, description: The city}\n"
      "        - {name: units, description: Unit system, enum: [metric, imperial], default: metric}\n"
      "      headers: {X-Api-Key: \"${WEATHER_KEY}\"}\n";
  model.enqueue(calls({{"w1", "weather", {{"city", "Lisbon"}}}}));
  model.enqueue(answer({"It is 21 °C in Lisbon."}));

  SECTION("allowed") {
    const auto file = dir.write("w.yaml", agent_yaml(model, tool + "egress: [\"" + weather.base_url() + "\"]\n"));
    const Outcome r = run_cli(dir, {"run", file.string(), "Weather in Lisbon?", "--store", dir.store()},
                              {"WEATHER_KEY=wk-7781-secret"});
    CHECK(r.exit_code == 0);
    REQUIRE(weather.requests().size() == 1);
    CHECK(weather.requests()[0].method == "GET");
    CHECK(weather.requests()[0].path == "/weather/Lisbon?units=metric");
    CHECK(weather.requests()[0].header("x-api-key") == "wk-7781-secret");
    const Json last = Json::parse(model.requests().at(1).body)["messages"].back();
    CHECK(last["content"].get<std::string>().find("21") != std::string::npos);
    CHECK(r.err.find("weather(city: 'Lisbon')") != std::string::npos);
    CHECK(r.err.find("wk-7781-secret") == std::string::npos);
  }
  SECTION("not on the egress allowlist: denied, never contacted") {
    const auto file = dir.write("w.yaml", agent_yaml(model, tool + "egress: [\"https://api.example.com\"]\n"));
    const Outcome r = run_cli(dir, {"run", file.string(), "Weather in Lisbon?", "--store", dir.store()},
                              {"WEATHER_KEY=wk-7781-secret"});
    CHECK(r.exit_code == 0);
    CHECK(weather.requests().empty());
    CHECK(r.err.find("⊘ weather denied") != std::string::npos);
  }
}

// A minimal MCP server over stdio in POSIX sh: one read-only tool, `echo`,
// that always answers "pong from sh". Requests arrive with sorted keys, so
// the id comes first.
const char* const kShellMcpServer = R"(while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/^{"id":\([0-9][0-9]*\),.*/\1/p')
  [ -z "$id" ] && continue
  case "$line" in
    *'"method":"initialize"'*) result='{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"sh-echo","version":"1.0"}}' ;;
    *'"method":"tools/list"'*) result='{"tools":[{"name":"echo","description":"Answers with a fixed greeting, for testing.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}},"annotations":{"readOnlyHint":true}}]}' ;;
    *'"method":"tools/call"'*) result='{"content":[{"type":"text","text":"pong from sh"}]}' ;;
    *) result='{}' ;;
  esac
  printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$id" "$result"
done
)";

TEST_CASE("an MCP server declared in YAML is started and its tools are offered with a prefix", "[cli][mcp]") {
  TempDir dir;
  WireServer model;
  dir.write("server.sh", kShellMcpServer);
  model.enqueue(calls({{"m1", "sh_echo", {{"text", "ping"}}}}));
  model.enqueue(answer({"The server said pong."}));
  const auto file = dir.write(
      "atlas.yaml", agent_yaml(model, "tools:\n  - mcp: {name: sh, command: sh, args: [server.sh], cwd: .}\n"));

  const Outcome r = run_cli(dir, {"run", file.string(), "Ping the server", "--store", dir.store()});
  CHECK(r.exit_code == 0);
  const auto requests = model.requests();
  REQUIRE(requests.size() == 2);
  const Json tools = Json::parse(requests[0].body)["tools"];
  REQUIRE(tools.size() == 1);
  CHECK(tools[0]["function"]["name"] == "sh_echo");
  const Json last = Json::parse(requests[1].body)["messages"].back();
  CHECK(last["content"] == "pong from sh");
  CHECK(r.err.find("✓ sh_echo") != std::string::npos);

  SECTION("a server that cannot start is a setup error naming the entry") {
    const auto broken =
        dir.write("broken.yaml", agent_yaml(model, "tools:\n  - mcp: {name: gone, command: /nonexistent/server}\n"));
    const Outcome b = run_cli(dir, {"run", broken.string(), "Hi", "--store", dir.store()});
    CHECK(b.exit_code == 2);
    CHECK(b.err.find("broken.yaml:7: MCP server 'gone' is not usable") != std::string::npos);
  }
}

TEST_CASE("a sub-agent from another file is a tool whose events are marked nested", "[cli][subagent]") {
  TempDir dir;
  WireServer model;
  model.enqueue(calls({{"s1", "research", {{"task", "Find Lisbon's population"}}}}));
  model.enqueue(answer({"About 545,000."}));  // the sub-agent's answer
  model.enqueue(answer({"Lisbon has about 545,000 residents."}));
  dir.write("researcher.yaml",
            "name: researcher\n"
            "description: Researches facts about cities and reports them briefly.\n"
            "model: openai/gpt-mini\n"
            "base_url: " +
                model.base_url() +
                "/v1\n"
                "prompt: You research.\n");
  const auto file =
      dir.write("atlas.yaml", agent_yaml(model, "tools:\n  - agent: {file: researcher.yaml, name: research, side_effecting: false}\n"));

  const Outcome r = run_cli(dir, {"run", file.string(), "How big is Lisbon?", "--json", "--store", dir.store()});
  CHECK(r.exit_code == 0);
  const auto lines = json_lines(r.out);
  CHECK(lines.back()["output"] == "Lisbon has about 545,000 residents.");
  CHECK(std::any_of(lines.begin(), lines.end(),
                    [](const Json& l) { return l.value("nested", false) && l["type"] == "model_call_started"; }));
  // A nested line names the sub-run: its own run id, its agent path, its span under the parent's.
  std::string parent_span;
  for (const Json& l : lines) {
    if (l["type"] == "run_started" || l["type"] == "result" || l["type"] == "tool_span") continue;
    INFO(l.dump());
    if (l.value("nested", false)) {
      CHECK(l["agent_path"] == "atlas/researcher");
      CHECK(l["run_id"] != lines.front()["run_id"]);
      CHECK(l["parent_span_id"] == parent_span);
    } else {
      CHECK(l["agent_path"] == "atlas");
      CHECK(l["run_id"] == lines.front()["run_id"]);
      parent_span = l["span_id"];
    }
  }
  CHECK(std::any_of(lines.begin(), lines.end(),
                    [](const Json& l) { return l.value("nested", false) && l["type"] == "run_finished"; }));
  const auto requests = model.requests();
  REQUIRE(requests.size() == 3);
  CHECK(Json::parse(requests[1].body)["model"] == "gpt-mini");
  CHECK(Json::parse(requests[1].body)["messages"][1]["content"] == "Find Lisbon's population");
}

TEST_CASE("exit codes tell the stop reason", "[cli][exit]") {
  TempDir dir;
  WireServer model;
  const std::string memory = "tools:\n  - memory:\n";
  const Json view = {{"command", "view"}, {"path", "/memories"}};

  SECTION("max_iterations: 4") {
    model.enqueue(calls({{"v1", "memory", view}}));
    const auto file = dir.write("a.yaml", agent_yaml(model, memory + "limits: {max_iterations: 1}\n"));
    const Outcome r = run_cli(dir, {"run", file.string(), "Look around", "--store", dir.store()});
    CHECK(r.exit_code == 4);
    CHECK(r.err.find(" stopped (max_iterations): max_iterations (1) reached") != std::string::npos);
    CHECK(model.requests().size() == 1);
  }
  SECTION("budget_exhausted: 5") {
    model.enqueue(calls({{"v1", "memory", view}, {"v2", "memory", {{"command", "view"}, {"path", "/memories/x"}}}}));
    const auto file = dir.write("a.yaml", agent_yaml(model, memory + "budget: {tool_calls: 1}\n"));
    const Outcome r = run_cli(dir, {"run", file.string(), "Look around", "--store", dir.store()});
    CHECK(r.exit_code == 5);
    CHECK(r.err.find("tool_calls") != std::string::npos);
  }
  SECTION("budget_exhausted by cost under the definition's pricing: 5") {
    for (int i = 0; i < 3; ++i) model.enqueue(calls({{"v" + std::to_string(i), "memory", view}}));
    // Each model reply reports 40 input and 9 output tokens: $0.04 at these prices.
    const auto file = dir.write(
        "a.yaml", agent_yaml(model, memory + "budget: {cost_usd: 0.05}\n"
                                            "pricing: {input_usd_per_mtok: 1000, output_usd_per_mtok: 0}\n"));
    const Outcome r = run_cli(dir, {"run", file.string(), "Look around", "--store", dir.store()});
    CHECK(r.exit_code == 5);
    CHECK(r.err.find("cost limit reached") != std::string::npos);
    CHECK(model.requests().size() == 2);
  }
  SECTION("failed, the provider refused the request (404): 11") {
    model.enqueue(json_reply({{"error", {{"message", "model not found"}, {"type", "invalid_request_error"}}}}, 404));
    const auto file = dir.write("a.yaml", agent_yaml(model));
    const Outcome r = run_cli(dir, {"run", file.string(), "Hi", "--store", dir.store()});
    CHECK(r.exit_code == 11);
    CHECK(r.err.find("stopped (failed)") != std::string::npos);
    CHECK(r.err.find("[invalid_argument]") != std::string::npos);
  }
  SECTION("cancelled by SIGINT: 6") {
    WireServer::Response stall;
    stall.fault = WireServer::Fault::stall;
    model.enqueue(stall);
    const auto file = dir.write("a.yaml", agent_yaml(model));
    const pid_t pid = spawn_cli(dir, {"run", file.string(), "Hi", "--json", "--store", dir.store()}, {}, "sigint");
    await_first_request(model);
    REQUIRE(model.requests().size() == 1);
    ::kill(pid, SIGINT);
    CHECK(wait_for(pid) == 6);
    const auto lines = json_lines(read_file(dir.path / "sigint.out"));
    REQUIRE(!lines.empty());
    CHECK(lines.back()["stop_reason"] == "cancelled");
  }
  SECTION("a missing key variable: 2, naming the variable") {
    const auto file = dir.write("a.yaml", agent_yaml(model));
    const Outcome r = run_cli(dir, {"run", file.string(), "Hi", "--store", dir.store()}, {"AGENTKIT_TEST_KEY="});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("a.yaml:4: environment variable 'AGENTKIT_TEST_KEY' (api_key_env) is not set") !=
          std::string::npos);
    CHECK(model.requests().empty());
  }
}

TEST_CASE("a failed run's exit code and --json result come from its error code", "[cli][exit]") {
  TempDir dir;
  WireServer model;
  // An error reply the transport does not retry.
  const auto refuse = [](int status, const Json& body) {
    WireServer::Response r = json_reply(body, status);
    r.headers.emplace_back("x-should-retry", "false");
    return r;
  };
  const auto run_json = [&](const WireServer::Response& reply) {
    model.enqueue(reply);
    const auto file = dir.write("a.yaml", agent_yaml(model));
    const Outcome r = run_cli(dir, {"run", file.string(), "Hi", "--json", "--store", dir.store()});
    const auto lines = json_lines(r.out);
    REQUIRE(!lines.empty());
    return std::pair{r, lines.back()};
  };
  struct Case {
    int status;
    Json body;
    int exit_code;
    std::string error_code;
  };
  for (const auto& c : std::vector<Case>{
           {401, {{"error", {{"message", "bad key"}, {"type", "invalid_request_error"}}}}, 7, "unauthenticated"},
           {403, {{"error", {{"message", "not allowed"}, {"type", "permission_error"}}}}, 7, "permission_denied"},
           {429, {{"error", {{"message", "slow down"}, {"type", "rate_limit_error"}}}}, 8, "rate_limited"},
           {429, {{"error", {{"message", "quota"}, {"type", "insufficient_quota"}, {"code", "insufficient_quota"}}}}, 8,
            "quota_exceeded"},
           {503, {{"error", {{"message", "down"}, {"type", "server_error"}}}}, 9, "unavailable"},
           {400, {{"error", {{"message", "bad request"}, {"type", "invalid_request_error"}}}}, 11, "invalid_argument"},
       }) {
    CAPTURE(c.status, c.error_code);
    const auto [r, result] = run_json(refuse(c.status, c.body));
    CHECK(r.exit_code == c.exit_code);
    CHECK(result["type"] == "result");
    CHECK(result["stop_reason"] == "failed");
    CHECK(result["exit_code"] == c.exit_code);
    CHECK(result["error_code"] == c.error_code);
    CHECK(result["failure"]["http_status"] == c.status);
    CHECK_THAT(result["failure"]["model"].get<std::string>(), Catch::StartsWith("openai/gpt-test@" + model.base_url() + "/v1"));
    CHECK(r.out.find(kApiKey) == std::string::npos);
  }
  SECTION("a reply that is not what it claims: 10 (protocol)") {
    WireServer::Response html;
    html.status = 200;
    html.headers = {{"content-type", "text/html"}};
    html.body = "<html>hello</html>";
    const auto [r, result] = run_json(html);
    CHECK(r.exit_code == 10);
    CHECK(result["error_code"] == "protocol");
  }
  SECTION("a run that answers carries no error code") {
    const auto [r, result] = run_json(json_reply(
        {{"choices", Json::array({Json{{"message", {{"role", "assistant"}, {"content", "hello"}}}, {"finish_reason", "stop"}}})},
         {"usage", {{"prompt_tokens", 1}, {"completion_tokens", 1}}}}));
    CHECK(r.exit_code == 0);
    CHECK_FALSE(result.contains("error_code"));
    CHECK_FALSE(result.contains("failure"));
  }
}

TEST_CASE("invalid definitions are rejected with file and line and what is accepted", "[cli][config]") {
  TempDir dir;
  WireServer model;

  SECTION("an unknown top-level field") {
    const auto file = dir.write("bad.yaml", agent_yaml(model, "promt: typo\n"));
    const Outcome r = run_cli(dir, {"run", file.string(), "Hi", "--store", dir.store()});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(file.string() + ":6: unknown field 'promt' in agent; accepted fields: api_key_env, autonomy, "
                                     "base_url, budget, description, egress, limits, model, model_settings, name, pricing, "
                                     "prompt, prompt_file, session, settings, tools") != std::string::npos);
    CHECK(model.requests().empty());
  }
  SECTION("an unknown field inside a tool") {
    const auto file = dir.write("bad.yaml", agent_yaml(model, "tools:\n  - memory: {dir: ./m, size: 3}\n"));
    const Outcome r = run_cli(dir, {"validate", file.string()});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(file.string() + ":7: unknown field 'size' in tools[0].memory; accepted fields: dir") !=
          std::string::npos);
  }
  SECTION("YAML that does not parse") {
    const auto file = dir.write("bad.yaml", "name: atlas\nmodel: [openai/x\nprompt: hi\n");
    const Outcome r = run_cli(dir, {"validate", file.string()});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Matches(std::regex_replace(file.string(), std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                                     R"(:[34]:[0-9]+: .+\n)"));
  }
  SECTION("a file that is not UTF-8, in a value a reader only reports") {
    // The bytes once reached a JSON dump in an error message and crashed
    // `agentkit` with nlohmann's type_error (found by fuzz_cli_config).
    const auto file = dir.write(
        "bin.yaml", agent_yaml(model, "tools:\n  - rest:\n      name: refund\n      params: \"order \xFF\x9D\"\n"));
    const Outcome r = run_cli(dir, {"validate", file.string()});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("bin.yaml:9: the line is not valid UTF-8") != std::string::npos);
  }
  SECTION("a value of the wrong type, a missing field, a bad choice") {
    const auto wrong = dir.write("w.yaml", agent_yaml(model, "limits: {max_iterations: ten}\n"));
    CHECK(run_cli(dir, {"validate", wrong.string()})
              .err.find("w.yaml:6: 'max_iterations' in limits must be an integer, not 'ten'") != std::string::npos);
    const auto missing = dir.write("m.yaml", "name: atlas\nprompt: hi\n");
    CHECK(run_cli(dir, {"validate", missing.string()}).err.find("m.yaml:1: missing required field 'model' in agent") !=
          std::string::npos);
    const auto url = dir.write("u.yaml", "name: atlas\nmodel: openai/m\nbase_url: http://me:pw@example.com/v1\nprompt: hi\n");
    const Outcome bad_url = run_cli(dir, {"validate", url.string()});
    CHECK(bad_url.err.find("u.yaml:3: 'base_url' in agent is not a usable URL: credentials") != std::string::npos);
    CHECK(bad_url.err.find("pw") == std::string::npos);
    const auto choice = dir.write("c.yaml", agent_yaml(model, "autonomy: sometimes\n"));
    const Outcome r = run_cli(dir, {"validate", choice.string()});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("c.yaml:6: 'autonomy' in agent must be one of manual, gated, automatic, not 'sometimes'") !=
          std::string::npos);
  }
  SECTION("a duration in seconds that milliseconds cannot hold") {
    for (const char* seconds : {".inf", "1e300"}) {
      CAPTURE(seconds);
      const auto file = dir.write("d.yaml", agent_yaml(model, std::string("budget: {wall_time_s: ") + seconds + "}\n"));
      const Outcome r = run_cli(dir, {"validate", file.string()});
      CHECK(r.exit_code == 2);
      CHECK(r.err.find("d.yaml:6: 'wall_time_s' in budget must be a finite number of seconds, not '" +
                       std::string(seconds) + "'") != std::string::npos);
    }
    const auto ok = dir.write("ok.yaml", agent_yaml(model, "budget: {wall_time_s: 2.5}\n"));
    CHECK(run_cli(dir, {"validate", ok.string()}).exit_code == 0);
  }
  SECTION("a cost budget without the model's prices") {
    const auto file = dir.write("p.yaml", agent_yaml(model, "budget: {steps: 5, cost_usd: 1.5}\n"));
    const Outcome r = run_cli(dir, {"validate", file.string()});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("p.yaml:6: 'cost_usd' in budget needs 'pricing: {input_usd_per_mtok, output_usd_per_mtok}'") !=
          std::string::npos);
    const auto negative = dir.write(
        "n.yaml", agent_yaml(model, "pricing: {input_usd_per_mtok: -1, output_usd_per_mtok: 2}\n"));
    CHECK(run_cli(dir, {"validate", negative.string()})
              .err.find("n.yaml:6: 'input_usd_per_mtok' in pricing must not be negative") != std::string::npos);
  }
  SECTION("a sub-agent that leads back to its parent") {
    dir.write(
        "loop.yaml",
        agent_yaml(model,
                   "tools:\n  - agent: {file: bad.yaml, description: Loops back to its caller forever and ever.}\n"));
    const auto file = dir.write("bad.yaml", agent_yaml(model, "tools:\n  - agent: {file: loop.yaml}\n"));
    const Outcome r = run_cli(dir, {"validate", file.string()});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find((dir.path / "loop.yaml").string() + ":7: 'file' in tools[0].agent leads back to " +
                     file.string()) != std::string::npos);
  }
  SECTION("a sub-agent must say whether it is side-effecting") {
    dir.write("sub.yaml", agent_yaml(model, "description: Researches facts about cities, briefly.\n"));
    const auto file = dir.write("s.yaml", agent_yaml(model, "tools:\n  - agent: {file: sub.yaml, name: research}\n"));
    const Outcome r = run_cli(dir, {"validate", file.string()});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("s.yaml:7: missing required field 'side_effecting' in tools[0].agent") != std::string::npos);
  }
  SECTION("a sub-agent's own budget is noted as having no effect") {
    dir.write("sub.yaml",
              agent_yaml(model, "description: Researches facts about cities, briefly.\nbudget: {steps: 3}\n"));
    const auto file = dir.write(
        "ok.yaml", agent_yaml(model, "tools:\n  - agent: {file: sub.yaml, name: research, side_effecting: false}\n"));
    const Outcome r = run_cli(dir, {"validate", file.string()});
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("sub.yaml:7: warning: 'budget' has no effect in a sub-agent") != std::string::npos);
    CHECK(r.out.find("tools: research") != std::string::npos);
  }
  SECTION("a valid definition validates without contacting anything") {
    const auto file = dir.write("ok.yaml", agent_yaml(model, "tools:\n  - memory:\n" + refund_tool(model)));
    const Outcome r = run_cli(dir, {"validate", file.string()});
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("ok: agent 'atlas'") != std::string::npos);
    CHECK(r.out.find("tools: memory, refund") != std::string::npos);
    CHECK(model.requests().empty());
  }
  SECTION("bad command lines") {
    CHECK(run_cli(dir, {"run"}).exit_code == 2);
    CHECK(run_cli(dir, {"frobnicate"}).exit_code == 2);
    CHECK(run_cli(dir, {"run", "a.yaml", "task", "--colour"}).err.find("unknown option '--colour'") !=
          std::string::npos);
    const Outcome help = run_cli(dir, {"--help"});
    CHECK(help.exit_code == 0);
    CHECK(help.out.find("Exit codes:") != std::string::npos);
  }
}

TEST_CASE("model_settings in YAML reach the request, unknown keys and wrong types name the key and line",
          "[cli][config][settings]") {
  TempDir dir;
  WireServer model;
  model.enqueue(answer({"Sunny."}));
  const auto file = dir.write(
      "s.yaml", agent_yaml(model, "model_settings:\n  temperature: 0.3\n  max_output_tokens: 120\n  stop: [END]\n"
                                  "  seed: 11\n  extra: {service_tier: flex}\n"));
  const Outcome r = run_cli(dir, {"run", file.string(), "Weather?", "--store", dir.store()});
  CHECK(r.exit_code == 0);
  REQUIRE(model.requests().size() == 1);
  const Json body = Json::parse(model.requests()[0].body);
  CHECK(body["temperature"] == 0.3);
  CHECK(body["max_completion_tokens"] == 120);
  CHECK(body["stop"] == Json({"END"}));
  CHECK(body["seed"] == 11);
  CHECK(body["service_tier"] == "flex");

  const auto unknown = dir.write("u.yaml", agent_yaml(model, "settings:\n  temperature: 0.3\n  temprature: 0.5\n"));
  const Outcome u = run_cli(dir, {"validate", unknown.string()});
  CHECK(u.exit_code == 2);
  CHECK(u.err.find("u.yaml:8: model setting 'temprature' is not a model setting; accepted: extra,") != std::string::npos);
  const auto wrong = dir.write("w.yaml", agent_yaml(model, "model_settings:\n  top_p: \"high\"\n"));
  CHECK(run_cli(dir, {"validate", wrong.string()}).err.find("w.yaml:7: model setting 'top_p' must be a number, not string") !=
        std::string::npos);
  const auto range = dir.write("r.yaml", agent_yaml(model, "model_settings: {temperature: -1}\n"));
  CHECK(run_cli(dir, {"validate", range.string()}).err.find("r.yaml:6: model setting 'temperature' must be a number from 0 to 2") !=
        std::string::npos);
  const auto core = dir.write("c.yaml", agent_yaml(model, "model_settings: {extra: {messages: []}}\n"));
  CHECK(run_cli(dir, {"validate", core.string()}).err.find("model setting 'extra.messages' is written by agentkit") !=
        std::string::npos);
  const auto both = dir.write("b.yaml", agent_yaml(model, "settings: {seed: 1}\nmodel_settings: {seed: 2}\n"));
  CHECK(run_cli(dir, {"validate", both.string()}).exit_code == 2);
  const auto not_map = dir.write("n.yaml", agent_yaml(model, "model_settings: [temperature]\n"));
  CHECK(run_cli(dir, {"validate", not_map.string()}).err.find("'model_settings' in agent must be a mapping") !=
        std::string::npos);
  const auto no_tool = dir.write("t.yaml", agent_yaml(model, "model_settings: {tool_choice: {tool: launch}}\n"));
  const Outcome t = run_cli(dir, {"run", no_tool.string(), "Go", "--store", dir.store()});
  CHECK(t.exit_code == 2);
  CHECK(t.err.find("launch") != std::string::npos);
  CHECK(model.requests().size() == 1);  // nothing more was sent
}

TEST_CASE("a base URL without a scheme is refused in the model string as in base_url, before any request",
          "[cli][config]") {
  TempDir dir;
  WireServer model;
  std::string host_port = model.base_url();
  host_port.erase(0, host_port.find("://") + 3);  // 127.0.0.1:PORT
  const auto file = dir.write("a.yaml",
                              "name: atlas\nmodel: openai/gpt-test@" + host_port +
                                  "/v1\napi_key_env: AGENTKIT_TEST_KEY\nprompt: You answer questions.\n");
  const Outcome v = run_cli(dir, {"validate", file.string()});
  CHECK(v.exit_code == 2);
  CHECK(v.err.find("a.yaml:2: 'model' in agent is not usable: model 'openai/gpt-test': the base URL after '@' is not "
                   "usable: it must start with https:// (or http://)") != std::string::npos);
  const Outcome r = run_cli(dir, {"run", file.string(), "Hi", "--store", dir.store()});
  CHECK(r.exit_code == 2);
  CHECK(model.requests().empty());
  CHECK(r.err.find(kApiKey) == std::string::npos);

  SECTION("and so is OPENAI_BASE_URL without a scheme") {
    const auto env = dir.write("e.yaml", "name: atlas\nmodel: openai/gpt-test\nprompt: You answer questions.\n");
    const Outcome e = run_cli(dir, {"run", env.string(), "Hi", "--store", dir.store()},
                              {"OPENAI_BASE_URL=" + host_port + "/v1", "OPENAI_API_KEY=" + kApiKey});
    CHECK(e.exit_code == 2);
    CHECK(e.err.find("the OpenAI base URL (OPENAI_BASE_URL) is not usable: it must start with https://") !=
          std::string::npos);
    CHECK(model.requests().empty());
  }
}

TEST_CASE("a missing API key variable is named before any request, exit 2", "[cli][config]") {
  TempDir dir;
  WireServer proxy;  // every HTTPS request of the child would go here
  const std::vector<std::string> env = {"https_proxy=" + proxy.base_url(), "HTTPS_PROXY=" + proxy.base_url()};
  SECTION("OpenAI") {
    const auto file = dir.write("a.yaml", "name: atlas\nmodel: openai/gpt-4o-mini\nprompt: You answer questions.\n");
    const Outcome r = run_cli(dir, {"run", file.string(), "Hi", "--store", dir.store()}, env);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("a.yaml:2: environment variable 'OPENAI_API_KEY' is not set; openai/gpt-4o-mini needs its API "
                     "key there (or name another variable with api_key_env)") != std::string::npos);
  }
  SECTION("Anthropic") {
    const auto file = dir.write("a.yaml", "name: atlas\nmodel: anthropic/claude-test\nprompt: You answer questions.\n");
    const Outcome r = run_cli(dir, {"run", file.string(), "Hi", "--store", dir.store()}, env);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("environment variable 'ANTHROPIC_API_KEY' is not set") != std::string::npos);
  }
  CHECK(proxy.requests().empty());
}

TEST_CASE("an unknown AGENTKIT_LOG level is an error naming the accepted ones", "[cli][config]") {
  TempDir dir;
  WireServer model;
  const auto file = dir.write("a.yaml", agent_yaml(model));
  const Outcome bad = run_cli(dir, {"validate", file.string()}, {"AGENTKIT_LOG=verbose"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("AGENTKIT_LOG='verbose' is not a log level; use one of: trace, debug, info, warn, error, off") !=
        std::string::npos);
  CHECK(run_cli(dir, {"validate", file.string()}, {"AGENTKIT_LOG=debug"}).exit_code == 0);
  CHECK(run_cli(dir, {"validate", file.string()}, {"AGENTKIT_LOG="}).exit_code == 0);  // unset: warn
}

TEST_CASE("the run id is shown when the run starts, not only at a suspension", "[cli]") {
  TempDir dir;
  WireServer model;
  model.enqueue(answer({"Hello."}));
  const auto file = dir.write("atlas.yaml", agent_yaml(model));
  const Outcome r = run_cli(dir, {"run", file.string(), "Hi", "--store", dir.store()});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "Hello.\n");  // stdout stays the answer
  std::smatch m;
  REQUIRE(std::regex_search(r.err, m, std::regex("^run (run-[0-9a-f]+) \\(agent atlas\\)\n")));
  const std::string run_id = m[1];
  // The id is the run's: resume knows it.
  const Outcome again = run_cli(dir, {"resume", run_id, "--store", dir.store()});
  CHECK(again.err.find("run " + run_id + " already ended (answered)") != std::string::npos);
}

TEST_CASE("calls refused before running are events on the terminal and in --json", "[cli]") {
  TempDir dir;
  WireServer model;
  auto script = [&] {
    model.enqueue(calls({{"c1", "cancel_order", {{"order_id", "A-1"}}}}));
    model.enqueue(raw_call("c2", "memory", "{\"command\": \"view\", "));
    model.enqueue(answer({"I cannot do that."}));
  };
  const auto file = dir.write("atlas.yaml", agent_yaml(model, "tools:\n  - memory:\n"));

  SECTION("terminal") {
    script();
    const Outcome r = run_cli(dir, {"run", file.string(), "Cancel A-1", "--store", dir.store()});
    CHECK(r.exit_code == 0);
    // Arguments the run did not parse are shown as the model wrote them.
    CHECK(r.err.find("✗ cancel_order({\"order_id\":\"A-1\"}): unknown tool 'cancel_order'. Advertised tools: "
                     "['memory']\n") != std::string::npos);
    CHECK(r.err.find("✗ memory({\"command\": \"view\", ): ") != std::string::npos);
  }
  SECTION("--json") {
    script();
    const Outcome r = run_cli(dir, {"run", file.string(), "Cancel A-1", "--json", "--store", dir.store()});
    CHECK(r.exit_code == 0);
    const auto refused = of_type(json_lines(r.out), "tool_call_refused");
    REQUIRE(refused.size() == 2);
    CHECK(refused[0]["call_id"] == "c1");
    CHECK(refused[0]["name"] == "cancel_order");
    CHECK(refused[0]["arguments"] == "{\"order_id\":\"A-1\"}");  // the text, not parsed
    CHECK(refused[0]["error"].get<std::string>().rfind("unknown tool 'cancel_order'", 0) == 0);
    CHECK(refused[1]["call_id"] == "c2");
    CHECK(refused[1]["arguments"] == "{\"command\": \"view\", ");
    CHECK(!refused[1]["error"].get<std::string>().empty());
  }
}

TEST_CASE("decisions are events: a rejection, an approval with --yes", "[cli][approval]") {
  TempDir dir;
  WireServer model, shop;
  shop.set_handler([](const WireServer::Request&) { return json_reply({{"refund", "R-9"}}); });
  model.enqueue(calls({{"c1", "refund", {{"order_id", "A-1"}}}}));
  model.enqueue(answer({"Done."}));
  const auto file = dir.write("support.yaml", agent_yaml(model, "tools:\n" + refund_tool(shop)));

  SECTION("--yes approves on the terminal and says so") {
    const Outcome r = run_cli(dir, {"run", file.string(), "Refund A-1", "--yes", "--store", dir.store()});
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("⏸ refund needs approval\n✓ refund(order_id: 'A-1') approved\n") != std::string::npos);
    CHECK(shop.requests().size() == 1);
  }
  SECTION("--yes --json: an approval_decided line before the call starts") {
    const Outcome r = run_cli(dir, {"run", file.string(), "Refund A-1", "--yes", "--json", "--store", dir.store()});
    CHECK(r.exit_code == 0);
    const auto lines = json_lines(r.out);
    const auto decided = of_type(lines, "approval_decided");
    REQUIRE(decided.size() == 1);
    CHECK(decided[0]["call_id"] == "c1");
    CHECK(decided[0]["decision"] == "approved");
    const auto at = std::find(lines.begin(), lines.end(), decided[0]);
    CHECK(std::find_if(at, lines.end(), [](const Json& l) { return l["type"] == "tool_call_started"; }) != lines.end());
  }
  SECTION("--reject in resume, on the terminal and in --json") {
    const Outcome first = run_cli(dir, {"run", file.string(), "Refund A-1", "--json", "--store", dir.store()});
    REQUIRE(first.exit_code == 3);
    const std::string run_id = json_lines(first.out).front()["run_id"];
    const Outcome r =
        run_cli(dir, {"resume", run_id, "--reject", "c1:not damaged", "--json", "--store", dir.store()});
    CHECK(r.exit_code == 0);
    const auto decided = of_type(json_lines(r.out), "approval_decided");
    REQUIRE(decided.size() == 1);
    CHECK(decided[0]["decision"] == "rejected");
    CHECK(decided[0]["reason"] == "not damaged");
    CHECK(shop.requests().empty());
  }
  SECTION("--reject, human mode") {
    const Outcome first = run_cli(dir, {"run", file.string(), "Refund A-1", "--store", dir.store()});
    REQUIRE(first.exit_code == 3);
    const Outcome r = run_cli(dir, {"resume", run_id_in(first.out), "--reject", "c1:not damaged", "--store", dir.store()});
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("⊘ refund rejected: not damaged\n") != std::string::npos);
  }
}

TEST_CASE("MCP args resolve relative to the YAML file, from any working directory", "[cli][mcp]") {
  TempDir dir;
  WireServer model;
  fs::create_directories(dir.path / "agents");
  dir.write("agents/server.sh", kShellMcpServer);
  model.enqueue(calls({{"m1", "sh_echo", {{"text", "ping"}}}}));
  model.enqueue(answer({"Pong."}));
  // No cwd: the server starts in the file's directory, wherever agentkit runs.
  const auto file =
      dir.write("agents/atlas.yaml", agent_yaml(model, "tools:\n  - mcp: {name: sh, command: sh, args: [server.sh]}\n"));
  REQUIRE(fs::current_path() != dir.path / "agents");
  const Outcome r = run_cli(dir, {"run", file.string(), "Ping the server", "--store", dir.store()});
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("✓ sh_echo") != std::string::npos);
  REQUIRE(model.requests().size() == 2);
  CHECK(Json::parse(model.requests()[1].body)["messages"].back()["content"] == "pong from sh");
}

#endif  // AGENTKIT_CLI
