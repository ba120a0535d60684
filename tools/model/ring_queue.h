// tools/model/ring_queue.h: a FIFO of values in one power-of-two ring, with
// indexing from the front: what std::deque offers the model's pending
// steps, without its per-element node arithmetic (a deque of 232-byte steps
// keeps two per node, and indexing one cost more than the search it served).
//
//   RingQueue<PendingStep> steps;
//   steps.push_back(s);
//   for (size_t i = 0; i < steps.size(); ++i) steps[i] ...
//   steps.pop_front();
//   // The first step ending after t, searched from where the last one was:
//   size_t i = GallopUpperBound(steps, hint, t, [](const PendingStep& s) { return s.end_ns; });
//
// Growth doubles the ring and moves the elements in order; references are
// valid until the next push_back. Thread model: a value type.
#ifndef GPSCOPE_TOOLS_MODEL_RING_QUEUE_H_
#define GPSCOPE_TOOLS_MODEL_RING_QUEUE_H_

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace gpscope::model {

template <typename T>
class RingQueue {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return ring_[(head_ + i) & mask_]; }
  const T& operator[](size_t i) const { return ring_[(head_ + i) & mask_]; }
  T& front() { return (*this)[0]; }
  T& back() { return (*this)[size_ - 1]; }

  void push_back(T value) {
    if (size_ == ring_.size()) Grow();
    ring_[(head_ + size_) & mask_] = std::move(value);
    ++size_;
  }
  void pop_front() {
    head_ = (head_ + 1) & mask_;
    --size_;
  }

 private:
  void Grow() {
    std::vector<T> bigger(ring_.empty() ? 16 : ring_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move((*this)[i]);
    ring_ = std::move(bigger);
    head_ = 0;
    mask_ = ring_.size() - 1;
  }

  std::vector<T> ring_;  // size 0 or a power of two
  size_t head_ = 0;
  size_t size_ = 0;
  size_t mask_ = 0;
};

// The first position i in [0, q.size()] with t < key(q[i]): std::upper_bound's
// answer when key does not decrease along q. Gallops from `hint` (clamped to
// the last element), so it costs O(log distance) from the hint: O(1) when
// the answers of successive searches move little.
template <typename T, typename Key>
size_t GallopUpperBound(const RingQueue<T>& q, size_t hint, uint64_t t, Key key) {
  const auto n = static_cast<std::ptrdiff_t>(q.size());
  if (n == 0) return 0;
  auto at = [&](std::ptrdiff_t i) -> uint64_t { return key(q[static_cast<size_t>(i)]); };
  const std::ptrdiff_t pos = std::min<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(hint), n - 1);
  // lo < hi with key(lo) <= t (lo = -1: none) and key(hi) > t (hi = n: none).
  std::ptrdiff_t lo = 0, hi = 0, step = 1;
  if (at(pos) > t) {
    hi = pos;
    for (;;) {
      lo = hi - step;
      if (lo < 0) {
        lo = -1;
        break;
      }
      if (at(lo) <= t) break;
      hi = lo;
      step *= 2;
    }
  } else {
    lo = pos;
    for (;;) {
      hi = lo + step;
      if (hi >= n) {
        hi = n;
        break;
      }
      if (at(hi) > t) break;
      lo = hi;
      step *= 2;
    }
  }
  while (hi - lo > 1) {
    const std::ptrdiff_t mid = lo + (hi - lo) / 2;
    if (at(mid) <= t) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return static_cast<size_t>(hi);
}

}  // namespace gpscope::model

#endif  // GPSCOPE_TOOLS_MODEL_RING_QUEUE_H_
