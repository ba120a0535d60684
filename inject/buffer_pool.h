// inject/buffer_pool.h: the activity buffers CUPTI writes into.
//
// One virtual region (mmap, MAP_NORESERVE) of `cap_bytes`: untouched pages
// cost no RSS, so memory grows with use and never past the cap. Buffers are
// cut from it on demand, in two sizes:
//   * large (GPSCOPE_BUFFER_KB, 4 MiB by default) while fewer than
//     `large_slots` buffers are held by CUPTI: a few busy threads get few,
//     big buffers (fewer requests: cheapest per launch);
//   * small (256 KiB) once more are held: CUDA 13's CUPTI keeps a buffer per
//     thread (CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER defaults to 1)
//     and hands a partly filled one back only when forced, so a framework
//     with dozens of CUDA-calling threads (JAX/XLA's pools) holds one buffer
//     per thread; sixteen 4 MiB buffers ran out there and dropped records.
// Large buffers take at most half the cap; with the defaults (64 MiB) that
// is 8 large and 128 small ones: 136 threads may each hold a buffer.
// Released buffers keep their size and go back to their size's free list
// (LIFO: the warmest is reused first). When a size's list is empty and the
// region is used up, the other size is handed out.
//
// Two bounded lock-free structures per size hold buffer indices: `free` (a
// LIFO stack) and, shared, `completed` (a FIFO queue, Vyukov's).
//
// Threads: Acquire() and Complete() run on application threads or CUPTI's
// worker thread (inside CUPTI's buffer callbacks); PopCompleted() and
// Release() run on the writer thread. None of them allocates, locks, logs or
// makes a syscall; a pool with no buffer left returns nullptr and counts it
// (CUPTI then drops records and reports them via GetNumDroppedRecords).
#ifndef GPSCOPE_INJECT_BUFFER_POOL_H_
#define GPSCOPE_INJECT_BUFFER_POOL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gpscope::inject {

// Bounded MPMC queue of uint64 values; capacity is a power of two.
class IndexQueue {
 public:
  IndexQueue() = default;
  IndexQueue(const IndexQueue&) = delete;
  IndexQueue& operator=(const IndexQueue&) = delete;
  ~IndexQueue();

  bool Init(size_t capacity_pow2);  // cold path: allocates the cells
  bool TryPush(uint64_t value);
  bool TryPop(uint64_t* value);

 private:
  struct Cell {
    std::atomic<uint64_t> sequence;
    uint64_t value;
  };
  Cell* cells_ = nullptr;
  size_t mask_ = 0;
  alignas(64) std::atomic<uint64_t> enqueue_pos_{0};
  alignas(64) std::atomic<uint64_t> dequeue_pos_{0};
};

// Bounded lock-free LIFO stack of indices in [0, capacity) (Treiber stack;
// the head carries a 32-bit tag bumped on every change against ABA).
// LIFO matters: the buffer released last is the one still in cache, and a
// pool reused from its top keeps CUPTI writing into warm memory instead of
// cycling through every buffer (measured: see bench/RESULTS.md).
class IndexStack {
 public:
  IndexStack() = default;
  IndexStack(const IndexStack&) = delete;
  IndexStack& operator=(const IndexStack&) = delete;
  ~IndexStack();

  bool Init(uint32_t capacity);  // cold path: allocates the links
  void Push(uint32_t index);     // index < capacity, not already in the stack
  bool TryPop(uint32_t* index);
  bool Empty() const;            // a snapshot

 private:
  std::atomic<uint64_t> head_{0};  // tag << 32 | (index + 1); low half 0 = empty
  std::atomic<uint32_t>* next_ = nullptr;  // next_[i]: (index + 1) below i, 0 = none
  uint32_t capacity_ = 0;
};

class BufferPool {
 public:
  // Small buffers for many holders (see above), unless the large size is
  // smaller.
  static constexpr size_t kSmallBufferBytes = 256 * 1024;

  BufferPool() = default;
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  ~BufferPool();

