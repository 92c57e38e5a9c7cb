#pragma once
// OpenTelemetry export over OTLP/HTTP: a trace::SpanSink that sends a run's
// spans to a collector (or any OTLP/HTTP backend: Jaeger, Tempo, Honeycomb,
// Langfuse, ...) and derives the GenAI client metrics from its model-call
// spans. No OpenTelemetry SDK or protobuf library is needed: the encoders
// below write the OTLP protobuf wire format and the OTLP/JSON mapping
// themselves, and requests go through the providers' one HTTP Transport.
//
// What is sent:
//   - traces: every ended span, batched, to <endpoint>/v1/traces, under one
//     Resource (service.name, telemetry.sdk.name "agentkit",
//     telemetry.sdk.language "cpp", telemetry.sdk.version, and the resource
//     attributes configured) and one InstrumentationScope "agentkit" whose
//     schema URL is the semantic conventions' v1.41.0;
//   - metrics: the histograms gen_ai.client.operation.duration (s) and
//     gen_ai.client.token.usage ({token}) of the GenAI semantic conventions
//     v1.41.0, recorded from each span whose gen_ai.operation.name is chat,
//     generate_content or text_completion, with the bucket boundaries the
//     conventions advise, cumulative, to <endpoint>/v1/metrics.
//
// Example (in code):
//   agentkit::providers::OtlpOptions options;
//   options.endpoint = "http://collector.internal:4318";
//   options.headers = {{"authorization", "Bearer " + token}};
//   options.service_name = "support-bot";
//   auto exporter = std::make_shared<agentkit::providers::OtlpExporter>(options);
//   ctx.tracer = exporter;
//
// Example (from the standard OTEL_* variables; null when OTEL_SDK_DISABLED=true):
//   ctx.tracer = agentkit::providers::make_otlp_exporter_from_env();
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/fwd.h>

#include <agentkit/providers/transport.h>
#include <agentkit/trace.h>

