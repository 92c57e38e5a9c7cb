// The OTLP encoders (protobuf wire format and OTLP/JSON) and the GenAI
// metrics aggregation. Field numbers are those of opentelemetry-proto's
// trace/v1, metrics/v1, common/v1 and resource/v1 messages; the tests decode
// the output with the OpenTelemetry project's generated definitions.
#include <agentkit/providers/otlp.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <type_traits>

#include <agentkit/json.h>

namespace agentkit::providers {
namespace {

using trace::Attribute;
using trace::AttributeValue;
using trace::Span;

std::uint64_t unix_nanos(std::chrono::system_clock::time_point t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  return ns < 0 ? 0 : static_cast<std::uint64_t>(ns);
}

// A digit of an id: a HexId holds only lowercase hex digits.
int hex_digit(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

// OTLP's enum values (opentelemetry-proto trace/v1 Span.SpanKind, Status.StatusCode).
int span_kind(trace::SpanKind kind) {
  switch (kind) {
    case trace::SpanKind::internal: return 1;
    case trace::SpanKind::server: return 2;
    case trace::SpanKind::client: return 3;
  }
  return 0;
}

int status_code(trace::SpanStatus status) {
  switch (status) {
    case trace::SpanStatus::unset: return 0;
    case trace::SpanStatus::ok: return 1;
    case trace::SpanStatus::error: return 2;
  }
  return 0;
}

constexpr int kCumulative = 2;  // AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE

// Strings on the wire must be UTF-8 (a Go collector refuses the whole request
// otherwise); valid text is used without a copy.
template <class F>
void with_utf8(std::string_view text, F&& use) {
  if (is_valid_utf8(text)) {
    use(text);
  } else {
    use(std::string_view(sanitize_utf8(std::string(text))));
  }
}

// ------------------------------------------------------------- protobuf

enum WireType { kVarint = 0, kFixed64 = 1, kLen = 2 };

class ProtoWriter {
 public:
  explicit ProtoWriter(std::string& out) : out_(out) {}

  void varint(std::uint64_t v) {
    if (v < 0x80) {
      out_.push_back(static_cast<char>(v));
      return;
    }
    char bytes[10];
    std::size_t n = 0;
    while (v >= 0x80) {
      bytes[n++] = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    bytes[n++] = static_cast<char>(v);
    out_.append(bytes, n);
  }
  void tag(int field, WireType type) { varint((static_cast<std::uint64_t>(field) << 3) | type); }
  void fixed64_raw(std::uint64_t v) {
    char bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    out_.append(bytes, 8);
  }

  // Singular proto3 fields at their default value are left out, as every
  // protobuf encoder does; oneof members are always written (their presence
  // is the value).
  void varint_field(int field, std::uint64_t v) {
    if (v == 0) return;
    tag(field, kVarint);
    varint(v);
  }
  void fixed64_field(int field, std::uint64_t v) {
    if (v == 0) return;
    tag(field, kFixed64);
    fixed64_raw(v);
  }
  void double_field(int field, double v) {  // for `optional double`: always written
    tag(field, kFixed64);
    fixed64_raw(std::bit_cast<std::uint64_t>(v));
  }
  void bytes_field(int field, std::string_view bytes, bool always = false) {
    if (bytes.empty() && !always) return;
    tag(field, kLen);
    varint(bytes.size());
    out_.append(bytes);
  }
  void string_field(int field, std::string_view text, bool always = false) {
    with_utf8(text, [&](std::string_view valid) { bytes_field(field, valid, always); });
  }
  void packed_fixed64(int field, const std::vector<std::uint64_t>& values) {
    if (values.empty()) return;
    tag(field, kLen);
    varint(values.size() * 8);
    for (auto v : values) fixed64_raw(v);
  }
  void packed_double(int field, const std::vector<double>& values) {
    if (values.empty()) return;
    tag(field, kLen);
    varint(values.size() * 8);
    for (auto v : values) fixed64_raw(std::bit_cast<std::uint64_t>(v));
  }

  // A length-delimited sub-message written in place: a one-byte length
  // placeholder, enough for most sub-messages (an attribute, a value), is
  // widened once the body is known to be 128 bytes or more (a span, the
  // envelope), which moves that body up once. Nothing is encoded twice and
  // every length is the shortest varint, as protobuf encoders write it.
  template <class Body>
  void message(int field, Body&& body) {
    tag(field, kLen);
    const std::size_t at = out_.size();
    out_.push_back('\0');
    body();
    std::uint64_t size = out_.size() - at - 1;
    if (size < 0x80) {
      out_[at] = static_cast<char>(size);
      return;
    }
    char length[10];
    std::size_t n = 0;
    while (size >= 0x80) {
      length[n++] = static_cast<char>((size & 0x7f) | 0x80);
      size >>= 7;
    }
    length[n++] = static_cast<char>(size);
    out_.replace(at, 1, length, n);
  }

 private:
  std::string& out_;
};

void write_any_value(ProtoWriter& w, const AttributeValue& value) {
  // AnyValue: string_value 1, bool_value 2, int_value 3, double_value 4, array_value 5.
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          w.tag(2, kVarint);
          w.varint(v ? 1 : 0);
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          w.tag(3, kVarint);
          w.varint(static_cast<std::uint64_t>(v));
        } else if constexpr (std::is_same_v<T, double>) {
          w.double_field(4, v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          w.string_field(1, v, true);
        } else {
          w.message(5, [&] {  // ArrayValue: values 1
            for (const auto& item : v) w.message(1, [&] { w.string_field(1, item, true); });
          });
        }
      },
      value);
}

void write_attributes(ProtoWriter& w, int field, std::span<const Attribute> attributes) {
  for (const auto& a : attributes) {
    w.message(field, [&] {  // KeyValue: key 1, value 2
      w.string_field(1, a.key);
      w.message(2, [&] { write_any_value(w, a.value); });
    });
  }
}

void write_resource(ProtoWriter& w, std::span<const Attribute> resource) {
  w.message(1, [&] { write_attributes(w, 1, resource); });  // Resource: attributes 1
}

// An id's bytes, written as a bytes field; nothing for no id (a root
// span's parent).
template <std::size_t N>
void id_field(ProtoWriter& w, int field, const trace::HexId<N>& id) {
  char bytes[N / 2];
  const std::string_view hex = id.view();
  for (std::size_t i = 0; i < hex.size() / 2; ++i) {
    bytes[i] = static_cast<char>(hex_digit(hex[2 * i]) * 16 + hex_digit(hex[2 * i + 1]));
  }
  w.bytes_field(field, std::string_view(bytes, hex.size() / 2));
}

void write_scope(ProtoWriter& w) {
  w.message(1, [&] {  // InstrumentationScope: name 1, version 2
    w.string_field(1, kOtlpScopeName);
    w.string_field(2, kOtlpSdkVersion);
  });
}

void write_span(ProtoWriter& w, const Span& span) {
  id_field(w, 1, span.trace_id);
  id_field(w, 2, span.span_id);
  id_field(w, 4, span.parent_span_id);
  w.string_field(5, span.name);
  w.varint_field(6, static_cast<std::uint64_t>(span_kind(span.kind)));
  w.fixed64_field(7, unix_nanos(span.start));
  w.fixed64_field(8, unix_nanos(span.end));
  write_attributes(w, 9, span.attributes);
  for (const auto& event : span.events) {
    w.message(11, [&] {  // Span.Event: time_unix_nano 1, name 2, attributes 3
      w.fixed64_field(1, unix_nanos(event.time));
      w.string_field(2, event.name);
      write_attributes(w, 3, event.attributes);
    });
  }
  if (span.status != trace::SpanStatus::unset) {
    w.message(15, [&] {  // Status: message 2, code 3
      if (span.status == trace::SpanStatus::error) w.string_field(2, span.status_message);
      w.varint_field(3, static_cast<std::uint64_t>(status_code(span.status)));
    });
  }
}

void write_histogram_point(ProtoWriter& w, const OtlpHistogram& h, const OtlpHistogramPoint& p) {
  // HistogramDataPoint: start_time_unix_nano 2, time_unix_nano 3, count 4,
  // sum 5, bucket_counts 6, explicit_bounds 7, attributes 9, min 11, max 12.
  w.fixed64_field(2, unix_nanos(h.start));
  w.fixed64_field(3, unix_nanos(h.time));
  w.fixed64_field(4, p.count);
  w.double_field(5, p.sum);
  w.packed_fixed64(6, p.bucket_counts);
  w.packed_double(7, h.bounds);
  write_attributes(w, 9, p.attributes);
  if (p.count > 0) {
    w.double_field(11, p.min);
    w.double_field(12, p.max);
  }
}

// ----------------------------------------------------------------- JSON

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  void raw(std::string_view text) { out_.append(text); }
  void string(std::string_view text) {
    with_utf8(text, [&](std::string_view valid) {
      out_.push_back('"');
      for (char c : valid) {
        switch (c) {
          case '"': out_.append("\\\""); break;
          case '\\': out_.append("\\\\"); break;
          case '\n': out_.append("\\n"); break;
          case '\r': out_.append("\\r"); break;
          case '\t': out_.append("\\t"); break;
          default:
            if (static_cast<unsigned char>(c) < 0x20) {
              static constexpr char digits[] = "0123456789abcdef";
              out_.append("\\u00");
              out_.push_back(digits[(c >> 4) & 0xf]);
              out_.push_back(digits[c & 0xf]);
            } else {
              out_.push_back(c);
            }
        }
      }
      out_.push_back('"');
    });
  }
  // A key and its colon, preceded by a comma unless it is the object's first.
  void key(std::string_view name, bool& first) {
    if (!first) out_.push_back(',');
    first = false;
    out_.push_back('"');
    out_.append(name);
    out_.append("\":");
  }
  void separator(bool& first) {
    if (!first) out_.push_back(',');
    first = false;
  }
  // 64-bit integers are strings in OTLP/JSON (as in protobuf's JSON mapping).
  void int64(std::int64_t v) {
    out_.push_back('"');
    out_.append(std::to_string(v));
    out_.push_back('"');
  }
  void uint64(std::uint64_t v) {
    out_.push_back('"');
    out_.append(std::to_string(v));
    out_.push_back('"');
  }
  void integer(int v) { out_.append(std::to_string(v)); }
  // The shortest text that reads back as the same double; non-finite values
  // as protobuf's JSON mapping spells them.
  void number(double v) {
    if (std::isnan(v)) return raw("\"NaN\"");
    if (std::isinf(v)) return raw(v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    char buffer[32];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, v);
    out_.append(buffer, result.ptr);
  }

