// inject/stack_capture.h: call-site stacks taken inside CUPTI's API
// callbacks, on the application thread (issue 20; docs/stacks.md, section
// "Wiring it into the collector").
//
// The collector enables CUPTI's runtime- and driver-API callbacks on the
// subscriber it holds for the calls of inject/api_cbids.h, and hands every
// API enter/exit to StackCapturer::OnApi. At API entry it decides a trigger:
//   kSync       a synchronizing or possibly synchronizing call: stream,
//               event, device and context syncs; every copy (synchronous
//               ones, and asynchronous ones, which synchronize when the host
//               memory is pageable: that is not known at entry); synchronous
//               memsets; cudaMalloc/cudaFree, their host-memory and managed
//               variants and the driver's (cuMemAlloc, cuMemFree, ...);
//   kAfterIdle  the first launch (kernel, graph, async memset, stream-
//               ordered alloc, event wait) after the thread spent at least
//               kIdleThresholdNs outside the calls above: the call that ends
//               a possible GPU idle gap;
//   kSampled    another launch, at most one per GPSCOPE_STACK_SAMPLE_MS per
//               thread (a capture of a launch restarts the interval);
// and for a trigger fills one slot of the thread's capture ring with the
// Python stack (CapturePythonStack) or, on threads without Python (or with
// GPSCOPE_STACKS=native), the native one (CaptureNativeStack). A kSync on a
// thread without Python takes the main Python thread's stack instead
// (CaptureMainThreadPythonStack, trigger kSyncMainThread: the thread the
// call usually waits for, e.g. JAX's `float(loss)` while an XLA thread
// copies), with at most one walk per kMainThreadIntervalNs per thread
// (checked reads, tens of microseconds). A sync within that interval gets
// the same thread's last walk again when the main thread has not moved
// since (PeekMainThread: a walk of one frame; its mark unchanged), so the
// later syncs of one wait (XLA's copy, then its stream sync) all carry the
// waiting line; the others, and any that finds no frames, take the native
// stack. A runtime
// call's inner driver calls are neither captured nor timed (a per-thread
// nesting depth). The writer thread drains the rings (Drain) and interns
// the captures (inject/stacks/stack_table.h).
//
// kIdleThresholdNs = 5 ms, the analyzer's idle-gap threshold
// (tools/model/trace_model.h idle_gap_threshold_ns, the seed definition
// "gaps < 5 ms are normal switching"): a host-wait gap of G on the device
// needs the host to be away from CUDA for at least G, so every launch that
// ends a gap the analyzer reports (>= 5 ms, default --idle-gap-ms) is one
// this captures. "Outside" means outside the calls above: a thread busy in
// other CUDA calls counts as away (more captures, never fewer).
//
// Hot path (OnApi), on any application thread: no heap allocation, no lock,
// no log, no Python call. Per call: pthread_getspecific (glibc: an inline
// array read for keys < 32), one clock_gettime(CLOCK_REALTIME) (vDSO) at
// entry and one more at the exit of a synchronizing call. A thread's first
// callback attaches it (once: claims a pre-mapped state with a CAS, gettid,
// pthread_getattr_np for its stack bounds, which allocates; pthread_
// setspecific). Rings are single-producer (their thread) single-consumer
// (the writer); a full ring drops the capture before walking and counts it
// (DROP_STACKS), and half full wakes the writer. Timestamps are
// CLOCK_REALTIME ns, CUPTI's own timebase on Linux.
//
// Threads beyond kMaxThreads get no stacks (their synchronizing calls are
// counted as dropped). A thread's state is recycled once it exited (pthread
// key destructor) and the writer emptied its ring.
//
// Thread model: Init once on the start-up thread before CUPTI's callbacks
// are enabled; OnApi on application threads; Drain and the counters on the
// writer thread. Constant-initialized and never destroyed: callbacks may
// run after static destructors.
#ifndef GPSCOPE_INJECT_STACK_CAPTURE_H_
#define GPSCOPE_INJECT_STACK_CAPTURE_H_

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "inject/stacks/capture_record.h"
#include "inject/stacks/native_stacks.h"
#include "inject/stacks/python_stacks.h"
#include "inject/stacks/stack_settings.h"

namespace gpscope::inject {

class WakeWord;

// How the capture treats a CUDA call (api_cbids.h's lists, classified in
// inject/api_classes.h; this module itself is CUDA-free).
enum class ApiClass : uint8_t { kOther = 0, kSync = 1, kLaunch = 2 };

class StackCapturer {
 public:
  static constexpr uint64_t kIdleThresholdNs = 5'000'000;
  // Main-thread stacks taken at syncs of a thread without Python: at most
  // one per millisecond per thread, so a library thread that syncs in a
  // tight loop spends at most a few percent of its time on them.
  static constexpr uint64_t kMainThreadIntervalNs = 1'000'000;
  // Captures per thread between drains. 64 lost 337 of ~23,000 stacks of a
  // loop of synchronous copies (5,800 per second) on the H200 while the
  // writer compressed; 128 doubles the headroom at ~135 KiB per thread
  // (touched only as it fills).
  static constexpr uint32_t kRingSlots = 128;
  static constexpr uint32_t kMaxThreads = 256;   // threads with stacks

  struct Options {
    stacks::StackSettings settings;
    bool python = false;              // Python stacks available (InitPythonStacks)
    const std::atomic<bool>* gate = nullptr;  // captures only while true (tracing); null: always
    WakeWord* wake = nullptr;         // the writer's, woken when a ring is half full
    // Ring size for tests (<= kRingSlots); 0: kRingSlots.
    uint32_t ring_slots = 0;
  };

