// The Store contract, run against every backend (InMemoryStore, SqliteStore),
// then what only SqliteStore promises: reopen, durability across SIGKILL, two
// connections and two processes racing, the WAL journal, refusing bad files.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <agentkit/state/sqlite_store.h>
#include <agentkit/state/store.h>
#include <agentkit/testing/test_context.h>

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using agentkit::state::Entry;
using agentkit::state::InMemoryStore;
using agentkit::state::scoped_key;
using agentkit::state::SqliteStore;
using agentkit::state::Store;
using agentkit::state::StoreError;
using Catch::Matchers::Contains;

// A fresh directory under the system temp directory, removed with its
// contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "agentkit-store-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::permissions(path_, fs::perms::owner_all, ignored);
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// Fast settings for tests that do not test durability.
SqliteStore::Options quick() { return {.durability = SqliteStore::Durability::normal}; }

struct MemoryBackend {
  std::unique_ptr<Store> open() { return std::make_unique<InMemoryStore>(); }
};

struct SqliteBackend {
  TempDir dir;
  std::unique_ptr<Store> open() { return std::make_unique<SqliteStore>(dir / "store.db", quick()); }
};

std::vector<std::string> keys_of(const std::vector<std::pair<std::string, Entry>>& entries) {
  std::vector<std::string> keys;
  for (const auto& entry : entries) keys.push_back(entry.first);
  return keys;
}

// Adds one to the integer stored at `key`, retrying lost compare_and_set
// races. The yield between read and write lets racing writers interleave.
void increment(Store& store, const std::string& key) {
  for (;;) {
    const auto entry = store.get(key);
    std::this_thread::yield();
    if (store.compare_and_set(key, entry->version, std::to_string(std::stoi(entry->value) + 1))) return;
  }
}

