// The Store contract: every case runs against every backend (InMemoryStore,
// SqliteStore, PostgresStore on a throwaway server), so a backend that
// differs from the others in any promise of <agentkit/state/store.h> fails
// here. What only one backend promises is in its own test file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <agentkit/state/postgres_store.h>
#include <agentkit/state/sqlite_store.h>
#include <agentkit/state/store.h>

#include "../helpers/postgres_server.h"
#include "../helpers/store_races.h"
#include "../helpers/temp_dir.h"

namespace {

using namespace std::chrono_literals;
using agentkit::state::Entry;
using agentkit::state::InMemoryStore;
using agentkit::state::PostgresStore;
using agentkit::state::scoped_key;
using agentkit::state::SqliteStore;
using agentkit::state::Store;
using agentkit_test::increment;
using agentkit_test::keys_of;
using agentkit_test::race_rounds;

// Each backend object is one empty store; open() may be called again for
// another handle on the same data.
struct MemoryBackend {
  std::shared_ptr<InMemoryStore> store = std::make_shared<InMemoryStore>();
  std::shared_ptr<Store> open() { return store; }
};

struct SqliteBackend {
  agentkit_test::TempDir dir;
  std::shared_ptr<Store> open() {
    return std::make_shared<SqliteStore>(dir / "store.db",
                                         SqliteStore::Options{.durability = SqliteStore::Durability::normal});
  }
};

// A fresh table on the server the whole executable shares.
struct PostgresBackend {
  std::string table = agentkit_test::fresh_table();
  std::shared_ptr<Store> open() {
    return std::make_shared<PostgresStore>(agentkit_test::shared_postgres().conninfo(),
                                           PostgresStore::Options{.table = table});
  }
};

#define BACKENDS MemoryBackend, SqliteBackend, PostgresBackend

}  // namespace

TEMPLATE_TEST_CASE("put and get return the value and its version", "[store]", BACKENDS) {
  TestType backend;
  auto store = backend.open();
  CHECK_FALSE(store->get("k").has_value());
  CHECK(store->put("k", "one") == 1);
  CHECK(store->put("k", "two") == 2);
  auto e = store->get("k");
  REQUIRE(e);
  CHECK(e->value == "two");
  CHECK(e->version == 2);
}

TEMPLATE_TEST_CASE("keys and values are arbitrary bytes", "[store]", BACKENDS) {
  TestType backend;
  auto store = backend.open();
  const std::string binary("a\0b\xff\x01%_", 7);
  store->put(binary, binary);
  store->put("", "");
  store->put("ключ/日本", "значение \xF0\x9F\x98\x80");
  store->put("a_", std::string("\0", 1));
  CHECK(store->get(binary)->value == binary);
  CHECK(store->get(std::string("a\0c", 3)) == std::nullopt);  // not confused with a truncated key
  CHECK(store->get("a%") == std::nullopt);                    // '%' and '_' are no patterns
  CHECK(store->get("ab") == std::nullopt);
  CHECK(store->get("a_")->value == std::string("\0", 1));
  CHECK(store->get("ключ/日本")->value == "значение \xF0\x9F\x98\x80");
  REQUIRE(store->get(""));
  CHECK(store->get("")->value.empty());
}

TEMPLATE_TEST_CASE("compare_and_set writes only over the expected version", "[store]", BACKENDS) {
  TestType backend;
  auto store = backend.open();
  CHECK_FALSE(store->compare_and_set("k", 1, "none yet"));  // absent is version 0 only
  CHECK_FALSE(store->get("k"));
  CHECK(store->compare_and_set("k", 0, "first") == 1);   // 0: must be absent
  CHECK_FALSE(store->compare_and_set("k", 0, "again"));  // no longer absent
  CHECK_FALSE(store->compare_and_set("k", 7, "stale"));
  CHECK_FALSE(store->compare_and_set("k", -1, "negative"));
  CHECK(store->get("k")->value == "first");  // losers wrote nothing
  CHECK(store->get("k")->version == 1);
  CHECK(store->compare_and_set("k", 1, "second") == 2);
  CHECK(store->get("k")->value == "second");
}

