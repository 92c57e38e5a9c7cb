#include <agentkit/condition.h>

#include <charconv>
#include <cstddef>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace agentkit {
namespace detail {

enum class ConditionKind { any_of, all_of, negation, compare, member_of, path, literal };
enum class CompareOp { eq, ne, lt, le, gt, ge };

struct PathStep {
  std::string key;         // a name step
  std::size_t index = 0;   // an index step
  bool is_index = false;
};

struct ConditionNode {
  ConditionKind kind = ConditionKind::literal;
  CompareOp op = CompareOp::eq;          // compare
  std::vector<ConditionNode> children;   // any_of/all_of: the terms; negation: one; compare: two; member_of: the operand
  std::vector<PathStep> steps;           // path
  Json value;                            // literal: its value; member_of: the list (an array of literals)
  std::string text;                      // for messages: a path as "a.b[0]", anything else as written
  std::size_t column = 1;
};

}  // namespace detail

namespace {

using Node = detail::ConditionNode;
using Kind = detail::ConditionKind;
using Op = detail::CompareOp;

constexpr std::size_t kMaxBytes = 1024;
constexpr std::size_t kMaxTokens = 256;
constexpr std::size_t kMaxDepth = 32;         // parentheses and `not`
constexpr std::size_t kMaxCompareDepth = 64;  // nesting of argument values compared with == (JsonLimits' default)
constexpr std::string_view kPrefix = "approve_if: ";

// ---- Tokens ----------------------------------------------------------------

enum class Tok { end, name, number, string, kw_and, kw_or, kw_not, kw_in, kw_true, kw_false, kw_null, op,
                 lparen, rparen, lbracket, rbracket, comma, dot };

struct Token {
  Tok kind = Tok::end;
  std::size_t offset = 0;   // of its first byte in the text
  std::string_view source;  // as written
  std::string string;       // a string's decoded value
  double number = 0;
  Op op = Op::eq;
};

[[noreturn]] void syntax_error(std::size_t offset, const std::string& what) {
  throw ConditionSyntaxError(offset + 1,
                             std::string(kPrefix) + "at column " + std::to_string(offset + 1) + ": " + what);
}

[[noreturn]] void eval_error(const std::string& what) { throw ConditionError(std::string(kPrefix) + what); }

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
bool is_name_start(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) noexcept { return is_name_start(c) || is_digit(c); }
bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// `text` quoted for a message: printable ASCII as is, other bytes as \xHH,
// elided past 32 bytes.
std::string quoted(std::string_view text) {
  constexpr std::size_t kMax = 32;
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  if (text.size() > kMax) out += "...";
  return out + "'";
}

std::string_view op_text(Op op) noexcept {
  switch (op) {
    case Op::eq: return "==";
    case Op::ne: return "!=";
    case Op::lt: return "<";
    case Op::le: return "<=";
    case Op::gt: return ">";
    case Op::ge: return ">=";
  }
  return "?";
}

Tok keyword(std::string_view word) noexcept {
  if (word == "and") return Tok::kw_and;
  if (word == "or") return Tok::kw_or;
  if (word == "not") return Tok::kw_not;
  if (word == "in") return Tok::kw_in;
  if (word == "true") return Tok::kw_true;
  if (word == "false") return Tok::kw_false;
  if (word == "null") return Tok::kw_null;
  return Tok::name;
}

bool is_keyword(Tok kind) noexcept {
  switch (kind) {
    case Tok::kw_and: case Tok::kw_or: case Tok::kw_not: case Tok::kw_in:
    case Tok::kw_true: case Tok::kw_false: case Tok::kw_null:
      return true;
    default:
      return false;
  }
}

// A token as a message names it: "the keyword 'in'", "')'".
std::string describe(const Token& t) {
  if (t.kind == Tok::end) return "the end";
  return (is_keyword(t.kind) ? "the keyword " : "") + quoted(t.source);
}

// ", not 'x'" after an expectation, or nothing at the end of the text.
std::string instead(const Token& t) { return t.kind == Tok::end ? std::string() : ", not " + describe(t); }

// Reads a number at text[i], advancing i. -?digits(.digits)?([eE][+-]?digits)?
double lex_number(std::string_view text, std::size_t& i) {
  const std::size_t start = i;
  const auto digit_at = [&](std::size_t at) { return at < text.size() && is_digit(text[at]); };
  if (text[i] == '-') ++i;
  while (digit_at(i)) ++i;
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (!digit_at(i)) syntax_error(i, "expected a digit after '.' in a number");
    while (digit_at(i)) ++i;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (!digit_at(i)) syntax_error(i, "expected a digit in the exponent of a number");
    while (digit_at(i)) ++i;
  }
  if (i < text.size() && is_name_char(text[i])) {
    syntax_error(i, "unexpected " + quoted(text.substr(i, 1)) + " after a number");
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data() + start, text.data() + i, value);
  if (ec != std::errc() || end != text.data() + i) {
    syntax_error(start, "number out of range: " + quoted(text.substr(start, i - start)));
  }
  return value;
}

