#include <agentkit/trace.h>

#include <pthread.h>

#include <atomic>
#include <random>

#include <agentkit/error.h>

#include "process_salt.h"

namespace agentkit {
namespace {

std::uint64_t random_bits() {
  std::random_device random;
  return (std::uint64_t{random()} << 32) ^ random();
}

std::atomic<std::uint64_t>& salt() {
  static std::atomic<std::uint64_t> value = [] {
    ::pthread_atfork(nullptr, nullptr, [] { salt().store(random_bits(), std::memory_order_relaxed); });
    return random_bits();
  }();
  return value;
}

}  // namespace

std::uint64_t detail::process_salt() noexcept { return salt().load(std::memory_order_relaxed); }

namespace trace {
namespace {

// splitmix64's finaliser: a bijection, so distinct inputs give distinct ids.
std::uint64_t mix(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t next_bits() noexcept {
  static std::atomic<std::uint64_t> counter{0};
  const std::uint64_t n = counter.fetch_add(1, std::memory_order_relaxed);
  return mix(detail::process_salt() + n * 0x9e3779b97f4a7c15ULL);
}

void write_hex(char* out, std::uint64_t v) noexcept {
  static constexpr char digits[] = "0123456789abcdef";
  for (int shift = 60; shift >= 0; shift -= 4) *out++ = digits[(v >> shift) & 0xf];
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

template <std::size_t N>
std::optional<HexId<N>> HexId<N>::parse(std::string_view digits) noexcept {
  if (!valid_id(digits, N)) return std::nullopt;
  HexId id;
  digits.copy(id.digits_, N);
  id.set_ = true;
  return id;
}

template <std::size_t N>
HexId<N>::HexId(std::string_view digits) {
  if (digits.empty()) return;
  auto id = parse(digits);
  if (!id) {
    throw Error(ErrorCode::invalid_argument, "'" + std::string(digits.substr(0, 64)) + "' is not a W3C " +
                                                 (N == 32 ? "trace" : "span") + " id (" + std::to_string(N) +
                                                 " lowercase hex digits, not all zeros)");
  }
  *this = *id;
}

template class HexId<32>;
template class HexId<16>;

TraceId new_trace_id() noexcept {
  TraceId id;
  std::uint64_t high = next_bits();
  const std::uint64_t low = mix(high ^ detail::process_salt());
  if (high == 0 && low == 0) high = 1;
  write_hex(id.digits_, high);
  write_hex(id.digits_ + 16, low);
  id.set_ = true;
  return id;
}

SpanId new_span_id() noexcept {
  SpanId id;
  const std::uint64_t bits = next_bits();
  write_hex(id.digits_, bits == 0 ? 1 : bits);
  id.set_ = true;
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
  auto trace = TraceId::parse(trace_id);
  auto span = SpanId::parse(span_id);
  if (!trace || !span || !is_lower_hex(flags)) return std::nullopt;
  const int low = flags[1] <= '9' ? flags[1] - '0' : flags[1] - 'a' + 10;
  return TraceParent{*trace, *span, (low & 1) != 0};
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

namespace {

constexpr std::string_view kKinds[] = {"internal", "client", "server"};
constexpr std::string_view kStatuses[] = {"unset", "ok", "error"};

std::int64_t micros(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}
std::chrono::system_clock::time_point from_micros(const Json& j, const char* key) {
  return std::chrono::system_clock::time_point(std::chrono::microseconds(j.at(key).get<std::int64_t>()));
}

Json attributes_json(const std::vector<Attribute>& attributes) {
  Json out = Json::object();
  for (const auto& a : attributes) {
    std::visit([&](const auto& v) { out[std::string(a.key.view())] = v; }, a.value);
  }
  return out;
}

std::vector<Attribute> attributes_from(const Json& j) {
  std::vector<Attribute> out;
  for (const auto& [key, v] : j.items()) {
    AttributeValue value;
    if (v.is_boolean()) {
      value = v.get<bool>();
    } else if (v.is_number_integer()) {
      value = v.get<std::int64_t>();
    } else if (v.is_number_float()) {
      value = v.get<double>();
    } else if (v.is_string()) {
      value = v.get<std::string>();
    } else if (v.is_array()) {
      value = v.get<std::vector<std::string>>();
    } else {
      throw Error(ErrorCode::invalid_argument, "span: attribute '" + key + "' is not a bool, number, string or string array");
    }
    out.push_back(Attribute{key, std::move(value)});
  }
  return out;
}

template <class E, std::size_t N>
E enum_from(const Json& j, const char* key, const std::string_view (&names)[N]) {
  const std::string name = j.at(key).get<std::string>();
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  throw Error(ErrorCode::invalid_argument, std::string("span: unknown ") + key + " '" + name + "'");
}

}  // namespace

Json to_json(const Span& span) {
  Json events = Json::array();
  for (const auto& e : span.events) {
    events.push_back({{"name", e.name}, {"time_us", micros(e.time)}, {"attributes", attributes_json(e.attributes)}});
  }
  Json j = {{"trace_id", span.trace_id.view()},
            {"span_id", span.span_id.view()},
            {"parent_span_id", span.parent_span_id.view()},
            {"name", span.name},
            {"kind", kKinds[static_cast<int>(span.kind)]},
            {"start_us", micros(span.start)},
            {"end_us", micros(span.end)},
            {"attributes", attributes_json(span.attributes)},
            {"events", std::move(events)},
            {"status", kStatuses[static_cast<int>(span.status)]}};
  if (!span.status_message.empty()) j["status_message"] = span.status_message;
  return j;
}

Span span_from_json(const Json& j) {
  try {
    Span span;
    const auto trace_id = TraceId::parse(j.at("trace_id").get<std::string>());
    const auto span_id = SpanId::parse(j.at("span_id").get<std::string>());
    const auto parent = j.at("parent_span_id").get<std::string>();
    const auto parent_id = SpanId::parse(parent);
    if (!trace_id || !span_id || (!parent.empty() && !parent_id)) {
      throw Error(ErrorCode::invalid_argument, "span: an id is not a W3C trace or span id");
    }
    span.trace_id = *trace_id;
    span.span_id = *span_id;
    if (parent_id) span.parent_span_id = *parent_id;
    span.name = j.at("name").get<std::string>();
    span.kind = enum_from<SpanKind>(j, "kind", kKinds);
    span.start = from_micros(j, "start_us");
    span.end = from_micros(j, "end_us");
    span.attributes = attributes_from(j.at("attributes"));
    for (const auto& e : j.at("events")) {
      span.events.push_back(SpanEvent{e.at("name").get<std::string>(), from_micros(e, "time_us"),
                                      attributes_from(e.at("attributes"))});
    }
    span.status = enum_from<SpanStatus>(j, "status", kStatuses);
    span.status_message = j.value("status_message", std::string());
    return span;
  } catch (const Json::exception& e) {
    throw Error(ErrorCode::invalid_argument, std::string("span: malformed: ") + e.what());
  }
}

}  // namespace trace
}  // namespace agentkit
