#pragma once
// The workload of the crash harness and the cross-process resume test: an
// agent whose side-effecting tools append a line ("<pid> <token>") to an
// external ledger file, driven by a model whose next turn follows from the
// history alone, so a run recovered in another process continues the same
// plan.
//
// Plan of run `id`: kSteps turns that each ask for two `append` calls and a
// read-only `peek`; then, for runs that need approval, one `transfer` call
// (requires approval); then the answer "done <id>". Each `peek` returns 6 KB,
// so the history is sealed into a segment during the run.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/model.h>

namespace workload {

constexpr int kSteps = 3;

inline bool needs_transfer(const std::string& run_id) { return run_id.back() % 2 == 0; }

class PlannedModel final : public agentkit::Model {
 public:
  agentkit::ModelResponse complete(const agentkit::ModelRequest& request, agentkit::RunContext& ctx) override {
    int step = 0;
    for (const auto& m : request.messages) step += m.role == agentkit::Role::assistant;
    const std::string run = ctx.correlation_id;
    agentkit::ModelResponse response;
    response.message.role = agentkit::Role::assistant;
    const auto ask = [&](std::string id, std::string tool, std::string token) {
      response.message.tool_calls.push_back({std::move(id), std::move(tool), {{"token", std::move(token)}}, {}});
    };
    if (step < kSteps) {
      const std::string s = std::to_string(step);
      ask("a" + s, "append", run + "/" + s + "/a");
      ask("b" + s, "append", run + "/" + s + "/b");
      ask("p" + s, "peek", run + "/" + s + "/p");
    } else if (step == kSteps && needs_transfer(run)) {
      ask("t", "transfer", run + "/transfer");
    } else {
      response.message.add_text("done " + run);
    }
    response.finish_reason = response.message.tool_calls.empty() ? "stop" : "tool_calls";
    return response;
  }
};

// Appends "<pid> <token>\n" in one write (O_APPEND: lines never interleave).
inline void append_line(const std::string& path, const std::string& token) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot open the ledger file " + path);
  const std::string line = std::to_string(::getpid()) + " " + token + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  if (!ok) throw std::runtime_error("short write to the ledger file");
}

// The ledger file read back: token -> the pids that wrote it.
inline std::map<std::string, std::vector<long>> read_ledger(const std::string& path) {
  std::map<std::string, std::vector<long>> lines;
  std::ifstream in(path);
  long pid = 0;
  std::string token;
  while (in >> pid >> token) lines[token].push_back(pid);
  return lines;
}

inline agentkit::Agent make_agent(const std::string& ledger_path) {
  auto side_effect = [ledger_path](const std::string& token) {
    append_line(ledger_path, token);
    // Widen the window between the effect and its record, where a kill
    // leaves an intent without an outcome.
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    return "ok " + token;
  };
  auto append = agentkit::tool("append")
                    .doc("Append a token to the external ledger and confirm it.")
                    .side_effecting(true)
                    .params("token")
                    .fn(side_effect);
  auto transfer = agentkit::tool("transfer")
                      .doc("Transfer money; recorded in the external ledger.")
                      .side_effecting(true)
                      .requires_approval()
                      .params("token")
                      .fn(side_effect);
  auto peek = agentkit::tool("peek")
                  .doc("Read a value without changing anything outside.")
                  .side_effecting(false)
                  .params("token")
                  // Long enough that a run's history passes Checkpoint::kSealBytes
                  // by its last step: kills also land around sealed segments.
                  .fn([](const std::string& token) { return "seen " + token + " " + std::string(6000, '.'); });
  return agentkit::Agent("worker", "planned", "You follow the plan.",
                         agentkit::cognition::react({append, transfer, peek}), {.max_iterations = 20});
}

// A run whose id starts with "nest" is the boss's: it hands the whole plan
// to the worker (make_agent) through as_tool, in one call whose sub-run
// ("<run id>/1/w2": call w2 after the first model call) needs a transfer,
// then answers "done <id>". The worker's approval surfaces on the boss's run.
inline bool is_nested(const std::string& run_id) { return run_id.rfind("nest", 0) == 0; }
inline std::string worker_run(const std::string& run_id) { return run_id + "/1/w2"; }

class BossModel final : public agentkit::Model {
 public:
  agentkit::ModelResponse complete(const agentkit::ModelRequest& request, agentkit::RunContext& ctx) override {
    agentkit::ModelResponse response;
    response.message.role = agentkit::Role::assistant;
    if (request.messages.back().role == agentkit::Role::user) {
      response.message.tool_calls.push_back({"w2", "worker", {{"task", "follow the plan"}}, {}});
      response.finish_reason = "tool_calls";
    } else {
      response.message.add_text("done " + ctx.correlation_id);
      response.finish_reason = "stop";
    }
    return response;
  }
};

// The planned model for the worker, the boss's for the boss.
inline agentkit::ModelResolver models() {
  auto planned = std::make_shared<PlannedModel>();
  auto boss = std::make_shared<BossModel>();
  return [planned, boss](std::string_view name) -> std::shared_ptr<agentkit::Model> {
    if (name == "boss-plan") return boss;
    return planned;
  };
}

inline agentkit::Agent make_boss(const std::string& ledger_path) {
  auto worker = agentkit::as_tool(std::make_shared<const agentkit::Agent>(make_agent(ledger_path)),
                                  {.name = "worker", .description = "Has the worker follow the plan.",
                                   .side_effecting = true});
  return agentkit::Agent("boss", "boss-plan", "You delegate the plan.", agentkit::cognition::react({worker}),
                         {.max_iterations = 5});
}

}  // namespace workload
