#pragma once
// Internal: where library code logs. Library code never falls back to
// spdlog's process-wide default logger (two runtimes in one process must not
// share output, and a host that set no logger gets no output): it logs to the
// logger it was given (ctx.logger, an options logger) or to nowhere.
#include <memory>

#include <spdlog/fwd.h>

namespace agentkit::detail {

// A logger with no sinks, never registered with spdlog: it writes nothing.
const std::shared_ptr<spdlog::logger>& null_logger();

// `logger`, or null_logger() when it is null.
inline const std::shared_ptr<spdlog::logger>& logger_or_null(const std::shared_ptr<spdlog::logger>& logger) {
  return logger ? logger : null_logger();
}

}  // namespace agentkit::detail
