#include <agentkit/events.h>

#include <agentkit/detail/enum_table.h>

namespace agentkit {
namespace {

constexpr EnumValue<StopReason> kStopReasons[] = {
    {StopReason::answered, "answered"},
    {StopReason::suspended, "suspended"},
    {StopReason::max_iterations, "max_iterations"},
    {StopReason::budget_exhausted, "budget_exhausted"},
    {StopReason::cancelled, "cancelled"},
    {StopReason::failed, "failed"},
    {StopReason::guardrail_tripped, "guardrail_tripped"},
};

constexpr EnumValue<CallStatus> kCallStatuses[] = {
    {CallStatus::ok, "ok"},
    {CallStatus::error, "error"},
    {CallStatus::denied, "denied"},
    {CallStatus::awaiting_approval, "awaiting_approval"},
    {CallStatus::outcome_unknown, "outcome_unknown"},
    {CallStatus::interrupted, "interrupted"},
};

constexpr EnumValue<ApprovalVerdict> kVerdicts[] = {
    {ApprovalVerdict::approved, "approved"},
    {ApprovalVerdict::edited, "edited"},
    {ApprovalVerdict::rejected, "rejected"},
};

}  // namespace

std::string_view to_string(StopReason reason) noexcept { return detail::enum_text(kStopReasons, reason); }
std::optional<StopReason> stop_reason_from_string(std::string_view name) noexcept {
  return detail::enum_parse(kStopReasons, name);
}
std::string_view to_string(CallStatus status) noexcept { return detail::enum_text(kCallStatuses, status); }
std::optional<CallStatus> call_status_from_string(std::string_view name) noexcept {
  return detail::enum_parse(kCallStatuses, name);
}
std::string_view to_string(ApprovalVerdict verdict) noexcept { return detail::enum_text(kVerdicts, verdict); }

const EventInfo& info_of(const Event& event) noexcept {
  return std::visit([](const auto& e) -> const EventInfo& { return e.info; }, event);
}
EventInfo& info_of(Event& event) noexcept {
  return std::visit([](auto& e) -> EventInfo& { return e.info; }, event);
}

}  // namespace agentkit
