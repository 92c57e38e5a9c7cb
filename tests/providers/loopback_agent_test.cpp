// A full agent run (the Lisbon example) through each adapter, over real HTTP
// on loopback: libcurl on one side, WireServer on the other.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>

#include <agentkit/agent.h>
#include <agentkit/agent_guardrails.h>
#include <agentkit/executor.h>
#include <agentkit/inject.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/models.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/testing/wire_server.h>

#include "../helpers/wire_replies.h"

using agentkit::Json;
using agentkit::testing::WireServer;
using agentkit_test::json_reply;
using agentkit_test::openai_call;
using agentkit_test::openai_text;

namespace {

agentkit::ToolPtr city_population() {
  return agentkit::tool("city_population")
      .doc("Look up the most recent census population for a named city.")
      .side_effecting(false)
      .idempotent()
      .params("city")
      .fn([](const std::string& city) { return city == "Lisbon" ? 545000 : 0; });
}

WireServer::Response sse(std::vector<std::string> events) {
  WireServer::Response r;
  r.headers = {{"content-type", "text/event-stream"}};
  for (auto& e : events) r.chunks.push_back(std::move(e));
  return r;
}

agentkit::RunResult run_lisbon(const std::string& model, const agentkit::providers::ProviderSettings& settings) {
  agentkit::Agent agent("atlas", model, "You answer questions about cities.",
                        agentkit::cognition::react({city_population()}));
  auto ctx = agentkit::testing::make_test_ctx();
  ctx.models = agentkit::providers::model_resolver(settings);
  return agent.run("How big is Lisbon?", ctx);
}

}  // namespace

TEST_CASE("Lisbon through the OpenAI adapter, streaming, over loopback", "[loopback][openai]") {
  WireServer server;
  server.enqueue(sse({
      R"(data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"city_population","arguments":""}}]}}]})" "\n\n",
      R"(data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]})" "\n\n",
      R"(data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Lisbon\"}"}}]}}]})" "\n\n",
      R"(data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})" "\n\n",
      R"(data: {"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":10}})" "\n\ndata: [DONE]\n\n"}));
  server.enqueue(sse({
      R"(data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})" "\n\n",
      R"(data: {"choices":[{"index":0,"delta":{"content":"Lisbon has about "}}]})" "\n\n",
      R"(data: {"choices":[{"index":0,"delta":{"content":"545,000 residents."},"finish_reason":"stop"}]})" "\n\n",
      R"(data: {"choices":[],"usage":{"prompt_tokens":70,"completion_tokens":8}})" "\n\ndata: [DONE]\n\n"}));
  auto result = run_lisbon("openai/gpt-4o-mini@" + server.base_url() + "/v1", {.openai_api_key = "sk-test-key"});
  REQUIRE(result.stop_reason == agentkit::StopReason::answered);
  CHECK(result.output == "Lisbon has about 545,000 residents.");
  CHECK(result.usage.input_tokens == 120);
  auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].path == "/v1/chat/completions");
  CHECK(requests[0].header("authorization") == "Bearer sk-test-key");
  const Json second = Json::parse(requests[1].body);
  CHECK(second["model"] == "gpt-4o-mini");
  CHECK(second["messages"][2]["tool_calls"][0]["function"]["arguments"] == R"({"city":"Lisbon"})");
  CHECK(second["messages"][3] == Json({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "545000"}}));
  // The system prompt and tools are sent byte-identically on both turns.
  CHECK(Json::parse(requests[0].body)["tools"].dump() == second["tools"].dump());
  CHECK(server.connections_accepted() == 1);  // keep-alive
}

TEST_CASE("Lisbon through the OpenAI adapter without streaming", "[loopback][openai]") {
  WireServer server;
  server.enqueue(json_reply({{"choices", {{{"index", 0}, {"finish_reason", "tool_calls"},
                                     {"message", {{"role", "assistant"}, {"content", nullptr},
                                                  {"tool_calls", {{{"id", "call_1"}, {"type", "function"},
                                                                   {"function", {{"name", "city_population"}, {"arguments", "{\"city\": \"Lisbon\"}"}}}}}}}}}}},
                       {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 5}}}}));
  server.enqueue(json_reply({{"choices", {{{"index", 0}, {"finish_reason", "stop"},
                                     {"message", {{"role", "assistant"}, {"content", "About 545,000."}}}}}}}));
  auto result = run_lisbon("openai/gpt-4o-mini@" + server.base_url() + "/v1", {.stream = false});
  CHECK(result.output == "About 545,000.");
  CHECK(server.requests().at(1).body.find("545000") != std::string::npos);
  CHECK(Json::parse(server.requests().at(0).body).contains("stream") == false);
}

