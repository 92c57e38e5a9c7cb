#pragma once
// The one enum <-> string mechanism. Every to_string / from_string of an
// agentkit enum (Role, StopReason, Phase, ToolResult::Status, ErrorCode,
// ...) and the schema Codec of a described enum look names up in a table of
// EnumValue<E> through these two functions, instead of each writing a
// switch. Internal: not API.
#include <iterator>
#include <optional>
#include <string_view>
#include <type_traits>

namespace agentkit {

// One enumerator and its name. Also the element of Describe<E>::values
// (see <agentkit/schema.h>).
template <class E>
struct EnumValue {
  E value;
  std::string_view text;
};

namespace detail {

// The name of `value` in `table`, or nullopt for an enumerator the table
// does not list.
template <class Table, class E>
constexpr std::optional<std::string_view> enum_name(const Table& table, E value) noexcept {
  for (const auto& entry : table) {
    if (entry.value == value) return entry.text;
  }
  return std::nullopt;
}

// The name of `value` in `table`, or `fallback`.
template <class Table, class E>
constexpr std::string_view enum_text(const Table& table, E value, std::string_view fallback = "unknown") noexcept {
  return enum_name(table, value).value_or(fallback);
}

// The enumerator named exactly `text` (case-sensitive), or nullopt.
template <class Table>
constexpr auto enum_parse(const Table& table, std::string_view text) noexcept
    -> std::optional<std::remove_cvref_t<decltype(std::begin(table)->value)>> {
  for (const auto& entry : table) {
    if (entry.text == text) return entry.value;
  }
  return std::nullopt;
}

}  // namespace detail
}  // namespace agentkit
