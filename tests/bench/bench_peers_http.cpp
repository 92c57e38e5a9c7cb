// Peer comparison over HTTP: the add workload (the model asks for add(a, b)
// K times, then answers "done") through each runtime's real OpenAI Chat
// Completions client, all against one loopback server: agentkit
// ("openai/<model>@<base URL>", run() and start() + poll()), the Vercel AI SDK
// (@ai-sdk/openai's chat model), the OpenAI Agents JS SDK
// (OpenAIChatCompletionsModel over the `openai` client) and LangGraph.js
// (createReactAgent over @langchain/openai's ChatOpenAI). Two floors send the
// very requests agentkit sends (recorded from one agentkit run): a raw
// keep-alive socket client, and libcurl's multi interface driven as
// agentkit's transport drives it (one pooled easy + multi pair, options set
// per request, curl_multi_perform / curl_multi_poll, the handle reset after).
//
// The server is this executable again (--server), a single-threaded poll()
// loop in its own process, so its CPU time is nobody's client time. It
// answers POST /k/<n>/v1/chat/completions by counting the tool results in
// the request's messages (their "tool_call_id" keys, any JSON spacing): fewer than n,
// an assistant tool call add({"a": count, "b": 1}) with id call_<count>;
// otherwise the text "done". Server-sent events when the request says
// "stream": true, one JSON body otherwise; keep-alive, Content-Length or
// chunked request bodies, Expect: 100-continue.
//
// Every client runs in its own process, measured as bench_peers measures
// (peer_process.h, harness.mjs): wall and CPU µs per iteration (median run /
// K, after one warm-up run), checked: K add calls and the answer "done", or
// the row fails. Clients keep their connections across runs.
//
// Targets (printed, with a line when one is missed; the exit status is 1
// only when a row fails its check): agentkit's wall time per
// iteration within 1.5x of curl multi's, its CPU time within 2x, for run()
// and poll(), at every K. The poll() host drains the run's events at each
// poll and has nothing else to do between polls, so it sleeps in
// RunHandle::wait_ready(10 ms) there, as an event loop would (a host that
// spins on poll() instead spends its whole wall time on CPU, by
// construction); the table's notes say how many polls and events that took.
//
//   bench_peers_http [--stream]                the table, K = 10 and 100 (non-streaming unless --stream)
//   bench_peers_http --server DIR              the server: prints its port, serves until stdin closes
//   bench_peers_http --agentkit run|poll K PORT [stream]
//   bench_peers_http --floor raw|curl K PORT DIR [stream]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include <cctype>
#include <cstdint>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string_view>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/models.h>
#include <agentkit/testing/test_context.h>

#include "peer_process.h"
#include "quickest_cpu.h"

namespace {

using agentkit::Json;
using namespace peer_bench;
namespace fs = std::filesystem;

constexpr const char* kWho = "bench_peers_http";
const std::vector<int> kIterationCounts = {10, 100};
constexpr double kWallTarget = 1.5;  // agentkit / curl multi
constexpr double kCpuTarget = 2.0;

// --- the server ---

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::size_t skip_space(std::string_view s, std::size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) ++i;
  return i;
}

// Boyer-Moore-Horspool over a 256-entry table: it skips ahead by up to the
// needle's length, where string_view::find (and glibc's memmem) stop at
// every '"' of the JSON. The server's CPU time is mostly this scan.
class Finder {
 public:
  explicit Finder(std::string needle) : needle_(std::move(needle)) {
    skip_.fill(needle_.size());
    for (std::size_t i = 0; i + 1 < needle_.size(); ++i) skip_[static_cast<unsigned char>(needle_[i])] = needle_.size() - 1 - i;
  }
  std::size_t size() const { return needle_.size(); }
  // The first occurrence at or after `from`, or npos.
  std::size_t find(std::string_view text, std::size_t from = 0) const {
    const std::size_t m = needle_.size();
    for (std::size_t i = from; i + m <= text.size();) {
      const unsigned char last = static_cast<unsigned char>(text[i + m - 1]);
      if (last == static_cast<unsigned char>(needle_[m - 1]) && text.compare(i, m, needle_) == 0) return i;
      i += skip_[last];
    }
    return std::string_view::npos;
  }

 private:
  std::string needle_;
  std::array<std::size_t, 256> skip_{};
};

// How often the member "<key>": <value> occurs in the JSON text, whatever
// its spacing; `key` finds `"<key>` (no closing quote: a needle ending in a
// letter skips further than one ending in '"'). Only a key matches: an
// escaped quote inside a string is preceded by a backslash.
int count_member(std::string_view json, const Finder& key, std::string_view value) {
  int count = 0;
  for (std::size_t at = key.find(json); at != std::string_view::npos; at = key.find(json, at + 1)) {
    std::size_t i = at + key.size();
    if (i >= json.size() || json[i] != '"') continue;
    i = skip_space(json, i + 1);
    if (i >= json.size() || json[i] != ':') continue;
    i = skip_space(json, i + 1);
    if (json.substr(i, value.size()) == value) ++count;
  }
  return count;
}

