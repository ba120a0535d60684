// tools/analyses/capture_windows.cc: see capture_windows.h.
#include "tools/analyses/capture_windows.h"

#include <algorithm>
#include <utility>

#include "gpscope/trace.pb.h"

namespace gpscope::analyses {

std::vector<CaptureWindow> CaptureWindows(const model::ProcessModel& p) {
  std::vector<std::pair<uint64_t, uint64_t>> off;
  for (const proto::LostInterval& l : p.lost_intervals) {
    if (l.reason() != proto::LOST_TRACING_DISABLED) continue;
    off.push_back({l.start_ns(), l.end_ns() == 0 ? p.last_ns : l.end_ns()});
  }
  std::sort(off.begin(), off.end());
  std::vector<CaptureWindow> traced;
  uint64_t at = p.first_ns;
  for (const auto& [a, b] : off) {
    if (a > at) traced.push_back({at, a});
    at = std::max(at, b);
  }
  if (at < p.last_ns) traced.push_back({at, p.last_ns});
  return traced;
}

}  // namespace gpscope::analyses
