#include <agentkit/function_tool.h>
#include <agentkit/tool.h>

#include <algorithm>
#include <cmath>
#include <set>

#include <agentkit/detail/schema_type.h>
#include <agentkit/context.h>
#include <agentkit/errors.h>
#include <agentkit/inject.h>
#include <agentkit/schema.h>

namespace agentkit {
namespace {
// Argument values are parsed under JsonLimits; this bounds a schema walk
// whatever the value (a recursive schema, a hand-built document).
constexpr std::size_t kMaxSchemaDepth = 64;
}  // namespace

std::string Tool::format_status(const Json& arguments) const {
  const auto& status = spec().status;
  if (!status) return name();
  try {
    return status(arguments);
  } catch (...) {
    // A status line is cosmetic: a failing formatter must never break a call.
    return name();
  }
}

bool detail::matches_schema_type(const Json& value, std::string_view type) noexcept {
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "null") return value.is_null();
  if (type == "number") return value.is_number();
  if (type == "integer") {
    if (value.is_number_integer()) return true;
    if (!value.is_number_float()) return false;
    const double d = value.get<double>();
    return std::isfinite(d) && d == std::floor(d);
  }
  return true;
}

namespace {

using Invalid = ToolArgumentError::Invalid;

// Why `value` does not fit the type or enum of the property schema `schema`
// ("" when it does).
std::string misfit(const Json& value, const Schema& schema) {
  if (auto type = schema.find("type"); type != schema.end()) {
    std::vector<std::string> types;
    if (type->is_string()) types.push_back(type->get<std::string>());
    if (type->is_array()) {
      for (const auto& t : *type) {
        if (t.is_string()) types.push_back(t.get<std::string>());
      }
    }
    if (!types.empty() && std::none_of(types.begin(), types.end(), [&](const auto& t) { return detail::matches_schema_type(value, t); })) {
      std::string expected;
      for (const auto& t : types) expected += (expected.empty() ? "" : " or ") + t;
      return "expected " + expected + ", got " + std::string(json_type_name(value)) + " " + preview(value);
    }
  }
  if (auto allowed = schema.find("enum"); allowed != schema.end() && allowed->is_array()) {
    if (std::none_of(allowed->begin(), allowed->end(), [&](const Schema& option) { return Json(option) == value; })) {
      return detail::not_one_of(Json(*allowed), value);
    }
  }
  return {};
}

const Schema& properties_of(const Schema& schema) {
  static const Schema empty = Schema::object();
  const auto found = schema.find("properties");
  return found != schema.end() && found->is_object() ? *found : empty;
}

bool is_required(const Schema& schema, const std::string& key) {
  const auto required = schema.find("required");
  return required != schema.end() && required->is_array() &&
         std::any_of(required->begin(), required->end(), [&](const Schema& k) { return k.is_string() && k == key; });
}

std::string member_path(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

void check_value(const Json& value, const Schema& schema, const std::string& path, std::vector<Invalid>& invalid,
                 std::size_t depth);

// The members of a nested object, as the typed decoder reports them (at the
// object's path): unknown keys where the schema is closed, then each
// property in declaration order, missing or misfitting; keys the schema
// does not name are checked against an additionalProperties schema.
void check_members(const Json& value, const Schema& schema, const std::string& path, std::vector<Invalid>& invalid,
                   std::size_t depth) {
  const Schema& properties = properties_of(schema);
  const auto extra = schema.find("additionalProperties");
  for (const auto& [key, member] : value.items()) {
    if (properties.contains(key)) continue;
    if (extra != schema.end() && extra->is_boolean() && !extra->get<bool>()) {
      invalid.push_back({path, "unexpected field '" + key + "'"});
    } else if (extra != schema.end() && extra->is_object()) {
      check_value(member, *extra, member_path(path, key), invalid, depth + 1);
    }
  }
  for (const auto& [key, property] : properties.items()) {
    if (auto member = value.find(key); member != value.end()) {
      check_value(*member, property, member_path(path, key), invalid, depth + 1);
    } else if (is_required(schema, key)) {
      invalid.push_back({path, "missing required field '" + key + "'"});
    }
  }
}

// Appends why `value` (at `path`) does not fit `schema`: its type or enum,
// else the members of an object and the items of an array, with the paths
// DecodeState writes ("stops[1].city"). Other keywords constrain nothing here.
void check_value(const Json& value, const Schema& schema, const std::string& path, std::vector<Invalid>& invalid,
                 std::size_t depth) {
  if (!schema.is_object() || depth > kMaxSchemaDepth) return;
  if (std::string why = misfit(value, schema); !why.empty()) {
    invalid.push_back({path, std::move(why)});
  } else if (value.is_object()) {
    check_members(value, schema, path, invalid, depth);
  } else if (auto items = schema.find("items"); value.is_array() && items != schema.end() && items->is_object()) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      check_value(value[i], *items, path + "[" + std::to_string(i) + "]", invalid, depth + 1);
    }
  }
}

}  // namespace

