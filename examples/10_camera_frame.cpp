// A camera-frame tool returns an image; the image reaches the model as an
// image part (FakeLLM records it), and the same conversation is shown as the
// request bodies the OpenAI and Anthropic adapters would send (built offline:
// no network, no keys).
#include <iostream>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/anthropic.h>
#include <agentkit/providers/openai.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

namespace {

// A 1x1 red PNG: 69 bytes of binary, not text.
std::string grab_frame() {
  static const unsigned char png[] = {
      0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00,
      0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53, 0xde, 0x00, 0x00, 0x00,
      0x0c, 0x49, 0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0xf8, 0xcf, 0xc0, 0x00, 0x00, 0x03, 0x01, 0x01, 0x00, 0x18,
      0xdd, 0x8d, 0xb0, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};
  return std::string(reinterpret_cast<const char*>(png), sizeof png);
}

}  // namespace

int main() {
  using namespace agentkit;
  using agentkit::testing::Turn;

  auto camera = tool("camera_frame")
                    .doc("Grab the current frame of the front camera.")
                    .side_effecting(false)
                    .fn([](RunContext&) {
                      return ToolOutput{"front camera, frame 7",
                                        {ImagePart{.media_type = "image/png", .data = grab_frame()}}};
                    });

  auto llm = agentkit::testing::FakeLLM::script({
      Turn{.tool_calls = {{"c1", "camera_frame", Json::object(), {}}}},
      Turn{.content = "The frame is a single red pixel."},
  });
  Agent agent("eyes", "fake", "You describe what the robot's camera sees.", cognition::react({camera}));
  auto ctx = agentkit::testing::make_test_ctx({.llm = llm});
  const RunResult result = agent.run("What does the front camera see?", ctx);

  const auto requests = llm->requests();
  const auto images = requests.at(1).images();
  std::cout << "the model saw " << images.size() << " image: " << images.at(0).media_type << ", "
            << images.at(0).data.size() << " bytes, bit-exact: " << (images.at(0).data == grab_frame() ? "yes" : "no")
            << "\n";
  std::cout << "answer: " << result.output << "\n\n";

  // The second model call, as each adapter would put it on the wire.
  const ModelRequest request{.model = "gpt-4o-mini", .system = agent.prompt(), .messages = requests.at(1).messages};
  std::cout << "OpenAI chat request body (the image becomes a text note: tool messages take text only):\n"
            << providers::openai_chat_body(request, {}, false).dump(2) << "\n\n";
  std::cout << "Anthropic request body (the image is an image block in the tool_result):\n"
            << providers::anthropic_body(request, {.model = "claude-sonnet-4-5"}, false).dump(2) << "\n";
}
