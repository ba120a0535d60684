// tools/model/reorder_queue.h: puts an almost time-ordered stream of records
// back into start-time order, in memory bounded by a time window.
//
// CUPTI delivers GPU activity in buffers that are each roughly in order but
// arrive late and interleave; analyses that sweep over time (busy union, idle
// gaps) need the records sorted by start. The queue is a calendar queue:
// records go into ~1 ms buckets of a ring; a bucket is sorted and emitted
// once the newest start seen is `window_ns` past it. A record that arrives
// after its bucket was emitted is "late": it is emitted at once, out of
// order, and counted, so the consumer must tolerate (rare) disorder.
// Memory: the records of one window plus the ring (2,048 buckets; the window
// is capped at 2.1 s).
//
//   ReorderQueue<GpuOp> queue(/*window_ns=*/2'000'000'000);
//   queue.Push(op, emit);  // emit(const GpuOp&) gets late records
//   queue.Advance(emit);   // after each batch: emits what is old enough
//   queue.Drain(emit);     // at the end
//
// T needs a `uint64_t start_ns` and `uint64_t end_ns`.
// Thread model: one thread.
#ifndef GPSCOPE_TOOLS_MODEL_REORDER_QUEUE_H_
#define GPSCOPE_TOOLS_MODEL_REORDER_QUEUE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tools/model/prefetch.h"

namespace gpscope::model {

template <typename T>
class ReorderQueue {
 public:
  static constexpr int kBucketShift = 20;  // 1.05 ms buckets
  static constexpr uint64_t kRingBuckets = 2048;  // 2.1 s: must exceed the window

  explicit ReorderQueue(uint64_t window_ns)
      : window_ns_(std::min<uint64_t>(window_ns, (kRingBuckets - 2) << kBucketShift)),
        ring_(kRingBuckets) {}

  template <typename Emit>
  void Push(const T& item, Emit&& emit) {
    const uint64_t bucket = item.start_ns >> kBucketShift;
    if (!started_) {
      started_ = true;
      // Room for records up to one window earlier than the first one.
      const uint64_t back = window_ns_ >> kBucketShift;
      next_bucket_ = bucket > back ? bucket - back : 0;
    }
    if (bucket < next_bucket_) {
      ++late_;
      emit(item);
      return;
    }
    while (bucket - next_bucket_ >= kRingBuckets) {
      if (pending_ == 0) {
        next_bucket_ = bucket - (kRingBuckets - 1);
        break;
      }
      FlushBucket(emit);
    }
    ring_[bucket & (kRingBuckets - 1)].push_back(item);
    ++pending_;
    newest_start_ns_ = std::max(newest_start_ns_, item.start_ns);
  }

  // Emits, in order, every record that started more than the window before
  // the newest start seen.
  template <typename Emit>
  void Advance(Emit&& emit) {
    if (!started_ || newest_start_ns_ < window_ns_) return;
    const uint64_t limit = (newest_start_ns_ - window_ns_) >> kBucketShift;
    while (next_bucket_ < limit) {
      if (pending_ == 0) {
        next_bucket_ = limit;
        break;
      }
      FlushBucket(emit);
    }
  }

  // Emits everything still held, in order.
  template <typename Emit>
  void Drain(Emit&& emit) {
    while (pending_ > 0) FlushBucket(emit);
  }

  size_t pending() const { return pending_; }
  uint64_t late() const { return late_; }

 private:
  template <typename Emit>
  void FlushBucket(Emit&& emit) {
    std::vector<T>& items = ring_[next_bucket_ & (kRingBuckets - 1)];
    ++next_bucket_;
    // The next bucket is read after this one's records are emitted: its
    // records were pushed a window ago and are out of cache, each bucket in
    // an allocation of its own (so the hardware cannot guess it). Reading
    // the buckets cold was most of Push's and Advance's time on a 50 M-event
    // trace (issue 24).
    const std::vector<T>& next = ring_[next_bucket_ & (kRingBuckets - 1)];
    if (!next.empty()) {
      const char* begin = reinterpret_cast<const char*>(next.data());
      const char* end = reinterpret_cast<const char*>(next.data() + next.size());
      for (int line = 0; line < kPrefetchLines && begin < end; ++line, begin += 64) {
        PrefetchLine(begin);
      }
    }
    if (items.empty()) return;
    auto earlier = [](const T& a, const T& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns < b.end_ns;
    };
    if (!std::is_sorted(items.begin(), items.end(), earlier)) {
      std::sort(items.begin(), items.end(), earlier);  // in place: no allocation
    }
    for (const T& item : items) emit(item);
    pending_ -= items.size();
    items.clear();  // keeps capacity: no allocation in steady state
  }

  static constexpr int kPrefetchLines = 4;  // of the next bucket, 64 bytes each

  uint64_t window_ns_;
  std::vector<std::vector<T>> ring_;
  bool started_ = false;
  uint64_t next_bucket_ = 0;  // absolute bucket number of the oldest not emitted
  uint64_t newest_start_ns_ = 0;
  size_t pending_ = 0;
  uint64_t late_ = 0;
};

}  // namespace gpscope::model

#endif  // GPSCOPE_TOOLS_MODEL_REORDER_QUEUE_H_
