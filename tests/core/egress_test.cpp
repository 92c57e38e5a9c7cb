// The strict URL parser, the egress allowlist and the egress_allowlist()
// middleware.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <agentkit/egress.h>
#include <agentkit/function_tool.h>
#include <agentkit/invoker.h>

using agentkit::EgressAllowlist;
using agentkit::EgressRule;
using agentkit::Json;
using agentkit::parse_url;
using agentkit::RunContext;
using agentkit::ToolPtr;
using agentkit::ToolRequest;
using agentkit::ToolResult;
using agentkit::UrlError;
using Status = agentkit::ToolResult::Status;

namespace {

// The UrlError message for `url`, or "" when it parses.
std::string parse_error(const std::string& url) {
  try {
    parse_url(url);
  } catch (const UrlError& e) {
    return e.what();
  }
  return "";
}

// A network-shaped tool: checks ctx.egress for the URL it is given, counts
// the calls that got past the check and records the list it saw.
struct Fetcher {
  std::shared_ptr<std::atomic<int>> contacted = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<const EgressAllowlist> seen;
  ToolPtr tool;

  explicit Fetcher(Json metadata = Json::object()) {
    tool = agentkit::tool("fetch")
               .doc("Fetch a URL and return its body; a stand-in for a network tool.")
               .side_effecting(false)
               .metadata(std::move(metadata))
               .params("url")
               .fn([this](const std::string& url, RunContext& ctx) {
                 seen = ctx.egress;
                 agentkit::check_egress(ctx, url);
                 ++*contacted;
                 return std::string("fetched");
               });
  }

  ToolRequest request(const std::string& url) const {
    return ToolRequest{.call_id = "c1", .name = "fetch", .arguments = {{"url", url}}, .tool = tool};
  }
};

std::shared_ptr<const EgressAllowlist> allow(std::initializer_list<std::string_view> rules) {
  return std::make_shared<const EgressAllowlist>(rules);
}

}  // namespace

// ------------------------------------------------------------------ parser

TEST_CASE("parse_url normalises scheme, host, trailing dot, default port and target", "[egress][url]") {
  auto url = parse_url("HTTPS://API.Example.COM./v1/items?q=1#frag");
  CHECK(url.scheme == "https");
  CHECK(url.host == "api.example.com");
  CHECK(url.port == 443);
  CHECK(url.target == "/v1/items?q=1");
  CHECK(url.origin() == "https://api.example.com");
  CHECK(url.str() == "https://api.example.com/v1/items?q=1");

  CHECK(parse_url("http://example.com").target == "/");
  CHECK(parse_url("http://example.com?x=1").target == "/?x=1");
  CHECK(parse_url("http://example.com").port == 80);
  CHECK(parse_url("http://example.com:8080/").port == 8080);
  CHECK(parse_url("http://example.com:8080/").origin() == "http://example.com:8080");
  CHECK(parse_url("http://example.com:80/").origin() == "http://example.com");
  CHECK(parse_url("http://example.com:80/").same_origin(parse_url("HTTP://EXAMPLE.com./x")));
  CHECK_FALSE(parse_url("http://example.com/").same_origin(parse_url("https://example.com/")));
}

TEST_CASE("parse_url canonicalises IPv6 literals and keeps dotted-quad IPv4", "[egress][url]") {
  auto v6 = parse_url("http://[0:0:0:0::1]:9000/x");
  CHECK(v6.host == "::1");
  CHECK(v6.is_ipv6());
  CHECK(v6.port == 9000);
  CHECK(v6.origin() == "http://[::1]:9000");
  CHECK(parse_url("http://[FE80::A]/").host == "fe80::a");
  CHECK(parse_url("http://127.0.0.1:8080/").host == "127.0.0.1");
  CHECK(parse_url("http://10.0.0.255/").host == "10.0.0.255");
}

TEST_CASE("parse_url refuses credentials, so allowed.com@evil.com never passes as allowed.com", "[egress][url]") {
  CHECK_THAT(parse_error("http://allowed.com@evil.com/"), Catch::Contains("credentials"));
  CHECK_THAT(parse_error("http://user:hunter2@allowed.com/"), Catch::Contains("credentials"));
  CHECK_THAT(parse_error("http://allowed.com:80@evil.com/"), Catch::Contains("credentials"));
  // The message never repeats the URL, which may hold a password.
  CHECK_THAT(parse_error("http://user:hunter2@allowed.com/"), !Catch::Contains("hunter2"));
  // A backslash is a path separator to some parsers and not to others.
  CHECK_THAT(parse_error("http://allowed.com\\@evil.com/"), Catch::Contains("backslash"));
}