// A tool result is a message {"role": "tool", "tool_call_id": ...}, and only
// tool results have a tool_call_id: counting those keys reads less of the
// body than counting "role": "tool".
const Finder kToolCallIdKey("\"tool_call_id");
const Finder kStreamKey("\"stream");

// The reply to a request with `results` tool results in a run of k
// iterations; `id` is unique per reply, as OpenAI's are (LangGraph merges
// messages with the same id).
std::string chat_reply(long id, int k, int results, bool stream) {
  // Every chunk of a stream has the same id, object and model.
  const std::string envelope = R"({"id":"chatcmpl-)" + std::to_string(id) + R"(","object":"chat.completion)" +
                               (stream ? ".chunk" : "") + R"(","created":1700000000,"model":"add-model",)";
  const std::string usage = R"("usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15})";
  const bool call = results < k;
  std::string message;
  if (call) {
    const std::string n = std::to_string(results);
    message = R"({"role":"assistant","content":null,"tool_calls":[{)" + std::string(stream ? R"("index":0,)" : "") +
              R"("id":"call_)" + n + R"(","type":"function","function":{"name":"add","arguments":"{\"a\":)" + n +
              R"(,\"b\":1}"}}]})";
  } else {
    message = R"({"role":"assistant","content":"done"})";
  }
  const std::string finish = call ? "tool_calls" : "stop";
  const std::string choice = R"("choices":[{"index":0,)";
  if (!stream) {
    return envelope + choice + R"("message":)" + message + R"(,"logprobs":null,"finish_reason":")" + finish + R"("}],)" +
           usage + "}";
  }
  return "data: " + envelope + choice + R"("delta":)" + message + R"(,"logprobs":null,"finish_reason":null}]})" +
         "\n\ndata: " + envelope + choice + R"("delta":{},"logprobs":null,"finish_reason":")" + finish + R"("}]})" +
         "\n\ndata: " + envelope + R"("choices":[],)" + usage + "}\n\ndata: [DONE]\n\n";
}

struct Connection {
  int fd = -1;
  std::string in, out;
  bool continue_sent = false;
};

struct Server {
  fs::path record_dir;
  long requests = 0;

  // Appends the response to c.out for each whole request in c.in; false to
  // close the connection (a malformed request, or Connection: close).
  bool serve(Connection& c) {
    for (;;) {
      const auto head_end = c.in.find("\r\n\r\n");
      if (head_end == std::string::npos) return c.in.size() < (1u << 20);
      const std::string_view head(c.in.data(), head_end);
      const auto line_end = head.find("\r\n");
      const std::string_view request_line = head.substr(0, line_end);
      const auto sp1 = request_line.find(' ');
      const auto sp2 = request_line.rfind(' ');
      if (sp1 == std::string_view::npos || sp2 <= sp1) return false;
      const std::string_view method = request_line.substr(0, sp1);
      const std::string_view target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
      std::optional<std::size_t> content_length;
      bool chunked = false, expect_continue = false, close_after = false;
      for (std::size_t at = line_end; at != std::string_view::npos && at < head.size();) {
        const std::size_t begin = at + 2;
        const std::size_t end = std::min(head.find("\r\n", begin), head.size());
        const std::string_view header = head.substr(begin, end - begin);
        const auto colon = header.find(':');
        if (colon != std::string_view::npos) {
          const std::string name = lower(header.substr(0, colon));
          const std::string value = lower(header.substr(skip_space(header, colon + 1)));
          if (name == "content-length") content_length = std::strtoull(value.c_str(), nullptr, 10);
          if (name == "transfer-encoding" && value.find("chunked") != std::string::npos) chunked = true;
          if (name == "expect" && value.find("100-continue") != std::string::npos) expect_continue = true;
          if (name == "connection" && value.find("close") != std::string::npos) close_after = true;
        }
        at = end < head.size() ? end : std::string_view::npos;
      }
      std::string body;
      std::size_t consumed = 0;
      bool complete = false;
      if (chunked) {
        std::size_t at = head_end + 4;
        for (;;) {
          const auto size_end = c.in.find("\r\n", at);
          if (size_end == std::string::npos) break;
          const std::size_t size = std::strtoull(c.in.c_str() + at, nullptr, 16);
          if (size == 0) {  // the last chunk, then trailers up to an empty line
            const auto trailers_end = c.in.find("\r\n\r\n", size_end);
            const bool no_trailers = c.in.compare(size_end, 4, "\r\n\r\n") == 0;
            if (!no_trailers && trailers_end == std::string::npos) break;
            consumed = (no_trailers ? size_end : trailers_end) + 4;
            complete = true;
            break;
          }
          if (c.in.size() < size_end + 2 + size + 2) break;
          body.append(c.in, size_end + 2, size);
          at = size_end + 2 + size + 2;
        }
      } else {
        const std::size_t length = content_length.value_or(0);
        if (c.in.size() >= head_end + 4 + length) {
          body.assign(c.in, head_end + 4, length);
          consumed = head_end + 4 + length;
          complete = true;
        }
      }
      if (!complete) {
        if (expect_continue && !c.continue_sent) {
          c.out += "HTTP/1.1 100 Continue\r\n\r\n";
          c.continue_sent = true;
        }
        return true;
      }
      ++requests;
      respond(c, method, target, std::string_view(c.in.data(), consumed), body);
      c.in.erase(0, consumed);
      c.continue_sent = false;
      if (close_after) return false;
    }
  }

