#pragma once
// Declaring a tool from a typed C++ callable. The callable's signature, plus
// parameter names, is the one declaration the JSON Schema, the argument
// validation and the conversion into C++ values all derive from.
//
// Example (named parameters):
//   auto forecast = agentkit::tool("forecast")
//       .doc("Return a short weather forecast for a city over the next few days.")
//       .side_effecting(false)
//       .idempotent()
//       .params("city", "unit", agentkit::opt("days", 3), agentkit::opt("mode", Mode::daily))
//       .fn([](const std::string& city, Unit unit, int days, Mode mode) { return city + ": mild"; });
//
// Example (one described struct is the whole argument object):
//   auto search = agentkit::tool("search")
//       .doc("Search the connected knowledge base for matching passages.")
//       .side_effecting(false)
//       .fn([](const SearchParams& p) { return run_search(p.query, p.limit); });
//
// Rules the declaration enforces:
//   - `.side_effecting(bool)` is mandatory: `.fn()` does not compile without it.
//   - Parameters are taken by value or const reference (arguments are immutable).
//   - A `RunContext&` parameter receives the run's context and is never
//     advertised; a model-sent "ctx"/"context" key is then dropped.
//   - An `Extras` parameter receives the argument keys the tool does not
//     advertise (Python's **kwargs); without one such keys are rejected.
//   - A parameter without a default (and not std::optional) is required.
//   - A described-struct return type is the inferred output type, checked
//     after the body returns; `.output<T>()` declares one for a callable that
//     returns agentkit::Json; `.no_output_check()` opts out.
#include <cstddef>
#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <agentkit/context.h>
#include <agentkit/description.h>
#include <agentkit/errors.h>
#include <agentkit/inject.h>
#include <agentkit/schema.h>
#include <agentkit/tool.h>

namespace agentkit {

// Argument keys a tool did not advertise, handed to a callable that declares
// an `Extras` (or `const Extras&`) parameter.
struct Extras {
  Json values = Json::object();
};

// One named parameter of a multi-argument callable: a name, an optional
// per-argument description shown to the model, and an optional default.
struct Param {
  std::string name;
  std::string description;
  std::optional<Json> default_value;  // encoded; decoded into the parameter's type once

