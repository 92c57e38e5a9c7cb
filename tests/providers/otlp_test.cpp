// The OTLP exporter: its encoders (checked byte for byte and by shape), the
// GenAI metrics it derives, the OTEL_* variables, and end to end against
// tests/otel/receiver.mjs, a loopback OTLP/HTTP receiver that decodes with
// the OpenTelemetry project's own generated OTLP definitions
// (@opentelemetry/otlp-transformer, installed by the otel.npm_ci fixture).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <agentkit/json.h>
#include <agentkit/providers/otlp.h>

#include "../helpers/files.h"
#include "../helpers/otlp_receiver.h"
#include "../helpers/timing.h"

using agentkit::ErrorCode;
using agentkit::Json;
using agentkit::providers::EnvLookup;
using agentkit::providers::GenAiMetrics;
using agentkit::providers::OtlpExporter;
using agentkit::providers::OtlpHistogram;
using agentkit::providers::OtlpOptions;
using agentkit::providers::OtlpProtocol;
using agentkit::trace::Attribute;
using agentkit::trace::Span;
using agentkit::trace::SpanId;
using agentkit::trace::TraceId;
using agentkit::trace::SpanEvent;
using agentkit::trace::SpanKind;
using agentkit::trace::SpanStatus;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using agentkit_test::attribute;
using agentkit_test::eventually;
using agentkit_test::find_by;
using agentkit_test::Receiver;

namespace {

std::chrono::system_clock::time_point at_ns(std::int64_t ns) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(ns)));
}

constexpr std::int64_t kT0 = 1'700'000'000'000'000'000;  // 2023-11-14, in ns
constexpr std::int64_t kMs = 1'000'000;
const TraceId kTraceId("4bf92f3577b34da6a3ce929d0e0e4736");
const SpanId kAgentId("00f067aa0ba902b7");
const SpanId kChatId("b7ad6b7169203331");
const SpanId kToolId("53995c3f42cd8ad8");

Span agent_span() {
  Span s;
  s.trace_id = kTraceId;
  s.span_id = kAgentId;
  s.name = "invoke_agent support";
  s.kind = SpanKind::internal;
  s.start = at_ns(kT0);
  s.end = at_ns(kT0 + 3000 * kMs);
  s.attributes = {{"gen_ai.operation.name", std::string("invoke_agent")},
                  {"gen_ai.agent.name", std::string("support")}};
  s.status = SpanStatus::ok;
  return s;
}

// A model call: 1.2 s, 120 tokens in, 30 out.
Span chat_span(SpanId span_id = kChatId, std::int64_t duration_ms = 1200, std::int64_t input = 120,
               std::int64_t output = 30) {
  Span s;
  s.trace_id = kTraceId;
  s.span_id = span_id;
  s.parent_span_id = kAgentId;
  s.name = "chat gpt-4o";
  s.kind = SpanKind::client;
  s.start = at_ns(kT0 + 100 * kMs);
  s.end = at_ns(kT0 + (100 + duration_ms) * kMs);
  s.attributes = {{"gen_ai.operation.name", std::string("chat")},
                  {"gen_ai.provider.name", std::string("openai")},
                  {"gen_ai.request.model", std::string("gpt-4o")},
                  {"gen_ai.response.model", std::string("gpt-4o-2024-08-06")},
                  {"gen_ai.usage.input_tokens", input},
                  {"gen_ai.usage.output_tokens", output},
                  {"gen_ai.request.temperature", 0.5},
                  {"gen_ai.request.stream", true},
                  {"gen_ai.response.finish_reasons", std::vector<std::string>{"stop", "length"}}};
  return s;
}

// A model call that failed: 50 ms, 10 tokens in, no reply.
Span failed_chat_span() {
  Span s;
  s.trace_id = kTraceId;
  s.span_id = SpanId("c0ffee00c0ffee01");
  s.parent_span_id = kAgentId;
  s.name = "chat gpt-4o";
  s.kind = SpanKind::client;
  s.start = at_ns(kT0 + 2000 * kMs);
  s.end = at_ns(kT0 + 2050 * kMs);
  s.attributes = {{"gen_ai.operation.name", std::string("chat")},
                  {"gen_ai.provider.name", std::string("openai")},
                  {"gen_ai.request.model", std::string("gpt-4o")},
                  {"gen_ai.usage.input_tokens", std::int64_t{10}},
                  {"error.type", std::string("timeout")}};
  s.status = SpanStatus::error;
  s.status_message = "request timed out";
  return s;
}

Span tool_span() {
  Span s;
  s.trace_id = kTraceId;
  s.span_id = kToolId;
  s.parent_span_id = kAgentId;
  s.name = "execute_tool refund";
  s.kind = SpanKind::internal;
  s.start = at_ns(kT0 + 1400 * kMs);
  s.end = at_ns(kT0 + 1900 * kMs);
  s.attributes = {{"gen_ai.operation.name", std::string("execute_tool")},
                  {"gen_ai.tool.name", std::string("refund")},
                  {"gen_ai.tool.call.id", std::string("call_1")},
                  {"error.type", std::string("unavailable")}};
  s.events = {SpanEvent{.name = "agentkit.approval.granted",
                        .time = at_ns(kT0 + 1500 * kMs),
                        .attributes = {{"agentkit.approval.decision", std::string("approve")}}}};
  s.status = SpanStatus::error;
  s.status_message = "refund service unavailable";
  return s;
}

// Spans that are not model calls, for tests that want no metrics request.
Span plain_span(int i) {
  Span s = agent_span();
  s.span_id = agentkit::trace::new_span_id();
  s.name = "invoke_agent span-" + std::to_string(i);
  return s;
}

EnvLookup env_of(std::map<std::string, std::string> values) {
  return [values = std::move(values)](std::string_view name) -> std::optional<std::string> {
    const auto it = values.find(std::string(name));
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

// A loopback port nothing listens on (bound, then released).
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  socklen_t length = sizeof address;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  ::close(fd);
  return ntohs(address.sin_port);
}

OtlpOptions options_for(const Receiver& receiver) {
  OtlpOptions o;
  o.endpoint = receiver.base();
  o.service_name = "otlp-test";
  o.export_timeout = 5s;
  o.retry_backoff = 10ms;
  return o;
}

// Log lines written through an ostream sink. Read text() only once the
// exporter is shut down: its thread writes here.
class LogCapture {
 public:
  LogCapture() {
    logger_ = std::make_shared<spdlog::logger>("otlp-test", std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_));
    logger_->set_level(spdlog::level::trace);
    logger_->set_pattern("%l %v");
  }
  std::shared_ptr<spdlog::logger> logger() const { return logger_; }
  std::string text() const { return stream_.str(); }

 private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::logger> logger_;
};