  void respond(Connection& c, std::string_view method, std::string_view target, std::string_view raw,
               const std::string& body) {
    // /k/<n>/v1/chat/completions; /k/<n>/r/v1/chat/completions also records the request.
    int k = 0;
    bool record = false;
    bool routed = false;
    if (method == "POST" && target.starts_with("/k/")) {
      std::size_t i = 3;
      while (i < target.size() && std::isdigit(static_cast<unsigned char>(target[i]))) k = k * 10 + (target[i++] - '0');
      std::string_view rest = target.substr(i);
      record = rest.starts_with("/r/");
      if (record) rest.remove_prefix(2);
      routed = k > 0 && rest == "/v1/chat/completions";
    }
    if (!routed) {
      const std::string error = R"({"error":{"message":"no such route","type":"invalid_request_error"}})";
      c.out += "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: " +
               std::to_string(error.size()) + "\r\n\r\n" + error;
      return;
    }
    const int results = count_member(body, kToolCallIdKey, "\"");
    const bool stream = count_member(body, kStreamKey, "true") > 0;
    if (record) {
      std::ofstream(record_dir / (std::to_string(k) + "-" + std::to_string(results) + ".http"), std::ios::binary)
          << raw;
    }
    const std::string reply = chat_reply(requests, k, results, stream);
    c.out += "HTTP/1.1 200 OK\r\nContent-Type: ";
    c.out += stream ? "text/event-stream" : "application/json";
    c.out += "\r\nContent-Length: " + std::to_string(reply.size()) + "\r\nConnection: keep-alive\r\n\r\n";
    c.out += reply;
  }
};

// Flushes what it can of c.out; false when the connection is gone.
bool flush(Connection& c) {
  while (!c.out.empty()) {
    const ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n <= 0) return false;
    c.out.erase(0, static_cast<std::size_t>(n));
  }
  return true;
}

int run_server(const fs::path& record_dir) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(listener, 64) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::fprintf(stderr, "%s --server: cannot listen on 127.0.0.1: %s\n", kWho, std::strerror(errno));
    return 1;
  }
  std::printf("%d\n", ntohs(addr.sin_port));
  std::fflush(stdout);

  Server server{.record_dir = record_dir};
  std::vector<Connection> connections;
  std::vector<pollfd> fds;
  for (char buf[65536];;) {
    fds.assign({{STDIN_FILENO, POLLIN, 0}, {listener, POLLIN, 0}});
    for (const auto& c : connections) fds.push_back({c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) {  // the parent closed our stdin (or died): done
      if (read(STDIN_FILENO, buf, sizeof buf) <= 0) break;
    }
    if (fds[1].revents & POLLIN) {
      for (int fd; (fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
        const int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        connections.push_back({.fd = fd});
      }
    }
    for (std::size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Connection& c = connections[i - 2];
      bool open = true;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        for (;;) {
          const ssize_t n = recv(c.fd, buf, sizeof buf, 0);
          if (n > 0) {
            c.in.append(buf, static_cast<std::size_t>(n));
            continue;
          }
          if (n < 0 && errno == EINTR) continue;
          if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) open = false;
          break;
        }
        open = server.serve(c) && open;
      }
      if (!flush(c) || !open) {
        flush(c);
        close(c.fd);
        c.fd = -1;
      }
    }
    std::erase_if(connections, [](const Connection& c) { return c.fd < 0; });
  }
  for (const auto& c : connections) close(c.fd);
  close(listener);
  const Json stats = {{"requests", server.requests}, {"cpu_ms", cpu_ms()}};
  std::printf("%s\n", stats.dump().c_str());
  return 0;
}

// --- agentkit's side (a child process) ---

std::string base_url(int port, int n, bool record) {
  return "http://127.0.0.1:" + std::to_string(port) + "/k/" + std::to_string(n) + (record ? "/r" : "") + "/v1";
}

// agentkit's add workload over HTTP: one model resolver (so one transport and
// its keep-alive connection) for every run, an Agent per n.
class AgentkitAdd {
 public:
  AgentkitAdd(int port, bool stream)
      : port_(port), models_(agentkit::providers::model_resolver({.openai_api_key = "sk-bench", .stream = stream})) {}

