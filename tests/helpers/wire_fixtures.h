// The recorded provider traffic in ../shared/fixtures/wire, read in place,
// and the typed errors the provider tests expect.
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include <agentkit/providers/transport.h>

namespace agentkit_test {

// ../shared/fixtures/wire/<folder> ("" for the folder of folders), or
// nullopt when the shared fixtures are not there.
inline std::optional<std::filesystem::path> wire_fixtures(const std::string& folder = "") {
  std::filesystem::path dir = std::filesystem::path(AGENTKIT_SHARED_DIR) / "fixtures" / "wire";
  if (!folder.empty()) dir /= folder;
  if (!std::filesystem::is_directory(dir)) return std::nullopt;
  return dir;
}

// The ProviderError (or `E`) `f` throws; fails the test case when it throws none.
template <class E = agentkit::providers::ProviderError>
E error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e;
  }
  FAIL("no error of the expected type was thrown");
  throw std::logic_error("unreachable");
}

}  // namespace agentkit_test

// `dir` is ../shared/fixtures/wire/<folder>, or the test case says what is
// missing (a warning, not a pass of what it would have checked) and returns.
#define WIRE_FIXTURES_OR_SKIP(dir, folder)                                                                    \
  const auto dir = agentkit_test::wire_fixtures(folder);                                                      \
  if (!dir) {                                                                                                 \
    WARN("skipping the recorded traffic: " AGENTKIT_SHARED_DIR "/fixtures/wire/" folder " not found");       \
    return;                                                                                                   \
  }