  Param(const char* n) : name(n) {}  // NOLINT: a bare string is a required parameter
  Param(std::string n, std::string d = {}, std::optional<Json> def = std::nullopt)
      : name(std::move(n)), description(std::move(d)), default_value(std::move(def)) {}
};

// A required parameter with a description for the model.
inline Param param(std::string name, std::string description = {}) {
  return Param(std::move(name), std::move(description));
}

// A parameter with a default: not required; absent (or null) means `value`.
template <class V>
Param opt(std::string name, const V& value, std::string description = {}) {
  using Stored = std::conditional_t<std::is_convertible_v<const V&, std::string_view> && !std::is_enum_v<V>,
                                    std::string, V>;
  return Param(std::move(name), std::move(description), Codec<Stored>::encode(Stored(value)));
}

namespace detail {

inline constexpr std::size_t kUnnamed = static_cast<std::size_t>(-1);

// The non-template half of a declaration, filled by ToolBuilder.
struct ToolDraft {
  ToolSpec spec;
  std::optional<std::string> doc;
  std::optional<std::string> explicit_description;
  std::vector<Param> params;
  JsonLimits limits;
  bool hidden = false;
  bool output_check = true;
  // Set by .output<T>(): schema, type name and a validator for Json results.
  std::optional<Schema> output_schema;
  std::string output_type;
  std::function<bool(const Json&, DecodeState&)> output_validate;
};

// Validates the name, resolves the description and fills `spec`; throws
// ToolDefinitionError on any wiring mistake.
void finish_spec(ToolDraft& draft, Schema parameters, std::vector<std::string> accepted);

// Throws agentkit::Error (invalid_argument) saying why `tool`'s approval rule
// could not read a call's arguments.
[[noreturn]] void approval_rule_failed(const std::string& tool, const std::string& why);

template <class T>
struct callable_traits : callable_traits<decltype(&std::remove_cvref_t<T>::operator())> {};
template <class R, class... A>
struct callable_traits<R (*)(A...)> {
  using result = R;
  using args = std::tuple<A...>;
};
template <class R, class... A>
struct callable_traits<R (*)(A...) noexcept> : callable_traits<R (*)(A...)> {};
template <class R, class... A>
struct callable_traits<R(A...)> : callable_traits<R (*)(A...)> {};
template <class C, class R, class... A>
struct callable_traits<R (C::*)(A...)> : callable_traits<R (*)(A...)> {};
template <class C, class R, class... A>
struct callable_traits<R (C::*)(A...) const> : callable_traits<R (*)(A...)> {};
template <class C, class R, class... A>
struct callable_traits<R (C::*)(A...) noexcept> : callable_traits<R (*)(A...)> {};
template <class C, class R, class... A>
struct callable_traits<R (C::*)(A...) const noexcept> : callable_traits<R (*)(A...)> {};

template <class A>
inline constexpr bool is_context_arg = std::is_same_v<std::remove_cvref_t<A>, RunContext>;
template <class A>
inline constexpr bool is_extras_arg = std::is_same_v<std::remove_cvref_t<A>, Extras>;
template <class A>
struct is_inject : std::false_type {};
template <class T>
struct is_inject<Inject<T>> : std::true_type {};
template <class A>
inline constexpr bool is_inject_arg = is_inject<std::remove_cvref_t<A>>::value;

// What an Inject<T> parameter of `tool` gets from ctx.dependencies; throws
// MissingDependency naming the tool and type (a run checks before it
// starts, so a call meets this only outside a run).
std::shared_ptr<void> injected(const RunContext& ctx, std::type_index type, const std::string& tool);

template <class A>
void add_injected(std::vector<InjectedType>& out) {
  if constexpr (is_inject_arg<A>) {
    using T = typename std::remove_cvref_t<A>::type;
    for (const auto& known : out) {
      if (known.type == typeid(T)) return;
    }
    out.push_back(InjectedType{typeid(T), type_name(typeid(T))});
  }
}
template <class A>
inline constexpr bool is_data_arg = !is_context_arg<A> && !is_extras_arg<A> && !is_inject_arg<A>;

template <class Tuple>
struct data_values;
template <class... A>
struct data_values<std::tuple<A...>> {
  using type = decltype(std::tuple_cat(std::declval<std::conditional_t<is_data_arg<A>, std::tuple<std::remove_cvref_t<A>>,
                                                                       std::tuple<>>>()...));
};

template <class Tuple, std::size_t I>
constexpr std::size_t data_index() {
  return []<std::size_t... J>(std::index_sequence<J...>) {
    return (std::size_t{0} + ... + (is_data_arg<std::tuple_element_t<J, Tuple>> ? 1 : 0));
  }(std::make_index_sequence<I>{});
}

// True when a callable's data parameters are exactly one described struct.
template <class Values>
inline constexpr bool single_described_struct = false;
template <DescribedStruct S>
inline constexpr bool single_described_struct<std::tuple<S>> = true;

template <class A>
constexpr bool valid_arg() {
  if constexpr (is_context_arg<A>) {
    return std::is_lvalue_reference_v<A>;
  } else {
    return !std::is_lvalue_reference_v<A> || std::is_const_v<std::remove_reference_t<A>>;
  }
}

template <class T>
struct is_json_result : std::is_same<std::remove_cvref_t<T>, Json> {};

// A tool backed by a typed callable. Built only by ToolBuilder::fn.
template <class F, bool Named>
class FunctionTool final : public Tool {
  using Traits = callable_traits<F>;
  using Args = typename Traits::args;
  using R = std::remove_cvref_t<typename Traits::result>;
  using Values = typename data_values<Args>::type;
  static constexpr std::size_t kArity = std::tuple_size_v<Args>;
  static constexpr std::size_t kData = std::tuple_size_v<Values>;
  static constexpr bool kTakesContext = []<std::size_t... I>(std::index_sequence<I...>) {
    return (false || ... || is_context_arg<std::tuple_element_t<I, Args>>);
  }(std::make_index_sequence<kArity>{});
  static constexpr bool kTakesExtras = []<std::size_t... I>(std::index_sequence<I...>) {
    return (false || ... || is_extras_arg<std::tuple_element_t<I, Args>>);
  }(std::make_index_sequence<kArity>{});
  using Defaults = decltype([]<class... D>(std::tuple<D...>*) { return std::tuple<std::optional<D>...>{}; }(
      static_cast<Values*>(nullptr)));

