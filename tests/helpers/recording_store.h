// A store that keeps every checkpoint a run writes ("<scope>/runs/<id>"), so
// a test can read the phases a run went through or put an earlier
// checkpoint back as a crash would have left it.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <agentkit/json.h>
#include <agentkit/state/store.h>

namespace agentkit_test {

class RecordingStore final : public agentkit::state::Store {
 public:
  std::optional<agentkit::state::Entry> get(std::string_view key) override { return inner.get(key); }
  std::int64_t put(std::string_view key, std::string value, Ttl ttl) override {
    note(key, value);
    return inner.put(key, std::move(value), ttl);
  }
  std::optional<std::int64_t> compare_and_set(std::string_view key, std::int64_t expected, std::string value,
                                              Ttl ttl) override {
    note(key, value);
    return inner.compare_and_set(key, expected, std::move(value), ttl);
  }
  bool erase(std::string_view key) override { return inner.erase(key); }
  std::vector<std::pair<std::string, agentkit::state::Entry>> list(std::string_view prefix) override {
    return inner.list(prefix);
  }

  // Every checkpoint written, as (key, document), in order.
  std::vector<std::pair<std::string, std::string>> writes() {
    std::lock_guard lock(mutex_);
    return writes_;
  }
  // The phase of every checkpoint written, in order.
  std::vector<std::string> phases() {
    std::vector<std::string> out;
    for (const auto& [key, doc] : writes()) out.push_back(agentkit::Json::parse(doc).at("phase").get<std::string>());
    return out;
  }
  // Every checkpoint written for `key` at `phase`, in order.
  std::vector<std::string> checkpoints_at(const std::string& key, const std::string& phase) {
    std::vector<std::string> found;
    for (const auto& [k, doc] : writes()) {
      if (k == key && agentkit::Json::parse(doc).at("phase") == phase) found.push_back(doc);
    }
    return found;
  }

  agentkit::state::InMemoryStore inner;

 private:
  void note(std::string_view key, const std::string& value) {
    if (key.find("/runs/") == std::string_view::npos || key.find("/cli/runs/") != std::string_view::npos) return;
    std::lock_guard lock(mutex_);
    writes_.emplace_back(key, value);
  }
  std::mutex mutex_;
  std::vector<std::pair<std::string, std::string>> writes_;
};

}  // namespace agentkit_test
