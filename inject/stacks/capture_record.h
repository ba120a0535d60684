// inject/stacks/capture_record.h: the fixed-size records the hot path fills.
//
// A FrameRef is one unresolved frame as the app thread saw it: for Python
// the code object's address and the instruction's byte offset, for native
// code a return address. A StackCapture is one whole stack plus what the
// collector needs to join it to the CUDA call it was taken at; it is a POD
// that the app thread fills in place (its per-thread slot or ring entry)
// and the writer thread later turns into a stack id (stack_table.h).
//
//   StackCapture* c = ring.Claim();            // the collector's storage
//   c->correlation_id = cbdata->correlationId;
//   PyCaptureResult r = CapturePythonStack(c->frames, kMaxStackDepth);
//   c->Set(StackKind::kPython, r.depth,
//          r.status == PyCaptureStatus::kTruncated ? kStackTruncated : 0);
//
// Thread model: plain data; whoever owns the memory writes it.
#ifndef GPSCOPE_INJECT_STACKS_CAPTURE_RECORD_H_
#define GPSCOPE_INJECT_STACKS_CAPTURE_RECORD_H_

#include <cstdint>

#include "proto/enums.h"

namespace gpscope::inject::stacks {

// Frames kept per stack, innermost first; deeper stacks lose their
// outermost frames (the innermost ones name the call site).
inline constexpr int kMaxStackDepth = 64;

struct FrameRef {
  // Python: the PyCodeObject* (3.13: f_executable). Native: the return
  // address (the first frame: the address execution resumes at).
  uint64_t addr;
  // Python: byte offset of the instruction in the bytecode, the value
  // PyCode_Addr2Line takes (negative before the first instruction).
  // Native: 0.
  int32_t offset;
  // Python: co_firstlineno at capture time; the resolver reads it again and
  // treats a different value as a freed and reused code object. Native: 0.
  int32_t check;
};
static_assert(sizeof(FrameRef) == 16, "FrameRef is packed into fixed records");

enum class StackKind : uint8_t {
  kNone = 0,
  kPython = 1,
  kNative = 2,
};

// Why the collector took the stack (it fills this; carried to the trace).
enum class StackTrigger : uint8_t {  // written as the trace's StackTrigger
  kUnknown = wire::STACK_TRIGGER_UNKNOWN,
  kSync = wire::STACK_SYNC,             // a synchronizing or implicitly synchronizing call
  kAfterIdle = wire::STACK_AFTER_IDLE,  // the first launch after the thread was outside CUDA a while
  kSampled = wire::STACK_SAMPLED,       // the time-based sample of other calls
  // A synchronizing call on a thread without Python: the main Python
  // thread's stack (python_stacks.h CaptureMainThreadPythonStack).
  kSyncMainThread = wire::STACK_SYNC_MAIN_THREAD,
};

enum StackFlags : uint8_t {
  kStackTruncated = 1,  // deeper than kMaxStackDepth: outermost frames lost
  // The walk met an inconsistent frame and stopped (Python stacks are now
  // off process-wide); the frames before it are kept.
  kStackInconsistent = 2,
};

struct StackCapture {
  uint64_t correlation_id;  // CUPTI correlation id of the API call
  uint64_t timestamp_ns;    // CUPTI ns at the callback (the collector's clock)
  uint32_t thread_id;       // gettid()
  StackKind kind;
  uint8_t depth;            // frames[0, depth) are valid
  uint8_t flags;            // StackFlags
  StackTrigger trigger;
  uint32_t cbid;            // CUPTI callback id within `domain`
  uint8_t domain;           // CUPTI callback domain (CUpti_CallbackDomain: runtime or driver API)
  uint8_t reserved[3];
  FrameRef frames[kMaxStackDepth];

  void Set(StackKind k, int n, uint8_t f) {
    kind = k;
    depth = static_cast<uint8_t>(n);
    flags = f;
  }
};
static_assert(sizeof(StackCapture) == 32 + 16 * kMaxStackDepth,
              "StackCapture: 32-byte header + 64 frames; rings size their slots from it");
static_assert(kMaxStackDepth <= 255, "depth is a uint8_t");

}  // namespace gpscope::inject::stacks

#endif  // GPSCOPE_INJECT_STACKS_CAPTURE_RECORD_H_
