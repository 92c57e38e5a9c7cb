#include <iostream>
#include <agentkit/function_tool.h>
#include <agentkit/registry.h>
#include <agentkit/testing/test_context.h>
int main() {
  auto echo = agentkit::tool("echo").doc("Echo the given text back to the caller unchanged.")
                  .side_effecting(false).params("text")
                  .fn([](const std::string& text) { return text; });
  auto registry = agentkit::ToolRegistry::from_tools({echo});
  auto ctx = agentkit::testing::make_test_ctx();
  std::cout << registry.find("echo")->run({{"text", "consumer ok"}}, ctx).get<std::string>() << "\n";
}