TEST_CASE("context-dependent tools and prompt through the OpenAI adapter: each request carries that turn's",
          "[loopback][openai][available][instructions]") {
  WireServer server;
  const auto reply_calls = [](const std::string& id, const std::string& name) {
    return json_reply({{"choices", {{{"index", 0}, {"finish_reason", "tool_calls"},
                                     {"message", {{"role", "assistant"}, {"content", nullptr},
                                                  {"tool_calls", {{{"id", id}, {"type", "function"},
                                                                   {"function", {{"name", name}, {"arguments", "{}"}}}}}}}}}}}});
  };
  server.enqueue(reply_calls("c1", "open_session"));
  server.enqueue(reply_calls("c2", "close_account"));
  server.enqueue(json_reply({{"choices", {{{"index", 0}, {"finish_reason", "stop"},
                                            {"message", {{"role", "assistant"}, {"content", "Closed."}}}}}}}));
  auto open = std::make_shared<std::atomic<bool>>(false);
  auto open_session = agentkit::tool("open_session")
                          .doc("Open the customer's session; account tools appear once it is open.")
                          .side_effecting(true)
                          .fn([open] {
                            open->store(true);
                            return std::string("open");
                          });
  auto close_account = agentkit::tool("close_account")
                           .doc("Close the customer's bank account.")
                           .side_effecting(true)
                           .available_if([open](const agentkit::RunContext&) { return open->load(); })
                           .describe([](const agentkit::RunContext& ctx) { return "Close the account of " + ctx.agent_path + "'s customer."; })
                           .fn([] { return std::string("closed"); });
  agentkit::AgentOptions options;
  options.instructions = [open](const agentkit::RunContext&) {
    return std::string(open->load() ? "The session is open." : "Open a session first.");
  };
  agentkit::Agent agent("clerk", "openai/gpt-4o-mini@" + server.base_url() + "/v1", "You close accounts.",
                        agentkit::cognition::react({open_session, close_account}), options);
  auto ctx = agentkit::testing::make_test_ctx();
  ctx.models = agentkit::providers::model_resolver({.openai_api_key = "sk-test-key", .stream = false});
  auto result = agent.run("Close my account", ctx);
  REQUIRE(result.stop_reason == agentkit::StopReason::answered);
  const auto requests = server.requests();
  REQUIRE(requests.size() == 3);
  const auto tool_names = [&](std::size_t i) {
    std::vector<std::string> names;
    const Json body = Json::parse(requests[i].body);
    for (const Json& t : body.at("tools")) names.push_back(t["function"]["name"]);
    return names;
  };
  const auto system = [&](std::size_t i) { return Json::parse(requests[i].body).at("messages").at(0).at("content"); };
  CHECK(tool_names(0) == std::vector<std::string>{"open_session"});
  CHECK(system(0) == "Open a session first.");
  CHECK(tool_names(1) == std::vector<std::string>{"close_account", "open_session"});
  const Json second = Json::parse(requests[1].body);
  CHECK(second["tools"][0]["function"]["description"] == "Close the account of clerk's customer.");
  CHECK(system(1) == "The session is open.");
}