TEST_CASE("parse_url refuses other schemes and relative or malformed URLs", "[egress][url]") {
  CHECK_THAT(parse_error("ftp://example.com/"), Catch::Contains("scheme 'ftp' is not allowed"));
  CHECK_THAT(parse_error("file:///etc/passwd"), Catch::Contains("scheme 'file'"));
  CHECK_THAT(parse_error("javascript:alert(1)"), Catch::Contains("scheme 'javascript'"));
  CHECK_THAT(parse_error("/v1/items"), Catch::Contains("absolute"));
  CHECK_THAT(parse_error("example.com/x"), Catch::Contains("absolute"));
  CHECK_THAT(parse_error("http:example.com"), Catch::Contains("absolute"));
  CHECK_THAT(parse_error("http:///path"), Catch::Contains("no host"));
  CHECK_THAT(parse_error("http://./"), Catch::Contains("no host"));
  CHECK_THAT(parse_error("http://a..b/"), Catch::Contains("empty label"));
  CHECK_THAT(parse_error("http://exa mple.com/"), Catch::Contains("space"));
  CHECK_THAT(parse_error("http://example.com/\n"), Catch::Contains("control"));
  CHECK_THAT(parse_error("http://ex\xc3\xa4mple.com/"), Catch::Contains("non-ASCII"));
  CHECK_THAT(parse_error("http://ex%61mple.com/"), Catch::Contains("invalid character"));
  CHECK_THAT(parse_error(""), Catch::Contains("empty URL"));
  CHECK_THAT(parse_error("http://example.com/" + std::string(9000, 'a')), Catch::Contains("longer than"));
}

TEST_CASE("parse_url refuses bad ports", "[egress][url]") {
  CHECK_THAT(parse_error("http://example.com:/"), Catch::Contains("empty port"));
  CHECK_THAT(parse_error("http://example.com:0/"), Catch::Contains("out of range"));
  CHECK_THAT(parse_error("http://example.com:65536/"), Catch::Contains("out of range"));
  CHECK_THAT(parse_error("http://example.com:8o/"), Catch::Contains("invalid port"));
  CHECK_THAT(parse_error("http://example.com:80:81/"), Catch::Contains("invalid port"));
  CHECK_THAT(parse_error("http://[::1]x/"), Catch::Contains("after the host"));
}

TEST_CASE("parse_url refuses numeric host shorthands and IPv6 zone ids", "[egress][url]") {
  for (const char* url : {"http://2130706433/", "http://0x7f.0.0.1/", "http://127.1/", "http://0177.0.0.1/",
                          "http://127.0.0.1.2/", "http://256.0.0.1/", "http://0x7f000001/"}) {
    INFO(url);
    CHECK_THAT(parse_error(url), Catch::Contains("ambiguous numeric host"));
  }
  CHECK_THAT(parse_error("http://[fe80::1%25eth0]/"), Catch::Contains("zone"));
  CHECK_THAT(parse_error("http://[::1/"), Catch::Contains("unterminated"));
  CHECK_THAT(parse_error("http://[not:an:address::g]/"), Catch::Contains("invalid IPv6"));
  // A name that merely starts with digits is a name.
  CHECK(parse_error("http://1password.example/").empty());
  CHECK(parse_error("http://10.0.0.1.nip.io/").empty());
}

// --------------------------------------------------------------- allowlist

TEST_CASE("Allowlist: scheme, host and port must all match, ports default from the scheme", "[egress]") {
  EgressAllowlist list{"https://api.example.com", "http://127.0.0.1:8080"};
  CHECK(list.allows("https://api.example.com/v1"));
  CHECK(list.allows("https://API.EXAMPLE.COM./v1"));
  CHECK(list.allows("https://api.example.com:443/v1"));
  CHECK(list.allows("http://127.0.0.1:8080/x"));

  CHECK_FALSE(list.allows("http://api.example.com/v1"));        // scheme
  CHECK_FALSE(list.allows("https://api.example.com:8443/v1"));  // port
  CHECK_FALSE(list.allows("http://127.0.0.1/x"));               // default port 80 is not 8080
  CHECK_FALSE(list.allows("https://evil.example.com/"));
  CHECK_FALSE(list.allows("https://api.example.com.evil.net/"));
  CHECK_FALSE(list.allows("https://api.example.com@evil.net/"));
  CHECK(*list.check("https://evil.example.com:8443/x?token=1") ==
        "https://evil.example.com:8443 is not on the egress allowlist");
  CHECK_THAT(*list.check("https://api.example.com@evil.net/"), Catch::StartsWith("invalid URL: credentials"));
}

