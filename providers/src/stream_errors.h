#pragma once
// Errors reported inside a response body or a 200 stream (no HTTP status to
// go by): mapped from the provider's error type/code. Never retried: the
// response had already begun.
#include <agentkit/json.h>
#include <agentkit/providers/transport.h>

namespace agentkit::providers::detail {

inline ProviderError stream_error(const Json& error) {
  std::string type, code, message;
  if (error.is_object()) {
    if (auto t = error.find("type"); t != error.end() && t->is_string()) type = t->get<std::string>();
    if (auto c = error.find("code"); c != error.end() && c->is_string()) code = c->get<std::string>();
    if (auto m = error.find("message"); m != error.end() && m->is_string()) message = m->get<std::string>();
  } else if (error.is_string()) {
    message = error.get<std::string>();
  }
  if (message.size() > 300) message = message.substr(0, 300) + "...";
  ErrorCode mapped = ErrorCode::unavailable;
  if (type == "overloaded_error") {
    mapped = ErrorCode::overloaded;
  } else if (code == "insufficient_quota" || type == "insufficient_quota") {
    mapped = ErrorCode::quota_exceeded;
  } else if (type == "rate_limit_error" || code == "rate_limit_exceeded" || type == "requests" || type == "tokens") {
    mapped = ErrorCode::rate_limited;
  } else if (type == "invalid_request_error") {
    mapped = ErrorCode::invalid;
  } else if (type == "authentication_error") {
    mapped = ErrorCode::unauthenticated;
  } else if (type == "permission_error") {
    mapped = ErrorCode::permission;
  }
  return ProviderError(mapped, "provider error in response" + (type.empty() ? std::string() : " (" + type + ")") +
                                   ": " + (message.empty() ? std::string("no message") : message));
}

}  // namespace agentkit::providers::detail
