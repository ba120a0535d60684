// tools/reader/clock_align.cc: see clock_align.h.
#include "tools/reader/clock_align.h"

#include <algorithm>
#include <cmath>

namespace gpscope::reader {

void ClockAlign::Add(uint64_t cupti_ns, uint64_t realtime_ns) {
  if (cupti_ns == 0) return;
  const Point p{cupti_ns, static_cast<int64_t>(realtime_ns - cupti_ns)};
  auto it = std::lower_bound(points_.begin(), points_.end(), cupti_ns,
                             [](const Point& a, uint64_t t) { return a.cupti_ns < t; });
  if (it != points_.end() && it->cupti_ns == cupti_ns) return;  // the same snapshot again
  points_.insert(it, p);
  if (points_.size() > kMaxPoints) {
    // Keep every other one (the first and the last stay).
    std::vector<Point> kept;
    kept.reserve(points_.size() / 2 + 2);
    for (size_t i = 0; i < points_.size(); i += 2) kept.push_back(points_[i]);
    if (kept.back().cupti_ns != points_.back().cupti_ns) kept.push_back(points_.back());
    points_ = std::move(kept);
  }
}

uint64_t ClockAlign::ToRealtimeNs(uint64_t cupti_ns) const {
  if (points_.empty()) return cupti_ns;
  auto it = std::lower_bound(points_.begin(), points_.end(), cupti_ns,
                             [](const Point& a, uint64_t t) { return a.cupti_ns < t; });
  int64_t offset = 0;
  if (it == points_.begin()) {
    offset = it->offset_ns;
  } else if (it == points_.end()) {
    offset = points_.back().offset_ns;
  } else {
    const Point& a = *std::prev(it);
    const Point& b = *it;
    const double f = static_cast<double>(cupti_ns - a.cupti_ns) /
                     static_cast<double>(b.cupti_ns - a.cupti_ns);
    // Offsets are differences of two untrusted clocks: b - a may not fit in
    // int64 (a hostile snapshot near 2^63), then the nearer point's offset.
    int64_t span = 0;
    if (__builtin_sub_overflow(b.offset_ns, a.offset_ns, &span)) {
      offset = f < 0.5 ? a.offset_ns : b.offset_ns;
    } else {
      offset = a.offset_ns + static_cast<int64_t>(std::llround(f * static_cast<double>(span)));
    }
  }
  return cupti_ns + static_cast<uint64_t>(offset);
}

uint64_t ClockAlign::drift_ns() const {
  if (points_.empty()) return 0;
  auto [lo, hi] = std::minmax_element(points_.begin(), points_.end(), [](const Point& a, const Point& b) {
    return a.offset_ns < b.offset_ns;
  });
  // hi >= lo, so the unsigned difference is exact even where the signed one
  // would overflow (offsets of untrusted clocks at the int64 limits).
  return static_cast<uint64_t>(hi->offset_ns) - static_cast<uint64_t>(lo->offset_ns);
}

uint64_t ClockAlign::residual_ns() const {
  double worst = 0;
  for (size_t i = 1; i + 1 < points_.size(); ++i) {
    const Point& a = points_[i - 1];
    const Point& m = points_[i];
    const Point& b = points_[i + 1];
    const double f = static_cast<double>(m.cupti_ns - a.cupti_ns) /
                     static_cast<double>(b.cupti_ns - a.cupti_ns);
    const double predicted =
        static_cast<double>(a.offset_ns) +
        f * (static_cast<double>(b.offset_ns) - static_cast<double>(a.offset_ns));
    worst = std::max(worst, std::fabs(static_cast<double>(m.offset_ns) - predicted));
  }
  return static_cast<uint64_t>(std::llround(worst));
}

}  // namespace gpscope::reader
