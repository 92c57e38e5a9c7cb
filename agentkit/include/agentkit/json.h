#pragma once
// JSON vocabulary shared by every agentkit component.
//
// `Json` (nlohmann::json, keys sorted) carries values: tool arguments, tool
// results, events. `Schema` (nlohmann::ordered_json) carries JSON Schemas and
// wire payloads whose key order must survive, so the advertised tool prefix is
// byte-for-byte stable across turns.
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include <agentkit/error.h>

namespace agentkit {

using Json = nlohmann::json;
using Schema = nlohmann::ordered_json;

// Limits applied when model-authored JSON is parsed or decoded: tool
// arguments, and provider replies (bodies and stream events). Anything past a
// limit is a typed error (ToolArgumentError from parse_arguments, JsonError
// from parse_json), never a crash or unbounded work.
struct JsonLimits {
  std::size_t max_depth = 64;               // nesting of arrays/objects
  std::size_t max_bytes = 4u << 20;         // raw argument text
  std::size_t max_string_bytes = 1u << 20;  // any single string value
};

// A short, single-line rendering of `value` for error messages: strings are
// quoted 'like this', invalid UTF-8 is replaced, nesting past a few levels and
// text past `max_chars` are elided. Never recurses deeper than a small bound,
// so it is safe on hostile values.
std::string preview(const Json& value, std::size_t max_chars = 80);

// The JSON type name of `value` as JSON Schema spells it ("string",
// "integer", "number", "boolean", "array", "object", "null").
std::string_view json_type_name(const Json& value) noexcept;

// True when `text` is well-formed UTF-8 (no overlongs, no surrogates).
bool is_valid_utf8(std::string_view text) noexcept;

// `text` as well-formed UTF-8: each ill-formed sequence (its maximal subpart,
// as canonical_dump replaces it) becomes U+FFFD; valid text comes back
// unchanged, without a copy. The Json overload does the same to every string
// and key in `value`. Text that enters a run from outside (a model's reply, a
// tool's result) passes through it once, so the model, events and every dump
// of the run's state see the same valid text.
//
// Example: sanitize_utf8("\x89PNG") == "\xEF\xBF\xBDPNG"
std::string sanitize_utf8(std::string text);
Json sanitize_utf8(Json value);
// A JSON value that is not what its reader needs: text past a JsonLimits
// limit or not JSON at all (parse_json), a number outside the integer type
// it is read into, or a value of another type (json_integer). The message
// names what was being read. A reader at a component boundary rethrows it as
// that component's typed error (providers::ProviderError, CheckpointError,
// the CLI's configuration error). Code invalid_argument.
class JsonError : public Error {
 public:
  explicit JsonError(const std::string& message) : Error(ErrorCode::invalid_argument, message) {}
};

// Parses `text` under `limits` (its size, nesting depth and string lengths).
// Throws JsonError, naming `what` ("OpenAI stream event"), for text past a
// limit or text that is not JSON. Never recurses without bound.
Json parse_json(std::string_view text, const JsonLimits& limits, std::string_view what);

// `value` as T when it is a whole number T can hold; nullopt for a
// fraction, NaN, an infinity or a number out of T's range. The one
// floating-point-to-integer conversion: a plain cast of such a value is
// undefined behaviour.
template <std::integral T>
std::optional<T> exact_integer(double value) noexcept {
  if (!std::isfinite(value) || std::trunc(value) != value) return std::nullopt;
  // 2^digits is exact as a double; T holds [-2^digits, 2^digits) (signed) or [0, 2^digits).
  const double limit = std::ldexp(1.0, std::numeric_limits<T>::digits);
  const double low = std::is_signed_v<T> ? -limit : 0.0;
  if (value < low || value >= limit) return std::nullopt;
  return static_cast<T>(value);
}

// The integer `value` holds, range-checked into T before it is converted:
// an integer, or a float that is a whole number in range (5.0). Throws
// JsonError naming `what` ("usage.prompt_tokens") for any other value
// (1e300, -1.5 where T is unsigned, "3", null). Use it for every JSON
// number read into an integer instead of `get<T>()` or `value(key, T{})`,
// which convert an out-of-range float anyway.
//
// Example:
//   usage.input_tokens = json_integer<std::int64_t>(u.at("prompt_tokens"), "usage.prompt_tokens");
template <std::integral T>
T json_integer(const Json& value, std::string_view what) {
  std::optional<T> out;
  if (value.is_number_unsigned()) {
    const auto v = value.get<std::uint64_t>();
    if (std::in_range<T>(v)) out = static_cast<T>(v);
  } else if (value.is_number_integer()) {
    const auto v = value.get<std::int64_t>();
    if (std::in_range<T>(v)) out = static_cast<T>(v);
  } else if (value.is_number_float()) {
    out = exact_integer<T>(value.get<double>());
  } else {
    throw JsonError(std::string(what) + " must be an integer, not " + std::string(json_type_name(value)));
  }
  if (!out) throw JsonError(std::string(what) + " is not an integer in range: " + preview(value));
  return *out;
}

// Standard base64 (RFC 4648, with '=' padding) of raw bytes: how binary
// content (an image's bytes) travels in JSON documents and wire bodies.
std::string base64_encode(std::string_view bytes);
// The bytes `text` encodes, or nullopt when it is not base64 (a character
// outside the alphabet, bad padding, a length that is not a multiple of four
// once ASCII white space is dropped). Never throws on hostile input.
std::optional<std::string> base64_decode(std::string_view text);

// Canonical text of a value: sorted keys, no whitespace, invalid UTF-8
// replaced. Equal values give equal text; used for cache and idempotency keys.
std::string canonical_dump(const Json& value);

}  // namespace agentkit
