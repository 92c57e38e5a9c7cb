#pragma once
// JSON vocabulary shared by every agentkit component.
//
// `Json` (nlohmann::json, keys sorted) carries values: tool arguments, tool
// results, events. `Schema` (nlohmann::ordered_json) carries JSON Schemas and
// wire payloads whose key order must survive, so the advertised tool prefix is
// byte-for-byte stable across turns.
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace agentkit {

using Json = nlohmann::json;
using Schema = nlohmann::ordered_json;

// Limits applied when model-authored JSON is parsed or decoded. Anything past a
// limit is a ToolArgumentError, never a crash or unbounded work.
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

// Canonical text of a value: sorted keys, no whitespace, invalid UTF-8
// replaced. Equal values give equal text; used for cache and idempotency keys.
std::string canonical_dump(const Json& value);

}  // namespace agentkit
