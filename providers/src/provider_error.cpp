#include <agentkit/providers/transport.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>

#include <curl/curl.h>

#include <nlohmann/json.hpp>

namespace agentkit::providers {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
           return std::tolower(x) == std::tolower(y);
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<double> parse_number(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  // strtod wants a terminated string; header values are short.
  const std::string copy(s);
  char* end = nullptr;
  const double value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

// An HTTP date (IMF-fixdate, RFC 850 or asctime, RFC 9110 5.6.7), read by
// libcurl's date parser, the one that reads Expires and cookie dates.
std::optional<std::chrono::system_clock::time_point> parse_http_date(std::string_view s) {
  const std::string copy(trim(s));
  if (copy.empty()) return std::nullopt;
  const std::time_t when = curl_getdate(copy.c_str(), nullptr);
  if (when == -1) return std::nullopt;
  return std::chrono::system_clock::from_time_t(when);
}

// The longest wait a Retry-After can ask for; a larger (or absurd) value is
// read as this, never as an overflowed number.
constexpr std::chrono::milliseconds kMaxRetryAdvice = std::chrono::hours(24);

std::chrono::milliseconds clamped_ms(double ms) {
  if (!(ms < static_cast<double>(kMaxRetryAdvice.count()))) return kMaxRetryAdvice;
  return std::chrono::milliseconds(std::llround(ms));
}

struct ErrorBody {
  std::string message;
  std::string type;
  std::string code;
  std::string param;  // OpenAI: the request field it refused ("temperature")
};

std::string string_field(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return {};
  const auto it = j.find(key);
  if (it == j.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  return {};
}

// The fields of an `error` value: an object with message/type/code, or text.
ErrorBody error_fields(const nlohmann::json& error) {
  ErrorBody out;
  if (error.is_string()) {
    out.message = error.get<std::string>();
  } else {
    out.message = string_field(error, "message");
    out.type = string_field(error, "type");
    // Google's {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}}.
    if (out.type.empty() && error.is_object() && error.contains("status") && error["status"].is_string()) {
      out.type = error["status"].get<std::string>();
    }
    out.code = string_field(error, "code");
    out.param = string_field(error, "param");
  }
  return out;
}

// OpenAI {"error":{"message","type","code"}}, Anthropic {"type":"error","error":{"type","message"}},
// and the odd {"error":"text"} or {"message":"text"}.
std::optional<ErrorBody> parse_error_body(const std::string& body) {
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  ErrorBody out;
  if (const auto it = j.find("error"); it != j.end()) out = error_fields(*it);
  if (out.message.empty()) out.message = string_field(j, "message");
  return out;
}

// A spent quota does not come back by waiting a few seconds.
bool quota_exhausted(const ErrorBody& b) { return b.code == "insufficient_quota" || b.type == "insufficient_quota"; }
bool overloaded(const ErrorBody& b) { return b.type == "overloaded_error" || b.code == "overloaded_error"; }

// At most `max` bytes, cut on a UTF-8 boundary, control characters flattened.
std::string excerpt(std::string_view s, std::size_t max) {
  std::size_t n = std::min(max, s.size());
  while (n > 0 && n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  std::string out(s.substr(0, n));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  if (n < s.size()) out += "...";
  return out;
}

// Google's google.rpc.RetryInfo in an error body's details: "retryDelay": "37s".
std::optional<std::chrono::milliseconds> google_retry_delay(const std::string& body) {
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("error") || !j["error"].is_object()) return std::nullopt;
  const auto details = j["error"].find("details");
  if (details == j["error"].end() || !details->is_array()) return std::nullopt;
  for (const auto& d : *details) {
    if (!d.is_object() || string_field(d, "@type") != "type.googleapis.com/google.rpc.RetryInfo") continue;
    const std::string delay = string_field(d, "retryDelay");
    if (delay.empty() || delay.back() != 's') continue;
    if (const auto v = parse_number(std::string_view(delay).substr(0, delay.size() - 1)); v && *v >= 0) {
      return clamped_ms(*v * 1000.0);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string_view> HttpResponse::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return std::string_view(value);
  }
  return std::nullopt;
}

RetryAdvice retry_advice(int status, const HttpResponse& response) {
  RetryAdvice advice;
  if (const auto ms = response.header("retry-after-ms")) {
    if (const auto v = parse_number(*ms); v && *v >= 0) advice.after = clamped_ms(*v);
  }
  if (!advice.after) {
    if (const auto ra = response.header("retry-after")) {
      if (const auto v = parse_number(*ra)) {
        if (*v >= 0) advice.after = clamped_ms(*v * 1000.0);
      } else if (const auto when = parse_http_date(*ra)) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*when - std::chrono::system_clock::now());
        advice.after = std::clamp(left, std::chrono::milliseconds(0), kMaxRetryAdvice);  // a past date: now
      }
    }
  }
  if (!advice.after && !response.body.empty()) advice.after = google_retry_delay(response.body);
  if (const auto should = response.header("x-should-retry")) {
    if (iequals(trim(*should), "true")) {
      advice.retry = true;
      return advice;
    }
    if (iequals(trim(*should), "false")) return advice;
  }
  advice.retry = status == 408 || status == 409 || status == 429 || status >= 500;
  if (status == 429) {
    if (const auto body = parse_error_body(response.body); body && quota_exhausted(*body)) advice.retry = false;
  }
  return advice;
}

ProviderError error_from_response(const HttpResponse& response) {
  const int status = response.status;
  const auto body = parse_error_body(response.body);
  const bool quota = body && quota_exhausted(*body);

  ErrorCode code = ErrorCode::protocol;
  if (quota) {
    code = ErrorCode::quota_exceeded;
  } else if (status == 529 || (body && overloaded(*body))) {
    code = ErrorCode::overloaded;
  } else if (status == 401) {
    code = ErrorCode::unauthenticated;
  } else if (status == 403) {
    code = ErrorCode::permission_denied;
  } else if (status == 408) {
    code = ErrorCode::timeout;
  } else if (status == 429) {
    code = ErrorCode::rate_limited;
  } else if (status >= 500) {
    code = ErrorCode::unavailable;
  } else if (status >= 400) {
    code = ErrorCode::invalid_argument;  // 400, 404, 409, 413, 422 and the other 4xx
  }

  std::string message;
  if (body && !body->message.empty()) {
    message = excerpt(body->message, 300);
  } else if (!body && !response.body.empty()) {
    message = excerpt(response.body, 200);
  } else {
    message = std::string(to_string(code));
  }
  if (body && !body->param.empty()) {
    message += " (param '" + excerpt(body->param, 60) + "')";
  }
  message += " (HTTP " + std::to_string(status) + ")";

  const RetryAdvice advice = retry_advice(status, response);
  return ProviderError(code, std::move(message), status, advice.retry && !quota, advice.after);
}

namespace detail {

namespace {

ErrorCode error_code_of(const ErrorBody& b) {
  ErrorCode mapped = ErrorCode::unavailable;
  if (overloaded(b)) {
    mapped = ErrorCode::overloaded;
  } else if (quota_exhausted(b)) {
    mapped = ErrorCode::quota_exceeded;
  } else if (b.type == "rate_limit_error" || b.code == "rate_limit_exceeded" || b.type == "requests" ||
             b.type == "tokens") {
    mapped = ErrorCode::rate_limited;
  } else if (b.type == "invalid_request_error") {
    mapped = ErrorCode::invalid_argument;
  } else if (b.type == "authentication_error") {
    mapped = ErrorCode::unauthenticated;
  } else if (b.type == "permission_error") {
    mapped = ErrorCode::permission_denied;
  } else if (b.type == "RESOURCE_EXHAUSTED") {  // Google's canonical codes (Gemini)
    mapped = ErrorCode::rate_limited;
  } else if (b.type == "INVALID_ARGUMENT" || b.type == "FAILED_PRECONDITION" || b.type == "NOT_FOUND" ||
             b.type == "OUT_OF_RANGE") {
    mapped = ErrorCode::invalid_argument;
  } else if (b.type == "UNAUTHENTICATED") {
    mapped = ErrorCode::unauthenticated;
  } else if (b.type == "PERMISSION_DENIED") {
    mapped = ErrorCode::permission_denied;
  } else if (b.type == "DEADLINE_EXCEEDED") {
    mapped = ErrorCode::timeout;
  }
  return mapped;
}

std::string error_message(const ErrorBody& b) {
  std::string message = "provider error in response";
  if (!b.type.empty()) message.append(" (").append(b.type).append(")");
  message.append(": ").append(b.message.empty() ? std::string("no message") : excerpt(b.message, 300));
  return message;
}

}  // namespace

ProviderError stream_error(const nlohmann::json& error) {
  const ErrorBody b = error_fields(error);
  return ProviderError(error_code_of(b), error_message(b));
}

ProviderError reply_error(const nlohmann::json& error, const HttpResponse& head, std::string_view url) {
  const ErrorBody b = error_fields(error);
  const ErrorCode code = error_code_of(b);
  // Nothing of this reply reached the run: the body says whether to try again
  // (its error type, or x-should-retry), as a non-2xx status would.
  RetryAdvice advice = retry_advice(0, head);
  if (!head.header("x-should-retry")) {
    advice.retry = code == ErrorCode::rate_limited || code == ErrorCode::overloaded;
  }
  return ProviderError(code, error_message(b) + " (HTTP " + std::to_string(head.status) + " from " +
                                 url_for_messages(url) + ")",
                       head.status, advice.retry, advice.after);
}

}  // namespace detail

}  // namespace agentkit::providers
