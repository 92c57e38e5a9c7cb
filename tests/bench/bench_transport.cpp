// Transport overhead: 2000 sequential keep-alive requests to a loopback
// WireServer answering a small JSON body. Wall time per request includes the
// server's own work (parsing, answering) and two thread hand-offs.
//
// Measured twice. With client and server threads free to run on any CPU, an
// otherwise idle VM adds a cross-CPU wake-up to each hand-off (tens of µs
// with the haltpoll idle driver) that is a property of the machine, not of
// this code; with the whole process on one CPU the hand-offs are plain
// context switches. The target applies to the one-CPU figure; both are
// printed, with the client thread's CPU time per request. Run with
// `make bench`.
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <agentkit/providers/transport.h>
#include <agentkit/testing/wire_server.h>

namespace {

using agentkit::testing::WireServer;

struct Figures {
  double mean_us = 0;
  double median_us = 0;
  double p99_us = 0;
  double client_cpu_us = 0;  // CPU time of the calling thread per request
  std::size_t connections = 0;
};

std::size_t sink = 0;  // printed at the end so the work is not optimised away

double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

// Starts its own server (whose threads inherit the caller's CPU affinity).
Figures measure() {
  using clock = std::chrono::steady_clock;
  WireServer server;
  server.set_handler([](const WireServer::Request&) {
    WireServer::Response r;
    r.headers = {{"content-type", "application/json"}};
    r.body = R"({"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]})";
    return r;
  });
  agentkit::providers::Transport transport;
  const agentkit::providers::HttpRequest request{
      "POST", server.base_url() + "/v1/chat/completions",
      {{"content-type", "application/json"}, {"authorization", "Bearer sk-bench"}},
      R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]})"};

  for (int i = 0; i < 200; ++i) sink += transport.send(request).body.size();  // warm up

  constexpr int kRequests = 2000;
  std::vector<double> us;
  us.reserve(kRequests);
  const double cpu_start = thread_cpu_us();
  const auto total_start = clock::now();
  for (int i = 0; i < kRequests; ++i) {
    const auto start = clock::now();
    sink += transport.send(request).body.size();
    us.push_back(std::chrono::duration<double, std::micro>(clock::now() - start).count());
  }
  Figures f;
  f.mean_us = std::chrono::duration<double, std::micro>(clock::now() - total_start).count() / kRequests;
  f.client_cpu_us = (thread_cpu_us() - cpu_start) / kRequests;
  std::sort(us.begin(), us.end());
  f.median_us = us[us.size() / 2];
  f.p99_us = us[us.size() * 99 / 100];
  f.connections = server.connections_accepted();
  return f;
}

void print(const char* label, const Figures& f, const char* target) {
  std::printf("%-44s %8.1f %8.1f %8.1f %10.1f %8s\n", label, f.mean_us, f.median_us, f.p99_us, f.client_cpu_us, target);
}

}  // namespace

int main() {
  const Figures spread = measure();

  cpu_set_t one{};
  CPU_ZERO(&one);
  CPU_SET(static_cast<unsigned>(std::max(sched_getcpu(), 0)), &one);
  const bool pinned = sched_setaffinity(0, sizeof one, &one) == 0;
  const Figures same_cpu = measure();

  std::printf("%-44s %8s %8s %8s %10s %8s\n", "transport: 2000 keep-alive send(), us/request", "mean", "median", "p99",
              "client cpu", "target");
  print("client and server on any CPU", spread, "-");
  print(pinned ? "client and server on one CPU" : "one CPU (pinning failed: unpinned again)", same_cpu, "< 100");
  std::printf("connections accepted: %zu and %zu (keep-alive)\n", spread.connections, same_cpu.connections);
  const bool ok = same_cpu.mean_us < 100 && spread.connections == 1 && same_cpu.connections == 1;
  std::printf("targets %s (checksum %zu)\n", ok ? "met" : "MISSED", sink);
  return ok ? 0 : 1;
}
