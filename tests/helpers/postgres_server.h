// A throwaway PostgreSQL server for tests: initdb into a fresh temporary
// directory, listening only on a Unix socket in that directory (no TCP port,
// so tests run offline and never meet another server), fsync off. Stopped and
// removed with its directory on destruction.
//
// The binaries come from $AGENTKIT_PG_BIN (a directory holding initdb and
// pg_ctl) or the newest /usr/lib/postgresql/<version>/bin; when neither has
// them the constructor throws, naming `make deps`, so the cases that need a
// server fail instead of passing unnoticed. PostgreSQL refuses to run as
// root: under root (CI) the server runs as the `postgres` system user, which
// the Debian package creates, and owns the directory.
//
// Authentication: trust for every role except kPasswordRole, which must give
// its password (scram-sha-256). Tests create that role themselves.
#pragma once

#include <libpq-fe.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "files.h"

namespace agentkit_test {

class PostgresServer {
 public:
  static constexpr const char* kPasswordRole = "pw_user";

  // `tls`: also listen on 127.0.0.1 (a free port: tcp_port()) for TLS
  // connections only (hostssl; a plain TCP connection is refused), with a
  // self-signed certificate for 127.0.0.1 and localhost (certificate()),
  // made with the openssl command.
  explicit PostgresServer(bool tls = false) : bin_(find_bin()) {
    std::string pattern = (std::filesystem::temp_directory_path() / "agentkit-pg-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("postgres server: mkdtemp failed");
    dir_ = pattern;
    try {
      if (::geteuid() == 0) {
        const passwd* user = ::getpwnam("postgres");
        if (!user) {
          throw std::runtime_error(
              "postgres server: running as root, and PostgreSQL refuses to; there is no 'postgres' user to run it "
              "as (`make deps` installs the postgresql package, which creates it)");
        }
        as_user_ = {"runuser", "-u", "postgres", "--"};
        if (::chown(dir_.c_str(), user->pw_uid, user->pw_gid) != 0)
          throw std::runtime_error("postgres server: chown failed");
      }
      run({(bin_ / "initdb").string(), "-D", data().string(), "-U", "agentkit", "-A", "trust", "-N", "-E", "UTF8",
           "--locale=C"});
      if (tls) {
        tcp_port_ = free_port();
        run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
             "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", (data() / "server.key").string(),
             "-out", certificate().string()});
        run({"chmod", "600", (data() / "server.key").string()});  // the server refuses a key others may read
      }
      std::ofstream(data() / "postgresql.conf", std::ios::app)
          << "listen_addresses = '" << (tls ? "127.0.0.1" : "") << "'\nunix_socket_directories = '" << dir_.string()
          << "'\nport = " << (tls ? tcp_port_ : kPort) << "\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
          << (tls ? "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n" : "");
      std::ofstream(data() / "pg_hba.conf", std::ios::trunc)
          << "local all " << kPasswordRole << " scram-sha-256\nlocal all all trust\n"
          << (tls ? "hostssl all all 127.0.0.1/32 trust\n" : "");
      start();
    } catch (...) {
      remove();
      throw;
    }
  }
  ~PostgresServer() {
    try {
      pg_ctl({"stop", "-m", "immediate"});
    } catch (...) {
    }
    remove();
  }
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // Starts the server and waits until it accepts connections.
  void start() { pg_ctl({"start", "-l", (dir_ / "server.log").string(), "-t", "60"}); }
  // Stops it (fast shutdown: clients are told, then cut off) and waits.
  void stop() { pg_ctl({"stop", "-m", "fast", "-t", "60"}); }

  // A libpq connection string for `dbname` as the superuser `agentkit`.
  std::string conninfo(const std::string& dbname = "postgres") const {
    return "host=" + dir_.string() + " port=" + std::to_string(tcp_port_ ? tcp_port_ : kPort) +
           " user=agentkit dbname=" + dbname;
  }
  // A TLS server's TCP port on 127.0.0.1 (0 for one without TLS), and its
  // certificate, which is its own certificate authority.
  int tcp_port() const noexcept { return tcp_port_; }
  std::filesystem::path certificate() const { return data() / "server.crt"; }
  const std::filesystem::path& socket_dir() const noexcept { return dir_; }

