// A Store whose `fail_at`th compare_and_set on a key holding `key_part`
// fails as a connection cut after the write was sent would leave it:
// StoreError outcome_unknown, nothing written. Everything else goes to
// `inner`.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include <agentkit/state/store.h>

namespace agentkit_test {

class CutStore final : public agentkit::state::Store {
 public:
  CutStore(std::shared_ptr<agentkit::state::Store> inner, std::string key_part, int fail_at)
      : inner_(std::move(inner)), key_part_(std::move(key_part)), fail_at_(fail_at) {}

  std::optional<agentkit::state::Entry> get(std::string_view key) override { return inner_->get(key); }
  std::int64_t put(std::string_view key, std::string value, Ttl ttl) override {
    return inner_->put(key, std::move(value), ttl);
  }
  std::optional<std::int64_t> compare_and_set(std::string_view key, std::int64_t expected, std::string value,
                                              Ttl ttl) override {
    if (key.find(key_part_) != std::string_view::npos && ++writes_ == fail_at_) {
      throw agentkit::state::StoreError("test: the connection broke after the write was sent",
                                        agentkit::ErrorCode::outcome_unknown);
    }
    return inner_->compare_and_set(key, expected, std::move(value), ttl);
  }
  bool erase(std::string_view key) override { return inner_->erase(key); }
  std::vector<std::pair<std::string, agentkit::state::Entry>> list(std::string_view prefix) override {
    return inner_->list(prefix);
  }

 private:
  std::shared_ptr<agentkit::state::Store> inner_;
  std::string key_part_;
  int fail_at_;
  std::atomic<int> writes_{0};
};

}  // namespace agentkit_test
