// tests/tools/model_structures_test.cc: the model's per-event structures
// against plain reference versions of themselves: the Timeline's hot-window
// fast paths give the very doubles of the original window-by-window split
// (bit for bit), GallopUpperBound gives std::upper_bound's answer from any
// hint, RingQueue behaves as a deque, PeriodTracker keeps the same longest
// intervals. Random sequences with fixed seeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <random>
#include <vector>

#include "tools/model/log_histogram.h"
#include "tools/model/ring_queue.h"
#include "tools/model/timeline.h"
#include "tools/model/trace_model.h"

namespace gpscope::model {
namespace {

// The timeline before the hot window (54d91a1 .. 97bca3f): every Add and
// span found its window by division and every span walked its windows.
class ReferenceTimeline {
 public:
  ReferenceTimeline(int fields, uint64_t anchor_ns, size_t max_windows, uint64_t first_width_ns)
      : fields_(fields), max_windows_(max_windows), width_ns_(first_width_ns) {
    anchor_ns_ = anchor_ns - anchor_ns % first_width_ns;
  }
  void Add(int field, uint64_t t_ns, double value) {
    values_[Index(t_ns) * static_cast<size_t>(fields_) + static_cast<size_t>(field)] += value;
  }
  void AddSpan(int field, uint64_t start_ns, uint64_t end_ns) {
    if (end_ns <= start_ns) return;
    AddSpread(field, start_ns, end_ns, static_cast<double>(end_ns - start_ns));
  }
  void AddSpread(int field, uint64_t start_ns, uint64_t end_ns, double value) {
    if (end_ns <= start_ns) {
      Add(field, start_ns, value);
      return;
    }
    const double per_ns = value / static_cast<double>(end_ns - start_ns);
    start_ns = std::max(start_ns, anchor_ns_);
    if (end_ns <= start_ns) {
      Add(field, anchor_ns_, 0.0);
      return;
    }
    Index(end_ns - 1);
    const size_t f = static_cast<size_t>(fields_);
    size_t index = static_cast<size_t>((start_ns - anchor_ns_) / width_ns_);
    uint64_t t = start_ns;
    while (t < end_ns) {
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
  size_t windows() const { return windows_; }
  uint64_t window_ns() const { return width_ns_; }
  double Value(int field, size_t w) const {
    return values_[w * static_cast<size_t>(fields_) + static_cast<size_t>(field)];
  }

 private:
  size_t Index(uint64_t t_ns) {
    const uint64_t offset = t_ns > anchor_ns_ ? t_ns - anchor_ns_ : 0;
    uint64_t index = offset / width_ns_;
    while (index >= max_windows_) {
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
      index = offset / width_ns_;
    }
    if (index >= windows_) {
      windows_ = static_cast<size_t>(index) + 1;
      values_.resize(windows_ * static_cast<size_t>(fields_), 0.0);
    }
    return static_cast<size_t>(index);
  }

  int fields_;
  uint64_t anchor_ns_;
  size_t max_windows_;
  uint64_t width_ns_;
  size_t windows_ = 0;
  std::vector<double> values_;
};

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }

void ExpectSame(const Timeline& t, const ReferenceTimeline& r, int fields) {
  ASSERT_EQ(t.windows(), r.windows());
  ASSERT_EQ(t.window_ns(), r.window_ns());
  for (size_t w = 0; w < t.windows(); ++w) {
    for (int f = 0; f < fields; ++f) {
      ASSERT_TRUE(SameBits(t.Value(f, w), r.Value(f, w)))
          << "window " << w << " field " << f << ": " << t.Value(f, w) << " vs " << r.Value(f, w);
    }
  }
}

// Events nearly in time order (as the model sees them), spans mostly inside
// one window, some across several, some before the anchor, some near 2^64.
void RunTimelineProperty(uint64_t first_width_ns, size_t max_windows, uint64_t seed) {
  constexpr int kFields = 5;
  const uint64_t anchor = 1'700'000'000'123'456'789ull;
  Timeline t(kFields, anchor, max_windows, first_width_ns);
  ReferenceTimeline r(kFields, anchor, max_windows, first_width_ns);
  std::mt19937_64 rng(seed);
  uint64_t now = anchor + 1000;
  for (int i = 0; i < 200'000; ++i) {
    const int field = static_cast<int>(rng() % kFields);
    now += rng() % (first_width_ns / 4 + 1);
    uint64_t start = now;
    const int shape = static_cast<int>(rng() % 100);
    if (shape == 0) start = anchor - rng() % (3 * first_width_ns);  // before the anchor
    if (shape == 1) start = now - rng() % (first_width_ns * 64);    // late
    uint64_t length = rng() % (first_width_ns / 2 + 1);
    if (shape >= 2 && shape < 8) length = rng() % (first_width_ns * 5);  // several windows
    if (shape == 8) length = 0;
    const uint64_t end = start + length;
    switch (rng() % 4) {
      case 0: {
        const double v = static_cast<double>(rng() % 1000) / 7.0;
        t.Add(field, start, v);
        r.Add(field, start, v);
        break;
      }
      case 3: {  // several fields through one Row, as AddKernels adds
        const double v = static_cast<double>(rng() % 1000) / 7.0;
        const int other = (field + 1) % kFields;
        double* row = t.Row(start);
        ASSERT_NE(row, nullptr);
        row[field] += v;
        row[other] += 1;
        r.Add(field, start, v);
        r.Add(other, start, 1);
        break;
      }
      case 1:
        t.AddSpan(field, start, end);
        r.AddSpan(field, start, end);
        break;
      default: {
        const double v = static_cast<double>(rng() % 100000) / 3.0;
        t.AddSpread(field, start, end, v);
        r.AddSpread(field, start, end, v);
        break;
      }
    }
  }
  ExpectSame(t, r, kFields);
}

TEST(TimelineHotWindowTest, SameDoublesAsWindowByWindowPowerOfTwoWidth) {
  RunTimelineProperty(Timeline::kDefaultFirstWidthNs, Timeline::kDefaultMaxWindows, 1);
}

TEST(TimelineHotWindowTest, SameDoublesAsWindowByWindowOtherWidthAndCoarsening) {
  // 100 ms windows (ModelOptions::window_ns) and a small cap, so the run
  // coarsens many times and the hot window is dropped each time.
  RunTimelineProperty(100'000'000, 64, 2);
  RunTimelineProperty(1'000'003, 16, 3);
}

TEST(TimelineHotWindowTest, SpansNearTheEndOfTimeSaturate) {
  Timeline t(1, 0, 8, 1u << 20);
  ReferenceTimeline r(1, 0, 8, 1u << 20);
  const uint64_t top = ~uint64_t{0};
  for (uint64_t s : {top - 5, top - (1u << 21), top - 1, uint64_t{0}, top - 3}) {
    t.AddSpan(0, s, top);
    r.AddSpan(0, s, top);
    t.Add(0, s, 1.5);
    r.Add(0, s, 1.5);
  }
  ExpectSame(t, r, 1);
}

TEST(GallopUpperBoundTest, StdUpperBoundsAnswerFromEveryHint) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 300; ++round) {
    RingQueue<uint64_t> q;
    std::vector<uint64_t> v;
    const size_t n = rng() % 40;
    uint64_t x = rng() % 10;
    for (size_t i = 0; i < n; ++i) {
      x += rng() % 3;  // repeats, as equal step ends do
      v.push_back(x);
      q.push_back(x);
    }
    for (uint64_t t = 0; t < x + 3; ++t) {
      const size_t want = static_cast<size_t>(std::upper_bound(v.begin(), v.end(), t) - v.begin());
      for (size_t hint = 0; hint <= n + 2; ++hint) {
        ASSERT_EQ(GallopUpperBound(q, hint, t, [](uint64_t e) { return e; }), want)
            << "n " << n << " t " << t << " hint " << hint;
      }
    }
  }
}

TEST(RingQueueTest, BehavesAsADequeThroughGrowthAndWrap) {
  std::mt19937_64 rng(11);
  RingQueue<uint64_t> q;
  std::deque<uint64_t> d;
  for (uint64_t i = 0; i < 100'000; ++i) {
    if (rng() % 3 != 0 || d.empty()) {
      q.push_back(i);
      d.push_back(i);
    } else {
      q.pop_front();
      d.pop_front();
    }
    ASSERT_EQ(q.size(), d.size());
    if (!d.empty()) {
      ASSERT_EQ(q.front(), d.front());
      ASSERT_EQ(q.back(), d.back());
      const size_t k = static_cast<size_t>(rng() % d.size());
      ASSERT_EQ(q[k], d[k]);
    }
  }
}

// PeriodTracker before its kept-shortest cache: a scan of the kept
// intervals at every instance.
struct ReferenceLongest {
  std::vector<PeriodTracker::Kept> longest;
  void Keep(const PeriodTracker::Kept& k) {
    if (longest.size() < PeriodTracker::kLongestIntervals) {
      longest.push_back(k);
      return;
    }
    size_t shortest = 0;
    for (size_t i = 1; i < longest.size(); ++i) {
      if (longest[i].interval.length_ns() < longest[shortest].interval.length_ns()) shortest = i;
    }
    if (k.interval.length_ns() > longest[shortest].interval.length_ns()) longest[shortest] = k;
  }
};

TEST(PeriodTrackerTest, KeepsTheSameLongestIntervalsInTheSameSlots) {
  std::mt19937_64 rng(5);
  PeriodTracker p;
  ReferenceLongest r;
  uint64_t t = 1000;
  for (uint64_t i = 0; i < 50'000; ++i) {
    const uint64_t last = t;
    t += rng() % 8 == 0 ? rng() % 100'000 : 1000 + rng() % 50;  // ties and outliers
    if (p.count >= 2) r.Keep({{last, t}, p.count});
    p.Add(t);
  }
  ASSERT_EQ(p.longest.size(), r.longest.size());
  for (size_t i = 0; i < r.longest.size(); ++i) {
    EXPECT_EQ(p.longest[i].interval.start_ns, r.longest[i].interval.start_ns) << i;
    EXPECT_EQ(p.longest[i].interval.end_ns, r.longest[i].interval.end_ns) << i;
    EXPECT_EQ(p.longest[i].index, r.longest[i].index) << i;
  }
}

TEST(LogHistogramTest, InlineAddKeepsBucketGeometry) {
  LogHistogram h;
  for (uint64_t v : {uint64_t{0}, uint64_t{63}, uint64_t{64}, uint64_t{65}, uint64_t{1} << 40,
                     ~uint64_t{0}}) {
    h.Add(v);
    const int b = LogHistogram::BucketOf(v);
    EXPECT_LE(LogHistogram::BucketLow(b), v);
    EXPECT_GE(LogHistogram::BucketLow(b) + (LogHistogram::BucketWidth(b) - 1), v);
  }
  EXPECT_EQ(h.count(), 6u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), ~uint64_t{0});
}

}  // namespace
}  // namespace gpscope::model
