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

}  // namespace

bool StackCapturer::Init(const Options& o, std::string* why) {
  if (states_ != nullptr) {
    *why = "already initialized";
    return false;
  }
  if (!o.settings.enabled()) {
    *why = "GPSCOPE_STACKS=0";
    return false;
  }
  python_ = o.python && o.settings.python();
  native_ = o.settings.mode == stacks::StackMode::kNative;
  native_fallback_ = o.settings.native_when_no_python();
  if (!python_ && !native_ && !native_fallback_) {
    *why = "GPSCOPE_STACKS=python and Python stacks are unavailable";
    return false;
  }
  sample_ns_ = uint64_t{o.settings.sample_interval_ms} * 1000000ull;
  ring_slots_ = o.ring_slots == 0 || o.ring_slots > kRingSlots ? kRingSlots : o.ring_slots;
  gate_ = o.gate;
  wake_ = o.wake;
  // Virtual memory only: a state's pages are touched by the thread that
  // takes it (and the ring's slots as they fill).
  void* p = mmap(nullptr, kThreadBytes * kMaxThreads, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    *why = "cannot map the capture rings";
    return false;
  }
  if (pthread_key_create(&key_, ThreadExited) != 0) {
    munmap(p, kThreadBytes * kMaxThreads);
    *why = "no pthread key left";
    return false;
  }
  states_ = static_cast<uint8_t*>(p);  // zero-filled: every state kThreadFree
  enabled_.store(true, std::memory_order_release);
  return true;
}

StackCapturer::Thread* StackCapturer::ThreadAt(uint32_t i) const {
  return reinterpret_cast<Thread*>(states_ + size_t{i} * kThreadBytes);
}

// A thread's first callback: the only cold work on an application thread.
StackCapturer::Thread* StackCapturer::Attach() {
  for (uint32_t i = 0; i < kMaxThreads; ++i) {
    Thread* t = ThreadAt(i);
    uint32_t expected = kThreadFree;
    if (!t->state.compare_exchange_strong(expected, kThreadInUse, std::memory_order_acq_rel)) {
      continue;
    }
    // A recycled state: the writer emptied its ring (head == tail) before
    // freeing it; the counters stay (they are cumulative per state).
    t->tid = static_cast<uint32_t>(syscall(SYS_gettid));
    t->bounds = stacks::StackBounds{};
    stacks::CurrentThreadStackBounds(&t->bounds);
    t->last_exit_ns = 0;
    t->last_sample_ns = 0;
    t->last_main_ns = 0;
    t->main_depth = 0;
    t->enter_ns = 0;
    t->runtime_depth = 0;
    t->blocking = false;
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
  if (!enabled_.load(std::memory_order_relaxed)) return;
  void* v = pthread_getspecific(key_);
  if (v == kNoState) {
    if (cls == ApiClass::kSync) thread_drops_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Thread* t = v != nullptr ? static_cast<Thread*>(v) : Attach();
  if (t == nullptr) {
    if (cls == ApiClass::kSync) thread_drops_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (runtime) {
    if (t->runtime_depth++ > 0) return;
  } else if (t->runtime_depth > 0) {
    return;  // the runtime call's own driver call
  }
  const uint64_t now = common::ClockNs(CLOCK_REALTIME);
  t->enter_ns = now;
  t->blocking = cls == ApiClass::kSync;
  if (gate_ != nullptr && !gate_->load(std::memory_order_relaxed)) return;
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

void StackCapturer::OnExit(bool runtime) {
  if (!enabled_.load(std::memory_order_relaxed)) return;
  void* v = pthread_getspecific(key_);
  if (v == nullptr || v == kNoState) return;
  Thread* t = static_cast<Thread*>(v);
  if (runtime) {
    if (t->runtime_depth == 0 || --t->runtime_depth > 0) return;
  } else if (t->runtime_depth > 0) {
    return;
  }
  // A launch returns within microseconds: its entry time will do.
  t->last_exit_ns = t->blocking ? common::ClockNs(CLOCK_REALTIME) : t->enter_ns;
}

void StackCapturer::Capture(Thread* t, StackTrigger trigger, uint8_t domain, uint32_t cbid,
                            uint32_t correlation, uint64_t now_ns) {
  const uint32_t head = t->head.load(std::memory_order_relaxed);
  const uint32_t tail = t->tail.load(std::memory_order_acquire);
  if (head - tail >= ring_slots_) {
    t->dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  StackCapture* c = &t->slots[head % ring_slots_];
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
  t->head.store(head + 1, std::memory_order_release);
  t->captured.fetch_add(1, std::memory_order_relaxed);
  if (wake_ != nullptr && head + 1 - tail == ring_slots_ / 2) wake_->Wake();
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

bool StackCapturer::PopOne(Thread* t, StackCapture* out) {
  const uint32_t tail = t->tail.load(std::memory_order_relaxed);
  if (tail == t->head.load(std::memory_order_acquire)) return false;
  *out = t->slots[tail % ring_slots_];
  t->tail.store(tail + 1, std::memory_order_release);
  return true;
}

void StackCapturer::FreeIfExited(Thread* t) {
  if (t->state.load(std::memory_order_acquire) != kThreadExited) return;
  if (t->tail.load(std::memory_order_relaxed) != t->head.load(std::memory_order_acquire)) return;
  t->state.store(kThreadFree, std::memory_order_release);
}

uint64_t StackCapturer::ring_drops() const {
  uint64_t n = 0;
  const uint32_t hw = high_water_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < hw; ++i) n += ThreadAt(i)->dropped.load(std::memory_order_relaxed);
  return n;
}

uint64_t StackCapturer::captures() const {
  uint64_t n = 0;
  const uint32_t hw = high_water_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < hw; ++i) n += ThreadAt(i)->captured.load(std::memory_order_relaxed);
  return n;
}

uint64_t StackCapturer::main_thread_reused() const {
  uint64_t n = 0;
  const uint32_t hw = high_water_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < hw; ++i) n += ThreadAt(i)->main_reused.load(std::memory_order_relaxed);
  return n;
}

uint64_t StackCapturer::main_thread_captures() const {
  uint64_t n = 0;
  const uint32_t hw = high_water_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < hw; ++i) n += ThreadAt(i)->main_thread.load(std::memory_order_relaxed);
  return n;
}

uint64_t StackCapturer::native_slow_path() const {
  uint64_t n = 0;
  const uint32_t hw = high_water_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < hw; ++i) n += ThreadAt(i)->slow.load(std::memory_order_relaxed);
  return n;
}

}  // namespace gpscope::inject