// A string-valued OTLP attribute list as a map (for comparing attribute sets).
std::map<std::string, std::string> string_attributes(const Json& attributes) {
  std::map<std::string, std::string> out;
  for (const auto& kv : attributes) {
    const auto& v = kv["value"];
    out[kv["key"].get<std::string>()] =
        v.contains("stringValue") ? v["stringValue"].get<std::string>() : v.begin()->dump();
  }
  return out;
}

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

}  // namespace

// ------------------------------------------------------------------ encoders

TEST_CASE("otlp protobuf: the envelope of an empty request is exactly the hand-computed bytes", "[otlp]") {
  const std::string scope = bytes({0x0a, 0x08}) + "agentkit" + bytes({0x12, 0x05}) + "0.1.0";
  const std::string schema = "https://opentelemetry.io/schemas/1.41.0";
  REQUIRE(schema.size() == 0x27);
  const std::string scope_spans = bytes({0x0a, 0x11}) + scope + bytes({0x1a, 0x27}) + schema;  // 60 bytes
  const std::string resource_spans = bytes({0x0a, 0x00, 0x12, 0x3c}) + scope_spans;             // 64 bytes
  const std::string expected = bytes({0x0a, 0x40}) + resource_spans;
  CHECK(agentkit::providers::encode_traces_protobuf({}, {}) == expected);
}

TEST_CASE("otlp protobuf: a tiny span's fields are the hand-computed bytes", "[otlp]") {
  Span s;
  s.trace_id = TraceId("0102030405060708090a0b0c0d0e0f10");
  s.span_id = SpanId("1112131415161718");
  s.name = "s";
  s.kind = SpanKind::client;
  s.start = at_ns(1000);
  s.end = at_ns(2000);
  s.attributes = {{"n", std::int64_t{5}}};
  s.status = SpanStatus::error;
  s.status_message = "bad";
  const std::string span =
      bytes({0x0a, 0x10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}) +  // trace_id (1, bytes)
      bytes({0x12, 0x08, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18}) +        // span_id (2, bytes)
      bytes({0x2a, 0x01}) + "s" +                                                  // name (5)
      bytes({0x30, 0x03}) +                                                        // kind (6) = CLIENT
      bytes({0x39, 0xe8, 0x03, 0, 0, 0, 0, 0, 0}) +                                // start (7, fixed64) = 1000
      bytes({0x41, 0xd0, 0x07, 0, 0, 0, 0, 0, 0}) +                                // end (8, fixed64) = 2000
      bytes({0x4a, 0x07, 0x0a, 0x01}) + "n" + bytes({0x12, 0x02, 0x18, 0x05}) +    // attributes (9): n = int 5
      bytes({0x7a, 0x07, 0x12, 0x03}) + "bad" + bytes({0x18, 0x02});               // status (15): "bad", ERROR
  REQUIRE(span.size() == 0x45);
  // ScopeSpans.spans (2) holding exactly those bytes: a root span has no
  // parent_span_id (4).
  CHECK(agentkit::providers::encode_traces_protobuf(std::span(&s, 1), {}).find(bytes({0x12, 0x45}) + span) !=
        std::string::npos);
  // Into a buffer: what was in it goes first.
  std::string buffer = "left over from the last export";
  agentkit::providers::encode_traces_protobuf(std::span(&s, 1), {}, buffer);
  CHECK(buffer == agentkit::providers::encode_traces_protobuf(std::span(&s, 1), {}));
  agentkit::providers::encode_traces_json(std::span(&s, 1), {}, buffer);
  CHECK(buffer == agentkit::providers::encode_traces_json(std::span(&s, 1), {}));

  SECTION("a parent span id is field 4") {
    s.parent_span_id = SpanId("2122232425262728");
    const std::string parent = bytes({0x22, 0x08, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28});
    const std::string expected = span.substr(0, 28) + parent + span.substr(28);
    CHECK(agentkit::providers::encode_traces_protobuf(std::span(&s, 1), {}).find(bytes({0x12, 0x4f}) + expected) !=
          std::string::npos);
  }
}