 public:
  FunctionTool(F f, ToolDraft draft) : f_(std::move(f)), limits_(draft.limits) {
    Schema parameters = Schema::object();
    if constexpr (Named) {
      parameters["type"] = "object";
      Schema properties = Schema::object();
      Schema required = Schema::array();
      build_named([&]<std::size_t I>(std::integral_constant<std::size_t, I>) {
        using D = std::tuple_element_t<I, Values>;
        const Param& p = draft.params[I];
        Schema prop = schema_of<D>();
        add_description(prop, p.description);
        properties[p.name] = std::move(prop);
        if (p.default_value) {
          DecodeState st(limits_);
          D value{};
          if (!Codec<D>::decode(*p.default_value, value, st)) {
            throw ToolDefinitionError("tool '" + draft.spec.name + "': the default for parameter '" + p.name +
                                      "' does not fit its type " + Codec<D>::type_name());
          }
          std::get<I>(defaults_) = std::move(value);
        } else if (!is_optional<D>::value) {
          required.push_back(p.name);
        }
        accepted_.push_back(p.name);
      });
      parameters["properties"] = std::move(properties);
      if (!required.empty()) parameters["required"] = std::move(required);
    } else if constexpr (kData == 1) {
      using S = std::tuple_element_t<0, Values>;
      parameters = schema_of<S>();
      parameters.erase("description");
      std::apply([&](const auto&... f) { (accepted_.emplace_back(f.name), ...); }, Describe<S>::fields);
    } else {
      parameters["type"] = "object";
      parameters["properties"] = Schema::object();
    }
    if (draft.output_validate == nullptr && draft.output_check) {
      if constexpr (DescribedStruct<R>) {
        draft.output_schema = schema_of<R>();
        draft.output_type = Codec<R>::type_name();
        draft.output_validate = [](const Json& v, DecodeState& st) {
          R tmp{};
          return Codec<R>::decode(v, tmp, st);
        };
      }
    }
    if (!draft.output_check) draft.output_validate = nullptr;
    output_validate_ = std::move(draft.output_validate);
    output_type_ = draft.output_type;
    draft.spec.accepts_extra_arguments = kTakesExtras;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (add_injected<std::tuple_element_t<I, Args>>(draft.spec.injected), ...);
    }(std::make_index_sequence<kArity>{});
    finish_spec(draft, std::move(parameters), accepted_);
    spec_ = std::move(draft.spec);
    drop_context_keys_ = kTakesContext && !is_accepted("ctx");
  }

  const ToolSpec& spec() const noexcept override { return spec_; }

  Json run(const Json& arguments, RunContext& ctx) const override { return run_output(arguments, ctx).value; }
  ToolOutput run_output(const Json& arguments, RunContext& ctx) const override {
    Extras extras;
    Values values{};
    decode_arguments(arguments, extras, values);
    return call(ctx, extras, values, std::make_index_sequence<kArity>{});
  }

  // Exactly what run() decodes, without running.
  void check_arguments(const Json& arguments) const override {
    Extras extras;
    Values values{};
    decode_arguments(arguments, extras, values);
  }

