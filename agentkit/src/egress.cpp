// The strict URL parser, the egress allowlist and its middleware.
//
// The parser refuses rather than guesses: anything two URL parsers could
// read differently (credentials, backslashes, numeric host shorthands, zone
// ids, stray characters) is an error, so the origin checked here is the
// origin libcurl connects to.
#include <agentkit/egress.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include <agentkit/context.h>
#include <agentkit/invoker.h>

namespace agentkit {
namespace {

constexpr std::size_t kMaxUrl = 8192;
constexpr std::size_t kMaxHost = 253;
constexpr std::size_t kMaxLabel = 63;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const auto end = s.find(sep, start);
    parts.push_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

void check_characters(std::string_view text) {
  if (text.empty()) throw UrlError("empty URL");
  if (text.size() > kMaxUrl) throw UrlError("URL longer than " + std::to_string(kMaxUrl) + " characters");
  for (const unsigned char c : text) {
    if (c <= 0x20 || c >= 0x7f) throw UrlError("URL contains a space, control or non-ASCII character (percent-encode it)");
    if (c == '\\') throw UrlError("URL contains a backslash");
  }
}

std::string parse_scheme(std::string_view scheme) {
  if (scheme.empty() || !std::isalpha(static_cast<unsigned char>(scheme.front()))) {
    throw UrlError("URL must be absolute (scheme://host)");
  }
  std::string s = lower(scheme);
  if (s != "http" && s != "https") throw UrlError("scheme '" + s + "' is not allowed (only http and https)");
  return s;
}

std::uint16_t parse_port(std::string_view text) {
  if (text.empty()) throw UrlError("empty port");
  if (!all_digits(text) || text.size() > 5) throw UrlError("invalid port '" + std::string(text) + "'");
  const int port = std::stoi(std::string(text));
  if (port < 1 || port > 65535) throw UrlError("port " + std::to_string(port) + " is out of range (1..65535)");
  return static_cast<std::uint16_t>(port);
}

std::string canonical_ipv6(std::string_view literal) {
  if (literal.find('%') != std::string_view::npos) throw UrlError("IPv6 zone ids are not allowed");
  in6_addr addr{};
  const std::string text(literal);
  if (inet_pton(AF_INET6, text.c_str(), &addr) != 1) throw UrlError("invalid IPv6 address");
  char out[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, &addr, out, sizeof out);
  return out;
}

// Resolvers read "2130706433", "0x7f.1" or "127.1" as addresses; only the
// canonical dotted quad is unambiguous.
void check_numeric_host(const std::string& host, const std::vector<std::string_view>& labels) {
  const std::string_view last = labels.back();
  const bool numeric = all_digits(last) || (last.size() > 1 && last[0] == '0' && last[1] == 'x');
  if (!numeric) return;
  const bool dotted_quad =
      labels.size() == 4 && std::all_of(labels.begin(), labels.end(), [](std::string_view l) {
        return all_digits(l) && l.size() <= 3 && (l.size() == 1 || l[0] != '0') && std::stoi(std::string(l)) <= 255;
      });
  if (!dotted_quad) throw UrlError("ambiguous numeric host '" + host + "' (write an IPv4 address as a.b.c.d)");
}

std::string parse_hostname(std::string_view text) {
  std::string host = lower(text);
  if (!host.empty() && host.back() == '.') host.pop_back();
  if (host.empty()) throw UrlError("URL has no host");
  if (host.size() > kMaxHost) throw UrlError("host name longer than " + std::to_string(kMaxHost) + " characters");
  const auto labels = split(host, '.');
  for (const auto label : labels) {
    if (label.empty()) throw UrlError("empty label in host '" + host + "'");
    if (label.size() > kMaxLabel) throw UrlError("host label longer than " + std::to_string(kMaxLabel) + " characters");
    const bool valid = std::all_of(label.begin(), label.end(), [](unsigned char c) {
      return std::isalnum(c) || c == '-' || c == '_';
    });
    if (!valid) throw UrlError("invalid character in host '" + host + "'");
  }
  check_numeric_host(host, labels);
  return host;
}

// Splits "host[:port]" or "[v6][:port]" into a normalised host and a port
// (0 when absent).
std::pair<std::string, std::uint16_t> parse_authority(std::string_view authority) {
  if (authority.find('@') != std::string_view::npos) {
    throw UrlError("credentials (user@host) are not allowed in a URL");
  }
  if (authority.empty()) throw UrlError("URL has no host");
  std::string_view host;
  std::string_view rest;
  const bool bracketed = authority.front() == '[';
  if (bracketed) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) throw UrlError("unterminated IPv6 literal");
    host = authority.substr(1, close - 1);
    rest = authority.substr(close + 1);
  } else {
    const auto colon = authority.find(':');
    host = authority.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : authority.substr(colon);
  }
  if (!rest.empty() && rest.front() != ':') throw UrlError("unexpected text after the host");
  const std::uint16_t port = rest.empty() ? 0 : parse_port(rest.substr(1));
  return {bracketed ? canonical_ipv6(host) : parse_hostname(host), port};
}

