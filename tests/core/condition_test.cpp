// The approve_if expression language: Condition::parse and
// Condition::evaluate over a call's JSON arguments, their errors (with the
// column or the path) and their limits on hostile input.
#include <catch2/catch.hpp>

#include <cstddef>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <agentkit/condition.h>

using agentkit::Condition;
using agentkit::ConditionError;
using agentkit::ConditionSyntaxError;
using agentkit::ErrorCode;
using agentkit::Json;
using Catch::Matchers::Contains;

namespace {

bool eval(std::string_view text, const Json& arguments) { return Condition::parse(text).evaluate(arguments); }

struct SyntaxFailure {
  std::size_t column = 0;  // 0: it parsed
  std::string message = "it parsed";
};

// What parsing `text` complains about.
SyntaxFailure syntax_failure(std::string_view text) {
  try {
    Condition::parse(text);
  } catch (const ConditionSyntaxError& e) {
    return {e.column(), e.what()};
  }
  return {};
}

// The ConditionError message evaluating `text` over `arguments` gives, or
// "true"/"false" when it decides.
std::string eval_failure(std::string_view text, const Json& arguments) {
  const Condition condition = Condition::parse(text);
  try {
    return condition.evaluate(arguments) ? "true" : "false";
  } catch (const ConditionError& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    return e.what();
  }
}

std::string repeat(std::string_view piece, std::size_t times) {
  std::string out;
  for (std::size_t i = 0; i < times; ++i) out += piece;
  return out;
}

}  // namespace

TEST_CASE("each comparison operator orders numbers", "[condition]") {
  const Json args = {{"amount_usd", 150}};
  CHECK(eval("amount_usd > 100", args));
  CHECK_FALSE(eval("amount_usd > 150", args));
  CHECK(eval("amount_usd >= 150", args));
  CHECK_FALSE(eval("amount_usd >= 151", args));
  CHECK(eval("amount_usd < 151", args));
  CHECK_FALSE(eval("amount_usd < 150", args));
  CHECK(eval("amount_usd <= 150", args));
  CHECK_FALSE(eval("amount_usd <= 149", args));
  CHECK(eval("amount_usd == 150", args));
  CHECK_FALSE(eval("amount_usd == 151", args));
  CHECK(eval("amount_usd != 151", args));
  CHECK_FALSE(eval("amount_usd != 150", args));
  // Literal on the left, no spaces, negative numbers and exponents.
  CHECK(eval("100<amount_usd", args));
  CHECK(eval("amount_usd > -1", args));
  CHECK(eval("amount_usd == 1.5e2", args));
  CHECK(eval("amount_usd < 1E3", args));
}

TEST_CASE("integers and floats compare by value", "[condition]") {
  const Json args = {{"count", 3}, {"ratio", 2.5}, {"whole", 3.0}, {"big", 18446744073709551615ull}, {"neg", -7}};
  CHECK(eval("count == 3.0", args));
  CHECK(eval("whole == 3", args));
  CHECK(eval("count == whole", args));
  CHECK(eval("ratio > 2", args));
  CHECK(eval("ratio < count", args));
  CHECK(eval("big > 1e19", args));
  CHECK(eval("neg < -6.5", args));
  CHECK_FALSE(eval("ratio == 2", args));
}

TEST_CASE("strings compare bytewise", "[condition]") {
  const Json args = {{"currency", "EUR"}, {"word", "\xc3\xa9t\xc3\xa9"}, {"quote", "it's \"x\" \\ y"}};
  CHECK(eval("currency == 'EUR'", args));
  CHECK(eval("currency == \"EUR\"", args));
  CHECK_FALSE(eval("currency == 'eur'", args));
  CHECK(eval("currency != 'USD'", args));
  CHECK(eval("currency < 'USD'", args));
  CHECK(eval("currency > 'ABC'", args));
  CHECK(eval("currency <= 'EUR' and currency >= 'EUR'", args));
  CHECK(eval("'B' < 'a'", args));         // by byte, not by locale
  CHECK(eval("word > 'zzz'", args));      // 0xc3 orders after ASCII: unsigned bytes
  CHECK(eval("'' < currency", args));
  CHECK(eval("quote == 'it\\'s \"x\" \\\\ y'", args));
  CHECK(eval("quote == \"it's \\\"x\\\" \\\\ y\"", args));
}