 private:
  // Decodes `arguments` into `extras` and `values`; throws ToolArgumentError
  // with every problem found.
  void decode_arguments(const Json& arguments, Extras& extras, Values& values) const {
    if (!arguments.is_object()) {
      throw ToolArgumentError(spec_.name, {}, {},
                              {{"(arguments)", "expected a JSON object, got " + std::string(json_type_name(arguments)) +
                                                   " " + preview(arguments)}},
                              accepted_);
    }
    DecodeState st(limits_);
    // The object's own map: items() would build a proxy (with a string) per key.
    for (const auto& [key, value] : arguments.get_ref<const Json::object_t&>()) {
      if (is_accepted(key)) continue;
      if (drop_context_keys_ && (key == "ctx" || key == "context")) continue;
      if constexpr (kTakesExtras) {
        DecodeState::Scope scope(st, std::string_view(key));
        if (scope.entered() && Codec<Json>::decode(value, extras.values[key], st)) continue;
      } else {
        st.report_unexpected(key);
      }
    }
    if constexpr (Named) {
      build_named([&]<std::size_t I>(std::integral_constant<std::size_t, I>) {
        auto& slot = std::get<I>(values);
        if (decode_slot(arguments, accepted_[I], std::get<I>(defaults_).has_value(), slot, st) == Slot::absent &&
            std::get<I>(defaults_)) {
          slot = *std::get<I>(defaults_);
        }
      });
    } else if constexpr (kData == 1) {
      using S = std::tuple_element_t<0, Values>;
      std::apply([&](const auto&... f) { (field_decode(arguments, std::get<0>(values), f, st), ...); },
                 Describe<S>::fields);
    }
    if (!st.ok()) {
      throw ToolArgumentError(spec_.name, std::move(st.missing), std::move(st.unexpected), std::move(st.invalid),
                              accepted_);
    }
  }

  template <class Fn>
  static void build_named(Fn&& fn) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (fn(std::integral_constant<std::size_t, I>{}), ...);
    }(std::make_index_sequence<kData>{});
  }

  bool is_accepted(std::string_view key) const {
    for (const auto& name : accepted_) {
      if (name == key) return true;
    }
    return false;
  }

  template <std::size_t I>
  decltype(auto) pick(RunContext& ctx, const Extras& extras, Values& values) const {
    using A = std::tuple_element_t<I, Args>;
    if constexpr (is_context_arg<A>) {
      return (ctx);
    } else if constexpr (is_extras_arg<A>) {
      return (extras);
    } else if constexpr (is_inject_arg<A>) {
      using In = std::remove_cvref_t<A>;
      return In(std::static_pointer_cast<typename In::type>(injected(ctx, typeid(typename In::type), spec_.name)));
    } else if constexpr (std::is_reference_v<A>) {
      return std::as_const(std::get<data_index<Args, I>()>(values));
    } else {
      return std::move(std::get<data_index<Args, I>()>(values));
    }
  }

  template <std::size_t... I>
  ToolOutput call(RunContext& ctx, const Extras& extras, Values& values, std::index_sequence<I...>) const {
    if constexpr (std::is_void_v<R>) {
      std::invoke(f_, pick<I>(ctx, extras, values)...);
      return {Json(nullptr), {}};
    } else if constexpr (std::is_same_v<R, ToolOutput>) {
      return std::invoke(f_, pick<I>(ctx, extras, values)...);
    } else {
      Json out;
      if constexpr (is_json_result<R>::value) {
        out = std::invoke(f_, pick<I>(ctx, extras, values)...);
      } else {
        out = Codec<R>::encode(std::invoke(f_, pick<I>(ctx, extras, values)...));
      }
      if (output_validate_) {
        DecodeState st(limits_);
        if (!output_validate_(out, st)) {
          throw ToolShapeError(spec_.name, std::move(out), output_type_, st.summary());
        }
      }
      return {std::move(out), {}};
    }
  }

  F f_;
  JsonLimits limits_;
  ToolSpec spec_;
  std::vector<std::string> accepted_;
  Defaults defaults_;
  std::function<bool(const Json&, DecodeState&)> output_validate_;
  std::string output_type_;
  bool drop_context_keys_ = false;
};

}  // namespace detail

// Fluent declaration of a function tool; start it with agentkit::tool(name).
// `HasEffects` tracks whether .side_effecting() was called; `NParams` how many
// names .params() gave (kUnnamed when none). Each call consumes the builder.
template <bool HasEffects = false, std::size_t NParams = detail::kUnnamed>
class ToolBuilder {
 public:
  explicit ToolBuilder(std::string name) { draft_.spec.name = std::move(name); }