 private:
  std::string& out_;
};

void json_any_value(JsonWriter& w, const AttributeValue& value) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          w.raw(v ? "{\"boolValue\":true}" : "{\"boolValue\":false}");
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          w.raw("{\"intValue\":");
          w.int64(v);
          w.raw("}");
        } else if constexpr (std::is_same_v<T, double>) {
          w.raw("{\"doubleValue\":");
          w.number(v);
          w.raw("}");
        } else if constexpr (std::is_same_v<T, std::string>) {
          w.raw("{\"stringValue\":");
          w.string(v);
          w.raw("}");
        } else {
          w.raw("{\"arrayValue\":{\"values\":[");
          bool first = true;
          for (const auto& item : v) {
            w.separator(first);
            w.raw("{\"stringValue\":");
            w.string(item);
            w.raw("}");
          }
          w.raw("]}}");
        }
      },
      value);
}

void json_attributes(JsonWriter& w, std::span<const Attribute> attributes, bool& first) {
  if (attributes.empty()) return;
  w.key("attributes", first);
  w.raw("[");
  bool first_item = true;
  for (const auto& a : attributes) {
    w.separator(first_item);
    w.raw("{\"key\":");
    w.string(a.key);
    w.raw(",\"value\":");
    json_any_value(w, a.value);
    w.raw("}");
  }
  w.raw("]");
}