TEST_CASE("== between different types is false and != is true", "[condition]") {
  const Json args = {{"n", 3}, {"s", "3"}, {"flag", true}, {"none", nullptr}, {"list", {1, 2}}, {"obj", {{"a", 1}}}};
  CHECK_FALSE(eval("n == '3'", args));
  CHECK(eval("n != '3'", args));
  CHECK_FALSE(eval("s == 3", args));
  CHECK_FALSE(eval("flag == 1", args));
  CHECK_FALSE(eval("none == 0", args));
  CHECK_FALSE(eval("none == false", args));
  CHECK_FALSE(eval("list == null", args));
  CHECK(eval("obj != null", args));
  CHECK_FALSE(eval("list == obj", args));
}

TEST_CASE("booleans and null compare with == and !=", "[condition]") {
  const Json args = {{"flag", true}, {"off", false}, {"note", nullptr}, {"name", "x"}};
  CHECK(eval("flag == true", args));
  CHECK_FALSE(eval("flag == false", args));
  CHECK(eval("off != true", args));
  CHECK(eval("note == null", args));
  CHECK_FALSE(eval("note != null", args));
  CHECK(eval("name != null", args));
  CHECK(eval("flag", args));
  CHECK_FALSE(eval("off", args));
  CHECK(eval("true", args));
  CHECK_FALSE(eval("false", args));
}

TEST_CASE("arrays and objects are equal element by element", "[condition]") {
  const Json args = {{"a", {1, 2.0, "x"}},       {"b", {1.0, 2, "x"}},        {"c", {1, 2}},
                     {"p", {{"k", {1, 2}}}},     {"q", {{"k", {1.0, 2}}}},    {"r", {{"j", {1, 2}}}}};
  CHECK(eval("a == b", args));
  CHECK_FALSE(eval("a == c", args));
  CHECK(eval("a != c", args));
  CHECK(eval("p == q", args));
  CHECK_FALSE(eval("p == r", args));
}

TEST_CASE("values nested too deep to compare are an error, not a crash", "[condition]") {
  Json deep = 1;
  for (int i = 0; i < 200; ++i) deep = Json::array({std::move(deep)});
  const Json args = {{"x", deep}, {"y", deep}};
  CHECK_THAT(eval_failure("x == y", args), Contains("nested more than 64 deep"));
  CHECK(eval("x != null", args));  // a type mismatch decides without descending
}

TEST_CASE("and binds tighter than or", "[condition]") {
  const Json args = {{"t", true}, {"f", false}};
  // t or (f and f): true; (t or f) and f would be false.
  CHECK(eval("t or f and f", args));
  // (f and f) or t: true; f and (f or t) would be false.
  CHECK(eval("f and f or t", args));
  CHECK_FALSE(eval("f or t and f", args));
  CHECK(eval("f or f or t", args));
  CHECK_FALSE(eval("t and t and f", args));
  // Comparisons bind tighter than both.
  CHECK(eval("1 < 2 and 3 > 2 or 1 == 2", args));
}

TEST_CASE("parentheses group", "[condition]") {
  const Json args = {{"t", true}, {"f", false}, {"amount", 7}};
  CHECK_FALSE(eval("(t or f) and f", args));
  CHECK(eval("f and (f or t) or t", args));
  CHECK_FALSE(eval("f and ((f or t) or t)", args));
  CHECK(eval("(amount) > 5", args));  // a parenthesised path is still the path
  CHECK(eval("((t))", args));
  CHECK(eval("(amount > 5) == true", args));
  CHECK(eval("(amount > 5) != (amount > 9)", args));
}

