// Tool contract benchmarks: schema derivation, decode+validate of a 5-field
// struct, and a call through the registry. Prints ns/op; run with `make bench`.
#include <chrono>
#include <cstdio>
#include <string>
#include <tuple>

#include <agentkit/function_tool.h>
#include <agentkit/registry.h>
#include <agentkit/testing/test_context.h>

namespace {

enum class Priority { low, normal, high };

struct Ticket {
  std::string title;
  std::string body;
  int assignee = 0;
  double estimate = 1.0;
  Priority priority = Priority::normal;
};

}  // namespace

template <>
struct agentkit::Describe<Priority> {
  static constexpr std::string_view name = "Priority";
  static constexpr auto values =
      agentkit::enum_values<Priority>({{Priority::low, "low"}, {Priority::normal, "normal"}, {Priority::high, "high"}});
};

template <>
struct agentkit::Describe<Ticket> {
  static constexpr std::string_view name = "Ticket";
  static constexpr auto fields = std::tuple{
      agentkit::field("title", &Ticket::title, "One-line summary"), agentkit::field("body", &Ticket::body),
      agentkit::field("assignee", &Ticket::assignee), agentkit::field("estimate", &Ticket::estimate).defaulted(),
      agentkit::field("priority", &Ticket::priority).defaulted()};
};

namespace {

template <class F>
double ns_per_op(F&& f) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < 1000; ++i) f();  // warm up
  std::size_t iterations = 1000;
  for (;;) {
    const auto start = clock::now();
    for (std::size_t i = 0; i < iterations; ++i) f();
    const double elapsed = std::chrono::duration<double, std::nano>(clock::now() - start).count();
    if (elapsed > 2e8 || iterations >= (1u << 26)) return elapsed / static_cast<double>(iterations);
    iterations *= 4;
  }
}

std::size_t sink = 0;  // printed at the end so the work is not optimised away

}  // namespace

int main() {
  const agentkit::Json args = {{"title", "Printer on fire"}, {"body", "Third floor, again."}, {"assignee", 42},
                               {"estimate", 2.5}, {"priority", "high"}};

  const double schema_ns = ns_per_op([] { sink += agentkit::schema_of<Ticket>().size(); });

  const double decode_ns = ns_per_op([&] {
    agentkit::DecodeState st;
    Ticket t;
    agentkit::decode_into(args, t, st);
    sink += t.title.size() + static_cast<std::size_t>(st.ok());
  });

  auto file_ticket = agentkit::tool("file_ticket")
                         .doc("File a support ticket and return the assignee it was routed to.")
                         .side_effecting(true)
                         .fn([](const Ticket& t) { return t.assignee; });
  auto registry = agentkit::ToolRegistry::from_tools({file_ticket});
  for (int i = 0; i < 20; ++i) {
    registry.add(agentkit::tool("filler_" + std::to_string(i))
                     .doc("A filler tool so the registry holds a realistic number of tools.")
                     .side_effecting(false)
                     .fn([] { return 0; }));
  }
  auto ctx = agentkit::testing::make_test_ctx();
  const double call_ns = ns_per_op([&] {
    const auto tool = registry.find("file_ticket");
    sink += tool->run(args, ctx).get<int>();
  });

  std::printf("%-44s %10s %10s\n", "benchmark (tool contract)", "ns/op", "target");
  std::printf("%-44s %10.0f %10s\n", "schema derivation (5-field struct)", schema_ns, "-");
  std::printf("%-44s %10.0f %10s\n", "decode+validate (5-field struct)", decode_ns, "< 1000");
  std::printf("%-44s %10.0f %10s\n", "call through the registry (lookup+run)", call_ns, "< 2000");
  const bool ok = decode_ns < 1000 && call_ns < 2000;
  std::printf("targets %s (checksum %zu)\n", ok ? "met" : "MISSED", sink);
  return ok ? 0 : 1;
}
