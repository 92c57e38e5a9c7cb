// The OTLP exporter: options and the OTEL_* variables, and the batching
// export thread. Encoding is in otlp_encode.cpp.
#include <agentkit/providers/otlp.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include <agentkit/detail/logging.h>
#include <agentkit/json.h>
#include <agentkit/redact.h>
#include <agentkit/url.h>

namespace agentkit::providers {
namespace {

using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
           return std::tolower(x) == std::tolower(y);
         });
}

// An HTTP field name (RFC 9110 token) and a W3C baggage key are both tokens.
bool is_token(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

Error env_error(std::string_view variable, const std::string& problem) {
  return Error(ErrorCode::invalid_argument, std::string(variable) + ": " + problem);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A W3C-baggage-style list, "k=v,k2=v2" with percent-encoded values, as
// OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES spell it. Errors
// name the variable and the entry's position (and the key once it is known
// good), never a value: a header value may be a credential.
std::vector<std::pair<std::string, std::string>> parse_key_values(std::string_view variable, std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t position = 0;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view entry = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    ++position;
    if (entry.empty()) continue;  // "a=1,,b=2" and a trailing comma are tolerated
    const auto equals = entry.find('=');
    if (equals == std::string_view::npos) {
      throw env_error(variable, "entry " + std::to_string(position) + " is not key=value");
    }
    const std::string_view key = trim(entry.substr(0, equals));
    if (!is_token(key)) {
      throw env_error(variable, "entry " + std::to_string(position) + " has an empty or invalid key");
    }
    const std::string_view encoded = trim(entry.substr(equals + 1));
    std::string value;
    value.reserve(encoded.size());
    for (std::size_t i = 0; i < encoded.size(); ++i) {
      if (encoded[i] != '%') {
        value.push_back(encoded[i]);
        continue;
      }
      if (i + 2 >= encoded.size() || hex_value(encoded[i + 1]) < 0 || hex_value(encoded[i + 2]) < 0) {
        throw env_error(variable, "the value of '" + std::string(key) + "' has a malformed percent escape");
      }
      value.push_back(static_cast<char>(hex_value(encoded[i + 1]) * 16 + hex_value(encoded[i + 2])));
      i += 2;
    }
    out.emplace_back(std::string(key), std::move(value));
  }
  return out;
}

// A whole, positive number of milliseconds (or of items).
std::int64_t parse_positive(std::string_view variable, std::string_view text, std::string_view what) {
  text = trim(text);
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value <= 0) {
    throw env_error(variable, "must be a positive whole number of " + std::string(what));
  }
  return value;
}

// `url` when it is an absolute http(s) URL agentkit::parse_url accepts.
void check_url(std::string_view what, const std::string& url) {
  if (url.find("://") == std::string::npos) {
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + " is not usable: it must start with http:// or https://");
  }
  try {
    parse_url(url);
  } catch (const UrlError& e) {
    throw Error(ErrorCode::invalid_argument, std::string(what) + " is not usable: " + e.what());
  }
}

std::string join_path(std::string base, std::string_view path) {
  if (!base.empty() && base.back() == '/') base.pop_back();
  return base + std::string(path);
}

void set_attribute(std::vector<trace::Attribute>& attributes, trace::AttributeKey key, trace::AttributeValue value) {
  for (auto& a : attributes) {
    if (a.key == key.view()) {
      a.value = std::move(value);
      return;
    }
  }
  attributes.push_back({std::move(key), std::move(value)});
}


// ------------------------------------------------------- the queue's pages
//
// A queued span is kept as bytes in a page, not as a trace::Span: on_end()
// flattens the span into the page on the run's thread and the span's own
// memory is freed there, at once; the export thread reads the bytes back
// into spans of its own. A run's thread then touches no memory the export
// thread touched but the pages, and those are few (a batch of spans fills
// two or three) and reused last-returned first, so they stay in its cache.
// Queued as Span objects (their heap blocks read on the export thread's core,
// then freed or reused on the run's), each span cost the run's thread about
// 0.9 µs, mostly in cache misses, on a 2-vCPU VM where moving one cache line
// from one core to the other takes ~200 ns.
//
// A record, in the machine's byte order (it never leaves the process):
//   ids: u8 length + digits (trace, span, parent); name: string;
//   u8 kind; i64 start, end (system_clock ticks); attributes; u32 events,
//   each name, i64 time, attributes; u8 status; status_message.
//   string: u32 length + bytes; attributes: u32 count, each key (string),
//   u8 type (the variant's index), value (u8, i64, f64, string, or u32
//   count + strings).

constexpr std::size_t kPageBytes = 64 * 1024;
// Sealed pages that wake the export thread before a batch is queued (large
// spans: message content); otherwise waking it costs the producer a system
// call, more than the pages' bytes do.
constexpr std::size_t kWakePages = 4;
constexpr std::size_t kTooBig = static_cast<std::size_t>(-1);

