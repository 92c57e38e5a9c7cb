// The one backoff policy and the one cancellable wait.
#include <catch2/catch.hpp>

#include <chrono>
#include <stop_token>
#include <thread>

#include <agentkit/backoff.h>
#include <agentkit/context.h>

using agentkit::Backoff;
using namespace std::chrono_literals;

TEST_CASE("Backoff: doubling ceilings capped at max, full jitter within them, Retry-After wins up to max",
          "[backoff]") {
  const Backoff plain{.base = 100ms, .max = 1000ms, .jitter = false};
  CHECK(plain.ceiling(1) == 100ms);
  CHECK(plain.ceiling(2) == 200ms);
  CHECK(plain.ceiling(4) == 800ms);
  CHECK(plain.ceiling(5) == 1000ms);
  CHECK(plain.ceiling(1'000'000) == 1000ms);  // never overflows
  CHECK(plain.delay(3) == 400ms);
  CHECK(plain.delay(3, 50ms) == 50ms);
  CHECK(plain.delay(3, 1h) == 1000ms);
  CHECK(plain.delay(3, -5ms) == 0ms);
  CHECK(Backoff{.base = -1ms, .max = 10ms}.ceiling(3) == 0ms);

  const Backoff jittered{.base = 100ms, .max = 1000ms};
  bool varied = false;
  for (int i = 0; i < 200; ++i) {
    const auto d = jittered.delay(3);
    CHECK(d >= 0ms);
    CHECK(d <= 400ms);
    varied = varied || d != jittered.delay(3);
  }
  CHECK(varied);
}

TEST_CASE("CancellationToken::sleep_for ends at cancellation or the deadline, whichever is first", "[backoff]") {
  using Clock = std::chrono::steady_clock;
  agentkit::CancellationToken root;
  std::thread canceller([&] {
    std::this_thread::sleep_for(30ms);
    root.cancel();
  });
  auto start = Clock::now();
  root.sleep_for(10s);
  CHECK(Clock::now() - start < 5s);
  canceller.join();

  agentkit::CancellationToken fresh;
  auto soon = fresh.child(Clock::now() + 30ms);
  start = Clock::now();
  soon.sleep_for(10s);
  CHECK(Clock::now() - start < 5s);
  CHECK(soon.cancelled());
}

TEST_CASE("CancellationToken::sleep_for also ends when its wake token stops, and only then", "[backoff]") {
  using Clock = std::chrono::steady_clock;
  agentkit::CancellationToken token;
  std::stop_source wake;
  std::thread waker([&] {
    std::this_thread::sleep_for(30ms);
    wake.request_stop();
  });
  auto start = Clock::now();
  token.sleep_for(10s, wake.get_token());
  CHECK(Clock::now() - start < 5s);
  CHECK_FALSE(token.cancelled());  // waking is not cancelling
  waker.join();

  // Already stopped: no wait at all.
  start = Clock::now();
  token.sleep_for(10s, wake.get_token());
  CHECK(Clock::now() - start < 5s);

  // A wake token that never stops: cancellation and the deadline still end the wait.
  std::stop_source idle;
  auto soon = token.child(Clock::now() + 30ms);
  start = Clock::now();
  soon.sleep_for(10s, idle.get_token());
  CHECK(Clock::now() - start < 5s);
  std::thread canceller([&] {
    std::this_thread::sleep_for(30ms);
    token.cancel();
  });
  start = Clock::now();
  token.sleep_for(10s, idle.get_token());
  CHECK(Clock::now() - start < 5s);
  canceller.join();

  // Nothing to wake it: the whole duration.
  agentkit::CancellationToken quiet;
  start = Clock::now();
  quiet.sleep_for(50ms, idle.get_token());
  CHECK(Clock::now() - start >= 50ms);
}
