// tools/model/timeline.h: additive counters over time in fixed windows, so
// that analyses can ask "how much X between t0 and t1" after the fact (for
// example over the steady state once the warm-up is known) without keeping
// events.
//
// Windows start at `first_width_ns` (default ~1 ms, 2^20 ns). When a run
// outgrows `max_windows`, pairs of windows merge and the width doubles, so
// memory stays bounded (fields x max_windows doubles) and the resolution is
// run length / max_windows at worst. Values of a span (busy time, a gap) are
// split over the windows it covers; Sum() prorates the windows at its ends,
// assuming values are spread evenly inside a window.
//
//   Timeline t(kFieldCount, /*anchor_ns=*/first_event_ns);
//   t.AddSpan(kBusy, interval.start_ns, interval.end_ns);
//   t.Add(kKernelCount, kernel.start_ns, 1);
//   double busy_ns = t.Sum(kBusy, steady_start_ns, steady_end_ns);
//   // or window by window (exact, no proration):
//   for (size_t w = 0; w < t.windows(); ++w) t.Value(kBusy, w) ...
//
// Times before the anchor count in the first window.
// Thread model: a value type.
#ifndef GPSCOPE_TOOLS_MODEL_TIMELINE_H_
#define GPSCOPE_TOOLS_MODEL_TIMELINE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpscope::model {

class Timeline {
 public:
  static constexpr int kFirstShift = 20;  // 1.05 ms windows to begin with
  static constexpr uint64_t kDefaultFirstWidthNs = uint64_t{1} << kFirstShift;
  static constexpr size_t kDefaultMaxWindows = 4096;

  Timeline() = default;
  // The anchor is rounded down to a multiple of the first width, so that
  // coarsening keeps windows aligned.
  Timeline(int fields, uint64_t anchor_ns, size_t max_windows = kDefaultMaxWindows,
           uint64_t first_width_ns = kDefaultFirstWidthNs);

  bool valid() const { return fields_ > 0; }
  int fields() const { return fields_; }
  void Add(int field, uint64_t t_ns, double value) {
    if (fields_ == 0) return;
    values_[Index(t_ns) * static_cast<size_t>(fields_) + static_cast<size_t>(field)] += value;
  }
  // The fields of the window holding t (nullptr when !valid()), for several
  // Adds at one time with one window lookup: row[field] += value is
  // Add(field, t_ns, value). Valid until the next call that may add a
  // window (any Add or Row).
  double* Row(uint64_t t_ns) {
    if (fields_ == 0) return nullptr;
    return &values_[Index(t_ns) * static_cast<size_t>(fields_)];
  }
  // Adds the length of [start_ns, end_ns), split over the windows it covers.
  void AddSpan(int field, uint64_t start_ns, uint64_t end_ns) {
    if (end_ns <= start_ns) return;
    // value / length is exactly 1.0, and 1.0 * length is the length: the
    // same sums as AddSpread's. A span inside the hot window (the common
    // case: busy intervals and gaps are shorter than a window) is one add.
    if (start_ns >= anchor_ns_) {
      for (const Hot& h : hot_) {
        if (start_ns >= h.lo_ns && end_ns - 1 < h.hi_ns) {
          values_[h.index * static_cast<size_t>(fields_) + static_cast<size_t>(field)] +=
              static_cast<double>(end_ns - start_ns);
          return;
        }
      }
    }
    Spread(field, start_ns, end_ns, 1.0);
  }
  // Adds `value` spread evenly over [start_ns, end_ns) (all of it at
  // start_ns when the span is empty); like AddSpan, the share that falls
  // before the anchor is dropped.
  void AddSpread(int field, uint64_t start_ns, uint64_t end_ns, double value);
  // The field's total over [from_ns, to_ns).
  double Sum(int field, uint64_t from_ns, uint64_t to_ns) const;
  double Total(int field) const;
  // The field's value in window `window` (< windows()).
  double Value(int field, size_t window) const {
    return values_[window * static_cast<size_t>(fields_) + static_cast<size_t>(field)];
  }

  uint64_t anchor_ns() const { return anchor_ns_; }
  uint64_t window_ns() const { return width_ns_; }
  uint64_t window_start_ns(size_t window) const { return anchor_ns_ + window * width_ns_; }
  size_t windows() const { return windows_; }
  size_t max_windows() const { return max_windows_; }
  uint64_t first_width_ns() const { return first_width_ns_; }

 private:
  // Window index of t, growing (and coarsening) storage to hold it. Runs
  // per event: the two hot windows are answered without a division. Events
  // come nearly in time order, at two places: the model adds an op's own
  // counts as it arrives and its busy time and gaps when it is swept, a
  // reorder window (2 s) later.
  size_t Index(uint64_t t_ns) {
    for (const Hot& h : hot_) {
      if (t_ns >= h.lo_ns && t_ns < h.hi_ns) return h.index;
    }
    return IndexSlow(t_ns);
  }
  size_t IndexSlow(uint64_t t_ns);
  // AddSpread of a non-empty span with its value per ns already divided.
  void Spread(int field, uint64_t start_ns, uint64_t end_ns, double per_ns);
  void Coarsen();

  int fields_ = 0;
  uint64_t anchor_ns_ = 0;
  size_t max_windows_ = kDefaultMaxWindows;
  uint64_t first_width_ns_ = kDefaultFirstWidthNs;
  uint64_t width_ns_ = kDefaultFirstWidthNs;
  size_t windows_ = 0;
  std::vector<double> values_;  // windows_ x fields_
  // A hot window: times in [lo_ns, hi_ns) have index `index` (< windows_);
  // empty (lo > hi) until used and after Coarsen.
  struct Hot {
    uint64_t lo_ns = 1;
    uint64_t hi_ns = 0;
    size_t index = 0;
  };
  Hot hot_[2];
};

}  // namespace gpscope::model

#endif  // GPSCOPE_TOOLS_MODEL_TIMELINE_H_
