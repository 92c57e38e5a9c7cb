// The CLI's YAML loader (agentkit/cli/config.cpp): any file content loads
// or is a ConfigError naming the file; never another exception, a crash or
// UB. The input is written to agent.yaml in a fresh temporary directory
// (files it names relative to itself resolve there and do not exist).
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "../../agentkit/cli/config.h"
#include "fuzz_support.h"

namespace {

// A private directory per input, removed after it (libFuzzer may end the
// process without running atexit handlers).
class TempDir {
 public:
  TempDir() {
    std::string dir = (std::filesystem::temp_directory_path() / "agentkit-fuzz-XXXXXX").string();
    if (!mkdtemp(dir.data())) agentkit::fuzz::fail("mkdtemp failed");
    path_ = dir;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const TempDir dir;
  const auto file = dir.path() / "agent.yaml";
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
