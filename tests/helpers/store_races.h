// Racing writers on a Store, for the contract and the backends' own tests.
#pragma once

#include <barrier>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <agentkit/state/store.h>

namespace agentkit_test {

inline std::vector<std::string> keys_of(const std::vector<std::pair<std::string, agentkit::state::Entry>>& entries) {
  std::vector<std::string> keys;
  for (const auto& entry : entries) keys.push_back(entry.first);
  return keys;
}

// Adds one to the integer stored at `key`, retrying lost compare_and_set
// races. The yield between read and write lets racing writers interleave.
inline void increment(agentkit::state::Store& store, const std::string& key) {
  for (;;) {
    const auto entry = store.get(key);
    std::this_thread::yield();
    if (store.compare_and_set(key, entry->version, std::to_string(std::stoi(entry->value) + 1))) return;
  }
}

// Two threads each call attempt(thread, round) for every round, starting each
// round together, so every round is a real race.
template <typename Attempt>
void race_rounds(int rounds, Attempt attempt) {
  std::barrier start(2);
  auto worker = [&](int thread) {
    for (int round = 0; round < rounds; ++round) {
      start.arrive_and_wait();
      attempt(thread, round);
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
}

}  // namespace agentkit_test
