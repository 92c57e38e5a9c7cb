// 06 — switching providers with AGENTKIT_MODEL: the same agent code talks to
// any provider; the model string picks the adapter.
//
// A ReAct agent with two tools, one of which needs a human's approval: the
// run suspends before the refund, a "human" approves it, the run resumes from
// its serialised state and the agent answers.
//
// By default the model is "openai/gpt-4o-mini@<loopback URL>": the real
// OpenAI adapter and libcurl talk to a loopback server that replays scripted
// Chat Completions streams, so this runs offline with no key.
// AGENTKIT_DEMO_WIRE=anthropic, =ollama, =openai-responses or =gemini makes
// the loopback server replay that provider's wire format instead (Anthropic
// Messages events, Ollama /api/chat NDJSON, OpenAI Responses API events,
// Gemini streamGenerateContent chunks),
// through that provider's adapter. Set AGENTKIT_MODEL to
// talk to a real model, with the provider's key in OPENAI_API_KEY or
// ANTHROPIC_API_KEY (a local Ollama needs none):
//
//   ./build/examples/example_06_switch_providers                      (loopback, offline)
//   AGENTKIT_DEMO_WIRE=ollama ./build/examples/example_06_switch_providers   (loopback, Ollama's format)
//   AGENTKIT_MODEL=openai/gpt-4o-mini ./build/examples/example_06_switch_providers
//   AGENTKIT_MODEL=anthropic/claude-sonnet-4-5 ./build/examples/example_06_switch_providers
//   AGENTKIT_MODEL=ollama/llama3.1 ./build/examples/example_06_switch_providers
//   AGENTKIT_MODEL=openai-responses/gpt-5 ./build/examples/example_06_switch_providers
//   AGENTKIT_MODEL=gemini/gemini-2.5-flash ./build/examples/example_06_switch_providers
//   AGENTKIT_MODEL=openai/llama3.1@http://localhost:11434/v1 ./build/examples/example_06_switch_providers
//
// `make demo` runs this example.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/models.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/testing/wire_server.h>

