// Model strings -> adapters (<agentkit/providers/models.h>): the forms
// accepted, and base URLs checked before a key is ever sent to them.
#include <catch2/catch.hpp>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/providers/models.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/testing/wire_server.h>

using agentkit::providers::make_model;
using agentkit::providers::ProviderSettings;
using agentkit::providers::resolve_model;
using agentkit::testing::WireServer;

namespace {

// "127.0.0.1:PORT": the server's address without its scheme.
std::string without_scheme(const WireServer& server) {
  std::string url = server.base_url();
  return url.erase(0, url.find("://") + 3);
}

}  // namespace

TEST_CASE("a model string resolves to its provider, model and base URL", "[models]") {
  const ProviderSettings keys{.openai_api_key = "sk-o", .anthropic_api_key = "sk-a"};
  auto openai = resolve_model("openai/gpt-4o-mini", keys);
  CHECK(openai.provider == "openai");
  CHECK(openai.model == "gpt-4o-mini");
  CHECK(openai.base_url.empty());
  CHECK(openai.api_key == "sk-o");
  CHECK(openai.api_key_variable == "OPENAI_API_KEY");
  auto local = resolve_model("openai/llama3@http://127.0.0.1:11434/v1", {});
  CHECK(local.model == "llama3");
  CHECK(local.base_url == "http://127.0.0.1:11434/v1");
  auto claude = resolve_model("anthropic/claude-x@https://proxy.example", keys);
  CHECK(claude.api_key_variable == "ANTHROPIC_API_KEY");
  CHECK(claude.base_url == "https://proxy.example");
  CHECK_THROWS_WITH(resolve_model("mistral/m", {}), Catch::StartsWith("unknown model 'mistral/m'"));
  CHECK_THROWS_AS(resolve_model("openai/", {}), agentkit::Error);
}

TEST_CASE("a base URL without a scheme is refused, never guessed to be http", "[models]") {
  WireServer server;
  const std::string bare = without_scheme(server) + "/v1";

  SECTION("after '@' in the model string") {
    CHECK_THROWS_WITH(make_model("openai/m@" + bare, {.openai_api_key = "sk-secret-1"}, nullptr),
                      "model 'openai/m': the base URL after '@' is not usable: it must start with https:// (or "
                      "http://)");
    CHECK_THROWS_AS(make_model("anthropic/m@" + bare, {}, nullptr), agentkit::Error);
    CHECK_THROWS_AS(make_model("openai/m@", {}, nullptr), agentkit::Error);
  }
  SECTION("in the settings (OPENAI_BASE_URL, ANTHROPIC_BASE_URL)") {
    CHECK_THROWS_WITH(make_model("openai/m", {.openai_base_url = bare}, nullptr),
                      Catch::StartsWith("the OpenAI base URL (OPENAI_BASE_URL) is not usable"));
    CHECK_THROWS_WITH(make_model("anthropic/m", {.anthropic_base_url = bare}, nullptr),
                      Catch::StartsWith("the Anthropic base URL (ANTHROPIC_BASE_URL) is not usable"));
  }
  SECTION("credentials and other schemes too, without repeating the URL") {
    try {
      make_model("openai/m@http://me:hunter2@127.0.0.1/v1", {}, nullptr);
      FAIL("accepted a URL with credentials");
    } catch (const agentkit::Error& e) {
      CHECK_THAT(e.what(), Catch::Contains("credentials"));
      CHECK_THAT(e.what(), !Catch::Contains("hunter2"));
    }
    CHECK_THROWS_AS(make_model("openai/m@ftp://127.0.0.1/v1", {}, nullptr), agentkit::Error);
  }
  SECTION("a run through the resolver fails before any request") {
    agentkit::Agent agent("a", "openai/m@" + bare, "You answer briefly.", agentkit::cognition::react({}));
    auto ctx = agentkit::testing::make_test_ctx();
    ctx.models = agentkit::providers::model_resolver({.openai_api_key = "sk-secret-1"});
    const auto result = agent.run("Hi", ctx);
    CHECK(result.stop_reason == agentkit::StopReason::failed);
    CHECK_THAT(result.failure.value().message, Catch::Contains("must start with https://"));
    CHECK_THAT(result.failure.value().message, !Catch::Contains("sk-secret-1"));
    CHECK(server.requests().empty());
  }
  CHECK_NOTHROW(make_model("openai/m@" + server.base_url() + "/v1", {}, nullptr));
}
