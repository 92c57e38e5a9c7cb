// The one secret redactor: which values count as secrets and how they are
// replaced.
#include <catch2/catch.hpp>

#include <string>

#include <agentkit/redact.h>

using agentkit::Json;
using agentkit::Redactor;

TEST_CASE("Redactor: one minimum length (8) for every secret", "[redact]") {
  STATIC_REQUIRE(Redactor::kMinSecretChars == 8);
  Redactor r;
  r.add("1234567");   // 7: too short to be a credential, would mangle ordinary text
  r.add("12345678");  // 8
  CHECK(r.secrets().size() == 1);
  CHECK(r.redact("a 1234567 b 12345678 c") == "a 1234567 b [redacted] c");
}

TEST_CASE("Redactor: an API key, a Bearer header and an x-api-key header are redacted however they are echoed",
          "[redact]") {
  Redactor r;
  r.add_header("Authorization", "Bearer sk-bearer-0123456789");
  r.add_header("X-API-KEY", "xk-anthropic-abcdef");
  r.add_header("Accept", "application/json");  // not a credential header
  r.add("AIzaApiKey-42424242");                // a key from the environment
  CHECK(r.redact("got Bearer sk-bearer-0123456789") == "got [redacted]");
  CHECK(r.redact("token sk-bearer-0123456789 is invalid") == "token [redacted] is invalid");  // without "Bearer"
  CHECK(r.redact("x-api-key: xk-anthropic-abcdef") == "x-api-key: [redacted]");
  CHECK(r.redact("key=AIzaApiKey-42424242&key=AIzaApiKey-42424242") == "key=[redacted]&key=[redacted]");
  CHECK(r.redact("application/json") == "application/json");
  CHECK(r.redact("Bearer alone") == "Bearer alone");  // "Bearer" itself is shorter than 8
  CHECK(Redactor::is_credential_header("proxy-authorization"));
  CHECK(Redactor::is_credential_header("X-Goog-Api-Key"));
  CHECK_FALSE(Redactor::is_credential_header("content-type"));
}

TEST_CASE("Redactor: a secret containing another is replaced whole, JSON strings are redacted in place", "[redact]") {
  Redactor r;
  r.add("abcdefgh");
  r.add("abcdefgh-longer-secret");
  CHECK(r.redact("x abcdefgh-longer-secret y abcdefgh") == "x [redacted] y [redacted]");
  Json value{{"echo", "abcdefgh"}, {"nested", {{"list", {"abcdefgh-longer-secret", 3}}}}, {"abcdefgh", true}};
  r.redact_in_place(value);
  CHECK(value["echo"] == "[redacted]");
  CHECK(value["nested"]["list"][0] == "[redacted]");
  CHECK(value["nested"]["list"][1] == 3);
  CHECK(value.contains("abcdefgh"));  // keys are the tool's own names, not echoes
  Redactor none;
  CHECK(none.empty());
  std::string text = "abcdefgh";
  CHECK_FALSE(none.redact_in_place(text));
}
