#pragma once
// Types shared by the core tests: the seed's Unit enum, a Quote result and a
// nested Filter struct.
#include <string>
#include <tuple>

#include <agentkit/schema.h>

namespace spec {

enum class Unit { celsius, fahrenheit };
enum class Mode { hourly, daily };

struct Quote {
  std::string symbol;
  double price = 0;
};

struct Range {
  int low = 0;
  int high = 10;
};

struct Filter {
  std::string query;
  int limit = 5;
  Range range;
};

}  // namespace spec

template <>
struct agentkit::Describe<spec::Unit> {
  static constexpr std::string_view name = "Unit";
  static constexpr auto values =
      agentkit::enum_values<spec::Unit>({{spec::Unit::celsius, "celsius"}, {spec::Unit::fahrenheit, "fahrenheit"}});
};

template <>
struct agentkit::Describe<spec::Mode> {
  static constexpr std::string_view name = "Mode";
  static constexpr auto values =
      agentkit::enum_values<spec::Mode>({{spec::Mode::hourly, "hourly"}, {spec::Mode::daily, "daily"}});
};

template <>
struct agentkit::Describe<spec::Quote> {
  static constexpr std::string_view name = "Quote";
  static constexpr auto fields = std::tuple{agentkit::field("symbol", &spec::Quote::symbol),
                                            agentkit::field("price", &spec::Quote::price)};
};

template <>
struct agentkit::Describe<spec::Range> {
  static constexpr std::string_view name = "Range";
  static constexpr auto fields = std::tuple{agentkit::field("low", &spec::Range::low, "Lowest value"),
                                            agentkit::field("high", &spec::Range::high, "Highest value").defaulted()};
};

template <>
struct agentkit::Describe<spec::Filter> {
  static constexpr std::string_view name = "Filter";
  static constexpr std::string_view description = "A catalogue filter";
  static constexpr auto fields =
      std::tuple{agentkit::field("query", &spec::Filter::query, "What to search for"),
                 agentkit::field("limit", &spec::Filter::limit, "At most this many hits").defaulted(),
                 agentkit::field("range", &spec::Filter::range, "Price range").defaulted()};
};
