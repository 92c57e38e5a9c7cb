#include "checkpoint_writer.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace agentkit::cognition {

struct CheckpointWriter::Lane {
  struct Job {
    std::unique_ptr<Save> save;
    After after;
  };

  explicit Lane(std::shared_ptr<Checkpoint> c, std::vector<Message> h)
      : checkpoint(std::move(c)), history(std::move(h)) {}

  std::shared_ptr<Checkpoint> checkpoint;
  std::vector<Message> history;  // the run's history as last saved (the writer thread only)
  // Under the store writer's mutex:
  std::deque<Job> queue;
  bool scheduled = false;  // in the writer's turn list, or being written
  int waiters = 0;         // hosts blocked in wait_idle or the destructor
  std::condition_variable done_cv;
  std::optional<Refusal> refusal;
  // Read by the host without the lock; stored (release) under it, after
  // what they publish.
  std::atomic<std::uint64_t> written{0};  // saves done (written or skipped)
  std::atomic<bool> failed{false};        // `refusal` is set
};

// The thread writing the checkpoints of every run on one store, one save
// per run with saves queued in turn (round robin), so each run's saves stay
// in order and no run waits for another's whole queue.
class StoreWriter {
 public:
  using Lane = CheckpointWriter::Lane;

  explicit StoreWriter(const std::shared_ptr<state::Store>& store)
      : store_(store), pid_(::getpid()), thread_([this] { loop(); }) {
#ifdef __linux__
    ::pthread_setname_np(thread_.native_handle(), "agentkit-ckpt");
#endif
  }

  ~StoreWriter() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_one();
    // Every lane is gone (each held this writer), so the queue is empty and
    // the thread ends at once. Never joined from itself: a job's captures
    // never own a run's writer, but if one did the thread just ends.
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();
    } else {
      thread_.join();
    }
  }

  void push(const std::shared_ptr<Lane>& lane, Lane::Job job) {
    bool wake = false;
    {
      std::lock_guard lock(mutex_);
      lane->queue.push_back(std::move(job));
      if (!lane->scheduled) {
        lane->scheduled = true;
        turns_.push_back(lane);
        wake = sleeping_;
      }
    }
    if (wake) cv_.notify_one();  // outside the lock: the writer does not wake into a held mutex
  }

  // Blocks until `lane` has written `seq` saves, or up to `max`.
  void wait(Lane& lane, std::uint64_t seq, std::optional<std::chrono::milliseconds> max) {
    std::unique_lock lock(mutex_);
    const auto done = [&] { return lane.written.load(std::memory_order_relaxed) >= seq; };
    // A polling writer would find the saves at its next check: this thread
    // is about to block anyway, so it pays for the wake.
    if (!done()) cv_.notify_one();
    ++lane.waiters;
    if (max) {
      lane.done_cv.wait_for(lock, *max, done);
    } else {
      lane.done_cv.wait(lock, done);
    }
    --lane.waiters;
  }

  bool orphaned() const { return store_.expired(); }
  // Made before this process was forked from its parent: its thread is not
  // in this process.
  bool foreign() const { return pid_ != ::getpid(); }

  std::optional<CheckpointWriter::Refusal> refusal(const Lane& lane) {
    std::lock_guard lock(mutex_);
    return lane.refusal;
  }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    auto worked = std::chrono::steady_clock::now();
    for (;;) {
      while (turns_.empty()) {
        if (stopping_) return;
        if (std::chrono::steady_clock::now() - worked < kLinger) {
          cv_.wait_for(lock, kPollEvery);  // push() wakes no one meanwhile
        } else {
          sleeping_ = true;
          cv_.wait(lock);
          sleeping_ = false;
        }
      }
      std::shared_ptr<Lane> lane = std::move(turns_.front());
      turns_.pop_front();
      Lane::Job job = std::move(lane->queue.front());
      lane->queue.pop_front();
      const bool skip = lane->refusal.has_value();
      lock.unlock();
      std::optional<std::string> problem;
      ErrorCode code = ErrorCode::internal;
      if (!skip) write(*lane, job, problem, code);
      job = {};  // freed before the lock is taken again
      lock.lock();
      const std::uint64_t written = lane->written.load(std::memory_order_relaxed) + 1;
      if (problem && !lane->refusal) {
        lane->refusal = CheckpointWriter::Refusal{std::move(*problem), code, written};
        lane->failed.store(true, std::memory_order_release);
      }
      lane->written.store(written, std::memory_order_release);
      if (lane->queue.empty()) {
        lane->scheduled = false;
      } else {
        turns_.push_back(lane);  // its next save waits for the other runs' turns
      }
      if (lane->waiters > 0) lane->done_cv.notify_all();
      worked = std::chrono::steady_clock::now();
    }
  }

  static void write(Lane& lane, Lane::Job& job, std::optional<std::string>& problem, ErrorCode& code) {
    CheckpointWriter::Save& save = *job.save;
    RunState& state = save.state;
    std::vector<Message>& history = lane.history;
    if (save.from > history.size()) save.from = history.size();
    history.resize(save.from);
    for (auto& m : save.appended) history.push_back(std::move(m));
    state.history = std::move(history);
    try {
      if (!lane.checkpoint->save(state, save.spans)) {
        problem = "run '" + state.run_id + "' was taken over by another process; this one stopped advancing it";
        code = ErrorCode::aborted;
      }
    } catch (const std::exception& e) {
      problem = std::string("checkpoint failed: ") + e.what();
      code = failure_of(std::current_exception()).code;
    }
    try {
      if (job.after) job.after(problem, state);
    } catch (...) {
      // `after` logs its own failures; nothing may end the writer thread.
    }
    history = std::move(state.history);
  }

  // A writer that wrote less than kLinger ago checks for saves every
  // kPollEvery rather than sleeping until push() wakes it: queuing a save
  // then costs the host no system call (on a virtual machine a wake's
  // inter-processor interrupt is tens of µs at the tail, which a host's 1 ms
  // tick feels), and a save waits at most kPollEvery to start. Idle longer,
  // it sleeps and the next push() wakes it; a host that blocks on a save
  // wakes it at once (wait()).
  static constexpr auto kPollEvery = std::chrono::microseconds(200);
  static constexpr auto kLinger = std::chrono::milliseconds(50);

  // The store this thread writes for: once it is gone, its address may name
  // another store, and this writer is dropped (see writer_for).
  std::weak_ptr<state::Store> store_;
  ::pid_t pid_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Lane>> turns_;  // lanes with saves queued, in turn
  bool sleeping_ = false;
  bool stopping_ = false;
  std::thread thread_;  // last: started once everything above exists
};