TEMPLATE_TEST_CASE("erase removes a key and restarts its versions", "[store]", BACKENDS) {
  TestType backend;
  auto store = backend.open();
  store->put("k", "a");
  store->put("k", "b");
  CHECK(store->erase("k"));
  CHECK_FALSE(store->erase("k"));
  CHECK_FALSE(store->get("k"));
  CHECK_FALSE(store->erase("never"));
  CHECK(store->compare_and_set("k", 0, "again") == 1);
}

TEMPLATE_TEST_CASE("list returns the live entries under a prefix sorted by key", "[store]", BACKENDS) {
  TestType backend;
  auto store = backend.open();
  store->put("org1:dom1/runs/b", "B");
  store->put("org1:dom1/runs/a", "A");
  store->put("org1:dom1/sessions/x", "X");
  store->put("org2:dom1/runs/c", "C");
  auto runs = store->list("org1:dom1/runs/");
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].first == "org1:dom1/runs/a");
  CHECK(runs[0].second.value == "A");
  CHECK(runs[1].first == "org1:dom1/runs/b");
  CHECK(runs[1].second.value == "B");
  CHECK(runs[1].second.version == 1);
  CHECK(store->erase("org1:dom1/runs/a"));
  CHECK(store->list("org1:dom1/runs/").size() == 1);
  CHECK(store->list("").size() == 3);
  CHECK(store->list("org3").empty());
  CHECK(store->list("org1:dom1/runs/bb").empty());
}

TEMPLATE_TEST_CASE("list treats percent and underscore and non-ASCII bytes literally", "[store]", BACKENDS) {
  TestType backend;
  auto store = backend.open();
  for (const char* key :
       {"a%b/1", "a%c", "a_b", "axb", "aXc", "ключ/1", "ключ/2", "ключи", "日本/x", "p\xff", "p\xff\xff", "q"}) {
    store->put(key, "v");
  }
  CHECK(keys_of(store->list("a%")) == std::vector<std::string>{"a%b/1", "a%c"});
  CHECK(keys_of(store->list("a_")) == std::vector<std::string>{"a_b"});
  CHECK(keys_of(store->list("ключ/")) == std::vector<std::string>{"ключ/1", "ключ/2"});
  CHECK(keys_of(store->list("日本")) == std::vector<std::string>{"日本/x"});
  CHECK(keys_of(store->list("p\xff")) == std::vector<std::string>{"p\xff", "p\xff\xff"});
  // Bytewise order, as std::string compares: 'X' < '_' < 'x' < UTF-8 lead bytes < 0xff.
  CHECK(keys_of(store->list("a")) == std::vector<std::string>{"a%b/1", "a%c", "aXc", "a_b", "axb"});
  const auto all = keys_of(store->list(""));
  CHECK(std::is_sorted(all.begin(), all.end()));
  CHECK(all.size() == 12);
}

TEMPLATE_TEST_CASE("entries expire after their TTL", "[store]", BACKENDS) {
  TestType backend;
  auto store = backend.open();
  store->put("zero", "v", 0ms);
  store->put("long", "v", std::chrono::hours(1));
  store->put("forever", "v");
  store->put("renewed", "v", 30ms);
  store->put("renewed", "v");  // a write without a TTL clears the old one
  for (const char* key : {"short", "stale", "erased", "recreated", "overwritten"}) store->put(key, "v", 30ms);
  CHECK_FALSE(store->get("zero"));
  CHECK(store->get("long"));  // alive right after a long TTL
  store->put("huge", "v", std::chrono::milliseconds::max());  // saturates instead of overflowing into the past
  CHECK(store->get("huge"));
  std::this_thread::sleep_for(300ms);
  // Each expired key is met first by a different operation, before anything
  // has dropped its row.
  CHECK_FALSE(store->get("short"));
  CHECK_FALSE(store->compare_and_set("stale", 1, "over expired"));  // its old version is gone
  CHECK_FALSE(store->erase("erased"));                              // nothing live to erase
  CHECK(store->compare_and_set("recreated", 0, "fresh") == 1);      // an expired key counts as absent
  CHECK(store->put("overwritten", "again") == 1);                   // and its versions restart
  CHECK(store->get("long"));
  CHECK(store->get("forever"));
  CHECK(store->get("renewed"));
  CHECK(keys_of(store->list("")) == std::vector<std::string>{"forever", "huge", "long", "overwritten", "recreated", "renewed"});
  CHECK_FALSE(store->get("stale"));
}

