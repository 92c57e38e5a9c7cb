// A Store where, once armed, another caller writes the document at a key
// ending in `key` just before this one's next compare-and-set of it (the
// document as it is, or a stand-in when there is none): a claim that loses
// the race, as a holder paused past its lease, a parent's earlier attempt
// still alive or a second recovery makes it lose. Everything else goes to
// `inner`.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include <agentkit/state/store.h>

namespace agentkit_test {

class ClaimedFirstStore final : public agentkit::state::Store {
 public:
  ClaimedFirstStore(std::shared_ptr<agentkit::state::Store> inner, std::string key)
      : inner_(std::move(inner)), key_(std::move(key)) {}
  std::optional<agentkit::state::Entry> get(std::string_view key) override { return inner_->get(key); }
  std::int64_t put(std::string_view key, std::string value, Ttl ttl) override {
    return inner_->put(key, std::move(value), ttl);
  }
  std::optional<std::int64_t> compare_and_set(std::string_view key, std::int64_t expected, std::string value,
                                              Ttl ttl) override {
    if (key.ends_with(key_) && armed.exchange(false)) {
      const auto current = inner_->get(key);
      inner_->put(key, current ? current->value : R"({"created":"elsewhere"})", Ttl{});  // the other caller's write
    }
    return inner_->compare_and_set(key, expected, std::move(value), ttl);
  }
  bool erase(std::string_view key) override { return inner_->erase(key); }
  std::vector<std::pair<std::string, agentkit::state::Entry>> list(std::string_view prefix) override {
    return inner_->list(prefix);
  }
  std::atomic<bool> armed{true};  // cleared by the one write it makes

 private:
  std::shared_ptr<agentkit::state::Store> inner_;
  std::string key_;
};

}  // namespace agentkit_test
