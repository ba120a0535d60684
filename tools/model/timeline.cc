// tools/model/timeline.cc: see timeline.h.
#include "tools/model/timeline.h"

#include <algorithm>

namespace gpscope::model {

Timeline::Timeline(int fields, uint64_t anchor_ns, size_t max_windows)
    : fields_(fields),
      // Aligned to the first width, so coarsening keeps windows aligned.
      anchor_ns_(anchor_ns & ~((uint64_t{1} << kFirstShift) - 1)),
      max_windows_(std::max<size_t>(max_windows, 2)) {}

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
  ++shift_;
}

size_t Timeline::Index(uint64_t t_ns) {
  const uint64_t offset = t_ns > anchor_ns_ ? t_ns - anchor_ns_ : 0;
  while ((offset >> shift_) >= max_windows_) Coarsen();
  const size_t index = static_cast<size_t>(offset >> shift_);
  if (index >= windows_) {
    windows_ = index + 1;
    values_.resize(windows_ * static_cast<size_t>(fields_), 0.0);
  }
  return index;
}

void Timeline::Add(int field, uint64_t t_ns, double value) {
  if (fields_ == 0) return;
  const size_t index = Index(t_ns);
  values_[index * static_cast<size_t>(fields_) + static_cast<size_t>(field)] += value;
}

void Timeline::AddSpan(int field, uint64_t start_ns, uint64_t end_ns) {
  if (fields_ == 0 || end_ns <= start_ns) return;
  start_ns = std::max(start_ns, anchor_ns_);
  if (end_ns <= start_ns) {  // wholly before the anchor
    Add(field, anchor_ns_, 0.0);
    return;
  }
  Index(end_ns - 1);  // coarsen first, so the indexes below stay valid
  const size_t f = static_cast<size_t>(fields_);
  size_t index = static_cast<size_t>((start_ns - anchor_ns_) >> shift_);
  uint64_t t = start_ns;
  while (t < end_ns) {
    const uint64_t window_end = anchor_ns_ + ((static_cast<uint64_t>(index) + 1) << shift_);
    const uint64_t piece_end = std::min(end_ns, window_end);
    values_[index * f + static_cast<size_t>(field)] += static_cast<double>(piece_end - t);
    t = piece_end;
    ++index;
  }
}

double Timeline::Sum(int field, uint64_t from_ns, uint64_t to_ns) const {
  if (fields_ == 0 || to_ns <= from_ns || windows_ == 0) return 0.0;
  const size_t f = static_cast<size_t>(fields_);
  const uint64_t width = window_ns();
  double sum = 0;
  for (size_t w = 0; w < windows_; ++w) {
    const uint64_t w_start = anchor_ns_ + (static_cast<uint64_t>(w) << shift_);
    const uint64_t w_end = w_start + width;
    // Window 0 also holds what came before the anchor.
    const uint64_t lo = w == 0 ? 0 : w_start;
    if (w_end <= from_ns || lo >= to_ns) continue;
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
