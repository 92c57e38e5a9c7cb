#pragma once
// Internal to the engine (cognition/src): the writer of a durable run's
// checkpoints, off the host's thread.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/error.h>

namespace agentkit::cognition {

// Writes a durable run's checkpoints off the host's thread, on a thread of
// its own, in the order they were queued. The host hands it each state
// without its history and only the messages appended since the last save
// (the history is append-only after the run is claimed), so queuing a save
// costs the host the new messages, not the run's length. After a failed or
// lost save nothing more is written: the store keeps the last checkpoint
// that succeeded, and failure() says why until the engine stops the run.
class CheckpointWriter {
 public:
  struct Save {
    RunState state;               // history left empty
    std::size_t from = 0;         // the history's length before `appended`
    std::vector<Message> appended;
  };

  CheckpointWriter(std::shared_ptr<Checkpoint> checkpoint, std::vector<Message> history);
  ~CheckpointWriter();  // queued saves are written first

  using After = std::function<void(const std::optional<std::string>& problem, const RunState& state)>;
  // Queues a save and returns its sequence number (1, 2, ...). `after`
  // (optional) runs on the writer once the save is done, with why it failed
  // (nullopt: it was written). After a failure the rest is skipped.
  std::uint64_t save(Save save, After after = nullptr);
  // Lets the thread end once the queue is written, without waiting for it.
  void stop();
  // Every queued save is written (or skipped after a failure).
  bool idle() const;
  // Saves queued before save number `seq` are not all done yet.
  bool behind(std::uint64_t seq) const;
  // Blocks up to `max` (nullopt: as long as it takes) until idle.
  void wait_idle(std::optional<std::chrono::milliseconds> max) const;
  // The first failed or lost save: why, its code (aborted: another writer
  // advanced the run), and its sequence number.
  struct Refusal {
    std::string problem;
    ErrorCode code = ErrorCode::internal;
    std::uint64_t seq = 0;
  };
  std::optional<Refusal> failure() const;

 private:
  struct Job {
    Save save;
    After after;
  };

  void loop();

  std::shared_ptr<Checkpoint> checkpoint_;
  std::vector<Message> history_;  // the run's history as last saved (touched by the writer thread only)
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  mutable std::condition_variable done_cv_;
  std::deque<Job> queue_;
  std::uint64_t queued_ = 0;
  std::uint64_t written_ = 0;
  std::optional<Refusal> failure_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace agentkit::cognition