void json_resource_and_scope_start(JsonWriter& w, std::span<const Attribute> resource, std::string_view scopes_key) {
  w.raw("{\"resource\":{");
  bool first = true;
  json_attributes(w, resource, first);
  w.raw("},\"");
  w.raw(scopes_key);
  w.raw("\":[{\"scope\":{\"name\":");
  w.string(kOtlpScopeName);
  w.raw(",\"version\":");
  w.string(kOtlpSdkVersion);
  w.raw("},\"schemaUrl\":");
  w.string(kOtlpSchemaUrl);
}

void json_span(JsonWriter& w, const Span& span) {
  bool first = true;
  w.raw("{");
  const auto id = [&](const char* key, std::string_view hex) {
    if (hex.empty()) return;
    w.key(key, first);
    w.string(hex);
  };
  id("traceId", span.trace_id);
  id("spanId", span.span_id);
  id("parentSpanId", span.parent_span_id);
  w.key("name", first);
  w.string(span.name);
  w.key("kind", first);
  w.integer(span_kind(span.kind));
  w.key("startTimeUnixNano", first);
  w.uint64(unix_nanos(span.start));
  w.key("endTimeUnixNano", first);
  w.uint64(unix_nanos(span.end));
  json_attributes(w, span.attributes, first);
  if (!span.events.empty()) {
    w.key("events", first);
    w.raw("[");
    bool first_event = true;
    for (const auto& event : span.events) {
      w.separator(first_event);
      bool first_field = true;
      w.raw("{");
      w.key("timeUnixNano", first_field);
      w.uint64(unix_nanos(event.time));
      w.key("name", first_field);
      w.string(event.name);
      json_attributes(w, event.attributes, first_field);
      w.raw("}");
    }
    w.raw("]");
  }
  if (span.status != trace::SpanStatus::unset) {
    w.key("status", first);
    bool first_field = true;
    w.raw("{");
    if (span.status == trace::SpanStatus::error && !span.status_message.empty()) {
      w.key("message", first_field);
      w.string(span.status_message);
    }
    w.key("code", first_field);
    w.integer(status_code(span.status));
    w.raw("}");
  }
  w.raw("}");
}