// Reads a quoted string at text[i], advancing i past its closing quote.
std::string lex_string(std::string_view text, std::size_t& i) {
  const std::size_t start = i;
  const char quote = text[i++];
  std::string value;
  for (;;) {
    if (i >= text.size()) syntax_error(start, "unterminated string");
    const char c = text[i++];
    if (c == quote) return value;
    if (c != '\\') {
      value += c;
      continue;
    }
    if (i >= text.size()) syntax_error(start, "unterminated string");
    const char escaped = text[i];
    if (escaped != '\\' && escaped != '\'' && escaped != '"') {
      syntax_error(i - 1, "unknown escape " + quoted(text.substr(i - 1, 2)) +
                              " in a string (only \\\\, \\' and \\\" are allowed)");
    }
    value += escaped;
    ++i;
  }
}

std::vector<Token> lex(std::string_view text) {
  std::vector<Token> tokens;
  std::size_t i = 0;
  for (;;) {
    while (i < text.size() && is_space(text[i])) ++i;
    Token t;
    t.offset = i;
    if (i == text.size()) {
      tokens.push_back(std::move(t));  // Tok::end
      return tokens;
    }
    if (tokens.size() == kMaxTokens) syntax_error(i, "too long: more than " + std::to_string(kMaxTokens) + " tokens");
    const char c = text[i];
    const char after = i + 1 < text.size() ? text[i + 1] : '\0';
    if (is_name_start(c)) {
      while (i < text.size() && is_name_char(text[i])) ++i;
      t.kind = keyword(text.substr(t.offset, i - t.offset));
    } else if (is_digit(c) || (c == '-' && is_digit(after))) {
      t.kind = Tok::number;
      t.number = lex_number(text, i);
    } else if (c == '\'' || c == '"') {
      t.kind = Tok::string;
      t.string = lex_string(text, i);
    } else {
      const auto single = [&](Tok kind) {
        t.kind = kind;
        ++i;
      };
      const auto comparison = [&](Op one, Op with_equals) {
        t.kind = Tok::op;
        t.op = after == '=' ? with_equals : one;
        i += after == '=' ? 2 : 1;
      };
      switch (c) {
        case '(': single(Tok::lparen); break;
        case ')': single(Tok::rparen); break;
        case '[': single(Tok::lbracket); break;
        case ']': single(Tok::rbracket); break;
        case ',': single(Tok::comma); break;
        case '.': single(Tok::dot); break;
        case '<': comparison(Op::lt, Op::le); break;
        case '>': comparison(Op::gt, Op::ge); break;
        case '=':
          if (after != '=') syntax_error(i, "unexpected '='; did you mean '=='?");
          comparison(Op::eq, Op::eq);
          break;
        case '!':
          if (after != '=') syntax_error(i, "unexpected '!'; did you mean '!=' or 'not'?");
          comparison(Op::ne, Op::ne);
          break;
        case '&': syntax_error(i, "unexpected '&'; use 'and'");
        case '|': syntax_error(i, "unexpected '|'; use 'or'");
        default: syntax_error(i, "unexpected character " + quoted(text.substr(i, 1)));
      }
    }
    t.source = text.substr(t.offset, i - t.offset);
    tokens.push_back(std::move(t));
  }
}

// ---- Parser ----------------------------------------------------------------

// Recursive descent over the token list. Recursion is bounded: each level
// below parse_or() consumes a token or enters a '(' or `not`, and those are
// at most kMaxDepth deep.
class Parser {
 public:
  Parser(std::string_view text, std::vector<Token> tokens) : text_(text), tokens_(std::move(tokens)) {}

