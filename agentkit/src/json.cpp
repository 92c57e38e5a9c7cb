#include <agentkit/json.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <agentkit/errors.h>
#include <agentkit/schema.h>

namespace agentkit {
namespace {

constexpr std::size_t kPreviewDepth = 3;

void append_preview(const Json& v, std::string& out, std::size_t depth, std::size_t max_chars) {
  if (out.size() > max_chars) return;
  switch (v.type()) {
    case Json::value_t::string: {
      std::string text = Json(v.get_ref<const std::string&>()).dump(-1, ' ', false, Json::error_handler_t::replace);
      out += '\'';
      out.append(text, 1, text.size() - 2);
      out += '\'';
      return;
    }
    case Json::value_t::array:
    case Json::value_t::object: {
      const bool is_object = v.is_object();
      out += is_object ? '{' : '[';
      if (depth >= kPreviewDepth) {
        if (!v.empty()) out += "...";
      } else {
        bool first = true;
        for (auto it = v.begin(); it != v.end(); ++it) {
          if (out.size() > max_chars) break;
          if (!first) out += ", ";
          first = false;
          if (is_object) {
            append_preview(Json(it.key()), out, depth + 1, max_chars);
            out += ": ";
          }
          append_preview(*it, out, depth + 1, max_chars);
        }
      }
      out += is_object ? '}' : ']';
      return;
    }
    case Json::value_t::number_float: {
      const double d = v.get<double>();
      if (!std::isfinite(d)) {
        out += std::isnan(d) ? "NaN" : (d > 0 ? "Infinity" : "-Infinity");
        return;
      }
      out += v.dump();
      return;
    }
    default:
      out += v.dump();
  }
}

}  // namespace

std::string preview(const Json& value, std::size_t max_chars) {
  std::string out;
  append_preview(value, out, 0, max_chars);
  if (out.size() > max_chars) {
    std::size_t end = max_chars;
    while (end > 0 && (static_cast<unsigned char>(out[end]) & 0xC0) == 0x80) --end;  // not inside a character
    out.resize(end);
    out += "...";
  }
  return out;
}

std::string_view json_type_name(const Json& value) noexcept {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::string:
      return "string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "integer";
    case Json::value_t::number_float:
      return "number";
    case Json::value_t::array:
      return "array";
    case Json::value_t::object:
      return "object";
    default:
      return "binary";
  }
}

namespace {

// The UTF-8 sequence starting at `p`: its length and whether it is well
// formed. An ill-formed one has the length of its maximal subpart (Unicode
// ch. 3, "U+FFFD substitution of maximal subparts"), at least one byte: what
// one U+FFFD replaces, as nlohmann's error_handler_t::replace does.
struct Utf8Sequence {
  std::size_t length;
  bool valid;
};

Utf8Sequence next_sequence(const unsigned char* p, const unsigned char* end) noexcept {
  const unsigned char c = *p;
  if (c < 0x80) return {1, true};
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no UTF-16 surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return {1, false};
  }
  const auto available = static_cast<std::size_t>(end - p);
  std::size_t i = 1;
  if (i < available && p[i] >= lo && p[i] <= hi) {
    for (++i; i < len && i < available && (p[i] & 0xC0) == 0x80; ++i) {
    }
  }
  return {i, i == len};
}

}  // namespace

bool is_valid_utf8(std::string_view s) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    // ASCII, the common case, eight bytes at a time.
    if (end - p >= 8) {
      std::uint64_t word;
      std::memcpy(&word, p, 8);
      if ((word & 0x8080808080808080ULL) == 0) {
        p += 8;
        continue;
      }
    }
    if (*p < 0x80) {
      ++p;
      continue;
    }
    const Utf8Sequence seq = next_sequence(p, end);
    if (!seq.valid) return false;
    p += seq.length;
  }
  return true;
}

std::string sanitize_utf8(std::string text) {
  if (is_valid_utf8(text)) return text;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  std::string out;
  out.reserve(text.size() + 8);
  while (p < end) {
    const Utf8Sequence seq = next_sequence(p, end);
    if (seq.valid) {
      out.append(reinterpret_cast<const char*>(p), seq.length);
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
    }
    p += seq.length;
  }
  return out;
}

namespace {

// sanitize_utf8(Json), in place: a value that is valid UTF-8 throughout (the
// common case) is only read.
void sanitize_in_place(Json& value) {
  switch (value.type()) {
    case Json::value_t::string: {
      auto& text = value.get_ref<std::string&>();
      if (!is_valid_utf8(text)) text = sanitize_utf8(std::move(text));
      break;
    }
    case Json::value_t::array:
      for (auto& element : value) sanitize_in_place(element);
      break;
    case Json::value_t::object: {
      bool keys_valid = true;
      for (auto it = value.begin(); it != value.end() && keys_valid; ++it) keys_valid = is_valid_utf8(it.key());
      if (keys_valid) {
        for (auto& element : value) sanitize_in_place(element);
        break;
      }
      Json clean = Json::object();
      for (auto it = value.begin(); it != value.end(); ++it) {
        Json element = std::move(*it);
        sanitize_in_place(element);
        clean[sanitize_utf8(it.key())] = std::move(element);
      }
      value = std::move(clean);
      break;
    }
    default:
      break;
  }
}

}  // namespace

