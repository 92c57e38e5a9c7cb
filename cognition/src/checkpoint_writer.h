#pragma once
// Internal to the engine (cognition/src): the writer of durable runs'
// checkpoints, off the host's thread.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/error.h>
#include <agentkit/trace.h>

namespace agentkit::state {
class Store;
}

namespace agentkit::cognition {

class StoreWriter;

// Writes one durable run's checkpoints off the host's thread, in the order
// they were queued. The thread is the store's: every run checkpointing to
// the same Store object (in this process) shares one writer thread, which
// takes the runs with saves queued in turn, one save each, so a run never
// waits for another run's whole queue and thousands of durable runs do not
// mean thousands of threads. Runs on different stores never share a thread
// nor wait on each other. The thread lives as long as its store: it waits
// between runs rather than being started for each (see writer_for).
//
// The host hands it each state without its history and only the messages
// appended since the last save (the history is append-only after the run is
// claimed), so queuing a save costs the host the new messages, not the
// run's length. After a failed or lost save nothing more is written for
// that run: the store keeps the last checkpoint that succeeded, and
// failure() says why until the engine stops the run. Other runs on the
// store go on.
//
// One host thread drives a CheckpointWriter (the engine's); the queries
// (idle, behind, failure) take no lock unless a save failed.
class CheckpointWriter {
 public:
  struct Save {
    RunState state;               // history left empty
    std::size_t from = 0;         // the history's length before `appended`
    std::vector<Message> appended;
    std::vector<trace::Span> spans;  // ended since the last save; written first
  };

  // `store`: the store `checkpoint` writes to, which picks the thread (null:
  // a thread of this run's own).
  CheckpointWriter(std::shared_ptr<Checkpoint> checkpoint, std::vector<Message> history,
                   const std::shared_ptr<state::Store>& store);
  ~CheckpointWriter();  // waits until this run's queued saves are written
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  using After = std::function<void(const std::optional<std::string>& problem, const RunState& state)>;
  // Queues a save and returns its sequence number (1, 2, ...). The save is
  // handed over whole, by pointer: filled once where it stays, it is never
  // moved (a RunState is over a kilobyte). `after`
  // (optional) runs on the writer once the save is done, with why it failed
  // (nullopt: it was written). After a failure the rest is skipped.
  std::uint64_t save(std::unique_ptr<Save> save, After after = nullptr);
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

  struct Lane;  // one run's queue on its store's writer

 private:
  std::shared_ptr<StoreWriter> writer_;
  std::shared_ptr<Lane> lane_;
  std::uint64_t queued_ = 0;  // saves queued (the host's thread only)
};

}  // namespace agentkit::cognition
