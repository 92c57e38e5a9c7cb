#pragma once
// Shared by the libFuzzer targets: a failed property aborts with a message,
// which libFuzzer reports as a crash and saves the input for.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>

#include <fuzzer/FuzzedDataProvider.h>

namespace agentkit::fuzz {

[[noreturn]] inline void fail(std::string_view what) {
  std::fprintf(stderr, "fuzz property failed: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

// An exception that is not one of the target's typed errors.
[[noreturn]] inline void untyped(const std::exception& e) {
  fail(std::string("untyped exception ") + typeid(e).name() + ": " + e.what());
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace agentkit::fuzz

#define AGENTKIT_FUZZ_CHECK(cond)                                              \
  do {                                                                         \
    if (!(cond)) ::agentkit::fuzz::fail(#cond " (" __FILE__ ":" + std::to_string(__LINE__) + ")"); \
  } while (0)
