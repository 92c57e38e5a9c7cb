#pragma once
// Shared by the libFuzzer targets: a failed property aborts with a message,
// which libFuzzer reports as a crash and saves the input for.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

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

// Where to cut a body of `size` bytes into chunks, from `seed` (0: no cuts):
// ascending positions inside the body, at most `max_step` apart.
inline std::vector<std::size_t> chunk_cuts(std::uint32_t seed, std::size_t size, std::uint32_t max_step) {
  std::vector<std::size_t> cuts;
  for (std::size_t at = 0; seed != 0;) {
    seed = seed * 1103515245u + 12345u;
    at += 1 + (seed >> 16) % max_step;
    if (at >= size) break;
    cuts.push_back(at);
  }
  return cuts;
}

// Hands `body` to `feed` in the chunks `cuts` makes, in order.
template <class Feed>
void feed_in_chunks(std::string_view body, const std::vector<std::size_t>& cuts, Feed&& feed) {
  std::size_t at = 0;
  for (const std::size_t cut : cuts) {
    feed(body.substr(at, cut - at));
    at = cut;
  }
  feed(body.substr(at));
}

}  // namespace agentkit::fuzz

#define AGENTKIT_FUZZ_CHECK(cond)                                              \
  do {                                                                         \
    if (!(cond)) ::agentkit::fuzz::fail(#cond " (" __FILE__ ":" + std::to_string(__LINE__) + ")"); \
  } while (0)