namespace {

// The writers of the stores in use, by store: a run shares the writer of its
// own Store object only, so two runtimes that share no store share nothing
// here. A writer lives as long as its store: its thread is started by the
// first durable run on the store and waits between runs, rather than being
// started and ended for every run (a thread's start and end make the next
// wakes of every thread costly for a while on a virtual machine: bench_poll
// measures it). The writer of a store that is gone is dropped, and its idle
// thread joined, at the next start of a durable run on any store.
struct Writers {
  std::mutex mutex;
  std::unordered_map<const state::Store*, std::shared_ptr<StoreWriter>> by_store;
};

Writers& writers() {
  static auto* w = new Writers;  // never destroyed: runs may end during static destruction
  return *w;
}

std::shared_ptr<StoreWriter> writer_for(const std::shared_ptr<state::Store>& store) {
  if (!store) return std::make_shared<StoreWriter>(nullptr);
  Writers& w = writers();
  std::vector<std::shared_ptr<StoreWriter>> orphans;  // joined once the registry is unlocked
  std::shared_ptr<StoreWriter> writer;
  {
    std::lock_guard lock(w.mutex);
    for (auto it = w.by_store.begin(); it != w.by_store.end();) {
      if (it->second->foreign()) {
        // A forked child's copy of its parent's writer: its thread does not
        // run here, so it is never used, nor destroyed (that would join it).
        new std::shared_ptr<StoreWriter>(std::move(it->second));  // NOLINT: deliberately leaked
        it = w.by_store.erase(it);
      } else if (it->second->orphaned()) {
        orphans.push_back(std::move(it->second));
        it = w.by_store.erase(it);
      } else {
        ++it;
      }
    }
    auto& slot = w.by_store[store.get()];
    if (!slot) slot = std::make_shared<StoreWriter>(store);
    writer = slot;
  }
  return writer;
}

}  // namespace

CheckpointWriter::CheckpointWriter(std::shared_ptr<Checkpoint> checkpoint, std::vector<Message> history,
                                   const std::shared_ptr<state::Store>& store)
    : writer_(writer_for(store)), lane_(std::make_shared<Lane>(std::move(checkpoint), std::move(history))) {}

CheckpointWriter::~CheckpointWriter() {
  if (!idle()) writer_->wait(*lane_, queued_, std::nullopt);
  // A lane the writer has finished with is in no turn list; the store's
  // writer thread waits for its next run.
}

std::uint64_t CheckpointWriter::save(std::unique_ptr<Save> save, After after) {
  writer_->push(lane_, Lane::Job{std::move(save), std::move(after)});
  return ++queued_;
}

bool CheckpointWriter::idle() const { return lane_->written.load(std::memory_order_acquire) == queued_; }

bool CheckpointWriter::behind(std::uint64_t seq) const {
  return lane_->written.load(std::memory_order_acquire) + 1 < seq;
}

void CheckpointWriter::wait_idle(std::optional<std::chrono::milliseconds> max) const {
  if (!idle()) writer_->wait(*lane_, queued_, max);
}

std::optional<CheckpointWriter::Refusal> CheckpointWriter::failure() const {
  if (!lane_->failed.load(std::memory_order_acquire)) return std::nullopt;
  return writer_->refusal(*lane_);
}

}  // namespace agentkit::cognition
