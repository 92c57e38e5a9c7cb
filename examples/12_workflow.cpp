// 12 — workflows: a three-node workflow. The desk, a router (here picking by
// a host function), hands the customer's message to the billing or the tech
// agent, which drafts a reply; an editor then polishes it. A workflow is an
// Agent like any other: each node runs as a durable sub-run of the
// workflow's run, and the workflow could itself be a node of another, or a
// tool of another agent (as_tool).
//
// Every model is a FakeLLM script, so this runs offline.
// Run: ./build/examples/example_12_workflow
#include <iostream>
#include <memory>
#include <string>

#include <agentkit/agent.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/workflow.h>

namespace {

using agentkit::testing::FakeLLM;
using agentkit::testing::Turn;

std::shared_ptr<const agentkit::Agent> agent(const std::string& name, const std::string& prompt) {
  return std::make_shared<const agentkit::Agent>(name, "fake/" + name, prompt);
}

}  // namespace

int main() {
  auto billing = agent("billing", "You answer billing questions: invoices, refunds, payment methods.");
  auto tech = agent("tech", "You answer technical questions: bugs, outages, error messages.");
  auto editor = agent("editor", "You make a support reply short, warm and clear.");

  // Node 1: a router, by a host function (agentkit::model_router lets a model pick).
  auto desk = std::make_shared<const agentkit::Agent>(agentkit::router(
      "desk", {{billing, "invoices, refunds and payment methods"}, {tech, "bugs, outages and error messages"}},
      [](const std::string& task, const agentkit::RunContext&) {
        return task.find("charged") != std::string::npos ? "billing" : "tech";
      }));
  // The workflow: the desk's answer goes to the editor, with the question.
  agentkit::Agent support = agentkit::sequence(
      "support", {desk, editor}, [](const std::string& task, const std::string& draft) {
        return "Customer wrote: " + task + "\nDraft reply: " + draft;
      });

  auto billing_llm = FakeLLM::script({Turn{.content = "A duplicate charge is refunded within 5 business days."}});
  auto tech_llm = FakeLLM::script({});
  auto editor_llm = FakeLLM::script({Turn{.content = "Sorry about the double charge! We have refunded it; "
                                                     "you will see it within 5 business days."}});
  auto ctx = agentkit::testing::make_test_ctx();  // with an in-memory store: every run is durable
  ctx.models = [&](std::string_view name) -> std::shared_ptr<agentkit::Model> {
    if (name == "fake/billing") return billing_llm;
    if (name == "fake/tech") return tech_llm;
    return editor_llm;
  };

  auto result = support.run("I was charged twice for order A-1.", ctx, {.run_id = "support-1"});
  std::cout << "workflow: " << to_string(result.stop_reason) << "\n";
  if (auto record = agentkit::workflow_result(result)) {
    for (const std::string node : {"desk", "editor"}) {
      std::cout << "  " << node << " -> " << record->outputs[node] << "\n";
    }
  }
  // The desk is a workflow too: its record is in its own (durable) sub-run.
  if (auto desk_run = agentkit::load_run(*ctx.store, ctx.scope, "support-1/0/desk")) {
    std::cout << "  desk's sub-run " << desk_run->run_id << ": " << to_string(desk_run->stop_reason)
              << ", routed to " << desk_run->history.at(1).tool_calls.at(0).name << "\n";
  }
  std::cout << "model calls: billing " << billing_llm->calls() << ", tech " << tech_llm->calls() << ", editor "
            << editor_llm->calls() << "\n";
  std::cout << "answer: " << result.output << "\n";
  return result.stop_reason == agentkit::StopReason::answered ? 0 : 1;
}