  constexpr StackCapturer() = default;
  StackCapturer(const StackCapturer&) = delete;
  StackCapturer& operator=(const StackCapturer&) = delete;

  // Start-up: maps the thread states (virtual memory, touched when used)
  // and creates the pthread key. False (with *why) when it cannot.
  bool Init(const Options& options, std::string* why);
  bool enabled() const { return enabled_.load(std::memory_order_acquire); }
  // Stops captures (already published ones can still be drained).
  void Disable() { enabled_.store(false, std::memory_order_release); }
  // After Disable(), with Init() done: captures again.
  void Enable() { enabled_.store(true, std::memory_order_release); }

  // CUPTI's API callback (runtime or driver domain), application thread:
  // a call's entry (its class, CUPTI domain and callback id, correlation
  // id) and its exit. `runtime`: the runtime-API domain (whose calls' inner
  // driver calls are skipped).
  void OnEnter(bool runtime, ApiClass cls, uint8_t domain, uint32_t cbid, uint32_t correlation);
  void OnExit(bool runtime);

  // Writer thread: hands every published capture to fn(const StackCapture&)
  // in each thread's order, and frees the states of exited threads.
  template <typename Fn>
  size_t Drain(Fn fn);

  // Cumulative counts (writer thread; relaxed).
  uint64_t ring_drops() const;          // captures lost to a full ring
  uint64_t thread_drops() const { return thread_drops_.load(std::memory_order_relaxed); }
  uint64_t captures() const;            // captures published
  uint64_t native_slow_path() const;    // native captures that fell back to libgcc
  uint64_t main_thread_captures() const;  // kSyncMainThread captures published
  uint64_t main_thread_reused() const;    // of them, the last walk's stack again
  uint32_t threads_seen() const { return threads_seen_.load(std::memory_order_relaxed); }

  struct Thread;  // defined in stack_capture.cc

 private:
  Thread* Attach();
  // A sync of thread t without Python: the main thread's stack into c
  // (walked, or the last walk's again); false when there is none.
  bool MainThreadStack(Thread* t, stacks::StackCapture* c, uint64_t now_ns);
  Thread* ThreadAt(uint32_t i) const;
  void Capture(Thread* t, stacks::StackTrigger trigger, uint8_t domain, uint32_t cbid,
               uint32_t correlation, uint64_t now_ns);
  bool PopOne(Thread* t, stacks::StackCapture* out);
  void FreeIfExited(Thread* t);

  std::atomic<bool> enabled_{false};
  bool python_ = false;
  bool native_ = false;
  bool native_fallback_ = false;
  uint64_t sample_ns_ = 0;
  uint32_t ring_slots_ = kRingSlots;
  const std::atomic<bool>* gate_ = nullptr;
  WakeWord* wake_ = nullptr;
  pthread_key_t key_ = 0;
  uint8_t* states_ = nullptr;  // kMaxThreads Thread objects
  std::atomic<uint32_t> high_water_{0};  // states [0, high_water_) were ever used
  std::atomic<uint32_t> threads_seen_{0};
  std::atomic<uint64_t> thread_drops_{0};
};

// The thread state (exposed for Drain's template).
struct StackCapturer::Thread {
  std::atomic<uint32_t> state;  // kFree, kInUse, kExited
  uint32_t tid;
  stacks::StackBounds bounds;
  uint64_t last_exit_ns;    // the end of the thread's last listed call
  uint64_t last_sample_ns;  // its last launch capture
  uint64_t last_main_ns;    // its last walk of the main thread's stack
  uint64_t enter_ns;        // entry of the outer call in flight
  uint32_t runtime_depth;   // runtime calls in flight (their driver calls are theirs)
  bool blocking;            // the outer call in flight synchronizes: time its exit
  std::atomic<uint32_t> head;  // next slot to fill (producer)
  std::atomic<uint32_t> tail;  // next slot to drain (consumer)
  std::atomic<uint64_t> dropped;
  std::atomic<uint64_t> captured;
  std::atomic<uint64_t> slow;
  std::atomic<uint64_t> main_thread;
  std::atomic<uint64_t> main_reused;
  // The last successful walk of the main thread's stack: where the main
  // thread was (its mark) and the frames, reused while the mark holds.
  stacks::MainThreadMark main_mark;
  int main_depth;  // 0: none to reuse
  uint8_t main_flags;
  stacks::FrameRef main_frames[stacks::kMaxStackDepth];
  stacks::StackCapture slots[kRingSlots];
};

enum : uint32_t { kThreadFree = 0, kThreadInUse = 1, kThreadExited = 2 };

template <typename Fn>
size_t StackCapturer::Drain(Fn fn) {
  if (states_ == nullptr) return 0;
  size_t n = 0;
  const uint32_t hw = high_water_.load(std::memory_order_acquire);
  stacks::StackCapture c;
  for (uint32_t i = 0; i < hw; ++i) {
    Thread* t = ThreadAt(i);
    if (t->state.load(std::memory_order_acquire) == kThreadFree) continue;
    while (PopOne(t, &c)) {
      fn(static_cast<const stacks::StackCapture&>(c));
      ++n;
    }
    FreeIfExited(t);
  }
  return n;
}

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_STACK_CAPTURE_H_