TEST_CASE("otlp/json: the mapping's shape (hex ids, camelCase, int64 as strings, enums as numbers)", "[otlp]") {
  Span s = tool_span();
  s.attributes.push_back({"count", std::int64_t{-7}});
  s.attributes.push_back({"ratio", std::numeric_limits<double>::quiet_NaN()});
  s.attributes.push_back({"flag", false});
  s.attributes.push_back({"reasons", std::vector<std::string>{"a", "b"}});
  s.attributes.push_back({"bytes", std::string("ok \xff\xfe end\n\"quoted\"")});
  const std::vector<Attribute> resource{{"service.name", std::string("svc")}};
  const Json doc = Json::parse(agentkit::providers::encode_traces_json(std::span(&s, 1), resource));

  const Json& rs = doc["resourceSpans"].at(0);
  CHECK(attribute(rs["resource"]["attributes"], "service.name") == Json{{"stringValue", "svc"}});
  const Json& ss = rs["scopeSpans"].at(0);
  CHECK(ss["scope"]["name"] == "agentkit");
  CHECK(ss["schemaUrl"] == "https://opentelemetry.io/schemas/1.41.0");
  const Json& span = ss["spans"].at(0);
  CHECK(span["traceId"] == kTraceId.view());
  CHECK(span["spanId"] == kToolId.view());
  CHECK(span["parentSpanId"] == kAgentId.view());
  CHECK(span["kind"] == 1);
  CHECK(span["startTimeUnixNano"] == std::to_string(kT0 + 1400 * kMs));
  CHECK(span["endTimeUnixNano"] == std::to_string(kT0 + 1900 * kMs));
  CHECK(attribute(span["attributes"], "count") == Json{{"intValue", "-7"}});
  CHECK(attribute(span["attributes"], "ratio") == Json{{"doubleValue", "NaN"}});
  CHECK(attribute(span["attributes"], "flag") == Json{{"boolValue", false}});
  CHECK(attribute(span["attributes"], "reasons") ==
        Json::parse(R"({"arrayValue":{"values":[{"stringValue":"a"},{"stringValue":"b"}]}})"));
  CHECK(attribute(span["attributes"], "bytes")["stringValue"] == "ok \xEF\xBF\xBD\xEF\xBF\xBD end\n\"quoted\"");
  CHECK(span["events"].at(0)["name"] == "agentkit.approval.granted");
  CHECK(span["events"].at(0)["timeUnixNano"] == std::to_string(kT0 + 1500 * kMs));
  CHECK(span["status"] == Json{{"code", 2}, {"message", "refund service unavailable"}});

  SECTION("an unset status and a root span leave their fields out") {
    Span root = agent_span();
    root.status = SpanStatus::unset;
    const Json out = Json::parse(agentkit::providers::encode_traces_json(std::span(&root, 1), resource));
    const Json& only = out["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
    CHECK_FALSE(only.contains("parentSpanId"));
    CHECK_FALSE(only.contains("status"));
  }
}

// ------------------------------------------------------------------- metrics

TEST_CASE("otlp metrics: model-call spans become cumulative GenAI histograms per attribute set", "[otlp]") {
  GenAiMetrics metrics(at_ns(kT0));
  CHECK(metrics.empty());
  CHECK_FALSE(metrics.record(agent_span()));
  CHECK_FALSE(metrics.record(tool_span()));
  CHECK(metrics.empty());
  CHECK(metrics.record(chat_span()));                             // 1.2 s, 120 in, 30 out
  CHECK(metrics.record(chat_span(SpanId("b7ad6b7169203332"), 10, 2000, 5)));  // same attributes: 0.01 s, 2000 in, 5 out
  CHECK(metrics.record(failed_chat_span()));                      // 0.05 s, error.type timeout, 10 in

  const auto histograms = metrics.collect(at_ns(kT0 + 5000 * kMs));
  REQUIRE(histograms.size() == 2);
  const OtlpHistogram& duration = histograms[0];
  CHECK(duration.name == "gen_ai.client.operation.duration");
  CHECK(duration.unit == "s");
  CHECK(duration.bounds == std::vector<double>{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24,
                                                20.48, 40.96, 81.92});
  CHECK(duration.start == at_ns(kT0));
  CHECK(duration.time == at_ns(kT0 + 5000 * kMs));
  REQUIRE(duration.points.size() == 2);
  for (const auto& p : duration.points) {
    const bool failed = std::any_of(p.attributes.begin(), p.attributes.end(),
                                    [](const Attribute& a) { return a.key == "error.type"; });
    std::vector<std::uint64_t> buckets(15, 0);
    if (failed) {
      CHECK(p.count == 1);
      CHECK(p.sum == Approx(0.05));
      buckets[3] = 1;  // 0.04 < 0.05 <= 0.08
    } else {
      CHECK(p.count == 2);
      CHECK(p.sum == Approx(1.21));
      CHECK(p.min == Approx(0.01));
      CHECK(p.max == Approx(1.2));
      buckets[0] = 1;  // 0.01 <= 0.01: a bound is its bucket's upper end, inclusive
      buckets[7] = 1;  // 0.64 < 1.2 <= 1.28
    }
    CHECK(p.bucket_counts == buckets);
  }

  const OtlpHistogram& tokens = histograms[1];
  CHECK(tokens.name == "gen_ai.client.token.usage");
  CHECK(tokens.unit == "{token}");
  CHECK(tokens.bounds.front() == 1);
  CHECK(tokens.bounds.back() == 67108864);
  REQUIRE(tokens.points.size() == 3);  // input and output of the two calls alike, input of the failed one
  std::uint64_t total = 0;
  double sum = 0;
  for (const auto& p : tokens.points) {
    total += p.count;
    sum += p.sum;
    CHECK(std::none_of(p.attributes.begin(), p.attributes.end(),
                       [](const Attribute& a) { return a.key == "error.type"; }));
  }
  CHECK(total == 5);
  CHECK(sum == 120 + 2000 + 30 + 5 + 10);
}

TEST_CASE("otlp metrics: an error status without error.type records _OTHER", "[otlp]") {
  GenAiMetrics metrics;
  Span s = failed_chat_span();
  s.attributes.pop_back();  // error.type
  metrics.record(s);
  const auto histograms = metrics.collect(std::chrono::system_clock::now());
  REQUIRE(!histograms.empty());
  const auto& attributes = histograms[0].points.at(0).attributes;
  const auto it = std::find_if(attributes.begin(), attributes.end(),
                               [](const Attribute& a) { return a.key == "error.type"; });
  REQUIRE(it != attributes.end());
  CHECK(std::get<std::string>(it->value) == "_OTHER");
}

// ----------------------------------------------------------------- variables

TEST_CASE("otlp options: the standard OTEL_* variables", "[otlp]") {
  SECTION("nothing set: the defaults") {
    const auto o = OtlpOptions::from_env(env_of({}));
    CHECK(o.endpoint == "http://localhost:4318");
    CHECK(o.traces_url() == "http://localhost:4318/v1/traces");
    CHECK(o.metrics_url() == "http://localhost:4318/v1/metrics");
    CHECK(o.protocol == OtlpProtocol::http_protobuf);
    CHECK(o.max_queue_size == 2048);
    CHECK(o.max_export_batch_size == 512);
    CHECK(o.schedule_delay == 1000ms);
    CHECK(o.export_timeout == 10s);
    CHECK(o.headers.empty());
  }
  SECTION("every variable read") {
    const auto o = OtlpOptions::from_env(env_of({
        {"OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector.example:4318/base/"},
        {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "https://metrics.example/custom/path"},
        {"OTEL_EXPORTER_OTLP_HEADERS", " authorization = Bearer%20sk-abc%2C1 ,x-tenant=acme,,"},
        {"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"},
        {"OTEL_EXPORTER_OTLP_TIMEOUT", "2500"},
        {"OTEL_SERVICE_NAME", "svc"},
        {"OTEL_RESOURCE_ATTRIBUTES", "service.name=ignored,deployment.environment.name=prod%20eu,team=a=b"},
        {"OTEL_BSP_SCHEDULE_DELAY", "250"},
        {"OTEL_BSP_MAX_QUEUE_SIZE", "100"},
        {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "10"},
        {"OTEL_METRICS_EXPORTER", "none"},
    }));
    CHECK(o.traces_url() == "https://collector.example:4318/base/v1/traces");
    CHECK(o.metrics_url() == "https://metrics.example/custom/path");
    REQUIRE(o.headers.size() == 2);
    CHECK(o.headers[0] == std::pair<std::string, std::string>{"authorization", "Bearer sk-abc,1"});
    CHECK(o.headers[1] == std::pair<std::string, std::string>{"x-tenant", "acme"});
    CHECK(o.protocol == OtlpProtocol::http_json);
    CHECK(o.export_timeout == 2500ms);
    CHECK(o.service_name == "svc");
    REQUIRE(o.resource_attributes.size() == 2);
    CHECK(o.resource_attributes[0].key == "deployment.environment.name");
    CHECK(std::get<std::string>(o.resource_attributes[0].value) == "prod eu");
    CHECK(std::get<std::string>(o.resource_attributes[1].value) == "a=b");
    CHECK(o.schedule_delay == 250ms);
    CHECK(o.max_queue_size == 100);
    CHECK(o.max_export_batch_size == 10);
    CHECK_FALSE(o.export_metrics);
  }
  SECTION("the traces endpoint is used as is; service.name from the resource attributes") {
    OtlpOptions base;
    base.service_name = "from-code";
    const auto o = OtlpOptions::from_env(env_of({{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://h:1/t"},
                                                 {"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-env"}}),
                                         base);
    CHECK(o.traces_url() == "http://h:1/t");
    CHECK(o.service_name == "from-env");
    const auto resource = agentkit::providers::otlp_resource(o);
    CHECK(resource[0].key == "service.name");
    CHECK(std::get<std::string>(resource[0].value) == "from-env");
    CHECK(std::get<std::string>(resource[1].value) == "agentkit");
    CHECK(std::get<std::string>(resource[2].value) == "cpp");
  }
  SECTION("an empty value is unset") {
    const auto o = OtlpOptions::from_env(env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", ""}, {"OTEL_SERVICE_NAME", " "}}));
    CHECK(o.endpoint == "http://localhost:4318");
    const auto resource = agentkit::providers::otlp_resource(o);
    CHECK(std::get<std::string>(resource[0].value) == "unknown_service");
  }
}

TEST_CASE("otlp options: a malformed variable is a typed error naming it, never echoing a header value", "[otlp]") {
  const auto error_of = [](std::map<std::string, std::string> env) -> std::pair<ErrorCode, std::string> {
    try {
      OtlpOptions::from_env(env_of(std::move(env)));
    } catch (const agentkit::Error& e) {
      return {e.code(), e.what()};
    }
    FAIL("no error");
    return {};
  };
  const std::vector<std::pair<std::string, std::string>> malformed{
      {"OTEL_EXPORTER_OTLP_TIMEOUT", "ten"},
      {"OTEL_EXPORTER_OTLP_TIMEOUT", "-5"},
      {"OTEL_EXPORTER_OTLP_TIMEOUT", "5s"},
      {"OTEL_BSP_MAX_QUEUE_SIZE", "0"},
      {"OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318"},
      {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://collector/v1/traces"},
      {"OTEL_EXPORTER_OTLP_PROTOCOL", "http/xml"},
      {"OTEL_RESOURCE_ATTRIBUTES", "=nokey"},
      {"OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%zzsk-secret-123456"},
      {"OTEL_EXPORTER_OTLP_HEADERS", "authorization Bearer sk-secret-123456"},
      {"OTEL_EXPORTER_OTLP_HEADERS", "x-token=sk-secret-123456%0D%0AInjected: 1"},
      {"OTEL_EXPORTER_OTLP_HEADERS", "x-ok=1,Bearer sk-secret-123456=2"},
      {"OTEL_EXPORTER_OTLP_HEADERS", "x-token=sk-secret-123456%4"},
  };
  for (const auto& [variable, value] : malformed) {
    INFO(variable << "=" << value);
    const auto [code, message] = error_of({{variable, value}});
    CHECK(code == ErrorCode::invalid_argument);
    CHECK_THAT(message, Catch::Contains(variable));
    CHECK_THAT(message, !Catch::Contains("sk-secret"));
  }

  const auto [grpc_code, grpc_message] = error_of({{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}});
  CHECK(grpc_code == ErrorCode::unimplemented);
  CHECK_THAT(grpc_message, Catch::Contains("grpc is not supported"));
}

TEST_CASE("otlp options: OTEL_SDK_DISABLED=true makes no exporter", "[otlp]") {
  CHECK(agentkit::providers::make_otlp_exporter_from_env({}, env_of({{"OTEL_SDK_DISABLED", "true"}})) == nullptr);
  CHECK(agentkit::providers::make_otlp_exporter_from_env({}, env_of({{"OTEL_SDK_DISABLED", " TRUE "}})) == nullptr);
  // Any other value (and none) leaves it enabled; nothing is sent until a span ends.
  const auto port = std::to_string(closed_port());
  auto exporter = agentkit::providers::make_otlp_exporter_from_env(
      {}, env_of({{"OTEL_SDK_DISABLED", "false"}, {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:" + port}}));
  REQUIRE(exporter != nullptr);
  CHECK(exporter->options().traces_url() == "http://127.0.0.1:" + port + "/v1/traces");
  // Malformed values fail at setup, not at the first export.
  CHECK_THROWS_AS(agentkit::providers::make_otlp_exporter_from_env({}, env_of({{"OTEL_EXPORTER_OTLP_TIMEOUT", "x"}})),
                  agentkit::Error);
}

TEST_CASE("otlp exporter: setup mistakes throw at construction, without the header's value", "[otlp]") {
  OtlpOptions o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(closed_port());
  SECTION("a header value with a line break") {
    o.headers = {{"x-token", "sk-secret-123456\r\nInjected: 1"}};
    try {
      OtlpExporter exporter(o);
      FAIL("no error");
    } catch (const agentkit::Error& e) {
      CHECK(e.code() == ErrorCode::invalid_argument);
      CHECK_THAT(std::string(e.what()), Catch::Contains("x-token") && !Catch::Contains("sk-secret"));
    }
  }
  SECTION("an endpoint that is not a URL") {
    o.endpoint = "collector:4318";
    CHECK_THROWS_AS(OtlpExporter(o), agentkit::Error);
  }
  SECTION("a queue of 0") {
    o.max_queue_size = 0;
    CHECK_THROWS_AS(OtlpExporter(o), agentkit::Error);
  }
}

// ---------------------------------------------------------------- end to end

TEST_CASE("otlp exporter: spans and metrics reach a receiver decoding with OpenTelemetry's definitions", "[otlp]") {
  const auto protocol = GENERATE(OtlpProtocol::http_protobuf, OtlpProtocol::http_json);
  const std::string encoding = protocol == OtlpProtocol::http_json ? "json" : "protobuf";
  INFO("protocol " << agentkit::providers::to_string(protocol));
  Receiver receiver;
  OtlpOptions o = options_for(receiver);
  o.protocol = protocol;
  o.headers = {{"authorization", "Bearer sk-secret-123456"}};
  o.resource_attributes = {{"deployment.environment.name", std::string("test")}};
  o.schedule_delay = 60s;  // only the flush sends
  OtlpExporter exporter(o);
  exporter.on_end(chat_span());
  exporter.on_end(chat_span(SpanId("b7ad6b7169203332"), 10, 2000, 5));
  exporter.on_end(failed_chat_span());
  exporter.on_end(tool_span());
  exporter.on_end(agent_span());
  REQUIRE(exporter.flush(8s));
  CHECK(exporter.exported_spans() == 5);
  CHECK(exporter.failed_exports() == 0);
  CHECK(exporter.dropped_spans() == 0);

  const auto traces = receiver.requests("/v1/traces");
  REQUIRE(traces.size() == 1);
  const Json& request = traces[0];
  REQUIRE(request["status"] == 200);
  CHECK(request["encoding"] == encoding);
  CHECK(request["headers"]["authorization"] == "Bearer sk-secret-123456");
  CHECK(request["headers"]["content-type"] ==
        (protocol == OtlpProtocol::http_json ? "application/json" : "application/x-protobuf"));

  const Json& rs = request["request"]["resourceSpans"].at(0);
  const Json& resource = rs["resource"]["attributes"];
  CHECK(attribute(resource, "service.name") == Json{{"stringValue", "otlp-test"}});
  CHECK(attribute(resource, "telemetry.sdk.name") == Json{{"stringValue", "agentkit"}});
  CHECK(attribute(resource, "telemetry.sdk.language") == Json{{"stringValue", "cpp"}});
  CHECK(attribute(resource, "telemetry.sdk.version") == Json{{"stringValue", "0.1.0"}});
  CHECK(attribute(resource, "deployment.environment.name") == Json{{"stringValue", "test"}});
  REQUIRE(rs["scopeSpans"].size() == 1);
  CHECK(rs["scopeSpans"][0]["scope"]["name"] == "agentkit");
  CHECK(rs["scopeSpans"][0]["schemaUrl"] == "https://opentelemetry.io/schemas/1.41.0");

  const Json& spans = rs["scopeSpans"][0]["spans"];
  REQUIRE(spans.size() == 5);
  const Json* agent = find_by(spans, "spanId", kAgentId.str());
  const Json* chat = find_by(spans, "spanId", kChatId.str());
  const Json* tool = find_by(spans, "spanId", kToolId.str());
  REQUIRE(agent);
  REQUIRE(chat);
  REQUIRE(tool);
  for (const auto& s : spans) CHECK(s["traceId"] == kTraceId.view());

  CHECK((*agent)["name"] == "invoke_agent support");
  CHECK((*agent)["kind"] == 1);  // INTERNAL
  CHECK((!agent->contains("parentSpanId") || (*agent)["parentSpanId"] == ""));
  CHECK((*agent)["status"]["code"] == 1);  // OK
  CHECK((*agent)["startTimeUnixNano"] == std::to_string(kT0));
  CHECK((*agent)["endTimeUnixNano"] == std::to_string(kT0 + 3000 * kMs));

  CHECK((*chat)["name"] == "chat gpt-4o");
  CHECK((*chat)["kind"] == 3);  // CLIENT
  CHECK((*chat)["parentSpanId"] == kAgentId.view());
  const Json& chat_attributes = (*chat)["attributes"];
  CHECK(attribute(chat_attributes, "gen_ai.operation.name") == Json{{"stringValue", "chat"}});
  CHECK(attribute(chat_attributes, "gen_ai.provider.name") == Json{{"stringValue", "openai"}});
  CHECK(attribute(chat_attributes, "gen_ai.usage.input_tokens") == Json{{"intValue", "120"}});
  CHECK(attribute(chat_attributes, "gen_ai.usage.output_tokens") == Json{{"intValue", "30"}});
  CHECK(attribute(chat_attributes, "gen_ai.request.temperature") == Json{{"doubleValue", 0.5}});
  CHECK(attribute(chat_attributes, "gen_ai.request.stream") == Json{{"boolValue", true}});
  CHECK(attribute(chat_attributes, "gen_ai.response.finish_reasons") ==
        Json::parse(R"({"arrayValue":{"values":[{"stringValue":"stop"},{"stringValue":"length"}]}})"));
  CHECK((!chat->contains("status") || (*chat)["status"].value("code", 0) == 0));  // UNSET

  CHECK((*tool)["name"] == "execute_tool refund");
  CHECK((*tool)["parentSpanId"] == kAgentId.view());
  CHECK(attribute((*tool)["attributes"], "gen_ai.tool.name") == Json{{"stringValue", "refund"}});
  REQUIRE((*tool)["events"].size() == 1);
  const Json& event = (*tool)["events"][0];
  CHECK(event["name"] == "agentkit.approval.granted");
  CHECK(event["timeUnixNano"] == std::to_string(kT0 + 1500 * kMs));
  CHECK(attribute(event["attributes"], "agentkit.approval.decision") == Json{{"stringValue", "approve"}});
  CHECK((*tool)["status"]["code"] == 2);  // ERROR
  CHECK((*tool)["status"]["message"] == "refund service unavailable");

  // The metrics, sent after the spans they derive from.
  const auto metrics_requests = receiver.requests("/v1/metrics");
  REQUIRE(metrics_requests.size() == 1);
  REQUIRE(metrics_requests[0]["status"] == 200);
  const Json& rm = metrics_requests[0]["request"]["resourceMetrics"].at(0);
  CHECK(attribute(rm["resource"]["attributes"], "service.name") == Json{{"stringValue", "otlp-test"}});
  CHECK(rm["scopeMetrics"][0]["scope"]["name"] == "agentkit");
  const Json& metrics = rm["scopeMetrics"][0]["metrics"];
  REQUIRE(metrics.size() == 2);

  const Json* duration = find_by(metrics, "name", "gen_ai.client.operation.duration");
  REQUIRE(duration);
  CHECK((*duration)["unit"] == "s");
  CHECK((*duration)["histogram"]["aggregationTemporality"] == 2);  // CUMULATIVE
  const Json& duration_points = (*duration)["histogram"]["dataPoints"];
  REQUIRE(duration_points.size() == 2);
  for (const auto& p : duration_points) {
    const auto attributes = string_attributes(p["attributes"]);
    CHECK(attributes.at("gen_ai.operation.name") == "chat");
    CHECK(attributes.at("gen_ai.provider.name") == "openai");
    CHECK(attributes.at("gen_ai.request.model") == "gpt-4o");
    CHECK(p["explicitBounds"] ==
          Json::parse("[0.01,0.02,0.04,0.08,0.16,0.32,0.64,1.28,2.56,5.12,10.24,20.48,40.96,81.92]"));
    CHECK(p["startTimeUnixNano"].get<std::string>().size() >= 19);
    if (attributes.count("error.type")) {
      CHECK(attributes.at("error.type") == "timeout");
      CHECK_FALSE(attributes.count("gen_ai.response.model"));
      CHECK(p["count"] == "1");
      CHECK(p["sum"].get<double>() == Approx(0.05));
      CHECK(p["bucketCounts"] == Json::parse(R"(["0","0","0","1","0","0","0","0","0","0","0","0","0","0","0"])"));
    } else {
      CHECK(attributes.at("gen_ai.response.model") == "gpt-4o-2024-08-06");
      CHECK(p["count"] == "2");
      CHECK(p["sum"].get<double>() == Approx(1.21));
      CHECK(p["min"].get<double>() == Approx(0.01));
      CHECK(p["max"].get<double>() == Approx(1.2));
      CHECK(p["bucketCounts"] == Json::parse(R"(["1","0","0","0","0","0","0","1","0","0","0","0","0","0","0"])"));
    }
  }

  const Json* tokens = find_by(metrics, "name", "gen_ai.client.token.usage");
  REQUIRE(tokens);
  CHECK((*tokens)["unit"] == "{token}");
  CHECK((*tokens)["histogram"]["aggregationTemporality"] == 2);
  const Json& token_points = (*tokens)["histogram"]["dataPoints"];
  REQUIRE(token_points.size() == 3);
  bool saw_input = false;
  bool saw_output = false;
  for (const auto& p : token_points) {
    const auto attributes = string_attributes(p["attributes"]);
    CHECK_FALSE(attributes.count("error.type"));
    CHECK(p["explicitBounds"].size() == 14);
    CHECK(p["explicitBounds"].back() == 67108864.0);
    if (!attributes.count("gen_ai.response.model")) {  // the failed call
      CHECK(attributes.at("gen_ai.token.type") == "input");
      CHECK(p["sum"].get<double>() == 10);
      continue;
    }
    if (attributes.at("gen_ai.token.type") == "input") {
      saw_input = true;
      CHECK(p["count"] == "2");
      CHECK(p["sum"].get<double>() == 2120);
      // 64 < 120 <= 256 (bucket 4), 1024 < 2000 <= 4096 (bucket 6)
      CHECK(p["bucketCounts"] == Json::parse(R"(["0","0","0","0","1","0","1","0","0","0","0","0","0","0","0"])"));
    } else {
      saw_output = true;
      CHECK(attributes.at("gen_ai.token.type") == "output");
      CHECK(p["sum"].get<double>() == 35);
      CHECK(p["bucketCounts"] == Json::parse(R"(["0","0","1","1","0","0","0","0","0","0","0","0","0","0","0"])"));
    }
  }
  CHECK(saw_input);
  CHECK(saw_output);

  SECTION("metrics are cumulative, and sent again only when new values were recorded") {
    REQUIRE(exporter.flush(8s));
    CHECK(receiver.requests("/v1/metrics").size() == 1);
    exporter.on_end(chat_span(SpanId("b7ad6b7169203333"), 100, 1, 1));
    REQUIRE(exporter.flush(8s));
    const auto later = receiver.requests("/v1/metrics");
    REQUIRE(later.size() == 2);
    const Json& again = *find_by(later[1]["request"]["resourceMetrics"][0]["scopeMetrics"][0]["metrics"], "name",
                                 "gen_ai.client.operation.duration");
    std::uint64_t count = 0;
    for (const auto& p : again["histogram"]["dataPoints"]) count += std::stoull(p["count"].get<std::string>());
    CHECK(count == 4);
  }
}

TEST_CASE("otlp exporter: a full batch is sent at once, a partial one on the schedule", "[otlp]") {
  Receiver receiver;
  OtlpOptions o = options_for(receiver);
  o.max_export_batch_size = 3;
  SECTION("below the batch size nothing is sent before the schedule; reaching it sends") {
    o.schedule_delay = 60s;
    OtlpExporter exporter(o);
    exporter.on_end(plain_span(1));
    exporter.on_end(plain_span(2));
    std::this_thread::sleep_for(300ms);
    CHECK(receiver.lines().empty());
    exporter.on_end(plain_span(3));
    CHECK(eventually([&] { return receiver.spans().size() == 3; }));
    CHECK(receiver.requests("/v1/traces").size() == 1);
  }
  SECTION("each batch's request carries that batch alone (the exporter reuses one body buffer)") {
    o.schedule_delay = 60s;
    OtlpExporter exporter(o);
    for (int i = 1; i <= 6; ++i) exporter.on_end(plain_span(i));
    CHECK(eventually([&] { return receiver.requests("/v1/traces").size() == 2; }));
    std::this_thread::sleep_for(100ms);
    CHECK(receiver.spans().size() == 6);
    CHECK(exporter.exported_spans() == 6);
  }
  SECTION("a batch completed while the thread holds part of it read back is sent at once") {
    // When span 4 lands before the thread reads the page (most rounds; the
    // test fails if any round stalls), the thread reads four, sends three
    // and holds one; spans 5 and 6 complete a batch with the one held.
    o.schedule_delay = 60s;
    OtlpExporter exporter(o);
    for (int round = 1; round <= 10; ++round) {
      for (int i = 1; i <= 4; ++i) exporter.on_end(plain_span(i));
      std::this_thread::sleep_for(50ms);
      exporter.on_end(plain_span(5));
      exporter.on_end(plain_span(6));
      REQUIRE(eventually([&] { return exporter.exported_spans() == 6u * round; }, 3s));
    }
    CHECK(receiver.spans().size() == 60);
  }
  SECTION("the schedule sends a partial batch without a flush") {
    o.schedule_delay = 200ms;
    OtlpExporter exporter(o);
    exporter.on_end(plain_span(1));
    CHECK(eventually([&] { return receiver.spans().size() == 1; }));
  }
}

TEST_CASE("otlp exporter: queued spans arrive whole and in order across many pages, one larger than a page",
          "[otlp]") {
  // The exporter keeps queued spans as bytes in 16 KiB pages; these fill
  // about twenty, and one span is larger than a page.
  Receiver receiver;
  OtlpOptions o = options_for(receiver);
  o.max_export_batch_size = 64;
  o.schedule_delay = 60s;
  OtlpExporter exporter(o);
  const std::string filler(1500, 'x');
  std::string large(100'000, 'y');
  large[0] = '<';
  large.back() = '>';
  constexpr int kSpans = 200;
  for (int i = 0; i < kSpans; ++i) {
    Span s = tool_span();
    s.span_id = agentkit::trace::new_span_id();
    s.name = "execute_tool step-" + std::to_string(i);
    s.attributes.push_back({std::string("app.step.") + std::to_string(i), std::int64_t{i}});  // a key that is no literal
    s.attributes.push_back({"app.filler", i == 77 ? large : filler});
    exporter.on_end(std::move(s));
  }
  REQUIRE(exporter.flush(8s));
  CHECK(exporter.exported_spans() == kSpans);
  CHECK(exporter.dropped_spans() == 0);
  CHECK(receiver.requests("/v1/traces").size() == 4);  // 64 + 64 + 64 + 8

  const auto spans = receiver.spans();
  REQUIRE(spans.size() == kSpans);
  for (int i = 0; i < kSpans; ++i) {
    INFO("span " << i);
    const Json& s = spans[static_cast<std::size_t>(i)];
    CHECK(s["name"] == "execute_tool step-" + std::to_string(i));
    CHECK(s["parentSpanId"] == kAgentId.view());
    CHECK(attribute(s["attributes"], "app.step." + std::to_string(i)) == Json{{"intValue", std::to_string(i)}});
    CHECK(attribute(s["attributes"], "app.filler") == Json{{"stringValue", i == 77 ? large : filler}});
    CHECK(attribute(s["attributes"], "gen_ai.tool.call.id") == Json{{"stringValue", "call_1"}});
    CHECK(s["status"]["message"] == "refund service unavailable");
    REQUIRE(s["events"].size() == 1);
    CHECK(s["events"][0]["name"] == "agentkit.approval.granted");
    CHECK(attribute(s["events"][0]["attributes"], "agentkit.approval.decision") ==
          Json{{"stringValue", "approve"}});
  }
}

TEST_CASE("otlp exporter: threads ending spans at once, and flushes among them, lose and repeat none", "[otlp]") {
  Receiver receiver;
  OtlpOptions o = options_for(receiver);
  o.max_export_batch_size = 64;
  o.max_queue_size = 4096;
  o.schedule_delay = 60s;
  OtlpExporter exporter(o);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 500;
  std::atomic<bool> go{false};
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      while (!go) std::this_thread::yield();
      for (int i = 0; i < kPerThread; ++i) {
        Span s = tool_span();
        s.span_id = agentkit::trace::new_span_id();
        s.name = "execute_tool t" + std::to_string(t) + "-" + std::to_string(i);
        exporter.on_end(std::move(s));
      }
    });
  }
  go = true;
  // A flush while producers keep queueing ends: it waits for what was queued
  // when it began, not for the producers to stop.
  for (int i = 0; i < 3; ++i) CHECK(exporter.flush(8s));
  for (auto& p : producers) p.join();
  REQUIRE(exporter.flush(8s));
  CHECK(exporter.dropped_spans() == 0);
  CHECK(exporter.exported_spans() == kThreads * kPerThread);

  std::map<std::string, int> seen;
  std::map<int, int> next_of_thread;  // each thread's spans arrive in the order it ended them
  bool in_order = true;
  for (const auto& s : receiver.spans()) {
    const std::string name = s["name"].get<std::string>();
    ++seen[name];
    const auto dash = name.rfind('-');
    const int t = std::stoi(name.substr(std::string("execute_tool t").size()));
    const int i = std::stoi(name.substr(dash + 1));
    in_order = in_order && next_of_thread[t] == i;
    next_of_thread[t] = i + 1;
  }
  CHECK(seen.size() == kThreads * kPerThread);
  CHECK(std::all_of(seen.begin(), seen.end(), [](const auto& kv) { return kv.second == 1; }));
  CHECK(in_order);
}

TEST_CASE("otlp exporter: shutdown, and the destructor, send what is queued", "[otlp]") {
  Receiver receiver;
  OtlpOptions o = options_for(receiver);
  o.schedule_delay = 60s;
  SECTION("shutdown()") {
    OtlpExporter exporter(o);
    for (int i = 0; i < 3; ++i) exporter.on_end(plain_span(i));
    exporter.shutdown();
    CHECK(receiver.spans().size() == 3);
    CHECK(exporter.exported_spans() == 3);
    // Closed: later spans are dropped and counted, and flush() says no.
    exporter.on_end(plain_span(4));
    CHECK(exporter.dropped_spans() == 1);
    CHECK_FALSE(exporter.flush(100ms));
    exporter.shutdown();  // again: nothing happens
  }
  SECTION("the destructor") {
    {
      OtlpExporter exporter(o);
      for (int i = 0; i < 3; ++i) exporter.on_end(plain_span(i));
    }
    CHECK(receiver.spans().size() == 3);
  }
}

// -------------------------------------------------------------------- faults

TEST_CASE("otlp exporter: a receiver that is down fails the export, counted and logged, never thrown", "[otlp]") {
  LogCapture log;
  OtlpOptions o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(closed_port());
  o.max_retries = 1;
  o.retry_backoff = 10ms;
  o.export_timeout = 3s;
  o.schedule_delay = 60s;  // one batch, sent by the flush
  o.logger = log.logger();
  auto exporter = std::make_unique<OtlpExporter>(o);
  CHECK_NOTHROW(exporter->on_end(plain_span(1)));
  CHECK_NOTHROW(exporter->on_end(plain_span(2)));
  CHECK(exporter->flush(8s));
  CHECK(exporter->failed_exports() == 1);  // one request (its retry included); no metrics from plain spans
  CHECK(exporter->exported_spans() == 0);
  CHECK_NOTHROW(exporter->shutdown());
  exporter.reset();
  CHECK_THAT(log.text(), Catch::Contains("OTLP export of 2 spans to http://127.0.0.1:") &&
                             Catch::Contains("/v1/traces failed") && Catch::Contains("unavailable"));
}

TEST_CASE("otlp exporter: on_end never waits for a receiver that hangs, and shutdown is bounded", "[otlp]") {
  Receiver receiver("hang");
  OtlpOptions o = options_for(receiver);
  o.max_export_batch_size = 16;
  o.max_queue_size = 4096;
  o.export_timeout = 4s;
  o.max_retries = 0;
  OtlpExporter exporter(o);
  for (int i = 0; i < 16; ++i) exporter.on_end(plain_span(i));  // a full batch: exported at once, and it hangs
  REQUIRE(eventually([&] { return receiver.requests("/v1/traces").size() == 1; }));

  // Every on_end from here on runs while the export thread waits on the receiver.
  std::vector<Span> spans;
  for (int i = 0; i < 2000; ++i) spans.push_back(plain_span(i));
  auto slowest = Clock::duration::zero();
  const auto started = Clock::now();
  for (auto& s : spans) {
    const auto before = Clock::now();
    exporter.on_end(std::move(s));
    slowest = std::max(slowest, Clock::now() - before);
  }
  const auto total = Clock::now() - started;
  CHECK(slowest < agentkit_test::latency_bound(100ms));
  CHECK(total < agentkit_test::latency_bound(1000ms));
  CHECK(exporter.dropped_spans() == 0);

  // The export is still hanging: shutdown gives up at its deadline, cancels
  // it and drops what is queued, instead of waiting out export_timeout.
  const auto shutting = Clock::now();
  exporter.shutdown(300ms);
  CHECK(Clock::now() - shutting < 2s);
  CHECK(exporter.dropped_spans() == 2000);
  CHECK(exporter.failed_exports() == 1);
}

TEST_CASE("otlp exporter: a 200 that is no OTLP response (a proxy's page) fails the export, never counts as sent",
          "[otlp]") {
  LogCapture log;
  Receiver receiver;
  OtlpOptions o = options_for(receiver);
  o.traces_endpoint = receiver.base() + "/v1/traces?html=1";
  o.schedule_delay = 60s;
  o.logger = log.logger();
  auto exporter = std::make_unique<OtlpExporter>(o);
  exporter->on_end(plain_span(1));
  exporter->on_end(plain_span(2));
  REQUIRE(exporter->flush(8s));
  CHECK(receiver.requests("/v1/traces").size() == 1);  // it was sent, and answered 200
  CHECK(exporter->exported_spans() == 0);
  CHECK(exporter->failed_exports() == 1);
  exporter.reset();
  CHECK_THAT(log.text(), Catch::Contains("OTLP export of 2 spans to http://127.0.0.1:") &&
                             Catch::Contains("failed (dropped): the endpoint answered 200 with content type "
                                             "'text/html', not an OTLP response"));
}

TEST_CASE("otlp exporter: a partial success counts the rejected spans as dropped and logs why, without secrets",
          "[otlp]") {
  const auto protocol = GENERATE(OtlpProtocol::http_protobuf, OtlpProtocol::http_json);
  INFO("protocol " << agentkit::providers::to_string(protocol));
  LogCapture log;
  Receiver receiver;
  OtlpOptions o = options_for(receiver);
  o.protocol = protocol;
  o.headers = {{"authorization", "Bearer sk-secret-123456"}};
  o.schedule_delay = 60s;
  o.logger = log.logger();
  SECTION("spans rejected") {
    o.traces_endpoint =
        receiver.base() + "/v1/traces?rejected=2&error=attribute%20too%20long%20for%20Bearer%20sk-secret-123456";
    auto exporter = std::make_unique<OtlpExporter>(o);
    for (int i = 0; i < 5; ++i) exporter->on_end(plain_span(i));
    REQUIRE(exporter->flush(8s));
    CHECK(exporter->exported_spans() == 3);
    CHECK(exporter->dropped_spans() == 2);
    CHECK(exporter->failed_exports() == 0);
    exporter.reset();
    CHECK_THAT(log.text(), Catch::Contains("OTLP export of 5 spans to http://127.0.0.1:") &&
                               Catch::Contains("the endpoint rejected 2 of them: attribute too long for ") &&
                               !Catch::Contains("sk-secret-123456"));
  }
  SECTION("nothing rejected, a warning") {
    o.traces_endpoint = receiver.base() + "/v1/traces?rejected=0&error=slow%20down";
    auto exporter = std::make_unique<OtlpExporter>(o);
    for (int i = 0; i < 5; ++i) exporter->on_end(plain_span(i));
    REQUIRE(exporter->flush(8s));
    CHECK(exporter->exported_spans() == 5);
    CHECK(exporter->dropped_spans() == 0);
    exporter.reset();
    CHECK_THAT(log.text(), Catch::Contains("accepted with a warning: slow down"));
  }
}

TEST_CASE("otlp exporter: a 200 answer that does not decode is taken as received, with a warning", "[otlp]") {
  LogCapture log;
  Receiver receiver;
  OtlpOptions o = options_for(receiver);
  o.traces_endpoint = receiver.base() + "/v1/traces?garbage=1";
  o.schedule_delay = 60s;
  o.logger = log.logger();
  auto exporter = std::make_unique<OtlpExporter>(o);
  exporter->on_end(plain_span(1));
  REQUIRE(exporter->flush(8s));
  CHECK(exporter->exported_spans() == 1);
  CHECK(exporter->failed_exports() == 0);
  exporter.reset();
  CHECK_THAT(log.text(), Catch::Contains("does not decode as an OTLP response; taken as received"));
}

TEST_CASE("otlp exporter: a full queue drops spans and counts them", "[otlp]") {
  Receiver receiver("hang");
  OtlpOptions o = options_for(receiver);
  o.max_export_batch_size = 8;
  o.max_queue_size = 8;
  o.max_retries = 0;
  OtlpExporter exporter(o);
  for (int i = 0; i < 8; ++i) exporter.on_end(plain_span(i));  // taken by the export thread, which hangs
  REQUIRE(eventually([&] { return receiver.requests("/v1/traces").size() == 1; }));
  for (int i = 0; i < 8; ++i) exporter.on_end(plain_span(i));  // the queue is full
  CHECK(exporter.dropped_spans() == 0);
  for (int i = 0; i < 5; ++i) exporter.on_end(plain_span(i));
  CHECK(exporter.dropped_spans() == 5);
  exporter.shutdown(200ms);
  CHECK(exporter.dropped_spans() == 5 + 8);
}

TEST_CASE("otlp exporter: a 503 or 429 is retried as the transport's policy says, a bounded number of times",
          "[otlp]") {
  Receiver receiver;
  OtlpOptions o = options_for(receiver);
  o.schedule_delay = 60s;
  SECTION("503, then the receiver recovers") {
    o.traces_endpoint = receiver.base() + "/v1/traces?status=503&times=1&retry_after=0";
    OtlpExporter exporter(o);
    exporter.on_end(plain_span(1));
    REQUIRE(exporter.flush(8s));
    const auto requests = receiver.requests("/v1/traces");
    REQUIRE(requests.size() == 2);
    CHECK(requests[0]["status"] == 503);
    CHECK(requests[1]["status"] == 200);
    CHECK(exporter.failed_exports() == 0);
    CHECK(exporter.exported_spans() == 1);
  }
  SECTION("429 every time: max_retries retries, then the batch is dropped") {
    o.traces_endpoint = receiver.base() + "/v1/traces?status=429&retry_after=0";
    o.max_retries = 2;
    OtlpExporter exporter(o);
    exporter.on_end(plain_span(1));
    REQUIRE(exporter.flush(8s));
    CHECK(receiver.requests("/v1/traces").size() == 3);
    CHECK(exporter.failed_exports() == 1);
    CHECK(exporter.exported_spans() == 0);
    // The next batch is tried afresh.
    exporter.on_end(plain_span(2));
    REQUIRE(exporter.flush(8s));
    CHECK(receiver.requests("/v1/traces").size() == 6);
    CHECK(exporter.failed_exports() == 2);
  }
}

TEST_CASE("otlp exporter: no configured header value reaches a log line, even when the server echoes it",
          "[otlp]") {
  Receiver receiver;
  LogCapture log;
  OtlpOptions o = options_for(receiver);
  o.logger = log.logger();
  o.headers = {{"authorization", "Bearer sk-secret-123456"}, {"x-tenant-token", "tok-abcdefgh"}};
  // A server that answers 400 with the request's headers in its error message.
  o.traces_endpoint = receiver.base() + "/v1/traces?status=400&echo_headers=1";
  SECTION("long values are redacted, the rest of the server's message kept") {
    OtlpExporter exporter(o);
    exporter.on_end(chat_span());
    REQUIRE(exporter.flush(8s));
    exporter.shutdown();
    CHECK(exporter.failed_exports() == 1);
    const std::string text = log.text();
    CHECK_THAT(text, Catch::Contains("failed") && Catch::Contains("[redacted]") && Catch::Contains("refused"));
    CHECK_THAT(text, !Catch::Contains("sk-secret") && !Catch::Contains("tok-abcdefgh"));
  }
  SECTION("a value too short to redact withholds the server's message") {
    o.headers.emplace_back("x-short", "s3cr3t");
    OtlpExporter exporter(o);
    exporter.on_end(chat_span());
    REQUIRE(exporter.flush(8s));
    exporter.shutdown();
    const std::string text = log.text();
    CHECK_THAT(text, Catch::Contains("failed") && Catch::Contains("withheld"));
    CHECK_THAT(text, !Catch::Contains("sk-secret") && !Catch::Contains("tok-abcdefgh") && !Catch::Contains("s3cr3t"));
  }
  // The values were sent, only never logged.
  const auto requests = receiver.requests("/v1/traces");
  REQUIRE(requests.size() == 1);
  CHECK(requests[0]["headers"]["authorization"] == "Bearer sk-secret-123456");
}

TEST_CASE("otlp exporter: capture_content() is the option", "[otlp]") {
  OtlpOptions o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(closed_port());
  CHECK_FALSE(OtlpExporter(o).capture_content());
  o.capture_content = true;
  CHECK(OtlpExporter(o).capture_content());
}
