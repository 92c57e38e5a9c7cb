// The MCP client over stdio against fake_server.mjs: handshake, listing,
// results, errors, timeouts, cancellation, progress, server requests,
// list_changed, hostile output, a dying server and shutdown.
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <thread>

#include <agentkit/errors.h>
#include <agentkit/invoker.h>
#include <agentkit/testing/test_context.h>

#include "mcp_support.h"

using namespace agentkit;
using namespace agentkit::providers;
using namespace std::chrono_literals;
using mcp_test::connect;
using mcp_test::fake_server;

namespace {

ToolPtr find_tool(const McpClient& client, const std::string& name) {
  for (const auto& tool : client.tools()) {
    if (tool->name() == name) return tool;
  }
  FAIL("no tool " << name);
  return nullptr;
}

McpClientOptions named(std::string name, std::shared_ptr<spdlog::logger> logger = nullptr) {
  McpClientOptions options;
  options.server_name = std::move(name);
  options.logger = std::move(logger);
  return options;
}

class Recorder final : public Observer {
 public:
  void on_event(const Event& event) override {
    std::lock_guard lock(mutex_);
    if (auto* p = std::get_if<McpProgress>(&event)) progress_.push_back(*p);
  }
  std::vector<McpProgress> progress() const {
    std::lock_guard lock(mutex_);
    return progress_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<McpProgress> progress_;
};

}  // namespace

TEST_CASE("stdio: the handshake negotiates the revision and lists every tool across cursor pages") {
  auto client = connect(fake_server({"--page-size", "3"}), named("fake"));
  CHECK(client->connected());
  CHECK(client->server().name == "fake");
  CHECK(client->server().version == "1.0.0");
  CHECK(client->server().protocol_version == "2025-11-25");
  CHECK(client->server().instructions == "a scripted server");
  CHECK(client->server().capabilities.contains("tools"));

  const auto infos = client->list_tools();
  REQUIRE(infos.size() == 19);  // seven pages of at most three
  CHECK(infos.front().name == "echo");
  CHECK(infos.back().name == "noisy");
  REQUIRE(client->tools().size() == infos.size());
  for (std::size_t i = 0; i < infos.size(); ++i) CHECK(client->tools()[i]->spec().metadata["mcp"]["name"] == infos[i].name);
}

TEST_CASE("stdio: an older revision is accepted, an unknown one refused") {
  SECTION("2025-03-26") {
    auto client = connect(fake_server({"--version", "2025-03-26"}));
    CHECK(client->server().protocol_version == "2025-03-26");
  }
  SECTION("2024-11-05") {
    auto client = connect(fake_server({"--version", "2024-11-05"}));
    CHECK(client->server().protocol_version == "2024-11-05");
  }
  SECTION("an unsupported revision fails connect and leaves the client closed") {
    McpClient client(make_stdio_transport(fake_server({"--version", "1999-01-01"})));
    try {
      client.connect();
      FAIL("connect succeeded");
    } catch (const McpError& e) {
      CHECK(e.kind() == McpError::Kind::protocol);
      CHECK_THAT(e.what(), Catch::Contains("'1999-01-01'") && Catch::Contains("2025-11-25"));
    }
    CHECK_FALSE(client.connected());
    CHECK_THROWS_AS(client.call_tool("echo", {{"text", "x"}}), McpError);
  }
}

TEST_CASE("stdio: every content type renders as model text, structuredContent is the tool's value") {
  auto client = connect(fake_server());
  const McpCallResult all = client->call_tool("all_content", Json::object());
  CHECK_FALSE(all.is_error);
  CHECK(all.content.size() == 6);
  const std::string expected =
      "first line\n"
      "[image image/png, 16 bytes]\n"
      "[audio audio/wav, 20 bytes]\n"
      "[resource_link file:///docs/a.txt \"a.txt\" text/plain] the A file\n"
      "[resource file:///docs/b.txt text/plain]\ncontents of b\n"
      "[resource file:///docs/c.bin application/octet-stream, 4 bytes]";
  CHECK(all.text() == expected);
  auto ctx = testing::make_test_ctx();
  CHECK(find_tool(*client, "all_content")->run(Json::object(), ctx) == Json(expected));
  // What the invoker calls: the image block as an ImagePart, in its place.
  const agentkit::ToolOutput out = find_tool(*client, "all_content")->run_output(Json::object(), ctx);
  CHECK(out.value.is_null());
  REQUIRE(out.parts.size() == 3);
  CHECK(std::get<agentkit::TextPart>(out.parts[0]).text == "first line");
  CHECK(std::get<agentkit::ImagePart>(out.parts[1]).media_type == "image/png");
  CHECK(std::get<agentkit::ImagePart>(out.parts[1]).data.size() == 16);
  CHECK_THAT(std::get<agentkit::TextPart>(out.parts[2]).text, Catch::StartsWith("[audio audio/wav, 20 bytes]"));

  auto weather = find_tool(*client, "weather");
  REQUIRE(weather->spec().output_schema.has_value());
  CHECK(weather->run({{"city", "Lisbon"}}, ctx) == Json{{"temperature", 21.5}, {"city", "Lisbon"}});
}

TEST_CASE("stdio: annotations map to effects, hints stay metadata") {
  auto client = connect(fake_server(), named("fake"));
  auto echo = find_tool(*client, "echo");
  CHECK_FALSE(echo->side_effecting());
  CHECK_FALSE(echo->idempotent());  // a hint never licenses retries
  CHECK(echo->spec().metadata["mcp"]["idempotent_hint"] == true);
  CHECK(echo->spec().metadata["mcp"]["destructive_hint"] == false);
  CHECK(echo->spec().metadata["mcp"]["server"] == "fake");
  CHECK(echo->spec().metadata["mcp"]["name"] == "echo");
  CHECK_FALSE(echo->spec().accepts_extra_arguments);
  CHECK(echo->spec().tags == std::vector<std::string>{"mcp", "mcp:fake"});
  REQUIRE(echo->spec().parameters.has_value());
  CHECK((*echo->spec().parameters)["required"] == Schema::array({"text"}));

  auto fail = find_tool(*client, "fail");  // no annotations: assume it acts on the world
  CHECK(fail->side_effecting());
  CHECK(fail->spec().metadata["mcp"]["destructive_hint"] == true);

  // A name model APIs refuse is rewritten; calls still use the server's name.
  auto weird = find_tool(*client, "weird_name_v2");
  CHECK(weird->spec().metadata["mcp"]["name"] == "weird.name/v2");
  auto ctx = testing::make_test_ctx();
  CHECK(weird->run(Json::object(), ctx) == "weird ran");
}

TEST_CASE("mcp: content blocks render faithfully, whatever their shape") {
  McpCallResult r;
  r.content = Json::array({Json{{"type", "text"}, {"text", "a"}},
                           Json{{"type", "image"}, {"data", "QUJD"}},  // no mimeType
                           Json{{"type", "resource"}, {"resource", {{"uri", "x://empty"}}}},
                           Json{{"type", "video"}, {"url", "x"}},
                           Json("not an object"),
                           Json{{"type", "resource_link"}, {"uri", "x://bare"}}});
  CHECK(r.text() ==
        "a\n[image, 3 bytes]\n[resource x://empty]\n[video content]\n[content 'not an object']\n[resource_link x://bare]");
  CHECK(r.value() == Json(r.text()));
  r.structured = Json{{"k", 1}};
  CHECK(r.value() == Json{{"k", 1}});
  CHECK(McpCallResult{}.text().empty());
}

TEST_CASE("stdio: isError and unknown tools end as model-visible errors, in both shapes") {
  auto client = connect(fake_server());
  Invoker invoker({error_boundary()});
  auto ctx = testing::make_test_ctx();
  const auto invoke = [&](const std::string& name) {
    return invoker.invoke_tool({.call_id = "c1", .name = name, .arguments = Json::object(), .tool = find_tool(*client, name)}, ctx);
  };

  SECTION("isError: the tool throws McpToolError with the server's text") {
    auto fail = find_tool(*client, "fail");
    try {
      fail->run(Json::object(), ctx);
      FAIL("no throw");
    } catch (const McpToolError& e) {
      CHECK(std::string(e.what()) == "disk is full");
      CHECK(e.tool() == "fail");
      CHECK(e.result()["isError"] == true);
    }
    const ToolResult r = invoke("fail");
    CHECK(r.status == ToolResult::Status::error);
    CHECK(r.model_text() == "Tool failed: disk is full");
    CHECK(client->call_tool("fail", Json::object()).is_error);  // call_tool returns it
  }
  SECTION("unknown tool, JSON-RPC error shape") {
    try {
      client->call_tool("no_such_tool", Json::object());
      FAIL("no throw");
    } catch (const McpError& e) {
      CHECK(e.kind() == McpError::Kind::rpc);
      CHECK(e.rpc_code() == -32602);
      CHECK_THAT(e.what(), Catch::Contains("Unknown tool: no_such_tool"));
    }
    const ToolResult r = invoke("rpc_unknown");
    CHECK(r.status == ToolResult::Status::error);
    CHECK_THAT(r.model_text(), Catch::Contains("error -32602: Unknown tool: rpc_unknown"));
  }
  SECTION("unknown tool, isError shape") {
    const ToolResult r = invoke("vanished");
    CHECK(r.status == ToolResult::Status::error);
    CHECK(r.model_text() == "Tool failed: MCP error -32602: Tool vanished not found");
  }
}

TEST_CASE("stdio: arguments are checked against inputSchema before anything is sent") {
  auto client = connect(fake_server());
  auto echo = find_tool(*client, "echo");
  auto ctx = testing::make_test_ctx();
  try {
    echo->run({{"txt", "hi"}}, ctx);
    FAIL("no throw");
  } catch (const ToolArgumentError& e) {
    CHECK(e.missing() == std::vector<std::string>{"text"});
    CHECK(e.unexpected() == std::vector<std::string>{"txt"});
    CHECK(e.accepted() == std::vector<std::string>{"text"});
  }
  try {
    echo->run({{"text", 5}}, ctx);
    FAIL("no throw");
  } catch (const ToolArgumentError& e) {
    REQUIRE(e.invalid().size() == 1);
    CHECK(e.invalid()[0].name == "text");
    CHECK(e.invalid()[0].reason == "expected string, got integer 5");
  }
  CHECK_THROWS_AS(echo->run(Json::array(), ctx), ToolArgumentError);
  CHECK(find_tool(*client, "slow")->run({{"ms", 1.0}}, ctx) == "slept 1 ms");  // 1.0 is an integer
  // Nothing invalid reached the server: it saw no call, so nothing was cancelled either.
  CHECK(client->call_tool("cancellations", Json::object()).structured["cancelled"].empty());
}

TEST_CASE("stdio: raw UTF-8 with U+2028 and U+2029 survives the line framing both ways") {
  auto client = connect(fake_server());
  const std::string text = "a\u2028b\u2029c\nd \"quoted\" \xF0\x9F\x98\x80";
  CHECK(client->call_tool("echo", {{"text", text}}).text() == text);
}

TEST_CASE("stdio: a timed-out request is cancelled on the server and its late response dropped") {
  mcp_test::LogCapture log;
  auto client = connect(fake_server(), named("fake", log.logger()));
  const auto start = std::chrono::steady_clock::now();
  try {
    client->call_tool("slow", {{"ms", 1500}}, nullptr, 100ms);
    FAIL("no timeout");
  } catch (const McpError& e) {
    CHECK(e.kind() == McpError::Kind::timeout);
    CHECK_THAT(e.what(), Catch::Contains("no answer to tools/call within 100 ms"));
  }
  CHECK(std::chrono::steady_clock::now() - start < 1400ms);  // not the server's 1500 ms

  const Json cancelled = client->call_tool("cancellations", Json::object()).structured["cancelled"];
  REQUIRE(cancelled.size() == 1);
  CHECK(cancelled[0]["requestId"].is_number_integer());
  CHECK(cancelled[0]["reason"] == "timed out");

  // The server answers "slept 1500 ms" later; it must not be taken for another call's answer.
  REQUIRE(mcp_test::eventually([&] { return log.text().find("dropping a response") != std::string::npos; }));
  CHECK(client->call_tool("echo", {{"text", "after"}}).text() == "after");
}

TEST_CASE("stdio: a server that never answers times out, a cancelled token stops the call promptly") {
  auto client = connect(fake_server());
  SECTION("timeout") {
    try {
      client->call_tool("hang", Json::object(), nullptr, 200ms);
      FAIL("no timeout");
    } catch (const McpError& e) {
      CHECK(e.kind() == McpError::Kind::timeout);
    }
  }
  SECTION("as a tool: a timed-out side-effecting call is outcome_unknown, a read-only one an error") {
    McpClientOptions options;
    options.request_timeout = 200ms;
    options.connect_timeout = 30s;  // node's start under load is not what this section times
    auto quick = connect(fake_server(), options);
    Invoker invoker({error_boundary()});
    auto ctx = testing::make_test_ctx();
    ctx.autonomy = Autonomy::automatic;
    const auto hang = find_tool(*quick, "hang");  // no annotations: side-effecting
    REQUIRE(hang->side_effecting());
    const ToolResult unknown = invoker.invoke_tool({.call_id = "c1", .name = hang->name(), .tool = hang}, ctx);
    CHECK(unknown.status == ToolResult::Status::outcome_unknown);
    CHECK_THAT(unknown.text, Catch::Contains("within 200 ms") && Catch::Contains("may or may not have taken effect"));

    const auto slow = find_tool(*quick, "slow");  // readOnlyHint
    const ToolResult error =
        invoker.invoke_tool({.call_id = "c2", .name = slow->name(), .arguments = {{"ms", 1000}}, .tool = slow}, ctx);
    CHECK(error.status == ToolResult::Status::error);
    CHECK_THAT(error.text, Catch::Contains("within 200 ms") && !Catch::Contains("may or may not"));
  }
  SECTION("the tool honours ctx.cancellation and notifies the server") {
    auto ctx = testing::make_test_ctx();
    std::thread canceller([&] {
      std::this_thread::sleep_for(50ms);
      ctx.cancellation.cancel();
    });
    const auto start = std::chrono::steady_clock::now();
    try {
      find_tool(*client, "hang")->run(Json::object(), ctx);
      FAIL("no cancel");
    } catch (const McpError& e) {
      CHECK(e.kind() == McpError::Kind::cancelled);
    }
    canceller.join();
    CHECK(std::chrono::steady_clock::now() - start < 5s);
    const Json cancelled = client->call_tool("cancellations", Json::object()).structured["cancelled"];
    REQUIRE(cancelled.size() == 1);
    CHECK(cancelled[0]["reason"] == "cancelled by the caller");
  }
}

TEST_CASE("stdio: progress notifications become McpProgress events on the calling thread") {
  auto client = connect(fake_server(), named("fake"));
  auto recorder = std::make_shared<Recorder>();
  auto ctx = testing::make_test_ctx({.observer = recorder});
  CHECK(find_tool(*client, "progress")->run(Json::object(), ctx) == "done; token type number");
  const auto progress = recorder->progress();
  REQUIRE(progress.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(progress[i].server == "fake");
    CHECK(progress[i].tool == "progress");
    CHECK(progress[i].progress == i + 1);
    CHECK(progress[i].total == 3.0);
    CHECK(progress[i].message == "step " + std::to_string(i + 1));
  }
}

TEST_CASE("stdio: server requests are answered by shape, echoing ids with their JSON type") {
  McpClientOptions options;
  options.roots = std::vector<McpRoot>{{"file:///srv/data", "data"}};
  options.sampling = [](const Json& params) {
    return Json{{"role", "assistant"}, {"content", {{"type", "text"}, {"text", "sampled"}}}, {"model", "fake"},
                {"echo_max_tokens", params["maxTokens"]}};
  };
  auto client = connect(fake_server(), std::move(options));
  const McpCallResult result = client->call_tool("ask_client", Json::object());
  REQUIRE(result.text() == "asked");  // the roots/list request reusing this call's id did not end the call
  const Json replies = result.structured["replies"];
  REQUIRE(replies.size() == 4);

  CHECK(replies[0]["id"] == "ping-1");
  CHECK(replies[0]["result"] == Json::object());
  CHECK(replies[1]["id"].is_number_integer());
  CHECK(replies[1]["result"]["roots"] == Json::array({{{"uri", "file:///srv/data"}, {"name", "data"}}}));
  CHECK(replies[2]["id"] == 4242);
  CHECK(replies[2]["result"]["content"]["text"] == "sampled");
  CHECK(replies[2]["result"]["echo_max_tokens"] == 5);
  CHECK(replies[3]["id"] == "elicit-1");
  CHECK(replies[3]["error"]["code"] == -32601);  // no elicitation handler installed
}

TEST_CASE("stdio: without handlers, roots and sampling are refused with -32601") {
  auto client = connect(fake_server());
  const Json replies = client->call_tool("ask_client", Json::object()).structured["replies"];
  REQUIRE(replies.size() == 4);
  CHECK(replies[0]["result"] == Json::object());  // ping is always answered
  CHECK(replies[1]["error"]["code"] == -32601);
  CHECK(replies[2]["error"]["code"] == -32601);
  CHECK(replies[3]["error"]["code"] == -32601);
}

TEST_CASE("stdio: notifications/tools/list_changed re-lists the tools") {
  std::mutex mutex;
  std::vector<std::string> announced;
  McpClientOptions options;
  options.on_tools_changed = [&](const std::vector<ToolPtr>& tools) {
    std::lock_guard lock(mutex);
    announced.clear();
    for (const auto& t : tools) announced.push_back(t->name());
  };
  auto client = connect(fake_server({"--page-size", "4"}), std::move(options));
  const auto has_added = [&] {
    for (const auto& t : client->tools()) {
      if (t->name() == "added_tool") return true;
    }
    return false;
  };
  REQUIRE_FALSE(has_added());
  CHECK(client->call_tool("change_tools", Json::object()).text() == "changed");
  REQUIRE(mcp_test::eventually(has_added));
  // The callback runs after the new list is published, on the reader thread.
  REQUIRE(mcp_test::eventually([&] {
    std::lock_guard lock(mutex);
    return !announced.empty();
  }));
  {
    std::lock_guard lock(mutex);
    CHECK(announced.size() == 20);
    CHECK(std::find(announced.begin(), announced.end(), "added_tool") != announced.end());
  }
  auto ctx = testing::make_test_ctx();
  CHECK(find_tool(*client, "added_tool")->run(Json::object(), ctx) == "added tool ran");
}

TEST_CASE("stdio: lines that are not JSON-RPC are logged and skipped") {
  mcp_test::LogCapture log;
  auto client = connect(fake_server(), named("fake", log.logger()));
  CHECK(client->call_tool("garbage", Json::object()).text() == "answer after garbage");
  const std::string logged = log.text();
  CHECK_THAT(logged, Catch::Contains("is not JSON; skipped: this is not json"));
  CHECK_THAT(logged, Catch::Contains("nests deeper than 256 levels"));
  CHECK_THAT(logged, Catch::Contains("not a JSON-RPC object"));
  CHECK_THAT(logged, Catch::Contains("neither request, response nor notification"));
  CHECK_THAT(logged, Catch::Contains("dropping a response for no pending request: id 987654"));
  CHECK(client->connected());
  CHECK(client->call_tool("echo", {{"text", "still fine"}}).text() == "still fine");
}

TEST_CASE("stdio: a server that dies mid-call fails the call promptly with a typed error") {
  auto client = connect(fake_server(), named("fake"));
  const auto start = std::chrono::steady_clock::now();
  try {
    client->call_tool("die", Json::object());
    FAIL("no error");
  } catch (const McpError& e) {
    CHECK(e.kind() == McpError::Kind::disconnected);
    CHECK_THAT(e.what(), Catch::Contains("MCP server 'fake'") && Catch::Contains("exited with status 3"));
  }
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  CHECK_FALSE(client->connected());
  try {
    client->call_tool("echo", {{"text", "x"}});
    FAIL("no error");
  } catch (const McpError& e) {
    CHECK(e.kind() == McpError::Kind::disconnected);
  }
}

TEST_CASE("stdio: stderr is drained continuously, so a chatty server never stalls") {
  auto client = connect(fake_server());
  CHECK(client->call_tool("noisy", Json::object(), nullptr, 20s).text() == "quiet again");
}

TEST_CASE("stdio: the child sees only allow-listed and named environment variables") {
  ::setenv("AGENTKIT_TEST_SECRET_KEY", "sk-do-not-leak", 1);
  ::setenv("AGENTKIT_TEST_NAMED", "passed", 1);
  auto server = fake_server();
  server.inherit_env = {"AGENTKIT_TEST_NAMED"};
  server.env = {{"EXPLICIT_VAR", "1"}, {"HOME", "/explicit/home"}};
  auto client = connect(server);
  const Json env = client->call_tool("env", Json::object()).structured["env"];
  CHECK_FALSE(env.contains("AGENTKIT_TEST_SECRET_KEY"));
  CHECK(env["AGENTKIT_TEST_NAMED"] == "passed");
  CHECK(env["EXPLICIT_VAR"] == "1");
  CHECK(env["HOME"] == "/explicit/home");
  CHECK(env.contains("PATH"));
  for (auto it = env.begin(); it != env.end(); ++it) {
    const std::string& name = it.key();
    const bool allowed = name == "PATH" || name == "HOME" || name == "LANG" || name == "TMPDIR" ||
                         name.rfind("LC_", 0) == 0 || name == "AGENTKIT_TEST_NAMED" || name == "EXPLICIT_VAR";
    CHECK(allowed);
  }
  ::unsetenv("AGENTKIT_TEST_SECRET_KEY");
  ::unsetenv("AGENTKIT_TEST_NAMED");
}

TEST_CASE("stdio: close escalates from stdin EOF to SIGTERM to SIGKILL and reaps the child") {
  mcp_test::LogCapture log;
  std::vector<std::string> flags{"--ignore-stdin-eof"};
  std::string expected_log = "sending SIGTERM";
  SECTION("SIGTERM") {}
  SECTION("SIGKILL") {
    flags.push_back("--ignore-sigterm");
    expected_log = "ignored SIGTERM; sending SIGKILL";
  }
  auto server = fake_server(flags);
  server.shutdown_grace = 150ms;
  auto client = connect(server, named("fake", log.logger()));
  const int pid = std::stoi(client->call_tool("pid", Json::object()).text());
  REQUIRE(::kill(pid, 0) == 0);
  const auto start = std::chrono::steady_clock::now();
  client->close();
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  CHECK_THAT(log.text(), Catch::Contains(expected_log));
  errno = 0;
  CHECK(::kill(pid, 0) == -1);  // gone and reaped: not even a zombie
  CHECK(errno == ESRCH);
}

TEST_CASE("stdio: a server that exits on stdin EOF is closed without signals") {
  mcp_test::LogCapture log;
  auto client = connect(fake_server(), named("fake", log.logger()));
  const int pid = std::stoi(client->call_tool("pid", Json::object()).text());
  client->close();
  CHECK(log.text().find("SIGTERM") == std::string::npos);
  CHECK(::kill(pid, 0) == -1);
  client->close();  // idempotent
}

TEST_CASE("stdio: a command that cannot start is a typed error") {
  McpClient client(make_stdio_transport({.command = "/nonexistent/agentkit-mcp-server"}));
  try {
    client.connect();
    FAIL("connected");
  } catch (const McpError& e) {
    CHECK(e.kind() == McpError::Kind::disconnected);
    CHECK_THAT(e.what(), Catch::Contains("cannot start") && Catch::Contains("No such file"));
  }
}

TEST_CASE("stdio: tools fail cleanly once their client is gone") {
  auto client = connect(fake_server());
  auto echo = find_tool(*client, "echo");
  client.reset();
  auto ctx = testing::make_test_ctx();
  try {
    echo->run({{"text", "x"}}, ctx);
    FAIL("ran");
  } catch (const McpError& e) {
    CHECK(e.kind() == McpError::Kind::disconnected);
  }
}

TEST_CASE("stdio: concurrent calls share one connection and each gets its own answer") {
  auto client = connect(fake_server());
  constexpr int kThreads = 6;
  constexpr int kCalls = 25;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        const std::string text = std::to_string(t) + ":" + std::to_string(i);
        if (client->call_tool("echo", {{"text", text}}).text() != text) ++wrong;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(wrong == 0);
}

TEST_CASE("stdio: a traced call carries its traceparent in _meta beside the progress token, an untraced one none",
          "[trace]") {
  auto client = connect(fake_server());
  auto traced = testing::make_test_ctx();
  traced.trace_id = agentkit::trace::TraceId("4bf92f3577b34da6a3ce929d0e0e4736");
  traced.span_id = agentkit::trace::SpanId("00f067aa0ba902b7");
  const std::string expected = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  REQUIRE(traced.traceparent() == expected);
  auto untraced = testing::make_test_ctx();
  REQUIRE(untraced.traceparent().empty());

  // Through the agentkit tool (what a run calls) and through the client.
  CHECK(find_tool(*client, "echo")->run({{"text", "a"}}, traced) == "a");
  CHECK(client->call_tool("echo", {{"text", "b"}}, &traced).text() == "b");
  CHECK(find_tool(*client, "echo")->run({{"text", "c"}}, untraced) == "c");
  CHECK(client->call_tool("echo", {{"text", "d"}}).text() == "d");

  const Json metas = client->request("fake/call_metas")["metas"];
  REQUIRE(metas.size() == 4);
  for (std::size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    CHECK(metas[i]["traceparent"] == expected);
    CHECK(metas[i]["progressToken"].is_number_integer());
  }
  for (std::size_t i = 2; i < 4; ++i) {
    CAPTURE(i);
    REQUIRE(metas[i].is_object());
    CHECK_FALSE(metas[i].contains("traceparent"));
    CHECK(metas[i]["progressToken"].is_number_integer());
  }
}