namespace agentkit::providers {

// The schema URL of the semantic conventions the exported telemetry follows.
inline constexpr std::string_view kOtlpSchemaUrl = "https://opentelemetry.io/schemas/1.41.0";
// The instrumentation scope every span and metric is exported under.
inline constexpr std::string_view kOtlpScopeName = "agentkit";
// telemetry.sdk.version and the scope's version.
inline constexpr std::string_view kOtlpSdkVersion = "0.1.0";

// How requests are encoded: protobuf (application/x-protobuf, the default
// of OTLP/HTTP) or OTLP/JSON (application/json). gRPC is not supported.
enum class OtlpProtocol { http_protobuf, http_json };
// "http/protobuf" or "http/json", as OTEL_EXPORTER_OTLP_PROTOCOL spells it.
std::string_view to_string(OtlpProtocol protocol) noexcept;

// Looks up one environment variable: its value, or nullopt when it is unset.
// Tests pass a map; the default reads the process environment.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
// The process environment (getenv), read at each call.
EnvLookup process_environment();

struct OtlpOptions {
  // The base URL: /v1/traces and /v1/metrics are appended (after one '/').
  std::string endpoint = "http://localhost:4318";
  // Full URLs used as they are, instead of the base URL's paths.
  std::string traces_endpoint;
  std::string metrics_endpoint;
  // Sent with every request (an auth header, a tenant id). Their values are
  // never logged and never put in an error message: a server's error text
  // that repeats one is redacted, or left out of the log when a value is too
  // short to redact (Redactor::kMinSecretChars).
  Headers headers;
  OtlpProtocol protocol = OtlpProtocol::http_protobuf;
  // service.name; empty: the resource attributes' service.name, else
  // "unknown_service".
  std::string service_name;
  // More Resource attributes (deployment.environment.name, service.version, ...).
  std::vector<trace::Attribute> resource_attributes;
  // Spans waiting for export at most; a span ended while the queue is full
  // is dropped and counted (dropped_spans()).
  std::size_t max_queue_size = 2048;
  // Spans per request at most. A queue this long wakes the exporter at once.
  std::size_t max_export_batch_size = 512;
  // How often queued spans (and new metric values) are sent when the queue
  // does not fill a batch first. 1 s here (the OpenTelemetry SDKs default to
  // 5 s): an agent's spans are few and a developer watches them arrive.
  std::chrono::milliseconds schedule_delay{1000};
  // One export (a request and its retries) gives up after this long.
  std::chrono::milliseconds export_timeout{10'000};
  // Retries of a request that failed in a way a retry may fix (as the
  // transport's retry_advice() says: a connection failure, 408, 409, 429,
  // 5xx), honouring Retry-After, all within export_timeout; the first retry
  // waits up to retry_backoff, each later one twice as long.
  int max_retries = 2;
  std::chrono::milliseconds retry_backoff{500};
  // Whether the GenAI metrics are derived and exported.
  bool export_metrics = true;
  // What OtlpExporter::capture_content() answers: whether runs put message
  // content on their spans. Off by default: content may be personal data.
  bool capture_content = false;
  // Where export failures and dropped spans are reported (never spdlog's
  // default logger); null: nowhere.
  std::shared_ptr<spdlog::logger> logger;

  // The URL spans are posted to: traces_endpoint, or endpoint + "/v1/traces".
  std::string traces_url() const;
  // The URL metrics are posted to: metrics_endpoint, or endpoint + "/v1/metrics".
  std::string metrics_url() const;

  // `base` with what the standard variables set (each one that is set and
  // not empty wins over the field it sets):
  //   OTEL_EXPORTER_OTLP_ENDPOINT          endpoint (a base URL)
  //   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT   traces_endpoint (used as is)
  //   OTEL_EXPORTER_OTLP_METRICS_ENDPOINT  metrics_endpoint (used as is)
  //   OTEL_EXPORTER_OTLP_HEADERS           headers: "k=v,k2=v2", values
  //                                        percent-decoded; a name set twice
  //                                        replaces the earlier value
  //   OTEL_EXPORTER_OTLP_PROTOCOL          http/protobuf | http/json
  //   OTEL_EXPORTER_OTLP_TIMEOUT           export_timeout (ms)
  //   OTEL_SERVICE_NAME                    service_name
  //   OTEL_RESOURCE_ATTRIBUTES             resource_attributes ("k=v,..."),
  //                                        its service.name when
  //                                        OTEL_SERVICE_NAME is unset
  //   OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_EXPORT_TIMEOUT (ms),
  //   OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE
  //   OTEL_METRICS_EXPORTER                none: export_metrics = false
  // A malformed value throws agentkit::Error (invalid_argument) naming the
  // variable, never repeating a header's value; protocol grpc, or a metrics
  // exporter other than otlp / none, throws Error (unimplemented).
  // `env` null: the process environment; without `base`, the defaults above.
  static OtlpOptions from_env(const EnvLookup& env = nullptr);
  static OtlpOptions from_env(const EnvLookup& env, OtlpOptions base);
};

// The Resource's attributes under `options`: service.name first, then
// telemetry.sdk.name / .language / .version, then the configured resource
// attributes (a key given twice: the last wins; service.name and the
// telemetry.sdk.* keys cannot be overridden there).
std::vector<trace::Attribute> otlp_resource(const OtlpOptions& options);

// ---------------------------------------------------------------- encoders

// An OTLP ExportTraceServiceRequest with `spans` under one Resource and the
// scope "agentkit". Ids that are not valid lowercase hex (trace::valid_*_id)
// are left out; text that is not UTF-8 is made so (sanitize_utf8); span kinds
// map to INTERNAL / CLIENT / SERVER, statuses to UNSET / OK / ERROR (the
// message only with ERROR). Protobuf: the binary wire format. JSON: the
// OTLP/JSON mapping (hex ids, lowerCamelCase names, 64-bit integers as
// strings, enums as integers, non-finite doubles as "NaN" / "Infinity").
std::string encode_traces_protobuf(std::span<const trace::Span> spans, std::span<const trace::Attribute> resource);
std::string encode_traces_json(std::span<const trace::Span> spans, std::span<const trace::Attribute> resource);
// The same into `out` (cleared first), so an exporter reuses one buffer.
void encode_traces_protobuf(std::span<const trace::Span> spans, std::span<const trace::Attribute> resource,
                            std::string& out);
void encode_traces_json(std::span<const trace::Span> spans, std::span<const trace::Attribute> resource,
                        std::string& out);

// One point of a histogram: the values recorded under one attribute set.
struct OtlpHistogramPoint {
  std::vector<trace::Attribute> attributes;
  std::uint64_t count = 0;
  double sum = 0;
  double min = 0;
  double max = 0;
  // One more than the histogram's bounds: counts[i] holds the values v with
  // bounds[i-1] < v <= bounds[i] (the last: above every bound).
  std::vector<std::uint64_t> bucket_counts;
};

// An explicit-bucket histogram with cumulative temporality.
struct OtlpHistogram {
  std::string name;
  std::string description;
  std::string unit;
  std::vector<double> bounds;
  std::chrono::system_clock::time_point start{};  // when the aggregation began
  std::chrono::system_clock::time_point time{};   // when it was read
  std::vector<OtlpHistogramPoint> points;
};

// An OTLP ExportMetricsServiceRequest with `histograms` under one Resource
// and the scope "agentkit" (encodings as for the traces).
std::string encode_metrics_protobuf(std::span<const OtlpHistogram> histograms,
                                    std::span<const trace::Attribute> resource);
std::string encode_metrics_json(std::span<const OtlpHistogram> histograms, std::span<const trace::Attribute> resource);

// ----------------------------------------------------------------- metrics

// The GenAI client metrics of the semantic conventions (v1.41.0), derived
// from model-call spans: a span whose gen_ai.operation.name is chat,
// generate_content or text_completion records
//   gen_ai.client.operation.duration (s): end - start, with
//     gen_ai.operation.name, gen_ai.provider.name, gen_ai.request.model,
//     gen_ai.response.model, server.address, server.port (each when the span
//     has it) and error.type (the span's, or "_OTHER" for an error status
//     without one);
//   gen_ai.client.token.usage ({token}): gen_ai.usage.input_tokens with
//     gen_ai.token.type "input" and gen_ai.usage.output_tokens with "output"
//     (each when the span has it), with the same attributes but error.type.
// Values are aggregated per attribute set, cumulatively, in the bucket
// boundaries the conventions advise. Not thread-safe: the exporter uses it
// from its one export thread.
class GenAiMetrics {
 public:
  static constexpr std::string_view kDurationName = "gen_ai.client.operation.duration";
  static constexpr std::string_view kTokenUsageName = "gen_ai.client.token.usage";
  static const std::vector<double>& duration_bounds();     // 0.01, 0.02, ..., 81.92
  static const std::vector<double>& token_usage_bounds();  // 1, 4, 16, ..., 67108864

