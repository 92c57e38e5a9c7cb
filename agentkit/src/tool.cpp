#include <agentkit/function_tool.h>
#include <agentkit/tool.h>

#include <set>

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
