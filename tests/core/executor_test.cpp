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

TEST_CASE("InlineExecutor runs work before submit returns, on the caller's thread", "[executor]") {
  InlineExecutor inline_executor;
  std::thread::id ran_on;
  inline_executor.submit([&] { ran_on = std::this_thread::get_id(); });

  CHECK(inline_executor.inline_execution());
  CHECK(ran_on == std::this_thread::get_id());
}
