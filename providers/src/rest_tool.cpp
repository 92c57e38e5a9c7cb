// RestTool: validation of the declaration, argument decoding through the
// core's Codec/DecodeState, request building, and the send loop (retries per
// hop, redirects followed here because the transport never follows them, so
// each hop passes the egress check).
#include <agentkit/providers/rest_tool.h>

#include <agentkit/backoff.h>
#include <agentkit/redact.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <map>
#include <stdexcept>
#include <thread>

#include <agentkit/condition.h>
#include <agentkit/context.h>
#include <agentkit/egress.h>
#include <agentkit/errors.h>
#include <agentkit/function_tool.h>
#include <agentkit/invoker.h>
#include <agentkit/schema.h>

#include "trace_header.h"

namespace agentkit {
namespace providers {
namespace {

// A JSON object argument: any keys, depth-checked.
struct AnyObject {
  Json value;
};

}  // namespace
}  // namespace providers

template <>
struct Codec<providers::AnyObject> {
  static void schema(Schema& s) { s["type"] = "object"; }
  static bool decode(const Json& in, providers::AnyObject& out, DecodeState& st) {
    if (!in.is_object()) return st.type_error("object", in);
    if (!detail::check_depth(in, st)) return false;
    out.value = in;
    return true;
  }
  static Json encode(const providers::AnyObject& v) { return v.value; }
  static std::string type_name() { return "object"; }
};

namespace providers {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t kPreviewChars = 512;

template <class T>
struct Tag {
  using type = T;
};

// Calls fn(Tag<T>{}) with the C++ type whose Codec validates `type`.
template <class Fn>
decltype(auto) with_scalar_type(ParamType type, Fn&& fn) {
  switch (type) {
    case ParamType::integer:
      return fn(Tag<std::int64_t>{});
    case ParamType::number:
      return fn(Tag<double>{});
    case ParamType::boolean:
      return fn(Tag<bool>{});
    case ParamType::object:
      return fn(Tag<AnyObject>{});
    case ParamType::string:
    case ParamType::array:  // refused as an item type at definition
      break;
  }
  return fn(Tag<std::string>{});
}

template <class Fn>
decltype(auto) with_type(const ParamOptions& options, Fn&& fn) {
  if (options.type != ParamType::array) return with_scalar_type(options.type, fn);
  return with_scalar_type(options.items, [&](auto tag) {
    return fn(Tag<std::vector<typename decltype(tag)::type>>{});
  });
}

bool is_scalar(ParamType type) { return type != ParamType::array && type != ParamType::object; }

bool optional_param(const RestParam& p) { return !p.options.required || p.options.default_value.has_value(); }

// Decodes `value` as the parameter's type into `out` (canonical JSON).
bool decode_value(const RestParam& p, const Json& value, Json& out, DecodeState& st) {
  return with_type(p.options, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T decoded{};
    if (!Codec<T>::decode(value, decoded, st)) return false;
    out = Codec<T>::encode(decoded);
    return true;
  });
}

bool allowed_value(const RestParam& p, const Json& value) {
  const auto& allowed = p.options.allowed;
  return allowed.empty() || std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

Schema param_schema(const RestParam& p) {
  Schema s = with_type(p.options, [](auto tag) { return schema_of<typename decltype(tag)::type>(); });
  agentkit::detail::add_description(s, p.description);
  if (!p.options.allowed.empty()) s["enum"] = Schema(Json(p.options.allowed));
  if (p.options.default_value) s["default"] = Schema(*p.options.default_value);
  return s;
}

// ------------------------------------------------------------- text helpers

std::string percent_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// A scalar argument as it appears in a URL.
std::string scalar_text(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Throws `E` with `message`, secrets redacted (an agentkit::Error with
// `code` when E is not named).
template <class E = Error>
[[noreturn]] void fail(std::string message, const Redactor& secrets, ErrorCode code = ErrorCode::unavailable) {
  secrets.redact_in_place(message);
  if constexpr (std::is_same_v<E, Error>) {
    throw Error(code, message);
  } else {
    throw E(message);
  }
}

// Reports a problem by throwing; never returns.
using Complain = std::function<void(const std::string&)>;

// ------------------------------------------------------------ URL template

// "https://h/v1/{a}/x?k={b}" -> literals {"https://h/v1/", "/x?k=", ""}, names {"a", "b"}.
struct UrlTemplate {
  std::vector<std::string> literals;
  std::vector<std::string> names;
};

UrlTemplate parse_template(std::string_view text, const Complain& error) {
  UrlTemplate t;
  std::string literal;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '}') error("unmatched '}' in the URL template");
    if (text[i] != '{') {
      literal += text[i];
      continue;
    }
    const auto close = text.find('}', i);
    if (close == std::string_view::npos) error("unterminated '{' in the URL template");
    std::string name(text.substr(i + 1, close - i - 1));
    const bool valid = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
      return std::isalnum(c) || c == '_' || c == '-';
    });
    if (!valid) error("invalid placeholder '{" + name + "}' in the URL template");
    t.literals.push_back(std::move(literal));
    literal.clear();
    t.names.push_back(std::move(name));
    i = close;
  }
  t.literals.push_back(std::move(literal));
  return t;
}