  Node parse() {
    Node root = parse_or();
    const Token& t = peek();
    if (t.kind == Tok::rparen) syntax_error(t.offset, "unexpected ')' with no '(' to close");
    if (t.kind != Tok::end) syntax_error(t.offset, "expected 'and', 'or' or the end, not " + describe(t));
    require_condition(root);
    return root;
  }

 private:
  const Token& peek() const { return tokens_[pos_]; }
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (t.kind != Tok::end) ++pos_;
    return t;
  }
  // The text from `start` to the end of the last token read.
  std::string source_from(std::size_t start) const {
    const Token& last = tokens_[pos_ - 1];
    return std::string(text_.substr(start, last.offset + last.source.size() - start));
  }

  void enter(const Token& t) {
    if (++depth_ > kMaxDepth) syntax_error(t.offset, "nested more than " + std::to_string(kMaxDepth) + " deep");
  }
  void leave() { --depth_; }

  // An operand in a condition's place must be able to be a boolean: a
  // literal must be true or false (a path is checked when evaluated).
  static void require_condition(const Node& node) {
    if (node.kind == Kind::literal && !node.value.is_boolean()) {
      syntax_error(node.column - 1, "expected a condition, not the literal " + node.text);
    }
  }

  // or := and ("or" and)*; and := not ("and" not)*
  Node parse_or() { return parse_chain(Tok::kw_or, Kind::any_of); }
  Node parse_and() { return parse_chain(Tok::kw_and, Kind::all_of); }

  Node parse_chain(Tok separator, Kind kind) {
    const std::size_t start = peek().offset;
    const auto term = [&] { return separator == Tok::kw_or ? parse_and() : parse_not(); };
    Node first = term();
    if (peek().kind != separator) return first;
    Node node;
    node.kind = kind;
    node.column = start + 1;
    node.children.push_back(std::move(first));
    while (peek().kind == separator) {
      next();
      node.children.push_back(term());
    }
    for (const Node& child : node.children) require_condition(child);
    node.text = source_from(start);
    return node;
  }

  // not := "not" not | cmp
  Node parse_not() {
    if (peek().kind != Tok::kw_not) return parse_cmp();
    const Token& t = next();
    enter(t);
    Node child = parse_not();
    require_condition(child);
    leave();
    Node node;
    node.kind = Kind::negation;
    node.column = t.offset + 1;
    node.children.push_back(std::move(child));
    node.text = source_from(t.offset);
    return node;
  }

  // cmp := operand (op operand)? | operand "in" list
  Node parse_cmp() {
    const std::size_t start = peek().offset;
    Node lhs = parse_operand();
    if (peek().kind == Tok::op) {
      const Op op = next().op;
      Node rhs = parse_operand();
      if (peek().kind == Tok::op) {
        syntax_error(peek().offset, "comparisons do not chain; join them with 'and'");
      }
      Node node;
      node.kind = Kind::compare;
      node.op = op;
      node.column = start + 1;
      node.children.push_back(std::move(lhs));
      node.children.push_back(std::move(rhs));
      node.text = source_from(start);
      return node;
    }
    if (peek().kind != Tok::kw_in) return lhs;
    next();
    if (peek().kind != Tok::lbracket) syntax_error(peek().offset, "expected '[' after 'in'" + instead(peek()));
    next();
    Node node;
    node.kind = Kind::member_of;
    node.column = start + 1;
    node.value = Json::array();
    if (peek().kind != Tok::rbracket) {
      for (;;) {
        node.value.push_back(parse_literal());
        if (peek().kind == Tok::rbracket) break;
        if (peek().kind != Tok::comma) syntax_error(peek().offset, "expected ',' or ']' in the list" + instead(peek()));
        next();
      }
    }
    next();  // ']'
    node.children.push_back(std::move(lhs));
    node.text = source_from(start);
    return node;
  }

  // A list element: number | string | true | false | null.
  Json parse_literal() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::number: next(); return Json(t.number);
      case Tok::string: next(); return Json(t.string);
      case Tok::kw_true: next(); return Json(true);
      case Tok::kw_false: next(); return Json(false);
      case Tok::kw_null: next(); return Json(nullptr);
      default:
        syntax_error(t.offset, "expected a number, a string, true, false or null in the list" + instead(t));
    }
  }

  // operand := path | number | string | true | false | null | "(" expr ")"
  Node parse_operand() {
    const Token& t = peek();
    if (t.kind == Tok::name) return parse_path();
    if (t.kind == Tok::lparen) {
      next();
      enter(t);
      Node inner = parse_or();
      if (peek().kind != Tok::rparen) {
        syntax_error(peek().offset,
                     "expected ')' to close the '(' at column " + std::to_string(t.offset + 1) + instead(peek()));
      }
      next();
      leave();
      // Parentheses only group: (amount) is the path amount.
      if (inner.kind != Kind::path && inner.kind != Kind::literal) {
        inner.text = source_from(t.offset);
        inner.column = t.offset + 1;
      }
      return inner;
    }
    if (t.kind == Tok::number || t.kind == Tok::string || t.kind == Tok::kw_true || t.kind == Tok::kw_false ||
        t.kind == Tok::kw_null) {
      Node node;
      node.kind = Kind::literal;
      node.column = t.offset + 1;
      node.text = std::string(t.source);
      node.value = parse_literal();
      return node;
    }
    // What was expected, after what.
    const Token* prev = pos_ > 0 ? &tokens_[pos_ - 1] : nullptr;
    std::string what = "expected a condition";
    if (prev && prev->kind == Tok::op) {
      what = "expected a value after " + quoted(prev->source);
    } else if (prev) {
      what += " after " + quoted(prev->source);
    }
    syntax_error(t.offset, what + instead(t));
  }

  // path := identifier ("." identifier | "[" integer "]")*
  Node parse_path() {
    const Token& first = next();
    Node node;
    node.kind = Kind::path;
    node.column = first.offset + 1;
    node.text = std::string(first.source);
    node.steps.push_back({std::string(first.source), 0, false});
    for (;;) {
      if (peek().kind == Tok::dot) {
        next();
        const Token& name = peek();
        if (name.kind != Tok::name) syntax_error(name.offset, "expected a name after '.'" + instead(name));
        next();
        node.steps.push_back({std::string(name.source), 0, false});
        node.text += '.';
        node.text += name.source;
      } else if (peek().kind == Tok::lbracket) {
        next();
        const Token& index = peek();
        bool digits = index.kind == Tok::number && !index.source.empty();
        for (const char c : index.source) digits = digits && is_digit(c);
        if (!digits) syntax_error(index.offset, "expected an index (digits) after '['" + instead(index));
        std::size_t value = 0;
        const char* end = index.source.data() + index.source.size();
        if (std::from_chars(index.source.data(), end, value).ec != std::errc()) {
          syntax_error(index.offset, "index out of range: " + quoted(index.source));
        }
        next();
        if (peek().kind != Tok::rbracket) syntax_error(peek().offset, "expected ']' after the index" + instead(peek()));
        next();
        node.steps.push_back({std::string(), value, true});
        node.text += '[' + std::to_string(value) + ']';
      } else {
        return node;
      }
    }
  }

  std::string_view text_;
  std::vector<Token> tokens_;  // ends with a Tok::end
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;
};

