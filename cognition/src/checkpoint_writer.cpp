#include "checkpoint_writer.h"

#include <exception>

namespace agentkit::cognition {

CheckpointWriter::CheckpointWriter(std::shared_ptr<Checkpoint> checkpoint, std::vector<Message> history)
    : checkpoint_(std::move(checkpoint)), history_(std::move(history)), thread_([this] { loop(); }) {}

CheckpointWriter::~CheckpointWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();  // queued saves are written first
}

std::uint64_t CheckpointWriter::save(Save save, After after) {
  std::uint64_t seq = 0;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back({std::move(save), std::move(after)});
    seq = ++queued_;
  }
  cv_.notify_all();
  return seq;
}

void CheckpointWriter::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
}

bool CheckpointWriter::idle() const {
  std::lock_guard lock(mutex_);
  return written_ == queued_;
}

bool CheckpointWriter::behind(std::uint64_t seq) const {
  std::lock_guard lock(mutex_);
  return written_ + 1 < seq;
}

void CheckpointWriter::wait_idle(std::optional<std::chrono::milliseconds> max) const {
  std::unique_lock lock(mutex_);
  const auto idle = [&] { return written_ == queued_; };
  if (max) {
    done_cv_.wait_for(lock, *max, idle);
  } else {
    done_cv_.wait(lock, idle);
  }
}

std::optional<CheckpointWriter::Refusal> CheckpointWriter::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void CheckpointWriter::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything is written
    Job job = std::move(queue_.front());
    queue_.pop_front();
    const bool skip = failure_.has_value();
    lock.unlock();
    std::optional<std::string> problem;
    ErrorCode code = ErrorCode::internal;
    if (!skip) {
      RunState& state = job.save.state;
      if (job.save.from > history_.size()) job.save.from = history_.size();
      history_.resize(job.save.from);
      for (auto& m : job.save.appended) history_.push_back(std::move(m));
      state.history = std::move(history_);
      try {
        if (!checkpoint_->save(state)) {
          problem = "run '" + state.run_id + "' was taken over by another process; this one stopped advancing it";
          code = ErrorCode::aborted;
        }
      } catch (const std::exception& e) {
        problem = std::string("checkpoint failed: ") + e.what();
        code = failure_of(std::current_exception()).code;
      }
      if (job.after) job.after(problem, state);
      history_ = std::move(state.history);
    }
    lock.lock();
    ++written_;
    if (problem && !failure_) failure_ = Refusal{std::move(*problem), code, written_};
    done_cv_.notify_all();
  }
}

}  // namespace agentkit::cognition
