// What only PostgresStore promises (the contract every backend keeps is in
// store_contract_test.cpp): failures are typed StoreErrors that name the
// server and never a password, a lost server is survived, reads are retried
// and a write is never sent twice, timeouts hold, foreign tables are refused.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <agentkit/state/postgres_store.h>

#include "../helpers/postgres_server.h"
#include "../helpers/temp_dir.h"

namespace {

using namespace std::chrono_literals;
using agentkit::ErrorCode;
using agentkit::state::PostgresStore;
using agentkit::state::StoreError;
using agentkit_test::fresh_table;
using agentkit_test::PostgresServer;
using agentkit_test::PostgresSession;
using agentkit_test::shared_postgres;
using Catch::Matchers::Contains;

PostgresStore::Options quick(std::string table) {
  return {.attempts = 2, .backoff = {.base = 10ms, .max = 50ms}, .table = std::move(table)};
}

// The StoreError `call` throws (fails the test when it throws nothing else).
template <typename Call>
StoreError store_error(Call call) {
  try {
    call();
  } catch (const StoreError& e) {
    return e;
  }
  FAIL("no StoreError thrown");
  throw std::logic_error("unreachable");
}

// Waits until a backend of `application` waits for a lock; returns its pid.
std::string waiting_backend(PostgresSession& session, const std::string& application) {
  for (int i = 0; i < 500; ++i) {
    const std::string pid = session.exec(
        "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name = '" + application + "'");
    if (!pid.empty()) return pid;
    std::this_thread::sleep_for(10ms);
  }
  FAIL("no backend of " << application << " ever waited for the lock");
  return {};
}

// A TCP listener on 127.0.0.1 that never accepts: connections complete in
// the kernel's backlog and then hear nothing, like a hung server.
class SilentListener {
 public:
  SilentListener() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&address), size) == 0);
    REQUIRE(::listen(fd_, 16) == 0);
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size) == 0);
    port_ = ntohs(address.sin_port);
  }
  ~SilentListener() { ::close(fd_); }
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;

  int port() const noexcept { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

}  // namespace

TEST_CASE("postgres: entries and versions survive closing and reopening the store", "[store][postgres]") {
  const std::string table = fresh_table();
  {
    PostgresStore store(shared_postgres().conninfo(), quick(table));
    store.put("k", "one");
    store.put("k", "two");
    store.put("gone", "v", 0ms);
  }
  PostgresStore store(shared_postgres().conninfo(), quick(table));
  CHECK(store.get("k")->version == 2);
  CHECK_FALSE(store.get("gone"));
  CHECK(store.put("k", "three") == 3);
}

TEST_CASE("postgres: a TTL is an expiry on the server's clock", "[store][postgres]") {
  const std::string table = fresh_table();
  PostgresStore store(shared_postgres().conninfo(), quick(table));
  store.put("hour", "v", std::chrono::hours(1));
  store.put("huge", "v", std::chrono::milliseconds::max());  // saturates instead of overflowing
  CHECK(shared_postgres().sql("SELECT count(*) FROM " + table +
                              " WHERE key = 'hour' AND expires_at BETWEEN now() + interval '59 minutes'"
                              " AND now() + interval '61 minutes'") == "1");
  CHECK(store.get("huge"));
}

TEST_CASE("postgres: a stopped server gives a StoreError and the store recovers when it is back", "[store][postgres]") {
  PostgresServer server;  // its own: this case stops it
  PostgresStore store(server.conninfo(), quick(fresh_table()));
  store.put("k", "v1");
  server.stop();

  const StoreError read = store_error([&] { store.get("k"); });
  CHECK(read.code() == ErrorCode::unavailable);
  CHECK_THAT(read.what(), Contains(server.socket_dir().string()) && Contains("cannot connect"));
  // The pooled connection was found dead before anything was sent, so the
  // write's outcome is known: not applied.
  CHECK(store_error([&] { store.put("k", "v2"); }).code() == ErrorCode::unavailable);

  server.start();
  REQUIRE(store.get("k"));
  CHECK(store.get("k")->value == "v1");
  CHECK(store.put("k", "v2") == 2);
}

