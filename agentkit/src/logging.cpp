#include <agentkit/detail/logging.h>

#include <spdlog/logger.h>

namespace agentkit::detail {

const std::shared_ptr<spdlog::logger>& null_logger() {
  // Immutable after construction: level off, no sinks.
  static const std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>("agentkit.null");
    l->set_level(spdlog::level::off);
    return l;
  }();
  return logger;
}

}  // namespace agentkit::detail
