#include <agentkit/function_tool.h>
#include <agentkit/tool.h>

#include <algorithm>
#include <cmath>
#include <set>

#include <agentkit/detail/schema_type.h>
#include <agentkit/errors.h>

namespace agentkit {

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

// Why `value` does not fit the property schema `schema` ("" when it does).
std::string misfit(const Json& value, const Schema& schema) {
  if (!schema.is_object()) return {};
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
      std::string options;
      for (const auto& option : *allowed) options += (options.empty() ? "" : ", ") + preview(Json(option));
      return "expected one of [" + options + "], got " + preview(value);
    }
  }
  return {};
}

}  // namespace

void Tool::check_arguments(const Json& arguments) const {
  if (!spec().parameters) return;
  const Schema& schema = *spec().parameters;
  const Schema empty = Schema::object();
  const auto found = schema.find("properties");
  const Schema& properties = found != schema.end() && found->is_object() ? *found : empty;
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
  std::vector<ToolArgumentError::Invalid> invalid;
  if (auto required = schema.find("required"); required != schema.end() && required->is_array()) {
    for (const auto& key : *required) {
      if (key.is_string() && !arguments.contains(key.get<std::string>())) missing.push_back(key.get<std::string>());
    }
  }
  const auto extra = schema.find("additionalProperties");
  const bool closed =
      !spec().accepts_extra_arguments && extra != schema.end() && extra->is_boolean() && !extra->get<bool>();
  for (const auto& [key, value] : arguments.items()) {
    if (auto property = properties.find(key); property != properties.end()) {
      if (std::string why = misfit(value, *property); !why.empty()) invalid.push_back({key, std::move(why)});
    } else if (closed) {
      unexpected.push_back(key);
    }
  }
  if (!missing.empty() || !unexpected.empty() || !invalid.empty()) {
    throw ToolArgumentError(name(), std::move(missing), std::move(unexpected), std::move(invalid), std::move(accepted));
  }
}

namespace detail {

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