TEST_CASE("postgres: a read whose connection breaks is retried and a write is not", "[store][postgres]") {
  const std::string table = fresh_table();
  PostgresStore store(shared_postgres().conninfo() + " application_name=" + table, quick(table));
  store.put("k", "v1");
  PostgresSession locker(shared_postgres().conninfo());
  PostgresSession watcher(shared_postgres().conninfo());
  locker.exec("BEGIN; LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE");

  auto read = std::async(std::launch::async, [&] { return store.get("k"); });
  watcher.exec("SELECT pg_terminate_backend(" + waiting_backend(watcher, table) + ")");
  waiting_backend(watcher, table);  // the read, again, on a new connection
  locker.exec("ROLLBACK");
  const auto entry = read.get();
  REQUIRE(entry);
  CHECK(entry->value == "v1");

  locker.exec("BEGIN; LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE");
  auto write = std::async(std::launch::async, [&] { return store.put("k", "v2"); });
  watcher.exec("SELECT pg_terminate_backend(" + waiting_backend(watcher, table) + ")");
  const StoreError unknown = store_error([&] { write.get(); });
  locker.exec("ROLLBACK");
  CHECK(unknown.code() == ErrorCode::outcome_unknown);
  CHECK_THAT(unknown.what(), Contains("may or may not have been applied"));
  CHECK(store.get("k")->version == 1);  // sent once, and that one was cut off
}

TEST_CASE("postgres: a statement running past statement_timeout fails with code timeout", "[store][postgres]") {
  const std::string table = fresh_table();
  auto options = quick(table);
  options.statement_timeout = 200ms;
  PostgresStore store(shared_postgres().conninfo(), options);
  store.put("k", "v1");
  PostgresSession locker(shared_postgres().conninfo());
  locker.exec("BEGIN; LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE");
  const auto started = std::chrono::steady_clock::now();
  const StoreError timeout = store_error([&] { store.put("k", "v2"); });
  CHECK(std::chrono::steady_clock::now() - started < 5s);
  locker.exec("ROLLBACK");
  CHECK(timeout.code() == ErrorCode::timeout);
  CHECK_THAT(timeout.what(), Contains("statement timeout") && Contains(table));
  CHECK(store.get("k")->value == "v1");  // the server rolled it back; the store goes on
  CHECK(store.put("k", "v2") == 2);
}

TEST_CASE("postgres: an unreachable server fails within connect_timeout", "[store][postgres]") {
  SECTION("nothing listens on the socket") {
    const std::string dir = shared_postgres().socket_dir().string() + "/missing";
    const StoreError refused = store_error([&] { PostgresStore("host=" + dir + " dbname=x", quick("t")); });
    CHECK(refused.code() == ErrorCode::unavailable);
    CHECK_THAT(refused.what(), Contains(dir) && Contains("cannot connect"));
  }
  SECTION("a server that accepts and never answers") {
    SilentListener silent;
    auto options = quick("t");
    options.connect_timeout = 2s;
    options.attempts = 1;
    const auto started = std::chrono::steady_clock::now();
    const StoreError hung = store_error([&] {
      PostgresStore("hostaddr=127.0.0.1 port=" + std::to_string(silent.port()) + " sslmode=disable gssencmode=disable",
                    options);
    });
    const auto took = std::chrono::steady_clock::now() - started;
    CHECK(took >= 1s);
    CHECK(took < 8s);
    CHECK_THAT(hung.what(), Contains("127.0.0.1:" + std::to_string(silent.port())) && Contains("timeout"));
  }
}

TEST_CASE("postgres: a password never appears in an error", "[store][postgres]") {
  const std::string role = PostgresServer::kPasswordRole;
  shared_postgres().sql("DO $$ BEGIN IF to_regrole('" + role + "') IS NULL THEN CREATE ROLE " + role +
                        " LOGIN PASSWORD 'right-password-0123'; END IF; END $$; GRANT ALL ON SCHEMA public TO " + role);
  const std::string server = "host=" + shared_postgres().socket_dir().string() + " port=5432 dbname=postgres";
  PostgresStore works(server + " user=" + role + " password=right-password-0123", quick(fresh_table()));
  CHECK(works.put("k", "v") == 1);  // so the password is really sent and checked

  for (const std::string password : {"wrong-password-4567", "Zq7#xY2"}) {
    const StoreError e =
        store_error([&] { PostgresStore(server + " user=" + role + " password=" + password, quick("t")); });
    CHECK_THAT(e.what(), Contains("password authentication failed") && !Contains(password));
  }
  const std::string uri = "postgresql://" + role +
                          ":wrong-password-4567@/postgres?host=" + shared_postgres().socket_dir().string() +
                          "&port=5432";
  CHECK_THAT(store_error([&] { PostgresStore(uri, quick("t")); }).what(),
             Contains("password authentication failed") && !Contains("wrong-password-4567"));
  try {
    PostgresStore("host=x password=secret-pass-8910 garbage", quick("t"));
    FAIL("an invalid connection string was accepted");
  } catch (const agentkit::Error& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK_THAT(e.what(), !Contains("secret-pass-8910"));
  }
}