TEST_CASE("Lisbon through the Anthropic adapter, streaming, over loopback", "[loopback][anthropic]") {
  WireServer server;
  server.enqueue(sse({
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":30,\"output_tokens\":1}}}\n\n",
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"city_population\",\"input\":{}}}\n\n",
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \\\"Lis\"}}\n\n",
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"bon\\\"}\"}}\n\n",
      "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":12}}\n\n",
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"}));
  server.enqueue(sse({
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":60,\"output_tokens\":1}}}\n\n",
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Lisbon has about 545,000 residents.\"}}\n\n",
      "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n",
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"}));
  auto result = run_lisbon("anthropic/claude-test@" + server.base_url(), {.anthropic_api_key = "sk-ant-test"});
  REQUIRE(result.stop_reason == agentkit::StopReason::answered);
  CHECK(result.output == "Lisbon has about 545,000 residents.");
  CHECK(result.usage.output_tokens == 21);
  auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].path == "/v1/messages");
  CHECK(requests[0].header("x-api-key") == "sk-ant-test");
  CHECK(requests[0].header("anthropic-version") == "2023-06-01");
  const Json second = Json::parse(requests[1].body);
  CHECK(second["messages"][1]["content"][0]["input"] == Json({{"city", "Lisbon"}}));
  CHECK(second["messages"][2]["content"][0] ==
        Json({{"type", "tool_result"}, {"tool_use_id", "toolu_1"}, {"content", "545000"}}));
}

TEST_CASE("provider faults end in typed errors with no tool run twice", "[loopback][faults]") {
  std::atomic<int> runs{0};
  auto counted = agentkit::tool("record").doc("Record one event in the external ledger; side-effecting.")
                     .side_effecting(true).fn([&] { return ++runs; });
  WireServer server;
  // Turn 1: the model asks for the side-effecting tool.
  server.enqueue(sse({R"(data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"record","arguments":"{}"}}]},"finish_reason":"tool_calls"}]})" "\n\ndata: [DONE]\n\n"}));
  // Turn 2: rate limited, then the stream resets after its first chunk.
  WireServer::Response limited;
  limited.status = 429;
  limited.headers = {{"retry-after-ms", "20"}, {"content-type", "application/json"}};
  limited.body = R"({"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}})";
  server.enqueue(limited);
  auto reset = sse({R"(data: {"choices":[{"index":0,"delta":{"content":"Recorded"}}]})" "\n\n", "data: never sent\n\n"});
  reset.fault = WireServer::Fault::reset_mid_stream;
  reset.fault_after_chunks = 1;
  server.enqueue(reset);
  agentkit::Agent agent("a", "openai/m@" + server.base_url(), "p", agentkit::cognition::react({counted}));
  auto ctx = agentkit::testing::make_test_ctx();
  ctx.models = agentkit::providers::model_resolver({});
  auto result = agent.run("go", ctx);
  CHECK(result.stop_reason == agentkit::StopReason::failed);
  CHECK_THAT(result.failure.value().message, Catch::Contains("model call failed"));
  CHECK(runs == 1);                          // the tool ran once; no retry re-ran it
  CHECK(server.requests().size() == 3);      // 1 + 429 + the reset stream, never retried after content began
  // The history stays valid: the tool call has its result.
  const auto& h = result.state.history;
  REQUIRE(h.size() >= 3);
  CHECK(h[2].role == agentkit::Role::tool);
}