struct Page {
  std::unique_ptr<char[]> bytes;
  std::size_t capacity = 0;
  std::size_t used = 0;
  std::size_t spans = 0;
};

std::size_t string_bytes(std::string_view s) {
  return s.size() > std::numeric_limits<std::uint32_t>::max() ? kTooBig : 4 + s.size();
}

// Adds sizes, saturating at kTooBig.
std::size_t plus(std::size_t a, std::size_t b) { return a == kTooBig || b == kTooBig ? kTooBig : a + b; }

std::size_t attributes_bytes(const std::vector<trace::Attribute>& attributes) {
  std::size_t n = 4;
  for (const auto& a : attributes) {
    n = plus(n, plus(string_bytes(a.key.view()), 1));
    n = plus(n, std::visit(
                    [](const auto& v) -> std::size_t {
                      using T = std::decay_t<decltype(v)>;
                      if constexpr (std::is_same_v<T, std::string>) {
                        return string_bytes(v);
                      } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
                        std::size_t m = v.size() > std::numeric_limits<std::uint32_t>::max() ? kTooBig : 4;
                        for (const auto& e : v) m = plus(m, string_bytes(e));
                        return m;
                      } else {
                        return sizeof(T) == 1 ? 1 : 8;
                      }
                    },
                    a.value));
  }
  return attributes.size() > std::numeric_limits<std::uint32_t>::max() ? kTooBig : n;
}

// The bytes `span` takes in a page, or kTooBig when a length does not fit.
std::size_t record_bytes(const trace::Span& span) {
  std::size_t n = 3 + span.trace_id.size() + span.span_id.size() + span.parent_span_id.size() + 1 + 16 + 4 + 1;
  n = plus(n, string_bytes(span.name));
  n = plus(n, attributes_bytes(span.attributes));
  if (span.events.size() > std::numeric_limits<std::uint32_t>::max()) return kTooBig;
  for (const auto& e : span.events) n = plus(n, plus(string_bytes(e.name), plus(8, attributes_bytes(e.attributes))));
  return plus(n, string_bytes(span.status_message));
}

class RecordWriter {
 public:
  explicit RecordWriter(char* out) : out_(out) {}

  // Writes `s`; returns the end of what it wrote.
  char* span(const trace::Span& s) {
    id(s.trace_id.view());
    id(s.span_id.view());
    id(s.parent_span_id.view());
    string(s.name);
    byte(static_cast<std::uint8_t>(s.kind));
    time(s.start);
    time(s.end);
    attributes(s.attributes);
    u32(s.events.size());
    for (const auto& e : s.events) {
      string(e.name);
      time(e.time);
      attributes(e.attributes);
    }
    byte(static_cast<std::uint8_t>(s.status));
    string(s.status_message);
    return out_;
  }

 private:
  void raw(const void* p, std::size_t n) {
    std::memcpy(out_, p, n);
    out_ += n;
  }
  void byte(std::uint8_t b) { *out_++ = static_cast<char>(b); }
  void u32(std::size_t n) {
    const auto v = static_cast<std::uint32_t>(n);
    raw(&v, 4);
  }
  void string(std::string_view s) {
    u32(s.size());
    raw(s.data(), s.size());
  }
  void id(std::string_view digits) {
    byte(static_cast<std::uint8_t>(digits.size()));
    raw(digits.data(), digits.size());
  }
  void time(std::chrono::system_clock::time_point t) {
    const std::int64_t ticks = t.time_since_epoch().count();
    raw(&ticks, 8);
  }
  void attributes(const std::vector<trace::Attribute>& list) {
    u32(list.size());
    for (const auto& a : list) {
      string(a.key.view());
      byte(static_cast<std::uint8_t>(a.value.index()));
      std::visit(
          [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::string>) {
              string(v);
            } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
              u32(v.size());
              for (const auto& e : v) string(e);
            } else if constexpr (std::is_same_v<T, bool>) {
              byte(v ? 1 : 0);
            } else {
              raw(&v, 8);
            }
          },
          a.value);
    }
  }

  char* out_;
};

// Reads back what RecordWriter wrote (in this process, from bytes it wrote).
class RecordReader {
 public:
  explicit RecordReader(const char* in) : in_(in) {}

  trace::Span span() {
    trace::Span s;
    if (auto d = id(); !d.empty()) s.trace_id = trace::TraceId(d);
    if (auto d = id(); !d.empty()) s.span_id = trace::SpanId(d);
    if (auto d = id(); !d.empty()) s.parent_span_id = trace::SpanId(d);
    s.name = string();
    s.kind = static_cast<trace::SpanKind>(byte());
    s.start = time();
    s.end = time();
    s.attributes = attributes();
    s.events.resize(u32());
    for (auto& e : s.events) {
      e.name = string();
      e.time = time();
      e.attributes = attributes();
    }
    s.status = static_cast<trace::SpanStatus>(byte());
    s.status_message = string();
    return s;
  }

