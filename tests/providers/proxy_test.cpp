// The transport honours the standard proxy variables, as libcurl does.
#include <catch2/catch.hpp>

#include <cstdlib>

#include <agentkit/providers/transport.h>
#include <agentkit/testing/wire_server.h>

TEST_CASE("http_proxy routes requests through the proxy, no_proxy bypasses it", "[transport][proxy]") {
  agentkit::testing::WireServer proxy;
  agentkit::testing::WireServer::Response ok;
  ok.body = "via proxy";
  proxy.enqueue(ok);
  // ctest runs each test case in its own process, so the variables stay local.
  ::setenv("http_proxy", proxy.base_url().c_str(), 1);
  ::setenv("no_proxy", "", 1);
  agentkit::providers::Transport transport;
  agentkit::providers::HttpRequest request{.method = "POST", .url = "http://api.example.invalid/v1/chat/completions",
                                           .headers = {{"content-type", "application/json"}}, .body = "{}"};
  auto response = transport.send(request);
  CHECK(response.body == "via proxy");
  REQUIRE(proxy.requests().size() == 1);
  // A proxied request carries the absolute URL on its request line.
  CHECK(proxy.requests()[0].path == "http://api.example.invalid/v1/chat/completions");
  CHECK(proxy.requests()[0].header("host") == "api.example.invalid");

  SECTION("no_proxy bypasses it") {
    agentkit::testing::WireServer direct;
    agentkit::testing::WireServer::Response d;
    d.body = "direct";
    direct.enqueue(d);
    ::setenv("no_proxy", "127.0.0.1", 1);
    agentkit::providers::Transport t2;
    request.url = direct.base_url() + "/x";
    CHECK(t2.send(request).body == "direct");
    CHECK(proxy.requests().size() == 1);
  }
  ::unsetenv("http_proxy");
  ::unsetenv("no_proxy");
}
