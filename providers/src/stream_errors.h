#pragma once
// Errors reported inside a response body or a 200 stream (no HTTP status to
// go by): mapped from the provider's error type/code. Never retried: the
// response had already begun. Defined in provider_error.cpp beside the
// status-based mapping, sharing its body parsing.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include <agentkit/json.h>
#include <agentkit/providers/reply.h>
#include <agentkit/providers/transport.h>

namespace agentkit::providers::detail {

ProviderError stream_error(const Json& error);

// The error a 2xx reply's body describes instead of an answer (`error` is its
// "error" value): the code from the error's type, retryable when the type
// (rate limit, overload) or x-should-retry says so, Retry-After honoured,
// and the message naming `url`. Nothing of such a reply reached the run.
ProviderError reply_error(const Json& error, const HttpResponse& head, std::string_view url);

// Runs `read` over provider JSON: a value of the wrong shape or range inside
// (an nlohmann type error, a JsonError from json_integer) becomes
// ProviderError(protocol) naming `what`, the documented error.
template <class Read>
decltype(auto) read_json(std::string_view what, Read&& read) {
  try {
    return std::forward<Read>(read)();
  } catch (const JsonError& e) {
    throw ProviderError(ErrorCode::protocol, std::string(what) + ": " + e.what());
  } catch (const Json::exception& e) {
    throw ProviderError(ErrorCode::protocol, std::string(what) + " has an unexpected shape: " + e.what());
  }
}

// The object at `key` of `parent`: absent or null is an empty object; any
// other type is a malformed reply (ProviderError(protocol) naming `what`.`key`).
inline Json object_at(const Json& parent, const char* key, std::string_view what) {
  const auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) return Json::object();
  if (!it->is_object()) {
    throw ProviderError(ErrorCode::protocol, std::string(what) + "." + key + " is " +
                                                 std::string(json_type_name(*it)) + ", not an object");
  }
  return *it;
}

// object_at without the copy: a reference to the object at `key` of
// `parent`, or to an empty object; the same errors.
inline const Json& object_ref(const Json& parent, const char* key, std::string_view what) {
  static const Json kEmpty = Json::object();
  const auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) return kEmpty;
  if (!it->is_object()) {
    throw ProviderError(ErrorCode::protocol, std::string(what) + "." + key + " is " +
                                                 std::string(json_type_name(*it)) + ", not an object");
  }
  return *it;
}

// Adds `bytes` to what a streamed reply has accumulated (`streamed`):
// past kMaxStreamedReplyBytes the reply is ProviderError(protocol), named
// by `what` ("OpenAI stream").
inline void count_streamed(std::size_t& streamed, std::size_t bytes, std::string_view what) {
  streamed += bytes;
  if (streamed > kMaxStreamedReplyBytes) {
    throw ProviderError(ErrorCode::protocol, std::string(what) + ": the reply's fragments are over " +
                                                 std::to_string(kMaxStreamedReplyBytes) + " bytes");
  }
}

// A token count: 0 when `key` is absent or null, else a non-negative integer
// (json_integer; anything else throws JsonError naming `what`.`key`).
inline std::int64_t token_count(const Json& object, std::string_view key, std::string_view what) {
  const auto it = object.find(std::string(key));
  if (it == object.end() || it->is_null()) return 0;
  const std::string name = std::string(what) + "." + std::string(key);
  const auto n = json_integer<std::int64_t>(*it, name);
  if (n < 0) throw JsonError(name + " is negative: " + std::to_string(n));
  return n;
}

}  // namespace agentkit::providers::detail