TEST_CASE("postgres: a table of another application or a newer schema is refused", "[store][postgres]") {
  const std::string table = fresh_table();
  SECTION("another application's table") {
    shared_postgres().sql("CREATE TABLE " + table + " (id int)");
    CHECK_THROWS_WITH(PostgresStore(shared_postgres().conninfo(), quick(table)),
                      Contains(table) && Contains("not an agentkit store"));
  }
  SECTION("a newer schema version") {
    { PostgresStore store(shared_postgres().conninfo(), quick(table)); }
    shared_postgres().sql("COMMENT ON TABLE " + table + " IS 'agentkit store 2'");
    CHECK_THROWS_WITH(PostgresStore(shared_postgres().conninfo(), quick(table)),
                      Contains(shared_postgres().socket_dir().string()) && Contains("schema version 2") &&
                          Contains("newer agentkit"));
  }
  SECTION("a name that is not schema.table") {
    CHECK_THROWS_AS(PostgresStore(shared_postgres().conninfo(), quick("x; DROP TABLE y")), agentkit::Error);
  }
}

TEST_CASE("postgres: a schema-qualified table lives in that schema", "[store][postgres]") {
  const std::string schema = "s_" + fresh_table();
  shared_postgres().sql("CREATE SCHEMA " + schema);
  PostgresStore store(shared_postgres().conninfo(), quick(schema + ".store"));
  store.put("k", "v");
  CHECK(shared_postgres().sql("SELECT count(*) FROM " + schema + ".store") == "1");
}

TEST_CASE("postgres: the pool opens at most pool_size connections", "[store][postgres]") {
  const std::string table = fresh_table();
  auto options = quick(table);
  options.pool_size = 2;
  PostgresStore store(shared_postgres().conninfo() + " application_name=" + table, options);
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 30; ++i) store.put("k" + std::to_string(t), std::to_string(i));
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(shared_postgres().sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + table + "'") == "2");
}

TEST_CASE("postgres: TLS and the standard libpq settings (URI, environment, sslmode, sslrootcert)", "[store][postgres]") {
  // A server of its own that takes TCP connections on 127.0.0.1 over TLS only.
  static PostgresServer tls(/*tls=*/true);
  const std::string tcp = "host=127.0.0.1 port=" + std::to_string(tls.tcp_port()) + " user=agentkit dbname=postgres";
  const auto works = [](PostgresStore store) {
    store.put("k", "v");
    const auto entry = store.get("k");
    return entry && entry->value == "v";
  };

  SECTION("verify-full against the server's certificate as the root") {
    CHECK(works(PostgresStore(tcp + " sslmode=verify-full sslrootcert=" + tls.certificate().string(), quick(fresh_table()))));
  }
  SECTION("a URI with sslmode=require") {
    CHECK(works(PostgresStore("postgresql://agentkit@127.0.0.1:" + std::to_string(tls.tcp_port()) +
                                  "/postgres?sslmode=require",
                              quick(fresh_table()))));
  }
  SECTION("the libpq environment: PGHOST, PGPORT, PGUSER, PGDATABASE, PGSSLMODE, PGSSLROOTCERT") {
    const std::vector<std::pair<const char*, std::string>> env{
        {"PGHOST", "127.0.0.1"},          {"PGPORT", std::to_string(tls.tcp_port())},
        {"PGUSER", "agentkit"},           {"PGDATABASE", "postgres"},
        {"PGSSLMODE", "verify-full"},     {"PGSSLROOTCERT", tls.certificate().string()}};
    for (const auto& [name, value] : env) ::setenv(name, value.c_str(), 1);
    const bool ok = works(PostgresStore("", quick(fresh_table())));
    for (const auto& [name, value] : env) ::unsetenv(name);
    CHECK(ok);
  }
  SECTION("plain TCP is refused by the server, with a typed error") {
    try {
      PostgresStore store(tcp + " sslmode=disable", quick(fresh_table()));
      FAIL("connected without TLS");
    } catch (const StoreError& e) {
      CHECK(e.code() == ErrorCode::unavailable);
      CHECK_THAT(e.what(), Contains("127.0.0.1"));
    }
  }
  SECTION("a server certificate from another authority is refused") {
    agentkit_test::TempDir other;
    const std::string cert = (other / "other.crt").string(), key = (other / "other.key").string();
    REQUIRE(std::system(("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -keyout " + key +
                         " -out " + cert + " >/dev/null 2>&1")
                            .c_str()) == 0);
    try {
      PostgresStore store(tcp + " sslmode=verify-full sslrootcert=" + cert, quick(fresh_table()));
      FAIL("connected to a server whose certificate does not verify");
    } catch (const StoreError& e) {
      CHECK_THAT(e.what(), Contains("certificate"));
    }
  }
}
