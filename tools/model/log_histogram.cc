// tools/model/log_histogram.cc: see log_histogram.h.
#include "tools/model/log_histogram.h"

#include <algorithm>
#include <cmath>

namespace gpscope::model {

uint64_t LogHistogram::BucketLow(int bucket) {
  if (bucket < kSubBuckets) return static_cast<uint64_t>(bucket);
  const int shift = bucket / kSubBuckets - 1;
  const uint64_t sub = static_cast<uint64_t>(bucket % kSubBuckets);
  return (uint64_t{kSubBuckets} + sub) << shift;
}

uint64_t LogHistogram::BucketWidth(int bucket) {
  if (bucket < kSubBuckets) return 1;
  return uint64_t{1} << (bucket / kSubBuckets - 1);
}

void LogHistogram::Grow(int bucket) {
  if (counts_.empty()) {
    first_bucket_ = bucket;
    counts_.assign(1, 0);
    return;
  }
  if (bucket < first_bucket_) {
    // Grow downwards with some slack so a slowly falling minimum does not
    // shift the vector on every new bucket.
    const int target = std::max(0, std::min(bucket, first_bucket_ - 16));
    counts_.insert(counts_.begin(), static_cast<size_t>(first_bucket_ - target), 0);
    first_bucket_ = target;
  } else if (bucket >= first_bucket_ + static_cast<int>(counts_.size())) {
    counts_.resize(static_cast<size_t>(bucket - first_bucket_ + 1), 0);
  }
}

void LogHistogram::Merge(const LogHistogram& other) {
  if (other.count_ == 0) return;
  const int other_last = other.first_bucket_ + static_cast<int>(other.counts_.size()) - 1;
  Grow(other.first_bucket_);
  if (other_last >= first_bucket_ + static_cast<int>(counts_.size())) Grow(other_last);
  for (size_t i = 0; i < other.counts_.size(); ++i) {
    counts_[static_cast<size_t>(other.first_bucket_ + static_cast<int>(i) - first_bucket_)] +=
        other.counts_[i];
  }
  if (count_ == 0) {
    min_ = other.min_;
    max_ = other.max_;
  } else {
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }
  count_ += other.count_;
  sum_ += other.sum_;
  sum_squares_ += other.sum_squares_;
}

void LogHistogram::Clear() { *this = LogHistogram(); }

double LogHistogram::mean() const {
  return count_ == 0 ? 0.0 : static_cast<double>(sum_) / static_cast<double>(count_);
}

double LogHistogram::stddev() const {
  if (count_ < 2) return 0.0;
  const double n = static_cast<double>(count_);
  const double m = static_cast<double>(sum_) / n;
  const double variance = sum_squares_ / n - m * m;
  return variance > 0 ? std::sqrt(variance) : 0.0;
}

double LogHistogram::Percentile(double p) const {
  if (count_ == 0) return 0.0;
  if (p <= 0) return static_cast<double>(min());
  if (p >= 100) return static_cast<double>(max_);
  // Rank in [0, count-1], as numpy's linear method; the value of a rank is
  // read by spreading a bucket's values evenly over its width.
  const double rank = p / 100.0 * static_cast<double>(count_ - 1);
  auto value_at = [this](uint64_t r) {
    uint64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
      const uint64_t c = counts_[i];
      if (c == 0 || seen + c <= r) {
        seen += c;
        continue;
      }
      const int bucket = first_bucket_ + static_cast<int>(i);
      const double low = static_cast<double>(BucketLow(bucket));
      const double width = static_cast<double>(BucketWidth(bucket));
      // Value j (0-based) of c in the bucket sits at the centre of its
      // 1/c share of the width; a width-1 bucket is exact.
      const double within = width <= 1.0 ? 0.0
                                         : (static_cast<double>(r - seen) + 0.5) /
                                               static_cast<double>(c) * width;
      return std::clamp(low + within, static_cast<double>(min_), static_cast<double>(max_));
    }
    return static_cast<double>(max_);
  };
  const uint64_t lower = static_cast<uint64_t>(std::floor(rank));
  const double fraction = rank - static_cast<double>(lower);
  const double a = value_at(lower);
  if (fraction == 0.0 || lower + 1 >= count_) return a;
  return a + (value_at(lower + 1) - a) * fraction;
}

}  // namespace gpscope::model
