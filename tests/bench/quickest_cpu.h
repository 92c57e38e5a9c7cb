#pragma once
// This VM's two vCPUs are not equal: an allocation-heavy workload has run
// 1.45x slower on one than on the other, in the same minute, and the
// scheduler moves a thread between them. A benchmark that compares runs
// (traced against untraced, one K against another) pins its timed thread
// to one CPU, the one where a short calibration runs quickest, and prints
// what the calibration found, so the difference is seen, not hidden.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

namespace bench {

struct PinnedCpu {
  int cpu = -1;         // -1: not pinned
  std::string summary;  // "timed thread on cpu 0 (calibration ms: cpu 0 57.1, cpu 1 84.0)"
};

// Call after starting any helper threads (an exporter, a loopback server):
// they keep every CPU, only the calling thread is pinned.
inline PinnedCpu pin_to_quickest_cpu() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed) != 0) return {-1, "timed thread not pinned"};
  const auto pin = [](int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
  };
  // Map inserts of short strings: allocation and pointer chasing, as a run is.
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
  PinnedCpu result;
  double quickest = 1e300;
  std::string figures;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed) || !pin(cpu)) continue;
    const double ms = calibrate();
    char line[64];
    std::snprintf(line, sizeof line, "%scpu %d %.1f", figures.empty() ? "" : ", ", cpu, ms);
    figures += line;
    if (ms < quickest) quickest = ms, result.cpu = cpu;
  }
  if (result.cpu < 0 || !pin(result.cpu)) {
    pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed);
    return {-1, "timed thread not pinned"};
  }
  result.summary = "timed thread on cpu " + std::to_string(result.cpu) + " (calibration ms: " + figures + ")";
  return result;
}

}  // namespace bench