TEST_CASE("not negates and binds tighter than and", "[condition]") {
  const Json args = {{"t", true}, {"f", false}, {"amount", 50}};
  CHECK(eval("not f", args));
  CHECK_FALSE(eval("not t", args));
  CHECK(eval("not not t", args));
  CHECK(eval("not amount > 100", args));  // not (amount > 100)
  // (not f) and f: false; not (f and f) would be true.
  CHECK_FALSE(eval("not f and f", args));
  CHECK(eval("not (f and f)", args));
  CHECK(eval("not amount in [1, 2]", args));
}

TEST_CASE("and and or stop once decided, left to right", "[condition]") {
  const Json args = {{"dry_run", true}, {"live", false}};
  CHECK(eval("dry_run or missing > 1", args));
  CHECK_FALSE(eval("live and missing > 1", args));
  CHECK_THAT(eval_failure("live or missing > 1", args), Contains("missing is missing from the arguments"));
  CHECK_THAT(eval_failure("dry_run and missing > 1", args), Contains("missing is missing from the arguments"));
  // The left side is evaluated first even when the right would decide.
  CHECK_THAT(eval_failure("missing > 1 or dry_run", args), Contains("missing is missing"));
}

TEST_CASE("in is true when the value equals one of the literals", "[condition]") {
  const Json args = {{"currency", "BTC"}, {"n", 2}, {"none", nullptr}, {"flag", false}, {"list", {1}}};
  CHECK(eval("currency in ['BTC', \"ETH\"]", args));
  CHECK_FALSE(eval("currency in ['btc', 'ETH']", args));
  CHECK(eval("n in [1, 2.0, 3]", args));
  CHECK_FALSE(eval("n in ['2']", args));
  CHECK(eval("none in [0, null]", args));
  CHECK(eval("flag in [false]", args));
  CHECK_FALSE(eval("currency in []", args));
  CHECK_FALSE(eval("list in [1]", args));
  CHECK(eval("not currency in ['USD']", args));
  CHECK(eval("(n > 1) in [true]", args));
  CHECK_THAT(eval_failure("absent in [1]", args), Contains("absent is missing from the arguments"));
}

TEST_CASE("paths reach nested keys and array elements", "[condition]") {
  const Json args = {
      {"order", {{"items", {{{"price", 5}}, {{"price", 250}, {"sku", "A-1"}}}}, {"customer", {{"verified", false}}}}},
      {"matrix", {{1, 2}, {3, 4}}},
      {"_x9", 1}};
  CHECK(eval("order.items[1].price > 100", args));
  CHECK_FALSE(eval("order.items[0].price > 100", args));
  CHECK(eval("order.items[1].sku == 'A-1'", args));
  CHECK(eval("not order.customer.verified", args));
  CHECK(eval("matrix[1][0] == 3", args));
  CHECK(eval("matrix [ 01 ] [ 1 ] == 4", args));  // whitespace between tokens, leading zeros
  CHECK(eval("order . items[1] . price == 250", args));
  CHECK(eval("_x9 == 1", args));
}

TEST_CASE("a missing path is an error naming the path", "[condition]") {
  const Json args = {{"order", {{"items", {1, 2}}, {"total", 9}}}, {"name", "n"}};
  CHECK(eval_failure("amount_usd > 100", args) == "approve_if: amount_usd is missing from the arguments");
  CHECK_THAT(eval_failure("order.tax > 1", args),
             Contains("order.tax is missing from the arguments (order has no key 'tax')"));
  CHECK_THAT(eval_failure("order.items[2] == 1", args),
             Contains("order.items[2] is missing from the arguments (order.items has 2 elements)"));
  CHECK_THAT(eval_failure("order.total.cents == 1", args),
             Contains("order.total.cents is missing from the arguments (order.total is an integer, not an object)"));
  CHECK_THAT(eval_failure("name[0] == 'n'", args),
             Contains("name[0] is missing from the arguments (name is a string, not an array)"));
  // Also under == and != with null, and on the right-hand side.
  CHECK_THAT(eval_failure("absent == null", args), Contains("absent is missing"));
  CHECK_THAT(eval_failure("1 != absent", args), Contains("absent is missing"));
  // Arguments that are not an object have no paths at all.
  CHECK_THAT(eval_failure("x == 1", Json::array({1})),
             Contains("x is missing from the arguments (the arguments are an array, not an object)"));
  CHECK_THAT(eval_failure("x == 1", Json()), Contains("x is missing"));
}