TEST_CASE("a long run's context is summarised through the OpenAI adapter: the summary call and the compacted view on the wire",
          "[loopback][openai][context_policy]") {
  WireServer server;
  const auto reply_call = [](const std::string& id, int page) {
    return json_reply({{"choices", {{{"index", 0}, {"finish_reason", "tool_calls"},
                                     {"message", {{"role", "assistant"}, {"content", nullptr},
                                                  {"tool_calls", {{{"id", id}, {"type", "function"},
                                                                   {"function", {{"name", "read_page"},
                                                                                 {"arguments", "{\"page\":" + std::to_string(page) + "}"}}}}}}}}}}},
                       {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 5}}}});
  };
  const auto reply_text = [](const std::string& text, int prompt_tokens) {
    return json_reply({{"choices", {{{"index", 0}, {"finish_reason", "stop"},
                                     {"message", {{"role", "assistant"}, {"content", text}}}}}},
                       {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", 5}}}});
  };
  server.enqueue(reply_call("call_1", 1));
  server.enqueue(reply_call("call_2", 2));
  server.enqueue(reply_text("Page 1 lists the alpha parts.", 300));  // the summary call
  server.enqueue(reply_text("Both pages read.", 20));
  auto read_page = agentkit::tool("read_page")
                       .doc("Read one page of the parts manual by its number.")
                       .side_effecting(false)
                       .params("page")
                       .fn([](int page) {
                         return std::string(page == 1 ? "PAGE-ONE " : "PAGE-TWO ") + std::string(1000, 'x');
                       });
  agentkit::AgentOptions options;
  // ~270 estimated tokens per page read: the third call would see ~540.
  options.context_policy = agentkit::ContextPolicy{.max_tokens = 400, .summarize = true};
  agentkit::Agent agent("reader", "openai/gpt-4o-mini@" + server.base_url() + "/v1", "You read manuals.",
                        agentkit::cognition::react({read_page}), options);
  auto ctx = agentkit::testing::make_test_ctx();
  ctx.models = agentkit::providers::model_resolver({.openai_api_key = "sk-test-key", .stream = false});
  auto result = agent.run("Read pages 1 and 2.", ctx);
  REQUIRE(result.stop_reason == agentkit::StopReason::answered);
  CHECK(result.output == "Both pages read.");
  CHECK(result.usage.input_tokens == 10 + 10 + 300 + 20);  // the summary call is charged
  CHECK(result.iterations == 3);
  CHECK(result.state.window.summary == "Page 1 lists the alpha parts.");
  CHECK(result.state.window.from == 3);

  const auto requests = server.requests();
  REQUIRE(requests.size() == 4);
  const Json summary = Json::parse(requests[2].body);
  CHECK_FALSE(summary.contains("tools"));
  REQUIRE(summary["messages"].size() == 2);
  CHECK(summary["messages"][0]["content"] == agentkit::ContextPolicy{}.summary_prompt);
  const std::string transcript = summary["messages"][1].dump();
  CHECK(transcript.find("assistant called read_page {\\\"page\\\":1}") != std::string::npos);
  CHECK(transcript.find("tool read_page: PAGE-ONE") != std::string::npos);
  CHECK(transcript.find("PAGE-TWO") == std::string::npos);  // the latest turn stays in view

  const Json last = Json::parse(requests[3].body);
  const Json& messages = last["messages"];
  REQUIRE(messages.size() == 4);  // system, the task with the summary, the second call and its result
  CHECK(messages[1]["role"] == "user");
  CHECK(messages[1].dump().find("Read pages 1 and 2.") != std::string::npos);
  CHECK(messages[1].dump().find("Summary of the earlier conversation: Page 1 lists the alpha parts.") !=
        std::string::npos);
  CHECK(messages[2]["tool_calls"][0]["id"] == "call_2");
  CHECK(messages[3]["tool_call_id"] == "call_2");
  CHECK(requests[3].body.find("PAGE-ONE") == std::string::npos);
  CHECK(requests[3].body.find("PAGE-TWO") != std::string::npos);
  CHECK(last.contains("tools"));
}

TEST_CASE("a handoff through the OpenAI adapter over loopback: the next request is the target's, with the transfer in its history",
          "[loopback][openai][handoff]") {
  WireServer server;
  server.enqueue(json_reply({{"choices", {{{"index", 0}, {"finish_reason", "tool_calls"},
                                     {"message", {{"role", "assistant"}, {"content", nullptr},
                                                  {"tool_calls", {{{"id", "call_1"}, {"type", "function"},
                                                                   {"function", {{"name", "transfer_to_billing"}, {"arguments", "{}"}}}}}}}}}}},
                       {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 5}}}}));
  server.enqueue(json_reply({{"choices", {{{"index", 0}, {"finish_reason", "stop"},
                                     {"message", {{"role", "assistant"}, {"content", "Billing here: refund issued."}}}}}}}));
  const std::string model = "openai/gpt-4o-mini@" + server.base_url() + "/v1";
  auto refund_status = agentkit::tool("refund_status")
                           .doc("Report the status of a refund for a customer order by its id.")
                           .side_effecting(false)
                           .params("order_id")
                           .fn([](const std::string& id) { return "refund for " + id + " is pending"; });
  auto billing = std::make_shared<const agentkit::Agent>("billing", model, "You are billing.",
                                                         agentkit::cognition::react({refund_status}));
  agentkit::AgentOptions options;
  options.handoffs.push_back({billing, "Refunds, invoices and charges."});
  agentkit::Agent triage("triage", model, "You are triage.", agentkit::cognition::react({city_population()}), options);
  auto ctx = agentkit::testing::make_test_ctx();
  ctx.models = agentkit::providers::model_resolver({.openai_api_key = "sk-test-key", .stream = false});
  auto result = triage.run("Refund order A-1", ctx);
  REQUIRE(result.stop_reason == agentkit::StopReason::answered);
  CHECK(result.output == "Billing here: refund issued.");
  CHECK(result.agent == "billing");
  auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  const Json first = Json::parse(requests[0].body);
  REQUIRE(first["tools"].size() == 2);
  CHECK(first["tools"][1]["function"]["name"] == "transfer_to_billing");
  CHECK(first["tools"][1]["function"]["description"] == "Refunds, invoices and charges.");
  CHECK(first["messages"][0]["content"] == "You are triage.");
  const Json second = Json::parse(requests[1].body);
  CHECK(second["messages"][0] == Json({{"role", "system"}, {"content", "You are billing."}}));
  REQUIRE(second["tools"].size() == 1);
  CHECK(second["tools"][0]["function"]["name"] == "refund_status");
  REQUIRE(second["messages"].size() == 4);
  CHECK(second["messages"][2]["tool_calls"][0]["function"]["name"] == "transfer_to_billing");
  CHECK(second["messages"][3] ==
        Json({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "Transferred to billing."}}));
}

