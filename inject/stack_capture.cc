// inject/stack_capture.cc: see stack_capture.h.
#include "inject/stack_capture.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <new>

#include "common/posix.h"
#include "inject/stacks/python_stacks.h"
#include "inject/wake_word.h"

namespace gpscope::inject {

using stacks::StackCapture;
using stacks::StackKind;
using stacks::StackTrigger;

namespace {

// A thread the pool had no state for: marked so it is not retried per call.
char g_no_state;
void* const kNoState = &g_no_state;

void ThreadExited(void* value) {
  if (value == nullptr || value == kNoState) return;
  auto* t = static_cast<StackCapturer::Thread*>(value);
  t->state.store(kThreadExited, std::memory_order_release);
}

constexpr size_t kThreadBytes = (sizeof(StackCapturer::Thread) + 63) & ~size_t{63};
constexpr size_t kRowRingBytes = (sizeof(StackCapturer::RowRing) + 63) & ~size_t{63};

// Zero-filled memory for n objects of `bytes` each, touched only as used
// (nullptr when it cannot be mapped).
uint8_t* MapStates(size_t bytes) {
  void* p = mmap(nullptr, bytes * StackCapturer::kMaxThreads, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

}  // namespace

bool StackCapturer::Init(const Options& o, std::string* why) {
  if (states_ != nullptr) {
    *why = "already initialized";
    return false;
  }
  why->clear();
  bool stacks = o.settings.enabled();
  if (!stacks) *why = "GPSCOPE_STACKS=0";
  python_ = o.python && o.settings.python();
  native_ = o.settings.mode == stacks::StackMode::kNative;
  native_fallback_ = o.settings.native_when_no_python();
  if (stacks && !python_ && !native_ && !native_fallback_) {
    *why = "GPSCOPE_STACKS=python and Python stacks are unavailable";
    stacks = false;
  }
  if (!stacks && !o.api_rows) return false;
  sample_ns_ = uint64_t{o.settings.sample_interval_ms} * 1000000ull;
  ring_slots_ = decltype(Thread::captures)::UsableSize(o.ring_slots);
  row_slots_ = RowRing::UsableSize(o.api_row_slots);
  gate_ = o.gate;
  wake_ = o.wake;
  // Virtual memory only: a state's pages are touched by the thread that
  // takes it (and the rings' slots as they fill). Rows: 128 MiB of address
  // space, mapped only when they are on.
  uint8_t* states = MapStates(kThreadBytes);
  uint8_t* rows = o.api_rows && states != nullptr ? MapStates(kRowRingBytes) : nullptr;
  if (states == nullptr || (o.api_rows && rows == nullptr)) {
    if (states != nullptr) munmap(states, kThreadBytes * kMaxThreads);
    *why = "cannot map the per-thread rings";
    return false;
  }
  if (pthread_key_create(&key_, ThreadExited) != 0) {
    munmap(states, kThreadBytes * kMaxThreads);
    if (rows != nullptr) munmap(rows, kRowRingBytes * kMaxThreads);
    *why = "no pthread key left";
    return false;
  }
  states_ = states;  // zero-filled: every state kThreadFree, every ring empty
  row_rings_ = rows;
  stacks_ = stacks;
  rows_ = o.api_rows;
  on_.store((stacks_ ? kStacksOn : 0) | (rows_ ? kRowsOn : 0), std::memory_order_release);
  return true;
}

void StackCapturer::Disable() {
  uint32_t on = on_.load(std::memory_order_relaxed);
  while (!on_.compare_exchange_weak(on, on & ~(kStacksOn | kRowsOn), std::memory_order_acq_rel)) {
  }
}

void StackCapturer::Enable() {
  if (states_ == nullptr) return;
  uint32_t on = on_.load(std::memory_order_relaxed);
  uint32_t next;
  do {
    next = (((on >> kEpochShift) + 1) << kEpochShift) | (stacks_ ? kStacksOn : 0) |
           (rows_ ? kRowsOn : 0);
  } while (!on_.compare_exchange_weak(on, next, std::memory_order_acq_rel));
}

void StackCapturer::SetStacks(bool on) {
  if (!stacks_) return;
  if (on) {
    on_.fetch_or(kStacksOn, std::memory_order_acq_rel);
  } else {
    on_.fetch_and(~kStacksOn, std::memory_order_acq_rel);
  }
}

StackCapturer::Thread* StackCapturer::ThreadAt(uint32_t i) const {
  return reinterpret_cast<Thread*>(states_ + size_t{i} * kThreadBytes);
}

StackCapturer::RowRing* StackCapturer::RowsAt(uint32_t i) const {
  return reinterpret_cast<RowRing*>(row_rings_ + size_t{i} * kRowRingBytes);
}

StackCapturer::RowRing* StackCapturer::RowsOf(const Thread* t) const {
  return RowsAt(static_cast<uint32_t>((reinterpret_cast<const uint8_t*>(t) - states_) /
                                      kThreadBytes));
}

// A thread's first callback: the only cold work on an application thread.
StackCapturer::Thread* StackCapturer::Attach() {
  for (uint32_t i = 0; i < kMaxThreads; ++i) {
    Thread* t = ThreadAt(i);
    uint32_t expected = kThreadFree;
    if (!t->state.compare_exchange_strong(expected, kThreadInUse, std::memory_order_acq_rel)) {
      continue;
    }
    // A recycled state: the writer emptied its rings (head == tail) before
    // freeing it; the counters stay (they are cumulative per state).
    t->tid = static_cast<uint32_t>(syscall(SYS_gettid));
    t->bounds = stacks::StackBounds{};
    stacks::CurrentThreadStackBounds(&t->bounds);
    t->last_exit_ns = 0;
    t->last_sample_ns = 0;
    t->last_main_ns = 0;
    t->main_depth = 0;
    t->epoch = on_.load(std::memory_order_relaxed) >> kEpochShift;
    t->open_count = 0;
    t->runtime_open = 0;
    t->open_rows.store(0, std::memory_order_relaxed);
    uint32_t hw = high_water_.load(std::memory_order_relaxed);
    while (hw < i + 1 &&
           !high_water_.compare_exchange_weak(hw, i + 1, std::memory_order_acq_rel)) {
    }
    threads_seen_.fetch_add(1, std::memory_order_relaxed);
    pthread_setspecific(key_, t);
    return t;
  }
  pthread_setspecific(key_, kNoState);
  return nullptr;
}

void StackCapturer::OnEnter(bool runtime, ApiClass cls, uint8_t domain, uint32_t cbid,
                            uint32_t correlation) {
  const uint32_t on = on_.load(std::memory_order_relaxed);
  if ((on & (kStacksOn | kRowsOn)) == 0) return;
  const bool open = gate_ == nullptr || gate_->load(std::memory_order_relaxed);
  void* v = pthread_getspecific(key_);
  Thread* t = v == kNoState ? nullptr : v != nullptr ? static_cast<Thread*>(v) : Attach();
  if (t == nullptr) {  // beyond kMaxThreads
    if ((on & kStacksOn) && cls == ApiClass::kSync) {
      thread_drops_.fetch_add(1, std::memory_order_relaxed);
    }
    if ((on & kRowsOn) && open) api_thread_drops_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (t->epoch != on >> kEpochShift) {
    // The callbacks were off meanwhile (Enable()): the calls this thread
    // was inside then will not exit here.
    t->epoch = on >> kEpochShift;
    t->open_count = 0;
    t->runtime_open = 0;
    t->open_rows.store(0, std::memory_order_relaxed);
  }
  // A driver call made directly (not from inside a runtime call): the
  // application or a library (JAX, CuPy) uses the driver API, so its
  // launches may be the driver's too (CallSiteStacks switches their
  // callbacks on). Driver callbacks only: syncs, copies, allocations.
  if (!runtime && t->runtime_open == 0 &&
      !direct_driver_calls_.load(std::memory_order_relaxed)) {
    direct_driver_calls_.store(true, std::memory_order_relaxed);
  }
  // As CUPTI's API records (seen on the H100, session 12): a runtime call's
  // own driver calls give no record of their own; a driver call made
  // directly (JAX's, CuPy's kernels) does.
  const bool row = (on & kRowsOn) && open && (runtime || t->runtime_open == 0);
  if (t->open_count == kMaxOpenCalls) {  // no frame: its exit will not match
    if (row) BumpOwnCounter(&t->rows_lost);
    return;
  }
  // Outer for the stacks: not inside a runtime call (a runtime call's own
  // driver calls are part of it).
  const bool stacks = (on & kStacksOn) && t->runtime_open == 0;
  OpenApiCall& c = t->open[t->open_count++];
  c.correlation = correlation;
  c.cbid = static_cast<uint16_t>(cbid);
  c.domain = domain;
  c.flags = static_cast<uint8_t>((runtime ? kOpenRuntime : 0) | (row ? kOpenRow : 0) |
                                 (stacks ? kOpenStacks : 0) |
                                 (stacks && cls == ApiClass::kSync ? kOpenBlocking : 0));
  if (runtime) ++t->runtime_open;
  if (row) t->open_rows.store(t->open_rows.load(std::memory_order_relaxed) + 1,
                              std::memory_order_relaxed);
  if (!row && !stacks) return;
  const uint64_t now = common::ClockNs(CLOCK_REALTIME);
  c.start_ns = now;
  if (stacks && open) StackEntry(t, cls, domain, cbid, correlation, now);
}

void StackCapturer::StackEntry(Thread* t, ApiClass cls, uint8_t domain, uint32_t cbid,
                               uint32_t correlation, uint64_t now) {
  if (cls == ApiClass::kSync) {
    Capture(t, StackTrigger::kSync, domain, cbid, correlation, now);
  } else if (cls == ApiClass::kLaunch) {
    // Unsigned: a clock stepped back reads as a long absence (one capture).
    if (now - t->last_exit_ns >= kIdleThresholdNs) {
      Capture(t, StackTrigger::kAfterIdle, domain, cbid, correlation, now);
      t->last_sample_ns = now;
    } else if (sample_ns_ != 0 && now - t->last_sample_ns >= sample_ns_) {
      Capture(t, StackTrigger::kSampled, domain, cbid, correlation, now);
      t->last_sample_ns = now;
    }
  }
}

void StackCapturer::OnExit(uint32_t correlation, uint32_t return_value) {
  const uint32_t on = on_.load(std::memory_order_relaxed);
  if ((on & (kStacksOn | kRowsOn)) == 0) return;
  void* v = pthread_getspecific(key_);
  if (v == nullptr || v == kNoState) return;
  Thread* t = static_cast<Thread*>(v);
  if (t->epoch != on >> kEpochShift) return;  // entered before Enable(): forgotten
  // The call is the innermost one in flight, unless exits were missed.
  uint32_t i = t->open_count;
  while (i > 0 && t->open[i - 1].correlation != correlation) --i;
  if (i == 0) return;  // its entry was not seen (the callbacks came on meanwhile)
  uint32_t rows_open = t->open_rows.load(std::memory_order_relaxed);
  while (t->open_count > i) {  // inside it, exits never seen: their rows are lost
    const OpenApiCall& lost = t->open[--t->open_count];
    if (lost.flags & kOpenRuntime) --t->runtime_open;
    if (lost.flags & kOpenRow) {
      --rows_open;
      BumpOwnCounter(&t->rows_lost);
    }
  }
  const OpenApiCall c = t->open[--t->open_count];
  if (c.flags & kOpenRuntime) --t->runtime_open;
  uint64_t end = 0;
  if (c.flags & kOpenRow) {
    --rows_open;
    end = common::ClockNs(CLOCK_REALTIME);
    RowRing* rows = RowsOf(t);
    if (ApiCallRow* r = rows->Claim(row_slots_)) {
      r->start_ns = c.start_ns;
      r->end_ns = end;
      r->correlation_id = correlation;
      r->return_value = return_value;
      r->cbid = c.cbid;
      r->domain = c.domain;
      if (rows->Publish(row_slots_) && wake_ != nullptr) wake_->Wake();
    }
  }
  t->open_rows.store(rows_open, std::memory_order_relaxed);
  if (c.flags & kOpenStacks) {
    // A launch returns within microseconds: its entry time will do.
    t->last_exit_ns = (c.flags & kOpenBlocking) == 0 ? c.start_ns
                      : end != 0                     ? end
                                                     : common::ClockNs(CLOCK_REALTIME);
  }
}

void StackCapturer::Capture(Thread* t, StackTrigger trigger, uint8_t domain, uint32_t cbid,
                            uint32_t correlation, uint64_t now_ns) {
  StackCapture* c = t->captures.Claim(ring_slots_);
  if (c == nullptr) return;  // full: counted
  c->correlation_id = correlation;
  c->timestamp_ns = now_ns;
  c->thread_id = t->tid;
  c->trigger = trigger;
  c->cbid = cbid;
  c->domain = domain;
  c->Set(StackKind::kNone, 0, 0);
  bool need_native = native_;
  if (python_ && !native_) {
    const stacks::PyCaptureResult r = stacks::CapturePythonStack(c->frames, stacks::kMaxStackDepth);
    switch (r.status) {
      case stacks::PyCaptureStatus::kOk:
      case stacks::PyCaptureStatus::kTruncated:
        c->Set(StackKind::kPython, r.depth,
               r.status == stacks::PyCaptureStatus::kTruncated ? stacks::kStackTruncated : 0);
        break;
      case stacks::PyCaptureStatus::kInconsistent:
        c->Set(StackKind::kPython, r.depth, stacks::kStackInconsistent);
        break;
      case stacks::PyCaptureStatus::kNoThreadState:
        // A synchronizing call on a thread without Python: the main Python
        // thread's stack (stack_capture.h).
        if (trigger == StackTrigger::kSync && MainThreadStack(t, c, now_ns)) break;
        need_native = native_fallback_;
        break;
      default:  // Python stacks off, or shutting down
        need_native = native_fallback_;
        break;
    }
    // A Python thread with no Python frames (a C extension's own thread
    // that registered a thread state) gets a native stack too.
    if (c->kind == StackKind::kPython && c->depth == 0) need_native = native_fallback_;
  } else if (!native_) {
    need_native = native_fallback_;
  }
  if (need_native) {
    const stacks::NativeCaptureResult n =
        stacks::CaptureNativeStack(c->frames, stacks::kMaxStackDepth, /*skip=*/0, t->bounds);
    c->Set(StackKind::kNative, n.depth, n.truncated ? stacks::kStackTruncated : 0);
    if (n.slow_path) t->slow.fetch_add(1, std::memory_order_relaxed);
  }
  if (c->depth == 0) return;  // nothing to attribute (GPSCOPE_STACKS=python off Python)
  if (t->captures.Publish(ring_slots_) && wake_ != nullptr) wake_->Wake();
}

bool StackCapturer::MainThreadStack(Thread* t, StackCapture* c, uint64_t now_ns) {
  if (now_ns - t->last_main_ns >= kMainThreadIntervalNs) {
    t->last_main_ns = now_ns;
    t->main_depth = 0;
    stacks::MainThreadMark mark;
    const stacks::PyCaptureResult m =
        stacks::CaptureMainThreadPythonStack(c->frames, stacks::kMaxStackDepth, &mark);
    if ((m.status != stacks::PyCaptureStatus::kOk &&
         m.status != stacks::PyCaptureStatus::kTruncated) ||
        m.depth <= 0) {
      return false;
    }
    const uint8_t flags =
        m.status == stacks::PyCaptureStatus::kTruncated ? stacks::kStackTruncated : 0;
    c->Set(StackKind::kPython, m.depth, flags);
    t->main_mark = mark;
    t->main_depth = m.depth;
    t->main_flags = flags;
    std::memcpy(t->main_frames, c->frames, sizeof(stacks::FrameRef) * static_cast<size_t>(m.depth));
  } else {
    // Within the interval: the last walk's stack, if the main thread is
    // still where that walk found it.
    stacks::MainThreadMark now;
    if (t->main_depth <= 0 || !stacks::PeekMainThread(&now) || !(now == t->main_mark)) {
      return false;
    }
    std::memcpy(c->frames, t->main_frames,
                sizeof(stacks::FrameRef) * static_cast<size_t>(t->main_depth));
    c->Set(StackKind::kPython, t->main_depth, t->main_flags);
    t->main_reused.fetch_add(1, std::memory_order_relaxed);
  }
  c->trigger = StackTrigger::kSyncMainThread;
  t->main_thread.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void StackCapturer::MarkApiRows(ApiRowMarks* marks) const {
  marks->states = row_rings_ != nullptr ? high_water_.load(std::memory_order_acquire) : 0;
  for (uint32_t i = 0; i < marks->states; ++i) marks->head[i] = RowsAt(i)->published_head();
}

void StackCapturer::FreeIfExited(Thread* t) {
  if (t->state.load(std::memory_order_acquire) != kThreadExited) return;
  if (t->captures.pending() != 0 || (row_rings_ != nullptr && RowsOf(t)->pending() != 0)) return;
  t->state.store(kThreadFree, std::memory_order_release);
}

template <typename Count>
uint64_t StackCapturer::Sum(Count count) const {
  if (states_ == nullptr) return 0;
  uint64_t n = 0;
  const uint32_t hw = high_water_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < hw; ++i) n += count(i);
  return n;
}

namespace {
uint64_t Load(const std::atomic<uint64_t>& n) { return n.load(std::memory_order_relaxed); }
}  // namespace

uint64_t StackCapturer::ring_drops() const {
  return Sum([this](uint32_t i) { return Load(ThreadAt(i)->captures.dropped); });
}
uint64_t StackCapturer::captures() const {
  return Sum([this](uint32_t i) { return Load(ThreadAt(i)->captures.published); });
}
uint64_t StackCapturer::main_thread_reused() const {
  return Sum([this](uint32_t i) { return Load(ThreadAt(i)->main_reused); });
}
uint64_t StackCapturer::main_thread_captures() const {
  return Sum([this](uint32_t i) { return Load(ThreadAt(i)->main_thread); });
}
uint64_t StackCapturer::native_slow_path() const {
  return Sum([this](uint32_t i) { return Load(ThreadAt(i)->slow); });
}
uint64_t StackCapturer::api_rows() const {
  if (row_rings_ == nullptr) return 0;
  return Sum([this](uint32_t i) { return Load(RowsAt(i)->published); });
}
uint64_t StackCapturer::api_row_drops() const {
  if (row_rings_ == nullptr) return 0;
  return Sum([this](uint32_t i) {
    return Load(RowsAt(i)->dropped) + Load(ThreadAt(i)->rows_lost);
  });
}
uint64_t StackCapturer::api_rows_pending() const {
  if (row_rings_ == nullptr) return 0;
  return Sum([this](uint32_t i) -> uint64_t {
    return ThreadAt(i)->state.load(std::memory_order_acquire) == kThreadFree ? 0
                                                                            : RowsAt(i)->pending();
  });
}
uint64_t StackCapturer::api_calls_in_flight() const {
  return Sum([this](uint32_t i) -> uint64_t {
    const Thread* t = ThreadAt(i);
    return t->state.load(std::memory_order_acquire) == kThreadInUse
               ? t->open_rows.load(std::memory_order_relaxed)
               : 0;
  });
}

}  // namespace gpscope::inject
