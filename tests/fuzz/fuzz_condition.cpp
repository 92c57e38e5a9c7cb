// approve_if conditions: any text ends in a ConditionSyntaxError (whose
// column lies in the text, or one past it) or a Condition that evaluates
// against fixed arguments to a boolean or a ConditionError, the same answer
// every time and from a copy. Nothing else escapes, and nothing crashes or
// recurses without bound.
//
// Input: the condition's text.
#include <cstdint>
#include <optional>
#include <string>

#include <agentkit/condition.h>

#include "fuzz_support.h"

namespace {

const agentkit::Json& arguments() {
  static const agentkit::Json args = agentkit::Json::parse(R"({
    "amount_usd": 150, "ratio": 2.5, "count": -3, "big": 18446744073709551615,
    "currency": "EUR", "name": "it's \"q\"", "flag": true, "off": false, "note": null,
    "items": [{"price": 5, "sku": "A-1"}, {"price": 250.75}, [1, [2, [3]]]],
    "order": {"customer": {"verified": false, "tier": "gold"}, "tags": ["x", "y"], "empty": {}},
    "same": [1, {"k": [1, 2]}], "also": [1.0, {"k": [1, 2.0]}]
  })");
  return args;
}

// The condition's value, or nullopt when it throws ConditionError.
std::optional<bool> decide(const agentkit::Condition& condition) {
  try {
    return condition.evaluate(arguments());
  } catch (const agentkit::ConditionError& e) {
    AGENTKIT_FUZZ_CHECK(e.code() == agentkit::ErrorCode::invalid_argument);
    AGENTKIT_FUZZ_CHECK(std::string(e.what()).rfind("approve_if: ", 0) == 0);
    return std::nullopt;
  } catch (const std::exception& e) {
    agentkit::fuzz::untyped(e);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = agentkit::fuzz::as_text(data, size);
  std::optional<agentkit::Condition> condition;
  try {
    condition = agentkit::Condition::parse(text);
  } catch (const agentkit::ConditionSyntaxError& e) {
    AGENTKIT_FUZZ_CHECK(e.column() >= 1 && e.column() <= text.size() + 1);
    AGENTKIT_FUZZ_CHECK(e.code() == agentkit::ErrorCode::invalid_argument);
    return 0;
  } catch (const std::exception& e) {
    agentkit::fuzz::untyped(e);
  }
  AGENTKIT_FUZZ_CHECK(text.size() <= 1024);
  AGENTKIT_FUZZ_CHECK(condition->text() == text);

  const std::optional<bool> first = decide(*condition);
  // Evaluation is deterministic, and a copy shares the same tree.
  const agentkit::Condition copy = *condition;
  AGENTKIT_FUZZ_CHECK(decide(copy) == first);
  // Parsing is deterministic too.
  AGENTKIT_FUZZ_CHECK(decide(agentkit::Condition::parse(text)) == first);
  // `not (c)` decides exactly when c does, to the opposite answer. Skipped
  // where the added nesting or tokens would pass a limit.
  const std::string negated = "not (" + std::string(text) + "\n)";
  try {
    const std::optional<bool> opposite = decide(agentkit::Condition::parse(negated));
    AGENTKIT_FUZZ_CHECK(opposite.has_value() == first.has_value());
    if (first) AGENTKIT_FUZZ_CHECK(*opposite == !*first);
  } catch (const agentkit::ConditionSyntaxError& e) {
    AGENTKIT_FUZZ_CHECK(std::string(e.what()).find("more than") != std::string::npos);
  } catch (const std::exception& e) {
    agentkit::fuzz::untyped(e);
  }
  return 0;
}
