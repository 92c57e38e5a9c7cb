// Library code never logs to spdlog's process-wide default logger: it logs to
// the logger it was given (ctx.logger, an options logger) or nowhere.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <agentkit/executor.h>
#include <agentkit/function_tool.h>
#include <agentkit/invoker.h>
#include <agentkit/skills.h>

namespace fs = std::filesystem;
using agentkit::RunContext;
using agentkit::ToolRequest;

namespace {

// A logger whose lines can be read back.
struct Capture {
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);
  std::shared_ptr<spdlog::logger> logger = std::make_shared<spdlog::logger>("capture", sink);
  Capture() { logger->set_level(spdlog::level::trace); }
  std::string text() const {
    std::string out;
    for (const auto& line : sink->last_formatted()) out += line;
    return out;
  }
};

// Replaces spdlog's default logger with a capturing one for the test's span.
struct DefaultLoggerSwap {
  std::shared_ptr<spdlog::logger> saved = spdlog::default_logger();
  Capture capture;
  DefaultLoggerSwap() { spdlog::set_default_logger(capture.logger); }
  ~DefaultLoggerSwap() { spdlog::set_default_logger(saved); }
};

// Two skill roots defining the same skill: discovery warns about the override.
struct OverriddenSkill {
  fs::path root = fs::temp_directory_path() / ("agentkit-logging-" + std::to_string(std::random_device{}()));
  OverriddenSkill() {
    for (const char* dir : {"a", "b"}) {
      fs::create_directories(root / dir / "review");
      std::ofstream(root / dir / "review" / "SKILL.md") << "---\nname: review\ndescription: Review code.\n---\nSteps.\n";
    }
  }
  ~OverriddenSkill() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

// Logs through every library path exercised here, with `logger` (or none).
void provoke_warnings(const std::shared_ptr<spdlog::logger>& logger) {
  auto broken = agentkit::tool("broken")
                    .doc("Always fails; stands in for a tool whose failure is logged.")
                    .side_effecting(false)
                    .fn([] {
                      throw std::runtime_error("disk on fire");
                      return 0;
                    });
  agentkit::Invoker invoker({agentkit::error_boundary(), agentkit::logging()});
  RunContext ctx;
  ctx.logger = logger;
  auto result = invoker.invoke_tool(ToolRequest{.call_id = "c1", .name = "broken", .arguments = agentkit::Json::object(), .tool = broken}, ctx);
  CHECK(result.status == agentkit::ToolResult::Status::error);

  OverriddenSkill skills;
  agentkit::Skills registry({skills.root / "a", skills.root / "b"}, logger);
  CHECK(registry.warnings().size() == 1);

  {
    agentkit::ThreadPoolExecutor pool(1, logger);
    pool.submit([] { throw std::runtime_error("work exploded"); });
  }  // joined: the report has been written
}

}  // namespace

TEST_CASE("Without a logger, library code writes nothing to spdlog's default logger", "[logging]") {
  DefaultLoggerSwap swap;
  provoke_warnings(nullptr);
  CHECK(swap.capture.text().empty());
}

TEST_CASE("With a logger, library code writes there and never to the default logger", "[logging]") {
  DefaultLoggerSwap swap;
  Capture mine;
  provoke_warnings(mine.logger);
  CHECK(swap.capture.text().empty());
  CHECK_THAT(mine.text(), Catch::Contains("disk on fire"));             // error_boundary
  CHECK_THAT(mine.text(), Catch::Contains("skill 'review'"));           // skills override warning
  CHECK_THAT(mine.text(), Catch::Contains("work exploded"));            // executor report
  CHECK_THAT(mine.text(), Catch::Contains("tool 'broken' (call c1)"));  // logging()
}