// ---------------------------------------------------------- header values

// "Bearer ${TOKEN}" -> pieces {"Bearer ", "TOKEN"} with is_variable flags.
struct HeaderPiece {
  std::string text;
  bool variable = false;
};

std::vector<HeaderPiece> parse_header_value(std::string_view value, const Complain& error) {
  std::vector<HeaderPiece> pieces;
  std::string literal;
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (value.compare(i, 2, "${") != 0) {
      literal += value[i];
      continue;
    }
    const auto close = value.find('}', i);
    if (close == std::string_view::npos) error("unterminated '${' in a header value");
    std::string name(value.substr(i + 2, close - i - 2));
    const bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                       std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
    if (!valid) error("invalid environment variable name '${" + name + "}' in a header value");
    if (!literal.empty()) pieces.push_back({std::move(literal), false});
    literal.clear();
    pieces.push_back({std::move(name), true});
    i = close;
  }
  if (!literal.empty()) pieces.push_back({std::move(literal), false});
  return pieces;
}

bool valid_header_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

// ---------------------------------------------------------------- redirects

bool is_redirect(int status) { return status == 301 || status == 302 || status == 303 || status == 307 || status == 308; }

bool transient(int status) { return status == 408 || status == 429 || status == 500 || status == 502 || status == 503 || status == 504; }

void erase_header(Headers& headers, std::string_view name) {
  std::erase_if(headers, [&](const auto& h) { return lower(h.first) == name; });
}

// Waits out a retry delay; a cancellation or deadline ends the wait and the call.
void pause(milliseconds delay, const RunContext& ctx) {
  ctx.cancellation.sleep_for(delay);
  if (ctx.cancelled()) throw Error(ErrorCode::cancelled, "the call was cancelled while waiting to retry");
}

// ------------------------------------------------------- definition checks

Complain refusal(const std::string& tool) {
  return [tool](const std::string& what) { throw ToolDefinitionError("REST tool '" + tool + "': " + what); };
}

void check_policy(const RestToolDefinition& def, const Complain& refuse) {
  if (!def.side_effecting) {
    refuse("declare side_effecting (true or false): a GET is not assumed read-only, and approval gating and retries "
           "depend on knowing");
  }
  static const std::vector<std::string> kMethods = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"};
  if (std::find(kMethods.begin(), kMethods.end(), def.method) == kMethods.end()) {
    refuse("method '" + def.method + "' is not one of GET, HEAD, POST, PUT, PATCH, DELETE");
  }
  if (def.timeout.count() <= 0) refuse("the timeout must be positive");
  if (def.retries < 0 || def.max_redirects < 0) refuse("retries and max_redirects must not be negative");
  if (def.retry_delay.count() < 0 || def.max_retry_delay.count() < 0) refuse("retry delays must not be negative");
  if (def.max_response_bytes == 0) refuse("max_response_bytes must be positive");
  if (def.retries > 0 && *def.side_effecting && !def.idempotent) {
    refuse("retries would repeat a side-effecting call; declare it idempotent if a repeat is safe, or drop retries");
  }
}

