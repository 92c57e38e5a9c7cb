#include <agentkit/error.h>

#include <agentkit/detail/enum_table.h>
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

}  // namespace agentkit
