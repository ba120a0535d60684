// tools/model/timeline.cc: see timeline.h.
#include "tools/model/timeline.h"

#include <algorithm>

namespace gpscope::model {

Timeline::Timeline(int fields, uint64_t anchor_ns, size_t max_windows, uint64_t first_width_ns)
    : fields_(fields),
      max_windows_(std::max<size_t>(max_windows, 2)),
      first_width_ns_(std::max<uint64_t>(first_width_ns, 1)),
      width_ns_(first_width_ns_) {
  anchor_ns_ = anchor_ns - anchor_ns % first_width_ns_;
}

void Timeline::Coarsen() {
  const size_t f = static_cast<size_t>(fields_);
  const size_t merged = (windows_ + 1) / 2;
  for (size_t w = 0; w < merged; ++w) {
    for (size_t i = 0; i < f; ++i) {
      const double a = values_[2 * w * f + i];
      const double b = 2 * w + 1 < windows_ ? values_[(2 * w + 1) * f + i] : 0.0;
      values_[w * f + i] = a + b;
    }
  }
  windows_ = merged;
  values_.resize(windows_ * f);
  width_ns_ *= 2;
  hot_[0] = hot_[1] = Hot{};  // their bounds changed
}

size_t Timeline::IndexSlow(uint64_t t_ns) {
  const uint64_t offset = t_ns > anchor_ns_ ? t_ns - anchor_ns_ : 0;
  // Powers of two (the default) divide with a shift.
  auto index_of = [&] {
    return (width_ns_ & (width_ns_ - 1)) == 0 ? offset >> __builtin_ctzll(width_ns_)
                                              : offset / width_ns_;
  };
  uint64_t index = index_of();
  while (index >= max_windows_) {
    Coarsen();
    index = index_of();
  }
  if (index >= windows_) {
    windows_ = static_cast<size_t>(index) + 1;
    values_.resize(windows_ * static_cast<size_t>(fields_), 0.0);
  }
  // The hot window: [anchor + index * width, anchor + (index + 1) * width),
  // window 0 from 0 (earlier times count in it); saturating near 2^64.
  uint64_t lo = 0, hi = 0;
  if (__builtin_mul_overflow(index, width_ns_, &lo) ||
      __builtin_add_overflow(lo, anchor_ns_, &lo)) {
    lo = ~uint64_t{0};
  }
  if (__builtin_add_overflow(lo, width_ns_, &hi)) hi = ~uint64_t{0};
  // It replaces the hot window nearer to it (empty ones first): the two
  // follow the two places the model adds at.
  auto distance = [index](const Hot& h) {
    if (h.lo_ns > h.hi_ns) return uint64_t{0};
    return h.index > index ? h.index - index : index - h.index;
  };
  Hot& victim = distance(hot_[0]) <= distance(hot_[1]) ? hot_[0] : hot_[1];
  victim.lo_ns = index == 0 ? 0 : lo;
  victim.hi_ns = hi;
  victim.index = static_cast<size_t>(index);
  return victim.index;
}

void Timeline::AddSpread(int field, uint64_t start_ns, uint64_t end_ns, double value) {
  if (fields_ == 0) return;
  if (end_ns <= start_ns) {
    Add(field, start_ns, value);
    return;
  }
  Spread(field, start_ns, end_ns, value / static_cast<double>(end_ns - start_ns));
}

void Timeline::Spread(int field, uint64_t start_ns, uint64_t end_ns, double per_ns) {
  if (fields_ == 0) return;
  start_ns = std::max(start_ns, anchor_ns_);
  if (end_ns <= start_ns) {  // wholly before the anchor: dropped, like the part before it
    Add(field, anchor_ns_, 0.0);
    return;
  }
  const size_t f = static_cast<size_t>(fields_);
  for (const Hot& h : hot_) {
    if (start_ns >= h.lo_ns && end_ns - 1 < h.hi_ns) {  // inside a hot window
      values_[h.index * f + static_cast<size_t>(field)] +=
          per_ns * static_cast<double>(end_ns - start_ns);
      return;
    }
  }
  Index(end_ns - 1);  // coarsen first, so the indexes below stay valid
  size_t index = static_cast<size_t>((start_ns - anchor_ns_) / width_ns_);
  uint64_t t = start_ns;
  while (t < end_ns) {
    // Saturating: near 2^64 (a hostile or wrapped timestamp) the window's
    // end would wrap below t and the loop would walk off the array.
    uint64_t window_end = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(index) + 1, width_ns_, &window_end) ||
        __builtin_add_overflow(window_end, anchor_ns_, &window_end)) {
      window_end = ~uint64_t{0};
    }
    const uint64_t piece_end = std::min(end_ns, window_end);
    values_[index * f + static_cast<size_t>(field)] += per_ns * static_cast<double>(piece_end - t);
    t = piece_end;
    ++index;
  }
}

double Timeline::Sum(int field, uint64_t from_ns, uint64_t to_ns) const {
  if (fields_ == 0 || to_ns <= from_ns || windows_ == 0) return 0.0;
  const size_t f = static_cast<size_t>(fields_);
  const uint64_t width = window_ns();
  // Only the windows that meet [from_ns, to_ns): window 0 also holds what
  // came before the anchor.
  const size_t first =
      from_ns <= anchor_ns_ ? 0 : static_cast<size_t>(std::min<uint64_t>((from_ns - anchor_ns_) / width, windows_));
  double sum = 0;
  for (size_t w = first; w < windows_; ++w) {
    const uint64_t w_start = anchor_ns_ + static_cast<uint64_t>(w) * width;
    const uint64_t w_end = w_start + width;
    const uint64_t lo = w == 0 ? 0 : w_start;
    if (lo >= to_ns) break;
    if (w_end <= from_ns) continue;
    const double v = values_[w * f + static_cast<size_t>(field)];
    if (v == 0.0) continue;
    const uint64_t a = std::max(from_ns, w_start);
    const uint64_t b = std::min(to_ns, w_end);
    if (from_ns <= lo && to_ns >= w_end) {
      sum += v;
    } else if (b > a) {
      sum += v * static_cast<double>(b - a) / static_cast<double>(width);
    }
  }
  return sum;
}

double Timeline::Total(int field) const {
  double sum = 0;
  const size_t f = static_cast<size_t>(fields_);
  for (size_t w = 0; w < windows_; ++w) sum += values_[w * f + static_cast<size_t>(field)];
  return sum;
}

}  // namespace gpscope::model
