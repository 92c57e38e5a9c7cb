#pragma once
// Traces of what a run did: the spans a run ends, in the OpenTelemetry GenAI
// semantic conventions (v1.41.0, `gen_ai_latest_experimental`), and the sink
// they go to. A run makes spans only when its context has a sink
// (RunContext::tracer); an OTLP exporter is one
// (<agentkit/providers/otlp.h>), testing::SpanRecorder another.
//
// A run's spans:
//   invoke_agent {agent}   the run (a resumed run: a new one in the same trace)
//     chat {model}         each model call (CLIENT)
//     execute_tool {tool}  each tool call; a sub-run started by the tool
//                          hangs under it
//
// Example:
//   auto recorder = std::make_shared<agentkit::testing::SpanRecorder>();
//   ctx.tracer = recorder;
//   ctx.continue_trace(request_headers["traceparent"]);  // optional
//   agent.run("...", ctx);
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <agentkit/json.h>
#include <agentkit/trace_ids.h>

namespace agentkit::trace {

// A `traceparent` header's fields.
struct TraceParent {
  TraceId trace_id;
  SpanId span_id;  // the caller's span: the parent of what comes next
  bool sampled = true;
};
// Parses a W3C `traceparent` value ("00-<trace id>-<span id>-<flags>"; a
// later version is read by those four fields, as the standard asks).
// nullopt when it is malformed, version ff, or an id is all zeros.
std::optional<TraceParent> parse_traceparent(std::string_view value) noexcept;
// "00-<trace id>-<span id>-01" (or -00 when not sampled).
std::string format_traceparent(std::string_view trace_id, std::string_view span_id, bool sampled = true);

// An attribute's name. A string literal (every semantic-conventions key a
// run writes) is held by reference and costs no allocation; any other
// string is held, shared by the key's copies. A key built from a character
// array that is not a constant (a buffer) does not compile: pass
// std::string(buffer).
class AttributeKey {
 public:
  template <std::size_t N>
  consteval AttributeKey(const char (&literal)[N]) noexcept : data_(literal), size_(N - 1) {}
  AttributeKey(std::string key)
      : owned_(std::make_shared<const std::string>(std::move(key))), data_(owned_->data()), size_(owned_->size()) {}

  std::string_view view() const noexcept { return {data_, size_}; }
  operator std::string_view() const noexcept { return view(); }
  bool starts_with(std::string_view prefix) const noexcept { return view().starts_with(prefix); }
  friend bool operator==(const AttributeKey& a, std::string_view b) noexcept { return a.view() == b; }

 private:
  std::shared_ptr<const std::string> owned_;  // null for a literal
  const char* data_;
  std::size_t size_;
};

using AttributeValue = std::variant<bool, std::int64_t, double, std::string, std::vector<std::string>>;
struct Attribute {
  // The value is made in its place in the attribute, so emplace_back builds
  // it where it stays (no variant moved or destroyed).
  template <class Value>
  Attribute(AttributeKey key, Value&& value) : key(std::move(key)), value(std::forward<Value>(value)) {}

  AttributeKey key;
  AttributeValue value;
};

enum class SpanKind { internal, client, server };
enum class SpanStatus { unset, ok, error };

// Something that happened at one instant within a span (an approval the
// call waits for, a decision applied).
struct SpanEvent {
  std::string name;
  std::chrono::system_clock::time_point time{};
  std::vector<Attribute> attributes;
};

// An ended span, as the sink receives it.
struct Span {
  TraceId trace_id;
  SpanId span_id;
  SpanId parent_span_id;  // empty for a root span
  std::string name;            // "chat gpt-4o", "execute_tool refund", ...
  SpanKind kind = SpanKind::internal;
  std::chrono::system_clock::time_point start{};
  std::chrono::system_clock::time_point end{};
  std::vector<Attribute> attributes;
  std::vector<SpanEvent> events;
  SpanStatus status = SpanStatus::unset;
  std::string status_message;  // set only with SpanStatus::error

  // The attribute named `key`, or null.
  const AttributeValue* attribute(std::string_view key) const noexcept;
};

// Where a run's ended spans go. on_end() is called on whichever thread ends
// the span (a host's poll(), a worker); it must not block: queue and return.
// Shared by every run of a context (and its sub-runs), so it must be
// thread-safe.
class SpanSink {
 public:
  virtual ~SpanSink() = default;
  virtual void on_end(Span span) = 0;
  // Whether spans carry message content (gen_ai.input.messages,
  // gen_ai.output.messages, gen_ai.system_instructions, tool arguments and
  // results). Off unless the host opts in: content may be personal data.
  virtual bool capture_content() const noexcept { return false; }
};

// A span as JSON, as durable runs store theirs (see
// state::keys::trace_spans) and `agentkit show` reads them:
//   {"trace_id", "span_id", "parent_span_id", "name",
//    "kind": "internal" | "client" | "server",
//    "start_us", "end_us" (microseconds since the Unix epoch),
//    "attributes": {key: value}, "events": [{"name", "time_us", "attributes"}],
//    "status": "unset" | "ok" | "error", "status_message"}
// An attribute keeps its type: a JSON integer is an int64, a float a double,
// an array a string array. span_from_json throws agentkit::Error
// (invalid_argument) naming what is malformed.
Json to_json(const Span& span);
Span span_from_json(const Json& j);

}  // namespace agentkit::trace
