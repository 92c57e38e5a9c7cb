// Workspace: confinement (an escape corpus watched with inotify), caps,
// binary files, ranged reads, edits, listings and options as data (spec 003).
#include <catch2/catch.hpp>

#include <agentkit/testing/test_context.h>
#include <agentkit/command.h>
#include <agentkit/tool_data.h>
#include <agentkit/workspace.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
using agentkit::Json;
using agentkit::Workspace;
using agentkit::WorkspaceError;
using agentkit::WorkspaceOptions;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ak-ws-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every name under `dir` with its content: what "nothing outside changed" compares.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    out[e.path().string()] = e.is_regular_file() ? slurp(e.path()) : "<dir>";
  }
  return out;
}

// Records any access (open, read, write, create, ...) under the watched directories.
class Watch {
 public:
  explicit Watch(const std::vector<fs::path>& dirs) : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    for (const auto& d : dirs) ::inotify_add_watch(fd_, d.c_str(), IN_ALL_EVENTS);
  }
  ~Watch() { ::close(fd_); }
  // Events since the last call, as a count.
  int events() {
    int n = 0;
    char buf[8192];
    for (;;) {
      const ssize_t got = ::read(fd_, buf, sizeof buf);
      if (got <= 0) return n;
      for (ssize_t off = 0; off < got;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
        ++n;
        off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      }
    }
  }

 private:
  int fd_;
};

// A workspace `ws/` beside an `outside/` tree holding a secret, with every
// kind of trap inside the workspace.
struct Escape {
  TempDir tmp;
  fs::path ws = tmp.path / "ws";
  fs::path outside = tmp.path / "outside";
  int sock = -1;

