#pragma once
// Errors reported inside a response body or a 200 stream (no HTTP status to
// go by): mapped from the provider's error type/code. Never retried: the
// response had already begun. Defined in provider_error.cpp beside the
// status-based mapping, sharing its body parsing.
#include <agentkit/json.h>
#include <agentkit/providers/transport.h>

namespace agentkit::providers::detail {

ProviderError stream_error(const Json& error);

}  // namespace agentkit::providers::detail