  // Doc text, interpreted by the description rules (see description.h).
  ToolBuilder doc(std::string text) && {
    draft_.doc = std::move(text);
    return std::move(*this);
  }
  // An explicit description: replaces the doc text, only stripped.
  ToolBuilder description(std::string text) && {
    draft_.explicit_description = std::move(text);
    return std::move(*this);
  }
  // Mandatory: true if the tool changes the world or has external effects.
  ToolBuilder<true, NParams> side_effecting(bool value) && {
    draft_.spec.effects.side_effecting = value;
    return ToolBuilder<true, NParams>(std::move(draft_));
  }
  // A retry of the same call is safe. Independent of side_effecting.
  ToolBuilder idempotent(bool value = true) && {
    draft_.spec.effects.idempotent = value;
    return std::move(*this);
  }
  // Always pause for a human decision first, at every autonomy tier.
  // (A template, so a lambda, which converts to bool, never lands here.)
  template <std::same_as<bool> B = bool>
  ToolBuilder requires_approval(B value = true) && {
    draft_.spec.effects.requires_approval = value;
    return std::move(*this);
  }
  // Pause for a human decision when `rule` says so for a call: a callable
  // taking the arguments, as `const Json&` or as a struct with an
  // agentkit::Describe specialization (its fields decoded from the arguments;
  // other keys ignored), and optionally `const RunContext&` after them. A
  // rule that throws, or whose struct cannot be decoded from the arguments,
  // means approval is required.
  //
  // Example:
  //   .requires_approval([](const Refund& r) { return r.amount_usd > 100; })
  template <class Rule>
    requires(!std::same_as<std::decay_t<Rule>, bool>)
  ToolBuilder requires_approval(Rule rule) && {
    using Args = typename detail::callable_traits<std::decay_t<Rule>>::args;
    constexpr std::size_t kArity = std::tuple_size_v<Args>;
    static_assert(kArity == 1 || kArity == 2, "agentkit: an approval rule takes (arguments) or (arguments, const RunContext&)");
    using A = std::remove_cvref_t<std::tuple_element_t<0, Args>>;
    static_assert(std::is_same_v<A, Json> || DescribedStruct<A>,
                  "agentkit: an approval rule takes the arguments as const Json& or as a described struct");
    if constexpr (kArity == 2) {
      static_assert(detail::is_context_arg<std::tuple_element_t<1, Args>>,
                    "agentkit: an approval rule's second parameter is const RunContext&");
    }
    draft_.spec.approval_when = [rule = std::move(rule), name = draft_.spec.name](const Json& arguments,
                                                                                  const RunContext& ctx) -> bool {
      const auto call = [&](const A& value) -> bool {
        if constexpr (kArity == 2) {
          return static_cast<bool>(std::invoke(rule, value, ctx));
        } else {
          return static_cast<bool>(std::invoke(rule, value));
        }
      };
      if constexpr (std::is_same_v<A, Json>) {
        return call(arguments);
      } else {
        if (!arguments.is_object()) detail::approval_rule_failed(name, "the arguments are not an object");
        DecodeState st;
        A value{};
        std::apply([&](const auto&... f) { (detail::field_decode(arguments, value, f, st), ...); }, Describe<A>::fields);
        if (!st.ok()) detail::approval_rule_failed(name, st.summary());
        return call(value);
      }
    };
    return std::move(*this);
  }
  // Offer the tool to the model only on turns where `predicate` holds for
  // the run's context (see ToolSpec::available).
  ToolBuilder available_if(std::function<bool(const RunContext&)> predicate) && {
    draft_.spec.available = std::move(predicate);
    return std::move(*this);
  }
  // A description computed from the run's context before each model call
  // (see ToolSpec::describe); the static one (.doc / .description) stays the
  // fallback and is still required.
  ToolBuilder describe(std::function<std::string(const RunContext&)> describer) && {
    draft_.spec.describe = std::move(describer);
    return std::move(*this);
  }
  // memoize() may answer this tool's calls with another run's cached result.
  ToolBuilder shared_cache(bool value = true) && {
    draft_.spec.effects.shared_cache = value;
    return std::move(*this);
  }
  ToolBuilder tags(std::vector<std::string> values) && {
    draft_.spec.tags = std::move(values);
    return std::move(*this);
  }
  ToolBuilder metadata(Json values) && {
    draft_.spec.metadata = std::move(values);
    return std::move(*this);
  }
  // A fixed status line, or a formatter over the call's arguments.
  ToolBuilder status(std::string text) && {
    draft_.spec.status = [text = std::move(text)](const Json&) { return text; };
    return std::move(*this);
  }
  ToolBuilder status(std::function<std::string(const Json&)> formatter) && {
    draft_.spec.status = std::move(formatter);
    return std::move(*this);
  }
  // Loop-invisible: callable, never advertised to the model.
  ToolBuilder hidden() && {
    draft_.hidden = true;
    return std::move(*this);
  }
  ToolBuilder limits(JsonLimits values) && {
    draft_.limits = values;
    return std::move(*this);
  }
  // Names (and descriptions / defaults) of the callable's data parameters, in order.
  template <class... P>
  ToolBuilder<HasEffects, sizeof...(P)> params(P&&... p) && {
    draft_.params = {Param(std::forward<P>(p))...};
    return ToolBuilder<HasEffects, sizeof...(P)>(std::move(draft_));
  }
  // Declares the output type of a callable returning agentkit::Json.
  template <class T>
  ToolBuilder output() && {
    draft_.output_schema = schema_of<T>();
    draft_.output_type = Codec<T>::type_name();
    draft_.output_validate = [](const Json& v, DecodeState& st) {
      T tmp{};
      return Codec<T>::decode(v, tmp, st);
    };
    return std::move(*this);
  }
  // No output validation, even for a described-struct return type.
  ToolBuilder no_output_check() && {
    draft_.output_check = false;
    draft_.output_schema.reset();
    return std::move(*this);
  }