 private:
  template <class T>
  T fixed() {
    T v;
    std::memcpy(&v, in_, sizeof v);
    in_ += sizeof v;
    return v;
  }
  std::uint8_t byte() { return static_cast<std::uint8_t>(*in_++); }
  std::uint32_t u32() { return fixed<std::uint32_t>(); }
  std::string_view view() {
    const std::uint32_t n = u32();
    const std::string_view v(in_, n);
    in_ += n;
    return v;
  }
  std::string string() { return std::string(view()); }
  std::string_view id() {
    const std::size_t n = byte();
    const std::string_view v(in_, n);
    in_ += n;
    return v;
  }
  std::chrono::system_clock::time_point time() {
    return std::chrono::system_clock::time_point(std::chrono::system_clock::duration(fixed<std::int64_t>()));
  }
  std::vector<trace::Attribute> attributes() {
    std::vector<trace::Attribute> list;
    const std::uint32_t n = u32();
    list.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      trace::AttributeKey key(string());
      switch (byte()) {
        case 0: list.push_back({std::move(key), byte() != 0}); break;
        case 1: list.push_back({std::move(key), fixed<std::int64_t>()}); break;
        case 2: list.push_back({std::move(key), fixed<double>()}); break;
        case 3: list.push_back({std::move(key), string()}); break;
        default: {
          std::vector<std::string> values(u32());
          for (auto& v : values) v = string();
          list.push_back({std::move(key), std::move(values)});
        }
      }
    }
    return list;
  }

  const char* in_;
};

// ------------------------------------------------------ the endpoint's answer

// What a 2xx answer's body says (OTLP/HTTP: an Export*ServiceResponse in the
// request's encoding, whose partial_success names what the endpoint
// rejected). Empty: the body is no OTLP response (an HTML page from a proxy,
// a web server on the wrong URL), so nothing can be taken as received.
struct Answer {
  std::uint64_t rejected = 0;  // items the endpoint did not take
  std::string message;         // its error_message (a warning when nothing was rejected)
  bool readable = true;        // false: the right content type, but a body that does not decode
};

bool read_varint(std::string_view& in, std::uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
    const auto byte = static_cast<std::uint8_t>(in.front());
    in.remove_prefix(1);
    value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

// Reads one field: its number, and its value (a varint, or the bytes of a
// length-delimited field); other wire types are skipped. False when malformed.
bool read_field(std::string_view& in, int& field, std::uint64_t& number, std::string_view& bytes) {
  std::uint64_t key = 0;
  if (!read_varint(in, key)) return false;
  field = static_cast<int>(key >> 3);
  switch (key & 7) {
    case 0: return read_varint(in, number);
    case 1:
    case 5: {
      const std::size_t n = (key & 7) == 1 ? 8 : 4;
      if (in.size() < n) return false;
      in.remove_prefix(n);
      return true;
    }
    case 2: {
      std::uint64_t n = 0;
      if (!read_varint(in, n) || n > in.size()) return false;
      bytes = in.substr(0, static_cast<std::size_t>(n));
      in.remove_prefix(static_cast<std::size_t>(n));
      return true;
    }
    default: return false;
  }
}

// ExportTraceServiceResponse / ExportMetricsServiceResponse: partial_success
// (1) = {rejected_spans or rejected_data_points (1, int64), error_message (2)}.
std::optional<Answer> read_protobuf_answer(std::string_view body) {
  Answer answer;
  while (!body.empty()) {
    int field = 0;
    std::uint64_t number = 0;
    std::string_view partial;
    if (!read_field(body, field, number, partial)) return std::nullopt;
    if (field != 1) continue;
    while (!partial.empty()) {
      std::string_view text;
      if (!read_field(partial, field, number, text)) return std::nullopt;
      if (field == 1) answer.rejected = static_cast<std::int64_t>(number) > 0 ? number : 0;
      if (field == 2) answer.message = std::string(text);
    }
  }
  return answer;
}

// The OTLP/JSON form: {"partialSuccess": {"rejectedSpans" (or
// "rejectedDataPoints"): "3" or 3, "errorMessage": "..."}}.
std::optional<Answer> read_json_answer(std::string_view body) {
  const Json reply = Json::parse(body, nullptr, false);
  if (reply.is_discarded() || !reply.is_object()) return std::nullopt;
  Answer answer;
  const auto partial = reply.find("partialSuccess");
  if (partial == reply.end() || partial->is_null()) return answer;
  if (!partial->is_object()) return std::nullopt;
  for (const char* key : {"rejectedSpans", "rejectedDataPoints"}) {
    const auto count = partial->find(key);
    if (count == partial->end()) continue;
    if (count->is_number_integer()) {
      answer.rejected = static_cast<std::uint64_t>(std::max<std::int64_t>(count->get<std::int64_t>(), 0));
    } else if (count->is_string()) {
      const auto& text = count->get_ref<const std::string&>();
      std::int64_t n = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
      if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
      answer.rejected = static_cast<std::uint64_t>(std::max<std::int64_t>(n, 0));
    } else {
      return std::nullopt;
    }
  }
  if (const auto message = partial->find("errorMessage"); message != partial->end() && message->is_string()) {
    answer.message = message->get<std::string>();
  }
  return answer;
}

// What a 2xx `response` says, or nullopt when it is no OTLP response.
std::optional<Answer> read_answer(const HttpResponse& response) {
  std::string type;
  if (auto header = response.header("content-type")) {
    type = std::string(trim(header->substr(0, header->find(';'))));
    std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
  }
  const bool protobuf = type == "application/x-protobuf" || type == "application/protobuf";
  const bool json = type == "application/json";
  if (response.body.empty() && (type.empty() || protobuf || json)) return Answer{};  // an empty message
  if (!protobuf && !json) return std::nullopt;
  auto answer = protobuf ? read_protobuf_answer(response.body) : read_json_answer(response.body);
  if (!answer) return Answer{.readable = false};
  return answer;
}
}  // namespace