// Two threads each call attempt(round) for every round, starting each round
// together, so every round is a real race.
template <typename Attempt>
void race_rounds(int rounds, Attempt attempt) {
  std::barrier start(2);
  auto worker = [&](int thread) {
    for (int round = 0; round < rounds; ++round) {
      start.arrive_and_wait();
      attempt(thread, round);
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
}

}  // namespace

// ---- The contract, on every backend ----

TEMPLATE_TEST_CASE("put, get and versions", "[store]", MemoryBackend, SqliteBackend) {
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

TEMPLATE_TEST_CASE("keys and values are arbitrary bytes", "[store]", MemoryBackend, SqliteBackend) {
  TestType backend;
  auto store = backend.open();
  const std::string binary("a\0b\xff\x01", 5);
  store->put(binary, binary);
  store->put("", "");
  CHECK(store->get(binary)->value == binary);
  CHECK(store->get(std::string("a\0c", 3)) == std::nullopt);  // not confused with a truncated key
  REQUIRE(store->get(""));
  CHECK(store->get("")->value.empty());
}

TEMPLATE_TEST_CASE("compare_and_set writes only over the expected version", "[store]", MemoryBackend,
                   SqliteBackend) {
  TestType backend;
  auto store = backend.open();
  CHECK_FALSE(store->compare_and_set("k", 1, "none yet"));  // absent is version 0 only
  CHECK_FALSE(store->get("k"));
  CHECK(store->compare_and_set("k", 0, "first") == 1);     // 0: must be absent
  CHECK_FALSE(store->compare_and_set("k", 0, "again"));    // no longer absent
  CHECK_FALSE(store->compare_and_set("k", 7, "stale"));
  CHECK_FALSE(store->compare_and_set("k", -1, "negative"));
  CHECK(store->get("k")->value == "first");  // losers wrote nothing
  CHECK(store->get("k")->version == 1);
  CHECK(store->compare_and_set("k", 1, "second") == 2);
  CHECK(store->get("k")->value == "second");
}

TEMPLATE_TEST_CASE("erase removes a key and restarts its versions", "[store]", MemoryBackend, SqliteBackend) {
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

TEMPLATE_TEST_CASE("list returns live entries under a prefix, sorted by key", "[store]", MemoryBackend,
                   SqliteBackend) {
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

TEMPLATE_TEST_CASE("list treats '%', '_' and non-ASCII bytes literally", "[store]", MemoryBackend, SqliteBackend) {
  TestType backend;
  auto store = backend.open();
  for (const char* key : {"a%b/1", "a%c", "a_b", "axb", "aXc", "ключ/1", "ключ/2", "ключи", "日本/x", "p\xff", "p\xff\xff",
                          "q"}) {
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

TEMPLATE_TEST_CASE("entries expire after their TTL", "[store]", MemoryBackend, SqliteBackend) {
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
  CHECK(keys_of(store->list("")) == std::vector<std::string>{"forever", "long", "overwritten", "recreated", "renewed"});
  CHECK_FALSE(store->get("stale"));
}

TEMPLATE_TEST_CASE("scoped keys keep tenants apart", "[store]", MemoryBackend, SqliteBackend) {
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

TEMPLATE_TEST_CASE("two threads racing on compare_and_set: exactly one wins each round", "[store]", MemoryBackend,
                   SqliteBackend) {
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

TEMPLATE_TEST_CASE("a contended counter loses no increments under compare_and_set", "[store]", MemoryBackend,
                   SqliteBackend) {
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

TEST_CASE("make_test_ctx carries an in-memory store", "[store]") {
  auto ctx = agentkit::testing::make_test_ctx({.scope = {.org_id = 1}});
  REQUIRE(ctx.store);
  ctx.store->put(scoped_key(ctx.scope, "k"), "v");
  CHECK(ctx.store->get("org1/k")->value == "v");
  CHECK(ctx.child().store == ctx.store);  // children share it
}

// ---- SqliteStore only ----

namespace {

// Runs `body` in a forked child that exits with its return value (99 if it
// throws); returns the child's pid. The child never returns into the test.
template <typename Body>
pid_t fork_child(Body body) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  int code = 99;
  try {
    code = body();
  } catch (...) {
  }
  ::_exit(code);
}

int wait_for(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

std::string read_bytes(const fs::path& path, std::streamoff offset, std::size_t count) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(offset);
  std::string bytes(count, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(count));
  return bytes;
}

void write_bytes(const fs::path& path, std::streamoff offset, const std::string& bytes) {
  std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
  out.seekp(offset);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Offsets in the SQLite file header.
constexpr std::streamoff kWriteVersion = 18;  // 2 means WAL
constexpr std::streamoff kUserVersion = 60;
constexpr std::streamoff kApplicationId = 68;

}  // namespace

TEST_CASE("sqlite: entries survive closing and reopening the file", "[store][sqlite]") {
  TempDir dir;
  {
    SqliteStore store(dir / "store.db", quick());
    store.put("k", "one");
    store.put("k", "two");
    store.put("ttl", "v", std::chrono::hours(1));
    store.put("gone", "v", 0ms);
  }
  SqliteStore store(dir / "store.db", quick());
  CHECK(store.path() == dir / "store.db");
  REQUIRE(store.get("k"));
  CHECK(store.get("k")->value == "two");
  CHECK(store.get("k")->version == 2);
  CHECK(store.get("ttl"));
  CHECK_FALSE(store.get("gone"));
  CHECK(store.put("k", "three") == 3);
}

TEST_CASE("sqlite: a huge TTL does not overflow into the past", "[store][sqlite]") {
  TempDir dir;
  SqliteStore store(dir / "store.db", quick());
  store.put("k", "v", std::chrono::milliseconds::max());
  CHECK(store.get("k"));
}

TEST_CASE("sqlite: the file uses a WAL journal", "[store][sqlite]") {
  TempDir dir;
  {
    SqliteStore store(dir / "store.db");
    store.put("k", "v");
    CHECK(fs::exists(dir / "store.db-wal"));
  }
  CHECK(read_bytes(dir / "store.db", kWriteVersion, 2) == std::string("\x02\x02", 2));
}

TEST_CASE("sqlite: two connections racing on compare_and_set: exactly one wins each round", "[store][sqlite]") {
  TempDir dir;
  SqliteStore first(dir / "store.db", quick());
  SqliteStore second(dir / "store.db", quick());
  SqliteStore* connections[] = {&first, &second};
  constexpr int kRounds = 200;
  std::vector<std::atomic<int>> wins(kRounds);
  race_rounds(kRounds, [&](int thread, int round) {
    if (connections[thread]->compare_and_set("round/" + std::to_string(round), 0, std::to_string(thread))) {
      ++wins[round];
    }
  });
  CHECK(std::all_of(wins.begin(), wins.end(), [](const auto& w) { return w == 1; }));
  CHECK(first.list("round/").size() == kRounds);
}

TEST_CASE("sqlite: a counter shared by two processes loses no increments", "[store][sqlite]") {
  TempDir dir;
  const fs::path file = dir / "store.db";
  SqliteStore(file, quick()).put("n", "0");  // closed again: no connection may cross fork()
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  constexpr int kEach = 200;
  const pid_t child = fork_child([&] {
    SqliteStore store(file, quick());
    if (::write(ready[1], "r", 1) != 1) return 2;
    for (int i = 0; i < kEach; ++i) increment(store, "n");
    return 0;
  });
  REQUIRE(child > 0);
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);  // the child is open and starting
  SqliteStore parent(file, quick());
  for (int i = 0; i < kEach; ++i) increment(parent, "n");
  const int status = wait_for(child);
  ::close(ready[0]);
  ::close(ready[1]);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(parent.get("n")->value == std::to_string(2 * kEach));
}

TEST_CASE("sqlite: with full durability a write survives SIGKILL right after put returns", "[store][sqlite]") {
  TempDir dir;
  const fs::path file = dir / "store.db";
  const pid_t child = fork_child([&] {
    SqliteStore store(file, {.durability = SqliteStore::Durability::full});
    store.put("k", "durable");
    ::raise(SIGKILL);  // no destructor, no close, no checkpoint
    return 1;
  });
  REQUIRE(child > 0);
  const int status = wait_for(child);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK(fs::file_size(file.string() + "-wal") > 0);  // the write is only in the WAL
  SqliteStore reopened(file);
  REQUIRE(reopened.get("k"));
  CHECK(reopened.get("k")->value == "durable");
}

TEST_CASE("sqlite: a file that is not a database is refused with its path", "[store][sqlite]") {
  TempDir dir;
  const fs::path file = dir / "garbage.db";
  std::ofstream(file) << std::string(4096, 'x');
  CHECK_THROWS_AS(SqliteStore(file), StoreError);
  CHECK_THROWS_WITH(SqliteStore(file), Contains(file.string()) && Contains("not a database"));
  CHECK(read_bytes(file, 0, 16) == std::string(16, 'x'));  // left untouched
}

TEST_CASE("sqlite: another application's database or a newer schema is refused", "[store][sqlite]") {
  TempDir dir;
  const fs::path file = dir / "store.db";
  { SqliteStore store(file); }  // closing checkpoints the WAL into the file header
  SECTION("newer schema version") {
    write_bytes(file, kUserVersion, std::string("\0\0\0\x02", 4));
    CHECK_THROWS_WITH(SqliteStore(file), Contains(file.string()) && Contains("schema version 2") &&
                                             Contains("newer agentkit"));
  }
  SECTION("foreign application id") {
    write_bytes(file, kApplicationId, "ABCD");
    CHECK_THROWS_WITH(SqliteStore(file), Contains(file.string()) && Contains("not an agentkit store"));
  }
}

TEST_CASE("sqlite: a location that cannot be written is refused with its path", "[store][sqlite]") {
  TempDir dir;
  const fs::path not_a_dir = dir / "plain-file";
  std::ofstream(not_a_dir) << "x";
  const fs::path under_file = not_a_dir / "store.db";
  CHECK_THROWS_WITH(SqliteStore(under_file), Contains(under_file.string()) && Contains("cannot open"));
  const fs::path missing = dir / "missing" / "store.db";
  CHECK_THROWS_WITH(SqliteStore(missing), Contains(missing.string()) && Contains("No such file"));

  // Permission bits do not bind root, so this part only runs unprivileged.
  if (::geteuid() != 0) {
    fs::create_directory(dir / "locked");
    fs::permissions(dir / "locked", fs::perms::owner_read | fs::perms::owner_exec);
    const fs::path locked = dir / "locked" / "store.db";
    CHECK_THROWS_WITH(SqliteStore(locked), Contains(locked.string()) && Contains("Permission denied"));
  }
}