// The template's fixed origin. Placeholders may only follow the host, so the
// model never chooses where to connect.
Url check_url(const std::string& url, const UrlTemplate& tmpl, const Complain& refuse) {
  const auto scheme_end = url.find("://");
  const auto origin_end = scheme_end == std::string::npos ? std::string::npos : url.find_first_of("/?#", scheme_end + 3);
  const std::string origin = url.substr(0, origin_end);
  if (origin.find_first_of("{}") != std::string::npos) refuse("placeholders are allowed only after the host in the URL");
  if (url.find('#') != std::string::npos) refuse("the URL template must not have a fragment");
  std::string sample = tmpl.literals[0];
  for (std::size_t i = 0; i < tmpl.names.size(); ++i) sample += "x" + tmpl.literals[i + 1];
  try {
    parse_url(sample);
    return parse_url(origin);
  } catch (const UrlError& e) {
    refuse(std::string("invalid URL: ") + e.what());
  }
  return {};
}

void check_param(const RestParam& p, const std::string& method, const UrlTemplate& tmpl, const Complain& refuse) {
  const std::string where = "parameter '" + p.name + "'";
  const ParamOptions& o = p.options;
  if (o.type == ParamType::array && o.items == ParamType::array) {
    refuse(where + ": arrays of arrays are not supported; use type object");
  }
  if (p.in == ParamIn::path) {
    if (!is_scalar(o.type)) refuse(where + " goes in the path and must be a string, integer, number or boolean");
    if (optional_param(p) && !o.default_value) refuse(where + " goes in the path, so it needs a value or a default");
    if (std::find(tmpl.names.begin(), tmpl.names.end(), p.name) == tmpl.names.end()) {
      refuse(where + " goes in the path but the URL has no '{" + p.name + "}'");
    }
  }
  if (p.in == ParamIn::query && o.type == ParamType::object) refuse(where + ": a query parameter cannot be an object");
  if (p.in == ParamIn::query && o.type == ParamType::array && !is_scalar(o.items)) {
    refuse(where + ": a query array must hold strings, integers, numbers or booleans");
  }
  if (p.in == ParamIn::body && (method == "GET" || method == "HEAD")) {
    refuse(where + " goes in the body, but a " + method + " has none");
  }
  DecodeState st;
  Json ignored;
  if (o.default_value && !decode_value(p, *o.default_value, ignored, st)) {
    refuse(where + ": the default does not fit its type (" + st.summary() + ")");
  }
  for (const auto& v : o.allowed) {
    if (!decode_value(p, v, ignored, st)) refuse(where + ": allowed value " + preview(v) + " does not fit its type");
  }
  if (o.default_value && !allowed_value(p, *o.default_value)) refuse(where + ": the default is not one of the allowed values");
}

void check_placeholders(const UrlTemplate& tmpl, const std::vector<RestParam>& params, const Complain& refuse) {
  for (const auto& name : tmpl.names) {
    const bool declared = std::any_of(params.begin(), params.end(),
                                      [&](const RestParam& p) { return p.name == name && p.in == ParamIn::path; });
    if (!declared) refuse("the URL placeholder '{" + name + "}' is not declared as a path parameter");
  }
}

void check_headers(const Headers& headers, const Complain& refuse) {
  for (const auto& [name, value] : headers) {
    if (!valid_header_name(name)) refuse("invalid header name '" + name + "'");
    if (value.find_first_of("\r\n") != std::string::npos || value.find('\0') != std::string::npos) {
      refuse("header '" + name + "' has a line break in its value");
    }
    parse_header_value(value, refuse);
  }
}

// ---------------------------------------------------------------- responses