std::string_view to_string(OtlpProtocol protocol) noexcept {
  return protocol == OtlpProtocol::http_json ? "http/json" : "http/protobuf";
}

EnvLookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (!value) return std::nullopt;
    return std::string(value);
  };
}

std::string OtlpOptions::traces_url() const {
  return traces_endpoint.empty() ? join_path(endpoint, "/v1/traces") : traces_endpoint;
}

std::string OtlpOptions::metrics_url() const {
  return metrics_endpoint.empty() ? join_path(endpoint, "/v1/metrics") : metrics_endpoint;
}

OtlpOptions OtlpOptions::from_env(const EnvLookup& env) { return from_env(env, OtlpOptions{}); }

OtlpOptions OtlpOptions::from_env(const EnvLookup& env, OtlpOptions base) {
  const EnvLookup lookup = env ? env : process_environment();
  // An empty value is unset, as the OpenTelemetry specification reads them.
  const auto get = [&](std::string_view name) -> std::optional<std::string> {
    auto value = lookup(name);
    if (!value || trim(*value).empty()) return std::nullopt;
    return value;
  };
  OtlpOptions o = std::move(base);

  if (auto v = get("OTEL_EXPORTER_OTLP_ENDPOINT")) {
    o.endpoint = std::string(trim(*v));
    check_url("OTEL_EXPORTER_OTLP_ENDPOINT", o.endpoint);
  }
  if (auto v = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) {
    o.traces_endpoint = std::string(trim(*v));
    check_url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", o.traces_endpoint);
  }
  if (auto v = get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")) {
    o.metrics_endpoint = std::string(trim(*v));
    check_url("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", o.metrics_endpoint);
  }
  if (auto v = get("OTEL_EXPORTER_OTLP_HEADERS")) {
    for (auto& [name, value] : parse_key_values("OTEL_EXPORTER_OTLP_HEADERS", *v)) {
      if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
        throw env_error("OTEL_EXPORTER_OTLP_HEADERS", "the value of '" + name + "' contains a control character");
      }
      const std::string& key = name;  // a structured binding: clang 14 cannot capture one
      const auto same = std::find_if(o.headers.begin(), o.headers.end(),
                                     [&](const auto& header) { return iequals(header.first, key); });
      if (same != o.headers.end()) {
        same->second = std::move(value);
      } else {
        o.headers.emplace_back(std::move(name), std::move(value));
      }
    }
  }
  if (auto v = get("OTEL_EXPORTER_OTLP_PROTOCOL")) {
    const std::string_view protocol = trim(*v);
    if (protocol == "http/protobuf") {
      o.protocol = OtlpProtocol::http_protobuf;
    } else if (protocol == "http/json") {
      o.protocol = OtlpProtocol::http_json;
    } else if (protocol == "grpc") {
      throw Error(ErrorCode::unimplemented,
                  "OTEL_EXPORTER_OTLP_PROTOCOL: grpc is not supported by agentkit's OTLP exporter; use http/protobuf "
                  "(port 4318) or http/json");
    } else {
      throw env_error("OTEL_EXPORTER_OTLP_PROTOCOL", "'" + std::string(protocol) +
                                                         "' is not one of http/protobuf, http/json");
    }
  }
  if (auto v = get("OTEL_BSP_EXPORT_TIMEOUT")) {
    o.export_timeout = milliseconds(parse_positive("OTEL_BSP_EXPORT_TIMEOUT", *v, "milliseconds"));
  }
  if (auto v = get("OTEL_EXPORTER_OTLP_TIMEOUT")) {
    o.export_timeout = milliseconds(parse_positive("OTEL_EXPORTER_OTLP_TIMEOUT", *v, "milliseconds"));
  }
  if (auto v = get("OTEL_BSP_SCHEDULE_DELAY")) {
    o.schedule_delay = milliseconds(parse_positive("OTEL_BSP_SCHEDULE_DELAY", *v, "milliseconds"));
  }
  if (auto v = get("OTEL_BSP_MAX_QUEUE_SIZE")) {
    o.max_queue_size = static_cast<std::size_t>(parse_positive("OTEL_BSP_MAX_QUEUE_SIZE", *v, "spans"));
  }
  if (auto v = get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")) {
    o.max_export_batch_size = static_cast<std::size_t>(parse_positive("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", *v, "spans"));
  }
  if (auto v = get("OTEL_RESOURCE_ATTRIBUTES")) {
    for (auto& [key, value] : parse_key_values("OTEL_RESOURCE_ATTRIBUTES", *v)) {
      if (key == "service.name") {
        if (!get("OTEL_SERVICE_NAME")) o.service_name = value;
        continue;
      }
      set_attribute(o.resource_attributes, std::move(key), std::move(value));
    }
  }
  if (auto v = get("OTEL_SERVICE_NAME")) o.service_name = std::string(trim(*v));
  if (auto v = get("OTEL_METRICS_EXPORTER")) {
    const std::string_view exporter = trim(*v);
    if (exporter == "none") {
      o.export_metrics = false;
    } else if (exporter == "otlp") {
      o.export_metrics = true;
    } else {
      throw Error(ErrorCode::unimplemented, "OTEL_METRICS_EXPORTER: only otlp and none are supported");
    }
  }
  return o;
}