void Tool::check_arguments(const Json& arguments) const {
  if (!spec().parameters) return;
  const Schema& schema = *spec().parameters;
  const Schema& properties = properties_of(schema);
  std::vector<std::string> accepted;
  for (const auto& [key, value] : properties.items()) accepted.push_back(key);
  if (!arguments.is_object()) {
    throw ToolArgumentError(name(), {}, {},
                            {{"(arguments)", "expected a JSON object, got " + std::string(json_type_name(arguments)) +
                                                 " " + preview(arguments)}},
                            accepted);
  }
  std::vector<std::string> missing;
  std::vector<std::string> unexpected;
  std::vector<Invalid> invalid;
  if (auto required = schema.find("required"); required != schema.end() && required->is_array()) {
    for (const auto& key : *required) {
      if (key.is_string() && !arguments.contains(key.get<std::string>())) missing.push_back(key.get<std::string>());
    }
  }
  const auto extra = schema.find("additionalProperties");
  const bool closed =
      !spec().accepts_extra_arguments && extra != schema.end() && extra->is_boolean() && !extra->get<bool>();
  for (const auto& [key, value] : arguments.items()) {
    if (closed && !properties.contains(key)) unexpected.push_back(key);
  }
  // In declaration order, as a function tool decodes its parameters.
  for (const auto& [key, property] : properties.items()) {
    if (auto value = arguments.find(key); value != arguments.end()) check_value(*value, property, key, invalid, 1);
  }
  if (!missing.empty() || !unexpected.empty() || !invalid.empty()) {
    throw ToolArgumentError(name(), std::move(missing), std::move(unexpected), std::move(invalid), std::move(accepted));
  }
}

namespace detail {

std::shared_ptr<void> injected(const RunContext& ctx, std::type_index type, const std::string& tool) {
  if (!ctx.dependencies) {
    throw MissingDependency("tool '" + tool + "' needs Inject<" + type_name(type) +
                            ">, and the run's context provides no dependencies");
  }
  return ctx.dependencies->get(type, ctx);
}

void approval_rule_failed(const std::string& tool, const std::string& why) {
  throw Error(ErrorCode::invalid_argument, "tool '" + tool + "': its approval rule cannot read the arguments: " + why);
}

void finish_spec(ToolDraft& draft, Schema parameters, std::vector<std::string> accepted) {
  const std::string& name = draft.spec.name;
  const bool valid_name = !name.empty() && name.size() <= 64 &&
                          name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
                              std::string::npos;
  if (!valid_name) {
    throw ToolDefinitionError("tool name '" + name +
                              "' is invalid: use 1 to 64 letters, digits, '_' or '-' (what every provider accepts)");
  }
  std::set<std::string> seen;
  for (const auto& arg : accepted) {
    if (arg.empty()) throw ToolDefinitionError("tool '" + name + "' has a parameter with an empty name");
    if (!seen.insert(arg).second) {
      throw ToolDefinitionError("tool '" + name + "' declares parameter '" + arg + "' twice");
    }
  }
  draft.spec.description = resolve_description(
      name, draft.doc ? std::optional<std::string_view>(*draft.doc) : std::nullopt,
      draft.explicit_description ? std::optional<std::string_view>(*draft.explicit_description) : std::nullopt);
  if (!draft.hidden) draft.spec.parameters = std::move(parameters);
  draft.spec.output_schema = draft.output_schema;
}

}  // namespace detail
}  // namespace agentkit