  // Runs `sql` (one or more statements) on a connection of its own as the
  // superuser; returns the first column of the first row ("" if none).
  std::string sql(const std::string& sql) const;

 private:
  static constexpr int kPort = 5432;  // names the socket file only

  static std::filesystem::path find_bin() {
    namespace fs = std::filesystem;
    const auto usable = [](const fs::path& bin) { return fs::exists(bin / "initdb") && fs::exists(bin / "pg_ctl"); };
    if (const char* bin = std::getenv("AGENTKIT_PG_BIN"); bin && *bin) {
      if (usable(bin)) return bin;
      throw std::runtime_error(
          std::string("postgres server: AGENTKIT_PG_BIN=") + bin +
          " has no initdb and pg_ctl (unset it to use /usr/lib/postgresql/*/bin, which `make deps` fills)");
    }
    fs::path best;
    int best_version = -1;
    std::error_code ignored;
    for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ignored)) {
      const std::string name = entry.path().filename().string();
      const int version = std::atoi(name.c_str());
      if (version > best_version && usable(entry.path() / "bin")) {
        best = entry.path() / "bin";
        best_version = version;
      }
    }
    if (best.empty()) {
      throw std::runtime_error(
          "postgres server: no PostgreSQL server binaries (initdb, pg_ctl) in /usr/lib/postgresql/*/bin and "
          "AGENTKIT_PG_BIN is not set; `make deps` installs them (Debian package postgresql)");
    }
    return best;
  }

  std::filesystem::path data() const { return dir_ / "data"; }

  // A TCP port nothing listens on now (the kernel's pick for port 0).
  static int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
    if (fd >= 0) ::close(fd);
    if (!ok) throw std::runtime_error("postgres server: no free TCP port on 127.0.0.1");
    return ntohs(addr.sin_port);
  }

  void pg_ctl(std::vector<std::string> args) const {
    args.insert(args.begin(), {(bin_ / "pg_ctl").string(), "-D", data().string(), "-w"});
    run(args);
  }

  // Runs `args` (as the postgres user under root), output to commands.log;
  // throws with that log when it fails.
  void run(std::vector<std::string> args) const {
    args.insert(args.begin(), as_user_.begin(), as_user_.end());
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    const std::string log = (dir_ / "commands.log").string();
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, STDOUT_FILENO);
        ::dup2(fd, STDERR_FILENO);
      }
      ::execvp(argv[0], argv.data());
      ::_exit(127);
    }
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      throw std::runtime_error("postgres server: " + args[as_user_.size()] + " failed; its output:\n" + read_file(log) +
                               "server log:\n" + read_file(dir_ / "server.log"));
    }
  }

  void remove() const {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::filesystem::path bin_;
  std::filesystem::path dir_;
  std::vector<std::string> as_user_;
  int tcp_port_ = 0;
};

// One connection, for what a test does beside the store under test (holding
// a lock, terminating a backend, reading a catalog). Throws on any error.
class PostgresSession {
 public:
  explicit PostgresSession(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str()), &PQfinish) {
    if (PQstatus(conn_.get()) != CONNECTION_OK)
      throw std::runtime_error(std::string("postgres session: ") + PQerrorMessage(conn_.get()));
  }
  // Runs `sql` (one or more statements); returns the first column of the
  // first row of the last one ("" if none).
  std::string exec(const std::string& sql) {
    std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(conn_.get(), sql.c_str()), &PQclear);
    const auto status = PQresultStatus(result.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      throw std::runtime_error("postgres session: " + sql + ": " + PQerrorMessage(conn_.get()));
    }
    return PQntuples(result.get()) > 0 ? PQgetvalue(result.get(), 0, 0) : "";
  }

 private:
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn_;
};

inline std::string PostgresServer::sql(const std::string& sql) const { return PostgresSession(conninfo()).exec(sql); }

// One server for the whole test executable, started on first use.
inline PostgresServer& shared_postgres() {
  static PostgresServer server;
  return server;
}

// A table name no other case of this process uses.
inline std::string fresh_table() {
  static std::atomic<int> next{0};
  return "t" + std::to_string(++next);
}

}  // namespace agentkit_test
