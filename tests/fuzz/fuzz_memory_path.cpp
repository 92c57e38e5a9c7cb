// The memory tool's path validator: any text is a MemoryError (whose message
// is valid UTF-8, fit for the model) or a path whose every segment is one
// plain file name that cannot leave the tree, and whose normalised form
// parses to itself. child() and parent() keep those properties.
//
// Input: the path; after a first newline, a name for child().
#include <cstdint>
#include <stdexcept>
#include <string>

#include <agentkit/json.h>
#include <agentkit/state/memory_tool.h>

#include "fuzz_support.h"

namespace {

using agentkit::state::MemoryError;
using agentkit::state::MemoryPath;

void check_path(const MemoryPath& path) {
  AGENTKIT_FUZZ_CHECK(path.str().rfind("/memories", 0) == 0);
  AGENTKIT_FUZZ_CHECK(path.str().size() <= agentkit::state::kMaxMemoryPathBytes);
  AGENTKIT_FUZZ_CHECK(agentkit::is_valid_utf8(path.str()));
  std::string joined = "/memories";
  for (const auto& segment : path.segments()) {
    AGENTKIT_FUZZ_CHECK(!segment.empty() && segment != "." && segment != "..");
    AGENTKIT_FUZZ_CHECK(segment.size() <= agentkit::state::kMaxMemoryNameBytes);
    for (const unsigned char c : segment) AGENTKIT_FUZZ_CHECK(c >= 0x20 && c != 0x7f && c != '/' && c != '\\');
    joined += "/" + segment;
  }
  AGENTKIT_FUZZ_CHECK(joined == path.str());
  AGENTKIT_FUZZ_CHECK(MemoryPath::parse(path.str()) == path);
  AGENTKIT_FUZZ_CHECK(path.parent().contains(path) && path.contains(path) && MemoryPath::root().contains(path));
  AGENTKIT_FUZZ_CHECK(path.is_root() || path.parent().segments().size() + 1 == path.segments().size());
}

template <class F>
void refused_or_checked(F&& f) {
  try {
    check_path(f());
  } catch (const MemoryError& e) {
    AGENTKIT_FUZZ_CHECK(agentkit::is_valid_utf8(e.what()));
    AGENTKIT_FUZZ_CHECK(std::string_view(e.what()).find('\0') == std::string_view::npos);
  } catch (const std::exception& e) {
    agentkit::fuzz::untyped(e);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = agentkit::fuzz::as_text(data, size);
  const auto newline = input.find('\n');
  const std::string_view text = input.substr(0, newline);
  refused_or_checked([&] { return MemoryPath::parse(text); });
  if (newline == std::string_view::npos) return 0;
  const std::string_view name = input.substr(newline + 1);
  refused_or_checked([&] {
    const MemoryPath parent = MemoryPath::parse(text);
    const MemoryPath child = parent.child(name);
    AGENTKIT_FUZZ_CHECK(child.parent() == parent && child.name() == name);
    return child;
  });
  return 0;
}
