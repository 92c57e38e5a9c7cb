#include <agentkit/errors.h>

namespace agentkit {
namespace {

std::string argument_message(const std::string& tool, const std::vector<std::string>& missing,
                             const std::vector<std::string>& unexpected,
                             const std::vector<ToolArgumentError::Invalid>& invalid,
                             const std::vector<std::string>& accepted) {
  std::string parts;
  const auto add = [&](const std::string& part) { parts += (parts.empty() ? "" : "; ") + part; };
  if (!missing.empty()) add("missing required argument(s) " + quoted_list(missing));
  if (!unexpected.empty()) add("unexpected argument(s) " + quoted_list(unexpected));
  if (!invalid.empty()) {
    std::string list;
    for (const auto& bad : invalid) list += (list.empty() ? "" : "; ") + bad.name + ": " + bad.reason;
    add("invalid argument(s): " + list);
  }
  std::string message = "tool '" + tool + "' call rejected: " + parts;
  if (!accepted.empty()) message += ". Accepted arguments: " + quoted_list(accepted);
  return message;
}

}  // namespace

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out = "[";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) out += ", ";
    out += '\'' + names[i] + '\'';
  }
  return out + "]";
}

ToolArgumentError::ToolArgumentError(std::string tool, std::vector<std::string> missing,
                                     std::vector<std::string> unexpected, std::vector<Invalid> invalid,
                                     std::vector<std::string> accepted)
    : Error(ErrorCode::invalid_argument, argument_message(tool, missing, unexpected, invalid, accepted)),
      tool_(std::move(tool)),
      missing_(std::move(missing)),
      unexpected_(std::move(unexpected)),
      invalid_(std::move(invalid)),
      accepted_(std::move(accepted)) {}

ToolShapeError::ToolShapeError(std::string tool, Json raw, std::string expected, std::string detail)
    : Error(ErrorCode::protocol, "tool '" + tool + "' returned value not matching schema '" + expected + "'"),
      tool_(std::move(tool)),
      raw_(std::move(raw)),
      expected_(std::move(expected)),
      detail_(std::move(detail)) {}

}  // namespace agentkit
