// Executors: where a run's model and tool calls execute.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <agentkit/error.h>
#include <agentkit/executor.h>

using agentkit::IdlePolling;
using agentkit::InlineExecutor;
using agentkit::ThreadPoolExecutor;
using namespace std::chrono_literals;

TEST_CASE("ThreadPoolExecutor runs every task, never more than its thread count at once", "[executor]") {
  std::atomic<int> done{0};
  std::atomic<int> running{0};
  std::atomic<int> peak{0};
  {
    ThreadPoolExecutor pool(3);
    CHECK_FALSE(pool.inline_execution());
    for (int i = 0; i < 24; ++i) {
      pool.submit([&] {
        const int now = ++running;
        int seen = peak.load();
        while (now > seen && !peak.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(2ms);
        --running;
        ++done;
      });
    }
  }  // the destructor finishes queued work, then joins

  CHECK(done == 24);
  CHECK(peak <= 3);
  CHECK(peak >= 1);
}

TEST_CASE("ThreadPoolExecutor runs up to its thread count concurrently", "[executor]") {
  std::mutex mutex;
  std::condition_variable all_in;
  int arrived = 0;
  std::atomic<int> met{0};
  {
    ThreadPoolExecutor pool(3);
    for (int i = 0; i < 3; ++i) {
      pool.submit([&] {
        std::unique_lock lock(mutex);
        ++arrived;
        all_in.notify_all();
        // Only possible if three tasks are in flight at the same time.
        if (all_in.wait_for(lock, 2s, [&] { return arrived == 3; })) ++met;
      });
    }
  }

  CHECK(met == 3);
}

TEST_CASE("ThreadPoolExecutor with one thread runs tasks in submission order", "[executor]") {
  std::vector<int> order;
  {
    ThreadPoolExecutor pool(1);
    for (int i = 0; i < 10; ++i) pool.submit([&order, i] { order.push_back(i); });
  }

  CHECK(order == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("ThreadPoolExecutor's destructor finishes queued work, including work it submits", "[executor]") {
  std::atomic<int> done{0};
  {
    ThreadPoolExecutor pool(1);
    pool.submit([&] {
      std::this_thread::sleep_for(20ms);  // the rest queue up behind this
      ++done;
    });
    for (int i = 0; i < 5; ++i) pool.submit([&] { ++done; });
    pool.submit([&] { pool.submit([&] { ++done; }); });
  }

  CHECK(done == 7);
}

TEST_CASE("ThreadPoolExecutor survives a task that throws", "[executor]") {
  std::atomic<bool> after{false};
  {
    ThreadPoolExecutor pool(1);
    pool.submit([] { throw std::runtime_error("executor_test: deliberate failure in submitted work"); });
    pool.submit([&] { after = true; });
  }

  CHECK(after);
}

TEST_CASE("ThreadPoolExecutor refuses zero threads and empty work", "[executor]") {
  CHECK_THROWS_AS(ThreadPoolExecutor(0), agentkit::Error);
  ThreadPoolExecutor pool(1);
  CHECK_THROWS_AS(pool.submit({}), agentkit::Error);
}

namespace {

// Submits one task and waits up to `max` for it to run.
bool runs_within(ThreadPoolExecutor& pool, std::chrono::milliseconds max) {
  std::mutex mutex;
  std::condition_variable ran_cv;
  bool ran = false;
  pool.submit([&] {
    std::lock_guard lock(mutex);
    ran = true;
    ran_cv.notify_all();
  });
  std::unique_lock lock(mutex);
  return ran_cv.wait_for(lock, max, [&] { return ran; });
}

}  // namespace

TEST_CASE("A polling ThreadPoolExecutor takes work without being woken, and wakes once idle past its linger",
          "[executor]") {
  ThreadPoolExecutor pool(2, nullptr, IdlePolling{.every = 100us, .linger = 30ms});
  // Just started: a worker counts its start as its last work, so it polls.
  CHECK(runs_within(pool, 2s));
  // Just ran: a worker polls and finds the next task at its next check
  // (submit() wakes no one while a poller can take it).
  for (int i = 0; i < 50; ++i) REQUIRE(runs_within(pool, 2s));
  // Idle past the linger, the workers sleep again: the task must still run
  // (a submit() that counted on a poller would strand it).
  std::this_thread::sleep_for(80ms);
  CHECK(runs_within(pool, 2s));
}

TEST_CASE("A polling ThreadPoolExecutor runs every task submitted from many threads and finishes its queue",
          "[executor]") {
  std::atomic<int> done{0};
  {
    ThreadPoolExecutor pool(3, nullptr, IdlePolling{.every = 50us, .linger = 5ms});
    std::vector<std::thread> submitters;
    for (int t = 0; t < 4; ++t) {
      submitters.emplace_back([&] {
        for (int i = 0; i < 250; ++i) {
          pool.submit([&] { ++done; });
          if (i % 50 == 0) std::this_thread::sleep_for(10ms);  // past the linger now and then
        }
      });
    }
    for (auto& submitter : submitters) submitter.join();
  }  // the destructor finishes queued work, then joins

  CHECK(done == 1000);
}

TEST_CASE("ThreadPoolExecutor refuses a negative IdlePolling", "[executor]") {
  CHECK_THROWS_AS(ThreadPoolExecutor(1, nullptr, IdlePolling{.every = -1us}), agentkit::Error);
  CHECK_THROWS_AS(ThreadPoolExecutor(1, nullptr, IdlePolling{.every = 1us, .linger = -1ms}), agentkit::Error);
}

TEST_CASE("InlineExecutor runs work before submit returns, on the caller's thread", "[executor]") {
  InlineExecutor inline_executor;
  std::thread::id ran_on;
  inline_executor.submit([&] { ran_on = std::this_thread::get_id(); });

  CHECK(inline_executor.inline_execution());
  CHECK(ran_on == std::this_thread::get_id());
}
