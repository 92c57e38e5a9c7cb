#include <agentkit/schema.h>

#include <cmath>
#include <utility>
#include <vector>

namespace agentkit {

std::string detail::not_one_of(const Json& allowed, const Json& got) {
  std::string options;
  for (const auto& option : allowed) options += (options.empty() ? "" : ", ") + preview(option);
  return "expected one of [" + options + "], got " + preview(got);
}

bool DecodeState::fail(std::string reason) {
  invalid.push_back({path_.empty() ? std::string("(value)") : path_, std::move(reason)});
  return false;
}

bool DecodeState::type_error(std::string_view expected, const Json& got) {
  return fail("expected " + std::string(expected) + ", got " + std::string(json_type_name(got)) + " " +
              preview(got));
}

void DecodeState::report_missing(std::string_view name) {
  if (depth_ == 0) {
    missing.emplace_back(name);
  } else {
    fail("missing required field '" + std::string(name) + "'");
  }
}

void DecodeState::report_unexpected(std::string_view name) {
  if (depth_ == 0) {
    unexpected.emplace_back(name);
  } else {
    fail("unexpected field '" + std::string(name) + "'");
  }
}

std::string DecodeState::summary() const {
  std::string out;
  const auto add = [&](const std::string& part) { out += (out.empty() ? "" : "; ") + part; };
  for (const auto& bad : invalid) add(bad.name + ": " + bad.reason);
  for (const auto& name : missing) add("missing field '" + name + "'");
  for (const auto& name : unexpected) add("unexpected field '" + name + "'");
  return out;
}

DecodeState::Scope::Scope(DecodeState& st, std::string_view key) : st_(st), old_size_(st.path_.size()) {
  if (!st_.path_.empty()) st_.path_ += '.';
  st_.path_ += key;
  entered_ = ++st_.depth_ <= st_.limits_.max_depth;
  if (!entered_) st_.fail("nested deeper than " + std::to_string(st_.limits_.max_depth) + " levels");
}

DecodeState::Scope::Scope(DecodeState& st, std::size_t index) : st_(st), old_size_(st.path_.size()) {
  st_.path_ += '[' + std::to_string(index) + ']';
  entered_ = ++st_.depth_ <= st_.limits_.max_depth;
  if (!entered_) st_.fail("nested deeper than " + std::to_string(st_.limits_.max_depth) + " levels");
}

DecodeState::Scope::~Scope() {
  st_.path_.resize(old_size_);
  --st_.depth_;
}

namespace detail {

bool check_string(const Json& in, DecodeState& st) {
  if (!in.is_string()) return st.type_error("string", in);
  const auto& s = in.get_ref<const std::string&>();
  if (s.size() > st.limits().max_string_bytes) {
    return st.fail("string of " + std::to_string(s.size()) + " bytes exceeds the limit of " +
                   std::to_string(st.limits().max_string_bytes));
  }
  if (!is_valid_utf8(s)) return st.fail("string is not valid UTF-8");
  return true;
}

// Walks an untyped value iteratively (no recursion, so hostile nesting cannot
// overflow the stack) checking depth, string limits and finite numbers.
bool check_depth(const Json& in, DecodeState& st) {
  std::vector<std::pair<const Json*, std::size_t>> pending{{&in, st.depth()}};
  while (!pending.empty()) {
    auto [value, depth] = pending.back();
    pending.pop_back();
    if (depth > st.limits().max_depth) {
      return st.fail("nested deeper than " + std::to_string(st.limits().max_depth) + " levels");
    }
    if (value->is_string()) {
      if (!check_string(*value, st)) return false;
    } else if (value->is_number_float() && !std::isfinite(value->get<double>())) {
      return st.fail("number is not finite: " + preview(*value));
    } else if (value->is_structured()) {
      for (const auto& child : *value) pending.emplace_back(&child, depth + 1);
    }
  }
  return true;
}

bool decode_number(const Json& in, double& out, double max_abs, DecodeState& st) {
  if (!in.is_number()) return st.type_error("number", in);
  const double d = in.get<double>();
  if (!std::isfinite(d)) return st.fail(preview(in) + " is not a finite number");
  if (std::fabs(d) > max_abs) return st.fail(preview(in) + " is out of range for this number type");
  out = d;
  return true;
}

void add_description(Schema& schema, std::string_view description) {
  if (!description.empty()) schema["description"] = std::string(description);
}

}  // namespace detail
}  // namespace agentkit