// ---- Evaluation ------------------------------------------------------------

// "a string", "an integer", "null".
std::string a_type(const Json& v) {
  const std::string_view name = json_type_name(v);
  if (v.is_null()) return "null";
  const bool vowel = !name.empty() && std::string_view("aeiou").find(name.front()) != std::string_view::npos;
  return (vowel ? "an " : "a ") + std::string(name);
}

// An operand and its value for a message: "amount_usd is a string ('100')",
// "100 is a number".
std::string describe(const Node& n, const Json& v) {
  if (n.kind != Kind::path || v.is_null()) return n.text + " is " + a_type(v);
  return n.text + " is " + a_type(v) + " (" + preview(v, 40) + ")";
}

// An operand's value: a reference into the arguments or the tree, or a
// boolean it computed.
struct Value {
  const Json* ref = nullptr;
  Json own;
  const Json& get() const noexcept { return ref ? *ref : own; }
};

const Json& lookup(const Node& path, const Json& arguments) {
  const Json* at = &arguments;
  std::string walked;  // the steps taken so far
  const auto missing = [&](const std::string& why) -> void {
    eval_error(path.text + " is missing from the arguments" + (why.empty() ? "" : " (" + why + ")"));
  };
  const auto container = [&](const char* kind) {
    return (walked.empty() ? "the arguments are " : walked + " is ") + a_type(*at) + ", not " + kind;
  };
  for (const detail::PathStep& step : path.steps) {
    if (step.is_index) {
      if (!at->is_array()) missing(container("an array"));
      if (step.index >= at->size()) {
        missing(walked + " has " + std::to_string(at->size()) + (at->size() == 1 ? " element" : " elements"));
      }
      at = &(*at)[step.index];
      walked += '[' + std::to_string(step.index) + ']';
    } else {
      if (!at->is_object()) missing(container("an object"));
      const auto it = at->find(step.key);
      if (it == at->end()) missing(walked.empty() ? std::string() : walked + " has no key '" + step.key + "'");
      at = &*it;
      if (!walked.empty()) walked += '.';
      walked += step.key;
    }
  }
  return *at;
}

