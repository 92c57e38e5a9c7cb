#pragma once
// The one secret redactor. Every component that holds a credential (the
// provider transport's auth headers, a REST tool's resolved variables, an
// MCP server's configured headers) collects it in a Redactor and passes every
// text it logs, throws or returns through redact(), because a server may echo
// what it was sent.
//
// A secret shorter than Redactor::kMinSecretChars (8) is not redacted:
// replacing a short value would mangle ordinary text ("true", "1234"), and no
// real credential is that short. A multi-word value ("Bearer sk-...") is
// redacted as a whole and word by word, so the token is hidden even when it
// is echoed without its scheme.
//
// Example:
//   agentkit::Redactor secrets;
//   secrets.add_header("Authorization", "Bearer sk-live-0123456789");
//   secrets.redact("server said: bad key sk-live-0123456789");  // "server said: bad key [redacted]"
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <agentkit/json.h>

namespace agentkit {

class Redactor {
 public:
  // Values shorter than this are never treated as secrets.
  static constexpr std::size_t kMinSecretChars = 8;
  // What a secret is replaced by.
  static constexpr std::string_view kMarker = "[redacted]";

  // Adds `secret` (surrounding blanks trimmed) and each of its blank-separated
  // words, each when at least kMinSecretChars long.
  void add(std::string_view secret);
  // Adds `value` when `name` is a credential header (is_credential_header()).
  void add_header(std::string_view name, std::string_view value);
  // Authorization, Proxy-Authorization, X-Api-Key, Api-Key, X-Goog-Api-Key
  // (any case).
  static bool is_credential_header(std::string_view name) noexcept;

  // `text` with every occurrence of every secret replaced by kMarker.
  std::string redact(std::string text) const;
  // Redacts `text` in place; returns whether anything was replaced.
  bool redact_in_place(std::string& text) const;
  // Redacts every string in `value` (keys are left alone), iteratively.
  void redact_in_place(Json& value) const;

  bool empty() const noexcept { return secrets_.empty(); }
  const std::vector<std::string>& secrets() const noexcept { return secrets_; }

 private:
  void add_one(std::string_view secret);

  std::vector<std::string> secrets_;  // longest first, so a secret containing another is replaced whole
};

}  // namespace agentkit
