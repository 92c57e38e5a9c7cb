#include <agentkit/trace.h>

#include <pthread.h>

#include <atomic>
#include <random>

namespace agentkit::trace {
namespace {

std::uint64_t random_bits() {
  std::random_device random;
  return (std::uint64_t{random()} << 32) ^ random();
}

// 64 random bits per process, drawn again in a forked child, so two
// processes never hand out the same ids.
std::atomic<std::uint64_t>& salt() {
  static std::atomic<std::uint64_t> value = [] {
    ::pthread_atfork(nullptr, nullptr, [] { salt().store(random_bits(), std::memory_order_relaxed); });
    return random_bits();
  }();
  return value;
}

// splitmix64's finaliser: a bijection, so distinct inputs give distinct ids.
std::uint64_t mix(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t next_bits() noexcept {
  static std::atomic<std::uint64_t> counter{0};
  const std::uint64_t n = counter.fetch_add(1, std::memory_order_relaxed);
  return mix(salt().load(std::memory_order_relaxed) + n * 0x9e3779b97f4a7c15ULL);
}

void append_hex(std::string& out, std::uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  for (int shift = 60; shift >= 0; shift -= 4) out.push_back(digits[(v >> shift) & 0xf]);
}

bool is_lower_hex(std::string_view s) noexcept {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool all_zeros(std::string_view s) noexcept { return s.find_first_not_of('0') == std::string_view::npos; }

bool valid_id(std::string_view id, std::size_t digits) noexcept {
  return id.size() == digits && is_lower_hex(id) && !all_zeros(id);
}

}  // namespace

std::string new_trace_id() {
  std::string id;
  id.reserve(32);
  std::uint64_t high = next_bits();
  const std::uint64_t low = mix(high ^ salt().load(std::memory_order_relaxed));
  if (high == 0 && low == 0) high = 1;
  append_hex(id, high);
  append_hex(id, low);
  return id;
}

std::string new_span_id() {
  std::string id;
  id.reserve(16);
  std::uint64_t bits = next_bits();
  append_hex(id, bits == 0 ? 1 : bits);
  return id;
}

bool valid_trace_id(std::string_view id) noexcept { return valid_id(id, 32); }
bool valid_span_id(std::string_view id) noexcept { return valid_id(id, 16); }

std::optional<TraceParent> parse_traceparent(std::string_view value) noexcept {
  // version "-" trace-id "-" parent-id "-" flags: 2+1+32+1+16+1+2 = 55.
  if (value.size() < 55) return std::nullopt;
  const std::string_view version = value.substr(0, 2);
  if (!is_lower_hex(version) || version == "ff") return std::nullopt;
  if (value[2] != '-' || value[35] != '-' || value[52] != '-') return std::nullopt;
  // Version 00 is exactly 55 characters; a later version may append fields
  // after a '-'.
  if (value.size() > 55 && (version == "00" || value[55] != '-')) return std::nullopt;
  const std::string_view trace_id = value.substr(3, 32);
  const std::string_view span_id = value.substr(36, 16);
  const std::string_view flags = value.substr(53, 2);
  if (!valid_trace_id(trace_id) || !valid_span_id(span_id) || !is_lower_hex(flags)) return std::nullopt;
  const int low = flags[1] <= '9' ? flags[1] - '0' : flags[1] - 'a' + 10;
  try {
    return TraceParent{std::string(trace_id), std::string(span_id), (low & 1) != 0};
  } catch (...) {
    return std::nullopt;
  }
}

std::string format_traceparent(std::string_view trace_id, std::string_view span_id, bool sampled) {
  std::string out;
  out.reserve(55);
  out.append("00-").append(trace_id).append("-").append(span_id).append(sampled ? "-01" : "-00");
  return out;
}

const AttributeValue* Span::attribute(std::string_view key) const noexcept {
  for (const auto& a : attributes) {
    if (a.key == key) return &a.value;
  }
  return nullptr;
}

}  // namespace agentkit::trace
