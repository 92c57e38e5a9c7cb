// The MCP server against agentkit's own McpClient (in process) and a corpus
// of hostile input over serve_stdio: listing, annotations, results, errors,
// progress, cancellation, approval through elicitation, list_changed.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <sstream>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/invoker.h>
#include <agentkit/state/ledger.h>
#include <agentkit/state/store.h>

#include "mcp_support.h"
#include "server_support.h"

#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

using namespace agentkit;
using namespace agentkit::providers;
using namespace std::chrono_literals;
using mcp_test::eventually;
using mcp_test::lambda_tool;
using mcp_test::spec;

namespace {

const std::string kPng = std::string("\x89PNG\r\n\x1a\n", 8) + std::string("\0\0\0\rIHDRfake", 12);

// What the tools saw, for asserting what ran.
struct Seen {
  std::atomic<int> mails{0};
  std::atomic<int> payments{0};
  std::atomic<bool> blocking{false};
  std::atomic<bool> block_cancelled{false};
};

ToolRegistry make_tools(const std::shared_ptr<Seen>& seen) {
  ToolRegistry r;
  r.add(agentkit::tool("add")
            .doc("Add two whole numbers and return the sum of them.")
            .side_effecting(false)
            .idempotent()
            .metadata({{"title", "Adder"}})
            .params("a", "b")
            .fn([](int a, int b) { return a + b; }));
  r.add(lambda_tool(spec("send_mail", true), [seen](const Json&, RunContext&) {
    ++seen->mails;
    return ToolOutput{"sent", {}};
  }));
  r.add(lambda_tool(spec("set_flag", true, true), [](const Json&, RunContext&) { return ToolOutput{true, {}}; }));
  r.add(lambda_tool(spec("fail", false), [](const Json&, RunContext&) -> ToolOutput {
    throw std::runtime_error("disk on fire");
  }));
  auto weather = spec("weather", false);
  weather.output_schema = Schema{{"type", "object"}, {"properties", {{"temp", {{"type", "number"}}}}}};
  r.add(lambda_tool(weather, [](const Json&, RunContext&) { return ToolOutput{Json{{"temp", 21.5}}, {}}; }));
  r.add(lambda_tool(spec("camera", false), [](const Json&, RunContext&) {
    return ToolOutput{"frame 7", {ImagePart{"image/png", kPng, ""}}};
  }));
  r.add(lambda_tool(spec("slow", false), [](const Json&, RunContext& ctx) {
    ctx.emit(Progress{"loading"});
    ctx.emit(Progress{"parsing"});
    return ToolOutput{"done", {}};
  }));
  r.add(lambda_tool(spec("block", false), [seen](const Json&, RunContext& ctx) {
    seen->blocking = true;
    while (!ctx.cancelled()) std::this_thread::sleep_for(1ms);
    seen->block_cancelled = true;
    return ToolOutput{"stopped", {}};
  }));
  auto pay = spec("pay", true);
  pay.effects.requires_approval = true;
  r.add(lambda_tool(pay, [seen](const Json&, RunContext&) {
    ++seen->payments;
    return ToolOutput{"paid", {}};
  }));
  return r;
}

struct Fixture {
  explicit Fixture(McpClientOptions options = {}, McpServerOptions server_options = {})
      : seen(std::make_shared<Seen>()), server(make_tools(seen), RunContext{}, std::move(server_options)) {
    auto transport = std::make_unique<mcp_test::InProcessTransport>(server);
    link = transport.get();
    client = std::make_unique<McpClient>(std::move(transport), std::move(options));
    client->connect();
  }
  std::shared_ptr<Seen> seen;
  McpServer server;
  mcp_test::InProcessTransport* link = nullptr;
  std::unique_ptr<McpClient> client;
};

McpToolInfo info_of(const std::vector<McpToolInfo>& infos, const std::string& name) {
  for (const auto& info : infos) {
    if (info.name == name) return info;
  }
  FAIL("no tool " << name);
  return {};
}

class ProgressRecorder final : public Observer {
 public:
  void on_event(const Event& event) override {
    std::lock_guard lock(mutex_);
    if (auto* p = std::get_if<McpProgress>(&event)) notes_.push_back(*p);
  }
  std::vector<McpProgress> notes() const {
    std::lock_guard lock(mutex_);
    return notes_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<McpProgress> notes_;
};

}  // namespace

TEST_CASE("mcp server: initialize negotiates the revision and tools/list pages carry schemas and annotations") {
  McpServerOptions server_options;
  server_options.name = "toolbox";
  server_options.page_size = 2;  // nine tools: five pages
  Fixture f({}, server_options);
  CHECK(f.client->server().name == "toolbox");
  CHECK(f.client->server().protocol_version == "2025-11-25");
  CHECK(f.client->server().capabilities["tools"]["listChanged"] == true);
  CHECK(f.link->session().initialized());

  const auto infos = f.client->list_tools();
  REQUIRE(infos.size() == 9);
  const auto add = info_of(infos, "add");
  CHECK(add.title == "Adder");
  CHECK(add.input_schema["properties"].contains("a"));
  CHECK(add.annotations["readOnlyHint"] == true);
  CHECK(add.annotations["destructiveHint"] == false);
  CHECK(add.annotations["idempotentHint"] == true);
  CHECK(add.annotations["title"] == "Adder");
  const auto mail = info_of(infos, "send_mail");
  CHECK(mail.annotations["readOnlyHint"] == false);
  CHECK(mail.annotations["destructiveHint"] == true);
  CHECK(mail.annotations["idempotentHint"] == false);
  const auto flag = info_of(infos, "set_flag");
  CHECK(flag.annotations["destructiveHint"] == false);  // side-effecting but idempotent
  CHECK(flag.annotations["idempotentHint"] == true);
  CHECK(info_of(infos, "weather").output_schema["properties"].contains("temp"));
  CHECK(info_of(infos, "send_mail").output_schema.is_null());
}

TEST_CASE("mcp server: an unknown client revision is answered with the server's own") {
  McpServer server(ToolRegistry{}, RunContext{});
  std::vector<Json> out;
  auto session = server.open_session([&](const Json& m) { out.push_back(m); });
  session->receive({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"},
                    {"params", {{"protocolVersion", "1999-01-01"}, {"capabilities", Json::object()}}}});
  session->receive({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "initialize"},
                    {"params", {{"protocolVersion", "2025-06-18"}}}});
  REQUIRE(out.size() == 2);
  CHECK(out[0]["result"]["protocolVersion"] == "2025-11-25");
  CHECK(out[1]["error"]["code"] == -32600);  // once is enough
  McpServer older(ToolRegistry{}, RunContext{});
  auto s2 = older.open_session([&](const Json& m) { out.push_back(m); });
  s2->receive({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", {{"protocolVersion", "2025-06-18"}}}});
  CHECK(out.back()["result"]["protocolVersion"] == "2025-06-18");
}

TEST_CASE("mcp server: tools/call answers values, tool errors, argument errors, structured content and images") {
  Fixture f;
  SECTION("a value") {
    const auto r = f.client->call_tool("add", {{"a", 2}, {"b", 3}});
    CHECK_FALSE(r.is_error);
    CHECK(r.text() == "5");
  }
  SECTION("a throwing tool is an isError result with model-visible text") {
    const auto r = f.client->call_tool("fail", Json::object());
    CHECK(r.is_error);
    CHECK_THAT(r.text(), Catch::Contains("disk on fire"));
  }
  SECTION("bad arguments are an isError result naming the problem") {
    const auto r = f.client->call_tool("add", {{"a", "two"}, {"b", 3}});
    CHECK(r.is_error);
    CHECK_THAT(r.text(), Catch::Contains("a"));
    CHECK_THAT(r.text(), Catch::Contains("integer"));
  }
  SECTION("a tool with an output schema returns structuredContent and its text") {
    const auto r = f.client->call_tool("weather", Json::object());
    CHECK(r.structured == Json{{"temp", 21.5}});
    REQUIRE(r.content.size() == 1);
    CHECK(Json::parse(r.content[0]["text"].get<std::string>()) == r.structured);
  }
  SECTION("an image part is an image block") {
    const auto r = f.client->call_tool("camera", Json::object());
    REQUIRE(r.content.size() == 2);
    CHECK(r.content[0]["text"] == "frame 7");
    CHECK(r.content[1]["type"] == "image");
    CHECK(r.content[1]["mimeType"] == "image/png");
    CHECK(base64_decode(r.content[1]["data"].get<std::string>()) == kPng);
  }
  SECTION("an unknown tool is a JSON-RPC invalid params error") {
    try {
      f.client->call_tool("nope", Json::object());
      FAIL("no error");
    } catch (const McpError& e) {
      CHECK(e.kind() == McpError::Kind::rpc);
      CHECK(e.rpc_code() == -32602);
    }
  }
}

TEST_CASE("mcp server: a tool's progress reaches the client as notifications/progress") {
  Fixture f;
  auto recorder = std::make_shared<ProgressRecorder>();
  RunContext ctx;
  ctx.observer = recorder;
  const auto r = f.client->call_tool("slow", Json::object(), &ctx);
  CHECK(r.text() == "done");
  const auto notes = recorder->notes();
  REQUIRE(notes.size() == 2);
  CHECK(notes[0].message == "loading");
  CHECK(notes[1].message == "parsing");
  CHECK(notes[1].progress > notes[0].progress);
}

TEST_CASE("mcp server: notifications/cancelled cancels the call's context and no answer is sent") {
  Fixture f;
  RunContext ctx;
  std::atomic<bool> threw_cancelled{false};
  std::thread caller([&] {
    try {
      f.client->call_tool("block", Json::object(), &ctx);
    } catch (const McpError& e) {
      threw_cancelled = e.kind() == McpError::Kind::cancelled;
    }
  });
  REQUIRE(eventually([&] { return f.seen->blocking.load(); }));
  CHECK(f.link->session().calls_in_flight() == 1);
  ctx.cancellation.cancel();
  caller.join();
  CHECK(threw_cancelled);
  CHECK(eventually([&] { return f.seen->block_cancelled.load(); }));
  CHECK(eventually([&] { return f.link->session().calls_in_flight() == 0; }));
  CHECK(f.client->call_tool("add", {{"a", 1}, {"b", 1}}).text() == "2");  // the session carries on
}

TEST_CASE("mcp server: a call needing approval is put to the user through elicitation") {
  std::atomic<int> asked{0};
  std::string answer;
  std::string prompt;
  McpClientOptions options;
  options.elicitation = [&](const Json& params) {
    ++asked;
    prompt = params.value("message", "");
    return Json{{"action", answer}};
  };
  SECTION("accept runs the call once") {
    answer = "accept";
    Fixture f(options);
    const auto r = f.client->call_tool("pay", Json::object());
    CHECK_FALSE(r.is_error);
    CHECK(r.text() == "paid");
    CHECK(asked == 1);
    CHECK_THAT(prompt, Catch::Contains("pay"));
    CHECK(f.seen->payments == 1);
  }
  SECTION("decline does not run it") {
    answer = "decline";
    Fixture f(options);
    const auto r = f.client->call_tool("pay", Json::object());
    CHECK(r.is_error);
    CHECK_THAT(r.text(), Catch::Contains("denied"));
    CHECK(asked == 1);
    CHECK(f.seen->payments == 0);
  }
  SECTION("cancel does not run it") {
    answer = "cancel";
    Fixture f(options);
    CHECK(f.client->call_tool("pay", Json::object()).is_error);
    CHECK(f.seen->payments == 0);
  }
}

TEST_CASE("mcp server: without elicitation a call needing approval is an error result and does not run") {
  Fixture f;
  const auto r = f.client->call_tool("pay", Json::object());
  CHECK(r.is_error);
  CHECK_THAT(r.text(), Catch::Contains("approval"));
  CHECK(f.seen->payments == 0);
  CHECK_FALSE(f.client->call_tool("send_mail", Json::object()).is_error);  // no approval needed: it runs
  CHECK(f.seen->mails == 1);
}

TEST_CASE("mcp server: a served agent's own approvals are put to the user and its run resumes with the answers") {
  using agentkit::testing::FakeLLM;
  using agentkit::testing::Turn;
  std::atomic<int> refunds{0}, asked{0};
  std::vector<std::string> prompts;
  std::string answer = "accept";
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {{"r1", "refund", {{"order_id", "A-1"}}}, {"r2", "refund", {{"order_id", "A-2"}}}}},
      Turn{.content = "Done."},
  });
  auto refund = agentkit::tool("refund")
                    .doc("Refund a damaged customer order in full and return the refund record.")
                    .side_effecting(true)
                    .requires_approval()
                    .params("order_id")
                    .fn([&](const std::string& order) {
                      ++refunds;
                      return "refunded " + order;
                    });
  auto clerk = std::make_shared<const Agent>("clerk", "fake", "You refund damaged orders.",
                                             std::make_shared<cognition::ReActCognition>(std::vector<ToolPtr>{refund}));
  ToolRegistry tools;
  tools.add(as_tool(clerk, {.name = "clerk", .description = "Refund the damaged orders named in the task.",
                            .side_effecting = true}));
  McpServer server(std::move(tools), agentkit::testing::make_test_ctx({.llm = llm}));
  McpClientOptions options;
  options.elicitation = [&](const Json& params) {
    ++asked;
    prompts.push_back(params.value("message", ""));
    // Two questions, one per call: the second order is always declined.
    const bool second = params.value("message", "").find("A-2") != std::string::npos;
    return Json{{"action", second ? "decline" : answer}};
  };
  const auto connect = [&](McpClientOptions o) {
    auto client = std::make_unique<McpClient>(std::make_unique<mcp_test::InProcessTransport>(server), std::move(o));
    client->connect();
    return client;
  };

  SECTION("each call the sub-run paused for is asked once; accepted runs once, declined never") {
    auto client = connect(options);
    const auto r = client->call_tool("clerk", {{"task", "Refund A-1 and A-2"}});
    INFO(r.text());
    CHECK_FALSE(r.is_error);
    CHECK(r.text() == "Done.");
    CHECK(asked == 2);
    CHECK(refunds == 1);
    REQUIRE(prompts.size() == 2);
    for (const auto& prompt : prompts) {
      CHECK_THAT(prompt, Catch::Contains("Tool: refund") && Catch::Contains("Asked by: agent clerk, inside tool 'clerk'"));
    }
    // The sub-agent's model saw the approved result and the refusal.
    const auto requests = llm->requests();
    REQUIRE(requests.size() == 2);
    const auto& seen = requests[1].messages;
    REQUIRE(seen.size() >= 2);
    CHECK(seen[seen.size() - 2].text() == "refunded A-1");
    CHECK_THAT(seen.back().text(), Catch::Contains("declined"));
  }
  SECTION("both declined: nothing runs and the sub-agent answers from the refusals") {
    answer = "decline";
    auto client = connect(options);
    const auto r = client->call_tool("clerk", {{"task", "Refund A-1 and A-2"}});
    CHECK_FALSE(r.is_error);
    CHECK(asked == 2);
    CHECK(refunds == 0);
  }
  SECTION("a client that cannot be asked gets an error result and nothing runs") {
    auto client = connect({});
    const auto r = client->call_tool("clerk", {{"task", "Refund A-1 and A-2"}});
    CHECK(r.is_error);
    CHECK_THAT(r.text(), Catch::Contains("paused for approval of calls of its own") &&
                             Catch::Contains("cannot be asked"));
    CHECK(refunds == 0);
    CHECK(llm->requests().size() == 1);
  }
  SECTION("a call cancelled while its questions wait is not resumed, whatever the answers") {
    std::atomic<bool> release{false};
    options.elicitation = [&](const Json&) {
      ++asked;
      eventually([&] { return release.load(); });
      return Json{{"action", "accept"}};
    };
    auto client = connect(options);
    // The client gives up (and sends notifications/cancelled) while the user has not answered.
    CHECK_THROWS_AS(client->call_tool("clerk", {{"task", "Refund A-1 and A-2"}}, nullptr, 300ms), McpError);
    release = true;
    CHECK(eventually([&] { return asked == 2; }));  // both accepted, too late
    std::this_thread::sleep_for(200ms);
    CHECK(refunds == 0);
    CHECK(llm->requests().size() == 1);  // the sub-run was never resumed
  }
}