  // Finishes the declaration; throws ToolDefinitionError on a wiring mistake.
  template <class F>
  ToolPtr fn(F&& f) && {
    static_assert(HasEffects,
                  "agentkit: declare .side_effecting(true) or .side_effecting(false) before .fn(): approval gating "
                  "and idempotency depend on knowing whether the tool changes the world, and there is no safe "
                  "default");
    using Fn = std::decay_t<F>;
    using Args = typename detail::callable_traits<Fn>::args;
    using Values = typename detail::data_values<Args>::type;
    static_assert(
        []<std::size_t... I>(std::index_sequence<I...>) {
          return (true && ... && detail::valid_arg<std::tuple_element_t<I, Args>>());
        }(std::make_index_sequence<std::tuple_size_v<Args>>{}),
        "agentkit: tool parameters are immutable: take them by value or const reference (RunContext by reference)");
    constexpr std::size_t kData = std::tuple_size_v<Values>;
    if constexpr (NParams == detail::kUnnamed) {
      static_assert(kData == 0 || detail::single_described_struct<Values>,
                    "agentkit: name the callable's parameters with .params(\"a\", \"b\", ...), or take a single "
                    "struct with an agentkit::Describe specialization as the whole argument object");
      return std::make_shared<detail::FunctionTool<Fn, false>>(std::forward<F>(f), std::move(draft_));
    } else {
      static_assert(NParams == kData,
                    "agentkit: .params() must name every data parameter of the callable (RunContext& and Extras "
                    "parameters are not named)");
      return std::make_shared<detail::FunctionTool<Fn, true>>(std::forward<F>(f), std::move(draft_));
    }
  }

 private:
  template <bool, std::size_t>
  friend class ToolBuilder;
  explicit ToolBuilder(detail::ToolDraft draft) : draft_(std::move(draft)) {}

  detail::ToolDraft draft_;
};

// Starts a function tool declaration. See the examples at the top of this file.
inline ToolBuilder<> tool(std::string name) { return ToolBuilder<>(std::move(name)); }

}  // namespace agentkit
