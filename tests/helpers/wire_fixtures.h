// The recorded provider traffic in ../shared/fixtures/wire, read in place,
// and the typed errors the provider tests expect.
#pragma once

#include "paths.h"
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <agentkit/json.h>
#include <agentkit/providers/sse.h>
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

// The first string at `pointer` (a JSON pointer: "/id", "/message/model")
// among the JSON documents of a recorded stream: the data of its SSE events,
// or its lines when `ndjson`. "" when none has one. What the recording says,
// read without the adapter under test.
inline std::string first_recorded(const std::string& body, const std::string& pointer, bool ndjson = false) {
  std::vector<std::string> documents;
  if (ndjson) {
    for (std::size_t at = 0; at < body.size();) {
      const std::size_t end = std::min(body.find('\n', at), body.size());
      documents.push_back(body.substr(at, end - at));
      at = end + 1;
    }
  } else {
    agentkit::providers::SseDecoder decoder;
    const agentkit::providers::SseDecoder::Sink sink = [&](const agentkit::providers::SseEvent& e) {
      documents.push_back(e.data);
    };
    decoder.feed(body, sink);
    decoder.finish(sink);
  }
  const agentkit::Json::json_pointer at(pointer);
  for (const auto& text : documents) {
    const agentkit::Json document = agentkit::Json::parse(text, nullptr, false);
    if (document.is_discarded() || !document.contains(at)) continue;
    const agentkit::Json& value = document[at];
    if (value.is_string() && !value.get_ref<const std::string&>().empty()) return value.get<std::string>();
  }
  return "";
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
    WARN("skipping the recorded traffic: " << AGENTKIT_SHARED_DIR << "/fixtures/wire/" folder " not found"); \
    return;                                                                                                   \
  }
