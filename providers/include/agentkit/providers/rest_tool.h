#pragma once
// REST tools: an HTTP endpoint declared as a tool. No C++ callable; the
// declaration (method, URL template, parameters and where each one goes,
// headers, timeout, retries, effects) is the whole tool.
//
// Example:
//   using namespace agentkit::providers;
//   auto refund = rest_tool("refund_order")
//       .description("Refund part or all of a customer order; returns the refund record.")
//       .side_effecting(true)
//       .idempotent()  // the API dedupes on the order id, so a retry is safe
//       .endpoint("POST", "https://pay.example.com/v1/orders/{order_id}/refunds")
//       .path("order_id", "The order to refund")
//       .body("amount_cents", "How much to refund, in cents", {.type = ParamType::integer})
//       .query("notify", "Email the customer", {.type = ParamType::boolean, .default_value = true})
//       .header("Authorization", "Bearer ${PAY_API_TOKEN}")
//       .timeout(std::chrono::seconds(10))
//       .retries(2)
//       .build();
//
// Contract:
//   - `.side_effecting(bool)` is mandatory: `.build()` does not compile
//     without it. A GET is not assumed read-only.
//   - `.retries(n)` needs a read-only or idempotent tool: on a side-effecting,
//     non-idempotent tool it is a ToolDefinitionError, and such a tool's
//     request is sent at most once (the transport never retries it either).
//   - Arguments are validated against the declared parameters before anything
//     is sent; every problem is reported at once in a ToolArgumentError.
//   - `${NAME}` in a header value is read from the environment at call time.
//     A missing or empty variable is an error naming the variable. Resolved
//     values (of 4 characters or more) never appear in errors, results or
//     metadata: they, and any echo of them in a response, read "[redacted]".
//   - Every URL contacted, the first and each redirect, is checked against
//     ctx.egress (see <agentkit/egress.h>); a refusal throws EgressDenied,
//     which the egress_allowlist() middleware turns into a denied result.
//   - Redirects (301, 302, 303, 307, 308) are followed up to max_redirects
//     hops: 303, and 301/302 after a POST, continue as GET without a body;
//     307/308 keep the method and body. Authorization, Cookie and headers
//     carrying `${...}` values are not sent to a different origin, and an
//     https URL never redirects to http.
//   - A call made in a traced run (ctx.traceparent() not empty) sends
//     `traceparent: <ctx.traceparent()>`, in place of any traceparent header
//     the tool declares, on every hop; an untraced call adds nothing.
//   - run() returns {"output": <body>, "metadata": {"status", "url",
//     "content_type", "attempts", "redirects"}}: the body parsed as JSON when
//     the response says it is JSON, else its text (null when empty). A
//     non-2xx status throws an error with the status and a bounded preview
//     of the body, which error_boundary() turns into a model-visible result.
#include <chrono>
#include <concepts>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <agentkit/json.h>
#include <agentkit/providers/transport.h>
#include <agentkit/tool.h>

namespace agentkit::providers {

// The JSON type of a parameter. Path parameters must be scalar; query
// parameters scalar or an array of scalars (sent as a repeated key).
enum class ParamType { string, integer, number, boolean, array, object };

// Where an argument goes: a `{name}` placeholder of the URL template
// (percent-encoded as one segment), a query parameter, or a key of the JSON
// request body.
enum class ParamIn { path, query, body };

// The optional part of a parameter declaration.
struct ParamOptions {
  ParamType type = ParamType::string;
  ParamType items = ParamType::string;  // the element type when `type` is array (not array itself)
  bool required = true;
  // Used when the model omits the argument (or sends null); implies not required.
  std::optional<Json> default_value;
  // When not empty, the only accepted values.
  std::vector<Json> allowed;
};

// One declared parameter.
struct RestParam {
  std::string name;
  ParamIn in = ParamIn::query;
  std::string description;
  ParamOptions options;
};

// An HTTP response after redirects and retries, any status.
struct RestResponse {
  int status = 0;
  Headers headers;  // names lower-cased
  Json output;      // JSON body, body text, or null when empty
  std::string url;  // the URL that answered (after redirects)
  int attempts = 0;   // requests sent, retries and redirects included
  int redirects = 0;  // redirect hops followed

