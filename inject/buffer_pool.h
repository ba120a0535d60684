// inject/buffer_pool.h: the fixed pool of activity buffers CUPTI writes into.
//
// One virtual region (mmap, MAP_NORESERVE) cut into `count` buffers of
// `buffer_bytes`: untouched pages cost no RSS, so memory grows with use and
// never past count * buffer_bytes. Two bounded lock-free structures
// hold buffer indices: `free` (a LIFO stack, so the warmest buffer is reused
// first) and `completed` (a FIFO queue, Vyukov's).
//
// Threads: Acquire() and Complete() run on application threads or CUPTI's
// worker thread (inside CUPTI's buffer callbacks); PopCompleted() and
// Release() run on the writer thread. None of them allocates, locks, logs or
// makes a syscall; a pool with no free buffer returns nullptr and counts it
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

 private:
  std::atomic<uint64_t> head_{0};  // tag << 32 | (index + 1); low half 0 = empty
  std::atomic<uint32_t>* next_ = nullptr;  // next_[i]: (index + 1) below i, 0 = none
  uint32_t capacity_ = 0;
};

class BufferPool {
 public:
  BufferPool() = default;
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  ~BufferPool();

  // Cold path. buffer_bytes is rounded up to 8 (CUPTI needs 8-byte alignment).
  bool Init(size_t buffer_bytes, size_t count);

  // A free buffer, or nullptr (counted in acquire_failures()).
  uint8_t* Acquire();
  // Hands a filled buffer to the writer. False (and counted) when the
  // pointer is not one of ours — then the caller must not touch it further.
  bool Complete(uint8_t* buffer, size_t valid_bytes);
  // Writer thread: next completed buffer, in completion order per producer.
  bool PopCompleted(uint8_t** buffer, size_t* valid_bytes);
  // Writer thread: returns a buffer to the free list.
  void Release(uint8_t* buffer);

  bool Owns(const uint8_t* p) const;
  size_t buffer_bytes() const { return buffer_bytes_; }
  size_t count() const { return count_; }
  // Buffers handed to CUPTI and not yet completed.
  int64_t outstanding() const { return outstanding_.load(std::memory_order_relaxed); }
  uint64_t acquire_failures() const { return acquire_failures_.load(std::memory_order_relaxed); }
  uint64_t foreign_completions() const { return foreign_.load(std::memory_order_relaxed); }

 private:
  size_t IndexOf(const uint8_t* p) const;

  uint8_t* region_ = nullptr;
  size_t region_bytes_ = 0;
  size_t buffer_bytes_ = 0;
  size_t count_ = 0;
  IndexStack free_;
  IndexQueue completed_;
  std::atomic<int64_t> outstanding_{0};
  std::atomic<uint64_t> acquire_failures_{0};
  std::atomic<uint64_t> foreign_{0};
};

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_BUFFER_POOL_H_
