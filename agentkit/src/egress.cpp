// The egress allowlist and its middleware. URLs and rules are read by
// parse_url() (url.cpp, over libcurl), so the origin checked here is the
// origin libcurl connects to.
#include <agentkit/egress.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include <agentkit/context.h>
#include <agentkit/invoker.h>

namespace agentkit {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool host_matches(const EgressRule& rule, const Url& url) {
  if (rule.host.rfind("*.", 0) != 0) return rule.host == url.host;
  const std::string_view suffix = std::string_view(rule.host).substr(1);  // ".example.com"
  if (url.is_ipv6() || url.host.size() <= suffix.size()) return false;
  return std::string_view(url.host).substr(url.host.size() - suffix.size()) == suffix;
}

std::uint16_t rule_port(const EgressRule& rule) { return rule.port ? *rule.port : default_port(rule.scheme); }

// Validates and normalises one rule: its origin goes through parse_url(), so
// a rule's host is compared in the form curl gives a URL's host.
EgressRule normalised(EgressRule rule) {
  try {
    const bool wildcard = rule.host.rfind("*.", 0) == 0;
    std::string host = wildcard ? rule.host.substr(2) : rule.host;
    const bool bracketed = !host.empty() && host.front() == '[';
    if (host.find(':') != std::string::npos) {
      if (wildcard) throw UrlError("a wildcard cannot apply to an IPv6 address");
      if (!bracketed) host = "[" + host + "]";
    }
    if (host.find_first_of("/?#@") != std::string::npos) throw UrlError("invalid character in host '" + host + "'");
    if (rule.port && *rule.port == 0) throw UrlError("port 0 is out of range (1..65535)");
    const std::string scheme = lower(rule.scheme);
    const Url url = parse_url(scheme + "://" + host + (rule.port ? ":" + std::to_string(*rule.port) : ""));
    if (wildcard && url.host.find_first_not_of("0123456789.") == std::string::npos) {
      throw UrlError("a wildcard cannot apply to an IP address");
    }
    rule.scheme = url.scheme;
    rule.host = wildcard ? "*." + url.host : url.host;
  } catch (const UrlError& e) {
    throw Error(ErrorCode::invalid_argument, std::string("egress rule for host '") + rule.host + "' is invalid: " + e.what());
  }
  return rule;
}

}  // namespace

EgressRule EgressRule::parse(std::string_view text) {
  const auto scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos) {
    throw Error(ErrorCode::invalid_argument, "egress rule '" + std::string(text) + "' must look like scheme://host[:port]");
  }
  std::string_view authority = text.substr(scheme_end + 3);
  if (!authority.empty() && authority.back() == '/') authority.remove_suffix(1);
  if (authority.find_first_of("/?#@") != std::string_view::npos) {
    throw Error(ErrorCode::invalid_argument, "egress rule '" + std::string(text) +
                                "' must be an origin only (no path, query or credentials)");
  }
  const bool wildcard = authority.rfind("*.", 0) == 0;
  if (wildcard) authority.remove_prefix(2);
  Url url;
  try {
    url = parse_url(std::string(text.substr(0, scheme_end)) + "://" + std::string(authority));
  } catch (const UrlError& e) {
    throw Error(ErrorCode::invalid_argument, "egress rule '" + std::string(text) + "' is invalid: " + e.what());
  }
  EgressRule rule;
  rule.scheme = url.scheme;
  rule.host = wildcard ? "*." + url.host : url.host;
  if (url.port != default_port(url.scheme)) rule.port = url.port;
  return normalised(std::move(rule));
}

EgressAllowlist::EgressAllowlist(std::vector<EgressRule> rules) {
  rules_.reserve(rules.size());
  for (auto& rule : rules) rules_.push_back(normalised(std::move(rule)));
}

EgressAllowlist::EgressAllowlist(std::initializer_list<std::string_view> rules) {
  rules_.reserve(rules.size());
  for (const auto text : rules) rules_.push_back(EgressRule::parse(text));
}

bool EgressAllowlist::matches(const Url& url) const {
  return std::any_of(rules_.begin(), rules_.end(), [&](const EgressRule& rule) {
    return rule.scheme == url.scheme && rule_port(rule) == url.port && host_matches(rule, url);
  });
}

std::optional<std::string> EgressAllowlist::check(std::string_view text) const {
  Url url;
  try {
    url = parse_url(text);
  } catch (const UrlError& e) {
    return std::string("invalid URL: ") + e.what();
  }
  if (!matches(url)) return url.origin() + " is not on the egress allowlist";
  if (outer_) return outer_->check(text);
  return std::nullopt;
}

EgressAllowlist EgressAllowlist::within(std::shared_ptr<const EgressAllowlist> outer) const {
  EgressAllowlist narrowed = *this;
  if (outer && outer_) {
    narrowed.outer_ = std::make_shared<const EgressAllowlist>(outer_->within(std::move(outer)));
  } else if (outer) {
    narrowed.outer_ = std::move(outer);
  }
  return narrowed;
}

EgressDenied::EgressDenied(std::string reason) : Error(ErrorCode::permission_denied, "egress refused: " + reason), reason_(std::move(reason)) {}

void check_egress(const RunContext& ctx, std::string_view url) {
  if (!ctx.egress) return;
  if (auto reason = ctx.egress->check(url)) throw EgressDenied(std::move(*reason));
}

Middleware egress_allowlist(std::shared_ptr<const EgressAllowlist> allowlist) {
  if (!allowlist) throw Error(ErrorCode::invalid_argument, "egress_allowlist(): the allowlist must not be null");
  return [allowlist = std::move(allowlist)](const ToolRequest& req, RunContext& ctx, const Next& next) {
    const auto refused = [&](const std::string& reason) {
      return ToolResult::denied("call to tool '" + req.name + "' refused by the egress allowlist: " + reason);
    };
    // A copy: the caller's context (possibly shared by a concurrent batch) keeps its own list.
    RunContext scoped = ctx;
    if (ctx.egress && ctx.egress != allowlist) {
      scoped.egress = std::make_shared<const EgressAllowlist>(allowlist->within(ctx.egress));
    } else {
      scoped.egress = allowlist;
    }
    if (req.tool) {
      if (const auto it = req.tool->spec().metadata.find("url");
          it != req.tool->spec().metadata.end() && it->is_string()) {
        if (auto reason = scoped.egress->check(it->get<std::string>())) return refused(*reason);
      }
    }
    try {
      return next(req, scoped);
    } catch (const EgressDenied& e) {
      return refused(e.reason());
    }
  };
}

}  // namespace agentkit
