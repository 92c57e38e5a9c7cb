// The crash harnesses' summary lines: printed, and written to the build's
// summaries/ folder, which `make test` (and asan, tsan) prints after ctest,
// so `.ci/run` shows them even when every case passes.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "paths.h"

namespace agentkit_test {

inline void print_summary(const std::string& name, const std::string& line) {
  std::fputs(line.c_str(), stdout);
  const std::filesystem::path dir = AGENTKIT_SUMMARY_DIR;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / (name + ".txt")) << line;
}

}  // namespace agentkit_test
