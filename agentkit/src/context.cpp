#include <agentkit/context.h>

namespace agentkit {

std::string Scope::key() const {
  std::string out;
  if (org_id) out += "org" + std::to_string(*org_id);
  if (domain_id) out += (out.empty() ? "" : ":") + ("dom" + std::to_string(*domain_id));
  return out.empty() ? "global" : out;
}

}  // namespace agentkit