  Escape() {
    put(outside / "secret.txt", "SECRET\n");
    put(outside / "sub" / "deep.txt", "SECRET deep\n");
    put(ws / "ok.txt", "inside\n");
    fs::create_directories(ws / "sub");
    fs::create_symlink("../outside", ws / "link_out");
    fs::create_symlink("../outside/secret.txt", ws / "link_file");
    fs::create_symlink(outside, ws / "abs_link");
    fs::create_symlink("../../outside", ws / "sub" / "deep_link");
    fs::create_symlink("loop", ws / "loop");
    fs::create_symlink("/dev/null", ws / "devlink");
    fs::create_symlink("/etc", ws / "etc_link");
    fs::create_symlink("../outside/new.txt", ws / "dangling");
    fs::create_symlink(outside / "new_abs.txt", ws / "dangling_abs");
    fs::create_symlink("link_out", ws / "chain");
    fs::create_symlink("ok.txt", ws / "inner_link");  // even a link that stays inside is not followed
    fs::create_hard_link(outside / "secret.txt", ws / "hard");
    fs::create_hard_link(outside / "sub" / "deep.txt", ws / "sub" / "hard2");
    REQUIRE(::mkfifo((ws / "fifo").c_str(), 0600) == 0);
    sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string sp = (ws / "sock").string();
    REQUIRE(sp.size() < sizeof addr.sun_path);
    std::copy(sp.begin(), sp.end(), addr.sun_path);
    REQUIRE(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    device = ::mknod((ws / "dev").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0;
  }
  ~Escape() { ::close(sock); }
  // A character device (/dev/null's numbers), when this process may make one.
  bool device = false;
};

std::vector<std::string> escape_corpus(const fs::path& outside) {
  const std::string out = outside.string();
  std::vector<std::string> corpus = {
      // absolute
      "/etc/passwd", "/", "/tmp", "//etc/passwd", out + "/secret.txt", out, "/proc/self/environ", "/dev/null",
      // parent segments
      "..", "../", "../outside/secret.txt", "sub/../../outside/secret.txt", "sub/../..", "./../outside",
      "..//outside/secret.txt", "sub/./../../outside/new.txt", "../../../../etc/passwd", "../ws/../outside/secret.txt",
      ".../../x", "ok.txt/../../outside/secret.txt", "sub/..", "a/b/c/../../../../outside/x", "./..", "sub/../../ws",
      // links, at the last component and on the way
      "link_out", "link_out/", "link_out/secret.txt", "link_out/new.txt", "link_out/sub/deep.txt", "link_out/sub/x",
      "link_file", "./link_file", "abs_link", "abs_link/secret.txt", "abs_link/made.txt", "sub/deep_link",
      "sub/deep_link/secret.txt", "sub//deep_link/new.txt", "loop", "loop/x", "devlink", "etc_link/passwd",
      "etc_link/made.txt", "dangling", "dangling_abs", "chain", "chain/secret.txt", "chain/new.txt", "inner_link",
      // special files and hard links
      "fifo", "sock", "hard", "sub/hard2", "fifo/x", "sock/x",
      // bytes the path rules refuse
      std::string("ok.txt\0/../../outside/secret.txt", 32), "a\nb", "bad\x7f", "\xff\xfe", "\xc0\xae\xc0\xae/x",
      std::string(300, 'n'), std::string(5000, 'p'), "sub/" + std::string(256, 'x')};
  return corpus;
}

bool refused(const std::function<void()>& call) {
  try {
    call();
  } catch (const agentkit::ToolArgumentError& e) {
    return std::string(e.what()).find("SECRET") == std::string::npos;
  }
  return false;
}

}  // namespace

TEST_CASE("workspace escape corpus: every path is refused and nothing outside is touched", "[workspace]") {
  Escape env;
  auto ws = std::make_shared<Workspace>(WorkspaceOptions{.root = env.ws});
  auto ctx = agentkit::testing::make_test_ctx();
  const auto tools = agentkit::workspace_tools(ws);
  const auto find = [&](const std::string& name) {
    for (const auto& t : tools) {
      if (t->name() == name) return t;
    }
    FAIL("no tool " << name);
    return agentkit::ToolPtr{};
  };
  const auto before = snapshot(env.outside);
  auto corpus = escape_corpus(env.outside);
  if (env.device) corpus.insert(corpus.end(), {"dev", "dev/x"});
  REQUIRE(corpus.size() >= 60);
  Watch watch({env.outside, env.outside / "sub"});
  watch.events();
  for (const auto& path : corpus) {
    INFO("path: " << Json(path).dump(-1, ' ', true, Json::error_handler_t::replace));
    CHECK(refused([&] { ws->read_file(path); }));
    CHECK(refused([&] { ws->write_file(path, "PWNED"); }));
    CHECK(refused([&] { ws->edit_file(path, "SECRET", "PWNED"); }));
    CHECK(refused([&] { find("read_file")->run(Json{{"path", path}}, ctx); }));
    CHECK(refused([&] { find("write_file")->run(Json{{"path", path}, {"content", "PWNED"}}, ctx); }));
    CHECK(refused([&] {
      find("edit_file")->run(Json{{"path", path}, {"old_string", "SECRET"}, {"new_string", "PWNED"}}, ctx);
    }));
    CHECK(refused([&] { find("list_dir")->run(Json{{"path", path}}, ctx); }));
    CHECK(refused([&] { ws->list_dir(path + "/x"); }));
  }
  CHECK(watch.events() == 0);  // nothing outside was opened, read, listed or written
  CHECK(snapshot(env.outside) == before);
  CHECK(slurp(env.ws / "ok.txt") == "inside\n");
}

TEST_CASE("workspace glob and search never follow links or read hard-linked files", "[workspace]") {
  Escape env;
  Workspace ws(WorkspaceOptions{.root = env.ws});
  Watch watch({env.outside, env.outside / "sub"});
  watch.events();
  const auto all = ws.glob("**");
  CHECK(std::find(all.begin(), all.end(), "ok.txt") != all.end());
  for (const auto& p : all) CHECK(p.find("secret") == std::string::npos);
  CHECK(ws.search("SECRET").empty());
  CHECK(ws.search("inside").size() == 1);
  CHECK(watch.events() == 0);
  const auto entries = ws.list_dir("");
  const auto link = std::find_if(entries.begin(), entries.end(), [](const auto& e) { return e.path == "link_out"; });
  REQUIRE(link != entries.end());
  CHECK(link->kind == agentkit::WorkspaceEntry::Kind::symlink);
}

TEST_CASE("workspace refuses a link swapped in during writes (race)", "[workspace]") {
  TempDir tmp;
  const fs::path root = tmp.path / "ws", outside = tmp.path / "outside";
  fs::create_directories(root / "flip");
  fs::create_directories(outside);
  Workspace ws(WorkspaceOptions{.root = root});
  std::atomic<bool> done{false};
  std::thread flipper([&] {
    const fs::path flip = root / "flip", parked = root / "parked";
    while (!done) {
      std::error_code ec;
      fs::rename(flip, parked, ec);
      fs::create_symlink(outside, flip, ec);
      fs::remove(flip, ec);
      fs::rename(parked, flip, ec);
    }
  });
  for (int i = 0; i < 500; ++i) {
    try {
      ws.write_file("flip/x.txt", "PWNED");
    } catch (const std::exception&) {
    }
  }
  done = true;
  flipper.join();
  CHECK(fs::is_empty(outside));
}

TEST_CASE("workspace is safe to use from several threads at once", "[workspace]") {
  TempDir tmp;
  auto ws = std::make_shared<Workspace>(WorkspaceOptions{.root = tmp.path});
  ws->write_file("shared.txt", "END");
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([ws, t] {
      const std::string own = "t" + std::to_string(t) + "/f.txt";
      for (int i = 0; i < 30; ++i) {
        ws->write_file(own, std::to_string(i));
        (void)ws->read_file(own);
        (void)ws->glob("**");
        ws->edit_file("shared.txt", "END", std::to_string(t) + "\nEND");  // no edit may be lost
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 6; ++t) CHECK(ws->read_file("t" + std::to_string(t) + "/f.txt") == "29");
  const std::string shared = ws->read_file("shared.txt");
  CHECK(std::count(shared.begin(), shared.end(), '\n') == 180);
}

TEST_CASE("workspace read is line-numbered, ranged and capped", "[workspace]") {
  TempDir tmp;
  std::string text;
  for (int i = 1; i <= 100; ++i) text += "line " + std::to_string(i) + "\n";
  put(tmp.path / "a.txt", text);
  auto ws = std::make_shared<Workspace>(WorkspaceOptions{.root = tmp.path, .max_output_bytes = 200});
  auto ctx = agentkit::testing::make_test_ctx();
  const auto read = agentkit::workspace_tools(ws).front();
  REQUIRE(read->name() == "read_file");
  CHECK_FALSE(read->side_effecting());

  const std::string part = read->run(Json{{"path", "a.txt"}, {"offset", 10}, {"limit", 3}}, ctx).get<std::string>();
  CHECK(part.find("    10\tline 10\n    11\tline 11\n    12\tline 12\n") == 0);
  CHECK(part.find("offset=13") != std::string::npos);

  const std::string capped = read->run(Json{{"path", "a.txt"}}, ctx).get<std::string>();
  CHECK(capped.size() < 400);
  CHECK(capped.find("     1\tline 1\n") == 0);
  CHECK(capped.find("[showing lines 1-") != std::string::npos);
  CHECK_THROWS_AS(read->run(Json{{"path", "a.txt"}, {"offset", 500}}, ctx), agentkit::ToolArgumentError);
  CHECK_THROWS_AS(read->run(Json{{"path", "a.txt"}, {"offset", 0}}, ctx), agentkit::ToolArgumentError);
}

TEST_CASE("workspace size caps and binary files", "[workspace]") {
  TempDir tmp;
  put(tmp.path / "big.txt", std::string(2000, 'x'));
  put(tmp.path / "bin.dat", std::string("\x7f" "ELF\0\0\x01", 7));
  auto ws = std::make_shared<Workspace>(WorkspaceOptions{.root = tmp.path, .max_file_bytes = 1000});
  auto ctx = agentkit::testing::make_test_ctx();
  CHECK_THROWS_WITH(ws->read_file("big.txt"), Catch::Contains("over the workspace limit of 1000 bytes"));
  CHECK_THROWS_AS(ws->write_file("new.txt", std::string(1001, 'y')), WorkspaceError);
  CHECK_FALSE(fs::exists(tmp.path / "new.txt"));
  const auto read = agentkit::workspace_tools(ws).front();
  const std::string shown = read->run(Json{{"path", "bin.dat"}}, ctx).get<std::string>();
  CHECK(shown.find("binary file (7 bytes)") != std::string::npos);
  CHECK_THROWS_AS(ws->edit_file("bin.dat", "ELF", "ELG"), WorkspaceError);
}

TEST_CASE("workspace edit replaces a unique string and refuses ambiguous ones", "[workspace]") {
  TempDir tmp;
  put(tmp.path / "c.txt", "a = 1\nb = 1\n");
  Workspace ws(WorkspaceOptions{.root = tmp.path});
  CHECK_THROWS_WITH(ws.edit_file("c.txt", " = 1", " = 2"), Catch::Contains("occurs 2 times"));
  CHECK(slurp(tmp.path / "c.txt") == "a = 1\nb = 1\n");
  CHECK_THROWS_WITH(ws.edit_file("c.txt", "zzz", "y"), Catch::Contains("does not occur"));
  CHECK(ws.edit_file("c.txt", "a = 1", "a = 3") == 1);
  CHECK(ws.edit_file("c.txt", " = ", " := ", true) == 2);
  CHECK(slurp(tmp.path / "c.txt") == "a := 3\nb := 1\n");
  ws.write_file("deep/new/file.txt", "made");
  CHECK(slurp(tmp.path / "deep/new/file.txt") == "made");
}

TEST_CASE("workspace listings are sorted and capped, search caps matches", "[workspace]") {
  TempDir tmp;
  for (int i = 9; i >= 0; --i) put(tmp.path / "d" / ("f" + std::to_string(i) + ".txt"), "hit\nhit\n");
  put(tmp.path / "d" / "sub" / "g.cpp", "hit\n");
  Workspace ws(WorkspaceOptions{.root = tmp.path, .max_entries = 4, .max_matches = 5});
  bool more = false;
  const auto entries = ws.list_dir("d", &more);
  REQUIRE(entries.size() == 4);
  CHECK(more);
  CHECK(entries[0].path == "d/f0.txt");
  CHECK(entries[3].path == "d/f3.txt");
  const auto found = ws.glob("d/*.txt", &more);
  CHECK(found == std::vector<std::string>{"d/f0.txt", "d/f1.txt", "d/f2.txt", "d/f3.txt"});
  CHECK(more);
  CHECK(ws.glob("**/*.cpp") == std::vector<std::string>{"d/sub/g.cpp"});
  const auto hits = ws.search("^hit$", "", "", &more);
  REQUIRE(hits.size() == 5);
  CHECK(more);
  CHECK(hits[0].path == "d/f0.txt");
  CHECK(hits[0].line == 1);
  CHECK(hits[2].path == "d/f1.txt");
  CHECK(ws.search("hit", "d/sub").size() == 1);
  CHECK(ws.search("hit", "", "**/*.cpp").size() == 1);
  CHECK_THROWS_AS(ws.search("(unclosed"), WorkspaceError);
}

TEST_CASE("workspace tools declare their effects honestly", "[workspace]") {
  TempDir tmp;
  auto ws = std::make_shared<Workspace>(WorkspaceOptions{.root = tmp.path});
  std::map<std::string, bool> effects;
  for (const auto& t : agentkit::workspace_tools(ws)) effects[t->name()] = t->side_effecting();
  CHECK(effects == std::map<std::string, bool>{{"read_file", false}, {"write_file", true}, {"edit_file", true},
                                               {"list_dir", false}, {"glob", false},      {"search", false}});
  auto only = std::make_shared<Workspace>(WorkspaceOptions{.root = tmp.path, .tools = {"read_file", "glob"}});
  CHECK(agentkit::workspace_tools(only).size() == 2);
}

TEST_CASE("workspace options round-trip as data and bad data is a typed error", "[workspace]") {
  WorkspaceOptions o{.root = "/srv/p", .max_file_bytes = 10, .max_entries = 3, .tools = {"glob"}};
  CHECK(WorkspaceOptions::from_json(o.to_json()) == o);
  CHECK(WorkspaceOptions::from_json(Json::parse(o.to_json().dump())) == o);
  CHECK(WorkspaceOptions::from_json(Json::object()) == WorkspaceOptions{});
  const auto key_of = [](const Json& j) {
    try {
      WorkspaceOptions::from_json(j);
    } catch (const agentkit::OptionsError& e) {
      CHECK(e.code() == agentkit::ErrorCode::invalid_argument);
      return e.key();
    }
    return std::string("<accepted>");
  };
  CHECK(key_of(Json{{"rooot", "/x"}}) == "rooot");
  CHECK(key_of(Json{{"root", 7}}) == "root");
  CHECK(key_of(Json{{"max_entries", "3"}}) == "max_entries");
  CHECK(key_of(Json{{"max_entries", -3}}) == "max_entries");
  CHECK(key_of(Json{{"tools", {"rm_rf"}}}) == "tools");
  CHECK(key_of(Json::array()) == "workspace");
  CHECK_THROWS_AS(Workspace(WorkspaceOptions{.root = "/definitely/not/here"}), agentkit::OptionsError);
  try {
    Workspace(WorkspaceOptions{.root = fs::temp_directory_path(), .max_entries = 0});
    FAIL("a zero cap was accepted");
  } catch (const agentkit::OptionsError& e) {
    CHECK(e.key() == "max_entries");
  }
}

TEST_CASE("workspace and command tools are data: saved as their entries, loaded back alike", "[workspace][tool_data]") {
  TempDir tmp;
  put(tmp.path / "a.txt", "alpha\n");
  agentkit::ToolCatalog catalog;
  agentkit::add_workspace_kinds(catalog);

  WorkspaceOptions options;
  options.root = tmp.path;
  options.max_entries = 7;
  options.tools = {"read_file", "glob"};
  const auto built = agentkit::workspace_tools(std::make_shared<const Workspace>(options));
  REQUIRE(built.size() == 2);
  const Json entry = catalog.save(*built[0]);
  CHECK(entry == Json{{"workspace", options.to_json()}});
  CHECK(catalog.save_all(built) == Json::array({entry}));  // one entry stands for the workspace's tools
  const auto loaded = catalog.load(entry, "/tools/0");
  REQUIRE(loaded.size() == 2);
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    CHECK(loaded[i]->name() == built[i]->name());
    CHECK(loaded[i]->spec().parameters->dump() == built[i]->spec().parameters->dump());
    CHECK(loaded[i]->side_effecting() == built[i]->side_effecting());
  }
  auto ctx = agentkit::testing::make_test_ctx();
  CHECK_THAT(loaded[0]->run({{"path", "a.txt"}}, ctx).get<std::string>(), Catch::Contains("alpha"));

  agentkit::CommandOptions command;
  command.programs = {"echo"};
  command.requires_approval = false;
  command.isolation = agentkit::Isolation::none;
  const auto tool = agentkit::command_tool(std::make_shared<const Workspace>(options), command);
  Json expected = command.to_json();
  expected["root"] = tmp.path.string();
  const Json saved = catalog.save(*tool);
  CHECK(saved == Json{{"command", expected}});
  const auto again = catalog.load(saved);
  REQUIRE(again.size() == 1);
  CHECK(again[0]->name() == "run_command");
  CHECK_FALSE(again[0]->requires_approval());
  CHECK(again[0]->run({{"program", "echo"}, {"args", {"hi"}}}, ctx).at("stdout") == "hi\n");

  // A bad option names its JSON path; a root that is no directory, the entry.
  const auto error_of = [&](const Json& e) -> std::string {
    try {
      catalog.load(e, "/tools/3");
    } catch (const agentkit::ToolDataError& x) {
      return x.path() + " | " + x.problem();
    }
    return "loaded";
  };
  CHECK_THAT(error_of({{"workspace", {{"root", tmp.path.string()}, {"max_entries", "many"}}}}),
             Catch::StartsWith("/tools/3/workspace/max_entries | "));
  CHECK_THAT(error_of({{"workspace", {{"root", tmp.path.string()}, {"colour", "red"}}}}),
             Catch::StartsWith("/tools/3/workspace/colour | "));
  CHECK_THAT(error_of({{"command", {{"programs", {"echo"}}}}}), Catch::Contains("missing required key 'root'"));
  CHECK_THAT(error_of({{"command", {{"root", (tmp.path / "nowhere").string()}, {"programs", {"echo"}}}}}),
             Catch::StartsWith("/tools/3/command"));
}