  // One run of n iterations, driven by run() or by poll() in a loop; its
  // wall and CPU time (context creation included), or nullopt after printing
  // why the run went wrong.
  std::optional<Elapsed> run(int n, bool poll, bool record = false) {
    const agentkit::Agent& agent = agent_for(n, record);
    calls_ = 0;
    polls_ = 0;
    events_ = 0;
    const double cpu_start = cpu_ms();
    const auto start = Clock::now();
    auto ctx = agentkit::testing::make_test_ctx();
    ctx.store = nullptr;
    ctx.models = models_;
    agentkit::RunResult result;
    if (poll) {
      agentkit::RunHandle handle = agent.start("add", ctx);
      // As a host that shows the run's events would: drained at each poll.
      // Left in the queue, they pile up for the whole run (the queue keeps
      // every event until it is drained), which cost 6-9 µs per iteration
      // at K = 100, streaming.
      for (++polls_; !handle.poll(); ++polls_) {
        events_ += handle.drain_events().size();
        handle.wait_ready(std::chrono::milliseconds(10));
      }
      events_ += handle.drain_events().size();
      result = std::move(handle).wait();
    } else {
      result = agent.run("add", ctx);
    }
    const Elapsed elapsed{std::chrono::duration<double, std::milli>(Clock::now() - start).count(), cpu_ms() - cpu_start};
    if (result.stop_reason != agentkit::StopReason::answered || result.output != "done" || calls_ != n) {
      std::fprintf(stderr,
                   "agentkit: expected %d add calls and the answer \"done\", got %d calls, stop %s, output \"%s\"%s%s\n",
                   n, calls_, std::string(to_string(result.stop_reason)).c_str(), result.output.c_str(),
                   result.failure ? ": " : "", result.failure ? result.failure->message.c_str() : "");
      return std::nullopt;
    }
    return elapsed;
  }

  // The poll() calls, and the events drained, of the last run driven by poll().
  long polls() const { return polls_; }
  std::size_t events() const { return events_; }

 private:
  const agentkit::Agent& agent_for(int n, bool record) {
    const int key = record ? -n : n;
    auto it = agents_.find(key);
    if (it == agents_.end()) {
      auto add = agentkit::tool("add")
                     .doc("Add two integers and return their sum to the caller.")
                     .side_effecting(false)
                     .idempotent()
                     .params("a", "b")
                     .fn([this](std::int64_t a, std::int64_t b) {
                       ++calls_;
                       return a + b;
                     });
      it = agents_
               .emplace(key, agentkit::Agent("adder", "openai/add-model@" + base_url(port_, n, record), "You add numbers.",
                                             agentkit::cognition::react({add}), {.max_iterations = n + 1}))
               .first;
    }
    return it->second;
  }

  int port_;
  agentkit::ModelResolver models_;
  std::map<int, agentkit::Agent> agents_;
  int calls_ = 0;
  long polls_ = 0;
  std::size_t events_ = 0;
};

void print_line(const std::string& peer, const std::string& version, int k, const Timings& t, double startup_ms,
                const Json& extra = Json::object()) {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  Json line = {{"peer", peer},
               {"version", version},
               {"k", k},
               {"us_per_iteration", median(t.per_iteration)},
               {"cpu_us_per_iteration", median(t.cpu_per_iteration)},
               {"reps", t.per_iteration.size()},
               {"startup_ms", startup_ms},
               {"peak_rss_kb", usage.ru_maxrss}};
  line.update(extra);
  std::printf("%s\n", line.dump().c_str());
}

int run_agentkit(bool poll, int k, int port, bool stream, double origin_ms) {
  AgentkitAdd workload(port, stream);
  const double startup_ms = epoch_ms() - origin_ms;
  const auto timings = repeat(k, [&](int n) { return workload.run(n, poll); });
  if (!timings) return 1;
  const Json extra = poll ? Json{{"polls_per_iteration", static_cast<double>(workload.polls()) / k},
                                  {"events_per_iteration", static_cast<double>(workload.events()) / k}}
                           : Json::object();
  print_line(poll ? "agentkit-poll" : "agentkit-run", AGENTKIT_BENCH_VERSION, k, *timings, startup_ms, extra);
  return 0;
}

// --- the floors (a child process) ---

// One recorded request: what agentkit sent, as it went on the wire.
struct WireRequest {
  std::string bytes;  // head and body, the target rewritten from /k/<n>/r/v1/... to /k/<n>/v1/...
  std::string target;
  std::vector<std::string> headers;  // "name: value" lines but Host, Content-Length, User-Agent and Accept
  std::string body;
};

// The n + 1 requests of an agentkit run of n iterations, recorded by the
// server (agentkit run once against /k/<n>/r/v1), or nullopt after saying why not.
std::optional<std::vector<WireRequest>> record_requests(int n, int port, bool stream, const fs::path& dir) {
  AgentkitAdd workload(port, stream);
  if (!workload.run(n, false, true)) return std::nullopt;
  std::vector<WireRequest> requests;
  const std::string recorded_prefix = "/k/" + std::to_string(n) + "/r/";
  for (int i = 0; i <= n; ++i) {
    const fs::path file = dir / (std::to_string(n) + "-" + std::to_string(i) + ".http");
    std::ifstream in(file, std::ios::binary);
    std::stringstream raw;
    raw << in.rdbuf();
    WireRequest r;
    r.bytes = raw.str();
    const auto head_end = r.bytes.find("\r\n\r\n");
    const auto at = r.bytes.find(recorded_prefix);
    if (!in || head_end == std::string::npos || at == std::string::npos || at > r.bytes.find("\r\n")) {
      std::fprintf(stderr, "%s: no usable recorded request %s\n", kWho, file.c_str());
      return std::nullopt;
    }
    r.bytes.erase(at + recorded_prefix.size() - 2, 2);  // "/k/<n>/r/v1" -> "/k/<n>/v1"
    r.body = r.bytes.substr(head_end + 2);
    const std::string head = r.bytes.substr(0, head_end - 2);
    const auto line_end = head.find("\r\n");
    const auto sp1 = head.find(' ');
    r.target = head.substr(sp1 + 1, head.rfind(' ', line_end) - sp1 - 1);
    for (std::size_t begin = line_end + 2; begin < head.size();) {
      const std::size_t end = std::min(head.find("\r\n", begin), head.size());
      const std::string header = head.substr(begin, end - begin);
      const std::string name = lower(header.substr(0, header.find(':')));
      if (name != "host" && name != "content-length" && name != "user-agent" && name != "accept") {
        r.headers.push_back(header);
      }
      begin = end + 2;
    }
    requests.push_back(std::move(r));
  }
  return requests;
}