  explicit GenAiMetrics(std::chrono::system_clock::time_point start = std::chrono::system_clock::now());

  // Records `span` when it is a model call; returns whether it was one.
  bool record(const trace::Span& span);
  // Whether anything was ever recorded.
  bool empty() const noexcept { return duration_.empty() && tokens_.empty(); }
  // The histograms as of `now` (only those with a point).
  std::vector<OtlpHistogram> collect(std::chrono::system_clock::time_point now) const;

 private:
  // One point per attribute set, keyed by a canonical rendering of the set.
  using SeriesMap = std::map<std::string, OtlpHistogramPoint, std::less<>>;
  static void add(SeriesMap& series, const std::vector<double>& bounds, std::vector<trace::Attribute> attributes,
                  double value);

  std::chrono::system_clock::time_point start_;
  SeriesMap duration_;
  SeriesMap tokens_;
};

// ----------------------------------------------------------------- exporter

// A SpanSink that batches spans and exports them over OTLP/HTTP on one
// background thread (the OpenTelemetry batch span processor and OTLP
// exporter in one).
//
// on_end() copies the span into a bounded queue under a mutex, as bytes in a
// few reused 64 KiB pages (the span itself is freed on the caller's thread),
// and returns: it never waits for the network, never logs, and wakes the
// export thread only when the queue reaches a batch (or four pages, for
// large spans); otherwise the thread wakes every schedule_delay. The export
// thread reads the spans back from the pages, so no memory it uses is freed
// or reused by the threads that make spans but those pages. A full queue
// drops the span (dropped_spans()), as does one with a string of 4 GiB or
// more. An export
// that fails (connection refused, a non-2xx status after the transport's
// bounded retries, export_timeout) is logged on the options' logger without
// any header value, counted (failed_exports()) and its batch dropped; it is
// never thrown into a run. So is a 2xx answer that is no OTLP response (a
// proxy's or a web server's page: any content type but protobuf or JSON
// with a body), since nothing says the spans arrived. A partial success
// (the answer's partial_success) logs the endpoint's message and counts the
// spans it rejected as dropped. The GenAI metrics are recorded on the export
// thread from each span it takes from the queue (a dropped span records
// none) and sent with the spans' schedule, when new values were recorded.
//
// Thread-safe. The constructor throws agentkit::Error (invalid_argument) for
// an unusable endpoint URL, a header name or value that cannot be sent, or a
// queue or batch size of 0.
class OtlpExporter final : public trace::SpanSink {
 public:
  explicit OtlpExporter(OtlpOptions options);
  // shutdown().
  ~OtlpExporter() override;
  OtlpExporter(const OtlpExporter&) = delete;
  OtlpExporter& operator=(const OtlpExporter&) = delete;

  void on_end(trace::Span span) override;
  bool capture_content() const noexcept override;

  // Exports every span queued before the call, then the metrics, and waits
  // for that to finish; false when `timeout` passed first (the export goes
  // on) or the exporter is shut down.
  bool flush(std::chrono::milliseconds timeout);
  // Stops taking spans (later ones are dropped), flushes for at most
  // `timeout` (default: the options' export_timeout), then stops the export
  // thread; an export still running at the deadline is cancelled and the
  // spans still queued are dropped. Calls after the first return at once.
  void shutdown(std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  // Spans dropped: the queue was full, the exporter was shut down, the
  // shutdown deadline passed before they were sent, or the endpoint
  // rejected them (an OTLP partial success).
  std::uint64_t dropped_spans() const noexcept;
  // Export requests (traces or metrics) that failed.
  std::uint64_t failed_exports() const noexcept;
  // Spans in requests the endpoint accepted.
  std::uint64_t exported_spans() const noexcept;

  const OtlpOptions& options() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// An OtlpExporter configured by OtlpOptions::from_env(env, base), or null
// when OTEL_SDK_DISABLED is "true" (any case). Throws what from_env() and
// the constructor throw.
std::shared_ptr<OtlpExporter> make_otlp_exporter_from_env(OtlpOptions base = {}, const EnvLookup& env = nullptr);

}  // namespace agentkit::providers