  bool ok() const noexcept { return status >= 200 && status < 300; }
  // {"status", "url", "content_type", "attempts", "redirects"}.
  Json metadata() const;
};

// Everything a REST tool is made of; filled by RestToolBuilder.
struct RestToolDefinition {
  std::string name;
  std::string description;
  // Required: a definition without it is a ToolDefinitionError. Never
  // inferred from the method.
  std::optional<bool> side_effecting;
  bool idempotent = false;
  bool requires_approval = false;
  ApprovalPredicate approval_when;  // set: calls need a decision when it says so
  // The same as a rule's source text (see <agentkit/condition.h>), so the
  // definition can be saved as data: when approval_when is unset the
  // constructor parses it into approval_when (ToolDefinitionError when it
  // does not parse). A rule given only as a C++ function cannot be saved.
  std::string approve_if;
  std::vector<std::string> tags;
  std::string method = "GET";
  std::string url;  // template: `{param}` placeholders after the host
  std::vector<RestParam> params;
  Headers headers;  // values may hold `${ENV_NAME}`
  std::chrono::milliseconds timeout{30'000};        // per request
  int retries = 0;                                  // after the first attempt
  std::chrono::milliseconds retry_delay{200};       // doubled each retry (Retry-After wins, up to max_retry_delay)
  std::chrono::milliseconds max_retry_delay{10'000};
  int max_redirects = 5;
  std::size_t max_response_bytes = 1u << 20;  // a larger 2xx body is an error
};

// A tool that calls one HTTP endpoint. Built by rest_tool(...).build().
// Thread-safe: concurrent calls use separate pooled connections.
class RestTool final : public Tool {
 public:
  // Validates the definition (for tools declared from data); throws
  // ToolDefinitionError naming the problem. Code should prefer the builder,
  // which also enforces the effects declaration at compile time.
  explicit RestTool(RestToolDefinition definition);

  const ToolSpec& spec() const noexcept override { return spec_; }
  const RestToolDefinition& definition() const noexcept { return def_; }

  // {"output", "metadata"} for a 2xx response; throws otherwise (see above).
  Json run(const Json& arguments, RunContext& ctx) const override;

  // The response whatever its status, for hosts that interpret it
  // themselves. Throws ToolArgumentError, EgressDenied, or std::runtime_error
  // for a missing variable, a transport failure or a bad redirect.
  RestResponse call(const Json& arguments, RunContext& ctx) const;

 private:
  struct Prepared;
  Prepared prepare(const Json& arguments) const;
  HttpResponse send(const HttpRequest& request, const Prepared& prepared, RestResponse& response,
                    RunContext& ctx) const;

  RestToolDefinition def_;
  ToolSpec spec_;
  std::vector<std::string> accepted_;
  std::shared_ptr<Transport> transport_;
};

// Fluent declaration of a REST tool; start it with rest_tool(name).
// `HasEffects` tracks whether .side_effecting() was called. Each call
// consumes the builder.
template <bool HasEffects = false>
class RestToolBuilder {
 public:
  explicit RestToolBuilder(std::string name) { def_.name = std::move(name); }

  // What the model reads; at least kMinDescriptionChars characters.
  RestToolBuilder description(std::string text) && { return set(def_.description, std::move(text)); }
  // Mandatory: true if the call changes the world. Never inferred from the method.
  RestToolBuilder<true> side_effecting(bool value) && {
    def_.side_effecting = value;
    return RestToolBuilder<true>(std::move(def_));
  }
  // A repeat of the same call is safe; allows retries of a side-effecting tool.
  RestToolBuilder idempotent(bool value = true) && { return set(def_.idempotent, value); }
  // Always pause for a human decision first, at every autonomy tier.
  // (A template, so a lambda, which converts to bool, never lands here.)
  template <std::same_as<bool> B = bool>
  RestToolBuilder requires_approval(B value = true) && {
    return set(def_.requires_approval, value);
  }
  // Pause for a human decision when `rule` says so for a call's arguments
  // (or throws). See agentkit::ApprovalPredicate.
  RestToolBuilder requires_approval(ApprovalPredicate rule) && { return set(def_.approval_when, std::move(rule)); }
  RestToolBuilder tags(std::vector<std::string> values) && { return set(def_.tags, std::move(values)); }
  // GET, HEAD, POST, PUT, PATCH or DELETE, and the URL template.
  RestToolBuilder endpoint(std::string method, std::string url_template) && {
    def_.method = std::move(method);
    def_.url = std::move(url_template);
    return std::move(*this);
  }
  RestToolBuilder path(std::string name, std::string description, ParamOptions options = {}) && {
    return add(ParamIn::path, std::move(name), std::move(description), std::move(options));
  }
  RestToolBuilder query(std::string name, std::string description, ParamOptions options = {}) && {
    return add(ParamIn::query, std::move(name), std::move(description), std::move(options));
  }
  RestToolBuilder body(std::string name, std::string description, ParamOptions options = {}) && {
    return add(ParamIn::body, std::move(name), std::move(description), std::move(options));
  }
  // A header sent with every request; `${NAME}` is read from the environment per call.
  RestToolBuilder header(std::string name, std::string value) && {
    def_.headers.emplace_back(std::move(name), std::move(value));
    return std::move(*this);
  }
  RestToolBuilder timeout(std::chrono::milliseconds value) && { return set(def_.timeout, value); }
  RestToolBuilder retries(int count, std::chrono::milliseconds delay = std::chrono::milliseconds(200)) && {
    def_.retries = count;
    def_.retry_delay = delay;
    return std::move(*this);
  }
  RestToolBuilder max_redirects(int hops) && { return set(def_.max_redirects, hops); }
  RestToolBuilder max_response_bytes(std::size_t bytes) && { return set(def_.max_response_bytes, bytes); }

  // Finishes the declaration; throws ToolDefinitionError on a wiring mistake.
  std::shared_ptr<const RestTool> build() && {
    static_assert(HasEffects,
                  "agentkit: declare .side_effecting(true) or .side_effecting(false) before .build(): a GET is not "
                  "assumed read-only, and approval gating and retries depend on knowing");
    return std::make_shared<const RestTool>(std::move(def_));
  }

 private:
  template <bool>
  friend class RestToolBuilder;
  explicit RestToolBuilder(RestToolDefinition def) : def_(std::move(def)) {}

  template <class T, class V>
  RestToolBuilder set(T& field, V&& value) {
    field = std::forward<V>(value);
    return std::move(*this);
  }
  RestToolBuilder add(ParamIn in, std::string name, std::string description, ParamOptions options) {
    def_.params.push_back(RestParam{std::move(name), in, std::move(description), std::move(options)});
    return std::move(*this);
  }

  RestToolDefinition def_;
};

// Starts a REST tool declaration. See the example at the top of this file.
inline RestToolBuilder<> rest_tool(std::string name) { return RestToolBuilder<>(std::move(name)); }

}  // namespace agentkit::providers
