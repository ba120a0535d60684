// inject/stack_capture.h: what the collector does inside CUPTI's API
// callbacks, on the application thread: call-site stacks (issue 20;
// docs/stacks.md, section "In the collector") and, with
// GPSCOPE_API_SOURCE=callback, the API call rows (issue 24) that CUPTI's
// RUNTIME/DRIVER activity kinds would otherwise record.
//
// The collector enables CUPTI's runtime- and driver-API callbacks on the
// subscriber it holds for the calls of inject/api_cbids.h, and hands every
// API enter/exit to StackCapturer::OnEnter/OnExit. Each thread keeps the
// calls it is inside (a small stack, innermost last: a runtime call's inner
// driver calls nest in it), matched at exit by correlation id.
//
// API call rows: every listed call, outside runtime calls (a runtime call's
// own driver calls get no row: CUPTI's API records leave them out too, seen
// on the H100 in session 12; a driver call made directly, as JAX and CuPy
// make them, gets one), that starts while tracing is on (the capture gate's word) gets one ApiCallRow
// at its exit: start (CLOCK_REALTIME at entry), end (at exit), CUPTI's
// correlation id (the one its API record and its kernel/copy records
// carry), callback id and domain, the return value (cudaError_t or
// CUresult). Rows are pushed at exit, so a thread's rows come in the order
// its calls returned. A full ring drops the row and counts it;
// so do calls deeper than kMaxOpenCalls and calls whose exit never came
// (their entry was seen and a call outside them returned). The writer
// drains the rows (DrainApiRows) and writes them like API records.
//
// Call-site stacks: at an outer call's entry (a driver call inside a
// runtime call is skipped) it decides a trigger:
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
// stack. The writer thread drains the rings (Drain) and interns the
// captures (inject/stacks/stack_table.h).
//
// kIdleThresholdNs = 5 ms, the analyzer's idle-gap threshold
// (tools/model/trace_model.h idle_gap_threshold_ns, the seed definition
// "gaps < 5 ms are normal switching"): a host-wait gap of G on the device
// needs the host to be away from CUDA for at least G, so every launch that
// ends a gap the analyzer reports (>= 5 ms, default --idle-gap-ms) is one
// this captures. "Outside" means outside the calls above: a thread busy in
// other CUDA calls counts as away (more captures, never fewer).
//
// Hot path (OnEnter/OnExit), on any application thread: no heap
// allocation, no lock, no log, no Python call. Per call: pthread_getspecific
// (glibc: an inline array read for keys < 32), with rows one
// clock_gettime(CLOCK_REALTIME) (vDSO) at entry and one at exit (without
// rows: at the entry of an outer call, and at the exit of a synchronizing
// one). A thread's first callback attaches it (once: claims a pre-mapped
// state with a CAS, gettid, pthread_getattr_np for its stack bounds, which
// allocates; pthread_setspecific). Rings are single-producer (their
// thread) single-consumer (the writer: inject/thread_ring.h); a full
// capture ring drops the capture before walking and counts it
// (DROP_STACKS), and half full wakes the writer. Timestamps are
// CLOCK_REALTIME ns, CUPTI's own timebase on Linux.
//
// Threads beyond kMaxThreads get no stacks and no rows (their synchronizing
// calls, and with rows all their calls in a window, are counted as
// dropped). A thread's state is recycled once it exited (pthread key
// destructor) and the writer emptied its rings.
//
// Switches: Disable()/Enable() stop and restart both parts (the collector's
// `stacks off|on` when the API callbacks themselves go off and on: Enable()
// forgets the calls each thread was inside, whose exits it did not see);
// SetStacks() switches only the stacks (`stacks off|on` with rows on: the
// callbacks stay on for the rows).
//
// Thread model: Init once on the start-up thread before CUPTI's callbacks
// are enabled; OnEnter/OnExit on application threads; Drain, DrainApiRows
// and the counters on the writer thread (the counters from any thread).
// Constant-initialized and never destroyed: callbacks may run after static
// destructors.
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
#include "inject/thread_ring.h"

