// The middleware factories (spec 000 "side_effecting= is required, and three
// subsystems read it": idempotent(), memoize(); the chain "tracing, metering,
// egress, idempotent(), audit, retry").
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <agentkit/errors.h>
#include <agentkit/function_tool.h>
#include <agentkit/invoker.h>

#include "../helpers/timing.h"

using agentkit::AuditRecord;
using agentkit::Invoker;
using agentkit::Json;
using agentkit::Middleware;
using agentkit::Next;
using agentkit::RetryableToolError;
using agentkit::RetryPolicy;
using agentkit::RunContext;
using agentkit::Scope;
using agentkit::ToolPtr;
using agentkit::ToolRequest;
using agentkit::ToolResult;
using Status = agentkit::ToolResult::Status;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

// A tool whose body is `body(run number)`. The counters are shared so that a
// body still running on another thread never dangles.
struct Probe {
  std::shared_ptr<std::atomic<int>> runs = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<std::atomic<int>> finished = std::make_shared<std::atomic<int>>(0);
  ToolPtr tool;

  ToolRequest request(Json arguments = {{"q", "x"}}, std::string call_id = "c1") const {
    return ToolRequest{
        .call_id = std::move(call_id), .name = tool->name(), .arguments = std::move(arguments), .tool = tool};
  }
};

struct Effects {
  bool side_effecting = false;
  bool idempotent = false;
  std::vector<std::string> tags = {};
};

// The same, for a body that looks at the call's context.
Probe probe_ctx(std::string name, Effects effects, std::function<std::string(int, RunContext&)> body) {
  Probe p;
  p.tool = agentkit::tool(std::move(name))
               .doc("A probe tool for middleware tests; counts how often its body runs.")
               .side_effecting(effects.side_effecting)
               .idempotent(effects.idempotent)
               .tags(effects.tags)
               .params("q")
               .fn([runs = p.runs, finished = p.finished, body = std::move(body)](const std::string&, RunContext& ctx) {
                 const int n = ++*runs;
                 struct Done {
                   std::atomic<int>& finished;
                   ~Done() { ++finished; }
                 } done{*finished};
                 return body(n, ctx);
               });
  return p;
}

Probe probe(std::string name, Effects effects, std::function<std::string(int)> body) {
  return probe_ctx(std::move(name), effects, [body = std::move(body)](int n, RunContext&) { return body(n); });
}

Probe returning(std::string name, Effects effects, std::string value) {
  return probe(std::move(name), effects, [value = std::move(value)](int) { return value; });
}