void json_histogram_point(JsonWriter& w, const OtlpHistogram& h, const OtlpHistogramPoint& p) {
  bool first = true;
  w.raw("{");
  json_attributes(w, p.attributes, first);
  w.key("startTimeUnixNano", first);
  w.uint64(unix_nanos(h.start));
  w.key("timeUnixNano", first);
  w.uint64(unix_nanos(h.time));
  w.key("count", first);
  w.uint64(p.count);
  w.key("sum", first);
  w.number(p.sum);
  w.key("bucketCounts", first);
  w.raw("[");
  bool first_item = true;
  for (auto c : p.bucket_counts) {
    w.separator(first_item);
    w.uint64(c);
  }
  w.raw("]");
  w.key("explicitBounds", first);
  w.raw("[");
  first_item = true;
  for (auto b : h.bounds) {
    w.separator(first_item);
    w.number(b);
  }
  w.raw("]");
  if (p.count > 0) {
    w.key("min", first);
    w.number(p.min);
    w.key("max", first);
    w.number(p.max);
  }
  w.raw("}");
}

// ---------------------------------------------------------------- metrics

bool is_model_call(std::string_view operation) {
  return operation == "chat" || operation == "generate_content" || operation == "text_completion";
}

const std::string* string_attribute(const Span& span, std::string_view key) {
  const AttributeValue* value = span.attribute(key);
  return value ? std::get_if<std::string>(value) : nullptr;
}

// A token count, whole and not negative, as the span carries it.
std::optional<double> count_attribute(const Span& span, std::string_view key) {
  const AttributeValue* value = span.attribute(key);
  if (!value) return std::nullopt;
  if (const auto* i = std::get_if<std::int64_t>(value); i && *i >= 0) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(value); d && std::isfinite(*d) && *d >= 0) return *d;
  return std::nullopt;
}

// A canonical, unambiguous rendering of an attribute set (keys are unique
// and in a fixed order by construction): the series key.
std::string series_key(const std::vector<Attribute>& attributes) {
  std::string key;
  for (const auto& a : attributes) {
    key.append(a.key).push_back('\0');
    if (const auto* s = std::get_if<std::string>(&a.value)) {
      key.append("s").append(*s);
    } else if (const auto* i = std::get_if<std::int64_t>(&a.value)) {
      key.append("i").append(std::to_string(*i));
    }
    key.push_back('\0');
  }
  return key;
}

