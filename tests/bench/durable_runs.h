#pragma once
// bench_checkpoint's measurement, shared with bench_fleet: the median µs
// per run of `runs` runs of `agent` (K iterations calling `tool`, then an
// answer: add_script) on one store made by `make_store`. Exits with a
// message on a run that does not answer.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/state/store.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "add_script.h"

inline double us_per_run(const agentkit::Agent& agent, const std::string& tool, int k, int runs,
                         const std::function<std::shared_ptr<agentkit::state::Store>()>& make_store) {
  std::vector<double> samples;
  auto store = make_store();
  for (int r = 0; r < runs; ++r) {
    auto llm = agentkit::testing::FakeLLM::script(add_script(k, tool));
    llm->record_requests(false);
    auto ctx = agentkit::testing::make_test_ctx({.llm = llm});
    ctx.store = store;
    const auto start = std::chrono::steady_clock::now();
    const auto result = agent.run("add", ctx);
    samples.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    if (result.stop_reason != agentkit::StopReason::answered) {
      std::fprintf(stderr, "durable run: unexpected stop %s %s\n", std::string(to_string(result.stop_reason)).c_str(),
                   (result.failure ? result.failure->message : std::string()).c_str());
      std::exit(1);
    }
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}
