#include "inject/buffer_pool.h"

#include <sys/mman.h>

#include <algorithm>
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
  delete[] first_granule_;
  delete[] size_granules_;
  delete[] buffer_of_granule_;
}

bool IndexStack::Empty() const {
  return static_cast<uint32_t>(head_.load(std::memory_order_acquire)) == 0;
}

bool BufferPool::Init(size_t buffer_bytes, size_t count) {
  const size_t bytes = (buffer_bytes + 7) & ~size_t{7};
  if (count == 0 || count > (1u << 16) || bytes == 0) return false;
  return Init(bytes, bytes, bytes * count);
}

bool BufferPool::Init(size_t large_bytes, size_t small_bytes, size_t cap_bytes,
                      size_t large_slots) {
  if (region_ != nullptr || large_bytes == 0 || small_bytes == 0 || cap_bytes == 0) return false;
  small_bytes_ = (std::min(small_bytes, large_bytes) + 7) & ~size_t{7};
  large_granules_ = static_cast<uint32_t>((large_bytes + small_bytes_ - 1) / small_bytes_);
  large_bytes_ = small_bytes_ * large_granules_;
  granules_ = cap_bytes / small_bytes_;
  if (granules_ == 0 || granules_ > (1u << 20)) return false;
  region_bytes_ = granules_ * small_bytes_;
  max_buffers_ = granules_;
  // Large buffers take at most half the region (all of it with one size).
  max_large_ = large_granules_ == 1 ? granules_ : granules_ / 2 / large_granules_;
  if (max_large_ == 0 && large_granules_ <= granules_) max_large_ = 1;
  large_slots_ = large_slots != 0 ? large_slots : max_large_;
  void* p = mmap(nullptr, region_bytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  region_ = static_cast<uint8_t*>(p);
  first_granule_ = new (std::nothrow) uint32_t[max_buffers_];
  size_granules_ = new (std::nothrow) uint32_t[max_buffers_];
  buffer_of_granule_ = new (std::nothrow) std::atomic<uint32_t>[granules_];
  if (first_granule_ == nullptr || size_granules_ == nullptr || buffer_of_granule_ == nullptr) {
    return false;
  }
  for (size_t g = 0; g < granules_; ++g) buffer_of_granule_[g].store(0, std::memory_order_relaxed);
  size_t cap = 2;
  while (cap < max_buffers_) cap <<= 1;
  const uint32_t n = static_cast<uint32_t>(max_buffers_);
  return free_large_.Init(n) && free_small_.Init(n) && completed_.Init(cap);
}

size_t BufferPool::Make(uint32_t granules) {
  uint64_t g = next_granule_.load(std::memory_order_relaxed);
  do {
    if (g + granules > granules_) return SIZE_MAX;
  } while (!next_granule_.compare_exchange_weak(g, g + granules, std::memory_order_relaxed));
  // Each buffer has at least one granule: the index stays below max_buffers_.
  const uint32_t index = next_index_.fetch_add(1, std::memory_order_relaxed);
  first_granule_[index] = static_cast<uint32_t>(g);
  size_granules_[index] = granules;
  buffer_of_granule_[g].store(index + 1, std::memory_order_release);
  return index;
}

uint8_t* BufferPool::Hand(size_t index, size_t* bytes) {
  if (bytes != nullptr) *bytes = size_t{size_granules_[index]} * small_bytes_;
  return region_ + size_t{first_granule_[index]} * small_bytes_;
}

uint8_t* BufferPool::Acquire(size_t* bytes) {
  const bool two_sizes = large_granules_ > 1;
  const bool want_large = two_sizes && outstanding_.load(std::memory_order_relaxed) <
                                           static_cast<int64_t>(large_slots_);
  size_t index = SIZE_MAX;
  auto take = [&](bool large) {
    uint32_t i;
    if ((large ? free_large_ : free_small_).TryPop(&i)) {
      index = i;
      return true;
    }
    if (large) {
      // A slot for one more large buffer, then the memory for it.
      if (large_made_.fetch_add(1, std::memory_order_relaxed) >= max_large_) {
        large_made_.fetch_sub(1, std::memory_order_relaxed);
        return false;
      }
      index = Make(large_granules_);
      if (index == SIZE_MAX) large_made_.fetch_sub(1, std::memory_order_relaxed);
    } else {
      index = Make(1);
      if (index != SIZE_MAX) small_made_.fetch_add(1, std::memory_order_relaxed);
    }
    return index != SIZE_MAX;
  };
  // One size: "small" is the only one. Two: the preferred, then the other.
  const bool got = !two_sizes ? take(false) : (take(want_large) || take(!want_large));
  if (!got) {
    acquire_failures_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  const int64_t held = outstanding_.fetch_add(1, std::memory_order_relaxed) + 1;
  int64_t peak = peak_outstanding_.load(std::memory_order_relaxed);
  while (held > peak &&
         !peak_outstanding_.compare_exchange_weak(peak, held, std::memory_order_relaxed)) {
  }
  return Hand(index, bytes);
}

size_t BufferPool::IndexOf(const uint8_t* p) const {
  if (region_ == nullptr || p < region_ || p >= region_ + region_bytes_) return SIZE_MAX;
  const size_t off = static_cast<size_t>(p - region_);
  if (off % small_bytes_ != 0) return SIZE_MAX;
  const uint32_t v = buffer_of_granule_[off / small_bytes_].load(std::memory_order_acquire);
  return v == 0 ? SIZE_MAX : v - 1;
}

bool BufferPool::Owns(const uint8_t* p) const { return IndexOf(p) != SIZE_MAX; }

bool BufferPool::Exhausted() const {
  return free_small_.Empty() && free_large_.Empty() &&
         next_granule_.load(std::memory_order_relaxed) >= granules_;
}

bool BufferPool::Complete(uint8_t* buffer, size_t valid_bytes) {
  const size_t index = IndexOf(buffer);
  if (index == SIZE_MAX || valid_bytes > size_t{size_granules_[index]} * small_bytes_) {
    foreign_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  outstanding_.fetch_sub(1, std::memory_order_relaxed);
  completions_.fetch_add(1, std::memory_order_release);
  // Cannot fail: the queue holds every buffer at once.
  return completed_.TryPush((static_cast<uint64_t>(index) << 32) | valid_bytes);
}

bool BufferPool::PopCompleted(uint8_t** buffer, size_t* valid_bytes) {
  uint64_t v;
  if (!completed_.TryPop(&v)) return false;
  pops_.fetch_add(1, std::memory_order_release);
  *buffer = region_ + size_t{first_granule_[v >> 32]} * small_bytes_;
  *valid_bytes = static_cast<size_t>(v & 0xffffffffull);
  return true;
}

void BufferPool::Release(uint8_t* buffer) {
  const size_t index = IndexOf(buffer);
  if (index == SIZE_MAX) return;
  const bool large = large_granules_ > 1 && size_granules_[index] == large_granules_;
  (large ? free_large_ : free_small_).Push(static_cast<uint32_t>(index));
}

}  // namespace gpscope::inject