namespace gpscope::inject {

class WakeWord;

// How the capture treats a CUDA call (api_cbids.h's lists, classified in
// inject/api_classes.h; this module itself is CUDA-free).
enum class ApiClass : uint8_t { kOther = 0, kSync = 1, kLaunch = 2 };

// One CUDA call as its callbacks saw it (GPSCOPE_API_SOURCE=callback): the
// fields of an API activity record but the thread (its state's).
struct ApiCallRow {
  uint64_t start_ns;         // CLOCK_REALTIME at entry (CUPTI's timebase)
  uint64_t end_ns;           // ... at exit
  uint32_t correlation_id;   // CUPTI's, as its API record and GPU records carry it
  uint32_t return_value;     // cudaError_t (runtime) or CUresult (driver); 0: success
  uint16_t cbid;             // CUPTI callback id within `domain`
  uint8_t domain;            // CUpti_CallbackDomain: runtime or driver API
  uint8_t reserved[5];
};
static_assert(sizeof(ApiCallRow) == 32, "rows are copied per call: keep them small");

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
  // API call rows per thread between drains: 16384 x 32 B = 512 KiB
  // (touched as it fills; the 256 rings, 128 MiB of address space, are
  // mapped only with rows on). An empty-kernel loop makes ~230,000 calls
  // per second on the H200 (4.3 us each): 70 ms of them, three of the
  // writer's 20 ms ticks, and the writer is woken at half.
  static constexpr uint32_t kApiRowSlots = 16384;
  // Calls a thread is inside at once (a runtime call and its driver call:
  // 2); deeper ones get no row (counted) and no stack.
  static constexpr uint32_t kMaxOpenCalls = 8;
  static constexpr uint32_t kMaxThreads = 256;   // threads with states

  struct Options {
    stacks::StackSettings settings;   // stacks only if settings.enabled()
    bool python = false;              // Python stacks available (InitPythonStacks)
    bool api_rows = false;            // GPSCOPE_API_SOURCE=callback: API call rows
    // Stacks, and rows of calls that start, only while true (tracing); null: always.
    const std::atomic<bool>* gate = nullptr;
    WakeWord* wake = nullptr;         // the writer's, woken when a ring is half full
    // Ring sizes for tests (a power of two <= kRingSlots / kApiRowSlots,
    // else rounded down to one); 0: the full size.
    uint32_t ring_slots = 0;
    uint32_t api_row_slots = 0;
  };

  constexpr StackCapturer() = default;
  StackCapturer(const StackCapturer&) = delete;
  StackCapturer& operator=(const StackCapturer&) = delete;

  // Start-up: maps the thread states (virtual memory, touched when used)
  // and creates the pthread key. False (with *why) when neither stacks nor
  // rows can start; true with *why set when rows start and stacks do not.
  bool Init(const Options& options, std::string* why);
  bool enabled() const { return on_.load(std::memory_order_acquire) & (kStacksOn | kRowsOn); }
  bool stacks_on() const { return on_.load(std::memory_order_acquire) & kStacksOn; }
  bool rows_on() const { return on_.load(std::memory_order_acquire) & kRowsOn; }
  // Stops stacks and rows (already published ones can still be drained).
  void Disable();
  // After Disable(), with Init() done: both again, each thread's calls in
  // flight forgotten (their callbacks were off: no exit will match them).
  void Enable();
  // Stacks only, rows untouched (the callbacks stay on).
  void SetStacks(bool on);

  // CUPTI's API callback (runtime or driver domain), application thread:
  // a call's entry (its class, CUPTI domain and callback id, correlation
  // id; `runtime`: the runtime-API domain, whose calls' inner driver calls
  // get no stacks) and its exit (correlation id and return value).
  void OnEnter(bool runtime, ApiClass cls, uint8_t domain, uint32_t cbid, uint32_t correlation);
  void OnExit(uint32_t correlation, uint32_t return_value);

