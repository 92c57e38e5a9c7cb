// The span of a name among a run's spans (the last one when several share
// it), or null:
//   const auto spans = recorder->spans();
//   const agentkit::trace::Span* run = agentkit_test::span_named(spans, "invoke_agent triage");
#pragma once

#include <string_view>
#include <vector>

#include <agentkit/trace.h>

namespace agentkit_test {

inline const agentkit::trace::Span* span_named(const std::vector<agentkit::trace::Span>& spans,
                                               std::string_view name) {
  const agentkit::trace::Span* found = nullptr;
  for (const auto& span : spans) {
    if (span.name == name) found = &span;
  }
  return found;
}
// Not of a temporary: the span would dangle.
const agentkit::trace::Span* span_named(std::vector<agentkit::trace::Span>&& spans, std::string_view name) = delete;

}  // namespace agentkit_test
