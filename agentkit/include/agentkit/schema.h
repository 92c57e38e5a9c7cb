#pragma once
// One declaration drives the JSON Schema the model sees, the validating
// decoder for its arguments and the encoder for results.
//
// Built-in mappings (`Codec<T>`):
//
// | C++ type                              | JSON Schema                                   |
// |---------------------------------------|-----------------------------------------------|
// | std::string                           | {"type": "string"}                            |
// | bool                                  | {"type": "boolean"}                           |
// | integral types                        | {"type": "integer"} (+ "minimum": 0 unsigned) |
// | float, double                         | {"type": "number"}                            |
// | std::vector<T>, std::set<T>           | {"type": "array", "items": <T>}               |
// | std::array<T, N>                      | array with items, minItems = maxItems = N     |
// | std::map<std::string, T>              | {"type": "object", "additionalProperties": <T>}|
// | described struct (Describe<T>)        | object schema, fields in declaration order    |
// | described enum (Describe<E>)          | {"enum": [...], "type": "string"}             |
// | std::optional<T>                      | {"anyOf": [<T>, {"type": "null"}]}            |
// | std::variant<Ts...>                   | {"anyOf": [<Ts>...]}                          |
// | agentkit::Json                        | {} (any value, depth-checked)                 |
//
// Any other type fails to compile with a message naming this table.
// Primitives are never coerced: "3" is not 3, 1e20 does not fit an int, NaN is
// not a number. A value decodes completely or produces errors naming each bad
// path.
//
// Example:
//   enum class Unit { celsius, fahrenheit };
//   template <> struct agentkit::Describe<Unit> {
//     static constexpr std::string_view name = "Unit";
//     static constexpr auto values = agentkit::enum_values<Unit>(
//         {{Unit::celsius, "celsius"}, {Unit::fahrenheit, "fahrenheit"}});
//   };
//
//   struct Filter { std::string query; int limit = 5; };
//   template <> struct agentkit::Describe<Filter> {
//     static constexpr std::string_view name = "Filter";
//     static constexpr auto fields = std::tuple{
//         agentkit::field("query", &Filter::query, "What to search for"),
//         agentkit::field("limit", &Filter::limit, "At most this many hits").defaulted()};
//   };
//
//   agentkit::Schema s = agentkit::schema_of<Filter>();
#include <array>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <agentkit/detail/enum_table.h>
#include <agentkit/errors.h>
#include <agentkit/json.h>

namespace agentkit {

// Specialise for a struct (static `name`, `fields` tuple, optional
// `description`) or an enum (static `name`, `values` array).
template <class T>
struct Describe;

// One described struct field. `defaulted()` marks the field optional: when the
// model omits it (or sends null), the member keeps the value T{} gave it.
template <class Class, class Member>
struct Field {
  std::string_view name;
  Member Class::*member;
  std::string_view description{};
  bool has_default = false;

  constexpr Field defaulted() const {
    Field copy = *this;
    copy.has_default = true;
    return copy;
  }
};

template <class Class, class Member>
constexpr Field<Class, Member> field(std::string_view name, Member Class::*member, std::string_view description = {}) {
  return {name, member, description, false};
}

// EnumValue<E> (one enumerator and its name): see <agentkit/detail/enum_table.h>.
template <class E, std::size_t N>
constexpr std::array<EnumValue<E>, N> enum_values(const EnumValue<E> (&values)[N]) {
  std::array<EnumValue<E>, N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = values[i];
  return out;
}

template <class T>
concept DescribedStruct = std::is_class_v<T> && requires {
  { Describe<T>::name } -> std::convertible_to<std::string_view>;
  Describe<T>::fields;
};

template <class T>
concept DescribedEnum = std::is_enum_v<T> && requires {
  { Describe<T>::name } -> std::convertible_to<std::string_view>;
  Describe<T>::values;
};

// Collects decode errors with their paths. `top_level` decoding (a tool's
// argument object) sorts missing and unexpected keys into their own lists so
// ToolArgumentError can report them separately.
class DecodeState {
 public:
  explicit DecodeState(const JsonLimits& limits = {}) : limits_(limits) {}

  const JsonLimits& limits() const noexcept { return limits_; }
  bool ok() const noexcept { return invalid.empty() && missing.empty() && unexpected.empty(); }
  std::size_t depth() const noexcept { return depth_; }