TEST_CASE("mcp server: an idempotency key makes a retried call run once, and a call in flight is never run twice") {
  std::atomic<int> charges{0};
  std::atomic<bool> hold{false}, holding{false};
  const auto charge_tools = [&] {
    ToolRegistry tools;
    tools.add(agentkit::tool("charge")
                  .doc("Charge the customer's card the given amount and return the charge id.")
                  .side_effecting(true)
                  .params("amount")
                  .fn([&](int amount) {
                    const int n = ++charges;
                    holding = true;
                    eventually([&] { return !hold.load(); });
                    return "charge " + std::to_string(n) + " of " + std::to_string(amount);
                  }));
    return tools;
  };
  auto store = std::make_shared<state::InMemoryStore>();
  McpServerOptions options;
  options.ledger = std::make_shared<state::StoreLedger>(store, "mcp/calls/");
  McpServer server(charge_tools(), RunContext{}, options);
  McpClient client(std::make_unique<mcp_test::InProcessTransport>(server), {});
  client.connect();
  const auto call_on = [](McpClient& c, const Json& key, int amount) {
    Json params = {{"name", "charge"}, {"arguments", {{"amount", amount}}}};
    if (!key.is_null()) params["_meta"] = {{"agentkit.dev/idempotency-key", key}};
    return c.request("tools/call", params);
  };
  const auto call = [&](const Json& key, int amount) { return call_on(client, key, amount); };
  const auto text = [](const Json& result) { return result["content"][0].value("text", ""); };

  SECTION("the same key, tool and arguments: the recorded result, not a second charge") {
    const Json first = call("order-7", 40);
    CHECK(text(first) == "charge 1 of 40");
    CHECK(call("order-7", 40) == first);
    CHECK(charges == 1);
    // Another key, or the same key with other arguments, is another call.
    CHECK(text(call("order-8", 40)) == "charge 2 of 40");
    CHECK(text(call("order-7", 41)) == "charge 3 of 41");
    // No key: not recorded, runs every time.
    CHECK(text(call(nullptr, 40)) == "charge 4 of 40");
    CHECK(text(call(nullptr, 40)) == "charge 5 of 40");
  }
  SECTION("a retry while the first runs: this server waits for it; a restarted one does not run it (outcome unknown)") {
    hold = true;
    Json first, again;
    std::thread a([&] { first = call("order-9", 10); });
    REQUIRE(eventually([&] { return holding.load(); }));
    // A second server on the same store, as after a restart: the record says
    // the call began and never ended.
    McpServer restarted(charge_tools(), RunContext{}, options);
    McpClient other(std::make_unique<mcp_test::InProcessTransport>(restarted), {});
    other.connect();
    const Json unknown = call_on(other, "order-9", 10);
    CHECK(unknown.value("isError", false));
    CHECK_THAT(text(unknown), Catch::Contains("unknown"));
    std::thread b([&] { again = call("order-9", 10); });
    std::this_thread::sleep_for(100ms);
    CHECK(charges == 1);
    hold = false;
    a.join();
    b.join();
    CHECK(text(first) == "charge 1 of 10");
    CHECK(again == first);
    CHECK(call_on(other, "order-9", 10) == first);  // recorded once it ended
    CHECK(charges == 1);
    other.close();
  }
  SECTION("a key that is not a short string is refused, and nothing runs") {
    for (const Json& bad : {Json(7), Json(""), Json(std::string(257, 'k'))}) {
      try {
        call(bad, 1);
        FAIL("accepted " << bad.dump().substr(0, 40));
      } catch (const McpError& e) {
        CHECK(e.rpc_code() == -32602);
        CHECK_THAT(e.what(), Catch::Contains("idempotency-key"));
      }
    }
    CHECK(charges == 0);
  }
}

