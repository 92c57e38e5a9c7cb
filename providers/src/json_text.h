#pragma once
// A small JSON text writer for request bodies that are built on every model
// call: append-to-a-string, no tree. Its output is byte-identical to
// nlohmann's dump() (no indent, ensure_ascii off, the strict UTF-8 handler),
// so a body written here equals the dump of the tree it replaces; invalid
// UTF-8 throws the very json::type_error that dump() throws.
#include <array>
#include <charconv>
#include <cstring>
#include <cstdint>
#include <string>
#include <string_view>

#include <agentkit/json.h>

namespace agentkit::providers::detail {

// What a byte needs inside a JSON string: 0 copy as is, 1 escape (a control
// character, '"' or '\\'), 2 non-ASCII (copied, once the string is known to be UTF-8).
inline constexpr std::array<std::uint8_t, 256> kJsonByteClass = [] {
  std::array<std::uint8_t, 256> table{};
  for (int c = 0; c < 0x20; ++c) table[c] = 1;
  table['"'] = 1;
  table['\\'] = 1;
  for (int c = 0x80; c < 0x100; ++c) table[c] = 2;
  return table;
}();

// The first byte at or after `p` that is not printable ASCII (a control
// character, '"', '\\' or a byte >= 0x80), or `end`; eight bytes at a time.
inline const unsigned char* skip_plain(const unsigned char* p, const unsigned char* end) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ull;
  constexpr std::uint64_t kHigh = 0x8080808080808080ull;
  while (end - p >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    // The high bit of a byte is set in `special` when the byte is >= 0x80,
    // < 0x20, '"' or '\\' (a borrow can only add a byte next to one that is
    // special, never hide one): then the byte loop finds which.
    const std::uint64_t special =
        (w | (w - kOnes * 0x20) | ((w ^ (kOnes * '"')) - kOnes) | ((w ^ (kOnes * '\\')) - kOnes)) & kHigh;
    if (special) break;
    p += 8;
  }
  while (p < end && kJsonByteClass[*p] == 0) ++p;
  return p;
}

// Appends literal text (no strlen at run time).
template <std::size_t N>
void append_literal(std::string& out, const char (&text)[N]) {
  out.append(text, N - 1);
}

// Appends `s` as a JSON string literal; false (and `out` as it was) when `s`
// is not UTF-8. Runs of bytes that need nothing are copied in bulk; control
// characters are escaped as nlohmann escapes them (\b \t \n \f \r, else
// \u00xx in lowercase hex).
inline bool try_append_json_string(std::string& out, std::string_view s) {
  const std::size_t start = out.size();
  if (out.capacity() - start < s.size() + 2) out.reserve(start + s.size() + s.size() / 8 + 2);
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* const end = p + s.size();
  bool non_ascii = false;
  while (p < end) {
    const auto* run = p;
    for (;;) {
      p = skip_plain(p, end);
      if (p == end || kJsonByteClass[*p] == 1) break;
      non_ascii = true;  // a byte >= 0x80: copied, the string checked once at the end
      ++p;
    }
    if (p > run) out.append(reinterpret_cast<const char*>(run), static_cast<std::size_t>(p - run));
    if (p == end) break;
    const unsigned char c = *p++;
    char escaped[6] = {'\\', 0, '0', '0', 0, 0};
    switch (c) {
      case '"': escaped[1] = '"'; break;
      case '\\': escaped[1] = '\\'; break;
      case '\b': escaped[1] = 'b'; break;
      case '\t': escaped[1] = 't'; break;
      case '\n': escaped[1] = 'n'; break;
      case '\f': escaped[1] = 'f'; break;
      case '\r': escaped[1] = 'r'; break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        escaped[1] = 'u';
        escaped[4] = kHex[c >> 4];
        escaped[5] = kHex[c & 0xF];
        out.append(escaped, 6);
        continue;
      }
    }
    out.push_back('\\');
    out.push_back(escaped[1]);
  }
  out += '"';
  if (non_ascii && !is_valid_utf8(s)) {
    out.resize(start);
    return false;
  }
  return true;
}

// Appends `s` as a JSON string literal, as dump() writes it; invalid UTF-8
// throws dump()'s own type_error 316.
inline void append_json_string(std::string& out, std::string_view s) {
  if (!try_append_json_string(out, s)) out += Json(std::string(s)).dump();  // throws, with nlohmann's message
}

template <class Integer>
bool append_integer(std::string& out, Integer n) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
  out.append(digits, static_cast<std::size_t>(end - digits));
  return true;
}

// Appends canonical_dump(value) (sorted keys, no whitespace): the common
// values directly, false (and `out` as it was) for the ones this leaves to
// nlohmann (a float, binary, invalid UTF-8, nesting past a small bound).
inline bool try_append_canonical(std::string& out, const Json& value, int depth = 0) {
  const std::size_t start = out.size();
  const auto fail = [&] {
    out.resize(start);
    return false;
  };
  if (depth > 64) return fail();
  switch (value.type()) {
    case Json::value_t::null: append_literal(out, "null"); return true;
    case Json::value_t::boolean:
      if (value.get<bool>()) {
        append_literal(out, "true");
      } else {
        append_literal(out, "false");
      }
      return true;
    case Json::value_t::number_integer: return append_integer(out, value.get<std::int64_t>());
    case Json::value_t::number_unsigned: return append_integer(out, value.get<std::uint64_t>());
    case Json::value_t::string: return try_append_json_string(out, value.get_ref<const std::string&>()) || fail();
    case Json::value_t::array: {
      out += '[';
      bool first = true;
      for (const Json& element : value.get_ref<const Json::array_t&>()) {
        if (!first) out += ',';
        first = false;
        if (!try_append_canonical(out, element, depth + 1)) return fail();
      }
      out += ']';
      return true;
    }
    case Json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, element] : value.get_ref<const Json::object_t&>()) {  // std::map: sorted keys
        if (!first) out += ',';
        first = false;
        if (!try_append_json_string(out, key)) return fail();
        out += ':';
        if (!try_append_canonical(out, element, depth + 1)) return fail();
      }
      out += '}';
      return true;
    }
    default: return fail();  // floats (nlohmann's own formatting), binary, discarded
  }
}

// Appends canonical_dump(value) as a JSON string (how tool-call arguments travel).
inline void append_canonical_as_string(std::string& out, const Json& value) {
  thread_local std::string scratch;
  scratch.clear();
  if (!try_append_canonical(scratch, value)) scratch = canonical_dump(value);
  append_json_string(out, scratch);
}

// Appends `"key":`.
inline void append_json_key(std::string& out, std::string_view key) {
  append_json_string(out, key);
  out += ':';
}

// Appends a value through nlohmann's serializer (numbers, schemas, the rare field).
template <class BasicJson>
void append_json_value(std::string& out, const BasicJson& value) {
  out += value.dump();
}

}  // namespace agentkit::providers::detail
