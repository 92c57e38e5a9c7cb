#pragma once
// Egress allowlist: the (scheme, host, port) origins tools may connect to.
// Every tool that reaches the network checks each URL it is about to contact,
// redirects included, against ctx.egress (see check_egress()); the
// egress_allowlist() middleware in <agentkit/invoker.h> installs a list and
// turns a refusal into a denied result. Place it after error_boundary() in
// the chain (inside it): error_boundary() turns any exception that reaches
// it, EgressDenied included, into a plain error result. URLs are read by
// parse_url() (<agentkit/url.h>), that is by libcurl: the origin judged is
// the origin a request connects to.
//
// Example:
//   auto allow = std::make_shared<const agentkit::EgressAllowlist>(
//       agentkit::EgressAllowlist{"https://api.weather.example", "https://*.internal.example:8443"});
//   allow->allows("https://api.weather.example/v1?q=Lisbon");   // true
//   allow->allows("https://api.weather.example@evil.example/");  // false: credentials in a URL
//   auto invoker = std::make_shared<agentkit::Invoker>(std::vector<agentkit::Middleware>{
//       agentkit::error_boundary(), agentkit::egress_allowlist(allow)});
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <agentkit/error.h>
#include <agentkit/url.h>

namespace agentkit {

class RunContext;

// One allowed origin.
struct EgressRule {
  std::string scheme = "https";
  // An exact host, or "*.example.com" for any subdomain of example.com at any
  // depth (not example.com itself, and never an IP literal).
  std::string host;
  // nullopt: the scheme's default port.
  std::optional<std::uint16_t> port;

  // "https://api.example.com", "http://127.0.0.1:8080", "https://*.example.com",
  // "http://[::1]:9000". A path, query or credentials are refused.
  // Throws agentkit::Error (invalid_argument).
  static EgressRule parse(std::string_view text);
};

// A set of allowed origins. Immutable once built, so one list can be shared
// by many runs and threads. Rules are validated and normalised at
// construction (agentkit::Error, invalid_argument, on a bad rule).
class EgressAllowlist {
 public:
  explicit EgressAllowlist(std::vector<EgressRule> rules);
  // Each string as EgressRule::parse reads it.
  EgressAllowlist(std::initializer_list<std::string_view> rules);

  // Why `url` may not be contacted ("https://evil.example is not on the
  // egress allowlist", or the parser's complaint), or nullopt when it may.
  std::optional<std::string> check(std::string_view url) const;
  bool allows(std::string_view url) const { return !check(url); }

  const std::vector<EgressRule>& rules() const noexcept { return rules_; }

  // A list allowing only what both this list and `outer` allow. Installing a
  // list under another (nested middleware) narrows, never widens.
  EgressAllowlist within(std::shared_ptr<const EgressAllowlist> outer) const;

 private:
  bool matches(const Url& url) const;

  std::vector<EgressRule> rules_;
  std::shared_ptr<const EgressAllowlist> outer_;
};

// Thrown by a network tool when ctx.egress refuses a URL, initial or
// redirected. egress_allowlist() turns it into ToolResult::denied(reason()).
// Code permission_denied.
class EgressDenied : public Error {
 public:
  explicit EgressDenied(std::string reason);
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string reason_;
};

// For tools: throws EgressDenied when ctx.egress refuses `url`. Does nothing
// when ctx.egress is null (no list: anywhere).
void check_egress(const RunContext& ctx, std::string_view url);

}  // namespace agentkit