TEMPLATE_TEST_CASE("scoped keys keep tenants apart", "[store]", BACKENDS) {
  TestType backend;
  auto store = backend.open();
  const agentkit::Scope tenant1{.org_id = 1, .domain_id = 1};
  const agentkit::Scope tenant10{.org_id = 1, .domain_id = 10};
  CHECK(scoped_key(tenant1, "runs/r1") == "org1:dom1/runs/r1");
  store->put(scoped_key(tenant1, "runs/r1"), "one");
  store->put(scoped_key(tenant10, "runs/r1"), "ten");
  CHECK(store->get(scoped_key(tenant1, "runs/r1"))->value == "one");
  CHECK(store->get(scoped_key(tenant10, "runs/r1"))->value == "ten");
  const auto listed = store->list(scoped_key(tenant1, ""));  // "org1:dom1/" does not match "org1:dom10/"
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].second.value == "one");
  CHECK(scoped_key({}, "x") == "global/x");
}

TEMPLATE_TEST_CASE("two threads racing on compare_and_set: exactly one wins each round", "[store]", BACKENDS) {
  TestType backend;
  auto store = backend.open();
  constexpr int kRounds = 300;
  std::vector<std::atomic<int>> wins(kRounds);
  race_rounds(kRounds, [&](int thread, int round) {
    if (store->compare_and_set("round/" + std::to_string(round), 0, std::to_string(thread))) ++wins[round];
  });
  CHECK(std::all_of(wins.begin(), wins.end(), [](const auto& w) { return w == 1; }));
  CHECK(store->list("round/").size() == kRounds);
}

TEMPLATE_TEST_CASE("a contended counter loses no increments under compare_and_set", "[store]", BACKENDS) {
  TestType backend;
  auto store = backend.open();
  store->put("n", "0");
  auto worker = [&] {
    for (int i = 0; i < 500; ++i) increment(*store, "n");
  };
  std::thread a(worker), b(worker);
  a.join();
  b.join();
  CHECK(store->get("n")->value == "1000");
  CHECK(store->get("n")->version == 1001);
}

TEMPLATE_TEST_CASE("values of several MiB round-trip intact", "[store]", BACKENDS) {
  TestType backend;
  auto store = backend.open();
  std::string big(6 << 20, '\0');
  std::mt19937 random(42);
  std::generate(big.begin(), big.end(), [&] { return static_cast<char>(random()); });
  CHECK(store->put("big", big) == 1);
  CHECK(store->get("big")->value == big);
  CHECK(store->compare_and_set("big", 1, big + "!") == 2);
  const auto listed = store->list("b");
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].second.value == big + "!");
}

TEMPLATE_TEST_CASE("writers on several threads lose no write", "[store]", BACKENDS) {
  TestType backend;
  auto store = backend.open();
  constexpr int kThreads = 6;
  constexpr int kKeys = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kKeys; ++k) {
        const std::string key = "w/" + std::to_string(t) + "/" + std::to_string(k);
        store->put(key, "first");
        store->put(key, "second");
        store->put("shared/" + std::to_string(k), std::to_string(t));  // every thread writes these
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const auto own = store->list("w/");
  REQUIRE(own.size() == kThreads * kKeys);
  CHECK(std::all_of(own.begin(), own.end(),
                    [](const auto& e) { return e.second.value == "second" && e.second.version == 2; }));
  const auto shared = store->list("shared/");
  REQUIRE(shared.size() == kKeys);
  CHECK(std::all_of(shared.begin(), shared.end(), [](const auto& e) { return e.second.version == kThreads; }));
}

TEMPLATE_TEST_CASE("another handle on the same backend sees every write", "[store]", BACKENDS) {
  TestType backend;
  auto first = backend.open();
  auto second = backend.open();
  first->put("k", "v");
  CHECK(second->get("k")->value == "v");
  CHECK(second->compare_and_set("k", 1, "w") == 2);
  CHECK_FALSE(first->compare_and_set("k", 1, "stale"));
  CHECK(first->get("k")->value == "w");
}