bool host_matches(const EgressRule& rule, const Url& url) {
  if (rule.host.rfind("*.", 0) != 0) return rule.host == url.host;
  const std::string_view suffix = std::string_view(rule.host).substr(1);  // ".example.com"
  if (url.is_ipv6() || url.host.size() <= suffix.size()) return false;
  return std::string_view(url.host).substr(url.host.size() - suffix.size()) == suffix;
}

std::uint16_t rule_port(const EgressRule& rule) { return rule.port ? *rule.port : default_port(rule.scheme); }

// Validates and normalises one rule in place.
EgressRule normalised(EgressRule rule) {
  try {
    rule.scheme = parse_scheme(rule.scheme);
    const bool wildcard = rule.host.rfind("*.", 0) == 0;
    std::string host = wildcard ? rule.host.substr(2) : rule.host;
    if (!host.empty() && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (host.find(':') != std::string::npos) {
      if (wildcard) throw UrlError("a wildcard cannot apply to an IPv6 address");
      host = canonical_ipv6(host);
    } else {
      host = parse_hostname(host);
    }
    rule.host = wildcard ? "*." + host : host;
    if (rule.port && *rule.port == 0) throw UrlError("port 0 is out of range (1..65535)");
  } catch (const UrlError& e) {
    throw Error(ErrorCode::invalid_argument, std::string("egress rule for host '") + rule.host + "' is invalid: " + e.what());
  }
  return rule;
}

}  // namespace

std::uint16_t default_port(std::string_view scheme) noexcept {
  if (scheme == "http") return 80;
  if (scheme == "https") return 443;
  return 0;
}

std::string Url::origin() const {
  std::string out = scheme + "://" + (is_ipv6() ? "[" + host + "]" : host);
  if (port != default_port(scheme)) out += ":" + std::to_string(port);
  return out;
}

std::string Url::str() const { return origin() + target; }

bool Url::same_origin(const Url& other) const noexcept {
  return scheme == other.scheme && host == other.host && port == other.port;
}

Url parse_url(std::string_view text) {
  check_characters(text);
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) throw UrlError("URL must be absolute (scheme://host)");
  Url url;
  url.scheme = parse_scheme(text.substr(0, colon));
  std::string_view rest = text.substr(colon + 1);
  if (rest.substr(0, 2) != "//") throw UrlError("URL must be absolute (scheme://host)");
  rest.remove_prefix(2);
  const auto end = rest.find_first_of("/?#");
  auto [host, port] = parse_authority(rest.substr(0, end));
  url.host = std::move(host);
  url.port = port ? port : default_port(url.scheme);
  std::string_view target = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  target = target.substr(0, target.find('#'));
  url.target = (target.empty() || target.front() != '/') ? "/" + std::string(target) : std::string(target);
  return url;
}

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
  EgressRule rule;
  rule.scheme = std::string(text.substr(0, scheme_end));
  std::string_view host = authority;
  std::string_view port;
  if (const auto close = authority.rfind(']'); !authority.empty() && authority.front() == '[' &&
                                              close != std::string_view::npos) {
    host = authority.substr(0, close + 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') throw Error(ErrorCode::invalid_argument, "egress rule '" + std::string(text) + "' is invalid");
      port = authority.substr(close + 2);
    }
  } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  rule.host = std::string(host);
  if (port.data() != nullptr) {
    try {
      rule.port = parse_port(port);
    } catch (const UrlError& e) {
      throw Error(ErrorCode::invalid_argument, "egress rule '" + std::string(text) + "' is invalid: " + e.what());
    }
  }
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