  // Cold path. Two sizes within cap_bytes (see above): large_bytes is
  // rounded up to a multiple of small_bytes, small_bytes up to 8 (CUPTI
  // needs 8-byte alignment). large_slots: held buffers up to which a request
  // gets a large one; 0: as many as half the cap holds.
  bool Init(size_t large_bytes, size_t small_bytes, size_t cap_bytes, size_t large_slots = 0);
  // One size: `count` buffers of buffer_bytes.
  bool Init(size_t buffer_bytes, size_t count);

  // A buffer, or nullptr (counted in acquire_failures()); *bytes its size.
  uint8_t* Acquire(size_t* bytes = nullptr);
  // Hands a filled buffer to the writer. False (and counted) when the
  // pointer is not one of ours — then the caller must not touch it further.
  bool Complete(uint8_t* buffer, size_t valid_bytes);
  // Writer thread: next completed buffer, in completion order per producer.
  bool PopCompleted(uint8_t** buffer, size_t* valid_bytes);
  // Writer thread: returns a buffer to the free list.
  void Release(uint8_t* buffer);

  bool Owns(const uint8_t* p) const;
  size_t buffer_bytes() const { return large_bytes_; }  // the large size
  size_t small_bytes() const { return small_bytes_; }
  size_t cap_bytes() const { return region_bytes_; }
  // The most buffers the pool can cut (all small).
  size_t count() const { return max_buffers_; }
  // Buffers cut so far, by size, and the most held by CUPTI at once.
  uint64_t large_buffers() const { return large_made_.load(std::memory_order_relaxed); }
  uint64_t small_buffers() const { return small_made_.load(std::memory_order_relaxed); }
  int64_t peak_outstanding() const { return peak_outstanding_.load(std::memory_order_relaxed); }
  // True when no buffer is free and none can be cut: the next request fails.
  bool Exhausted() const;
  // Buffers handed to CUPTI and not yet completed.
  int64_t outstanding() const { return outstanding_.load(std::memory_order_relaxed); }
  uint64_t acquire_failures() const { return acquire_failures_.load(std::memory_order_relaxed); }
  // Completed buffers not yet popped by the writer (approximate while
  // producers run).
  uint64_t completed_pending() const {
    const uint64_t done = completions_.load(std::memory_order_acquire);
    const uint64_t popped = pops_.load(std::memory_order_acquire);
    return done > popped ? done - popped : 0;
  }
  uint64_t foreign_completions() const { return foreign_.load(std::memory_order_relaxed); }

 private:
  size_t IndexOf(const uint8_t* p) const;
  // Cuts a new buffer of `granules` from the region; SIZE_MAX when full.
  size_t Make(uint32_t granules);
  uint8_t* Hand(size_t index, size_t* bytes);

  uint8_t* region_ = nullptr;
  size_t region_bytes_ = 0;
  size_t large_bytes_ = 0;
  size_t small_bytes_ = 0;       // the granule: every buffer starts on one
  uint32_t large_granules_ = 1;  // granules per large buffer
  size_t granules_ = 0;          // in the region
  size_t max_buffers_ = 0;
  size_t large_slots_ = 0;
  size_t max_large_ = 0;         // large buffers that fit in half the cap
  // Per buffer index (written before the index is published by a push or
  // by buffer_of_granule_): its first granule and its size in granules.
  uint32_t* first_granule_ = nullptr;
  uint32_t* size_granules_ = nullptr;
  // Granule -> index + 1 of the buffer starting there (0: none).
  std::atomic<uint32_t>* buffer_of_granule_ = nullptr;
  std::atomic<uint64_t> next_granule_{0};
  std::atomic<uint32_t> next_index_{0};
  std::atomic<uint64_t> large_made_{0};
  std::atomic<uint64_t> small_made_{0};
  IndexStack free_large_;
  IndexStack free_small_;
  IndexQueue completed_;
  std::atomic<int64_t> peak_outstanding_{0};
  std::atomic<int64_t> outstanding_{0};
  std::atomic<uint64_t> acquire_failures_{0};
  std::atomic<uint64_t> completions_{0};
  std::atomic<uint64_t> pops_{0};
  std::atomic<uint64_t> foreign_{0};
};

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_BUFFER_POOL_H_
