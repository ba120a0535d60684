// common/posix.h: the small POSIX helpers that the collector, the sampler,
// the node monitor and the launcher each used to write for themselves:
// clocks in ns, a sleep, a random id, reading a /proc file, an environment
// block.
//
//   const uint64_t now_ns = ClockNs(CLOCK_MONOTONIC);          // hot path too
//   std::string env = ReadFileText("/proc/42/environ", 1 << 20);
//   std::map<std::string, std::string> vars = ParseEnvironBlock(env);
//
// Thread model: every function is safe on any thread. ClockNs is one
// clock_gettime (the vDSO), inline, allocation-free and async-signal-safe, so
// the collector's hot paths and its exit path use it; the others allocate
// or block (cold paths only).
#ifndef GPSCOPE_COMMON_POSIX_H_
#define GPSCOPE_COMMON_POSIX_H_

#include <time.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace gpscope::common {

// The time on `clock` (CLOCK_REALTIME, CLOCK_MONOTONIC, ...) in ns.
inline uint64_t ClockNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
// The same in ms (timeouts, deadlines).
inline uint64_t ClockMs(clockid_t clock) { return ClockNs(clock) / 1000000ull; }

// Sleeps about `ms` (nanosleep). A signal ends it early: callers look again.
void SleepMs(uint32_t ms);

// A random id, never 0 (getrandom; without entropy yet: the clocks and the
// pid). Names a trace file's writer (FileHeader.process_uid).
uint64_t RandomUid();

// The first `max_bytes` of the file at `path` (a /proc file: its size is not
// known before it is read); "" when it cannot be opened.
std::string ReadFileText(const char* path, size_t max_bytes);

// A NUL-separated block of NAME=VALUE entries (/proc/<pid>/environ) as a map;
// entries without '=' are skipped, a later NAME replaces an earlier one.
std::map<std::string, std::string> ParseEnvironBlock(std::string_view block);

}  // namespace gpscope::common

#endif  // GPSCOPE_COMMON_POSIX_H_
