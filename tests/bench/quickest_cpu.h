#pragma once
// This VM's two vCPUs are not equal, and not in a fixed way: an
// allocation-heavy workload has run 1.45x slower on one than on the other in
// the same minute (which one changes), and the scheduler moves a thread
// between them. A benchmark that compares figures (traced against untraced,
// agentkit against the curl floor) runs what it compares on one CPU, the one
// where a short calibration runs quickest, and prints what the calibration
// found, so the difference is seen, not hidden.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

namespace bench {

struct Calibration {
  int cpu = -1;         // the quickest; -1 when none could be measured
  std::string summary;  // "cpu 0 (calibration ms: cpu 0 57.1, cpu 1 84.0)"
};

inline bool pin_thread(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
}

// Times map inserts of short strings (allocation and pointer chasing, as a
// run is) on each CPU the calling thread may use; its affinity is restored.
inline Calibration calibrate_cpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed) != 0) return {};
  const auto calibrate = [] {
    double best = 1e300;
    for (int rep = 0; rep < 3; ++rep) {
      const auto start = std::chrono::steady_clock::now();
      std::map<std::string, int> m;
      for (int i = 0; i < 20000; ++i) m[std::to_string(i * 7919)] += i;
      best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
  };
  Calibration result;
  double quickest = 1e300;
  std::string figures;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed) || !pin_thread(cpu)) continue;
    const double ms = calibrate();
    char line[64];
    std::snprintf(line, sizeof line, "%scpu %d %.1f", figures.empty() ? "" : ", ", cpu, ms);
    figures += line;
    if (ms < quickest) quickest = ms, result.cpu = cpu;
  }
  pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed);
  if (result.cpu >= 0) result.summary = "cpu " + std::to_string(result.cpu) + " (calibration ms: " + figures + ")";
  return result;
}

// Pins the calling thread to the quickest CPU; call it after starting any
// helper threads (an exporter, a loopback server), which keep every CPU.
// The line to print says where the timed thread ran.
inline std::string pin_to_quickest_cpu() {
  const Calibration c = calibrate_cpus();
  if (c.cpu < 0 || !pin_thread(c.cpu)) return "timed thread not pinned";
  return "timed thread on " + c.summary;
}

// Runs f() with the calling thread on `cpu` alone (a process it spawns
// starts there), then restores its affinity. `cpu` < 0: f() as it is.
template <class F>
decltype(auto) on_cpu(int cpu, F&& f) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const bool pinned = cpu >= 0 && pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed) == 0 && pin_thread(cpu);
  struct Restore {
    bool pinned;
    cpu_set_t* allowed;
    ~Restore() {
      if (pinned) pthread_setaffinity_np(pthread_self(), sizeof *allowed, allowed);
    }
  } restore{pinned, &allowed};
  return std::forward<F>(f)();
}

}  // namespace bench