namespace {

// Prints each step of the run as it happens.
class PrintSteps final : public agentkit::Observer {
 public:
  void on_event(const agentkit::Event& event) override {
    if (auto* e = std::get_if<agentkit::ModelCallFinished>(&event)) {
      std::cout << "  [model] step " << e->iteration << " (" << e->finish_reason << ")\n";
    } else if (auto* e = std::get_if<agentkit::ToolCallStarted>(&event)) {
      std::cout << "  [tool]  " << e->status << " " << e->call.arguments.dump() << "\n";
    } else if (auto* e = std::get_if<agentkit::ToolCallFinished>(&event)) {
      std::cout << "  [tool]  " << e->name << " -> " << agentkit::to_string(e->outcome)
                << (e->outcome == agentkit::CallStatus::ok ? ": " + e->text : std::string()) << "\n";
    }
  }
};

// One scripted Chat Completions stream: a tool call, or text.
agentkit::testing::WireServer::Response openai_stream(const agentkit::Json& delta, const std::string& finish) {
  agentkit::testing::WireServer::Response r;
  r.headers = {{"content-type", "text/event-stream"}};
  const agentkit::Json chunk = {{"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
  r.chunks = {"data: " + chunk.dump() + "\n\n",
              "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":90,\"completion_tokens\":20}}\n\n",
              "data: [DONE]\n\n"};
  return r;
}

// The model's turns in one provider's wire format: a tool call, or the answer.
struct Wire {
  std::string name;  // "openai", "anthropic", "ollama", "openai-responses", "gemini"

  agentkit::testing::WireServer::Response tool_call(const std::string& id, const std::string& tool,
                                                     const agentkit::Json& args) const {
    if (name == "anthropic") {
      return anthropic_stream({{"type", "tool_use"}, {"id", id}, {"name", tool}, {"input", agentkit::Json::object()}},
                              {{"type", "input_json_delta"}, {"partial_json", args.dump()}}, "tool_use");
    }
    if (name == "ollama") {
      return ollama_stream({{"role", "assistant"}, {"content", ""},
                            {"tool_calls", {{{"function", {{"name", tool}, {"arguments", args}}}}}}});
    }
    if (name == "openai-responses") {
      return responses_stream({{"type", "function_call"}, {"id", "fc_" + id}, {"call_id", id}, {"name", tool},
                               {"arguments", args.dump()}});
    }
    if (name == "gemini") return gemini_stream({{"functionCall", {{"name", tool}, {"args", args}, {"id", id}}}});
    return openai_stream({{"tool_calls", {{{"index", 0}, {"id", id}, {"type", "function"},
                                           {"function", {{"name", tool}, {"arguments", args.dump()}}}}}}},
                         "tool_calls");
  }

  agentkit::testing::WireServer::Response answer(const std::string& text) const {
    if (name == "anthropic") {
      return anthropic_stream({{"type", "text"}, {"text", ""}}, {{"type", "text_delta"}, {"text", text}}, "end_turn");
    }
    if (name == "ollama") return ollama_stream({{"role", "assistant"}, {"content", text}});
    if (name == "openai-responses") {
      return responses_stream({{"type", "message"}, {"role", "assistant"},
                               {"content", {{{"type", "output_text"}, {"text", text}}}}});
    }
    if (name == "gemini") return gemini_stream({{"text", text}});
    return openai_stream({{"content", text}}, "stop");
  }

  // The model string that reaches `server` in this format.
  std::string model(const agentkit::testing::WireServer& server) const {
    if (name == "anthropic") return "anthropic/claude-sonnet-4-5@" + server.base_url();
    if (name == "ollama") return "ollama/llama3.1@" + server.base_url();
    if (name == "openai-responses") return "openai-responses/gpt-5@" + server.base_url() + "/v1";
    if (name == "gemini") return "gemini/gemini-2.5-flash@" + server.base_url() + "/v1beta";
    return "openai/gpt-4o-mini@" + server.base_url() + "/v1";
  }

 private:
  // One Anthropic Messages stream with one content block.
  static agentkit::testing::WireServer::Response anthropic_stream(const agentkit::Json& block, const agentkit::Json& delta,
                                                                  const std::string& stop_reason) {
    const auto event = [](const std::string& type, agentkit::Json data) {
      data["type"] = type;
      return "event: " + type + "\ndata: " + data.dump() + "\n\n";
    };
    agentkit::testing::WireServer::Response r;
    r.headers = {{"content-type", "text/event-stream"}};
    r.chunks = {event("message_start", {{"message", {{"usage", {{"input_tokens", 90}}}}}}),
                event("content_block_start", {{"index", 0}, {"content_block", block}}),
                event("content_block_delta", {{"index", 0}, {"delta", delta}}),
                event("content_block_stop", {{"index", 0}}),
                event("message_delta", {{"delta", {{"stop_reason", stop_reason}}}, {"usage", {{"output_tokens", 20}}}}),
                event("message_stop", {})};
    return r;
  }

  // One Ollama /api/chat stream: the message, then the done line.
  static agentkit::testing::WireServer::Response ollama_stream(const agentkit::Json& message) {
    agentkit::testing::WireServer::Response r;
    r.headers = {{"content-type", "application/x-ndjson"}};
    r.chunks = {agentkit::Json{{"message", message}, {"done", false}}.dump() + "\n",
                agentkit::Json{{"message", {{"role", "assistant"}, {"content", ""}}},
                               {"done", true},
                               {"done_reason", "stop"},
                               {"prompt_eval_count", 90},
                               {"eval_count", 20}}
                        .dump() +
                    "\n"};
    return r;
  }

  // One Responses API stream with one output item: added, done, then
  // response.completed carrying the whole response (no [DONE]).
  static agentkit::testing::WireServer::Response responses_stream(const agentkit::Json& item) {
    const auto event = [](const std::string& type, agentkit::Json data) {
      data["type"] = type;
      return "event: " + type + "\ndata: " + data.dump() + "\n\n";
    };
    agentkit::testing::WireServer::Response r;
    r.headers = {{"content-type", "text/event-stream"}};
    r.chunks = {event("response.output_item.added", {{"output_index", 0}, {"item", item}}),
                event("response.output_item.done", {{"output_index", 0}, {"item", item}}),
                event("response.completed", {{"response", {{"status", "completed"},
                                                           {"output", agentkit::Json::array({item})},
                                                           {"usage", {{"input_tokens", 90}, {"output_tokens", 20}}}}}})};
    return r;
  }

  // One Gemini streamGenerateContent?alt=sse stream: the part, then the
  // chunk with the finishReason (data-only events, CRLF, no [DONE]).
  static agentkit::testing::WireServer::Response gemini_stream(const agentkit::Json& part) {
    const auto chunk = [](agentkit::Json parts, const char* finish) {
      agentkit::Json candidate = {{"content", {{"role", "model"}, {"parts", std::move(parts)}}}, {"index", 0}};
      if (finish) candidate["finishReason"] = finish;
      const agentkit::Json data = {{"candidates", agentkit::Json::array({candidate})},
                                   {"usageMetadata", {{"promptTokenCount", 90}, {"candidatesTokenCount", 20}}}};
      return "data: " + data.dump() + "\r\n\r\n";
    };
    agentkit::testing::WireServer::Response r;
    r.headers = {{"content-type", "text/event-stream"}};
    r.chunks = {chunk(agentkit::Json::array({part}), nullptr),
                chunk(agentkit::Json::array({{{"text", ""}}}), "STOP")};
    return r;
  }
};

}  // namespace

int main() {
  auto lookup_order = agentkit::tool("lookup_order")
                          .doc("Look up a customer order: its status and the amount paid in USD.")
                          .side_effecting(false)
                          .idempotent()
                          .status("Looking up the order")
                          .params("order_id")
                          .fn([](const std::string& id) { return id + ": delivered damaged, paid $20.00"; });

  auto refund = agentkit::tool("refund")
                    .doc("Issue a refund against a customer order and return the confirmation id.")
                    .side_effecting(true)
                    .requires_approval()
                    .status("Issuing a refund")
                    .params("order_id", "amount_usd")
                    .fn([](const std::string& id, double amount) {
                      char buf[96];
                      std::snprintf(buf, sizeof buf, "refund RF-1001 issued: $%.2f on %s", amount, id.c_str());
                      return std::string(buf);
                    });

  // The loopback server plays the model's three turns in the chosen wire format.
  const char* wire_name = std::getenv("AGENTKIT_DEMO_WIRE");
  const Wire wire{wire_name && *wire_name ? wire_name : "openai"};
  if (wire.name != "openai" && wire.name != "anthropic" && wire.name != "ollama" && wire.name != "openai-responses" &&
      wire.name != "gemini") {
    std::cerr << "AGENTKIT_DEMO_WIRE must be openai, anthropic, ollama, openai-responses or gemini\n";
    return 2;
  }
  agentkit::testing::WireServer server;
  server.enqueue(wire.tool_call("c1", "lookup_order", {{"order_id", "A-1"}}));
  server.enqueue(wire.tool_call("c2", "refund", {{"order_id", "A-1"}, {"amount_usd", 20.0}}));
  server.enqueue(wire.answer("Order A-1 arrived damaged, so I refunded the $20.00 you paid (confirmation RF-1001)."));
  const char* chosen = std::getenv("AGENTKIT_MODEL");
  const std::string model = chosen && *chosen ? chosen : wire.model(server);
  std::cout << "model: " << model << "\n";

  agentkit::Agent agent("billing", model, "You handle refunds for damaged orders. Look the order up first.",
                        agentkit::cognition::react({lookup_order, refund}));
  auto ctx = agentkit::testing::make_test_ctx({.observer = std::make_shared<PrintSteps>()});
  ctx.models = agentkit::providers::model_resolver(agentkit::providers::settings_from_environment());

  std::cout << "task: My order A-1 arrived damaged, can I get my money back?\n";
  auto result = agent.run("My order A-1 arrived damaged, can I get my money back?", ctx);
  std::cout << "stop: " << to_string(result.stop_reason) << "\n";
  if (result.suspended) {
    for (const auto& call : result.suspended->pending) {
      std::cout << "approval needed: " << call.name << " " << call.arguments.dump() << " -> approved\n";
    }
    // The suspended state is plain JSON. resume() checks it against the run's
    // checkpoint in ctx.store (without a store, ctx.state_key signs it).
    const std::string saved = result.state.to_json().dump();
    auto state = agentkit::RunState::from_json(agentkit::Json::parse(saved));
    result = agent.resume(std::move(state), {{result.suspended->pending[0].id, agentkit::Decision::approve()}}, ctx);
    std::cout << "stop: " << to_string(result.stop_reason) << "\n";
  }
  if (result.failure) std::cout << "error [" << agentkit::to_string(result.failure->code) << "]: " << result.failure->message << "\n";
  std::cout << "answer: " << result.output << "\n";
  return result.stop_reason == agentkit::StopReason::answered ? 0 : 1;
}
