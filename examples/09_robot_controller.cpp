// 09 — a robot controller: a 100 Hz control tick advances a patrol agent's
// run with RunHandle::poll(), under a budget of model steps and wall time.
// An obstacle sensor fires mid-run and the controller calls cancel(): the run
// ends `cancelled` and the waypoint it had not reached is never driven to.
// Every step is checkpointed to a SQLite file; after a simulated restart a
// fresh connection reads the last checkpoint back.
//
// The planner is a FakeLLM answering inline, so each poll() is one quick
// step. With a provider model, poll() stays non-blocking too (see 08).
//
// Run: ./build/examples/example_09_robot_controller
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/state/sqlite_store.h>
#include <agentkit/testing/fake_llm.h>

namespace {

using agentkit::testing::Turn;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kTick = 10ms;     // 100 Hz
constexpr int kObstacleTick = 10;  // when the simulated sensor fires
constexpr int kMaxTicks = 300;

struct Robot {
  std::string position = "dock";
  bool motors_on = true;
};

Turn drive(const std::string& id, const std::string& waypoint) {
  return Turn{.tool_calls = {{id, "drive_to", {{"waypoint", waypoint}}, {}}}};
}

}  // namespace

int main() {
  const std::string db =
      (std::filesystem::temp_directory_path() / ("agentkit_robot_" + std::to_string(::getpid()) + ".db")).string();
  Robot robot;
  auto drive_to = agentkit::tool("drive_to")
                      .doc("Drive the robot to a named waypoint and report where it stopped.")
                      .side_effecting(true)
                      .params("waypoint")
                      .fn([&robot](const std::string& waypoint) {
                        if (!robot.motors_on) throw std::runtime_error("motors are stopped");
                        robot.position = waypoint;
                        return "arrived at " + waypoint;
                      });
  const agentkit::Agent patrol("patrol", "planner", "You patrol the warehouse aisles in order.",
                               agentkit::cognition::react({drive_to}));
  auto planner = agentkit::testing::FakeLLM::script(
      {drive("d1", "aisle A"), drive("d2", "aisle B"), drive("d3", "aisle C"), Turn{.content = "Patrol complete."}});

  std::string run_id;
  {
    agentkit::RunContext ctx;
    ctx.models = [planner](std::string_view) { return planner; };
    ctx.budget = std::make_shared<agentkit::Budget>(agentkit::BudgetLimits{.model_steps = 8, .wall_time = 2s});
    // Durability::normal: each checkpoint survives a crash of this process
    // without an fsync inside the control tick.
    ctx.store = std::make_shared<agentkit::state::SqliteStore>(
        db, agentkit::state::SqliteStore::Options{.durability = agentkit::state::SqliteStore::Durability::normal});

    auto run = patrol.start("Patrol aisles A, B and C.", ctx);
    auto next_tick = Clock::now();
    Clock::duration worst_poll{};
    for (int tick = 0; tick < kMaxTicks && !run.done(); ++tick) {
      if (tick == kObstacleTick) {  // the stop condition: stop the motors, then the run
        robot.motors_on = false;
        std::cout << "tick " << tick << ": obstacle ahead at " << robot.position << ", stopping\n";
        run.cancel();
      }
      const auto enter = Clock::now();
      run.poll();
      auto events = run.drain_events();
      worst_poll = std::max(worst_poll, Clock::now() - enter);
      for (const auto& event : events) {
        if (auto* e = std::get_if<agentkit::ToolCallFinished>(&event)) {
          std::cout << "tick " << tick << ": " << e->name << " -> " << e->text << "\n";
        }
      }
      next_tick += kTick;
      std::this_thread::sleep_until(next_tick);
    }
    const auto& result = run.result();
    run_id = result.state.run_id;
    std::cout << "run: " << to_string(result.stop_reason) << " (" << (result.failure ? result.failure->message : "") << "), robot at "
              << robot.position << "; budget used: " << ctx.budget->model_steps() << " of 8 model steps\n";
    std::cout << "worst tick inside agentkit (poll + checkpoint): "
              << std::chrono::duration<double, std::milli>(worst_poll).count() << " ms of " << kTick.count() << " ms\n";
  }

  // A restart: a new connection to the same file finds the last checkpoint.
  {
    agentkit::state::SqliteStore store(db);
    const auto saved = agentkit::load_run(store, {}, run_id);
    if (!saved) {
      std::cout << "no checkpoint for " << run_id << "\n";
      return 1;
    }
    const agentkit::Message& last = saved->history.back();
    std::cout << "checkpoint after restart: phase " << saved->to_json()["phase"].get<std::string>() << ", "
              << to_string(saved->stop_reason) << ", " << saved->iterations << " model calls, "
              << saved->history.size() << " messages; last: " << last.tool_name << ": " << last.text() << "\n";
    std::cout << "runs to recover: " << agentkit::interrupted_runs(store, {}).size() << "\n";
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
}