Probe send_email_probe() {
  Probe p;
  p.tool = agentkit::tool("send_email")
               .doc("Send one email to a single recipient and return the provider message id.")
               .side_effecting(true)
               .params("to", "body")
               .fn([runs = p.runs](const std::string& to, const std::string&) {
                 ++*runs;
                 return "queued for " + to;
               });
  return p;
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit = 2s) {
  const auto until = Clock::now() + limit;
  while (!condition()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

std::chrono::milliseconds elapsed_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

RunContext run_ctx(std::string correlation_id = "run-1", Scope scope = {.org_id = 1, .domain_id = 1}) {
  RunContext ctx(std::move(scope));
  ctx.correlation_id = std::move(correlation_id);
  return ctx;
}

// A logger writing into `out`, at debug level.
std::shared_ptr<spdlog::logger> capture_logger(std::ostringstream& out) {
  auto logger =
      std::make_shared<spdlog::logger>("middleware_test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  logger->set_level(spdlog::level::debug);
  logger->set_pattern("%l %v");
  return logger;
}

RetryPolicy fast_retry(int attempts = 3) { return {.max_attempts = attempts, .base_delay = 1ms, .max_delay = 5ms}; }

}  // namespace

// ----------------------------------------------------------------- idempotent

TEST_CASE("idempotent(): send_email invoked twice runs once and both callers get its result", "[middleware][spec]") {
  auto send_email = send_email_probe();
  Invoker invoker({agentkit::idempotent()});
  auto ctx = run_ctx();
  const ToolRequest request{.name = "send_email",
                            .arguments = {{"to", "ops@example.com"}, {"body", "prod is down"}},
                            .tool = send_email.tool};

  auto first = invoker.invoke_tool(request, ctx);
  auto second = invoker.invoke_tool(request, ctx);  // a retry of the SAME call

  CHECK(first.model_text() == "queued for ops@example.com");
  CHECK(second.model_text() == "queued for ops@example.com");
  CHECK(second.is_ok());
  CHECK(*send_email.runs == 1);
}

TEST_CASE("idempotent(): settled entries older than the retention are dropped", "[middleware]") {
  auto send_email = send_email_probe();
  Invoker invoker({agentkit::idempotent(0ms)});  // everything settled is already past retention
  auto ctx = run_ctx();
  const ToolRequest request{.name = "send_email",
                            .arguments = {{"to", "ops@example.com"}, {"body", "prod is down"}},
                            .tool = send_email.tool};
  invoker.invoke_tool(request, ctx);
  // 255 other calls bring the table to its sweep point.
  for (int i = 0; i < 255; ++i) {
    ToolRequest other = request;
    other.arguments["body"] = "filler " + std::to_string(i);
    invoker.invoke_tool(other, ctx);
  }
  invoker.invoke_tool(request, ctx);  // evicted: runs again
  CHECK(*send_email.runs == 257);

  Invoker keeping({agentkit::idempotent()});  // default retention keeps the record
  const int before = *send_email.runs;
  for (int i = 0; i < 300; ++i) keeping.invoke_tool(request, ctx);
  CHECK(*send_email.runs == before + 1);
}

TEST_CASE("idempotent(): a concurrent duplicate waits for the call in flight", "[middleware]") {
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto send = probe("send", {.side_effecting = true}, [release](int n) {
    while (!*release) std::this_thread::sleep_for(1ms);
    return "sent #" + std::to_string(n);
  });
  Invoker invoker({agentkit::idempotent()});
  auto ctx_a = run_ctx();
  auto ctx_b = run_ctx();
  ToolResult a, b;

  std::thread first([&] { a = invoker.invoke_tool(send.request(), ctx_a); });
  REQUIRE(eventually([&] { return *send.runs == 1; }));
  std::thread second([&] { b = invoker.invoke_tool(send.request(), ctx_b); });
  std::this_thread::sleep_for(50ms);  // the duplicate is now waiting (or running, if broken)
  *release = true;
  first.join();
  second.join();

  CHECK(*send.runs == 1);
  CHECK(a.model_text() == "sent #1");
  CHECK(b.model_text() == "sent #1");
}

TEST_CASE("idempotent(): a waiter runs the call itself when the call in flight fails", "[middleware]") {
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto send = probe("send", {.side_effecting = true}, [release](int n) -> std::string {
    if (n == 1) {
      while (!*release) std::this_thread::sleep_for(1ms);
      throw std::runtime_error("smtp down");
    }
    return "sent #" + std::to_string(n);
  });
  Invoker invoker({agentkit::idempotent()});
  auto ctx_a = run_ctx();
  auto ctx_b = run_ctx();
  bool first_threw = false;
  ToolResult b;

  std::thread first([&] {
    try {
      invoker.invoke_tool(send.request(), ctx_a);
    } catch (const std::runtime_error&) {
      first_threw = true;
    }
  });
  REQUIRE(eventually([&] { return *send.runs == 1; }));
  std::thread second([&] { b = invoker.invoke_tool(send.request(), ctx_b); });
  std::this_thread::sleep_for(50ms);
  *release = true;
  first.join();
  second.join();

  CHECK(first_threw);
  CHECK(b.model_text() == "sent #2");
  CHECK(*send.runs == 2);
}

TEST_CASE("idempotent(): failures are never cached", "[middleware]") {
  auto ctx = run_ctx();

  SECTION("a thrown failure runs again on the next call, then the success is cached") {
    auto send = probe("send", {.side_effecting = true}, [](int n) -> std::string {
      if (n == 1) throw std::runtime_error("smtp down");
      return "sent";
    });
    Invoker invoker({agentkit::idempotent()});

    CHECK_THROWS_WITH(invoker.invoke_tool(send.request(), ctx), "smtp down");
    CHECK(invoker.invoke_tool(send.request(), ctx).model_text() == "sent");
    CHECK(invoker.invoke_tool(send.request(), ctx).model_text() == "sent");
    CHECK(*send.runs == 2);
  }
  SECTION("a non-ok result from an inner layer is not cached") {
    auto send = returning("send", {.side_effecting = true}, "sent");
    int calls = 0;
    Middleware fails_once = [&calls](const ToolRequest& req, RunContext& ctx, const Next& next) {
      if (++calls == 1) return ToolResult::error("try later", true);
      return next(req, ctx);
    };
    Invoker invoker({agentkit::idempotent(), fails_once});

    CHECK(invoker.invoke_tool(send.request(), ctx).status == Status::error);
    CHECK(invoker.invoke_tool(send.request(), ctx).is_ok());
    CHECK(invoker.invoke_tool(send.request(), ctx).is_ok());
    CHECK(calls == 2);
    CHECK(*send.runs == 1);
  }
}

TEST_CASE("idempotent(): the key is correlation id, scope, tool and arguments", "[middleware]") {
  auto send = returning("send", {.side_effecting = true}, "sent");
  auto notify = returning("notify", {.side_effecting = true}, "paged");
  Invoker invoker({agentkit::idempotent()});
  auto run1 = run_ctx("run-1");
  auto run2 = run_ctx("run-2");
  auto other_tenant = run_ctx("run-1", {.org_id = 2, .domain_id = 1});

  invoker.invoke_tool(send.request(), run1);
  SECTION("another run replays nothing") {
    invoker.invoke_tool(send.request(), run2);
    CHECK(*send.runs == 2);
  }
  SECTION("another scope replays nothing") {
    invoker.invoke_tool(send.request(), other_tenant);
    CHECK(*send.runs == 2);
  }
  SECTION("other arguments are another call") {
    invoker.invoke_tool(send.request({{"q", "y"}}), run1);
    CHECK(*send.runs == 2);
  }
  SECTION("another tool with the same arguments is another call") {
    invoker.invoke_tool(notify.request(), run1);
    CHECK(*send.runs == 1);
    CHECK(*notify.runs == 1);
  }
  SECTION("argument key order does not matter; the call id is not part of the key") {
    auto pair_runs = std::make_shared<int>(0);
    auto pair = agentkit::tool("pair")
                    .doc("Record a pair of values in the ledger and return a receipt.")
                    .side_effecting(true)
                    .params("a", "b")
                    .fn([pair_runs](int, int) {
                      ++*pair_runs;
                      return std::string("receipt");
                    });
    auto call = [&](std::string call_id, const char* arguments) {
      return invoker.invoke_tool(
          ToolRequest{.call_id = std::move(call_id), .name = "pair", .arguments = Json::parse(arguments), .tool = pair},
          run1);
    };
    call("c1", R"({"a":1,"b":2})");
    call("c2", R"({"b":2,"a":1})");
    CHECK(*pair_runs == 1);
  }
}

TEST_CASE("idempotent(): read-only calls pass through, the request's claim opts in", "[middleware]") {
  auto lookup = returning("lookup", {.side_effecting = false}, "found");
  Invoker invoker({agentkit::idempotent()});
  auto ctx = run_ctx();

  invoker.invoke_tool(lookup.request(), ctx);
  invoker.invoke_tool(lookup.request(), ctx);
  CHECK(*lookup.runs == 2);

  auto claimed = lookup.request();
  claimed.side_effecting = true;
  invoker.invoke_tool(claimed, ctx);
  invoker.invoke_tool(claimed, ctx);
  CHECK(*lookup.runs == 3);
}

// -------------------------------------------------------------------- memoize

TEST_CASE("memoize(): a read-only call is served from cache within the TTL", "[middleware]") {
  auto lookup = returning("lookup", {.side_effecting = false}, "found");
  Invoker invoker({agentkit::memoize(1min)});
  auto ctx = run_ctx();

  auto first = invoker.invoke_tool(lookup.request(), ctx);
  auto second = invoker.invoke_tool(lookup.request(), ctx);

  CHECK(*lookup.runs == 1);
  CHECK(first.model_text() == "found");
  CHECK(second.model_text() == "found");
  CHECK(second.is_ok());

  invoker.invoke_tool(lookup.request({{"q", "other"}}), ctx);
  CHECK(*lookup.runs == 2);
  auto other_tenant = run_ctx("run-1", {.org_id = 9});
  invoker.invoke_tool(lookup.request(), other_tenant);
  CHECK(*lookup.runs == 3);
}

TEST_CASE("memoize(): an entry expires after the TTL", "[middleware]") {
  auto lookup = returning("lookup", {.side_effecting = false}, "found");
  Invoker invoker({agentkit::memoize(30ms)});
  auto ctx = run_ctx();

  invoker.invoke_tool(lookup.request(), ctx);
  std::this_thread::sleep_for(60ms);
  invoker.invoke_tool(lookup.request(), ctx);

  CHECK(*lookup.runs == 2);
}

TEST_CASE("memoize(): refuses side-effecting calls", "[middleware]") {
  Invoker invoker({agentkit::memoize(1min)});
  auto ctx = run_ctx();

  SECTION("declared by the tool") {
    auto send_email = send_email_probe();
    const auto request = ToolRequest{.name = "send_email",
                                     .arguments = {{"to", "ops@example.com"}, {"body", "prod is down"}},
                                     .tool = send_email.tool};
    invoker.invoke_tool(request, ctx);
    invoker.invoke_tool(request, ctx);
    CHECK(*send_email.runs == 2);
  }
  SECTION("claimed by the request") {
    auto lookup = returning("lookup", {.side_effecting = false}, "found");
    auto claimed = lookup.request();
    claimed.side_effecting = true;
    invoker.invoke_tool(claimed, ctx);
    invoker.invoke_tool(claimed, ctx);
    CHECK(*lookup.runs == 2);
    // Nor is a side-effecting call served from an entry cached read-only.
    invoker.invoke_tool(lookup.request(), ctx);
    invoker.invoke_tool(claimed, ctx);
    CHECK(*lookup.runs == 4);
  }
}

TEST_CASE("memoize(): failures are not cached", "[middleware]") {
  auto lookup = probe("lookup", {.side_effecting = false}, [](int n) -> std::string {
    if (n == 1) throw std::runtime_error("index offline");
    return "found";
  });
  Invoker invoker({agentkit::error_boundary(), agentkit::memoize(1min)});
  auto ctx = run_ctx();
  ctx.logger = std::make_shared<spdlog::logger>("quiet");  // no sinks

  CHECK(invoker.invoke_tool(lookup.request(), ctx).status == Status::error);
  CHECK(invoker.invoke_tool(lookup.request(), ctx).is_ok());
  CHECK(invoker.invoke_tool(lookup.request(), ctx).is_ok());
  CHECK(*lookup.runs == 2);
}

// ---------------------------------------------------------------------- retry

TEST_CASE("retry(): re-runs a read-only tool on RetryableToolError until it succeeds", "[middleware]") {
  auto lookup = probe("lookup", {.side_effecting = false}, [](int n) -> std::string {
    if (n < 3) throw RetryableToolError("busy");
    return "found";
  });
  auto attempts = std::make_shared<std::vector<int>>();
  Middleware record = [attempts](const ToolRequest& req, RunContext& ctx, const Next& next) {
    attempts->push_back(req.attempt);
    return next(req, ctx);
  };
  Invoker invoker({agentkit::retry(fast_retry(3)), record});
  auto ctx = run_ctx();

  auto result = invoker.invoke_tool(lookup.request(), ctx);

  CHECK(result.model_text() == "found");
  CHECK(*lookup.runs == 3);
  CHECK(*attempts == std::vector<int>{1, 2, 3});
}

TEST_CASE("retry(): retries a retryable error result, not a plain one", "[middleware]") {
  auto lookup = returning("lookup", {.side_effecting = false}, "found");
  int calls = 0;
  auto ctx = run_ctx();

  SECTION("retryable error result") {
    Middleware flaky = [&calls](const ToolRequest& req, RunContext& ctx, const Next& next) {
      if (++calls < 3) return ToolResult::error("upstream 503", true);
      return next(req, ctx);
    };
    Invoker invoker({agentkit::retry(fast_retry(3)), flaky});
    CHECK(invoker.invoke_tool(lookup.request(), ctx).model_text() == "found");
    CHECK(calls == 3);
  }
  SECTION("non-retryable error result") {
    Middleware broken = [&calls](const ToolRequest&, RunContext&, const Next&) {
      ++calls;
      return ToolResult::error("bad request");
    };
    Invoker invoker({agentkit::retry(fast_retry(3)), broken});
    CHECK(invoker.invoke_tool(lookup.request(), ctx).text == "bad request");
    CHECK(calls == 1);
  }
  SECTION("exhausted: the last retryable result is returned") {
    Middleware down = [&calls](const ToolRequest&, RunContext&, const Next&) {
      return ToolResult::error("upstream 503 #" + std::to_string(++calls), true);
    };
    Invoker invoker({agentkit::retry(fast_retry(4)), down});
    CHECK(invoker.invoke_tool(lookup.request(), ctx).text == "upstream 503 #4");
    CHECK(calls == 4);
  }
}

TEST_CASE("retry(): gives up after max_attempts and rethrows the last error", "[middleware]") {
  auto lookup = probe("lookup", {.side_effecting = false},
                      [](int n) -> std::string { throw RetryableToolError("busy #" + std::to_string(n)); });
  Invoker invoker({agentkit::retry(fast_retry(3))});
  auto ctx = run_ctx();

  CHECK_THROWS_WITH(invoker.invoke_tool(lookup.request(), ctx), "busy #3");
  CHECK(*lookup.runs == 3);
}

TEST_CASE("retry(): other exceptions are not retried", "[middleware]") {
  auto lookup = probe("lookup", {.side_effecting = false}, [](int) -> std::string { throw std::runtime_error("bug"); });
  Invoker invoker({agentkit::retry(fast_retry(3))});
  auto ctx = run_ctx();

  CHECK_THROWS_WITH(invoker.invoke_tool(lookup.request(), ctx), "bug");
  CHECK(*lookup.runs == 1);
}

TEST_CASE("retry(): never re-runs a side-effecting, non-idempotent call", "[middleware]") {
  Invoker invoker({agentkit::retry(fast_retry(5))});
  auto ctx = run_ctx();

  SECTION("declared by the tool") {
    auto charge = probe("charge", {.side_effecting = true},
                        [](int) -> std::string { throw RetryableToolError("gateway timeout"); });
    CHECK_THROWS_AS(invoker.invoke_tool(charge.request(), ctx), RetryableToolError);
    CHECK(*charge.runs == 1);
  }
  SECTION("claimed by the request") {
    auto lookup =
        probe("lookup", {.side_effecting = false}, [](int) -> std::string { throw RetryableToolError("busy"); });
    auto claimed = lookup.request();
    claimed.side_effecting = true;
    CHECK_THROWS_AS(invoker.invoke_tool(claimed, ctx), RetryableToolError);
    CHECK(*lookup.runs == 1);
  }
  SECTION("a retryable error result") {
    auto charge = returning("charge", {.side_effecting = true}, "charged");
    int calls = 0;
    Invoker with_flaky({agentkit::retry(fast_retry(5)), [&calls](const ToolRequest&, RunContext&, const Next&) {
                          ++calls;
                          return ToolResult::error("gateway timeout", true);
                        }});
    CHECK(with_flaky.invoke_tool(charge.request(), ctx).status == Status::error);
    CHECK(calls == 1);
  }
}

TEST_CASE("retry(): re-runs a side-effecting call declared idempotent", "[middleware]") {
  auto upsert = probe("upsert", {.side_effecting = true, .idempotent = true}, [](int n) -> std::string {
    if (n < 3) throw RetryableToolError("conflict");
    return "stored";
  });
  Invoker invoker({agentkit::retry(fast_retry(3))});
  auto ctx = run_ctx();

  CHECK(invoker.invoke_tool(upsert.request(), ctx).model_text() == "stored");
  CHECK(*upsert.runs == 3);
}

TEST_CASE("retry(): cancellation stops further attempts and cuts the backoff short", "[middleware]") {
  auto lookup =
      probe("lookup", {.side_effecting = false}, [](int) -> std::string { throw RetryableToolError("busy"); });
  Invoker invoker({agentkit::retry({.max_attempts = 3, .base_delay = 10s, .max_delay = 10s})});
  auto ctx = run_ctx();

  SECTION("already cancelled: one attempt") {
    ctx.cancellation.cancel();
    CHECK_THROWS_AS(invoker.invoke_tool(lookup.request(), ctx), RetryableToolError);
    CHECK(*lookup.runs == 1);
  }
  SECTION("cancelled during the backoff") {
    const auto start = Clock::now();
    std::thread canceller([token = ctx.cancellation] {
      std::this_thread::sleep_for(30ms);
      token.cancel();
    });
    CHECK_THROWS_AS(invoker.invoke_tool(lookup.request(), ctx), RetryableToolError);
    canceller.join();
    CHECK(elapsed_since(start) < 2s);
  }
}

TEST_CASE("retry(): backoff stays within max_delay", "[middleware]") {
  auto lookup =
      probe("lookup", {.side_effecting = false}, [](int) -> std::string { throw RetryableToolError("busy"); });
  Invoker invoker({agentkit::retry({.max_attempts = 12, .base_delay = 5ms, .max_delay = 10ms})});
  auto ctx = run_ctx();
  const auto start = Clock::now();

  CHECK_THROWS_AS(invoker.invoke_tool(lookup.request(), ctx), RetryableToolError);

  CHECK(*lookup.runs == 12);
  // At most 11 sleeps of <= 10 ms. Uncapped, the jittered delays would double
  // up to 5 s and sum to about 5 s on average.
  CHECK(elapsed_since(start) < agentkit_test::latency_bound(500ms));
}

// -------------------------------------------------------------------- timeout

namespace {

// A body that waits for its call to be cancelled (bounded), as a network tool
// does, then fails the way such a tool would.
std::string wait_for_cancel(RunContext& ctx) {
  const auto until = Clock::now() + 5s;  // a call that ignored its deadline would take this long
  while (!ctx.cancelled() && Clock::now() < until) std::this_thread::sleep_for(1ms);
  throw std::runtime_error("request abandoned");
}

}  // namespace

TEST_CASE("timeout(): a read-only call that stops at its deadline is a retryable error", "[middleware]") {
  auto lookup = probe_ctx("slow_lookup", {.side_effecting = false},
                          [](int, RunContext& ctx) { return wait_for_cancel(ctx); });
  Invoker invoker({agentkit::timeout(30ms)});
  auto ctx = run_ctx();
  const auto start = Clock::now();

  auto result = invoker.invoke_tool(lookup.request(), ctx);

  CHECK(elapsed_since(start) < agentkit_test::latency_bound(150ms));
  CHECK(result.status == Status::error);
  CHECK(result.retryable);
  CHECK(result.text == "tool 'slow_lookup' timed out after 30 ms");
  CHECK(*lookup.finished == 1);  // nothing is left running
}

TEST_CASE("timeout(): the call runs on the caller's thread under a deadline of its own, seen through its context",
          "[middleware]") {
  std::thread::id body_thread;
  std::optional<Clock::time_point> deadline;
  bool cancelled_at_start = true;
  auto lookup = probe_ctx("slow_lookup", {.side_effecting = false}, [&](int, RunContext& ctx) {
    body_thread = std::this_thread::get_id();
    deadline = ctx.deadline();
    cancelled_at_start = ctx.cancelled();
    return wait_for_cancel(ctx);
  });
  Invoker invoker({agentkit::timeout(40ms)});
  auto ctx = run_ctx();
  const auto before = Clock::now();

  invoker.invoke_tool(lookup.request(), ctx);

  CHECK(body_thread == std::this_thread::get_id());
  REQUIRE(deadline);
  CHECK(*deadline >= before + 40ms);
  CHECK(*deadline <= Clock::now());
  CHECK_FALSE(cancelled_at_start);
  // The call's deadline was its own: the caller's context is as it was.
  CHECK_FALSE(ctx.cancelled());
  CHECK_FALSE(ctx.deadline());

  SECTION("the run's cancellation reaches the call too") {
    auto cancel_later = std::thread([token = ctx.cancellation] {
      std::this_thread::sleep_for(20ms);
      token.cancel();
    });
    Invoker patient({agentkit::timeout(10s)});
    const auto start = Clock::now();
    CHECK_THROWS_WITH(patient.invoke_tool(lookup.request(), ctx), "request abandoned");
    cancel_later.join();
    CHECK(elapsed_since(start) < agentkit_test::latency_bound(500ms));
  }
}

TEST_CASE("timeout(): retry re-runs a timed-out read-only call, never beside a copy still running", "[middleware]") {
  auto running = std::make_shared<std::atomic<int>>(0);
  auto most = std::make_shared<std::atomic<int>>(0);
  // Ignores its deadline for a while, then fails as a timed-out request does.
  auto lookup = probe("slow_lookup", {.side_effecting = false}, [running, most](int) -> std::string {
    const int now = ++*running;
    *most = std::max(most->load(), now);
    std::this_thread::sleep_for(60ms);
    --*running;
    throw RetryableToolError("backend did not answer");
  });
  Invoker invoker({agentkit::retry(fast_retry(3)), agentkit::timeout(20ms)});
  auto ctx = run_ctx();

  auto result = invoker.invoke_tool(lookup.request(), ctx);

  CHECK(result.status == Status::error);
  CHECK(result.text == "tool 'slow_lookup' timed out after 20 ms");
  CHECK(*lookup.runs == 3);
  CHECK(*lookup.finished == 3);
  CHECK(*most == 1);
}

TEST_CASE("timeout(): a side-effecting call that stops at its deadline is outcome_unknown and is not retried",
          "[middleware]") {
  auto charge = probe_ctx("charge_card", {.side_effecting = true},
                          [](int, RunContext& ctx) { return wait_for_cancel(ctx); });
  Invoker invoker({agentkit::retry(fast_retry(3)), agentkit::timeout(30ms)});
  auto ctx = run_ctx();

  auto result = invoker.invoke_tool(charge.request(), ctx);

  CHECK(result.status == Status::outcome_unknown);
  CHECK(result.text ==
        "tool 'charge_card' timed out after 30 ms; it may or may not have taken effect, so it was not retried");
  CHECK(*charge.runs == 1);
  CHECK(*charge.finished == 1);
}

namespace {

// Records what the end of the chain tells a durable run's ledger.
class RecordingLedger final : public agentkit::CallLedger {
 public:
  std::optional<ToolResult> begin(const ToolRequest&) const override { return std::nullopt; }
  void end(const ToolRequest& request, const ToolResult& result) const override {
    std::lock_guard lock(mutex_);
    ends_.emplace_back(request.call_id, std::string(agentkit::to_string(result.status)) + " " + result.model_text());
  }
  std::optional<ToolResult> recall(const std::string&) const override { return std::nullopt; }
  void remember(const std::string&, const ToolResult&) const override {}

  std::vector<std::pair<std::string, std::string>> ends() const {
    std::lock_guard lock(mutex_);
    return ends_;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::vector<std::pair<std::string, std::string>> ends_;
};

}  // namespace

TEST_CASE("timeout(): a side-effecting body that completes past its limit keeps its real outcome, in the ledger too",
          "[middleware]") {
  auto charge = probe("charge_card", {.side_effecting = true}, [](int) {
    std::this_thread::sleep_for(80ms);  // ignores its deadline
    return std::string("charged");
  });
  auto ledger = std::make_shared<RecordingLedger>();
  Invoker invoker({agentkit::retry(fast_retry(3)), agentkit::timeout(20ms)});
  auto ctx = run_ctx();
  auto request = charge.request();
  request.ledger = ledger;
  request.ledger_key = "1/c1";

  auto result = invoker.invoke_tool(request, ctx);

  // It did take effect: saying "may or may not have" would misreport it.
  CHECK(result.status == Status::ok);
  CHECK(result.model_text() == "charged");
  CHECK(ledger->ends() == std::vector<std::pair<std::string, std::string>>{{"c1", "ok charged"}});
  CHECK(*charge.runs == 1);
}

TEST_CASE("timeout(): a call within the limit returns its result or its exception", "[middleware]") {
  Invoker invoker({agentkit::timeout(2s)});
  auto ctx = run_ctx();

  auto fast = returning("fast", {.side_effecting = false}, "quick");
  CHECK(invoker.invoke_tool(fast.request(), ctx).model_text() == "quick");

  auto broken =
      probe("broken", {.side_effecting = false}, [](int) -> std::string { throw RetryableToolError("flaky backend"); });
  CHECK_THROWS_AS(invoker.invoke_tool(broken.request(), ctx), RetryableToolError);
  CHECK_THROWS_WITH(invoker.invoke_tool(broken.request(), ctx), "flaky backend");
}

// ------------------------------------------------------------- error_boundary

TEST_CASE("error_boundary(): an exception becomes 'Tool failed: ...' and is logged without arguments", "[middleware]") {
  auto flaky = probe("flaky", {.side_effecting = false},
                     [](int) -> std::string { throw std::runtime_error("database unreachable"); });
  Invoker invoker({agentkit::error_boundary()});
  auto ctx = run_ctx();
  std::ostringstream log;
  ctx.logger = capture_logger(log);

  auto result = invoker.invoke_tool(flaky.request({{"q", "hunter2"}}, "call-77"), ctx);

  CHECK(result.status == Status::error);
  CHECK(result.text == "Tool failed: database unreachable");
  CHECK_FALSE(result.retryable);
  const auto logged = log.str();
  CHECK_THAT(logged, Catch::Contains("error"));
  CHECK_THAT(logged, Catch::Contains("database unreachable"));
  CHECK_THAT(logged, Catch::Contains("flaky"));
  CHECK_THAT(logged, Catch::Contains("call-77"));
  CHECK_THAT(logged, !Catch::Contains("hunter2"));
}

TEST_CASE("error_boundary(): a ToolArgumentError goes back to the model as is", "[middleware]") {
  auto lookup = returning("lookup", {.side_effecting = false}, "found");
  Invoker invoker({agentkit::error_boundary()});
  auto ctx = run_ctx();
  ctx.logger = std::make_shared<spdlog::logger>("quiet");
  const Json bad = {{"query", "x"}};
  std::string expected;
  try {
    lookup.tool->run(bad, ctx);
  } catch (const agentkit::ToolArgumentError& e) {
    expected = e.what();
  }
  REQUIRE_FALSE(expected.empty());

  auto result = invoker.invoke_tool(lookup.request(bad), ctx);

  CHECK(result.status == Status::error);
  CHECK(result.text == expected);
  CHECK(*lookup.runs == 0);
}

TEST_CASE("error_boundary(): shape errors, retryable errors and non-standard exceptions", "[middleware]") {
  Invoker invoker({agentkit::error_boundary()});
  auto ctx = run_ctx();
  std::ostringstream log;
  ctx.logger = capture_logger(log);

  SECTION("ToolShapeError") {
    auto quote = probe("get_quote", {.side_effecting = false},
                       [](int) -> std::string { throw agentkit::ToolShapeError("get_quote", Json(1), "Quote"); });
    auto result = invoker.invoke_tool(quote.request(), ctx);
    CHECK(result.status == Status::error);
    CHECK(result.text == "Tool failed: tool 'get_quote' returned value not matching schema 'Quote'");
    CHECK_THAT(log.str(), Catch::Contains("get_quote"));
  }
  SECTION("RetryableToolError stays retryable for an outer retry()") {
    auto busy = probe("busy", {.side_effecting = false}, [](int) -> std::string { throw RetryableToolError("busy"); });
    auto result = invoker.invoke_tool(busy.request(), ctx);
    CHECK(result.text == "Tool failed: busy");
    CHECK(result.retryable);
  }
  SECTION("a non-standard exception") {
    auto odd = probe("odd", {.side_effecting = false}, [](int) -> std::string { throw 42; });
    auto result = invoker.invoke_tool(odd.request(), ctx);
    CHECK(result.status == Status::error);
    CHECK(result.text == "Tool failed: unknown error");
    CHECK_THAT(log.str(), Catch::Contains("odd"));
  }
}

// ---------------------------------------------------------------------- audit

TEST_CASE("audit(): one record per call with the authorised arguments and the outcome", "[middleware]") {
  std::vector<AuditRecord> records;
  auto send_email = send_email_probe();
  Invoker invoker({agentkit::audit([&records](const AuditRecord& r) { records.push_back(r); })});
  auto ctx = run_ctx("run-9", {.org_id = 7, .domain_id = 1});
  const Json arguments = {{"to", "ops@example.com"}, {"body", "prod is down"}};

  invoker.invoke_tool(
      ToolRequest{.call_id = "c5", .name = "send_email", .arguments = arguments, .tool = send_email.tool}, ctx);

  REQUIRE(records.size() == 1);
  CHECK(records[0].correlation_id == "run-9");
  CHECK(records[0].scope == "org7:dom1");
  CHECK(records[0].tool == "send_email");
  CHECK(records[0].call_id == "c5");
  CHECK(records[0].arguments == arguments);
  CHECK(records[0].outcome == "ok");
  CHECK(records[0].text == "queued for ops@example.com");

  SECTION("a denied call is recorded with its reason") {
    Invoker gated({agentkit::audit([&records](const AuditRecord& r) { records.push_back(r); })});
    ctx.autonomy = agentkit::Autonomy::manual;
    gated.invoke_tool(
        ToolRequest{.call_id = "c6", .name = "send_email", .arguments = arguments, .tool = send_email.tool}, ctx);
    REQUIRE(records.size() == 2);
    CHECK(records[1].outcome == "awaiting_approval");
    CHECK(*send_email.runs == 1);
  }
}

TEST_CASE("audit(): a throwing call is recorded as 'exception' and rethrown", "[middleware]") {
  std::vector<AuditRecord> records;
  auto flaky = probe("flaky", {.side_effecting = false}, [](int) -> std::string { throw std::runtime_error("boom"); });
  Invoker invoker({agentkit::audit([&records](const AuditRecord& r) { records.push_back(r); })});
  auto ctx = run_ctx();

  CHECK_THROWS_WITH(invoker.invoke_tool(flaky.request(), ctx), "boom");

  REQUIRE(records.size() == 1);
  CHECK(records[0].outcome == "exception");
  CHECK(records[0].text == "boom");
  CHECK(records[0].arguments == Json{{"q", "x"}});
}

// -------------------------------------------------------------------- tracing

TEST_CASE("tracing(): emits a ToolSpan per call", "[middleware]") {
  auto lookup = returning("lookup", {.side_effecting = false}, "found");
  Invoker invoker({agentkit::tracing()});
  auto ctx = run_ctx();
  ctx.events = std::make_shared<agentkit::EventQueue>();
  ctx.span_id = agentkit::trace::SpanId("00000000000000aa");

  invoker.invoke_tool(lookup.request({{"q", "x"}}, "c1"), ctx);
  invoker.invoke_tool(lookup.request({{"q", "y"}}, "c2"), ctx);

  auto events = ctx.events->drain();
  REQUIRE(events.size() == 2);
  REQUIRE(std::holds_alternative<agentkit::ToolSpan>(events[0]));
  REQUIRE(std::holds_alternative<agentkit::ToolSpan>(events[1]));
  const auto& first = std::get<agentkit::ToolSpan>(events[0]);
  const auto& second = std::get<agentkit::ToolSpan>(events[1]);
  CHECK(first.tool == "lookup");
  CHECK(first.call_id == "c1");
  CHECK(first.outcome == agentkit::CallStatus::ok);
  CHECK(first.parent_span_id == "00000000000000aa");
  CHECK(first.info.span_id() == "00000000000000aa");  // the run's span; the call's is the span's own
  CHECK_FALSE(first.span_id.empty());
  CHECK(first.span_id != "00000000000000aa");
  CHECK(second.call_id == "c2");
  CHECK(second.span_id != first.span_id);
}

TEST_CASE("tracing(): a throwing call emits outcome error and rethrows", "[middleware]") {
  auto flaky = probe("flaky", {.side_effecting = false}, [](int) -> std::string {
    std::this_thread::sleep_for(2ms);
    throw std::runtime_error("boom");
  });
  Invoker invoker({agentkit::tracing()});
  auto ctx = run_ctx();
  ctx.events = std::make_shared<agentkit::EventQueue>();

  CHECK_THROWS_WITH(invoker.invoke_tool(flaky.request(), ctx), "boom");

  auto events = ctx.events->drain();
  REQUIRE(events.size() == 1);
  const auto& span = std::get<agentkit::ToolSpan>(events[0]);
  CHECK(span.outcome == agentkit::CallStatus::error);
  CHECK(span.duration >= 2ms);
}

TEST_CASE("tracing(): the outcome names a non-ok status", "[middleware]") {
  auto refund = agentkit::tool("refund")
                    .doc("Issue a refund against a customer order and return the confirmation id.")
                    .side_effecting(true)
                    .requires_approval()
                    .fn([] { return std::string("refunded"); });
  Invoker invoker({agentkit::tracing()});
  auto ctx = run_ctx();
  ctx.events = std::make_shared<agentkit::EventQueue>();

  invoker.invoke_tool(ToolRequest{.call_id = "c1", .name = "refund", .tool = refund}, ctx);

  auto events = ctx.events->drain();
  REQUIRE(events.size() == 1);
  CHECK(std::get<agentkit::ToolSpan>(events[0]).outcome == agentkit::CallStatus::awaiting_approval);
}

// ------------------------------------------------------------------- metering

TEST_CASE("metering(): charges each call and its duration to the budget", "[middleware]") {
  auto lookup = probe("lookup", {.side_effecting = false}, [](int) {
    std::this_thread::sleep_for(2ms);
    return std::string("found");
  });
  Invoker invoker({agentkit::metering()});
  auto ctx = run_ctx();
  auto child_view = ctx.budget;  // a child context shares the same budget

  invoker.invoke_tool(lookup.request(), ctx);
  invoker.invoke_tool(lookup.request(), ctx);

  CHECK(child_view->tool_calls() == 2);
  CHECK(child_view->tool_time() >= 4ms);

  SECTION("a context without a budget still runs the call") {
    ctx.budget = nullptr;
    CHECK(invoker.invoke_tool(lookup.request(), ctx).is_ok());
    CHECK(*lookup.runs == 3);
  }
}

// --------------------------------------------------------------------- egress

TEST_CASE("deny_tools(): denies by name and by tag without running the tool", "[middleware]") {
  auto shell = returning("shell", {.side_effecting = true}, "ran");
  auto pay = returning("pay", {.side_effecting = true, .tags = {"billing", "external"}}, "paid");
  auto lookup = returning("lookup", {.side_effecting = false, .tags = {"internal"}}, "found");
  Invoker invoker({agentkit::egress(agentkit::deny_tools({"shell"}, {"external"}))});
  auto ctx = run_ctx();

  auto by_name = invoker.invoke_tool(shell.request(), ctx);
  auto by_tag = invoker.invoke_tool(pay.request(), ctx);
  auto allowed = invoker.invoke_tool(lookup.request(), ctx);

  CHECK(by_name.status == Status::denied);
  CHECK_THAT(by_name.text, Catch::StartsWith("call to tool 'shell' refused by egress policy: "));
  CHECK(by_tag.status == Status::denied);
  CHECK_THAT(by_tag.text, Catch::StartsWith("call to tool 'pay' refused by egress policy: "));
  CHECK_THAT(by_tag.text, Catch::Contains("external"));
  CHECK(*shell.runs == 0);
  CHECK(*pay.runs == 0);
  CHECK(allowed.is_ok());
  CHECK(*lookup.runs == 1);
}

TEST_CASE("egress(): a custom policy's reason reaches the model", "[middleware]") {
  auto fetch = returning("fetch", {.side_effecting = false}, "page");
  Invoker invoker({agentkit::egress([](const ToolRequest& req) -> std::optional<std::string> {
    if (req.arguments.value("q", "").find("internal.corp") != std::string::npos) return "internal hosts are off limits";
    return std::nullopt;
  })});
  auto ctx = run_ctx();

  auto denied = invoker.invoke_tool(fetch.request({{"q", "https://internal.corp/payroll"}}), ctx);
  auto allowed = invoker.invoke_tool(fetch.request({{"q", "https://example.com"}}), ctx);

  CHECK(denied.text == "call to tool 'fetch' refused by egress policy: internal hosts are off limits");
  CHECK(allowed.is_ok());
  CHECK(*fetch.runs == 1);
  CHECK_THROWS_AS(agentkit::egress(nullptr), agentkit::Error);
}

// -------------------------------------------------------------------- logging

TEST_CASE("logging(): one debug line per call, without arguments", "[middleware]") {
  auto lookup = returning("lookup", {.side_effecting = false}, "found");
  Invoker invoker({agentkit::logging()});
  auto ctx = run_ctx();
  std::ostringstream log;
  ctx.logger = capture_logger(log);

  invoker.invoke_tool(lookup.request({{"q", "hunter2"}}, "call-3"), ctx);

  const auto logged = log.str();
  CHECK_THAT(logged, Catch::StartsWith("debug "));
  CHECK_THAT(logged, Catch::Contains("lookup"));
  CHECK_THAT(logged, Catch::Contains("call-3"));
  CHECK_THAT(logged, Catch::Contains("ok"));
  CHECK_THAT(logged, !Catch::Contains("hunter2"));
}

// ------------------------------------------------------------------- defaults

TEST_CASE("default_middleware(): boundary, tracing, metering, idempotent, retry", "[middleware]") {
  Invoker invoker(agentkit::default_middleware());
  auto ctx = run_ctx();
  ctx.events = std::make_shared<agentkit::EventQueue>();
  ctx.logger = std::make_shared<spdlog::logger>("quiet");
  CHECK(invoker.size() == 5);

  auto send_email = send_email_probe();
  const auto email = ToolRequest{.call_id = "c1",
                                 .name = "send_email",
                                 .arguments = {{"to", "ops@example.com"}, {"body", "prod is down"}},
                                 .tool = send_email.tool};
  CHECK(invoker.invoke_tool(email, ctx).model_text() == "queued for ops@example.com");
  CHECK(invoker.invoke_tool(email, ctx).model_text() == "queued for ops@example.com");
  CHECK(*send_email.runs == 1);

  auto flaky = probe("flaky", {.side_effecting = false}, [](int n) -> std::string {
    if (n == 1) throw RetryableToolError("busy");
    throw std::runtime_error("broken");
  });
  auto failed = invoker.invoke_tool(flaky.request(), ctx);
  CHECK(failed.text == "Tool failed: broken");
  CHECK(*flaky.runs == 2);

  CHECK(ctx.budget->tool_calls() == 3);
  CHECK(ctx.events->drain().size() == 3);
}
