#include <agentkit/providers/sse.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

namespace agentkit::providers {
namespace {

// memchr, but "not found" is `end`, so the two cached positions below compare
// with std::min without special cases.
const char* find_byte(const char* from, const char* end, char c) {
  const void* hit = std::memchr(from, c, static_cast<std::size_t>(end - from));
  return hit ? static_cast<const char*>(hit) : end;
}

[[noreturn]] void too_big(const char* what, std::size_t limit) {
  throw std::length_error(std::string(what) + " exceeds the limit of " + std::to_string(limit) + " bytes");
}

// Splits `bytes` on LF, CRLF and lone CR. A line wholly inside `bytes` goes to
// `on_line` as a view into `bytes` (no copy); only a line that straddles
// chunks passes through `partial`. A CR that ends a chunk sets `last_was_cr`
// so that an LF opening the next chunk is taken as the second half of CRLF.
//
// The next CR and the next LF are each found with memchr and remembered until
// the scan passes them: streams are usually LF-only, and rescanning for a CR
// that never comes after every line would make the loop quadratic.
template <class OnLine>
void split_lines(std::string_view bytes, std::string& partial, bool& last_was_cr, std::size_t limit,
                 const char* what, OnLine&& on_line) {
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  if (p == end) return;
  if (last_was_cr) {
    last_was_cr = false;
    if (*p == '\n') ++p;
  }
  const char* next_cr = find_byte(p, end, '\r');
  const char* next_lf = find_byte(p, end, '\n');
  while (p < end) {
    if (next_cr < p) next_cr = find_byte(p, end, '\r');
    if (next_lf < p) next_lf = find_byte(p, end, '\n');
    const char* const eol = std::min(next_cr, next_lf);
    const std::string_view text(p, static_cast<std::size_t>(eol - p));
    if (eol == end) {
      if (partial.size() + text.size() > limit) too_big(what, limit);
      partial.append(text);
      return;
    }
    if (partial.empty()) {
      if (text.size() > limit) too_big(what, limit);
      on_line(text);
    } else {
      if (partial.size() + text.size() > limit) too_big(what, limit);
      partial.append(text);
      on_line(std::string_view(partial));
      partial.clear();  // keeps its capacity for the next straddling line
    }
    p = eol + 1;
    if (*eol == '\r') {
      if (p == end) {
        last_was_cr = true;
      } else if (*p == '\n') {
        ++p;
      }
    }
  }
}

// `retry:` takes only ASCII digits; a value too large for a long is ignored
// like any other invalid one.
std::optional<long> parse_retry(std::string_view value) {
  if (value.empty()) return std::nullopt;
  long result = 0;
  constexpr long max = std::numeric_limits<long>::max();
  for (const char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    const int digit = c - '0';
    if (result > (max - digit) / 10) return std::nullopt;
    result = result * 10 + digit;
  }
  return result;
}

bool is_blank(std::string_view line) { return line.find_first_not_of(" \t\r\n") == std::string_view::npos; }

}  // namespace

void SseDecoder::feed(std::string_view bytes, const Sink& sink) {
  split_lines(bytes, partial_, last_was_cr_, max_event_bytes_, "SSE line",
              [&](std::string_view text) { line(text, sink); });
}

void SseDecoder::finish(const Sink& sink) {
  last_was_cr_ = false;
  if (!partial_.empty()) {
    // line() may dispatch, and the view must not dangle if it throws.
    const std::string last = std::move(partial_);
    partial_.clear();
    line(last, sink);
  }
  if (has_fields_) dispatch(sink);
}

// One line of the stream, without its terminator. Known fields count towards
// dispatch; an unknown field, an `id` holding NUL or a non-numeric `retry` is
// ignored as if the line were absent, so it alone does not produce an event.
void SseDecoder::line(std::string_view text, const Sink& sink) {
  if (text.empty()) {
    if (has_fields_) dispatch(sink);
    return;
  }
  if (text.front() == ':') return;  // comment / keep-alive
  std::string_view field = text;
  std::string_view value;
  if (const auto colon = text.find(':'); colon != std::string_view::npos) {
    field = text.substr(0, colon);
    value = text.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (current_.data.size() + value.size() + 1 > max_event_bytes_) too_big("SSE event data", max_event_bytes_);
    current_.data.append(value);
    current_.data.push_back('\n');
    has_data_ = true;
    has_fields_ = true;
  } else if (field == "event") {
    current_.event.assign(value);
    has_fields_ = true;
  } else if (field == "id") {
    if (value.find('\0') != std::string_view::npos) return;
    last_id_.assign(value);
    has_fields_ = true;
  } else if (field == "retry") {
    if (auto retry = parse_retry(value)) {
      current_.retry = retry;
      has_fields_ = true;
    }
  }
}

void SseDecoder::dispatch(const Sink& sink) {
  if (has_data_) current_.data.pop_back();  // the "\n" after the last data line
  current_.id.assign(last_id_);
  sink(current_);
  // clear() keeps capacity, so a steady stream stops allocating after a few events.
  current_.event.clear();
  current_.data.clear();
  current_.retry.reset();
  has_fields_ = false;
  has_data_ = false;
}

void NdjsonDecoder::feed(std::string_view bytes, const Sink& sink) {
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  while (p < end) {
    const char* const eol = find_byte(p, end, '\n');
    std::string_view text(p, static_cast<std::size_t>(eol - p));
    if (partial_.size() + text.size() > max_line_bytes_) too_big("NDJSON line", max_line_bytes_);
    if (eol == end) {
      partial_.append(text);
      return;
    }
    if (!partial_.empty()) {
      partial_.append(text);
      text = partial_;
    }
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (!is_blank(text)) sink(text);
    partial_.clear();
    p = eol + 1;
  }
}

void NdjsonDecoder::finish(const Sink& sink) {
  if (partial_.empty()) return;
  const std::string last = std::move(partial_);
  partial_.clear();
  std::string_view text = last;
  if (text.back() == '\r') text.remove_suffix(1);
  if (!is_blank(text)) sink(text);
}

namespace detail {

// Test hook: the line splitting SseDecoder uses, on its own, so the openai-node
// line decoder vectors can be checked line by line (blank lines included,
// which events cannot show). Not declared in a header on purpose.
std::vector<std::string> sse_lines_for_testing(const std::vector<std::string>& chunks, bool flush) {
  std::vector<std::string> lines;
  std::string partial;
  bool last_was_cr = false;
  for (const auto& chunk : chunks) {
    split_lines(chunk, partial, last_was_cr, std::string::npos, "line",
                [&](std::string_view text) { lines.emplace_back(text); });
  }
  if (flush && !partial.empty()) lines.push_back(partial);
  return lines;
}

}  // namespace detail
}  // namespace agentkit::providers
