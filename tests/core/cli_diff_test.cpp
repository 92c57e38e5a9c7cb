// `agentkit diff A.json B.json`: two cassettes compared step by step.
#include <catch2/catch.hpp>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/replay.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/tool_calls.h"
#include "cli_support.h"

using agentkit_test::call;
using agentkit_test::cli::Outcome;
using agentkit_test::cli::run_cli;
using agentkit_test::cli::TempDir;

namespace {

// Records a one-lookup run whose answer is `answer`.
agentkit::Cassette record(const std::string& answer) {
  auto lookup = agentkit::tool("city_population")
                    .doc("Look up the most recent census population for a named city.")
                    .side_effecting(false)
                    .params("city")
                    .fn([](const std::string&) { return 545000; });
  agentkit::Agent agent("atlas", "fake", "You answer questions about cities.", agentkit::cognition::react({lookup}));
  auto ctx = agentkit::testing::make_test_ctx({.llm = agentkit::testing::FakeLLM::script(
                                                   {agentkit::testing::Turn{.tool_calls = {call("c1", "city_population", {{"city", "Lisbon"}})}},
                                                    agentkit::testing::Turn{.content = answer}})});
  agentkit::Recorder recorder;
  recorder.attach(ctx);
  agent.run("How big is Lisbon?", ctx);
  return recorder.cassette();
}

}  // namespace

TEST_CASE("agentkit diff prints each differing step and exits 1, 0 for the same run, 12 for a garbled file",
          "[cli][replay][diff]") {
  TempDir dir;
  const std::string a = (dir.path / "a.json").string();
  const std::string b = (dir.path / "b.json").string();
  record("About 545,000.").save(a);
  record("Roughly half a million.").save(b);

  const Outcome differ = run_cli(dir, {"diff", a, b});
  CHECK(differ.exit_code == 1);
  CHECK(differ.out == "run1#2 response /message/content/0/text: a 'About 545,000.', b 'Roughly half a million.'\n");

  const Outcome same = run_cli(dir, {"diff", a, a});
  CHECK(same.exit_code == 0);
  CHECK(same.out == "no differences\n");

  // As a page: every value escaped, no script.
  const std::string c = (dir.path / "c.json").string();
  record("<script>alert(1)</script>").save(c);
  const std::string page = (dir.path / "diff.html").string();
  const Outcome html = run_cli(dir, {"diff", a, c, "--html", page});
  CHECK(html.exit_code == 1);
  const std::string text = agentkit_test::read_file(page);
  CHECK_THAT(text, Catch::Contains("<table id=\"ak-diff\">") && Catch::Contains("run1#2") &&
                       Catch::Contains("&lt;script&gt;alert(1)&lt;/script&gt;") && Catch::Contains("1 differences"));
  CHECK(text.find("<script") == std::string::npos);

  const std::string garbled = dir.write("garbled.json", "{\"format\": \"agentkit-cassette\", \"version\": 1, \"model_steps\": 7}").string();
  const Outcome bad = run_cli(dir, {"diff", a, garbled});
  CHECK(bad.exit_code == 12);
  CHECK_THAT(bad.err, Catch::Contains("data_loss") && Catch::Contains("garbled.json"));
}