// Checks one run's replies: n tool calls of add, then "done".
bool check_replies(const char* floor, int n, const std::vector<std::string>& replies) {
  int calls = 0;
  for (const auto& reply : replies) calls += reply.find("\"name\":\"add\"") != std::string::npos ? 1 : 0;
  if (calls == n && !replies.empty() && replies.back().find("\"done\"") != std::string::npos) return true;
  std::fprintf(stderr, "%s floor: expected %d add calls and the answer \"done\", got %d calls; last reply: %s\n", floor,
               n, calls, replies.empty() ? "none" : replies.back().c_str());
  return false;
}

// A keep-alive socket client: sends the recorded bytes, reads each reply
// (status line, headers, Content-Length body).
class RawClient {
 public:
  explicit RawClient(int port) : port_(port) {}
  ~RawClient() {
    if (fd_ >= 0) close(fd_);
  }

  // The reply's body, or nullopt after saying what went wrong.
  std::optional<std::string> exchange(const std::string& request) {
    if (fd_ < 0 && !connect_once()) return std::nullopt;
    for (std::size_t sent = 0; sent < request.size();) {
      const ssize_t n = send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return fail("send");
      sent += static_cast<std::size_t>(n);
    }
    std::size_t head_end;
    while ((head_end = in_.find("\r\n\r\n")) == std::string::npos) {
      if (!receive()) return fail("recv");
    }
    const std::string head = lower(std::string_view(in_).substr(0, head_end));
    const auto cl = head.find("\r\ncontent-length:");
    if (!head.starts_with("http/1.1 200") || cl == std::string::npos) return fail("reply head");
    const std::size_t length = std::strtoull(head.c_str() + cl + 17, nullptr, 10);
    while (in_.size() < head_end + 4 + length) {
      if (!receive()) return fail("recv");
    }
    std::string body = in_.substr(head_end + 4, length);
    in_.erase(0, head_end + 4 + length);
    return body;
  }

 private:
  bool connect_once() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port_));
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }

  bool receive() {
    char buf[65536];
    for (;;) {
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      in_.append(buf, static_cast<std::size_t>(n));
      return true;
    }
  }

  std::optional<std::string> fail(const char* what) {
    std::fprintf(stderr, "raw floor: %s failed: %s\n", what, std::strerror(errno));
    return std::nullopt;
  }

  int port_;
  int fd_ = -1;
  std::string in_;
};

