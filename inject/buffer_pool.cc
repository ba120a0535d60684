#include "inject/buffer_pool.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace gpscope::inject {

IndexQueue::~IndexQueue() { delete[] cells_; }

bool IndexQueue::Init(size_t capacity_pow2) {
  if (capacity_pow2 < 2 || (capacity_pow2 & (capacity_pow2 - 1)) != 0) return false;
  cells_ = new (std::nothrow) Cell[capacity_pow2];
  if (cells_ == nullptr) return false;
  for (size_t i = 0; i < capacity_pow2; ++i) cells_[i].sequence.store(i, std::memory_order_relaxed);
  mask_ = capacity_pow2 - 1;
  return true;
}

// Vyukov's bounded MPMC queue: each cell's sequence says whose turn it is.
// acquire on the sequence load pairs with the release store of the previous
// owner, so `value` is published before the sequence that hands it over.
bool IndexQueue::TryPush(uint64_t value) {
  uint64_t pos = enqueue_pos_.load(std::memory_order_relaxed);
  for (;;) {
    Cell* cell = &cells_[pos & mask_];
    uint64_t seq = cell->sequence.load(std::memory_order_acquire);
    int64_t diff = static_cast<int64_t>(seq) - static_cast<int64_t>(pos);
    if (diff == 0) {
      if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
        cell->value = value;
        cell->sequence.store(pos + 1, std::memory_order_release);
        return true;
      }
    } else if (diff < 0) {
      return false;  // full
    } else {
      pos = enqueue_pos_.load(std::memory_order_relaxed);
    }
  }
}

bool IndexQueue::TryPop(uint64_t* value) {
  uint64_t pos = dequeue_pos_.load(std::memory_order_relaxed);
  for (;;) {
    Cell* cell = &cells_[pos & mask_];
    uint64_t seq = cell->sequence.load(std::memory_order_acquire);
    int64_t diff = static_cast<int64_t>(seq) - static_cast<int64_t>(pos + 1);
    if (diff == 0) {
      if (dequeue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
        *value = cell->value;
        cell->sequence.store(pos + mask_ + 1, std::memory_order_release);
        return true;
      }
    } else if (diff < 0) {
      return false;  // empty
    } else {
      pos = dequeue_pos_.load(std::memory_order_relaxed);
    }
  }
}

IndexStack::~IndexStack() { delete[] next_; }

bool IndexStack::Init(uint32_t capacity) {
  next_ = new (std::nothrow) std::atomic<uint32_t>[capacity];
  if (next_ == nullptr) return false;
  for (uint32_t i = 0; i < capacity; ++i) next_[i].store(0, std::memory_order_relaxed);
  capacity_ = capacity;
  return true;
}

void IndexStack::Push(uint32_t index) {
  uint64_t head = head_.load(std::memory_order_relaxed);
  uint64_t next_head;
  do {
    next_[index].store(static_cast<uint32_t>(head), std::memory_order_relaxed);
    next_head = (((head >> 32) + 1) << 32) | (index + 1);
  } while (!head_.compare_exchange_weak(head, next_head, std::memory_order_release,
                                        std::memory_order_relaxed));
}

bool IndexStack::TryPop(uint32_t* index) {
  uint64_t head = head_.load(std::memory_order_acquire);
  uint64_t next_head;
  uint32_t top;
  do {
    if (static_cast<uint32_t>(head) == 0) return false;
    top = static_cast<uint32_t>(head) - 1;
    // May read a link that a concurrent pop/push is changing; the tag in the
    // CAS then fails and we retry with the fresh head.
    next_head = (((head >> 32) + 1) << 32) | next_[top].load(std::memory_order_relaxed);
  } while (!head_.compare_exchange_weak(head, next_head, std::memory_order_acquire,
                                        std::memory_order_acquire));
  *index = top;
  return true;
}

BufferPool::~BufferPool() {
  if (region_ != nullptr) munmap(region_, region_bytes_);
}

bool BufferPool::Init(size_t buffer_bytes, size_t count) {
  if (count == 0 || count > (1u << 16) || buffer_bytes == 0) return false;
  buffer_bytes_ = (buffer_bytes + 7) & ~size_t{7};
  count_ = count;
  region_bytes_ = buffer_bytes_ * count_;
  void* p = mmap(nullptr, region_bytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    region_ = nullptr;
    return false;
  }
  region_ = static_cast<uint8_t*>(p);
  size_t cap = 2;
  while (cap < count_) cap <<= 1;
  if (!free_.Init(static_cast<uint32_t>(count_)) || !completed_.Init(cap)) return false;
  // Pushed in reverse, so buffer 0 is handed out first.
  for (size_t i = count_; i-- > 0;) free_.Push(static_cast<uint32_t>(i));
  return true;
}

size_t BufferPool::IndexOf(const uint8_t* p) const {
  if (region_ == nullptr || p < region_ || p >= region_ + region_bytes_) return SIZE_MAX;
  size_t off = static_cast<size_t>(p - region_);
  if (off % buffer_bytes_ != 0) return SIZE_MAX;
  return off / buffer_bytes_;
}

bool BufferPool::Owns(const uint8_t* p) const { return IndexOf(p) != SIZE_MAX; }

uint8_t* BufferPool::Acquire() {
  uint32_t index;
  if (!free_.TryPop(&index)) {
    acquire_failures_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  outstanding_.fetch_add(1, std::memory_order_relaxed);
  return region_ + static_cast<size_t>(index) * buffer_bytes_;
}

bool BufferPool::Complete(uint8_t* buffer, size_t valid_bytes) {
  size_t index = IndexOf(buffer);
  if (index == SIZE_MAX || valid_bytes > buffer_bytes_) {
    foreign_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  outstanding_.fetch_sub(1, std::memory_order_relaxed);
  // Cannot fail: the queue holds every buffer at once.
  return completed_.TryPush((static_cast<uint64_t>(index) << 48) | valid_bytes);
}

bool BufferPool::PopCompleted(uint8_t** buffer, size_t* valid_bytes) {
  uint64_t v;
  if (!completed_.TryPop(&v)) return false;
  *buffer = region_ + (v >> 48) * buffer_bytes_;
  *valid_bytes = static_cast<size_t>(v & ((uint64_t{1} << 48) - 1));
  return true;
}

void BufferPool::Release(uint8_t* buffer) {
  size_t index = IndexOf(buffer);
  if (index != SIZE_MAX) free_.Push(static_cast<uint32_t>(index));
}

}  // namespace gpscope::inject