  // Records that the value at the current path was refused; returns false.
  bool fail(std::string reason);
  // Records "expected <what>, got <type> <preview>"; returns false.
  bool type_error(std::string_view expected, const Json& got);
  void report_missing(std::string_view name);
  void report_unexpected(std::string_view name);
  // Every recorded problem on one line: "path: reason; missing field 'x'; ...".
  std::string summary() const;

  // RAII: appends ".name" or "[index]" to the path and one level of depth.
  class Scope {
   public:
    Scope(DecodeState& st, std::string_view key);
    Scope(DecodeState& st, std::size_t index);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    // False when entering this level passed JsonLimits::max_depth (already reported).
    bool entered() const noexcept { return entered_; }

   private:
    DecodeState& st_;
    std::size_t old_size_;
    bool entered_;
  };

  std::vector<ToolArgumentError::Invalid> invalid;
  std::vector<std::string> missing;
  std::vector<std::string> unexpected;

 private:
  JsonLimits limits_;
  std::string path_;
  std::size_t depth_ = 0;
};

namespace detail {
template <class>
inline constexpr bool dependent_false = false;
// The one message for a value outside an enumeration, which the typed
// decoder, Tool::check_arguments and REST tools share:
// "expected one of ['celsius', 'fahrenheit'], got 'kelvin'". `allowed` is a
// JSON array.
std::string not_one_of(const Json& allowed, const Json& got);
bool check_string(const Json& in, DecodeState& st);
bool check_depth(const Json& in, DecodeState& st);
template <class T>
bool decode_integer(const Json& in, T& out, DecodeState& st);
bool decode_number(const Json& in, double& out, double max_abs, DecodeState& st);
void add_description(Schema& schema, std::string_view description);
}  // namespace detail

// Customisation point, shaped like fmt::formatter<T>: specialise it to teach
// agentkit a type it cannot describe with Describe<T>. A specialisation has
//   static void schema(Schema& out);                       // fill a fragment
//   static bool decode(const Json&, T&, DecodeState&);     // false on error
//   static Json encode(const T&);
//   static std::string type_name();                        // for messages
template <class T, class Enable = void>
struct Codec {
  static_assert(detail::dependent_false<T>,
                "agentkit: this type has no JSON Schema mapping. Supported: std::string, bool, integral and "
                "floating types, std::vector/std::set/std::array, std::map<std::string, T>, std::optional, "
                "std::variant, agentkit::Json, and structs/enums with an agentkit::Describe<T> "
                "specialization; or specialize agentkit::Codec<T> yourself.");
};

template <class T>
Schema schema_of() {
  Schema s = Schema::object();
  Codec<T>::schema(s);
  return s;
}

template <class T>
bool decode_into(const Json& in, T& out, DecodeState& st) {
  return Codec<T>::decode(in, out, st);
}

template <class T>
Json encode(const T& value) {
  return Codec<T>::encode(value);
}

template <class T>
std::string type_name() {
  return Codec<T>::type_name();
}

// ---------------------------------------------------------------- primitives

template <>
struct Codec<std::string> {
  static void schema(Schema& s) { s["type"] = "string"; }
  static bool decode(const Json& in, std::string& out, DecodeState& st) {
    if (!detail::check_string(in, st)) return false;
    out = in.get_ref<const std::string&>();
    return true;
  }
  static Json encode(const std::string& v) { return v; }
  static std::string type_name() { return "string"; }
};

template <>
struct Codec<bool> {
  static void schema(Schema& s) { s["type"] = "boolean"; }
  static bool decode(const Json& in, bool& out, DecodeState& st) {
    if (!in.is_boolean()) return st.type_error("boolean", in);
    out = in.get<bool>();
    return true;
  }
  static Json encode(bool v) { return v; }
  static std::string type_name() { return "boolean"; }
};

template <class T>
struct Codec<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char>>> {
  static void schema(Schema& s) {
    s["type"] = "integer";
    if constexpr (std::is_unsigned_v<T>) s["minimum"] = 0;
  }
  static bool decode(const Json& in, T& out, DecodeState& st) { return detail::decode_integer<T>(in, out, st); }
  static Json encode(T v) { return v; }
  static std::string type_name() { return "integer"; }
};

template <class T>
struct Codec<T, std::enable_if_t<std::is_floating_point_v<T>>> {
  static void schema(Schema& s) { s["type"] = "number"; }
  static bool decode(const Json& in, T& out, DecodeState& st) {
    double d = 0;
    if (!detail::decode_number(in, d, static_cast<double>(std::numeric_limits<T>::max()), st)) return false;
    out = static_cast<T>(d);
    return true;
  }
  // Non-finite values have no JSON form; they encode as null, which output
  // validation then reports as a shape error.
  static Json encode(T v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }
  static std::string type_name() { return "number"; }
};

template <>
struct Codec<Json> {
  static void schema(Schema&) {}
  static bool decode(const Json& in, Json& out, DecodeState& st) {
    if (!detail::check_depth(in, st)) return false;
    out = in;
    return true;
  }
  static Json encode(const Json& v) { return v; }
  static std::string type_name() { return "any"; }
};

// ---------------------------------------------------------------- containers

namespace detail {
template <class Elem, class Insert>
bool decode_array(const Json& in, DecodeState& st, Insert insert) {
  if (!in.is_array()) return st.type_error("array", in);
  bool ok = true;
  for (std::size_t i = 0; i < in.size(); ++i) {
    DecodeState::Scope scope(st, i);
    if (!scope.entered()) return false;
    Elem elem{};
    if (Codec<Elem>::decode(in[i], elem, st)) {
      insert(std::move(elem));
    } else {
      ok = false;
    }
  }
  return ok;
}
}  // namespace detail

template <class T, class A>
struct Codec<std::vector<T, A>> {
  static void schema(Schema& s) {
    s["type"] = "array";
    s["items"] = schema_of<T>();
  }
  static bool decode(const Json& in, std::vector<T, A>& out, DecodeState& st) {
    out.clear();
    if (in.is_array()) out.reserve(in.size());
    return detail::decode_array<T>(in, st, [&](T&& v) { out.push_back(std::move(v)); });
  }
  static Json encode(const std::vector<T, A>& v) {
    Json out = Json::array();
    for (const auto& e : v) out.push_back(Codec<T>::encode(e));
    return out;
  }
  static std::string type_name() { return "array of " + Codec<T>::type_name(); }
};

template <class T, class C, class A>
struct Codec<std::set<T, C, A>> {
  static void schema(Schema& s) {
    s["type"] = "array";
    s["items"] = schema_of<T>();
  }
  static bool decode(const Json& in, std::set<T, C, A>& out, DecodeState& st) {
    out.clear();
    return detail::decode_array<T>(in, st, [&](T&& v) { out.insert(std::move(v)); });
  }
  static Json encode(const std::set<T, C, A>& v) {
    Json out = Json::array();
    for (const auto& e : v) out.push_back(Codec<T>::encode(e));
    return out;
  }
  static std::string type_name() { return "array of " + Codec<T>::type_name(); }
};

template <class T, std::size_t N>
struct Codec<std::array<T, N>> {
  static void schema(Schema& s) {
    s["type"] = "array";
    s["items"] = schema_of<T>();
    s["minItems"] = N;
    s["maxItems"] = N;
  }
  static bool decode(const Json& in, std::array<T, N>& out, DecodeState& st) {
    if (in.is_array() && in.size() != N) {
      return st.fail("expected an array of exactly " + std::to_string(N) + " items, got " + std::to_string(in.size()));
    }
    std::size_t i = 0;
    return detail::decode_array<T>(in, st, [&](T&& v) { out[i++] = std::move(v); });
  }
  static Json encode(const std::array<T, N>& v) {
    Json out = Json::array();
    for (const auto& e : v) out.push_back(Codec<T>::encode(e));
    return out;
  }
  static std::string type_name() { return "array of " + std::to_string(N) + " " + Codec<T>::type_name(); }
};

template <class T, class C, class A>
struct Codec<std::map<std::string, T, C, A>> {
  static void schema(Schema& s) {
    s["type"] = "object";
    s["additionalProperties"] = schema_of<T>();
  }
  static bool decode(const Json& in, std::map<std::string, T, C, A>& out, DecodeState& st) {
    if (!in.is_object()) return st.type_error("object", in);
    out.clear();
    bool ok = true;
    for (const auto& [key, value] : in.items()) {
      DecodeState::Scope scope(st, std::string_view(key));
      if (!scope.entered()) return false;
      T elem{};
      if (Codec<T>::decode(value, elem, st)) {
        out.emplace(key, std::move(elem));
      } else {
        ok = false;
      }
    }
    return ok;
  }
  static Json encode(const std::map<std::string, T, C, A>& v) {
    Json out = Json::object();
    for (const auto& [k, e] : v) out[k] = Codec<T>::encode(e);
    return out;
  }
  static std::string type_name() { return "object of " + Codec<T>::type_name(); }
};

template <class T>
struct Codec<std::optional<T>> {
  static void schema(Schema& s) {
    Schema null_schema = Schema::object();
    null_schema["type"] = "null";
    s["anyOf"] = Schema::array({schema_of<T>(), std::move(null_schema)});
  }
  static bool decode(const Json& in, std::optional<T>& out, DecodeState& st) {
    if (in.is_null()) {
      out.reset();
      return true;
    }
    T value{};
    if (!Codec<T>::decode(in, value, st)) return false;
    out = std::move(value);
    return true;
  }
  static Json encode(const std::optional<T>& v) { return v ? Codec<T>::encode(*v) : Json(nullptr); }
  static std::string type_name() { return Codec<T>::type_name() + " or null"; }
};

template <class... Ts>
struct Codec<std::variant<Ts...>> {
  static void schema(Schema& s) { s["anyOf"] = Schema::array({schema_of<Ts>()...}); }
  // The first alternative that decodes cleanly wins; none coerces, so the
  // order matters only for overlapping alternatives (int before double).
  static bool decode(const Json& in, std::variant<Ts...>& out, DecodeState& st) {
    bool done = false;
    ((done = done || try_one<Ts>(in, out, st)), ...);
    if (!done) return st.fail("expected " + type_name() + ", got " + std::string(json_type_name(in)) + " " + preview(in));
    return true;
  }
  static Json encode(const std::variant<Ts...>& v) {
    return std::visit([](const auto& x) { return Codec<std::decay_t<decltype(x)>>::encode(x); }, v);
  }
  static std::string type_name() {
    std::string out;
    ((out += (out.empty() ? "" : " or ") + Codec<Ts>::type_name()), ...);
    return out;
  }

