// What only SqliteStore promises (the contract every backend keeps is in
// store_contract_test.cpp): reopen, durability across SIGKILL, two
// connections and two processes racing, the WAL journal, refusing bad files.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <agentkit/state/sqlite_store.h>
#include <agentkit/state/store.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/store_races.h"
#include "../helpers/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using agentkit::state::scoped_key;
using agentkit::state::SqliteStore;
using agentkit::state::StoreError;
using agentkit_test::increment;
using agentkit_test::race_rounds;
using agentkit_test::TempDir;
using Catch::Matchers::Contains;

// Fast settings for tests that do not test durability.
SqliteStore::Options quick() { return {.durability = SqliteStore::Durability::normal}; }

}  // namespace

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
