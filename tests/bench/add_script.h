#pragma once
// The benchmarks' shared workload: a scripted model asks for `tool`(a, b) K
// times, one call per turn, then answers "done".
#include <string>
#include <vector>

#include <agentkit/testing/fake_llm.h>

inline std::vector<agentkit::testing::Turn> add_script(int k, const std::string& tool = "add") {
  std::vector<agentkit::testing::Turn> turns;
  turns.reserve(static_cast<std::size_t>(k) + 1);
  for (int i = 0; i < k; ++i) {
    turns.push_back({.tool_calls = {{"call_" + std::to_string(i), tool, {{"a", i}, {"b", 1}}, {}}}});
  }
  turns.push_back({.content = "done"});
  return turns;
}