Json sanitize_utf8(Json value) {
  sanitize_in_place(value);
  return value;
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const auto n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                   static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                   static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[n >> 18 & 63];
    out += kAlphabet[n >> 12 & 63];
    out += kAlphabet[n >> 6 & 63];
    out += kAlphabet[n & 63];
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    std::uint32_t n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (rest == 2) n |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    out += kAlphabet[n >> 18 & 63];
    out += kAlphabet[n >> 12 & 63];
    out += rest == 2 ? kAlphabet[n >> 6 & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  const auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  std::uint32_t group = 0;
  int chars = 0;    // in the current group of four
  int padding = 0;  // '=' seen; only at the very end
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      if (chars < 2 || ++padding > 2) return std::nullopt;
      group <<= 6;
      if (++chars == 4) {
        out += static_cast<char>(group >> 16 & 0xFF);
        if (padding == 1) out += static_cast<char>(group >> 8 & 0xFF);
        chars = 0;
      }
      continue;
    }
    const int v = value(c);
    if (v < 0 || padding > 0) return std::nullopt;
    group = group << 6 | static_cast<std::uint32_t>(v);
    if (++chars == 4) {
      out += static_cast<char>(group >> 16 & 0xFF);
      out += static_cast<char>(group >> 8 & 0xFF);
      out += static_cast<char>(group & 0xFF);
      group = 0;
      chars = 0;
    }
  }
  if (chars != 0) return std::nullopt;
  return out;
}

std::string canonical_dump(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace {

struct ParseLimitExceeded {
  std::string reason;
};

// Parses `text` under `limits`: nesting and string length are checked while
// parsing (a ParseLimitExceeded saying "<nested> nested deeper than ..." or
// "a string in <where> is ..."), not after. The size check and the messages
// for bad JSON are the callers'.
// True when `text` is certainly within `limits`' nesting and string bounds:
// fewer than max_depth brackets open at once and no string longer (escapes
// and all) than max_string_bytes. A string's text is never shorter than
// its value, and the parser sees the same brackets and quotes up to any
// error, so a text this passes cannot trip a limit: it is parsed without
// the per-value callback, which is most of a small reply's parse cost.
bool surely_within(std::string_view text, const JsonLimits& limits) noexcept {
  std::size_t depth = 0;
  const char* p = text.data();
  const char* const end = p + text.size();
  while (p < end) {
    const char c = *p++;
    if (c == '"') {
      const char* const start = p;
      while (p < end && *p != '"') p += *p == '\\' ? 2 : 1;
      if (p > end) p = end;
      if (static_cast<std::size_t>(p - start) > limits.max_string_bytes) return false;
      ++p;  // the closing quote
    } else if (c == '[' || c == '{') {
      if (++depth >= limits.max_depth) return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

Json parse_bounded(std::string_view text, const JsonLimits& limits, std::string_view nested, std::string_view where) {
  if (surely_within(text, limits)) return Json::parse(text.begin(), text.end());
  Json::parser_callback_t check = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        static_cast<std::size_t>(depth) >= limits.max_depth) {
      throw ParseLimitExceeded{std::string(nested) + " nested deeper than " + std::to_string(limits.max_depth) +
                               " levels"};
    }
    if (event == Json::parse_event_t::value && parsed.is_string() &&
        parsed.get_ref<const std::string&>().size() > limits.max_string_bytes) {
      throw ParseLimitExceeded{"a string in " + std::string(where) + " is " +
                               std::to_string(parsed.get_ref<const std::string&>().size()) +
                               " bytes; the limit is " + std::to_string(limits.max_string_bytes)};
    }
    return true;
  };
  return Json::parse(text.begin(), text.end(), check);
}

std::string short_what(const Json::exception& e) {
  std::string what = e.what();
  if (what.size() > 200) what = what.substr(0, 200) + "...";
  return what;
}

}  // namespace

Json parse_json(std::string_view text, const JsonLimits& limits, std::string_view what) {
  if (text.size() > limits.max_bytes) {
    throw JsonError(std::string(what) + " is " + std::to_string(text.size()) + " bytes; the limit is " +
                    std::to_string(limits.max_bytes));
  }
  try {
    return parse_bounded(text, limits, std::string(what) + " is", what);
  } catch (const ParseLimitExceeded& e) {
    throw JsonError(e.reason);
  } catch (const Json::exception& e) {
    throw JsonError(std::string(what) + " is not valid JSON: " + short_what(e));
  }
}

Json parse_arguments(std::string_view tool, std::string_view text, const JsonLimits& limits) {
  const auto reject = [&](std::string reason) -> Json {
    throw ToolArgumentError(std::string(tool), {}, {}, {{"(arguments)", std::move(reason)}}, {});
  };
  if (text.size() > limits.max_bytes) {
    return reject("arguments are " + std::to_string(text.size()) + " bytes; the limit is " +
                  std::to_string(limits.max_bytes));
  }
  // An empty argument string means "no arguments" (providers send "" for
  // no-argument tools).
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return Json::object();
  try {
    return parse_bounded(text, limits, "arguments are", "the arguments");
  } catch (const ParseLimitExceeded& e) {
    return reject(e.reason);
  } catch (const Json::exception& e) {
    return reject("arguments are not valid JSON: " + short_what(e));
  }
}

}  // namespace agentkit
