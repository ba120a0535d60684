// inject/clock_ns.h: a POSIX clock in ns, for the collector's units.
// clock_gettime only: async-signal-safe, no allocation.
#ifndef GPSCOPE_INJECT_CLOCK_NS_H_
#define GPSCOPE_INJECT_CLOCK_NS_H_

#include <time.h>

#include <cstdint>

namespace gpscope::inject {

inline uint64_t ClockNs(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_CLOCK_NS_H_
