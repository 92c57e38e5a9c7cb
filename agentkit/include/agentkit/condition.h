#pragma once
// A small, safe expression language for per-call approval rules: a tool's
// `approve_if: "amount_usd > 100"` says "this call needs a human's approval
// when the expression is true over the call's JSON arguments". A Condition is
// parsed once, when the rule is loaded (ConditionSyntaxError then), and
// evaluated against each call's arguments. Evaluation never guesses: when the
// arguments cannot decide the expression (a missing path, a comparison
// between incompatible types) it throws ConditionError, whose message names
// the path and says why, and the caller asks for approval (fails closed).
//
// Grammar (keywords are lower case; whitespace separates tokens):
//   expr    := or
//   or      := and ("or" and)*
//   and     := not ("and" not)*
//   not     := "not" not | cmp
//   cmp     := operand (("==" | "!=" | "<" | "<=" | ">" | ">=") operand)?
//            | operand "in" list
//   operand := path | number | string | "true" | "false" | "null" | "(" expr ")"
//   path    := identifier ("." identifier | "[" integer "]")*
//   list    := "[" (literal ("," literal)*)? "]"
//   literal := number | string | "true" | "false" | "null"
// identifier: [A-Za-z_][A-Za-z0-9_]*, not one of the keywords and, or, not,
// in, true, false, null. number: -?digits(.digits)?([eE][+-]?digits)?.
// string: '...' or "...", with the escapes \\ \' \" only. integer: digits.
// Comparisons do not chain (`a < b < c` is a syntax error). Keys that are
// not identifiers ("unit-price", "not") cannot be named in a path.
//
// Semantics:
// - A path names a value in the arguments: `order.items[0].price` is
//   arguments["order"]["items"][0]["price"]. A path that is not there
//   (absent key, index past the end, a step into a non-object/non-array) is
//   a ConditionError wherever it appears, `==` and `!=` included.
// - Numbers compare as doubles, so an integer and a float compare by value
//   (3 == 3.0). Strings compare bytewise, with == != < <= > >=.
// - Booleans, null, arrays and objects take only == and !=; ordering them,
//   or ordering a number against a string, is a ConditionError.
// - `==` between values of different types is false, `!=` true, not an
//   error. Arrays and objects are equal when their elements are (values
//   nested more than 64 deep cannot be compared: ConditionError).
// - `x in [l1, l2, ...]` is true when x == some li.
// - An operand used as a condition (alone, beside and/or, after not) must be
//   a JSON boolean: a path to anything else is a ConditionError; a literal
//   that is not true or false is a ConditionSyntaxError.
// - `and` and `or` evaluate left to right and stop once decided, so
//   `dry_run or amount > 100` does not look at amount when dry_run is true.
//   A missing path still errors where it is evaluated: in
//   `x != null and x > 3`, an absent x is a ConditionError, while x: null
//   gives false without evaluating `x > 3`.
//
// Limits, for rules from untrusted places: text at most 1024 bytes, at most
// 256 tokens, nesting (parentheses and `not`) at most 32 deep; past any of
// them, ConditionSyntaxError. Parsing and evaluation are bounded in time and
// stack on any input and throw only these two types (and std::bad_alloc).
//
// Example:
//   auto rule = agentkit::Condition::parse(
//       "amount_usd > 100 or (currency in ['BTC', 'ETH'] and not customer.verified)");
//   bool ask;
//   try {
//     ask = rule.evaluate(call.arguments);  // {"amount_usd": 250, ...} -> true
//   } catch (const agentkit::ConditionError& e) {
//     ask = true;  // undecidable: "approve_if: amount_usd is missing from the arguments"
//   }
//   agentkit::Condition::parse("amount_usd >");
//     // throws ConditionSyntaxError: "approve_if: at column 13: expected a value after '>'"
//   agentkit::Condition::parse("status = 'open'");
//     // throws ConditionSyntaxError: "approve_if: at column 8: unexpected '='; did you mean '=='?"
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <agentkit/json.h>

namespace agentkit {

class RunContext;

namespace detail {
struct ConditionNode;  // the parsed tree; defined in condition.cpp
}  // namespace detail

// A condition's text that is not in the grammar, or past a limit. The
// message reads "approve_if: at column 12: expected a value after '>'";
// column() is that 1-based byte column (one past the end when the text
// ended too early). Code invalid_argument.
class ConditionSyntaxError : public Error {
 public:
  ConditionSyntaxError(std::size_t column, const std::string& message)
      : Error(ErrorCode::invalid_argument, message), column_(column) {}
  std::size_t column() const noexcept { return column_; }

 private:
  std::size_t column_;
};

// Arguments that cannot decide a condition: a missing path, incompatible
// types, a non-boolean used as a condition. The message names the path and
// the value found ("approve_if: amount_usd is missing from the arguments").
// Code invalid_argument.
class ConditionError : public Error {
 public:
  explicit ConditionError(const std::string& message) : Error(ErrorCode::invalid_argument, message) {}
};

// A parsed condition. Immutable and cheap to copy (copies share the tree);
// evaluate() may run on many threads at once.
class Condition {
 public:
  // Parses `text`, or throws ConditionSyntaxError.
  static Condition parse(std::string_view text);

  // The condition's value over a call's arguments (a JSON object). Throws
  // ConditionError when the arguments cannot decide it.
  bool evaluate(const Json& arguments) const;

  // The condition as an approval rule (an ApprovalPredicate, <agentkit/tool.h>:
  // ToolSpec::approval_when, with_approval): a call needs a human when it
  // holds. A throw from evaluate() means approval is required (fail closed).
  std::function<bool(const Json& arguments, const RunContext& ctx)> approval_rule() const;

  // The text it was parsed from.
  const std::string& text() const noexcept { return text_; }

 private:
  using Node = detail::ConditionNode;
  Condition(std::string text, std::shared_ptr<const Node> root) : text_(std::move(text)), root_(std::move(root)) {}

  std::string text_;
  std::shared_ptr<const Node> root_;
};

}  // namespace agentkit
