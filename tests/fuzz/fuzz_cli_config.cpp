// The CLI's YAML loader (agentkit/cli/config.cpp): any file content loads
// or is a ConfigError naming the file; never another exception, a crash or
// UB. The input is written to agent.yaml in a private temporary directory
// (files it names relative to itself resolve there and do not exist).
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "../../agentkit/cli/config.h"
#include "fuzz_support.h"

namespace {

// Never destroyed: the atexit handler that removes the directory runs after
// static destructors.
const std::filesystem::path& agent_file() {
  static const auto* file = [] {
    std::string dir = (std::filesystem::temp_directory_path() / "agentkit-fuzz-XXXXXX").string();
    if (!mkdtemp(dir.data())) agentkit::fuzz::fail("mkdtemp failed");
    auto* path = new std::filesystem::path(std::filesystem::path(dir) / "agent.yaml");
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(agent_file().parent_path(), ignored);
    });
    return path;
  }();
  return *file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto& file = agent_file();
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const auto config = agentkit::cli::load_agent_config(file);
    AGENTKIT_FUZZ_CHECK(!config.name.empty() && !config.model.empty());
  } catch (const agentkit::cli::ConfigError& e) {
    AGENTKIT_FUZZ_CHECK(e.line() >= 0);
  } catch (const std::exception& e) {
    agentkit::fuzz::untyped(e);
  }
  return 0;
}