TEST_CASE("a sub-agent's approval through the OpenAI adapter over loopback: the parent suspends, the sub-run resumes",
          "[loopback][openai][nested]") {
  WireServer server;
  server.enqueue(openai_call("call_b", "billing", {{"task", "refund A-1, $20"}}));
  server.enqueue(openai_call("call_r", "refund", {{"order_id", "A-1"}, {"amount_usd", 20}}));
  server.enqueue(openai_text("Refund issued."));
  server.enqueue(openai_text("Billing issued the refund."));
  const std::string model = "openai/gpt-4o-mini@" + server.base_url() + "/v1";
  auto refunds = std::make_shared<std::atomic<int>>(0);
  auto refund = agentkit::tool("refund")
                    .doc("Issue a refund against a customer order and return the confirmation id.")
                    .side_effecting(true)
                    .requires_approval()
                    .params("order_id", "amount_usd")
                    .fn([refunds](const std::string& id, double amount) {
                      ++*refunds;
                      return "refunded " + std::to_string(static_cast<int>(amount)) + " on " + id;
                    });
  auto billing = std::make_shared<const agentkit::Agent>("billing", model, "You are billing.",
                                                         agentkit::cognition::react({refund}));
  agentkit::Agent boss("boss", model, "You delegate.",
                       agentkit::cognition::react({agentkit::as_tool(
                           billing, {.name = "billing", .description = "Billing handles refunds and invoices.", .side_effecting = true})}));
  auto ctx = agentkit::testing::make_test_ctx();
  ctx.models = agentkit::providers::model_resolver({.openai_api_key = "sk-test-key", .stream = false});
  auto suspended = boss.run("Refund order A-1", ctx);
  REQUIRE(suspended.stop_reason == agentkit::StopReason::suspended);
  REQUIRE(suspended.suspended->pending.size() == 1);
  CHECK(suspended.suspended->pending[0].id == "call_b/call_r");
  CHECK(suspended.suspended->agents[0] == "boss/billing");
  CHECK(*refunds == 0);
  CHECK(server.requests().size() == 2);

  auto resumed = boss.resume(suspended.state.run_id, {{"call_b/call_r", agentkit::Decision::approve()}}, ctx);
  REQUIRE(resumed.stop_reason == agentkit::StopReason::answered);
  CHECK(resumed.output == "Billing issued the refund.");
  CHECK(*refunds == 1);
  const auto requests = server.requests();
  REQUIRE(requests.size() == 4);
  // The sub-agent's next request carries its refund's result, under its own call id.
  const Json third = Json::parse(requests[2].body);
  CHECK(third["messages"][0]["content"] == "You are billing.");
  CHECK(third["messages"].back() ==
        Json({{"role", "tool"}, {"tool_call_id", "call_r"}, {"content", "refunded 20 on A-1"}}));
  // The parent's carries the sub-agent's answer as the billing call's result.
  const Json fourth = Json::parse(requests[3].body);
  CHECK(fourth["messages"][0]["content"] == "You delegate.");
  CHECK(fourth["messages"].back() ==
        Json({{"role", "tool"}, {"tool_call_id", "call_b"}, {"content", "Refund issued."}}));
}

