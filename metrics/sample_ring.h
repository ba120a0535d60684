// metrics/sample_ring.h: the bounded hand-off from the sampler thread
// to the collector's writer thread.
//
// SpscRing<T>: one producer, one consumer, fixed capacity (a power of two,
// allocated once in Init). TryPush() never blocks, allocates or makes a
// syscall: a full ring drops the entry and counts it. Memory ordering: the
// producer writes the slot, then publishes it with a release store of tail_;
// the consumer's acquire load of tail_ makes the slot visible, and its
// release store of head_ hands the slot back (acquire-loaded by the
// producer). Each side caches the other's index to touch the shared cache
// line only when the cached value says full/empty.
//
// MetricEvent tags the three things a Sampler emits, in order, so a
// descriptor always reaches the writer before its first sample. Descriptors
// and notices travel as pointers into the Sampler (stable for its life):
// the consumer must be done with them before the Sampler (its
// SamplerThread) is destroyed.
// RingSink is the MetricSink that pushes into a MetricRing; it refuses a
// descriptor or notice when the ring is full, and the Sampler offers it
// again next interval.
//
//   MetricRing ring;  ring.Init(4096);
//   RingSink sink(&ring);                     // sampler thread: sampler.SampleOnce(now, &sink)
//   MetricEvent e;                            // writer thread:
//   while (ring.TryPop(&e)) switch (e.kind) { ... }
#ifndef GPSCOPE_METRICS_SAMPLE_RING_H_
#define GPSCOPE_METRICS_SAMPLE_RING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

#include "metrics/sampler.h"
#include "proto/events.h"

namespace gpscope::metrics {

template <typename T>
class SpscRing {
  static_assert(std::is_trivially_copyable_v<T>, "ring entries are copied as plain data");

 public:
  SpscRing() = default;
  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  // Cold. capacity_pow2 >= 2 and a power of two.
  bool Init(size_t capacity_pow2) {
    if (capacity_pow2 < 2 || (capacity_pow2 & (capacity_pow2 - 1)) != 0) return false;
    slots_.reset(new (std::nothrow) T[capacity_pow2]);
    if (slots_ == nullptr) return false;
    mask_ = capacity_pow2 - 1;
    return true;
  }

  // Producer thread only.
  bool TryPush(const T& value) {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - head_cache_ > mask_) {
      head_cache_ = head_.load(std::memory_order_acquire);
      if (tail - head_cache_ > mask_) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
    }
    slots_[tail & mask_] = value;
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }

  // Consumer thread only.
  bool TryPop(T* value) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head == tail_cache_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (head == tail_cache_) return false;
    }
    *value = slots_[head & mask_];
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  size_t capacity() const { return mask_ + 1; }
  // Any thread: entries refused because the ring was full.
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  std::unique_ptr<T[]> slots_;
  size_t mask_ = 0;
  // Consumer side.
  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t tail_cache_ = 0;
  // Producer side.
  alignas(64) std::atomic<uint64_t> tail_{0};
  uint64_t head_cache_ = 0;
  std::atomic<uint64_t> dropped_{0};
};

struct MetricEvent {
  enum Kind : uint32_t { kSample = 0, kDescriptor = 1, kCapability = 2 };
  Kind kind;
  format::MetricSample sample;      // kSample
  const MetricDef* descriptor;      // kDescriptor: owned by the Sampler
  const CapabilityDef* capability;  // kCapability: owned by the Sampler
};

using MetricRing = SpscRing<MetricEvent>;

// MetricSink over a MetricRing. Sampler thread only.
class RingSink : public MetricSink {
 public:
  explicit RingSink(MetricRing* ring) : ring_(ring) {}
  bool OnDescriptor(const MetricDef& def) override {
    return ring_->TryPush(MetricEvent{MetricEvent::kDescriptor, {}, &def, nullptr});
  }
  bool OnCapability(const CapabilityDef& cap) override {
    return ring_->TryPush(MetricEvent{MetricEvent::kCapability, {}, nullptr, &cap});
  }
  void OnSample(const format::MetricSample& sample) override {
    if (!ring_->TryPush(MetricEvent{MetricEvent::kSample, sample, nullptr, nullptr})) {
      samples_dropped_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  // Any thread: samples lost to a full ring (refused descriptors and notices
  // are not lost: the Sampler offers them again; ring->dropped() counts all).
  uint64_t samples_dropped() const { return samples_dropped_.load(std::memory_order_relaxed); }

 private:
  MetricRing* ring_;
  std::atomic<uint64_t> samples_dropped_{0};
};

}  // namespace gpscope::metrics

#endif  // GPSCOPE_METRICS_SAMPLE_RING_H_