// == over JSON values: numbers by value as doubles, other types equal only
// to their own type, arrays and objects element by element.
bool same_value(const Json& a, const Json& b, std::size_t depth, const Node& where) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  if (a.type() != b.type()) return false;
  if (!a.is_array() && !a.is_object()) return a == b;
  if (depth >= kMaxCompareDepth) {
    eval_error("cannot decide " + where.text + ": the values are nested more than " +
               std::to_string(kMaxCompareDepth) + " deep");
  }
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    if (a.is_object() && ia.key() != ib.key()) return false;
    if (!same_value(*ia, *ib, depth + 1, where)) return false;
  }
  return true;
}

bool truth(const Node& n, const Json& arguments);

Value value_of(const Node& n, const Json& arguments) {
  switch (n.kind) {
    case Kind::path: return {&lookup(n, arguments), {}};
    case Kind::literal: return {&n.value, {}};
    default: return {nullptr, Json(truth(n, arguments))};
  }
}

bool compare(const Node& n, const Json& arguments) {
  const Node& lhs = n.children[0];
  const Node& rhs = n.children[1];
  const Value left = value_of(lhs, arguments);
  const Value right = value_of(rhs, arguments);
  const Json& a = left.get();
  const Json& b = right.get();
  if (n.op == Op::eq) return same_value(a, b, 0, n);
  if (n.op == Op::ne) return !same_value(a, b, 0, n);
  int order = 0;
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>();
    const double y = b.get<double>();
    if (!(x < y) && !(x > y) && !(x == y)) return false;  // NaN is unordered
    order = x < y ? -1 : x > y ? 1 : 0;
  } else if (a.is_string() && b.is_string()) {
    // std::char_traits<char>::compare orders by unsigned byte.
    order = a.get_ref<const std::string&>().compare(b.get_ref<const std::string&>());
  } else {
    eval_error(quoted(op_text(n.op)) + " compares two numbers or two strings, but " + describe(lhs, a) + " and " +
               describe(rhs, b));
  }
  switch (n.op) {
    case Op::lt: return order < 0;
    case Op::le: return order <= 0;
    case Op::gt: return order > 0;
    case Op::ge: return order >= 0;
    default: return false;
  }
}

bool truth(const Node& n, const Json& arguments) {
  switch (n.kind) {
    case Kind::any_of:
      for (const Node& child : n.children) {
        if (truth(child, arguments)) return true;
      }
      return false;
    case Kind::all_of:
      for (const Node& child : n.children) {
        if (!truth(child, arguments)) return false;
      }
      return true;
    case Kind::negation:
      return !truth(n.children.front(), arguments);
    case Kind::compare:
      return compare(n, arguments);
    case Kind::member_of: {
      const Value v = value_of(n.children.front(), arguments);
      for (const Json& item : n.value) {
        if (same_value(v.get(), item, 0, n)) return true;
      }
      return false;
    }
    case Kind::path:
    case Kind::literal: {
      const Value v = value_of(n, arguments);
      if (!v.get().is_boolean()) eval_error(describe(n, v.get()) + ", not a boolean: a condition must be true or false");
      return v.get().get<bool>();
    }
  }
  return false;
}

}  // namespace

Condition Condition::parse(std::string_view text) {
  if (text.size() > kMaxBytes) syntax_error(kMaxBytes, "too long: more than " + std::to_string(kMaxBytes) + " bytes");
  Parser parser(text, lex(text));
  return Condition(std::string(text), std::make_shared<const Node>(parser.parse()));
}

bool Condition::evaluate(const Json& arguments) const {
  if (!root_) eval_error("no condition (a moved-from Condition)");
  return truth(*root_, arguments);
}

std::function<bool(const Json& arguments, const RunContext& ctx)> Condition::approval_rule() const {
  return [rule = *this](const Json& arguments, const RunContext&) { return rule.evaluate(arguments); };
}

}  // namespace agentkit