std::vector<trace::Attribute> otlp_resource(const OtlpOptions& options) {
  std::string service = options.service_name;
  if (service.empty()) {
    for (const auto& a : options.resource_attributes) {
      if (const auto* name = std::get_if<std::string>(&a.value); a.key == "service.name" && name) service = *name;
    }
  }
  std::vector<trace::Attribute> out{
      {"service.name", service.empty() ? std::string("unknown_service") : service},
      {"telemetry.sdk.name", std::string("agentkit")},
      {"telemetry.sdk.language", std::string("cpp")},
      {"telemetry.sdk.version", std::string(kOtlpSdkVersion)},
  };
  for (const auto& a : options.resource_attributes) {
    if (a.key == "service.name" || a.key.starts_with("telemetry.sdk.")) continue;
    set_attribute(out, a.key, a.value);
  }
  return out;
}

// --------------------------------------------------------------- exporter

struct OtlpExporter::Impl {
  explicit Impl(OtlpOptions o)
      : options(std::move(o)),
        logger(detail::logger_or_null(options.logger)),
        traces_url(options.traces_url()),
        metrics_url(options.metrics_url()),
        resource(otlp_resource(options)),
        transport(TransportOptions{.connect_timeout = std::min(options.export_timeout, milliseconds(10'000)),
                                   .total_timeout = options.export_timeout,
                                   .idle_timeout = options.export_timeout,
                                   .max_retries = options.max_retries,
                                   .base_backoff = options.retry_backoff,
                                   .max_backoff = std::max(options.retry_backoff, options.export_timeout)}),
        capacity(options.max_queue_size),
        batch(std::min(options.max_export_batch_size, options.max_queue_size)) {
    outgoing.reserve(batch);
    for (int i = 0; i < 2; ++i) spare.push_back(new_page(kPageBytes));
    for (const auto& [name, value] : options.headers) secrets.add(value);
    request_headers = options.headers;
    request_headers.emplace_back("content-type", options.protocol == OtlpProtocol::http_json
                                                     ? "application/json"
                                                     : "application/x-protobuf");
  }

  void run();
  // Exports `spans` (recording their metrics first).
  void export_spans(std::span<const trace::Span> spans);
  static Page new_page(std::size_t capacity) { return Page{std::make_unique<char[]>(capacity), capacity}; }
  // A page with room for `bytes`: the spare page returned last, or a new one
  // (a record larger than a page gets a page of its own size).
  Page take_page(std::size_t bytes) {
    if (bytes > kPageBytes) return new_page(bytes);
    if (spare.empty()) return new_page(kPageBytes);
    Page page = std::move(spare.back());
    spare.pop_back();
    return page;
  }
  void export_metrics();
  // Posts one request: how many of its items the endpoint rejected (a
  // partial success, logged), or nullopt when it failed (logged, counted).
  // `what` names the payload ("3 spans"), `outcome` what a failure means for it.
  // `payload` is lent to the request and handed back, so its buffer is reused.
  std::optional<std::uint64_t> post(const std::string& url, std::string& payload, std::string_view what,
                                    std::string_view outcome);
  // `text` with no configured header value in it: redacted, or withheld
  // when a value too short for the redactor still shows.
  std::string scrub(std::string text) const;

  const OtlpOptions options;
  const std::shared_ptr<spdlog::logger> logger;
  const std::string traces_url;
  const std::string metrics_url;
  const std::vector<trace::Attribute> resource;
  Headers request_headers;
  Redactor secrets;
  Transport transport;
  CancellationToken cancel;  // cancelled when a shutdown deadline passes
  GenAiMetrics metrics;      // export thread only
  bool metrics_dirty = false;
  std::uint64_t dropped_reported = 0;
  // The export thread's spans read back from the pages, not yet exported,
  // the pages it is reading, and its request body: reused from one export to
  // the next (a 512-span body is ~150 KB, past malloc's mmap threshold):
  // allocated per batch, they had the thread give memory back (madvise)
  // and take it again at every export.
  std::vector<trace::Span> outgoing;
  std::vector<Page> reading;
  std::string body;

  std::mutex mutex;  // guards everything below but the counters
  std::condition_variable wake;      // the export thread waits on it
  std::condition_variable finished;  // flush() waits on it
  // The queue: spans as records in pages (see Page). on_end() appends to
  // `current`; a full page goes to `sealed`, for the export thread, which
  // reads it and returns it to `spare`.
  Page current;
  std::vector<Page> sealed;
  std::vector<Page> spare;
  const std::size_t capacity;
  const std::size_t batch;
  std::size_t size = 0;      // spans in `current` and `sealed`
  // Spans the thread has read back into `outgoing` and not yet exported, as
  // of its last time under the lock: with `size`, what counts towards a
  // batch (a batch may be partly read back before its last span is queued).
  std::size_t held = 0;
  std::uint64_t pushed = 0;  // spans ever queued
  std::uint64_t taken = 0;   // spans ever read back from the pages (into `outgoing`)
  // A drain exports every span queued when it began, then the metrics: on a
  // tick, a flush() and the shutdown.
  bool draining = false;
  std::uint64_t drain_target = 0;
  std::uint64_t flush_requested = 0;  // flush() calls so far
  std::uint64_t flush_started = 0;    // the requests the current (or last) drain serves
  std::uint64_t flush_done = 0;       // the requests served
  bool closed = false;    // on_end() drops
  bool stopping = false;  // the thread ends once the queue is empty
  bool abandon = false;   // the thread ends now, dropping what is queued
  bool exited = false;

  std::atomic<std::uint64_t> dropped{0};
  std::atomic<std::uint64_t> failed{0};
  std::atomic<std::uint64_t> exported{0};

  std::mutex shutdown_mutex;  // one shutdown at a time; later ones find it done
  bool shut_down = false;
  std::thread worker;
};

void OtlpExporter::Impl::run() {
  std::unique_lock lock(mutex);
  auto next_tick = Steady::now() + options.schedule_delay;
  for (;;) {
    wake.wait_until(lock, next_tick, [&] {
      return draining || stopping || !sealed.empty() || size + held >= batch || flush_requested != flush_started;
    });
    if (abandon ||
        (stopping && size == 0 && outgoing.empty() && !draining && flush_requested == flush_started)) {
      break;
    }
    const auto now = Steady::now();
    if (!draining && (flush_requested != flush_started || stopping || now >= next_tick)) {
      draining = true;
      drain_target = pushed;
      flush_started = flush_requested;
      if (now >= next_tick) {
        next_tick = now + options.schedule_delay;
        if (spare.size() > 4) spare.resize(4);  // an idle exporter keeps a few pages
      }
    }
    // Sealed pages are read whenever the thread is awake; the page being
    // filled too when a batch is queued or a drain needs its spans.
    if (current.spans > 0 && (size + held >= batch || (draining && taken < drain_target))) {
      sealed.push_back(std::move(current));
      current = Page{};
    }
    if (!sealed.empty()) {
      reading.swap(sealed);
      for (const Page& page : reading) {
        size -= page.spans;
        taken += page.spans;
      }
      lock.unlock();
      for (Page& page : reading) {
        RecordReader reader(page.bytes.get());
        for (std::size_t i = 0; i < page.spans; ++i) outgoing.push_back(reader.span());
        page.used = page.spans = 0;
      }
      lock.lock();
      held = outgoing.size();
      for (Page& page : reading) {
        if (page.capacity == kPageBytes) spare.push_back(std::move(page));
      }
      reading.clear();  // frees a page made for one large record
    }
    // A drain exports every span queued when it began: those read back and
    // not yet handed to an export.
    const bool drain_pending = draining && taken - outgoing.size() < drain_target;
    if (outgoing.size() >= batch || (drain_pending && !outgoing.empty())) {
      lock.unlock();
      std::size_t done = 0;
      for (; outgoing.size() - done >= batch; done += batch) export_spans({outgoing.data() + done, batch});
      if (drain_pending && done < outgoing.size()) {
        export_spans({outgoing.data() + done, outgoing.size() - done});
        done = outgoing.size();
      }
      outgoing.erase(outgoing.begin(), outgoing.begin() + static_cast<std::ptrdiff_t>(done));
      lock.lock();
      held = outgoing.size();
      continue;
    }
    if (draining && !drain_pending) {
      draining = false;
      const bool send_metrics = !abandon;  // a shutdown past its deadline sends nothing more
      lock.unlock();
      if (send_metrics) export_metrics();
      if (const auto d = dropped.load(std::memory_order_relaxed); d != dropped_reported) {
        logger->warn("OTLP exporter: {} spans dropped so far (the queue of {} was full, the exporter shut down, or "
                     "the endpoint rejected them)",
                     d, capacity);
        dropped_reported = d;
      }
      lock.lock();
      flush_done = flush_started;
      finished.notify_all();
    }
  }
  // Abandoned at a shutdown deadline: what is still queued is never sent
  // (after a clean stop nothing is).
  const std::size_t abandoned = size + outgoing.size();
  dropped.fetch_add(abandoned, std::memory_order_relaxed);
  size = 0;
  current = Page{};
  sealed.clear();
  outgoing.clear();
  exited = true;
  finished.notify_all();
  lock.unlock();
  if (abandoned > 0) logger->warn("OTLP exporter shut down at its deadline: {} queued spans dropped", abandoned);
}

void OtlpExporter::Impl::export_spans(std::span<const trace::Span> spans) {
  if (options.export_metrics) {
    for (const auto& span : spans) metrics_dirty |= metrics.record(span);
  }
  if (options.protocol == OtlpProtocol::http_json) {
    encode_traces_json(spans, resource, body);
  } else {
    encode_traces_protobuf(spans, resource, body);
  }
  const std::string what = spans.size() == 1 ? "1 span" : std::to_string(spans.size()) + " spans";
  if (const auto rejected = post(traces_url, body, what, "dropped")) {
    const std::uint64_t refused = std::min<std::uint64_t>(*rejected, spans.size());
    exported.fetch_add(spans.size() - refused, std::memory_order_relaxed);
    dropped.fetch_add(refused, std::memory_order_relaxed);
  }
}

void OtlpExporter::Impl::export_metrics() {
  if (!metrics_dirty) return;
  metrics_dirty = false;
  const auto histograms = metrics.collect(std::chrono::system_clock::now());
  std::string payload = options.protocol == OtlpProtocol::http_json ? encode_metrics_json(histograms, resource)
                                                                    : encode_metrics_protobuf(histograms, resource);
  // The values are cumulative: a failed export is made good by the next one.
  // Rejected data points are logged; sending them again would be rejected again.
  if (!post(metrics_url, payload, "metrics", "their values go with the next export")) metrics_dirty = true;
}

std::optional<std::uint64_t> OtlpExporter::Impl::post(const std::string& url, std::string& payload,
                                                      std::string_view what, std::string_view outcome) {
  HttpRequest request{.method = "POST", .url = url, .headers = request_headers, .body = std::move(payload)};
  // The buffer goes back to the caller, whatever the outcome, to be reused.
  struct GiveBack {
    std::string& to;
    std::string& from;
    ~GiveBack() { to = std::move(from); }
  } give_back{payload, request.body};
  // The deadline bounds the retries too; `cancel` ends it at a shutdown deadline.
  const CancellationToken deadline = cancel.child(Steady::now() + options.export_timeout);
  std::string reason;
  try {
    const HttpResponse response = transport.send(request, &deadline);
    if (auto answer = read_answer(response)) {
      if (!answer->readable) {
        logger->warn("OTLP export of {} to {}: the endpoint's answer (status {}) does not decode as an OTLP response; "
                     "taken as received",
                     what, url_for_messages(url), response.status);
      } else if (answer->rejected > 0) {
        logger->warn("OTLP export of {} to {}: the endpoint rejected {} of them: {}", what, url_for_messages(url),
                     answer->rejected, scrub(answer->message));
      } else if (!answer->message.empty()) {
        logger->warn("OTLP export of {} to {}: accepted with a warning: {}", what, url_for_messages(url),
                     scrub(answer->message));
      }
      return answer->rejected;
    }
    const auto type = response.header("content-type");
    reason = "the endpoint answered " + std::to_string(response.status) + " with " +
             (type ? "content type '" + scrub(std::string(type->substr(0, 100))) + "'" : std::string("no content type")) +
             ", not an OTLP response (a proxy, or a URL that is no OTLP/HTTP receiver?)";
  } catch (const std::exception& e) {
    if (cancel.stop_requested()) {
      reason = "cancelled by the exporter's shutdown";
    } else if (deadline.past_deadline()) {
      reason = "no answer within the export timeout of " + std::to_string(options.export_timeout.count()) + " ms";
    } else if (const auto* error = dynamic_cast<const agentkit::Error*>(&e)) {
      reason = std::string(to_string(error->code())) + ": " + scrub(error->what());
    } else {
      reason = scrub(e.what());
    }
  }
  failed.fetch_add(1, std::memory_order_relaxed);
  logger->warn("OTLP export of {} to {} failed ({}): {}", what, url_for_messages(url), outcome, reason);
  return std::nullopt;
}

std::string OtlpExporter::Impl::scrub(std::string text) const {
  secrets.redact_in_place(text);
  for (const auto& [name, value] : options.headers) {
    if (!value.empty() && text.find(value) != std::string::npos) {
      return "(details withheld: they contain a header value)";
    }
  }
  return text;
}

OtlpExporter::OtlpExporter(OtlpOptions options) {
  check_url("OTLP traces endpoint", options.traces_url());
  if (options.export_metrics) check_url("OTLP metrics endpoint", options.metrics_url());
  for (const auto& [name, value] : options.headers) {
    if (!is_token(name)) {
      throw Error(ErrorCode::invalid_argument, "OTLP header name '" + name + "' is not a valid name");
    }
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      throw Error(ErrorCode::invalid_argument, "OTLP header '" + name + "' has a control character in its value");
    }
  }
  if (options.max_queue_size == 0) throw Error(ErrorCode::invalid_argument, "OTLP max_queue_size must be at least 1");
  if (options.max_export_batch_size == 0) {
    throw Error(ErrorCode::invalid_argument, "OTLP max_export_batch_size must be at least 1");
  }
  if (options.schedule_delay.count() <= 0 || options.export_timeout.count() <= 0) {
    throw Error(ErrorCode::invalid_argument, "OTLP schedule_delay and export_timeout must be positive");
  }
  if (options.max_retries < 0 || options.retry_backoff.count() < 0) {
    throw Error(ErrorCode::invalid_argument, "OTLP max_retries and retry_backoff must not be negative");
  }
  impl_ = std::make_unique<Impl>(std::move(options));
  impl_->worker = std::thread([impl = impl_.get()] { impl->run(); });
}

OtlpExporter::~OtlpExporter() { shutdown(); }

void OtlpExporter::on_end(trace::Span span) {
  Impl& s = *impl_;
  const std::size_t bytes = record_bytes(span);
  std::unique_lock lock(s.mutex);
  if (s.closed || s.size == s.capacity || bytes == kTooBig) {
    s.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  bool sealed = false;
  if (s.current.capacity - s.current.used < bytes) {
    if (s.current.spans > 0) {
      s.sealed.push_back(std::move(s.current));
      sealed = true;
    } else if (s.current.capacity == kPageBytes) {
      s.spare.push_back(std::move(s.current));
    }
    s.current = s.take_page(bytes);
  }
  char* const start = s.current.bytes.get() + s.current.used;
  [[maybe_unused]] char* const end = RecordWriter(start).span(span);
  assert(end == start + bytes);  // record_bytes() and RecordWriter agree
  s.current.used += bytes;
  ++s.current.spans;
  ++s.size;
  ++s.pushed;
  // A full batch (counting the spans the thread holds read back), or
  // kWakePages of large spans, wakes the thread; otherwise its schedule does.
  const bool wake = s.size + s.held == s.batch || (sealed && s.sealed.size() == kWakePages);
  lock.unlock();
  if (wake) s.wake.notify_one();
}

bool OtlpExporter::capture_content() const noexcept { return impl_->options.capture_content; }

bool OtlpExporter::flush(std::chrono::milliseconds timeout) {
  Impl& s = *impl_;
  std::unique_lock lock(s.mutex);
  if (s.exited || s.stopping) return false;
  const std::uint64_t ticket = ++s.flush_requested;
  s.wake.notify_one();
  return s.finished.wait_for(lock, timeout, [&] { return s.flush_done >= ticket || s.exited; }) &&
         s.flush_done >= ticket;
}

void OtlpExporter::shutdown(std::optional<std::chrono::milliseconds> timeout) {
  Impl& s = *impl_;
  std::lock_guard once(s.shutdown_mutex);
  if (s.shut_down) return;
  s.shut_down = true;
  {
    std::lock_guard lock(s.mutex);
    s.closed = true;
  }
  const bool flushed = flush(timeout.value_or(s.options.export_timeout));
  {
    std::lock_guard lock(s.mutex);
    s.stopping = true;
    s.abandon = !flushed;
  }
  if (!flushed) s.cancel.cancel();
  s.wake.notify_all();
  s.worker.join();
}

std::uint64_t OtlpExporter::dropped_spans() const noexcept { return impl_->dropped.load(std::memory_order_relaxed); }
std::uint64_t OtlpExporter::failed_exports() const noexcept { return impl_->failed.load(std::memory_order_relaxed); }
std::uint64_t OtlpExporter::exported_spans() const noexcept { return impl_->exported.load(std::memory_order_relaxed); }
const OtlpOptions& OtlpExporter::options() const noexcept { return impl_->options; }

std::shared_ptr<OtlpExporter> make_otlp_exporter_from_env(OtlpOptions base, const EnvLookup& env) {
  const EnvLookup lookup = env ? env : process_environment();
  if (const auto disabled = lookup("OTEL_SDK_DISABLED"); disabled && iequals(trim(*disabled), "true")) return nullptr;
  return std::make_shared<OtlpExporter>(OtlpOptions::from_env(lookup, std::move(base)));
}

}  // namespace agentkit::providers
