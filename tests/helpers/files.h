// Reading a test's input files: fixtures, a CLI's output files.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace agentkit_test {

// The file's bytes, as they are ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace agentkit_test
