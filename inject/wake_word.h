// inject/wake_word.h: wakes the writer thread early from any thread,
// including CUPTI's buffer callbacks and a signal handler.
//
// A futex word: Wake() bumps it and makes the futex call only while the
// writer is asleep in Wait(); Wait() returns at a Wake() or after
// timeout_ms. No lock, no allocation; Wake() is async-signal-safe (an atomic
// and a raw syscall), unlike notifying a condition variable.
//
// Thread model: one waiter (the writer thread), any number of wakers.
#ifndef GPSCOPE_INJECT_WAKE_WORD_H_
#define GPSCOPE_INJECT_WAKE_WORD_H_

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace gpscope::inject {

class WakeWord {
 public:
  void Wake() {
    word_.fetch_add(1, std::memory_order_release);
    if (sleeping_.load(std::memory_order_acquire)) {
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_), FUTEX_WAKE_PRIVATE, 1, nullptr,
              nullptr, 0);
    }
  }

  void Wait(uint32_t timeout_ms) {
    const uint32_t seen = word_.load(std::memory_order_acquire);
    sleeping_.store(true, std::memory_order_seq_cst);
    // A Wake() between the load and here changed the word: no sleep.
    if (word_.load(std::memory_order_seq_cst) == seen) {
      timespec ts{static_cast<time_t>(timeout_ms / 1000),
                  static_cast<long>(timeout_ms % 1000) * 1000000L};
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_), FUTEX_WAIT_PRIVATE, seen, &ts,
              nullptr, 0);
    }
    sleeping_.store(false, std::memory_order_relaxed);
  }

 private:
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "a futex is 32 bits");
  std::atomic<uint32_t> word_{0};
  std::atomic<bool> sleeping_{false};
};

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_WAKE_WORD_H_
