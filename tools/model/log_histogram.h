// tools/model/log_histogram.h: a mergeable histogram of non-negative integer
// values (durations in ns, bytes) with log-spaced buckets, for percentiles in
// bounded memory.
//
// Values below 64 are counted exactly. Above, every power of two is split
// into 64 equal buckets, so a bucket is at most 1/64 (1.6%) of its values
// wide and a percentile read from it (interpolated inside the bucket) is
// within ~0.8% of the exact one. Count, sum, min, max and the sum of squares
// are exact (the last in double precision), so mean and stddev are exact too.
// Storage grows only over the range of buckets actually used: the durations
// of one kernel name usually span a few powers of two, a few KiB.
//
//   LogHistogram h;
//   for (const KernelEvent& k : kernels) h.Add(k.end_ns - k.start_ns);
//   uint64_t p95_ns = h.Percentile(95);
//   total.Merge(h);
//
// Thread model: a value type; no internal synchronisation.
#ifndef GPSCOPE_TOOLS_MODEL_LOG_HISTOGRAM_H_
#define GPSCOPE_TOOLS_MODEL_LOG_HISTOGRAM_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tools/model/prefetch.h"

namespace gpscope::model {

class LogHistogram {
 public:
  static constexpr int kSubBucketBits = 6;  // 64 buckets per power of two
  static constexpr int kSubBuckets = 1 << kSubBucketBits;

  // Runs per event: inline, the bucket found with a count of leading zeros.
  void Add(uint64_t value) { Add(value, 1); }
  void Add(uint64_t value, uint64_t count) {
    if (count == 0) return;
    const int bucket = BucketOf(value);
    if (counts_.empty() || bucket < first_bucket_ ||
        bucket >= first_bucket_ + static_cast<int>(counts_.size())) {
      Grow(bucket);
    }
    counts_[static_cast<size_t>(bucket - first_bucket_)] += count;
    if (count_ == 0) {
      min_ = max_ = value;
    } else {
      min_ = value < min_ ? value : min_;
      max_ = value > max_ ? value : max_;
    }
    count_ += count;
    sum_ += value * count;
    const double v = static_cast<double>(value);
    sum_squares_ += v * v * static_cast<double>(count);
  }
  // Starts fetching the counter `value` would go to, when it is stored
  // already, so that an Add of it a little later need not wait for memory:
  // a caller that knows the value early calls this first (the model's
  // kernel period histograms, issue 24). Changes nothing.
  void Prefetch(uint64_t value) const {
    const size_t i = static_cast<size_t>(BucketOf(value) - first_bucket_);
    if (i < counts_.size()) PrefetchLine(&counts_[i]);
  }
  void Merge(const LogHistogram& other);
  void Clear();

  uint64_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  uint64_t sum() const { return sum_; }  // wraps only past 1.8e19 (584 years of ns)
  uint64_t min() const { return count_ == 0 ? 0 : min_; }
  uint64_t max() const { return max_; }
  double mean() const;
  double stddev() const;  // population standard deviation

  // The p-th percentile (p in [0, 100]), linear between ranks like numpy's
  // default; 0 when empty. Exact for values below 64 and for p = 0 / 100.
  double Percentile(double p) const;

  // Bucket geometry, public for tests.
  static int BucketOf(uint64_t value) {
    if (value < kSubBuckets) return static_cast<int>(value);
    const int exponent = 63 - __builtin_clzll(value);  // >= kSubBucketBits
    const int shift = exponent - kSubBucketBits;
    const int sub = static_cast<int>((value >> shift) & (kSubBuckets - 1));
    return (shift + 1) * kSubBuckets + sub;
  }
  static uint64_t BucketLow(int bucket);
  static uint64_t BucketWidth(int bucket);

 private:
  void Grow(int bucket);

  int first_bucket_ = 0;          // bucket of counts_[0]
  std::vector<uint64_t> counts_;  // buckets first_bucket_ .. first_bucket_ + size - 1
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = 0;
  uint64_t max_ = 0;
  double sum_squares_ = 0;
};

}  // namespace gpscope::model

#endif  // GPSCOPE_TOOLS_MODEL_LOG_HISTOGRAM_H_
