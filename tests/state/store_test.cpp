// InMemoryStore: every Store operation, TTLs, scoping and CAS races.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include <agentkit/state/store.h>

using agentkit::state::InMemoryStore;

TEST_CASE("put, get and versions", "[store]") {
  InMemoryStore store;
  CHECK_FALSE(store.get("k").has_value());
  CHECK(store.put("k", "one") == 1);
  CHECK(store.put("k", "two") == 2);
  auto e = store.get("k");
  REQUIRE(e);
  CHECK(e->value == "two");
  CHECK(e->version == 2);
}

TEST_CASE("compare_and_set writes only over the expected version", "[store]") {
  InMemoryStore store;
  CHECK(store.compare_and_set("k", 0, "first") == 1);   // 0: must be absent
  CHECK_FALSE(store.compare_and_set("k", 0, "again"));  // no longer absent
  CHECK_FALSE(store.compare_and_set("k", 7, "stale"));
  CHECK(store.compare_and_set("k", 1, "second") == 2);
  CHECK(store.get("k")->value == "second");
}

TEST_CASE("erase and list by prefix", "[store]") {
  InMemoryStore store;
  store.put("org1:dom1/runs/b", "B");
  store.put("org1:dom1/runs/a", "A");
  store.put("org1:dom1/sessions/x", "X");
  store.put("org2:dom1/runs/c", "C");
  auto runs = store.list("org1:dom1/runs/");
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].first == "org1:dom1/runs/a");
  CHECK(runs[1].second.value == "B");
  CHECK(store.erase("org1:dom1/runs/a"));
  CHECK_FALSE(store.erase("org1:dom1/runs/a"));
  CHECK(store.list("org1:dom1/runs/").size() == 1);
  CHECK(store.list("").size() == 3);
}

TEST_CASE("entries expire after their TTL", "[store]") {
  InMemoryStore store;
  store.put("short", "v", std::chrono::milliseconds(20));
  store.put("long", "v", std::chrono::hours(1));
  CHECK(store.get("short"));
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  CHECK_FALSE(store.get("short"));
  CHECK(store.get("long"));
  CHECK(store.list("").size() == 1);
  CHECK(store.compare_and_set("short", 0, "fresh") == 1);  // an expired key counts as absent
}

TEST_CASE("scoped keys keep tenants apart", "[store]") {
  CHECK(agentkit::state::scoped_key({.org_id = 7, .domain_id = 1}, "runs/r1") == "org7:dom1/runs/r1");
  CHECK(agentkit::state::scoped_key({}, "x") == "global/x");
}

TEST_CASE("two threads racing on compare_and_set: exactly one wins each round", "[store]") {
  InMemoryStore store;
  std::atomic<int> wins{0};
  constexpr int kRounds = 2000;
  auto worker = [&](std::string name) {
    for (int round = 0; round < kRounds; ++round) {
      const std::string key = "round/" + std::to_string(round);
      if (store.compare_and_set(key, 0, name)) ++wins;
    }
  };
  std::thread a(worker, "a"), b(worker, "b");
  a.join();
  b.join();
  CHECK(wins == kRounds);
  CHECK(store.list("round/").size() == kRounds);
}

TEST_CASE("a contended counter loses no increments under compare_and_set", "[store]") {
  InMemoryStore store;
  store.put("n", "0");
  auto worker = [&] {
    for (int i = 0; i < 1000; ++i) {
      for (;;) {
        auto e = store.get("n");
        if (store.compare_and_set("n", e->version, std::to_string(std::stoi(e->value) + 1))) break;
      }
    }
  };
  std::thread a(worker), b(worker);
  a.join();
  b.join();
  CHECK(store.get("n")->value == "2000");
}

#include <agentkit/testing/test_context.h>

TEST_CASE("make_test_ctx carries an in-memory store", "[store]") {
  auto ctx = agentkit::testing::make_test_ctx({.scope = {.org_id = 1}});
  REQUIRE(ctx.store);
  ctx.store->put(agentkit::state::scoped_key(ctx.scope, "k"), "v");
  CHECK(ctx.store->get("org1/k")->value == "v");
  CHECK(ctx.child().store == ctx.store);  // children share it
}
