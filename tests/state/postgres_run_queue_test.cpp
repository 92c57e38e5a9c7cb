// PostgresRunQueue against a throwaway server: idempotent submits, claims
// that never hand one run to two workers, scopes, fenced marks after a lease
// is taken over, and wake-ups through LISTEN/NOTIFY.
#include <agentkit/error.h>
#include <agentkit/json.h>
#include <agentkit/state/postgres_run_queue.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../helpers/postgres_server.h"

namespace {

using namespace std::chrono_literals;
using agentkit::Scope;
using agentkit::state::PostgresRunQueue;
using agentkit_test::fresh_table;
using agentkit_test::shared_postgres;
using Status = PostgresRunQueue::Status;
using Decided = PostgresRunQueue::Decided;

PostgresRunQueue::Options quick(std::string table) {
  return {.attempts = 2, .backoff = {.base = 10ms, .max = 50ms}, .table = std::move(table)};
}

const Scope kA{.org_id = 1, .domain_id = 1};
const Scope kB{.org_id = 2};

// Expires every lease of `table` now, as the server's clock passing them would.
void expire_leases(const std::string& table) {
  shared_postgres().sql("UPDATE \"" + table +
                        "\" SET lease_expires_at = now() - interval '1 second'"
                        " WHERE status = 'leased'");
}

}  // namespace

TEST_CASE("run queue: submit is idempotent and a claim leases the oldest run once", "[postgres][fleet]") {
  const std::string table = fresh_table();
  PostgresRunQueue queue(shared_postgres().conninfo(), quick(table));
  CHECK(queue.submit(kA, "r1", "clerk", "first"));
  CHECK(queue.submit(kA, "r2", "clerk", "second"));
  CHECK_FALSE(queue.submit(kA, "r1", "other", "changed"));  // already there: unchanged

  auto first = queue.claim("w1", {kA}, 30s);
  REQUIRE(first);
  CHECK(first->run_id == "r1");
  CHECK(first->agent == "clerk");
  CHECK(first->task == "first");
  CHECK(first->scope == kA);
  CHECK(first->attempt == 1);
  CHECK_FALSE(first->taken_over);
  CHECK_FALSE(first->decisions);
  auto second = queue.claim("w2", {kA}, 30s);
  REQUIRE(second);
  CHECK(second->run_id == "r2");
  CHECK_FALSE(queue.claim("w3", {kA}, 30s));  // both leased and live

  auto info = queue.info(kA, "r1");
  REQUIRE(info);
  CHECK(info->status == Status::leased);
  CHECK(info->lease_owner == "w1");
  CHECK(info->attempts == 1);
  CHECK(queue.mark_done("w1", *first, R"({"output":"ok"})"));
  info = queue.info(kA, "r1");
  CHECK(info->status == Status::done);
  CHECK(info->result == R"({"output":"ok"})");
  CHECK(info->lease_owner.empty());
  CHECK_FALSE(queue.info(kA, "nope"));
  CHECK_FALSE(queue.info(kB, "r1"));  // the run id is per scope
}

TEST_CASE("run queue: a worker claims only the scopes it serves", "[postgres][fleet]") {
  const std::string table = fresh_table();
  PostgresRunQueue queue(shared_postgres().conninfo(), quick(table));
  queue.submit(kB, "b1", "clerk", "for B");
  queue.submit(kA, "a1", "clerk", "for A");
  queue.submit(kB, "b2", "clerk", "for B");
  CHECK_FALSE(queue.claim("none", {}, 30s));
  const auto a = queue.claim("wa", {kA}, 30s);
  REQUIRE(a);
  CHECK(a->run_id == "a1");
  CHECK_FALSE(queue.claim("wa", {kA}, 30s));
  // Not even a run of B whose lease expired.
  const auto b = queue.claim("wb", {kB}, 30s);
  REQUIRE(b);
  CHECK(b->run_id == "b1");
  expire_leases(table);
  const auto again = queue.claim("wa", {kA}, 30s);
  REQUIRE(again);
  CHECK(again->run_id == "a1");
  CHECK_FALSE(queue.claim("wa", {kA}, 30s));
  // A worker configured for both serves both.
  const auto both = queue.claim("wab", {kA, kB}, 30s);
  REQUIRE(both);
  CHECK(both->scope == kB);
}

