// The events of one type among a run's events, in order:
//   auto compactions = agentkit_test::events_of<agentkit::ContextCompacted>(handle.drain_events());
#pragma once

#include <variant>
#include <vector>

#include <agentkit/events.h>

namespace agentkit_test {

template <class E>
std::vector<E> events_of(const std::vector<agentkit::Event>& events) {
  std::vector<E> out;
  for (const auto& e : events) {
    if (const auto* match = std::get_if<E>(&e)) out.push_back(*match);
  }
  return out;
}

}  // namespace agentkit_test