  // Writer thread: hands every published capture to fn(const StackCapture&)
  // in each thread's order, and frees the states of exited threads.
  template <typename Fn>
  size_t Drain(Fn fn);
  // Writer thread: hands every published row to fn(uint32_t thread_id,
  // const ApiCallRow&) in each thread's order (the order its calls
  // returned), and frees the states of exited threads. With marks: only
  // the rows published when MarkApiRows() filled them (so the writer can
  // drain the captures in between: a call's capture is published at its
  // entry, before its row, and is then drained no later than the row).
  struct ApiRowMarks {
    uint32_t states = 0;  // states [0, states) were marked
    uint32_t head[kMaxThreads];
  };
  void MarkApiRows(ApiRowMarks* marks) const;
  template <typename Fn>
  size_t DrainApiRows(Fn fn, const ApiRowMarks* marks = nullptr);

  // Cumulative counts (writer thread, or any thread; relaxed).
  uint64_t ring_drops() const;          // captures lost to a full ring
  uint64_t thread_drops() const { return thread_drops_.load(std::memory_order_relaxed); }
  uint64_t captures() const;            // captures published
  uint64_t native_slow_path() const;    // native captures that fell back to libgcc
  uint64_t main_thread_captures() const;  // kSyncMainThread captures published
  uint64_t main_thread_reused() const;    // of them, the last walk's stack again
  uint32_t threads_seen() const { return threads_seen_.load(std::memory_order_relaxed); }
  // A listed driver call was entered outside any runtime call (a direct
  // driver-API call: JAX's, CuPy's), since start-up.
  bool direct_driver_calls() const { return direct_driver_calls_.load(std::memory_order_relaxed); }
  // API call rows: published; lost to a full ring, to nesting deeper than
  // kMaxOpenCalls or to an exit never seen; of threads beyond kMaxThreads.
  uint64_t api_rows() const;
  uint64_t api_row_drops() const;
  uint64_t api_thread_drops() const { return api_thread_drops_.load(std::memory_order_relaxed); }
  // Rows not drained yet, and calls in flight that will give one at their
  // exit (for the end of the trace: the writer no longer drains, or the
  // calls never return in time).
  uint64_t api_rows_pending() const;
  uint64_t api_calls_in_flight() const;

  struct Thread;  // defined below
  // A thread's API call rows, mapped apart (only with rows on): state i's
  // is RowsAt(i).
  using RowRing = ThreadRing<ApiCallRow, kApiRowSlots>;

 private:
  // on_: the parts that run, and (above them) the epoch Enable() bumps.
  static constexpr uint32_t kStacksOn = 1, kRowsOn = 2, kEpochShift = 2;

  Thread* Attach();
  // A sync of thread t without Python: the main thread's stack into c
  // (walked, or the last walk's again); false when there is none.
  bool MainThreadStack(Thread* t, stacks::StackCapture* c, uint64_t now_ns);
  Thread* ThreadAt(uint32_t i) const;
  RowRing* RowsAt(uint32_t i) const;
  RowRing* RowsOf(const Thread* t) const;
  void StackEntry(Thread* t, ApiClass cls, uint8_t domain, uint32_t cbid, uint32_t correlation,
                  uint64_t now_ns);
  void Capture(Thread* t, stacks::StackTrigger trigger, uint8_t domain, uint32_t cbid,
               uint32_t correlation, uint64_t now_ns);
  void FreeIfExited(Thread* t);
  template <typename Count>
  uint64_t Sum(Count count) const;