TEST_CASE("run queue: concurrent claims never hand one run to two workers", "[postgres][fleet]") {
  const std::string table = fresh_table();
  PostgresRunQueue queue(shared_postgres().conninfo(), quick(table));
  constexpr int kRuns = 60;
  for (int i = 0; i < kRuns; ++i) queue.submit(kA, "r" + std::to_string(i), "clerk", "task");
  std::mutex mutex;
  std::map<std::string, std::vector<std::string>> owners;
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&, w] {
      PostgresRunQueue own(shared_postgres().conninfo(), quick(table));  // a connection of its own, as a process
      const std::string name = "w" + std::to_string(w);
      while (auto claim = own.claim(name, {kA}, 30s)) {
        std::lock_guard lock(mutex);
        owners[claim->run_id].push_back(name);
      }
    });
  }
  for (auto& t : workers) t.join();
  REQUIRE(owners.size() == kRuns);
  for (const auto& [run, who] : owners) {
    INFO(run);
    CHECK(who.size() == 1);
  }
}

TEST_CASE("run queue: a worker past its lease cannot touch the run another took over", "[postgres][fleet]") {
  const std::string table = fresh_table();
  PostgresRunQueue queue(shared_postgres().conninfo(), quick(table));
  queue.submit(kA, "r1", "clerk", "task");
  const auto old = queue.claim("w1", {kA}, 30s);
  REQUIRE(old);
  CHECK(queue.heartbeat("w1", *old, 30s));
  expire_leases(table);  // w1 paused past its lease
  const auto taken = queue.claim("w2", {kA}, 30s);
  REQUIRE(taken);
  CHECK(taken->run_id == "r1");
  CHECK(taken->taken_over);
  CHECK(taken->attempt == 2);
  CHECK(taken->lease_token != old->lease_token);
  // w1 wakes up: every change it tries is refused.
  CHECK_FALSE(queue.heartbeat("w1", *old, 30s));
  CHECK_FALSE(queue.mark_done("w1", *old, "stale"));
  CHECK_FALSE(queue.mark_suspended("w1", *old));
  CHECK_FALSE(queue.release("w1", *old));
  // Even under w2's name with the old token.
  CHECK_FALSE(queue.mark_done("w2", *old, "stale"));
  auto info = queue.info(kA, "r1");
  CHECK(info->status == Status::leased);
  CHECK(info->lease_owner == "w2");
  CHECK(queue.heartbeat("w2", *taken, 30s));
  CHECK(queue.mark_done("w2", *taken, "fresh"));
  info = queue.info(kA, "r1");
  CHECK(info->status == Status::done);
  CHECK(info->result == "fresh");
  CHECK_FALSE(queue.mark_done("w2", *taken, "twice"));  // no longer leased
}

TEST_CASE("run queue: decisions make a suspended run runnable and wake a waiting worker", "[postgres][fleet]") {
  const std::string table = fresh_table();
  PostgresRunQueue worker(shared_postgres().conninfo(), quick(table));
  PostgresRunQueue approver(shared_postgres().conninfo(), quick(table));  // another connection (process)
  worker.submit(kA, "r1", "clerk", "task");
  const auto claim = worker.claim("w1", {kA}, 30s);
  REQUIRE(claim);
  CHECK(approver.submit_decisions(kA, "r1", R"({"c1":"approve"})") == Decided::not_suspended);  // running
  REQUIRE(worker.mark_suspended("w1", *claim));
  CHECK(worker.info(kA, "r1")->status == Status::suspended);

  const std::uint64_t seen = worker.wakeups();
  CHECK_FALSE(worker.claim("w1", {kA}, 30s));
  const auto start = std::chrono::steady_clock::now();
  std::thread approve([&] { CHECK(approver.submit_decisions(kA, "r1", R"({"c1":"approve"})") == Decided::runnable); });
  const bool woken = worker.wait(seen, 30s);
  const auto waited = std::chrono::steady_clock::now() - start;
  approve.join();
  CHECK(woken);
  CHECK(waited < 10s);                                                     // the notification, not the 30 s safety net
  CHECK(approver.submit_decisions(kA, "r1", R"({"c1":"reject"})") == Decided::not_suspended);  // runnable already

  const auto resumed = worker.claim("w1", {kA}, 30s);
  REQUIRE(resumed);
  REQUIRE(resumed->decisions);
  CHECK(agentkit::Json::parse(*resumed->decisions) == agentkit::Json{{"c1", "approve"}});
  CHECK(resumed->attempt == 2);
  CHECK_FALSE(resumed->taken_over);
  // Handed to this claim alone: a worker taking the run over (or claiming it
  // after it was given back) cannot know whether the run is still at the
  // suspension they answer, so it never gets them.
  CHECK_FALSE(worker.info(kA, "r1")->decisions);
  REQUIRE(worker.release("w1", *resumed));
  const auto given_back = worker.claim("w2", {kA}, 1ms);
  REQUIRE(given_back);
  CHECK_FALSE(given_back->decisions);
  std::this_thread::sleep_for(50ms);
  const auto taken_over = worker.claim("w3", {kA}, 30s);
  REQUIRE(taken_over);
  CHECK(taken_over->taken_over);
  CHECK_FALSE(taken_over->decisions);
  REQUIRE(worker.mark_suspended("w3", *taken_over));
  CHECK_FALSE(worker.info(kA, "r1")->decisions);
}

