#include <agentkit/error.h>

#include <agentkit/detail/enum_table.h>
#include <agentkit/json.h>
#include <agentkit/model.h>

namespace agentkit {
namespace {

constexpr EnumValue<ErrorCode> kErrorCodes[] = {
    {ErrorCode::invalid_argument, "invalid_argument"},
    {ErrorCode::not_found, "not_found"},
    {ErrorCode::already_exists, "already_exists"},
    {ErrorCode::permission_denied, "permission_denied"},
    {ErrorCode::unauthenticated, "unauthenticated"},
    {ErrorCode::rate_limited, "rate_limited"},
    {ErrorCode::quota_exceeded, "quota_exceeded"},
    {ErrorCode::overloaded, "overloaded"},
    {ErrorCode::unavailable, "unavailable"},
    {ErrorCode::timeout, "timeout"},
    {ErrorCode::truncated, "truncated"},
    {ErrorCode::protocol, "protocol"},
    {ErrorCode::cancelled, "cancelled"},
    {ErrorCode::budget_exhausted, "budget_exhausted"},
    {ErrorCode::aborted, "aborted"},
    {ErrorCode::outcome_unknown, "outcome_unknown"},
    {ErrorCode::data_loss, "data_loss"},
    {ErrorCode::unimplemented, "unimplemented"},
    {ErrorCode::internal, "internal"},
};

}  // namespace

std::string_view to_string(ErrorCode code) noexcept { return detail::enum_text(kErrorCodes, code, "internal"); }

std::optional<ErrorCode> error_code_from_string(std::string_view name) noexcept {
  return detail::enum_parse(kErrorCodes, name);
}

Failure failure_of(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const ModelError& e) {
    return {e.code(), e.what(), {}, e.http_status(), e.retryable(), e.retry_after()};
  } catch (const Error& e) {
    return {e.code(), e.what()};
  } catch (const std::exception& e) {
    return {ErrorCode::internal, e.what()};
  } catch (...) {
    return {ErrorCode::internal, "unknown error"};
  }
}

void write_failure(Json& doc, const std::optional<Failure>& failure) {
  doc["error"] = failure ? failure->message : std::string();
  if (!failure) return;
  doc["error_code"] = to_string(failure->code);
  Json details = Json::object();
  if (!failure->model.empty()) details["model"] = failure->model;
  if (failure->http_status != 0) details["http_status"] = failure->http_status;
  if (failure->retryable) details["retryable"] = true;
  if (failure->retry_after) details["retry_after_ms"] = failure->retry_after->count();
  if (!details.empty()) doc["failure"] = std::move(details);
}

Failure read_failure(const Json& doc, ErrorCode default_code, std::string_view what) {
  const std::string prefix = std::string(what) + ": ";
  Failure f{.code = default_code, .message = doc.at("error").get<std::string>()};
  if (auto code = doc.find("error_code"); code != doc.end()) {
    // RunState v3 wrote the providers' own names for two codes.
    const auto name = code->get<std::string>();
    const auto parsed = name == "invalid"      ? std::optional(ErrorCode::invalid_argument)
                        : name == "permission" ? std::optional(ErrorCode::permission_denied)
                                               : error_code_from_string(name);
    if (!parsed) throw Error(ErrorCode::invalid_argument, prefix + "unknown error code '" + name + "'");
    f.code = *parsed;
  }
  if (auto details = doc.find("failure"); details != doc.end()) {
    f.model = details->value("model", std::string());
    f.http_status = json_integer<int>(details->value("http_status", Json(0)), prefix + "failure.http_status");
    f.retryable = details->value("retryable", false);
    if (details->contains("retry_after_ms")) {
      f.retry_after = std::chrono::milliseconds(
          json_integer<std::int64_t>(details->at("retry_after_ms"), prefix + "failure.retry_after_ms"));
    }
  }
  return f;
}

}  // namespace agentkit