  // kStacksOn | kRowsOn | epoch << kEpochShift. stacks_/rows_: what Init
  // started (Enable() turns those back on).
  std::atomic<uint32_t> on_{0};
  bool stacks_ = false;
  bool rows_ = false;
  bool python_ = false;
  bool native_ = false;
  bool native_fallback_ = false;
  uint64_t sample_ns_ = 0;
  uint32_t ring_slots_ = kRingSlots;
  uint32_t row_slots_ = kApiRowSlots;
  const std::atomic<bool>* gate_ = nullptr;
  WakeWord* wake_ = nullptr;
  pthread_key_t key_ = 0;
  uint8_t* states_ = nullptr;  // kMaxThreads Thread objects
  uint8_t* row_rings_ = nullptr;  // kMaxThreads RowRing objects (rows on only)
  std::atomic<uint32_t> high_water_{0};  // states [0, high_water_) were ever used
  std::atomic<uint32_t> threads_seen_{0};
  std::atomic<uint64_t> thread_drops_{0};
  std::atomic<uint64_t> api_thread_drops_{0};
  std::atomic<bool> direct_driver_calls_{false};
};

// A call the thread is inside (StackCapturer::Thread::open).
struct OpenApiCall {
  uint64_t start_ns;  // entry time (when a row or the stacks want it)
  uint32_t correlation;
  uint16_t cbid;
  uint8_t domain;
  uint8_t flags;  // OpenCallFlags
};
enum OpenCallFlags : uint8_t {
  kOpenRuntime = 1,   // a runtime-API call (its driver calls are inside it)
  kOpenRow = 2,       // gives a row at its exit
  kOpenStacks = 4,    // the stacks' outer call: its exit ends the thread's time in CUDA
  kOpenBlocking = 8,  // ... and it synchronizes: that end is its exit time
};

// The thread state (exposed for the drains' templates).
struct StackCapturer::Thread {
  std::atomic<uint32_t> state;  // kFree, kInUse, kExited
  uint32_t tid;
  stacks::StackBounds bounds;
  uint64_t last_exit_ns;    // the end of the thread's last listed outer call
  uint64_t last_sample_ns;  // its last launch capture
  uint64_t last_main_ns;    // its last walk of the main thread's stack
  uint32_t epoch;           // StackCapturer::on_'s when `open` was last valid
  uint32_t open_count;      // calls in `open`
  uint32_t runtime_open;    // of them, runtime calls (their driver calls are theirs)
  std::atomic<uint32_t> open_rows;  // of them, calls that give a row (read by the writer)
  OpenApiCall open[kMaxOpenCalls];  // innermost last
  std::atomic<uint64_t> rows_lost;  // rows of calls too deep, or whose exit never came
  std::atomic<uint64_t> slow;
  std::atomic<uint64_t> main_thread;
  std::atomic<uint64_t> main_reused;
  // The last successful walk of the main thread's stack: where the main
  // thread was (its mark) and the frames, reused while the mark holds.
  stacks::MainThreadMark main_mark;
  int main_depth;  // 0: none to reuse
  uint8_t main_flags;
  stacks::FrameRef main_frames[stacks::kMaxStackDepth];
  ThreadRing<stacks::StackCapture, kRingSlots> captures;
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
    while (t->captures.Pop(&c, ring_slots_)) {
      fn(static_cast<const stacks::StackCapture&>(c));
      ++n;
    }
    FreeIfExited(t);
  }
  return n;
}

template <typename Fn>
size_t StackCapturer::DrainApiRows(Fn fn, const ApiRowMarks* marks) {
  if (row_rings_ == nullptr) return 0;
  size_t n = 0;
  const uint32_t hw =
      marks != nullptr ? marks->states : high_water_.load(std::memory_order_acquire);
  ApiCallRow r;
  for (uint32_t i = 0; i < hw; ++i) {
    Thread* t = ThreadAt(i);
    if (t->state.load(std::memory_order_acquire) == kThreadFree) continue;
    // A state freed and taken again since the mark: its tail is that mark.
    RowRing* rows = RowsAt(i);
    const uint32_t mark = marks != nullptr ? marks->head[i] : rows->published_head();
    // tid is written before the owner's first publication: read after a pop.
    uint32_t tid = 0;
    for (bool first = true; rows->PopBefore(&r, row_slots_, mark); first = false) {
      if (first) tid = t->tid;
      fn(tid, static_cast<const ApiCallRow&>(r));
      ++n;
    }
    FreeIfExited(t);
  }
  return n;
}

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_STACK_CAPTURE_H_