template <class Body>
std::string encode_request(Body&& body) {
  std::string out;
  out.reserve(1024);
  body(out);
  return out;
}

}  // namespace

// ------------------------------------------------------------ public API

void encode_traces_protobuf(std::span<const Span> spans, std::span<const Attribute> resource, std::string& out) {
  out.clear();
  ProtoWriter w(out);
  w.message(1, [&] {  // ExportTraceServiceRequest.resource_spans 1
    write_resource(w, resource);  // ResourceSpans.resource 1
    w.message(2, [&] {            // ResourceSpans.scope_spans 2
      write_scope(w);             // ScopeSpans.scope 1
      for (const auto& span : spans) w.message(2, [&] { write_span(w, span); });  // ScopeSpans.spans 2
      w.string_field(3, kOtlpSchemaUrl);                                           // ScopeSpans.schema_url 3
    });
  });
}

void encode_traces_json(std::span<const Span> spans, std::span<const Attribute> resource, std::string& out) {
  out.clear();
  JsonWriter w(out);
  w.raw("{\"resourceSpans\":[");
  json_resource_and_scope_start(w, resource, "scopeSpans");
  w.raw(",\"spans\":[");
  bool first = true;
  for (const auto& span : spans) {
    w.separator(first);
    json_span(w, span);
  }
  w.raw("]}]}]}");
}

std::string encode_traces_protobuf(std::span<const Span> spans, std::span<const Attribute> resource) {
  std::string out;
  encode_traces_protobuf(spans, resource, out);
  return out;
}

std::string encode_traces_json(std::span<const Span> spans, std::span<const Attribute> resource) {
  std::string out;
  encode_traces_json(spans, resource, out);
  return out;
}

std::string encode_metrics_protobuf(std::span<const OtlpHistogram> histograms, std::span<const Attribute> resource) {
  return encode_request([&](std::string& out) {
    ProtoWriter w(out);
    w.message(1, [&] {  // ExportMetricsServiceRequest.resource_metrics 1
      write_resource(w, resource);  // ResourceMetrics.resource 1
      w.message(2, [&] {            // ResourceMetrics.scope_metrics 2
        write_scope(w);             // ScopeMetrics.scope 1
        for (const auto& h : histograms) {
          w.message(2, [&] {  // ScopeMetrics.metrics 2; Metric: name 1, description 2, unit 3, histogram 9
            w.string_field(1, h.name);
            w.string_field(2, h.description);
            w.string_field(3, h.unit);
            w.message(9, [&] {  // Histogram: data_points 1, aggregation_temporality 2
              for (const auto& p : h.points) w.message(1, [&] { write_histogram_point(w, h, p); });
              w.varint_field(2, kCumulative);
            });
          });
        }
        w.string_field(3, kOtlpSchemaUrl);  // ScopeMetrics.schema_url 3
      });
    });
  });
}

std::string encode_metrics_json(std::span<const OtlpHistogram> histograms, std::span<const Attribute> resource) {
  return encode_request([&](std::string& out) {
    JsonWriter w(out);
    w.raw("{\"resourceMetrics\":[");
    json_resource_and_scope_start(w, resource, "scopeMetrics");
    w.raw(",\"metrics\":[");
    bool first = true;
    for (const auto& h : histograms) {
      w.separator(first);
      bool first_field = true;
      w.raw("{");
      w.key("name", first_field);
      w.string(h.name);
      w.key("description", first_field);
      w.string(h.description);
      w.key("unit", first_field);
      w.string(h.unit);
      w.key("histogram", first_field);
      w.raw("{\"dataPoints\":[");
      bool first_point = true;
      for (const auto& p : h.points) {
        w.separator(first_point);
        json_histogram_point(w, h, p);
      }
      w.raw("],\"aggregationTemporality\":");
      w.integer(kCumulative);
      w.raw("}}");
    }
    w.raw("]}]}]}");
  });
}