TEST_CASE("Allowlist: a wildcard matches subdomains at any depth, never the apex or a look-alike", "[egress]") {
  EgressAllowlist list{"https://*.example.com"};
  CHECK(list.allows("https://a.example.com/"));
  CHECK(list.allows("https://a.b.example.com/"));
  CHECK_FALSE(list.allows("https://example.com/"));
  CHECK_FALSE(list.allows("https://evilexample.com/"));
  CHECK_FALSE(list.allows("https://example.com.evil.net/"));
}

TEST_CASE("Allowlist: IPv6 rules compare canonical forms", "[egress]") {
  EgressAllowlist list{"http://[::1]:9000"};
  CHECK(list.allows("http://[0:0::1]:9000/x"));
  CHECK_FALSE(list.allows("http://[::2]:9000/x"));
  CHECK_FALSE(list.allows("http://127.0.0.1:9000/x"));
  EgressAllowlist from_struct({EgressRule{.scheme = "HTTP", .host = "[::1]", .port = 9000}});
  CHECK(from_struct.allows("http://[::1]:9000/"));
}

TEST_CASE("Allowlist: malformed rules are refused at construction", "[egress]") {
  CHECK_THROWS_WITH(EgressRule::parse("api.example.com"), Catch::Contains("scheme://host"));
  CHECK_THROWS_WITH(EgressRule::parse("https://api.example.com/v1"), Catch::Contains("origin only"));
  CHECK_THROWS_WITH(EgressRule::parse("https://user@api.example.com"), Catch::Contains("origin only"));
  CHECK_THROWS_WITH(EgressRule::parse("ftp://files.example.com"), Catch::Contains("scheme 'ftp'"));
  CHECK_THROWS_WITH(EgressRule::parse("https://a.*.example.com"), Catch::Contains("invalid character"));
  CHECK_THROWS_WITH(EgressRule::parse("https://example.com:99999"), Catch::Contains("out of range"));
  CHECK_THROWS_AS(EgressAllowlist({EgressRule{.scheme = "https", .host = ""}}), agentkit::Error);
  CHECK_THROWS_AS(EgressAllowlist({EgressRule{.scheme = "https", .host = "a.com", .port = 0}}), agentkit::Error);
  auto rule = EgressRule::parse("HTTPS://*.Example.COM:8443/");
  CHECK(rule.scheme == "https");
  CHECK(rule.host == "*.example.com");
  CHECK(rule.port == 8443);
}

TEST_CASE("Allowlist: within() allows only what both lists allow", "[egress]") {
  auto outer = allow({"https://a.example.com", "https://b.example.com"});
  EgressAllowlist inner{"https://b.example.com", "https://c.example.com"};
  auto both = inner.within(outer);
  CHECK(both.allows("https://b.example.com/"));
  CHECK_FALSE(both.allows("https://a.example.com/"));
  CHECK_FALSE(both.allows("https://c.example.com/"));
}

// -------------------------------------------------------------- middleware

TEST_CASE("egress_allowlist(): the tool sees the list, a refused URL is a denied result, never contacted",
          "[egress][middleware]") {
  Fetcher fetch;
  auto list = allow({"https://api.example.com"});
  agentkit::Invoker invoker({agentkit::error_boundary(), agentkit::egress_allowlist(list)});
  RunContext ctx;

  auto ok = invoker.invoke_tool(fetch.request("https://api.example.com/v1"), ctx);
  CHECK(ok.status == Status::ok);
  CHECK(fetch.seen == list);
  CHECK(*fetch.contacted == 1);

  auto refused = invoker.invoke_tool(fetch.request("https://evil.example.net/steal"), ctx);
  CHECK(refused.status == Status::denied);
  CHECK(refused.text ==
        "call to tool 'fetch' refused by the egress allowlist: https://evil.example.net is not on the egress allowlist");
  CHECK(*fetch.contacted == 1);

  auto tricked = invoker.invoke_tool(fetch.request("https://api.example.com@evil.example.net/"), ctx);
  CHECK(tricked.status == Status::denied);
  CHECK_THAT(tricked.text, Catch::Contains("credentials"));
  CHECK(*fetch.contacted == 1);

  // The caller's context is not changed by the layer.
  CHECK(ctx.egress == nullptr);
}

