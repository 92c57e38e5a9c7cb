#pragma once
// URLs as libcurl reads them. Every URL agentkit judges (the egress check),
// follows (a redirect) or prints (an error message) goes through libcurl's URL
// API (curl_url), the parser that also decides where a request connects, so
// the host checked is the host contacted. On top of curl's reading the parser
// refuses spellings two parsers could read differently.
//
// Example:
//   auto url = agentkit::parse_url("HTTPS://API.Example.COM./v1?q=1#top");
//   url.origin();  // "https://api.example.com"
//   url.str();     // "https://api.example.com/v1?q=1"
//   agentkit::resolve_url(url, "//evil.example/x").host;  // "evil.example"
//   agentkit::url_for_messages("https://user:pw@host.example/p?key=1");  // "https://host.example/p"
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include <agentkit/error.h>

namespace agentkit {

// An absolute http(s) URL, parsed strictly and normalised so that two
// spellings of one origin compare equal.
struct Url {
  std::string scheme;      // "http" or "https"
  std::string host;        // lower case, no trailing dot; an IPv6 literal in canonical form, without brackets
  std::uint16_t port = 0;  // the explicit port, or the scheme's default
  std::string target;      // path and query as curl sends them, at least "/"; the fragment is dropped

  bool is_ipv6() const noexcept { return host.find(':') != std::string::npos; }
  // "scheme://host" plus ":port" when it is not the scheme's default.
  std::string origin() const;
  // origin() + target: what is sent. Parsing it again gives the same Url.
  std::string str() const;
  // Same scheme, host and port.
  bool same_origin(const Url& other) const noexcept;
};

// A URL the strict parser refuses. The message says what is wrong and never
// repeats the URL (it may carry credentials).
class UrlError : public Error {
 public:
  explicit UrlError(const std::string& message) : Error(ErrorCode::invalid_argument, message) {}
};

// The scheme's default port: 80 for http, 443 for https, 0 otherwise.
std::uint16_t default_port(std::string_view scheme) noexcept;

// Parses an absolute http or https URL with libcurl, or throws UrlError.
// The host, port and target are curl's: "http://evil.example#@allowed.example"
// is evil.example, as curl connects there. Refused on top of what curl
// refuses: other schemes (file:, ftp:, ...), relative URLs and any spelling
// but "scheme://host", credentials ("user@host", so
// "http://allowed.example@evil.example" never passes as allowed.example),
// empty, zero or out-of-range ports, spaces, control and non-ASCII
// characters, backslashes, percent-encoded hosts, empty host labels, IPv6
// zone ids, and numeric hosts that are not a plain dotted quad as written
// ("2130706433", "0177.0.0.1", "127.1": curl reads them as 127.0.0.1). Hosts
// are lower-cased, one trailing dot is dropped and IPv6 literals are
// canonicalised ("[0:0::1]" is "[::1]").
Url parse_url(std::string_view text);

// Resolves `reference` (a redirect's Location: absolute, protocol-relative
// "//host/x", absolute-path "/x", relative "x" or "?q") against `base` the
// way libcurl does when it follows a redirect, then parses the result as
// parse_url() does (so "file:///etc/passwd" or "//user@host" is refused).
// Throws UrlError.
Url resolve_url(const Url& base, std::string_view reference);

// `url` as messages may show it: scheme, host, port and path; never user
// info, the query or the fragment (which may carry a key). A URL curl cannot
// parse is shown as "(invalid URL)".
std::string url_for_messages(std::string_view url);

}  // namespace agentkit
