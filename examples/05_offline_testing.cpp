// 05 — testing an agent offline: a Catch2 test file to copy into your project.
//
// FakeLLM plays the model's turns and records what the model was shown;
// make_test_ctx gives a ready context; your own backend is a trompeloeil mock,
// so each test says exactly which calls the agent may make. No network, no key.
//
// Link it with agentkit::agentkit, agentkit::testing, Catch2 and trompeloeil.
// Run: ./build/examples/example_05_offline_testing
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <catch2/trompeloeil.hpp>

#include <memory>
#include <string>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

// ---- The code under test: a billing agent over your payments backend.

class Payments {
 public:
  virtual ~Payments() = default;
  virtual double amount_paid(const std::string& order_id) = 0;
  virtual std::string refund(const std::string& order_id, double amount_usd) = 0;
};

agentkit::Agent billing_agent(std::shared_ptr<Payments> payments) {
  auto paid = agentkit::tool("amount_paid")
                  .doc("Return the amount in USD the customer paid for an order.")
                  .side_effecting(false)
                  .params("order_id")
                  .fn([payments](const std::string& id) { return payments->amount_paid(id); });
  auto refund = agentkit::tool("refund")
                    .doc("Refund an amount in USD on an order and return the confirmation id.")
                    .side_effecting(true)
                    .requires_approval()
                    .params("order_id", "amount_usd")
                    .fn([payments](const std::string& id, double amount) { return payments->refund(id, amount); });
  return agentkit::Agent("billing", "fake", "You handle refunds.", agentkit::cognition::react({paid, refund}));
}

// ---- The tests.

namespace {

using agentkit::StopReason;
using agentkit::testing::FakeLLM;
using agentkit::testing::Turn;
using trompeloeil::_;

class MockPayments : public Payments {
 public:
  MAKE_MOCK1(amount_paid, double(const std::string&), override);
  MAKE_MOCK2(refund, std::string(const std::string&, double), override);
};

agentkit::ToolCall call(std::string id, std::string name, agentkit::Json args) {
  return {std::move(id), std::move(name), std::move(args), {}};
}

}  // namespace

TEST_CASE("the agent looks the amount up and answers with it") {
  auto payments = std::make_shared<MockPayments>();
  REQUIRE_CALL(*payments, amount_paid("A-1")).RETURN(20.0);
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "amount_paid", {{"order_id", "A-1"}})}},
      Turn{.content = "You paid $20.00 for order A-1."},
  });
  auto ctx = agentkit::testing::make_test_ctx({.llm = llm});

  auto result = billing_agent(payments).run("How much did I pay for A-1?", ctx);

  CHECK(result.stop_reason == StopReason::answered);
  CHECK(result.output == "You paid $20.00 for order A-1.");
  const auto requests = llm->requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].tools == std::vector<std::string>{"amount_paid", "refund"});
  // The model's second turn saw the tool's result.
  CHECK(requests[1].messages.back().tool_name == "amount_paid");
  CHECK(requests[1].messages.back().text() == "20.0");
}

TEST_CASE("a refund waits for approval and runs once approved") {
  auto payments = std::make_shared<MockPayments>();
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "refund", {{"order_id", "A-1"}, {"amount_usd", 20.0}})}},
      Turn{.content = "Refunded $20.00 (RF-1)."},
  });
  auto ctx = agentkit::testing::make_test_ctx({.llm = llm});
  const auto agent = billing_agent(payments);

  agentkit::RunResult result;
  {
    FORBID_CALL(*payments, refund(_, _));
    result = agent.run("Refund A-1 please.", ctx);
  }
  REQUIRE(result.stop_reason == StopReason::suspended);
  REQUIRE(result.suspended->pending.size() == 1);
  CHECK(result.suspended->pending[0].name == "refund");

  REQUIRE_CALL(*payments, refund("A-1", 20.0)).RETURN("RF-1");
  result = agent.resume(std::move(result.state), {{"c1", agentkit::Decision::approve()}}, ctx);
  CHECK(result.stop_reason == StopReason::answered);
  CHECK(result.output == "Refunded $20.00 (RF-1).");
}

TEST_CASE("a rejected refund never reaches the backend; the model is told why") {
  auto payments = std::make_shared<MockPayments>();
  FORBID_CALL(*payments, refund(_, _));
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "refund", {{"order_id", "A-1"}, {"amount_usd", 500.0}})}},
      Turn{.content = "I cannot refund more than you paid."},
  });
  auto ctx = agentkit::testing::make_test_ctx({.llm = llm});
  const auto agent = billing_agent(payments);

  auto result = agent.run("Refund $500 on A-1.", ctx);
  REQUIRE(result.stop_reason == StopReason::suspended);
  result = agent.resume(std::move(result.state), {{"c1", agentkit::Decision::reject("more than was paid")}}, ctx);

  CHECK(result.stop_reason == StopReason::answered);
  const auto requests = llm->requests();  // a copy: hold it while you look inside
  const auto& seen = requests.back().messages.back();
  CHECK(seen.is_error);
  CHECK_THAT(seen.text(), Catch::Contains("more than was paid"));
}

TEST_CASE("a bad argument is sent back to the model to repair, not to the backend") {
  auto payments = std::make_shared<MockPayments>();
  REQUIRE_CALL(*payments, amount_paid("A-1")).RETURN(20.0);  // only the repaired call
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "amount_paid", {{"order", "A-1"}})}},
      Turn{.tool_calls = {call("c2", "amount_paid", {{"order_id", "A-1"}})}},
      Turn{.content = "You paid $20.00."},
  });
  auto ctx = agentkit::testing::make_test_ctx({.llm = llm});

  auto result = billing_agent(payments).run("What did I pay for A-1?", ctx);

  CHECK(result.stop_reason == StopReason::answered);
  const auto requests = llm->requests();
  const auto& repair = requests[1].messages.back();
  CHECK(repair.is_error);
  CHECK_THAT(repair.text(), Catch::Contains("order_id"));
}