TEST_CASE("egress_allowlist(): a tool declaring its URL in metadata is refused before it runs",
          "[egress][middleware]") {
  Fetcher fetch(Json{{"url", "https://evil.example.net"}});
  agentkit::Invoker invoker({agentkit::egress_allowlist(allow({"https://api.example.com"}))});
  RunContext ctx;
  auto result = invoker.invoke_tool(fetch.request("https://api.example.com/"), ctx);
  CHECK(result.status == Status::denied);
  CHECK_THAT(result.text, Catch::Contains("https://evil.example.net is not on the egress allowlist"));
  CHECK(fetch.seen == nullptr);  // the body never ran
  CHECK(*fetch.contacted == 0);
}

TEST_CASE("egress_allowlist(): a list installed under another narrows it", "[egress][middleware]") {
  Fetcher fetch;
  agentkit::Invoker invoker(
      {agentkit::egress_allowlist(allow({"https://a.example.com", "https://b.example.com"})),
       agentkit::egress_allowlist(allow({"https://b.example.com", "https://c.example.com"}))});
  RunContext ctx;
  CHECK(invoker.invoke_tool(fetch.request("https://b.example.com/"), ctx).status == Status::ok);
  CHECK(invoker.invoke_tool(fetch.request("https://a.example.com/"), ctx).status == Status::denied);
  CHECK(invoker.invoke_tool(fetch.request("https://c.example.com/"), ctx).status == Status::denied);
  CHECK(*fetch.contacted == 1);
}

TEST_CASE("check_egress: no list means anywhere, a list set on the context is enforced", "[egress]") {
  RunContext ctx;
  CHECK_NOTHROW(agentkit::check_egress(ctx, "https://anywhere.example/"));
  ctx.egress = allow({"https://api.example.com"});
  CHECK_NOTHROW(agentkit::check_egress(ctx, "https://api.example.com/x"));
  try {
    agentkit::check_egress(ctx, "http://api.example.com/x");
    FAIL("expected EgressDenied");
  } catch (const agentkit::EgressDenied& e) {
    CHECK(e.reason() == "http://api.example.com is not on the egress allowlist");
    CHECK(std::string(e.what()) == "egress refused: http://api.example.com is not on the egress allowlist");
  }
  CHECK_THROWS_AS(agentkit::egress_allowlist(nullptr), agentkit::Error);
}

// ------------------------------------------------ hostile URLs, as curl reads them

TEST_CASE("Allowlist judges hostile URLs on the host libcurl connects to", "[egress][url][hostile]") {
  EgressAllowlist list{"http://allowed.com", "http://127.0.0.1", "http://[::1]"};
  // The fragment starts at '#': curl connects to evil.com, whatever follows.
  CHECK(parse_url("http://evil.com#@allowed.com").host == "evil.com");
  CHECK(*list.check("http://evil.com#@allowed.com") == "http://evil.com is not on the egress allowlist");
  CHECK(*list.check("http://evil.com?@allowed.com/") == "http://evil.com is not on the egress allowlist");
  CHECK(*list.check("http://evil.com/@allowed.com/") == "http://evil.com is not on the egress allowlist");
  // Userinfo tricks: curl would connect to evil.com.
  for (const char* url : {"http://allowed.com@evil.com/", "http://allowed.com:80@evil.com/",
                          "http://allowed.com%2f@evil.com/", "http://@allowed.com/", "http://:@allowed.com/"}) {
    INFO(url);
    CHECK_THAT(*list.check(url), Catch::Contains("credentials"));
  }
  // Backslashes: a browser reads "\" as "/", curl as user info.
  for (const char* url : {"http://allowed.com\\@evil.com/", "http:\\\\evil.com/", "http://evil.com\\.allowed.com/"}) {
    INFO(url);
    CHECK_THAT(*list.check(url), Catch::Contains("backslash"));
  }
  // Percent-encoded hosts: curl decodes them; refused rather than read twice.
  for (const char* url : {"http://%61llowed.com/", "http://evil.com%2eallowed.com/", "http://allowed%2ecom/"}) {
    INFO(url);
    CHECK_THAT(*list.check(url), Catch::Contains("percent-encoded"));
  }
  // Numeric shorthands curl turns into 127.0.0.1: refused, never taken for the allowed 127.0.0.1.
  for (const char* url : {"http://2130706433/", "http://0177.0.0.1/", "http://0x7f.1/", "http://127.1/"}) {
    INFO(url);
    CHECK_THAT(*list.check(url), Catch::Contains("ambiguous numeric host"));
  }
  CHECK(list.allows("http://127.0.0.1/"));
  // IPv6: a mapped IPv4 address is another host; zone ids are refused.
  CHECK(*list.check("http://[::ffff:127.0.0.1]/") == "http://[::ffff:127.0.0.1] is not on the egress allowlist");
  CHECK(list.allows("http://[0:0:0:0:0:0:0:1]/"));
  CHECK_THAT(*list.check("http://[::1%25lo]/"), Catch::Contains("zone"));
  // Trailing dots and case: one origin.
  CHECK(list.allows("HTTP://ALLOWED.COM./x"));
  CHECK_THAT(*list.check("http://allowed.com../"), Catch::Contains("empty label"));
  // Spellings curl accepts and reads its own way ("http:///x" is host "x" to curl).
  CHECK_THAT(*list.check("http:/allowed.com/"), Catch::Contains("absolute"));
  CHECK_THAT(*list.check("http:///allowed.com/"), Catch::Contains("no host"));
  CHECK_THAT(*list.check("//allowed.com/"), Catch::Contains("absolute"));
  // Other schemes.
  CHECK_THAT(*list.check("file://allowed.com/etc/passwd"), Catch::Contains("scheme 'file'"));
  CHECK_THAT(*list.check("gopher://allowed.com/"), Catch::Contains("scheme 'gopher'"));
}

