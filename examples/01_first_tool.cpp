// 01 — the first tool: one declaration gives the model its schema, validates
// the model's arguments and hands the body typed C++ values.
#include <iostream>
#include <map>
#include <string>

#include <agentkit/function_tool.h>
#include <agentkit/registry.h>
#include <agentkit/testing/test_context.h>

int main() {
  auto city_population = agentkit::tool("city_population")
                             .doc("Look up the most recent census population for a named city.")
                             .side_effecting(false)
                             .idempotent()
                             .params("city")
                             .fn([](const std::string& city) -> int {
                               static const std::map<std::string, int> census{{"lisbon", 545'000}, {"porto", 231'000}};
                               std::string key;
                               for (char c : city) key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                               auto it = census.find(key);
                               return it == census.end() ? 0 : it->second;
                             });

  auto registry = agentkit::ToolRegistry::from_tools({city_population});
  auto ctx = agentkit::testing::make_test_ctx();

  // What the model is shown:
  std::cout << registry.find("city_population")->spec().parameters->dump() << "\n";
  // What the model's call produces:
  std::cout << registry.find("city_population")->run({{"city", "Lisbon"}}, ctx) << "\n";
  // A bad call is refused before the body runs, with every mistake named:
  try {
    registry.find("city_population")->run({{"town", 3}}, ctx);
  } catch (const agentkit::ToolArgumentError& e) {
    std::cout << e.what() << "\n";
  }
}