TEST_CASE("run queue: wait times out without a notification and interrupt wakes it", "[postgres][fleet]") {
  const std::string table = fresh_table();
  PostgresRunQueue queue(shared_postgres().conninfo(), quick(table));
  std::uint64_t seen = queue.wakeups();
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(queue.wait(seen, 200ms));
  CHECK(std::chrono::steady_clock::now() - start >= 200ms);
  // A notification that arrived before wait() is not lost: wait returns at once.
  PostgresRunQueue other(shared_postgres().conninfo(), quick(table));
  seen = queue.wakeups();
  other.submit(kA, "r1", "clerk", "task");
  CHECK(queue.wait(seen, 30s));
  // Two waiters on one object: interrupt wakes both.
  seen = queue.wakeups();
  std::atomic<int> woken{0};
  std::thread a([&] { woken += queue.wait(seen, 30s); });
  std::thread b([&] { woken += queue.wait(seen, 30s); });
  queue.interrupt();
  a.join();
  b.join();
  CHECK(woken == 2);
}

TEST_CASE("run queue: decisions gather until every awaited call has one and only then wake a worker",
          "[postgres][fleet]") {
  const std::string table = fresh_table();
  PostgresRunQueue worker(shared_postgres().conninfo(), quick(table));
  PostgresRunQueue approver(shared_postgres().conninfo(), quick(table));
  worker.submit(kA, "r1", "clerk", "task");
  const auto claim = worker.claim("w1", {kA}, 30s);
  REQUIRE(claim);
  REQUIRE(worker.mark_suspended("w1", *claim));
  const std::vector<std::string> awaited{"c1", "c2"};

  // Not JSON, or an id no worker could match: refused, nothing changed.
  CHECK_THROWS_AS(approver.submit_decisions(kA, "r1", "approve c1", awaited), agentkit::Error);
  CHECK_THROWS_AS(approver.submit_decisions(kA, "r1", "[1]", awaited), agentkit::Error);
  CHECK_THROWS_AS(approver.submit_decisions(kA, "r1", "{}", {"c1\nc2"}), agentkit::Error);
  CHECK_FALSE(worker.info(kA, "r1")->decisions);

  worker.wait(worker.wakeups(), 200ms);  // takes in the submit's notification
  const std::uint64_t seen = worker.wakeups();
  CHECK(approver.submit_decisions(kA, "r1", R"({"c1":{"kind":"approve"}})", awaited) == Decided::held);
  CHECK(approver.submit_decisions(kA, "r1", R"({"c1":{"kind":"reject"}})", awaited) == Decided::held);  // replaces
  CHECK(worker.info(kA, "r1")->status == Status::suspended);
  CHECK_FALSE(worker.claim("w1", {kA}, 30s));  // half decided: nobody takes it
  CHECK_FALSE(worker.wait(seen, 300ms));       // and nobody was woken

  CHECK(approver.submit_decisions(kA, "r1", R"({"c2":{"kind":"approve"}})", awaited) == Decided::runnable);
  CHECK(worker.wait(seen, 30s));
  const auto resumed = worker.claim("w1", {kA}, 30s);
  REQUIRE(resumed);
  REQUIRE(resumed->decisions);
  CHECK(agentkit::Json::parse(*resumed->decisions) ==
        agentkit::Json::parse(R"({"c1":{"kind":"reject"},"c2":{"kind":"approve"}})"));
}
