// URL parsing over libcurl's URL API. Core links libcurl privately for this
// one purpose (no transfer, no global init: curl_url needs neither); this is
// core's only file that includes <curl/curl.h>.
//
// curl decides what a URL means: the host, port and target come from
// curl_url_get. The checks here only refuse on top of that, looking at the
// raw text where curl silently rewrites a spelling (a percent-encoded or
// numeric-shorthand host, an empty port): such a URL reads one way to a
// person or another parser and another way to curl.
#include <agentkit/url.h>

#include <arpa/inet.h>
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <vector>

namespace agentkit {
namespace {

constexpr std::size_t kMaxUrl = 8192;
constexpr std::size_t kMaxHost = 253;
constexpr std::size_t kMaxLabel = 63;

using Handle = std::unique_ptr<CURLU, decltype(&curl_url_cleanup)>;

Handle make_handle() {
  Handle h(curl_url(), curl_url_cleanup);
  if (!h) throw std::bad_alloc();
  return h;
}

std::optional<std::string> get(CURLU* h, CURLUPart part, unsigned flags = 0) {
  char* out = nullptr;
  if (curl_url_get(h, part, &out, flags) != CURLUE_OK || out == nullptr) return std::nullopt;
  std::string text(out);
  curl_free(out);
  return text;
}

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

// The scheme as written; only "http" and "https" followed by "//" and a host.
// curl also takes "http:/host" and reads "http:///x" as host "x".
std::string_view check_prefix(std::string_view text) {
  const auto colon = text.find(':');
  const std::string_view scheme = text.substr(0, colon);
  const bool token = !scheme.empty() && std::isalpha(static_cast<unsigned char>(scheme.front())) &&
                     std::all_of(scheme.begin(), scheme.end(), [](unsigned char c) {
                       return std::isalnum(c) || c == '+' || c == '-' || c == '.';
                     });
  if (colon == std::string_view::npos || !token) throw UrlError("URL must be absolute (scheme://host)");
  const std::string s = lower(scheme);
  if (s != "http" && s != "https") throw UrlError("scheme '" + s + "' is not allowed (only http and https)");
  std::string_view rest = text.substr(colon + 1);
  if (rest.substr(0, 2) != "//") throw UrlError("URL must be absolute (scheme://host)");
  rest.remove_prefix(2);
  if (rest.empty() || rest.front() == '/') throw UrlError("URL has no host");
  // The authority as written: up to the path, query or fragment.
  return rest.substr(0, rest.find_first_of("/?#"));
}

std::string canonical_ipv6(std::string_view literal) {
  in6_addr addr{};
  const std::string text(literal);
  if (inet_pton(AF_INET6, text.c_str(), &addr) != 1) throw UrlError("invalid IPv6 address");
  char out[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, &addr, out, sizeof out);
  return out;
}

bool is_dotted_quad(std::string_view host) {
  in_addr addr{};
  return inet_pton(AF_INET, std::string(host).c_str(), &addr) == 1;
}

// A name curl left as a name must not look like a number either: resolvers
// read "127.0.0.1.2" or "256.0.0.1" their own way.
void check_hostname(const std::string& host) {
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
  const std::string_view last = labels.back();
  const bool numeric = all_digits(last) || (last.size() > 1 && last[0] == '0' && last[1] == 'x');
  if (numeric && !is_dotted_quad(host)) {
    throw UrlError("ambiguous numeric host '" + host + "' (write an IPv4 address as a.b.c.d)");
  }
}

// The port as written in `authority` ("host:port", "[v6]:port"), or nullopt.
std::optional<std::string_view> written_port(std::string_view authority) {
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos || close + 1 >= authority.size()) return std::nullopt;
    if (authority[close + 1] != ':') throw UrlError("unexpected text after the host");
    return authority.substr(close + 2);
  }
  const auto colon = authority.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  return authority.substr(colon + 1);
}

std::string_view written_host(std::string_view authority) {
  return authority.substr(0, authority.find(':'));
}

[[noreturn]] void refuse_port(std::string_view authority) {
  const auto port = written_port(authority);
  if (port && all_digits(*port) && port->size() <= 9) {
    throw UrlError("port " + std::string(*port) + " is out of range (1..65535)");
  }
  throw UrlError("invalid port '" + std::string(port.value_or("")) + "'");
}

[[noreturn]] void refuse(CURLUcode rc, std::string_view authority) {
  switch (rc) {
    case CURLUE_BAD_PORT_NUMBER:
      refuse_port(authority);
    case CURLUE_BAD_IPV6:
      if (authority.find(']') == std::string_view::npos) throw UrlError("unterminated IPv6 literal");
      throw UrlError("invalid IPv6 address");
    case CURLUE_BAD_HOSTNAME:
      throw UrlError("invalid character in host");
    case CURLUE_NO_HOST:
      throw UrlError("URL has no host");
    case CURLUE_OUT_OF_MEMORY:
      throw std::bad_alloc();
    default:
      throw UrlError(std::string("libcurl refuses the URL: ") + curl_url_strerror(rc));
  }
}