TEST_CASE("guardrails through the OpenAI adapter over loopback, on a pool: a judge agent passes the task, a tool "
          "guardrail repairs a call",
          "[loopback][openai][guardrail]") {
  WireServer server;
  server.enqueue(openai_text("PASS"));  // the judge, on the task
  server.enqueue(openai_call("call_1", "refund", {{"order_id", "A-1"}, {"amount_usd", 900}}));
  server.enqueue(openai_text("Refunds over $500 go to finance."));
  const std::string model = "openai/gpt-4o-mini@" + server.base_url() + "/v1";
  auto refunds = std::make_shared<std::atomic<int>>(0);
  auto refund = agentkit::tool("refund")
                    .doc("Issue a refund against a customer order and return the confirmation id.")
                    .side_effecting(true)
                    .params("order_id", "amount_usd")
                    .fn([refunds](const std::string&, double) {
                      ++*refunds;
                      return std::string("refunded");
                    });
  auto judge = std::make_shared<const agentkit::Agent>("judge", model, "Answer PASS if the task is about orders.");
  agentkit::AgentOptions options;
  options.input_guardrails.push_back(agentkit::input_guardrail("on_topic", judge));
  options.tool_guardrails.push_back({.name = "cap", .tools = {"refund"},
                                     .before = [](const agentkit::ToolCall& c, const agentkit::RunContext&) {
                                       return c.arguments.value("amount_usd", 0.0) > 500
                                                  ? agentkit::GuardrailVerdict::repair("over $500: finance decides")
                                                  : agentkit::GuardrailVerdict::pass();
                                     }});
  agentkit::Agent support("support", model, "You handle refunds.", agentkit::cognition::react({refund}), options);
  auto ctx = agentkit::testing::make_test_ctx({.executor = std::make_shared<agentkit::ThreadPoolExecutor>(2)});
  ctx.models = agentkit::providers::model_resolver({.openai_api_key = "sk-test-key", .stream = false});
  auto result = support.run("Refund order A-1 ($900)", ctx);
  REQUIRE(result.stop_reason == agentkit::StopReason::answered);
  CHECK(result.output == "Refunds over $500 go to finance.");
  CHECK(*refunds == 0);
  const auto requests = server.requests();
  REQUIRE(requests.size() == 3);
  const Json judged = Json::parse(requests[0].body);
  CHECK(judged["messages"][0]["content"] == "Answer PASS if the task is about orders.");
  CHECK(judged["messages"][1]["content"] == "Refund order A-1 ($900)");
  const Json last = Json::parse(requests[2].body);
  CHECK(last["messages"].back() ==
        Json({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "over $500: finance decides"}}));
}

namespace {
struct Ledger {
  std::string book(const std::string& order) const { return "booked " + order; }
};
}  // namespace

TEST_CASE("an Inject<T> tool and an approval rule through the OpenAI adapter over loopback",
          "[loopback][openai][inject][approval]") {
  WireServer server;
  server.enqueue(openai_call("call_1", "book", {{"order_id", "A-1"}, {"amount_usd", 40}}));
  server.enqueue(openai_call("call_2", "book", {{"order_id", "A-2"}, {"amount_usd", 250}}));
  const std::string model = "openai/gpt-4o-mini@" + server.base_url() + "/v1";
  auto book = agentkit::tool("book")
                  .doc("Book a refund for an order in the ledger and return the booking line.")
                  .side_effecting(true)
                  .requires_approval([](const Json& args) { return args.at("amount_usd").get<double>() > 100; })
                  .params("order_id", "amount_usd")
                  .fn([](const std::string& order, double, agentkit::Inject<Ledger> ledger) { return ledger->book(order); });
  agentkit::Agent clerk("clerk", model, "You book refunds.", agentkit::cognition::react({book}));
  auto ctx = agentkit::testing::make_test_ctx();
  ctx.models = agentkit::providers::model_resolver({.openai_api_key = "sk-test-key", .stream = false});
  auto deps = std::make_shared<agentkit::Dependencies>();
  deps->provide<Ledger>(std::make_shared<Ledger>());
  ctx.dependencies = deps;
  auto result = clerk.run("Refund A-1 ($40) and A-2 ($250)", ctx);
  REQUIRE(result.stop_reason == agentkit::StopReason::suspended);  // the $250 one waits for a human
  REQUIRE(result.suspended->pending.size() == 1);
  CHECK(result.suspended->pending[0].id == "call_2");
  const auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  const Json first = Json::parse(requests[0].body);
  // The injected ledger is not a parameter the model sees.
  CHECK(first["tools"][0]["function"]["parameters"]["properties"].size() == 2);
  CHECK_FALSE(first["tools"][0]["function"]["parameters"]["properties"].contains("ledger"));
  const Json second = Json::parse(requests[1].body);
  CHECK(second["messages"].back() ==
        Json({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "booked A-1"}}));
}