TEST_CASE("mcp server: without a ledger an idempotency key is refused, not ignored") {
  Fixture f;
  try {
    f.client->request("tools/call", {{"name", "send_mail"}, {"_meta", {{"agentkit.dev/idempotency-key", "m-1"}}}});
    FAIL("a key was accepted by a server that keeps no records");
  } catch (const McpError& e) {
    CHECK(e.rpc_code() == -32602);
    CHECK_THAT(e.what(), Catch::Contains("keeps no call records"));
  }
  CHECK(f.seen->mails == 0);
}

TEST_CASE("mcp server: set_tools sends list_changed and the client re-lists") {
  std::atomic<int> changes{0};
  std::mutex mutex;
  std::vector<std::string> names;
  McpClientOptions options;
  options.on_tools_changed = [&](const std::vector<ToolPtr>& tools) {
    std::lock_guard lock(mutex);
    names.clear();
    for (const auto& t : tools) names.push_back(t->name());
    ++changes;
  };
  Fixture f(options);
  ToolRegistry next;
  next.add(lambda_tool(spec("late", false), [](const Json&, RunContext&) { return ToolOutput{"here", {}}; }));
  f.server.set_tools(std::move(next));
  REQUIRE(eventually([&] { return changes.load() > 0; }));
  {
    std::lock_guard lock(mutex);
    CHECK(names == std::vector<std::string>{"late"});
  }
  CHECK(f.client->call_tool("late", Json::object()).text() == "here");
}