// Reads curl's view of the URL held by `h`; `authority` is the authority as
// written, for the checks on what curl rewrites.
Url read(CURLU* h, std::string_view authority) {
  if (get(h, CURLUPART_USER) || get(h, CURLUPART_PASSWORD) || get(h, CURLUPART_OPTIONS) ||
      authority.find('@') != std::string_view::npos) {
    throw UrlError("credentials (user@host) are not allowed in a URL");
  }
  if (get(h, CURLUPART_ZONEID)) throw UrlError("IPv6 zone ids are not allowed");
  Url url;
  url.scheme = lower(get(h, CURLUPART_SCHEME).value_or(""));
  if (url.scheme != "http" && url.scheme != "https") {
    throw UrlError("scheme '" + url.scheme + "' is not allowed (only http and https)");
  }
  std::string host = get(h, CURLUPART_HOST).value_or("");
  if (!host.empty() && host.front() == '[') {
    url.host = canonical_ipv6(std::string_view(host).substr(1, host.size() - 2));
  } else {
    if (authority.find('%') != std::string_view::npos) throw UrlError("invalid character in host (percent-encoded)");
    host = lower(host);
    if (!host.empty() && host.back() == '.') host.pop_back();
    check_hostname(host);
    std::string as_written = lower(written_host(authority));
    if (!as_written.empty() && as_written.back() == '.') as_written.pop_back();
    if (is_dotted_quad(host) && as_written != host) {
      throw UrlError("ambiguous numeric host '" + as_written + "' (write an IPv4 address as a.b.c.d)");
    }
    url.host = std::move(host);
  }
  if (const auto port = written_port(authority); port && port->empty()) throw UrlError("empty port");
  const std::string port = get(h, CURLUPART_PORT, CURLU_DEFAULT_PORT).value_or("0");
  const long number = all_digits(port) && port.size() <= 5 ? std::stol(port) : 0;
  if (number < 1 || number > 65535) throw UrlError("port " + port + " is out of range (1..65535)");
  url.port = static_cast<std::uint16_t>(number);
  url.target = get(h, CURLUPART_PATH).value_or("/");
  if (url.target.empty() || url.target.front() != '/') url.target.insert(0, "/");
  if (auto query = get(h, CURLUPART_QUERY)) url.target += "?" + *query;
  return url;
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
  const std::string_view authority = check_prefix(text);
  auto h = make_handle();
  const std::string copy(text);
  if (const CURLUcode rc = curl_url_set(h.get(), CURLUPART_URL, copy.c_str(), 0); rc != CURLUE_OK) {
    refuse(rc, authority);
  }
  return read(h.get(), authority);
}

Url resolve_url(const Url& base, std::string_view reference) {
  check_characters(reference);
  // A reference naming a host is read, raw spelling and all, as a URL of its
  // own; only a path, query or fragment is resolved against the base.
  const auto colon = reference.find(':');
  if (colon != std::string_view::npos && colon < reference.find_first_of("/?#")) return parse_url(reference);
  if (reference.substr(0, 2) == "//") return parse_url(base.scheme + ":" + std::string(reference));
  auto h = make_handle();
  const std::string from = base.str();
  const std::string copy(reference);
  CURLUcode rc = curl_url_set(h.get(), CURLUPART_URL, from.c_str(), 0);
  if (rc == CURLUE_OK) rc = curl_url_set(h.get(), CURLUPART_URL, copy.c_str(), 0);
  if (rc != CURLUE_OK) refuse(rc, {});
  // The resolved URL, as curl would request it, through the one strict parser.
  auto absolute = get(h.get(), CURLUPART_URL);
  if (!absolute) throw UrlError("the URL could not be resolved");
  const auto hash = absolute->find('#');
  return parse_url(std::string_view(*absolute).substr(0, hash));
}

std::string url_for_messages(std::string_view url) {
  auto h = make_handle();
  const std::string copy(url);
  if (curl_url_set(h.get(), CURLUPART_URL, copy.c_str(), CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
    return "(invalid URL)";
  }
  auto scheme = get(h.get(), CURLUPART_SCHEME).value_or("");
  auto host = get(h.get(), CURLUPART_HOST).value_or("");
  std::string out = lower(scheme) + "://" + host;
  if (auto port = get(h.get(), CURLUPART_PORT)) out += ":" + *port;
  return out + get(h.get(), CURLUPART_PATH).value_or("/");
}

}  // namespace agentkit