// libcurl multi, driven as agentkit's Transport drives it (providers/src/transport.cpp):
// one easy handle paired with its own multi handle (its connection cache),
// the same options set for every request, curl_multi_perform then
// curl_multi_poll (at most 10 ms) until done, the handle removed and reset.
class CurlMultiClient {
 public:
  explicit CurlMultiClient(int port) : origin_("http://127.0.0.1:" + std::to_string(port)) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    multi_ = curl_multi_init();
    easy_ = curl_easy_init();
  }
  ~CurlMultiClient() {
    curl_easy_cleanup(easy_);
    curl_multi_cleanup(multi_);
  }

  std::optional<std::string> exchange(const WireRequest& request) {
    curl_slist* headers = nullptr;
    for (const auto& h : request.headers) headers = curl_slist_append(headers, h.c_str());
    headers = curl_slist_append(headers, "Expect:");
    const std::string url = origin_ + request.target;
    std::string body;
    char error[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(easy_, CURLOPT_URL, url.c_str());
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(easy_, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(easy_, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(easy_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy_, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(easy_, CURLOPT_CONNECTTIMEOUT_MS, 10'000L);
    curl_easy_setopt(easy_, CURLOPT_TIMEOUT_MS, 600'000L);
    curl_easy_setopt(easy_, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(easy_, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(easy_, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy_, CURLOPT_USERAGENT, "agentkit/0.1");
    curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy_, CURLOPT_HEADERFUNCTION, &on_header);
    curl_easy_setopt(easy_, CURLOPT_WRITEFUNCTION, &on_body);
    curl_easy_setopt(easy_, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(easy_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(easy_, CURLOPT_POSTFIELDS, request.body.data());
    curl_multi_add_handle(multi_, easy_);
    CURLcode result = CURLE_OK;
    for (bool finished = false; !finished;) {
      int running = 0;
      if (curl_multi_perform(multi_, &running) != CURLM_OK) break;
      int queued = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi_, &queued)) {
        if (msg->msg == CURLMSG_DONE && msg->easy_handle == easy_) {
          result = msg->data.result;
          finished = true;
        }
      }
      if (!finished && running == 0) break;
      if (!finished) curl_multi_poll(multi_, nullptr, 0, 10, nullptr);
    }
    curl_multi_remove_handle(multi_, easy_);
    long status = 0;
    curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_reset(easy_);
    curl_slist_free_all(headers);
    if (result != CURLE_OK || status != 200) {
      std::fprintf(stderr, "curl floor: status %ld: %s\n", status, error[0] ? error : curl_easy_strerror(result));
      return std::nullopt;
    }
    return body;
  }

 private:
  static std::size_t on_header(char*, std::size_t size, std::size_t n, void*) { return size * n; }
  static std::size_t on_body(char* data, std::size_t size, std::size_t n, void* out) {
    static_cast<std::string*>(out)->append(data, size * n);
    return size * n;
  }

  std::string origin_;
  CURLM* multi_;
  CURL* easy_;
};

int run_floor(const std::string& floor, int k, int port, bool stream, const fs::path& dir, double origin_ms) {
  std::map<int, std::vector<WireRequest>> recorded;  // by n
  for (const int n : {std::min(k, kWarmupIterations), k}) {
    if (recorded.contains(n)) continue;
    auto requests = record_requests(n, port, stream, dir);
    if (!requests) return 1;
    recorded.emplace(n, std::move(*requests));
  }
  RawClient raw(port);
  CurlMultiClient curl(port);
  const double startup_ms = epoch_ms() - origin_ms;
  std::vector<std::string> replies;
  const auto run_once = [&](int n) -> std::optional<Elapsed> {
    const auto& requests = recorded.at(n);
    replies.clear();
    replies.reserve(requests.size());
    const double cpu_start = cpu_ms();
    const auto start = Clock::now();
    for (const auto& request : requests) {
      auto reply = floor == "raw" ? raw.exchange(request.bytes) : curl.exchange(request);
      if (!reply) return std::nullopt;
      replies.push_back(std::move(*reply));
    }
    const Elapsed elapsed{std::chrono::duration<double, std::milli>(Clock::now() - start).count(), cpu_ms() - cpu_start};
    if (!check_replies(floor.c_str(), n, replies)) return std::nullopt;
    return elapsed;
  };
  const auto timings = repeat(k, run_once);
  if (!timings) return 1;
  std::size_t bytes = 0;
  for (const auto& r : recorded.at(k)) bytes += r.bytes.size();
  print_line(floor == "raw" ? "raw-socket" : "curl-multi", floor == "raw" ? "-" : curl_version_info(CURLVERSION_NOW)->version,
             k, *timings, startup_ms, {{"request_bytes", bytes}});
  return 0;
}

// --- the comparison (the parent process) ---

struct Runtime {
  std::string name;    // the "peer" of its JSON line
  std::string label;   // its row in the table
  std::string script;  // a peer script; empty for this executable
  std::vector<std::string> self_args;
};

const std::vector<Runtime> kRuntimes = {
    {"raw-socket", "raw socket", "", {"--floor", "raw"}},
    {"curl-multi", "curl multi", "", {"--floor", "curl"}},
    {"agentkit-run", "agentkit run()", "", {"--agentkit", "run"}},
    {"agentkit-poll", "agentkit poll()", "", {"--agentkit", "poll"}},
    {"ai-sdk", "Vercel AI SDK", "peer_ai_sdk.mjs", {}},
    {"openai-agents", "OpenAI Agents JS", "peer_openai_agents.mjs", {}},
    {"langgraph", "LangGraph.js", "peer_langgraph.mjs", {}},
};

// The server child: its port, and how to stop it.
struct ServerProcess {
  Child child;
  int port = 0;
};

std::optional<ServerProcess> start_server(const fs::path& dir) {
  const std::vector<std::string> argv = {"/proc/self/exe", "--server", dir.string()};
  const auto child = spawn_child(kWho, argv, true);
  if (!child) return std::nullopt;
  std::string line;
  for (char c; line.find('\n') == std::string::npos;) {
    pollfd pfd{child->stdout_fd, POLLIN, 0};
    if (poll(&pfd, 1, 10'000) <= 0 || read(child->stdout_fd, &c, 1) != 1) break;
    line += c;
  }
  const int port = std::atoi(line.c_str());
  if (port <= 0) {
    std::fprintf(stderr, "%s: the server did not say its port\n", kWho);
    close(child->stdin_fd);
    close(child->stdout_fd);
    reap(kWho, command_line(argv), child->pid, false);
    return std::nullopt;
  }
  return ServerProcess{*child, port};
}

// Stops the server; its statistics line ({"requests", "cpu_ms"}), if it printed one.
std::optional<Json> stop_server(ServerProcess& server) {
  close(server.child.stdin_fd);
  std::string output;
  const bool finished = read_until_eof(server.child.stdout_fd, output, Clock::now() + std::chrono::seconds(10));
  close(server.child.stdout_fd);
  if (!reap(kWho, "server", server.child.pid, !finished)) return std::nullopt;
  try {
    return Json::parse(last_line(output));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// `cpu`: where agentkit's and the floors' processes run (the JS peers, whose
// runtimes keep helper threads, and the server keep every CPU).
std::optional<Figures> measure(const Runtime& runtime, int k, int port, bool stream, const fs::path& peers,
                               const fs::path& dir, int cpu) {
  const std::string ks = std::to_string(k);
  const std::string ps = std::to_string(port);
  std::vector<std::string> argv;
  if (runtime.script.empty()) {
    argv = {"/proc/self/exe"};
    argv.insert(argv.end(), runtime.self_args.begin(), runtime.self_args.end());
    argv.insert(argv.end(), {ks, ps});
    if (runtime.self_args[0] == "--floor") argv.push_back(dir.string());
  } else {
    argv = {"node", (peers / runtime.script).string(), ks, "http://127.0.0.1:" + ps};
  }
  if (stream) argv.push_back("stream");
  const auto output = bench::on_cpu(runtime.script.empty() ? cpu : -1, [&] { return run_child(kWho, argv); });
  auto figures = output ? parse_figures(kWho, *output, runtime.name, k) : std::nullopt;
  if (figures && !runtime.script.empty() && figures->line.value("mode", "") != (stream ? "http-stream" : "http")) {
    std::fprintf(stderr, "%s: %s did not run in HTTP mode\n", kWho, runtime.script.c_str());
    return std::nullopt;
  }
  return figures;
}

using Results = std::map<std::pair<int, std::string>, std::optional<Figures>>;

std::optional<double> field(const Results& results, int k, const std::string& name, double Figures::*f) {
  const auto it = results.find({k, name});
  if (it == results.end() || !it->second) return std::nullopt;
  return (*it->second).*f;
}

// The table, Markdown, readable as is and pasteable into the README; then
// agentkit against curl multi. False when a target is missed (or unmeasured).
bool print_table(const Results& results, bool stream) {
  std::map<std::string, std::string> versions;  // by runtime
  for (const auto& runtime : kRuntimes) {
    versions[runtime.name] = "-";
    for (const int k : kIterationCounts) {
      if (const auto& f = results.at({k, runtime.name})) {
        versions[runtime.name] = f->version;
        if (f->line.contains("provider")) versions[runtime.name] += " + " + f->line["provider"].get<std::string>();
      }
    }
  }
  int width = 7;
  for (const auto& [name, version] : versions) width = std::max(width, static_cast<int>(version.size()));
  std::printf("\n| %-16s | %-*s |", "runtime", width, "version");
  // A µ is one byte wider than it looks, hence the widths one over the data's.
  for (const int k : kIterationCounts) {
    std::printf(" %16s | %10s | %7s | %6s |", format("K=%d wall µs/it", k).c_str(), "CPU µs/it", "wall/ak", "CPU/ak");
  }
  std::printf("\n| :--------------- | :%s |", std::string(static_cast<std::size_t>(width - 1), '-').c_str());
  for (std::size_t i = 0; i < kIterationCounts.size(); ++i) std::printf(" --------------: | --------: | ------: | -----: |");
  std::printf("\n");
  for (const auto& runtime : kRuntimes) {
    std::printf("| %-16s | %-*s |", runtime.label.c_str(), width, versions[runtime.name].c_str());
    for (const int k : kIterationCounts) {
      const auto& f = results.at({k, runtime.name});
      if (!f) {
        std::printf(" %15s | %9s | %7s | %6s |", "FAILED", "-", "-", "-");
        continue;
      }
      const bool ak = runtime.name == "agentkit-run";
      std::printf(" %15.1f | %9.1f | %7s | %6s |", f->us_per_iteration, f->cpu_us_per_iteration,
                  ak ? "-" : ratio(f->us_per_iteration, field(results, k, "agentkit-run", &Figures::us_per_iteration)).c_str(),
                  ak ? "-"
                     : ratio(f->cpu_us_per_iteration, field(results, k, "agentkit-run", &Figures::cpu_us_per_iteration))
                           .c_str());
    }
    std::printf("\n");
  }
  std::printf("\nwall/ak, CPU/ak: the row's figure divided by agentkit run()'s (above 1x: agentkit is faster).\n");
  std::printf("%s; every row sends its runtime's own requests but the floors, which replay agentkit's.\n\n",
              stream ? "Streaming (server-sent events)" : "Non-streaming");

  bool met = true;
  std::printf("%-34s %6s %12s %8s %12s %8s\n", "agentkit / curl multi", "K", "wall", "target", "client CPU", "target");
  for (const char* name : {"agentkit-run", "agentkit-poll"}) {
    for (const int k : kIterationCounts) {
      const auto wall = field(results, k, name, &Figures::us_per_iteration);
      const auto cpu = field(results, k, name, &Figures::cpu_us_per_iteration);
      const auto curl_wall = field(results, k, "curl-multi", &Figures::us_per_iteration);
      const auto curl_cpu = field(results, k, "curl-multi", &Figures::cpu_us_per_iteration);
      const bool wall_ok = wall && curl_wall && *wall <= kWallTarget * *curl_wall;
      const bool cpu_ok = cpu && curl_cpu && *cpu <= kCpuTarget * *curl_cpu;
      met = met && wall_ok && cpu_ok;
      std::printf("%-34s %6d %12s %8s %12s %8s\n",
                  std::string(name) == "agentkit-run" ? "agentkit run() / curl multi" : "agentkit poll() / curl multi", k,
                  (wall ? ratio(*wall, curl_wall) : std::string("-")).c_str(),
                  (wall_ok ? "<= 1.5x" : "MISSED"),
                  (cpu ? ratio(*cpu, curl_cpu) : std::string("-")).c_str(), (cpu_ok ? "<= 2x" : "MISSED"));
    }
  }
  for (const int k : kIterationCounts) {
    const auto& f = results.at({k, "agentkit-poll"});
    if (f && f->line.contains("polls_per_iteration")) {
      std::printf("(K=%d: the poll() host, calling poll(), draining the events and, with nothing else to do, "
                  "wait_ready(10 ms) between polls, made %.1f polls and drained %.1f events per iteration)\n",
                  k, f->line["polls_per_iteration"].get<double>(), f->line.value("events_per_iteration", 0.0));
    }
  }
  return met;
}

int compare(bool stream) {
  const fs::path peers = AGENTKIT_BENCH_PEERS_DIR;
  if (!fs::is_directory(peers / "node_modules")) {
    std::fprintf(stderr,
                 "%s: the JS peers are not installed (no %s).\n"
                 "Install them from the committed lockfile with `make bench`, or: npm ci --prefix %s\n",
                 kWho, (peers / "node_modules").c_str(), peers.c_str());
    return 1;
  }
  const fs::path dir = fs::temp_directory_path() / ("agentkit_bench_peers_http_" + std::to_string(getpid()));
  fs::create_directories(dir);
  auto server = start_server(dir);
  if (!server) return 1;
  std::printf("Peer comparison over HTTP: the add workload through each runtime's OpenAI Chat Completions client\n"
              "against one loopback server (127.0.0.1:%d, its own process); each row is one process.\n",
              server->port);
  const std::string load_before = load_average();
  Results results;
  bool ok = true;
  // One unreported K=1 pass first, so no row pays for a cold file cache.
  for (const auto& runtime : kRuntimes) {
    std::printf("warming up %s\n", runtime.label.c_str());
    std::fflush(stdout);
    ok = measure(runtime, 1, server->port, stream, peers, dir, -1).has_value() && ok;
  }
  // Which CPU is quicker changes within minutes: found again for each K.
  std::vector<std::string> cpus;
  for (const int k : kIterationCounts) {
    const bench::Calibration calibration = bench::calibrate_cpus();
    cpus.push_back("K=" + std::to_string(k) + ": " + (calibration.cpu < 0 ? "any CPU" : calibration.summary));
    for (const auto& runtime : kRuntimes) {
      std::printf("running %s, K=%d\n", runtime.label.c_str(), k);
      std::fflush(stdout);
      auto& figures = results[{k, runtime.name}] = measure(runtime, k, server->port, stream, peers, dir, calibration.cpu);
      ok = ok && figures.has_value();
    }
  }
  const bool met = print_table(results, stream);
  const auto stats = stop_server(*server);
  fs::remove_all(dir);
  if (stats && stats->value("requests", 0L) > 0) {
    std::printf("server: %ld requests, %.1f µs of server CPU per request\n", stats->value("requests", 0L),
                stats->value("cpu_ms", 0.0) * 1000.0 / static_cast<double>(stats->value("requests", 1L)));
  }
  std::printf("%ld cores; 1-minute load average %s before, %s after.\n", sysconf(_SC_NPROCESSORS_ONLN),
              load_before.c_str(), load_average().c_str());
  std::printf("agentkit and the floors on\n");
  for (const auto& line : cpus) std::printf("  %s\n", line.c_str());
  if (!met) std::printf("%s: agentkit misses a target against curl multi\n", kWho);
  return ok ? 0 : 1;
}

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--stream]\n"
               "       %s --server DIR\n"
               "       %s --agentkit run|poll K PORT [stream]\n"
               "       %s --floor raw|curl K PORT DIR [stream]\n",
               argv0, argv0, argv0, argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const double main_ms = epoch_ms();
  const std::vector<std::string> args(argv + 1, argv + argc);
  // Startup counts from the parent's spawn when it says when that was.
  const char* spawn = std::getenv(kSpawnEnv);
  const double origin = spawn != nullptr && std::atof(spawn) > 0 ? std::atof(spawn) : main_ms;
  if (args.empty() || (args.size() == 1 && args[0] == "--stream")) return compare(!args.empty());
  if (args.size() == 2 && args[0] == "--server") return run_server(args[1]);
  const bool stream = args.back() == "stream";
  const std::size_t n = args.size() - (stream ? 1 : 0);
  if (n == 4 && args[0] == "--agentkit" && (args[1] == "run" || args[1] == "poll")) {
    const int k = std::atoi(args[2].c_str()), port = std::atoi(args[3].c_str());
    if (k < 1 || port < 1) return usage(argv[0]);
    return run_agentkit(args[1] == "poll", k, port, stream, origin);
  }
  if (n == 5 && args[0] == "--floor" && (args[1] == "raw" || args[1] == "curl")) {
    const int k = std::atoi(args[2].c_str()), port = std::atoi(args[3].c_str());
    if (k < 1 || port < 1) return usage(argv[0]);
    return run_floor(args[1], k, port, stream, args[4], origin);
  }
  return usage(argv[0]);
}
