#pragma once
// The W3C `traceparent` header on an outgoing request (not installed): how
// every adapter, REST tool and MCP transport puts a run's trace on the wire.
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

#include <agentkit/providers/transport.h>
#include <agentkit/trace.h>

namespace agentkit::providers::detail {

// Sets `traceparent: <value>` on `headers`, in place of any the host
// configured (the run's span is the request's real parent). Nothing when
// `value` is empty or not a traceparent: only a parsed one is sent, in its
// version-00 form (what W3C asks of a forwarder), so no header can be
// smuggled through it.
inline void set_traceparent(Headers& headers, std::string_view value) {
  if (value.empty()) return;
  const auto parent = trace::parse_traceparent(value);
  if (!parent) return;
  constexpr std::string_view kName = "traceparent";
  std::erase_if(headers, [&](const auto& header) {
    return std::equal(header.first.begin(), header.first.end(), kName.begin(), kName.end(),
                      [](unsigned char a, unsigned char b) { return std::tolower(a) == b; });
  });
  headers.emplace_back(std::string(kName), trace::format_traceparent(parent->trace_id, parent->span_id, parent->sampled));
}

}  // namespace agentkit::providers::detail