 private:
  template <class T>
  static bool try_one(const Json& in, std::variant<Ts...>& out, DecodeState& st) {
    DecodeState scratch(st.limits());
    T value{};
    if (!Codec<T>::decode(in, value, scratch)) return false;
    out = std::move(value);
    return true;
  }
};

// ---------------------------------------------------------------- described types

template <DescribedEnum E>
struct Codec<E> {
  static void schema(Schema& s) {
    Schema values = Schema::array();
    for (const auto& v : Describe<E>::values) values.push_back(std::string(v.text));
    s["enum"] = std::move(values);
    s["type"] = "string";
  }
  // The messages of Tool::check_arguments for {"type": "string", "enum": [...]}.
  static bool decode(const Json& in, E& out, DecodeState& st) {
    if (!in.is_string()) return st.type_error("string", in);
    if (auto value = detail::enum_parse(Describe<E>::values, in.get_ref<const std::string&>())) {
      out = *value;
      return true;
    }
    Json allowed = Json::array();
    for (const auto& v : Describe<E>::values) allowed.push_back(std::string(v.text));
    return st.fail(detail::not_one_of(allowed, in));
  }
  static Json encode(E value) {
    if (auto text = detail::enum_name(Describe<E>::values, value)) return std::string(*text);
    return nullptr;  // an undeclared enumerator: output validation reports it
  }
  static std::string type_name() { return std::string(Describe<E>::name); }
};

namespace detail {
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

template <class Class, class Member>
void field_schema(const Field<Class, Member>& f, Schema& properties, Schema& required) {
  Schema prop = schema_of<Member>();
  add_description(prop, f.description);
  properties[std::string(f.name)] = std::move(prop);
  if (!f.has_default && !is_optional<Member>::value) required.push_back(std::string(f.name));
}

// Outcome of decoding one named slot of an object.
enum class Slot { set, absent, failed };

// Decodes key `name` of object `in` into `out`. An absent key (or null for a
// slot with a default) is `absent` when the slot is optional, else reported
// missing.
template <class M>
Slot decode_slot(const Json& in, std::string_view name, bool has_default, M& out, DecodeState& st) {
  auto it = in.find(name);
  const bool optional = has_default || is_optional<M>::value;
  if (it == in.end() || (it->is_null() && has_default && !is_optional<M>::value)) {
    if (optional) return Slot::absent;
    st.report_missing(name);
    return Slot::failed;
  }
  DecodeState::Scope scope(st, name);
  if (!scope.entered()) return Slot::failed;
  return Codec<M>::decode(*it, out, st) ? Slot::set : Slot::failed;
}

template <class Class, class Member>
bool field_decode(const Json& in, Class& out, const Field<Class, Member>& f, DecodeState& st) {
  return decode_slot(in, f.name, f.has_default, out.*(f.member), st) != Slot::failed;
}

template <class Fields>
bool is_field_name(const Fields& fields, std::string_view key) {
  return std::apply([&](const auto&... f) { return ((f.name == key) || ...); }, fields);
}
}  // namespace detail

template <DescribedStruct T>
struct Codec<T> {
  static void schema(Schema& s) {
    s["type"] = "object";
    if constexpr (requires { Describe<T>::description; }) detail::add_description(s, Describe<T>::description);
    Schema properties = Schema::object();
    Schema required = Schema::array();
    std::apply([&](const auto&... f) { (detail::field_schema(f, properties, required), ...); }, Describe<T>::fields);
    s["properties"] = std::move(properties);
    if (!required.empty()) s["required"] = std::move(required);
  }
  static bool decode(const Json& in, T& out, DecodeState& st) {
    if (!in.is_object()) return st.type_error("object", in);  // as Tool::check_arguments says it
    bool ok = true;
    for (const auto& [key, value] : in.items()) {
      if (!detail::is_field_name(Describe<T>::fields, key)) {
        st.report_unexpected(key);
        ok = false;
      }
    }
    std::apply([&](const auto&... f) { ((ok = detail::field_decode(in, out, f, st) && ok), ...); },
               Describe<T>::fields);
    return ok;
  }
  static Json encode(const T& v) {
    Json out = Json::object();
    std::apply([&](const auto&... f) { ((out[std::string(f.name)] = encode_member(v.*(f.member))), ...); },
               Describe<T>::fields);
    return out;
  }
  static std::string type_name() { return std::string(Describe<T>::name); }