TEST_CASE("parse_url: str() is what curl sends, and parses back to the same URL", "[egress][url]") {
  for (const char* text : {"HTTPS://API.Example.COM./v1/items?q=1#frag", "http://[0:0::1]:9000/a/../b?x",
                           "http://example.com", "https://example.com:8443/%7Euser/?a=b&c=d", "http://a.example/./x/."}) {
    INFO(text);
    const auto url = parse_url(text);
    const auto again = parse_url(url.str());
    CHECK(again.str() == url.str());
    CHECK(again.same_origin(url));
  }
  CHECK(parse_url("http://[0:0::1]:9000/a/../b?x").str() == "http://[::1]:9000/b?x");  // dot segments as curl removes them
}

TEST_CASE("resolve_url resolves redirects as libcurl does, then judges the result", "[egress][url][redirect]") {
  const auto base = parse_url("https://api.example.com/a/b?x=1");
  const auto refused = [&](const char* location) {
    try {
      agentkit::resolve_url(base, location);
    } catch (const UrlError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(agentkit::resolve_url(base, "/abs?q").str() == "https://api.example.com/abs?q");
  CHECK(agentkit::resolve_url(base, "rel/x").str() == "https://api.example.com/a/rel/x");
  CHECK(agentkit::resolve_url(base, "../up").str() == "https://api.example.com/up");
  CHECK(agentkit::resolve_url(base, "?q=2").str() == "https://api.example.com/a/b?q=2");
  CHECK(agentkit::resolve_url(base, "https://other.example/").str() == "https://other.example/");
  // Protocol-relative: another host, the base's scheme.
  const auto hop = agentkit::resolve_url(base, "//evil.com/x");
  CHECK(hop.scheme == "https");
  CHECK(hop.host == "evil.com");
  CHECK_THAT(refused("///evil.com/x"), Catch::Contains("no host"));  // curl would read host evil.com
  CHECK(agentkit::resolve_url(base, "http://evil.com#@api.example.com").host == "evil.com");
  CHECK_THAT(refused("file:///etc/passwd"), Catch::Contains("scheme 'file'"));
  CHECK_THAT(refused("ftp://api.example.com/"), Catch::Contains("scheme 'ftp'"));
  CHECK_THAT(refused("//user@evil.com/"), Catch::Contains("credentials"));
  CHECK_THAT(refused("/\\evil.com"), Catch::Contains("backslash"));
  CHECK_THAT(refused("//2130706433/"), Catch::Contains("ambiguous numeric host"));
  CHECK_THAT(refused(""), Catch::Contains("empty URL"));
  CHECK_THAT(refused("http:evil.com"), Catch::Contains("absolute"));
}

TEST_CASE("url_for_messages never shows user info, the query or the fragment", "[egress][url]") {
  CHECK(agentkit::url_for_messages("https://user:pw@host.example:8443/p/q?key=sk-1#f") == "https://host.example:8443/p/q");
  CHECK(agentkit::url_for_messages("HTTP://Host.example") == "http://Host.example/");
  CHECK(agentkit::url_for_messages("not a url") == "(invalid URL)");
  CHECK(agentkit::url_for_messages("http://a.example\\@b.example/?k=v").find("k=v") == std::string::npos);
}