TEST_CASE("ordering incompatible types is an error naming the path", "[condition]") {
  const Json args = {{"amount", "100"}, {"flag", true}, {"none", nullptr}, {"obj", {{"a", 1}}}, {"n", 1}};
  CHECK(eval_failure("amount > 50", args) ==
        "approve_if: '>' compares two numbers or two strings, but amount is a string ('100') and 50 is a number");
  CHECK_THAT(eval_failure("n < amount", args), Contains("n is an integer (1) and amount is a string ('100')"));
  CHECK_THAT(eval_failure("flag >= false", args), Contains("flag is a boolean (true)"));
  CHECK_THAT(eval_failure("none < 1", args), Contains("none is null"));
  CHECK_THAT(eval_failure("obj <= obj", args), Contains("obj is an object"));
  CHECK_THAT(eval_failure("(n > 0) > false", args), Contains("'>' compares two numbers or two strings"));
}

TEST_CASE("a non-boolean operand used as a condition is an error", "[condition]") {
  const Json args = {{"amount", 5}, {"name", "x"}, {"flag", true}, {"none", nullptr}};
  CHECK(eval_failure("amount", args) ==
        "approve_if: amount is an integer (5), not a boolean: a condition must be true or false");
  CHECK_THAT(eval_failure("flag and name", args), Contains("name is a string ('x'), not a boolean"));
  CHECK_THAT(eval_failure("not none", args), Contains("none is null, not a boolean"));
  CHECK_THAT(eval_failure("(amount) or flag", args), Contains("amount is an integer"));
  // A literal that is not true or false cannot be a condition at all.
  CHECK_THAT(syntax_failure("5").message, Contains("at column 1: expected a condition, not the literal 5"));
  CHECK(syntax_failure("flag and 'yes'").column == 10);
  CHECK(syntax_failure("not null").column == 5);
  CHECK(syntax_failure("(1) or flag").column == 2);
}

TEST_CASE("syntax errors name the column and what was expected", "[condition]") {
  struct Case {
    std::string text;
    std::size_t column;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"", 1, "expected a condition"},
      {"   ", 4, "expected a condition"},
      {"a == 1 b", 8, "expected 'and', 'or' or the end, not 'b'"},
      {"a == 1 == 2", 8, "comparisons do not chain"},
      {"name == 'abc", 9, "unterminated string"},
      {"name == \"abc\\\"", 9, "unterminated string"},
      {"status = 'open'", 8, "unexpected '='; did you mean '=='?"},
      {"a ! b", 3, "unexpected '!'; did you mean '!=' or 'not'?"},
      {"a && b", 3, "unexpected '&'; use 'and'"},
      {"a || b", 3, "unexpected '|'; use 'or'"},
      {"amount_usd >", 13, "expected a value after '>'"},
      {"amount_usd > )", 14, "expected a value after '>', not ')'"},
      {"a and", 6, "expected a condition after 'and'"},
      {"not", 4, "expected a condition after 'not'"},
      {"(a or b", 8, "expected ')' to close the '(' at column 1"},
      {"((a) and b", 11, "expected ')' to close the '(' at column 1"},
      {"a or b)", 7, "unexpected ')' with no '(' to close"},
      {"()", 2, "expected a condition after '(', not ')'"},
      {"in > 3", 1, "expected a condition, not the keyword 'in'"},
      {"a > and", 5, "expected a value after '>', not the keyword 'and'"},
      {"order.not == 1", 7, "expected a name after '.', not the keyword 'not'"},
      {"order.null", 7, "expected a name after '.', not the keyword 'null'"},
      {"order. == 1", 8, "expected a name after '.'"},
      {"a.1 == 1", 3, "expected a name after '.', not '1'"},
      {"x in 3", 6, "expected '[' after 'in', not '3'"},
      {"x in [1, y]", 10, "expected a number, a string, true, false or null in the list, not 'y'"},
      {"x in [1,]", 9, "expected a number, a string, true, false or null in the list, not ']'"},
      {"x in [1 2]", 9, "expected ',' or ']' in the list, not '2'"},
      {"x in [1", 8, "expected ',' or ']' in the list"},
      {"a[x] == 1", 3, "expected an index (digits) after '[', not 'x'"},
      {"a[-1] == 1", 3, "expected an index (digits) after '['"},
      {"a[1.5] == 1", 3, "expected an index (digits) after '['"},
      {"a[1 == 1", 5, "expected ']' after the index"},
      {"a[99999999999999999999999] == 1", 3, "index out of range"},
      {"a == 'x\\n'", 8, "unknown escape '\\n'"},
      {"a > 1.", 7, "expected a digit after '.' in a number"},
      {"a > 1e", 7, "expected a digit in the exponent"},
      {"a > 12abc", 7, "unexpected 'a' after a number"},
      {"a > 1e999", 5, "number out of range: '1e999'"},
      {"a > - 1", 5, "unexpected character '-'"},
      {"a # b", 3, "unexpected character '#'"},
      {"a == \xff", 6, "unexpected character '\\xff'"},
      {"true or 5", 9, "expected a condition, not the literal 5"},
  };
  for (const Case& c : cases) {
    INFO("text: " << c.text);
    const SyntaxFailure failure = syntax_failure(c.text);
    CHECK(failure.column == c.column);
    CHECK_THAT(failure.message, Contains("approve_if: at column " + std::to_string(c.column) + ": " + c.says));
  }
  // The whole message, as a rule's author sees it.
  CHECK(syntax_failure("amount_usd>").message == "approve_if: at column 12: expected a value after '>'");
}

