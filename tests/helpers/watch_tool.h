// A tool "watch" that waits for its run's cancellation (or 5 s), for tests
// that cancel a run while its call is in flight:
//   auto watch = agentkit_test::watch_tool();
//   react({watch.tool});
//   ... once watch.started is set, cancel the run ...
//   CHECK(eventually([&] { return watch.saw_cancel->load(); }));
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <agentkit/context.h>
#include <agentkit/function_tool.h>

namespace agentkit_test {

struct WatchTool {
  // Shared with the tool's body, so a call still running after the test's
  // locals are gone never dangles.
  std::shared_ptr<std::atomic<bool>> started = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<std::atomic<bool>> saw_cancel = std::make_shared<std::atomic<bool>>(false);
  agentkit::ToolPtr tool;
};

inline WatchTool watch_tool() {
  using namespace std::chrono_literals;
  using Clock = std::chrono::steady_clock;
  WatchTool watch;
  watch.tool = agentkit::tool("watch")
                   .doc("Watch the gate until something happens, then report it.")
                   .side_effecting(false)
                   .fn([saw_cancel = watch.saw_cancel, started = watch.started](agentkit::RunContext& ctx) {
                     started->store(true);
                     const auto until = Clock::now() + 5s;
                     while (Clock::now() < until && !ctx.cancellation.cancelled()) std::this_thread::sleep_for(1ms);
                     saw_cancel->store(ctx.cancellation.cancelled());
                     return std::string("nothing happened");
                   });
  return watch;
}

}  // namespace agentkit_test
