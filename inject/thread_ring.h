// inject/thread_ring.h: the ring an application thread's collector state
// keeps for one kind of record (inject/stack_capture.h: call-site stack
// captures and API call rows), with its slots inline so the state can live
// in memory mapped once at start-up and be reused by later threads.
//
// One producer (the application thread that owns the state), one consumer
// (the writer thread). The producer claims the next slot, fills it in place
// and publishes it (a release store of head); a full ring refuses the claim
// and counts the record as dropped. The consumer copies a slot out and
// hands it back (a release store of tail). Zero-filled memory is an empty
// ring. The size in use is the caller's (a power of two <= kSlots, so the
// indices wrap cleanly at 2^32), passed to every call.
//
//   ThreadRing<ApiRow, 4096>& r = state->rows;    // producer:
//   if (ApiRow* row = r.Claim(size)) { *row = ...; if (r.Publish(size)) wake(); }
//   ApiRow out;  while (r.Pop(&out, size)) ...    // consumer (or up to a mark:
//   const uint32_t mark = r.published_head(); ...; while (r.PopBefore(&out, size, mark)) ...)
//
// The counters have one writer each (dropped and published: the producer),
// so they are updated with a load and a store, never a locked instruction;
// any thread may read them (relaxed). They are cumulative over the
// threads that reuse the state.
#ifndef GPSCOPE_INJECT_THREAD_RING_H_
#define GPSCOPE_INJECT_THREAD_RING_H_

#include <atomic>
#include <cstdint>
#include <type_traits>

namespace gpscope::inject {

// Adds one to a counter that only the calling thread writes: a load and a
// store, no locked instruction (readers on other threads load it relaxed).
inline void BumpOwnCounter(std::atomic<uint64_t>* n) {
  n->store(n->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

template <typename T, uint32_t kSlots>
struct ThreadRing {
  static_assert(std::is_trivially_copyable_v<T>, "ring slots are copied as plain data");
  static_assert((kSlots & (kSlots - 1)) == 0, "a power of two: the indices wrap at 2^32");

  std::atomic<uint32_t> head;  // next slot to fill (producer)
  std::atomic<uint32_t> tail;  // next slot to drain (consumer)
  std::atomic<uint64_t> dropped;    // refused claims
  std::atomic<uint64_t> published;  // records published
  T slots[kSlots];

  // Producer: the slot to fill, or null when the ring is full (counted).
  T* Claim(uint32_t size) {
    const uint32_t h = head.load(std::memory_order_relaxed);
    if (h - tail.load(std::memory_order_acquire) >= size) {
      BumpOwnCounter(&dropped);
      return nullptr;
    }
    return &slots[h & (size - 1)];
  }
  // Producer: publishes the claimed slot. True when that made the ring half
  // full (the caller wakes the consumer then).
  bool Publish(uint32_t size) {
    const uint32_t h = head.load(std::memory_order_relaxed) + 1;
    head.store(h, std::memory_order_release);
    BumpOwnCounter(&published);
    return h - tail.load(std::memory_order_relaxed) == size / 2;
  }
  // Consumer: the oldest published record into *out; false when empty.
  bool Pop(T* out, uint32_t size) {
    return PopBefore(out, size, head.load(std::memory_order_acquire));
  }
  // Consumer: the same, but only records published before head was `mark`
  // (a value head() had; later ones stay).
  bool PopBefore(T* out, uint32_t size, uint32_t mark) {
    const uint32_t t = tail.load(std::memory_order_relaxed);
    if (t == mark) return false;
    *out = slots[t & (size - 1)];
    tail.store(t + 1, std::memory_order_release);
    return true;
  }
  // Consumer: what head is now (for PopBefore).
  uint32_t published_head() const { return head.load(std::memory_order_acquire); }
  // Consumer (or a thread that owns the consumer's state): records
  // published and not drained.
  uint32_t pending() const {
    return head.load(std::memory_order_acquire) - tail.load(std::memory_order_relaxed);
  }

  // Any size > 0 as a usable one: the largest power of two <= size, at most kSlots.
  static constexpr uint32_t UsableSize(uint32_t size) {
    if (size == 0 || size >= kSlots) return kSlots;
    uint32_t p = 1;
    while (p * 2 <= size) p *= 2;
    return p;
  }
};

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_THREAD_RING_H_