// The body as JSON when the response says it is JSON (and it parses), else
// as text; null when empty. Invalid UTF-8 is replaced.
Json body_value(const HttpResponse& r, const std::string& method, const std::string& tool, std::size_t max_bytes) {
  if (r.body.empty() || method == "HEAD") return nullptr;
  if (lower(r.header("content-type").value_or("")).find("json") != std::string::npos) {
    try {
      return parse_arguments(tool, r.body, JsonLimits{.max_bytes = max_bytes, .max_string_bytes = max_bytes});
    } catch (const ToolArgumentError&) {
      // Not the JSON it claims to be: the text follows.
    }
  }
  const Json text(r.body);
  return is_valid_utf8(r.body) ? text : Json::parse(canonical_dump(text));
}

// Turns `request` into the next hop of a redirect from `from`: the target is
// checked against the egress list, credentials do not leave their origin, and
// 303 (or 301/302 after a POST) continues as a bodiless GET.
Url follow_redirect(HttpRequest& request, const Url& from, int status, std::string_view location,
                    const std::vector<std::string>& secret_headers, const Redactor& secrets,
                    const RunContext& ctx) {
  Url next;
  try {
    next = resolve_url(from, location);
  } catch (const UrlError& e) {
    // Under an allowlist the refusal reads as the allowlist's (a denial).
    if (ctx.egress) throw EgressDenied(std::string("invalid URL: ") + e.what());
    fail(std::string("redirect to an invalid URL refused: ") + e.what(), secrets);
  }
  check_egress(ctx, next.str());
  if (from.scheme == "https" && next.scheme == "http") fail("redirect from https to http refused", secrets, ErrorCode::permission_denied);
  if (!next.same_origin(from)) {
    for (const char* name : {"authorization", "proxy-authorization", "cookie"}) erase_header(request.headers, name);
    for (const auto& name : secret_headers) erase_header(request.headers, name);
  }
  const bool to_get = (status == 303 && request.method != "HEAD") ||
                      ((status == 301 || status == 302) && request.method == "POST");
  if (to_get) {
    request.method = "GET";
    request.body.clear();
    erase_header(request.headers, "content-type");
  }
  return next;
}

}  // namespace

// What one call sends, resolved from the arguments and the environment.
struct RestTool::Prepared {
  Url url;
  std::string body;
  Headers headers;
  Redactor secrets;                         // resolved variable values, for redaction
  std::vector<std::string> secret_headers;  // lower-cased names of headers carrying them
};

Json RestResponse::metadata() const {
  std::string content_type;
  for (const auto& [name, value] : headers) {
    if (name == "content-type") content_type = value;
  }
  return Json{{"status", status}, {"url", url}, {"content_type", content_type}, {"attempts", attempts},
              {"redirects", redirects}};
}

