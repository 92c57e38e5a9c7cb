// Model-authored tool arguments: text through parse_arguments() and into a
// function tool's typed parameters (a described struct with nested structs,
// enums, optionals, containers and variants; and a named-parameter tool with
// defaults and Extras). Every input ends in a ToolArgumentError or a call
// whose decoded values encode, decode and encode again to the same JSON.
//
// Input: byte 0 picks the tool and the limits, the rest is the argument text.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <agentkit/context.h>
#include <agentkit/function_tool.h>

#include "../core/spec_types.h"
#include "fuzz_support.h"

namespace fz {

struct Inner {
  std::string name;
  std::optional<int> count;
  std::vector<double> weights;
};

struct Params {
  std::string query;
  spec::Unit unit = spec::Unit::celsius;
  std::int64_t big = 0;
  std::uint8_t small = 0;
  float ratio = 0;
  bool flag = false;
  std::optional<std::string> note;
  std::vector<spec::Filter> filters;
  std::map<std::string, int> counts;
  std::set<std::string> tags;
  std::array<short, 2> pair{};
  std::variant<int, double, std::string> either;
  Inner inner;
  agentkit::Json extra;
};

}  // namespace fz

template <>
struct agentkit::Describe<fz::Inner> {
  static constexpr std::string_view name = "Inner";
  static constexpr auto fields = std::tuple{agentkit::field("name", &fz::Inner::name),
                                            agentkit::field("count", &fz::Inner::count),
                                            agentkit::field("weights", &fz::Inner::weights).defaulted()};
};

template <>
struct agentkit::Describe<fz::Params> {
  static constexpr std::string_view name = "Params";
  static constexpr auto fields = std::tuple{
      agentkit::field("query", &fz::Params::query),
      agentkit::field("unit", &fz::Params::unit).defaulted(),
      agentkit::field("big", &fz::Params::big).defaulted(),
      agentkit::field("small", &fz::Params::small).defaulted(),
      agentkit::field("ratio", &fz::Params::ratio).defaulted(),
      agentkit::field("flag", &fz::Params::flag).defaulted(),
      agentkit::field("note", &fz::Params::note),
      agentkit::field("filters", &fz::Params::filters).defaulted(),
      agentkit::field("counts", &fz::Params::counts).defaulted(),
      agentkit::field("tags", &fz::Params::tags).defaulted(),
      agentkit::field("pair", &fz::Params::pair).defaulted(),
      agentkit::field("either", &fz::Params::either).defaulted(),
      agentkit::field("inner", &fz::Params::inner).defaulted(),
      agentkit::field("extra", &fz::Params::extra).defaulted()};
};

namespace {

using agentkit::Json;

const agentkit::ToolPtr& struct_tool() {
  static const agentkit::ToolPtr tool = agentkit::tool("struct_target")
                                            .doc("A tool whose whole argument object is one described struct.")
                                            .side_effecting(false)
                                            .fn([](const fz::Params& p) { return p; });
  return tool;
}

const agentkit::ToolPtr& named_tool() {
  static const agentkit::ToolPtr tool =
      agentkit::tool("named_target")
          .doc("A tool with named parameters, defaults, a context and extra keys.")
          .side_effecting(false)
          .params("name", "filter", agentkit::opt("unit", spec::Unit::fahrenheit), agentkit::opt("days", 3),
                  agentkit::opt("mode", spec::Mode::daily), agentkit::opt("payload", Json::object()))
          .fn([](agentkit::RunContext&, const std::string& name, const spec::Filter& filter, spec::Unit unit, int days,
                 spec::Mode mode, const Json& payload, const agentkit::Extras& extras) {
            return Json{{"name", name},
                        {"filter", agentkit::encode(filter)},
                        {"unit", agentkit::encode(unit)},
                        {"days", days},
                        {"mode", agentkit::encode(mode)},
                        {"payload", payload},
                        {"extras", extras.values}};
          });
  return tool;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool use_struct = data[0] % 2 == 0;
  agentkit::JsonLimits limits;
  if (data[0] & 2) limits = {.max_depth = 4, .max_bytes = 256, .max_string_bytes = 16};
  const std::string_view text = agentkit::fuzz::as_text(data + 1, size - 1);
  const auto& tool = use_struct ? struct_tool() : named_tool();

  Json args;
  try {
    args = agentkit::parse_arguments(tool->spec().name, text, limits);
  } catch (const agentkit::ToolArgumentError&) {
    return 0;
  } catch (const std::exception& e) {
    agentkit::fuzz::untyped(e);
  }
  agentkit::RunContext ctx;
  Json result;
  try {
    result = tool->run(args, ctx);
  } catch (const agentkit::ToolArgumentError&) {
    return 0;
  } catch (const std::exception& e) {
    agentkit::fuzz::untyped(e);
  }
  AGENTKIT_FUZZ_CHECK(result.is_object());
  (void)result.dump();  // decoded strings are valid UTF-8
  if (use_struct) {
    // What was accepted is a fixed point: decoding its encoding changes nothing.
    try {
      const auto again = agentkit::decode<fz::Params>(result, "round trip", limits);
      AGENTKIT_FUZZ_CHECK(agentkit::encode(again) == result);
    } catch (const agentkit::ToolArgumentError& e) {
      agentkit::fuzz::fail(std::string("an accepted value does not decode again: ") + e.what());
    }
  }
  return 0;
}
