// 06 — switching providers with AGENTKIT_MODEL: the same agent code talks to
// any provider; the model string picks the adapter.
//
// A ReAct agent with two tools, one of which needs a human's approval: the
// run suspends before the refund, a "human" approves it, the run resumes from
// its serialised state and the agent answers.
//
// By default the model is "openai/gpt-4o-mini@<loopback URL>": the real
// OpenAI adapter and libcurl talk to a loopback server that replays scripted
// Chat Completions streams, so this runs offline with no key. Set
// AGENTKIT_MODEL to switch, with the provider's key in OPENAI_API_KEY or
// ANTHROPIC_API_KEY:
//
//   ./build/examples/example_06_switch_providers                      (loopback, offline)
//   AGENTKIT_MODEL=openai/gpt-4o-mini ./build/examples/example_06_switch_providers
//   AGENTKIT_MODEL=anthropic/claude-sonnet-4-5 ./build/examples/example_06_switch_providers
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

agentkit::testing::WireServer::Response tool_call(const std::string& id, const std::string& name, const agentkit::Json& args) {
  return openai_stream({{"tool_calls", {{{"index", 0}, {"id", id}, {"type", "function"},
                                         {"function", {{"name", name}, {"arguments", args.dump()}}}}}}},
                       "tool_calls");
}

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

  // The loopback server plays the model's three turns in the OpenAI wire format.
  agentkit::testing::WireServer server;
  server.enqueue(tool_call("c1", "lookup_order", {{"order_id", "A-1"}}));
  server.enqueue(tool_call("c2", "refund", {{"order_id", "A-1"}, {"amount_usd", 20.0}}));
  server.enqueue(openai_stream(
      {{"content", "Order A-1 arrived damaged, so I refunded the $20.00 you paid (confirmation RF-1001)."}}, "stop"));
  const char* chosen = std::getenv("AGENTKIT_MODEL");
  const std::string model = chosen && *chosen ? chosen : "openai/gpt-4o-mini@" + server.base_url() + "/v1";
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