const std::vector<double>& GenAiMetrics::duration_bounds() {
  static const std::vector<double> bounds{0.01, 0.02, 0.04, 0.08, 0.16,  0.32,  0.64,
                                          1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};
  return bounds;
}

const std::vector<double>& GenAiMetrics::token_usage_bounds() {
  static const std::vector<double> bounds{1,     4,      16,      64,      256,      1024,     4096,
                                          16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864};
  return bounds;
}

GenAiMetrics::GenAiMetrics(std::chrono::system_clock::time_point start) : start_(start) {}

void GenAiMetrics::add(SeriesMap& series, const std::vector<double>& bounds, std::vector<Attribute> attributes,
                       double value) {
  std::string key = series_key(attributes);
  auto it = series.find(key);
  if (it == series.end()) {
    OtlpHistogramPoint fresh{.attributes = std::move(attributes), .min = value, .max = value};
    fresh.bucket_counts.assign(bounds.size() + 1, 0);
    it = series.emplace(std::move(key), std::move(fresh)).first;
  }
  OtlpHistogramPoint& p = it->second;
  // Bucket i holds bounds[i-1] < v <= bounds[i]: the first bound not below v.
  const auto bucket = std::lower_bound(bounds.begin(), bounds.end(), value) - bounds.begin();
  ++p.bucket_counts[static_cast<std::size_t>(bucket)];
  ++p.count;
  p.sum += value;
  p.min = std::min(p.min, value);
  p.max = std::max(p.max, value);
}

bool GenAiMetrics::record(const Span& span) {
  const std::string* operation = string_attribute(span, "gen_ai.operation.name");
  if (!operation || !is_model_call(*operation)) return false;

  // The attributes both metrics share, in a fixed order (the series key relies on it).
  std::vector<Attribute> common;
  common.push_back({"gen_ai.operation.name", *operation});
  for (std::string_view key : {"gen_ai.provider.name", "gen_ai.request.model", "gen_ai.response.model",
                               "server.address"}) {
    if (const std::string* value = string_attribute(span, key)) common.push_back({std::string(key), *value});
  }
  if (const AttributeValue* port = span.attribute("server.port")) {
    if (const auto* number = std::get_if<std::int64_t>(port)) common.push_back({"server.port", *number});
  }

  std::vector<Attribute> duration_attributes = common;
  if (const std::string* error = string_attribute(span, "error.type")) {
    duration_attributes.push_back({"error.type", *error});
  } else if (span.status == trace::SpanStatus::error) {
    duration_attributes.push_back({"error.type", std::string("_OTHER")});
  }
  const auto elapsed = std::chrono::duration<double>(span.end - span.start).count();
  add(duration_, duration_bounds(), std::move(duration_attributes), std::max(0.0, elapsed));

  for (const auto& [usage_key, token_type] : {std::pair{"gen_ai.usage.input_tokens", "input"},
                                              std::pair{"gen_ai.usage.output_tokens", "output"}}) {
    if (const auto tokens = count_attribute(span, usage_key)) {
      std::vector<Attribute> attributes = common;
      attributes.push_back({"gen_ai.token.type", std::string(token_type)});
      add(tokens_, token_usage_bounds(), std::move(attributes), *tokens);
    }
  }
  return true;
}

std::vector<OtlpHistogram> GenAiMetrics::collect(std::chrono::system_clock::time_point now) const {
  std::vector<OtlpHistogram> out;
  const auto histogram = [&](const SeriesMap& series, std::string_view name, std::string_view description,
                             std::string_view unit, const std::vector<double>& bounds) {
    if (series.empty()) return;
    OtlpHistogram h{.name = std::string(name),
                    .description = std::string(description),
                    .unit = std::string(unit),
                    .bounds = bounds,
                    .start = start_,
                    .time = now};
    h.points.reserve(series.size());
    for (const auto& [key, point] : series) h.points.push_back(point);
    out.push_back(std::move(h));
  };
  histogram(duration_, kDurationName, "GenAI operation duration.", "s", duration_bounds());
  histogram(tokens_, kTokenUsageName, "Number of input and output tokens used.", "{token}", token_usage_bounds());
  return out;
}

}  // namespace agentkit::providers