TEST_CASE("syntax errors are agentkit errors with code invalid_argument", "[condition]") {
  try {
    Condition::parse("a ==");
    FAIL("parsed");
  } catch (const agentkit::Error& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK(dynamic_cast<const ConditionSyntaxError*>(&e) != nullptr);
  }
}

TEST_CASE("nesting deeper than 32 is refused", "[condition]") {
  const Json args = {{"a", true}};
  CHECK(eval(repeat("(", 32) + "a" + repeat(")", 32), args));
  const SyntaxFailure parens = syntax_failure(repeat("(", 33) + "a" + repeat(")", 33));
  CHECK(parens.column == 33);
  CHECK_THAT(parens.message, Contains("nested more than 32 deep"));

  CHECK(eval(repeat("not ", 32) + "a", args));  // an even count: a
  const SyntaxFailure nots = syntax_failure(repeat("not ", 33) + "a");
  CHECK(nots.column == 129);
  CHECK_THAT(nots.message, Contains("nested more than 32 deep"));

  // Parentheses and not count together.
  CHECK_THAT(syntax_failure(repeat("not (", 17) + "a" + repeat(")", 17)).message, Contains("nested more than 32"));
  // Unclosed parentheses far past the limit stop at the limit.
  CHECK(syntax_failure(repeat("(", 200)).column == 33);
}

TEST_CASE("text longer than 1024 bytes is refused", "[condition]") {
  const std::string at_limit = "a == '" + std::string(1024 - 7, 'x') + "'";
  REQUIRE(at_limit.size() == 1024);
  CHECK(eval(at_limit, {{"a", std::string(1024 - 7, 'x')}}));

  const SyntaxFailure over = syntax_failure(at_limit + " ");
  CHECK(over.column == 1025);
  CHECK_THAT(over.message, Contains("too long: more than 1024 bytes"));

  std::string long_text = "a == 1";
  while (long_text.size() < 2000) long_text += " or a == 1";
  CHECK_THAT(syntax_failure(long_text).message, Contains("more than 1024 bytes"));
}