TEST_CASE("mcp server: deliver_on_poll holds outgoing messages until the host polls") {
  McpServerOptions options;
  options.deliver_on_poll = true;
  McpServer server(ToolRegistry{}, RunContext{}, options);
  std::vector<Json> out;
  auto session = server.open_session([&](const Json& m) { out.push_back(m); });
  session->receive({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}});
  CHECK(out.empty());
  CHECK(session->poll() == 1);
  REQUIRE(out.size() == 1);
  CHECK(out[0]["id"] == 1);
}

namespace {

// Feeds `input` to serve_stdio over a pipe pair and returns every line it wrote.
std::vector<Json> serve_lines(McpServer& server, const std::string& input, std::size_t max_line_bytes) {
  int in[2];
  int out[2];
  REQUIRE(::pipe(in) == 0);
  REQUIRE(::pipe(out) == 0);
  std::thread writer([&] {
    std::size_t done = 0;
    while (done < input.size()) {
      const ssize_t n = ::write(in[1], input.data() + done, input.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::close(in[1]);
  });
  std::string written;
  std::thread reader([&] {
    char buf[4096];
    for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) written.append(buf, static_cast<std::size_t>(n));
  });
  serve_stdio(server, {.in_fd = in[0], .out_fd = out[1], .max_line_bytes = max_line_bytes});
  ::close(out[1]);
  writer.join();
  reader.join();
  ::close(in[0]);
  ::close(out[0]);
  std::vector<Json> lines;
  std::istringstream stream(written);
  for (std::string line; std::getline(stream, line);) lines.push_back(Json::parse(line));
  return lines;
}

}  // namespace

TEST_CASE("mcp server: a hostile client gets JSON-RPC errors, never a crash or a hang") {
  auto seen = std::make_shared<Seen>();
  McpServer server(make_tools(seen), RunContext{});
  const std::string init =
      R"({"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}})";
  const std::vector<std::pair<std::string, Json>> corpus = {
      // line, the expected {id, code}; code 0: a result; null: no answer at all
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", {1, -32600}},
      {R"({"jsonrpc":"2.0","id":2,"method":"ping"})", {2, 0}},
      {"not json", {nullptr, -32700}},
      {"[1,2]", {nullptr, -32600}},
      {"42", {nullptr, -32600}},
      {R"({"jsonrpc":"1.0","id":3,"method":"ping"})", {3, -32600}},
      {R"({"id":3,"method":"ping"})", {3, -32600}},
      {R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})", {nullptr, -32600}},
      {R"({"jsonrpc":"2.0","id":4.5,"method":"ping"})", {nullptr, -32600}},
      {R"({"jsonrpc":"2.0","id":null,"method":"ping"})", {nullptr, -32600}},
      {init, {5, 0}},
      {"", nullptr},
      {R"({"jsonrpc":"2.0","method":"notifications/initialized"})", nullptr},
      {init, {5, -32600}},
      {R"({"jsonrpc":"2.0","id":6,"method":"no/such"})", {6, -32601}},
      {R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":[1]})", {7, -32602}},
      {R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":7}})", {8, -32602}},
      {R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"nope"}})", {9, -32602}},
      {R"({"jsonrpc":"2.0","id":10,"method":5})", {10, -32600}},
      {R"({"jsonrpc":"2.0","id":11,"method":"tools/list","params":{"cursor":"abc"}})", {11, -32602}},
      {R"({"jsonrpc":"2.0","id":11,"method":"tools/list","params":{"cursor":"99"}})", {11, -32602}},
      {R"({"jsonrpc":"2.0","id":12,"result":{}})", nullptr},  // a response to nothing
      {R"({"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"?"}})", nullptr},
      {R"({"jsonrpc":"2.0","id":13})", {13, -32600}},
      {std::string(300, '[') + std::string(300, ']'), {nullptr, -32700}},
      {"{\"jsonrpc\":\"2.0\",\"id\":14,\"method\":\"ping\",\"pad\":\"" + std::string(8000, 'x') + "\"}",
       {nullptr, -32700}},  // over the line cap
      {R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}})", nullptr},
      {R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"})", nullptr},
      {R"({"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"block"}})", nullptr},  // runs until EOF
      {R"({"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"block"}})", {"b", -32600}},
      {R"({"jsonrpc":"2.0","id":15,"method":"ping"})", {15, 0}},
  };
  std::string input;
  std::vector<Json> expected;
  for (const auto& entry : corpus) {
    input += entry.first + "\n";
    if (!entry.second.is_null()) expected.push_back(entry.second);
  }
  input += R"({"jsonrpc":"2.0","id":16,"method":"ping"})";  // no newline before EOF
  expected.push_back({16, 0});

  const auto lines = serve_lines(server, input, 4096);
  REQUIRE(lines.size() == expected.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    INFO("answer " << i << ": " << lines[i].dump());
    CHECK(lines[i]["jsonrpc"] == "2.0");
    CHECK(lines[i]["id"] == expected[i][0]);
    if (expected[i][1] == 0) {
      CHECK(lines[i].contains("result"));
    } else {
      CHECK(lines[i]["error"]["code"] == expected[i][1]);
    }
  }
  // EOF cancelled the call in flight: it never started, or its tool saw the cancel.
  CHECK(eventually([&] { return !seen->blocking || seen->block_cancelled; }));
}