RestTool::RestTool(RestToolDefinition definition) : def_(std::move(definition)) {
  std::transform(def_.method.begin(), def_.method.end(), def_.method.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  const Complain refuse = refusal(def_.name);
  check_policy(def_, refuse);
  const UrlTemplate tmpl = parse_template(def_.url, refuse);
  const Url origin = check_url(def_.url, tmpl, refuse);
  Schema properties = Schema::object();
  Schema required = Schema::array();
  for (const auto& p : def_.params) {
    check_param(p, def_.method, tmpl, refuse);
    properties[p.name] = param_schema(p);
    if (!optional_param(p)) required.push_back(p.name);
    accepted_.push_back(p.name);
  }
  check_placeholders(tmpl, def_.params, refuse);
  check_headers(def_.headers, refuse);
  if (!def_.approve_if.empty() && !def_.approval_when) {
    try {
      def_.approval_when = Condition::parse(def_.approve_if).approval_rule();
    } catch (const ConditionSyntaxError& e) {
      refuse(e.what());
    }
  }

  Schema parameters = Schema::object();
  parameters["type"] = "object";
  parameters["properties"] = std::move(properties);
  if (!required.empty()) parameters["required"] = std::move(required);
  parameters["additionalProperties"] = false;  // run() refuses unknown keys; the schema says so, and check_arguments agrees
  agentkit::detail::ToolDraft draft;
  draft.spec.name = def_.name;
  draft.explicit_description = def_.description;
  draft.spec.effects = Effects{*def_.side_effecting, def_.idempotent, def_.requires_approval};
  draft.spec.approval_when = def_.approval_when;
  draft.spec.tags = def_.tags;
  draft.spec.metadata = Json{{"url", origin.origin()}, {"method", def_.method}};
  agentkit::detail::finish_spec(draft, std::move(parameters), accepted_);
  spec_ = std::move(draft.spec);

  // The tool owns its retries: the transport sends each request once.
  transport_ = std::make_shared<Transport>(TransportOptions{.connect_timeout = std::min(def_.timeout, milliseconds(10'000)),
                                                            .total_timeout = def_.timeout,
                                                            .idle_timeout = def_.timeout,
                                                            .max_retries = 0});
}

RestTool::Prepared RestTool::prepare(const Json& arguments) const {
  if (!arguments.is_object()) {
    throw ToolArgumentError(spec_.name, {}, {},
                            {{"(arguments)", "expected a JSON object, got " + std::string(json_type_name(arguments)) +
                                                 " " + preview(arguments)}},
                            accepted_);
  }
  DecodeState st;
  for (const auto& [key, value] : arguments.items()) {
    if (std::find(accepted_.begin(), accepted_.end(), key) == accepted_.end()) st.report_unexpected(key);
  }
  std::map<std::string, Json> values;
  for (const auto& p : def_.params) {
    const auto it = arguments.find(p.name);
    if (it == arguments.end() || it->is_null()) {
      if (p.options.default_value) {
        values[p.name] = *p.options.default_value;
      } else if (!optional_param(p)) {
        st.report_missing(p.name);
      }
      continue;
    }
    DecodeState::Scope scope(st, p.name);
    Json value;
    if (!decode_value(p, *it, value, st)) continue;
    if (!allowed_value(p, value)) {
      st.fail(agentkit::detail::not_one_of(Json(p.options.allowed), value));
      continue;
    }
    if (p.in == ParamIn::path) {
      const std::string text = scalar_text(value);
      if (text.empty() || text == "." || text == "..") {
        st.fail(text.empty() ? "must not be empty (it is a URL path segment)" : "'" + text + "' is not allowed as a path segment");
        continue;
      }
    }
    values[p.name] = std::move(value);
  }
  if (!st.ok()) {
    throw ToolArgumentError(spec_.name, std::move(st.missing), std::move(st.unexpected), std::move(st.invalid),
                            accepted_);
  }

  Prepared out;
  const Complain refuse = refusal(def_.name);  // validated at construction: never called
  const UrlTemplate tmpl = parse_template(def_.url, refuse);
  std::string url = tmpl.literals[0];
  for (std::size_t i = 0; i < tmpl.names.size(); ++i) {
    url += percent_encode(scalar_text(values.at(tmpl.names[i]))) + tmpl.literals[i + 1];
  }
  Json body = Json::object();
  bool has_body_params = false;
  for (const auto& p : def_.params) {
    has_body_params = has_body_params || p.in == ParamIn::body;
    const auto it = values.find(p.name);
    if (it == values.end()) continue;
    if (p.in == ParamIn::body) body[p.name] = it->second;
    if (p.in != ParamIn::query) continue;
    const Json items = it->second.is_array() ? it->second : Json::array({it->second});
    for (const auto& item : items) {
      const char sep = url.find('?') == std::string::npos ? '?' : (url.back() == '?' || url.back() == '&' ? '\0' : '&');
      if (sep) url += sep;
      url += percent_encode(p.name) + "=" + percent_encode(scalar_text(item));
    }
  }
  out.url = parse_url(url);

  bool has_content_type = false;
  for (const auto& [name, value] : def_.headers) {
    std::string resolved;
    bool secret = false;
    for (const auto& piece : parse_header_value(value, refuse)) {
      if (!piece.variable) {
        resolved += piece.text;
        continue;
      }
      const char* env = std::getenv(piece.text.c_str());
      if (env == nullptr || *env == '\0') {
        throw Error(ErrorCode::invalid_argument, "environment variable " + piece.text + " (used in header '" + name +
                                                     "' of tool '" + spec_.name + "') is not set");
      }
      resolved += env;
      secret = true;
      out.secrets.add(env);
    }
    if (secret) out.secret_headers.push_back(lower(name));
    has_content_type = has_content_type || lower(name) == "content-type";
    out.headers.emplace_back(name, std::move(resolved));
  }
  if (has_body_params) {
    out.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (!has_content_type) out.headers.emplace_back("Content-Type", "application/json");
  }
  return out;
}

HttpResponse RestTool::send(const HttpRequest& request, const Prepared& prepared, RestResponse& response,
                            RunContext& ctx) const {
  const bool retry_safe = !*def_.side_effecting || def_.idempotent;
  const int attempts = 1 + def_.retries;  // retries > 0 only when retry_safe (checked at construction)
  for (int n = 1;; ++n) {
    ++response.attempts;
    std::optional<milliseconds> after;
    try {
      HttpResponse r = transport_->send(request, &ctx.cancellation);
      if (n >= attempts || !transient(r.status)) return r;
      after = retry_advice(r.status, r).after;
    } catch (const ProviderError& e) {
      if (e.code() == ErrorCode::cancelled || !e.retryable() || n >= attempts) {
        const bool maybe_sent = e.code() == ErrorCode::timeout || e.code() == ErrorCode::unavailable;
        if (!retry_safe && maybe_sent) {
          fail<OutcomeUnknownError>(
              std::string(e.what()) + "; the request may or may not have taken effect, so it was not retried",
              prepared.secrets);
        }
        fail(e.what(), prepared.secrets);
      }
    }
    pause(Backoff{.base = def_.retry_delay, .max = def_.max_retry_delay, .jitter = false}.delay(n, after), ctx);
  }
}

RestResponse RestTool::call(const Json& arguments, RunContext& ctx) const {
  const Prepared prepared = prepare(arguments);
  HttpRequest request{.method = def_.method, .headers = prepared.headers, .body = prepared.body, .any_status = true};
  detail::set_traceparent(request.headers, ctx.traceparent());
  Url url = prepared.url;
  RestResponse out;
  for (;;) {
    request.url = url.str();
    check_egress(ctx, request.url);
    HttpResponse r = send(request, prepared, out, ctx);
    const auto location = r.header("location");
    if (is_redirect(r.status) && location) {
      if (out.redirects >= def_.max_redirects) {
        fail("too many redirects (more than " + std::to_string(def_.max_redirects) + ")", prepared.secrets);
      }
      url = follow_redirect(request, url, r.status, *location, prepared.secret_headers, prepared.secrets, ctx);
      ++out.redirects;
      continue;
    }
    if (r.body.size() > def_.max_response_bytes) {
      if (r.status >= 200 && r.status < 300) {
        fail("the response body of " + std::to_string(r.body.size()) + " bytes exceeds the tool's limit of " +
                 std::to_string(def_.max_response_bytes) + " bytes",
             prepared.secrets);
      }
      r.body.resize(def_.max_response_bytes);  // an error page only feeds a preview
    }
    out.output = body_value(r, request.method, spec_.name, def_.max_response_bytes);
    out.status = r.status;
    out.url = request.url;
    out.headers = std::move(r.headers);
    prepared.secrets.redact_in_place(out.output);
    prepared.secrets.redact_in_place(out.url);
    return out;
  }
}

Json RestTool::run(const Json& arguments, RunContext& ctx) const {
  RestResponse r = call(arguments, ctx);
  if (!r.ok()) {
    const std::string where = r.url.substr(0, r.url.find('?'));
    throw Error(ErrorCode::unavailable, "HTTP " + std::to_string(r.status) + " from " + where + ": " +
                                            preview(r.output, kPreviewChars));
  }
  Json metadata = r.metadata();
  return Json{{"output", std::move(r.output)}, {"metadata", std::move(metadata)}};
}

}  // namespace providers
}  // namespace agentkit