 private:
  template <class M>
  static Json encode_member(const M& m) {
    return Codec<M>::encode(m);
  }
};

// Decodes `in` as a T, throwing ToolArgumentError (tool name `context`) on
// any error. Convenience for host code and tests.
template <class T>
T decode(const Json& in, std::string_view context = "value", const JsonLimits& limits = {});

// Parses model-authored JSON text under `limits` (depth, size, UTF-8, number
// range). Failures throw ToolArgumentError naming `tool` with the reason as an
// invalid "(arguments)" entry, never a parser crash or stack overflow.
Json parse_arguments(std::string_view tool, std::string_view text, const JsonLimits& limits = {});

// ---------------------------------------------------------------- inline details

namespace detail {
template <class T>
bool decode_integer(const Json& in, T& out, DecodeState& st) {
  using L = std::numeric_limits<T>;
  const auto out_of_range = [&] {
    return st.fail(preview(in) + " is out of range for this integer (" + std::to_string(L::min()) + ".." +
                   std::to_string(L::max()) + ")");
  };
  switch (in.type()) {
    case Json::value_t::number_integer: {
      const auto v = in.get<std::int64_t>();
      if (!std::in_range<T>(v)) return out_of_range();
      out = static_cast<T>(v);
      return true;
    }
    case Json::value_t::number_unsigned: {
      const auto v = in.get<std::uint64_t>();
      if (!std::in_range<T>(v)) return out_of_range();
      out = static_cast<T>(v);
      return true;
    }
    case Json::value_t::number_float: {
      const double d = in.get<double>();
      if (!std::isfinite(d) || d != std::trunc(d)) return st.type_error("integer", in);
      // 2^63 and 2^64 are exact doubles; compare in double space before casting.
      if (d < static_cast<double>(L::min()) || d >= std::ldexp(1.0, L::digits)) return out_of_range();
      out = static_cast<T>(d);
      return true;
    }
    default:
      return st.type_error("integer", in);
  }
}
}  // namespace detail

template <class T>
T decode(const Json& in, std::string_view context, const JsonLimits& limits) {
  DecodeState st(limits);
  T out{};
  Codec<T>::decode(in, out, st);
  if (!st.ok()) {
    throw ToolArgumentError(std::string(context), std::move(st.missing), std::move(st.unexpected),
                            std::move(st.invalid), {});
  }
  return out;
}

}  // namespace agentkit
