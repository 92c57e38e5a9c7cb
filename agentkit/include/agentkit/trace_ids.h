#pragma once
// W3C Trace Context ids (<agentkit/trace.h> has the spans they name). Light:
// RunContext and the events carry them.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace agentkit::trace {

// A W3C Trace Context id, held inline (copying one never allocates): N
// lowercase hex digits, never all zeros, or empty (no id). TraceId is a
// trace's (32 digits), SpanId a span's (16).
template <std::size_t N>
class HexId {
 public:
  HexId() noexcept = default;  // no id
  // `digits` as an id: N lowercase hex digits, not all zeros, or empty (no
  // id). Anything else throws agentkit::Error (invalid_argument).
  explicit HexId(std::string_view digits);
  // `digits` as an id, or nullopt when they are not one (empty included).
  static std::optional<HexId> parse(std::string_view digits) noexcept;

  bool empty() const noexcept { return !set_; }
  std::size_t size() const noexcept { return set_ ? N : 0; }
  std::string_view view() const noexcept { return {digits_, size()}; }
  operator std::string_view() const noexcept { return view(); }
  std::string str() const { return std::string(view()); }
  void clear() noexcept { *this = HexId(); }

  friend bool operator==(const HexId& a, const HexId& b) noexcept { return a.view() == b.view(); }
  friend bool operator==(const HexId& a, std::string_view b) noexcept { return a.view() == b; }
  template <class Stream>
  friend Stream& operator<<(Stream& out, const HexId& id) {
    return out << id.view();
  }

 private:
  friend HexId<32> new_trace_id() noexcept;
  friend HexId<16> new_span_id() noexcept;
  char digits_[N] = {};
  bool set_ = false;
};
using TraceId = HexId<32>;
using SpanId = HexId<16>;
extern template class HexId<32>;
extern template class HexId<16>;

// New random ids (64 random bits per process, drawn again in a forked
// child, mixed with a counter): unique without a lock.
TraceId new_trace_id() noexcept;
SpanId new_span_id() noexcept;
bool valid_trace_id(std::string_view id) noexcept;
bool valid_span_id(std::string_view id) noexcept;

}  // namespace agentkit::trace
