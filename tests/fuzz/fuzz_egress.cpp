// The egress URL parser, checked against libcurl's (the parser that
// connects): a URL parse_url() accepts must name, for curl, the same scheme,
// host and port, and its normalised form must parse to itself. Egress rules
// and the allowlist check never throw anything but their documented errors.
//
// Input: the URL; after a first newline, an egress rule.
#include <arpa/inet.h>
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <agentkit/egress.h>

#include "fuzz_support.h"

namespace {

struct CurlUrl {
  std::string scheme;
  std::string host;
  long port = 0;
};

std::optional<std::string> part(CURLU* url, CURLUPart which, unsigned flags = 0) {
  char* out = nullptr;
  if (curl_url_get(url, which, &out, flags) != CURLUE_OK) return std::nullopt;
  std::string text(out);
  curl_free(out);
  return text;
}

std::optional<CurlUrl> curl_parse(const std::string& text) {
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> url(curl_url(), curl_url_cleanup);
  if (curl_url_set(url.get(), CURLUPART_URL, text.c_str(), 0) != CURLUE_OK) return std::nullopt;
  auto scheme = part(url.get(), CURLUPART_SCHEME);
  auto host = part(url.get(), CURLUPART_HOST);
  auto port = part(url.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT);
  if (!scheme || !host || !port) return std::nullopt;
  return CurlUrl{*scheme, *host, std::stol(*port)};
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Two spellings of one host: case, one trailing dot and IPv6 notation aside.
bool same_host(const agentkit::Url& url, std::string curl_host) {
  if (url.is_ipv6()) {
    if (curl_host.size() < 2 || curl_host.front() != '[' || curl_host.back() != ']') return false;
    curl_host = curl_host.substr(1, curl_host.size() - 2);
    if (const auto zone = curl_host.find('%'); zone != std::string::npos) return false;
    in6_addr a{}, b{};
    return inet_pton(AF_INET6, url.host.c_str(), &a) == 1 && inet_pton(AF_INET6, curl_host.c_str(), &b) == 1 &&
           std::equal(a.s6_addr, a.s6_addr + 16, b.s6_addr);
  }
  curl_host = lower(curl_host);
  if (!curl_host.empty() && curl_host.back() == '.') curl_host.pop_back();
  return curl_host == url.host;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = agentkit::fuzz::as_text(data, size);
  const auto newline = input.find('\n');
  const std::string text(input.substr(0, newline));
  const std::string_view rule_text = newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);

  std::optional<agentkit::Url> url;
  try {
    url = agentkit::parse_url(text);
  } catch (const agentkit::UrlError&) {
  } catch (const std::exception& e) {
    agentkit::fuzz::untyped(e);
  }
  if (url) {
    AGENTKIT_FUZZ_CHECK(url->scheme == "http" || url->scheme == "https");
    AGENTKIT_FUZZ_CHECK(!url->host.empty() && url->port != 0);
    AGENTKIT_FUZZ_CHECK(!url->target.empty() && url->target.front() == '/');
    AGENTKIT_FUZZ_CHECK(lower(url->host) == url->host);
    // Normalising is idempotent.
    const agentkit::Url again = agentkit::parse_url(url->str());
    AGENTKIT_FUZZ_CHECK(again.same_origin(*url) && again.target == url->target);
    // The origin checked is the origin curl connects to.
    if (const auto seen = curl_parse(text)) {
      AGENTKIT_FUZZ_CHECK(lower(seen->scheme) == url->scheme);
      AGENTKIT_FUZZ_CHECK(same_host(*url, seen->host));
      AGENTKIT_FUZZ_CHECK(seen->port == url->port);
    }
  }

  if (newline == std::string_view::npos) return 0;
  try {
    const agentkit::EgressAllowlist allow(std::vector<agentkit::EgressRule>{agentkit::EgressRule::parse(rule_text)});
    const auto refusal = allow.check(text);
    if (!refusal) AGENTKIT_FUZZ_CHECK(url.has_value());  // only a parsed URL can be allowed
    // A rule allows its own origin.
    const auto& rule = allow.rules().front();
    if (rule.host.rfind("*.", 0) != 0) {
      const bool v6 = rule.host.find(':') != std::string::npos;
      const std::string origin = rule.scheme + "://" + (v6 ? "[" + rule.host + "]" : rule.host) +
                                 (rule.port ? ":" + std::to_string(*rule.port) : std::string()) + "/";
      AGENTKIT_FUZZ_CHECK(!allow.check(origin));
    }
  } catch (const agentkit::Error&) {
  } catch (const std::exception& e) {
    agentkit::fuzz::untyped(e);
  }
  return 0;
}
