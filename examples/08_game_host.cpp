// 08 — a game host: a 60 Hz frame loop advances eight NPC agent runs at once
// with RunHandle::poll() and drain_events(), never blocking, and reports the
// time each frame spent inside agentkit.
//
// Each NPC's model is reached through the real OpenAI adapter and libcurl,
// served by a loopback server that takes 40-145 ms per turn and trickles its
// stream, so every run spans many frames. poll() only advances what is ready
// (curl multi underneath); the host sleeps until its next frame itself.
//
// Run: ./build/examples/example_08_game_host
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/models.h>
#include <agentkit/testing/wire_server.h>

namespace {

using agentkit::testing::WireServer;
using Clock = std::chrono::steady_clock;

constexpr int kNpcs = 8;
constexpr auto kFrame = std::chrono::microseconds(16'667);  // 60 Hz
constexpr int kMaxFrames = 600;                              // give up after 10 s

// One Chat Completions stream carrying `delta`, split into a few chunks.
WireServer::Response openai_stream(const agentkit::Json& delta, const std::string& finish, int npc) {
  WireServer::Response r;
  r.headers = {{"content-type", "text/event-stream"}};
  r.delay = std::chrono::milliseconds(40 + 15 * npc);
  r.chunk_delay = std::chrono::milliseconds(10);
  const agentkit::Json chunk = {{"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
  r.chunks = WireServer::split("data: " + chunk.dump() + "\n\n", 64);
  r.chunks.push_back("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":60,\"completion_tokens\":12}}\n\n");
  r.chunks.push_back("data: [DONE]\n\n");
  return r;
}

// The NPCs' model: look north first, then report what the look returned.
WireServer::Response npc_brain(const WireServer::Request& request) {
  const auto messages = agentkit::Json::parse(request.body).at("messages");
  const std::string task = messages.at(1).at("content");  // after the system prompt
  const int npc = std::stoi(task.substr(task.find('#') + 1));
  const auto& last = messages.back();
  if (last.at("role") != "tool") {
    const agentkit::Json call = {{"index", 0}, {"id", "look1"}, {"type", "function"},
                                 {"function", {{"name", "look"}, {"arguments", R"({"direction":"north"})"}}}};
    return openai_stream({{"tool_calls", {call}}}, "tool_calls", npc);
  }
  return openai_stream({{"content", "Guard #" + std::to_string(npc) + " reports: " + last.at("content").get<std::string>()}},
                       "stop", npc);
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// The q-th quantile of sorted samples, interpolating between ranks.
double percentile(const std::vector<double>& sorted, double q) {
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(rank);
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (rank - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

}  // namespace

int main() {
  WireServer server;
  server.set_handler(npc_brain);

  auto look = agentkit::tool("look")
                  .doc("Look in a compass direction and describe what the guard sees.")
                  .side_effecting(false)
                  .params("direction")
                  .fn([](const std::string& direction) { return "the " + direction + " gate is quiet"; });
  const agentkit::Agent guard("guard", "openai/npc-brain@" + server.base_url() + "/v1",
                              "You are a castle guard. Look around, then report in one sentence.",
                              agentkit::cognition::react({look}));
  agentkit::RunContext ctx;  // shared by the NPCs: one transport, one budget
  ctx.models = agentkit::providers::model_resolver({});

  std::vector<agentkit::RunHandle> npcs;
  std::vector<double> inside_ms;  // per frame: time spent in agentkit calls
  std::size_t most_in_flight = 0;
  int answered = 0;
  auto next_frame = Clock::now();
  for (int frame = 0; frame < kMaxFrames; ++frame) {
    // ---- agentkit's share of the frame: start, poll, drain. Never blocks.
    const auto enter = Clock::now();
    if (frame == 0) {
      for (int i = 0; i < kNpcs; ++i) npcs.push_back(guard.start("Guard #" + std::to_string(i) + ": keep watch.", ctx));
    }
    std::vector<std::vector<agentkit::Event>> events(npcs.size());
    std::size_t in_flight = 0;
    for (std::size_t i = 0; i < npcs.size(); ++i) {
      if (npcs[i].done()) continue;
      in_flight += !npcs[i].poll();
      events[i] = npcs[i].drain_events();
    }
    inside_ms.push_back(ms(Clock::now() - enter));
    most_in_flight = std::max(most_in_flight, in_flight);

    // ---- the game's share: react to events, render, simulate...
    for (std::size_t i = 0; i < events.size(); ++i) {
      for (const auto& event : events[i]) {
        if (auto* e = std::get_if<agentkit::ToolCallStarted>(&event)) {
          std::cout << "frame " << frame << ": guard #" << i << " calls " << e->call.name << "\n";
        } else if (auto* e = std::get_if<agentkit::RunFinished>(&event)) {
          std::cout << "frame " << frame << ": guard #" << i << " " << agentkit::to_string(e->stop_reason) << ": " << e->output << "\n";
          answered += e->stop_reason == agentkit::StopReason::answered;
        }
      }
    }
    if (in_flight == 0) break;

    next_frame += kFrame;
    const auto now = Clock::now();
    if (next_frame < now) next_frame = now;  // a late frame: skip ahead, do not catch up
    std::this_thread::sleep_until(next_frame);
  }

  std::vector<double> sorted = inside_ms;
  std::sort(sorted.begin(), sorted.end());
  const double total = std::accumulate(sorted.begin(), sorted.end(), 0.0);
  char line[200];
  std::snprintf(line, sizeof line, "time inside agentkit per frame: worst %.3f ms, p99 %.3f ms, mean %.3f ms",
                sorted.back(), percentile(sorted, 0.99), total / static_cast<double>(sorted.size()));
  std::cout << answered << "/" << kNpcs << " runs answered in " << inside_ms.size() << " frames; "
            << most_in_flight << " in flight together\n"
            << line << " (a frame is 16.667 ms)\n";
  return answered == kNpcs ? 0 : 1;
}