TEST_CASE("more than 256 tokens are refused", "[condition]") {
  // x [ 0 ] in [ 1 , ... , 1 ]: 4 + 2 + (2 * 125 - 1) + 1 = 256 tokens.
  const std::string list = "1" + repeat(",1", 124);
  CHECK(eval("x[0] in [" + list + "]", {{"x", {1}}}));
  // x in [ 1 , ... , 1 ]: 3 + (2 * 127 - 1) + 1 = 257 tokens.
  const std::string text = "x in [1" + repeat(",1", 126) + "]";
  const SyntaxFailure failure = syntax_failure(text);
  CHECK(failure.column == text.size());  // the closing ']'
  CHECK_THAT(failure.message, Contains("more than 256 tokens"));
}

TEST_CASE("a condition is copyable and keeps its text", "[condition]") {
  const Condition original = Condition::parse("  amount_usd > 100 ");
  Condition copy = original;
  CHECK(copy.text() == "  amount_usd > 100 ");
  CHECK(copy.evaluate({{"amount_usd", 101}}));
  CHECK_FALSE(copy.evaluate({{"amount_usd", 100}}));
  copy = Condition::parse("flag");
  CHECK(copy.text() == "flag");
  CHECK(original.evaluate({{"amount_usd", 101}}));
  Condition moved = std::move(copy);
  CHECK(moved.evaluate({{"flag", true}}));
}

TEST_CASE("random and mutated text never crashes and throws only the typed errors", "[condition]") {
  const Json args = {{"a", 1},
                     {"b", "x"},
                     {"c", true},
                     {"d", nullptr},
                     {"e", {1, 2.5, "y"}},
                     {"f", {{"g", {{"h", false}}}}},
                     {"amount_usd", 150}};
  const std::vector<std::string> valid = {
      "a > 0 and b == 'x'",
      "not c or (d == null and e[1] >= 2.5)",
      "f.g.h in [true, false, null, 'z', -1e3]",
      "(a <= 1 or b != \"q\\\"\") and not not c",
      "amount_usd > 100 or (b in ['BTC', 'ETH'] and not f.g.h)",
      "e[2] < 'z' and e[0] == 1.0",
  };
  constexpr std::string_view kAlphabet = "abcdefgh_ 0123456789.[](),'\"\\<>=!-+eE \t\n";
  std::mt19937 rng(20240531);
  const auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  const auto random_byte = [&]() -> char {
    if (pick(4) == 0) return static_cast<char>(pick(256));
    return kAlphabet[pick(kAlphabet.size())];
  };

  std::vector<std::string> inputs;
  for (int i = 0; i < 1000; ++i) {
    std::string text(pick(64), '\0');
    for (char& c : text) c = random_byte();
    inputs.push_back(std::move(text));
  }
  for (int i = 0; i < 1000; ++i) {
    std::string text = valid[pick(valid.size())];
    for (std::size_t edits = 1 + pick(3); edits > 0; --edits) {
      const std::size_t at = pick(text.size() + 1);
      switch (pick(3)) {
        case 0: text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), random_byte()); break;
        case 1: if (at < text.size()) text.erase(at, 1); break;
        default: if (at < text.size()) text[at] = random_byte(); break;
      }
    }
    inputs.push_back(std::move(text));
  }
  inputs.push_back(repeat("(", 5000));
  inputs.push_back(repeat("not ", 300) + "c");
  inputs.push_back(repeat("a.", 400) + "a");
  inputs.push_back(std::string(1024, '\''));

  int parsed = 0, rejected = 0, decided = 0, undecided = 0;
  for (const std::string& text : inputs) {
    INFO("text: " << text);
    try {
      const Condition condition = Condition::parse(text);
      ++parsed;
      try {
        condition.evaluate(args);
        ++decided;
      } catch (const ConditionError&) {
        ++undecided;
      }
    } catch (const ConditionSyntaxError& e) {
      ++rejected;
      CHECK(e.column() >= 1);
      CHECK(e.column() <= text.size() + 1);
    }
  }
  for (const std::string& text : valid) CHECK_NOTHROW(Condition::parse(text).evaluate(args));
  // Both sides were exercised: some mutants still parse and decide, others do not.
  CHECK(parsed > 50);
  CHECK(rejected > 1000);
  CHECK(decided > 10);
  CHECK(undecided > 0);
}
