#pragma once
// RunContext: everything ambient to a run that a tool may need.
#include <cstdint>
#include <optional>
#include <string>

namespace agentkit {

// The tenant a run acts for. `key()` renders it for store keys and logs:
// Scope{.org_id = 7, .domain_id = 1}.key() == "org7:dom1".
struct Scope {
  std::optional<std::int64_t> org_id;
  std::optional<std::int64_t> domain_id;

  std::string key() const;
  friend bool operator==(const Scope&, const Scope&) = default;
};

// Ambient state of one run, handed to every tool through `Tool::run`.
class RunContext {
 public:
  RunContext() = default;
  explicit RunContext(Scope scope) : scope(std::move(scope)) {}

  Scope scope;
};

}  // namespace agentkit
