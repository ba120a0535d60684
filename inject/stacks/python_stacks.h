// inject/stacks/python_stacks.h: Python stacks of the calling thread, taken
// inside a CUDA API callback without the GIL, for CPython 3.9-3.13 found at
// run time (no libpython link, no Python headers).
//
//   // Start-up (InitializeInjection), once:
//   PythonInfo py = InitPythonStacks();
//   if (!py.enabled) { log info py.reason; capability note "stacks.python" }
//   // Hot path (the CUPTI API-enter callback, on the application thread):
//   PyCaptureResult r = CapturePythonStack(capture->frames, kMaxStackDepth);
//   // r.status: kOk / kTruncated -> r.depth frames; kNoThreadState -> take a
//   // native stack instead; kOff -> Python stacks are off.
//
// Start-up (InitPythonStacks, cold, any thread, allocates):
//   1. the interpreter: dlsym(RTLD_DEFAULT) of Py_Version (3.11+) or
//      Py_GetVersion, then the layout table of that minor version;
//   2. the symbols: PyGILState_GetThisThreadState, PyCode_Type, PyType_Type,
//      PyUnicode_Type, PyBytes_Type (+ PyFrame_Type for 3.9/3.10);
//   3. the build matches the table, read with process_vm_readv so a wrong
//      guess cannot fault: PyType_Type's ob_type is itself at offset 8
//      (rules out free-threaded 3.13t and Py_TRACE_REFS builds, whose
//      object header is larger), PyCode_Type is named "code", and the
//      tp_basicsize of the code, frame, str and bytes types equal the
//      table's; for 3.13, the interpreter's own _Py_DebugOffsets (the table
//      CPython keeps for out-of-process debuggers) agree with ours;
//   4. when the initializing thread runs Python (PyTorch initializes CUDA
//      from Python), its own frame chain is walked with checked reads;
//      when it has no frames, the first capture that finds some walks them
//      with checked reads instead (one process_vm_readv per field, once),
//      and plain loads are used only after one such walk succeeded.
// Any failure leaves Python stacks off with one reason line.
//
// Hot path (CapturePythonStack): _Py_IsFinalizing() / Py_IsFinalizing()
// (3.13) and PyGILState_GetThisThreadState() (an atomic load, and a
// pthread_getspecific lookup, inside libpython: no lock, no allocation, no
// GIL needed), then WalkPythonFrames with plain loads. Nothing allocates,
// locks, logs, makes a syscall or runs Python.
//
// Why the plain loads cannot fault. Every address read is either the
// thread state of the calling thread (heap memory CPython frees only when
// the thread state is deleted, which this thread would have to do itself)
// or something reached from it through the chain of frames this thread is
// currently executing: frames (3.9/3.10 frame objects, 3.11+ slots in the
// thread's data stack, generator frames, _PyCFrame structs on our own C
// stack below the callback) and the code objects those frames hold strong
// references to. While this thread is inside the CUDA call, none of them
// can be freed or relinked: only the thread that runs a frame links,
// unlinks or pops it, and it is busy calling us; a running generator or
// coroutine cannot be resumed or closed by another thread ("already
// executing"); another thread holding a frame object (sys._current_frames)
// can read it or set f_trace but cannot clear an executing frame. So with
// the right layout every read lands inside a live object. The layout is
// the one risk: steps 1-4 above make a wrong table fail while reads are
// still checked (at start-up, or step 4's first walk), and the per-frame
// checks (python_walker.h) catch an
// inconsistency at run time: the first one turns Python stacks off for the
// whole process (an atomic flag) and the capture returns what it had. The
// one thing the checks cannot promise is that a pointer read through a
// wrong layout that passes them (aligned, canonical) is mapped; that is
// why the layout is verified on a real chain before the first plain-load
// walk. Interpreter shutdown is the other exception: Py_FinalizeEx
// frees the other threads' thread states (3.11+: and their data stacks)
// while daemon threads may still be inside C code making CUDA calls. The
// finalizing flag alone cannot keep a walk off that memory: a walk that
// checked it just before Py_FinalizeEx set it may still run when the
// states are freed (ASan caught that on 3.10, 3.11 and 3.12 with a capture
// loop under CPU load, 4 of 120 exits). So InitPythonStacks schedules
// (Py_AddPendingCall, callable without the GIL) a call on the main thread
// that registers an atexit function, and Py_FinalizeEx runs the atexit
// functions before it sets the flag and frees anything. That function marks
// walks stopped and waits until the walks in flight have ended (a counter
// each walk holds for its duration, sequentially consistent with the mark;
// at most 200 ms); from then on every capture returns kFinalizing. Until
// the hook is registered (the main thread runs the pending call at its next
// bytecode boundary), or when it cannot be (a symbol missing), own-thread
// walks use checked reads, which cannot fault. The finalizing flag is still
// checked (an embedder that finalizes without running atexit functions). Calling this
// from an asynchronous signal handler is NOT covered by this argument
// (the chain may be mid-update there): call it synchronously on the thread.
//
// Thread model: InitPythonStacks once, before any capture (it publishes the
// state with release order); CapturePythonStack from any thread; the
// accessors from any thread. Globals are constant-initialized and
// trivially destructible, so a callback after static destruction is safe.
#ifndef GPSCOPE_INJECT_STACKS_PYTHON_STACKS_H_
#define GPSCOPE_INJECT_STACKS_PYTHON_STACKS_H_

#include <cstdint>
#include <string>

#include "inject/stacks/capture_record.h"
#include "inject/stacks/python_layout.h"
#include "inject/stacks/python_walker.h"

namespace gpscope::inject::stacks {

// The interpreter's type objects the resolver checks against.
struct PythonTypes {
  uint64_t code = 0;
  uint64_t frame = 0;  // 3.9/3.10 only
  uint64_t unicode = 0;
  uint64_t bytes = 0;
};

struct PythonInfo {
  bool enabled = false;
  int major = 0, minor = 0, micro = 0;
  std::string version;  // "3.12.1", or empty when no CPython was found
  // Why Python stacks are off (when !enabled), else a note on how the
  // layout was checked, e.g. "layout checked on 7 frames of this thread".
  std::string reason;
  const PythonLayout* layout = nullptr;
  PythonTypes types;
};

// Detects the interpreter and enables Python capture (see above). May be
// called again (tests); each call replaces the previous state.
PythonInfo InitPythonStacks();

enum class PyCaptureStatus : uint8_t {
  kOk,             // the whole chain, r.depth frames (0: a Python thread with no frames)
  kTruncated,      // deeper than max_frames: the innermost max_frames
  kNoThreadState,  // this thread has no Python thread state: not a Python thread
  kOff,            // Python stacks are off (not found, unsupported, or disabled)
  kInconsistent,   // this walk found an inconsistency and turned Python stacks off
  kFinalizing,     // the interpreter is shutting down (Py_FinalizeEx): not walked
};

struct PyCaptureResult {
  int depth = 0;
  PyCaptureStatus status = PyCaptureStatus::kOff;
};

// Hot path. Walks the calling thread's own frames (see above).
PyCaptureResult CapturePythonStack(FrameRef* out, int max_frames);

// The main Python thread's stack, taken from another thread: a thread with
// no Python (XLA's transfer and execution threads, PyTorch's autograd
// threads, a CUDA library's own thread) that makes a synchronizing CUDA
// call is usually doing so for the main thread, which waits in a C call
// (JAX's `float(loss)` blocks on a futex while an XLA thread copies and
// synchronizes). The stack of that waiting thread names the user's line.
//
// Which thread: the oldest thread state of the main interpreter (new
// states are pushed at the head of PyInterpreterState's list, so the last
// one is the thread that initialized Python: the main thread, unless it
// deleted its state), found with PyInterpreterState_Main() and
// PyInterpreterState_ThreadHead() (plain pointer reads inside libpython,
// no lock, no GIL) and the `next` links (PyThreadState's second pointer in
// 3.9-3.13), read with checked reads, at most kMaxThreadStates.
//
// Why checked reads (process_vm_readv through a BlockReader, ~2 syscalls
// per frame, measured in bench/RESULTS.md): unlike the calling thread's own
// chain, that thread may be running and popping frames, and 3.11+ frames
// live in data-stack chunks CPython unmaps when they empty, so a plain load
// could fault. A check that fails here is a race, not a wrong layout: the
// capture returns kInconsistent and Python stacks stay on. The stack may
// be one the thread was leaving; it is marked (StackTrigger
// kSyncMainThread) as the main thread's, not the caller's.
//
// Cost: one syscall per 256 bytes read, tens of microseconds for a deep
// stack, so the collector takes one at a synchronizing call only (at most
// one walk per millisecond per thread, stack_capture.h; in between, the
// last walk's stack again while PeekMainThread's mark is unchanged).
inline constexpr int kMaxThreadStates = 64;

// Where the main thread is: its thread state, the address of its innermost
// Python frame, and that frame's code object and instruction offset. Two
// equal marks taken a moment apart mean the main thread is (almost
// certainly) in the same call it was in, with the same stack: frames live
// at fixed places in the thread's data stack, so a thread that returned and
// came back to the same code at the same depth and instruction from a
// different caller would repeat a mark. PeekMainThread costs a walk of one
// frame (a few checked reads), so the collector can reuse the stack of its
// last walk while the main thread waits (stack_capture.h).
struct MainThreadMark {
  uint64_t tstate = 0;
  uint64_t frame = 0;
  uint64_t code = 0;
  int32_t offset = 0;
  bool operator==(const MainThreadMark& o) const {
    return tstate == o.tstate && frame == o.frame && code == o.code && offset == o.offset;
  }
};

// `mark`, when given and the walk found frames, is set from the same walk.
PyCaptureResult CaptureMainThreadPythonStack(FrameRef* out, int max_frames,
                                             MainThreadMark* mark = nullptr);
// The main thread's mark now; false (mark zeroed) when it has no frames or
// the read raced with it.
bool PeekMainThread(MainThreadMark* mark);

// True once a walk over real frames succeeded with checked reads (from
// then on captures use plain loads, once the exit hook is registered).
bool PythonLayoutVerified();
// True once the atexit hook is registered (or has run).
bool PythonExitHookRegistered();

bool PythonStacksEnabled();
// After a run-time inconsistency: what failed (kNone while all is well).
// The collector reports it once (log line + capability note) from its
// writer thread.
WalkFault PythonStacksFault();

// Tests only: installs a runtime (fake thread states built in memory) as
// if InitPythonStacks had found it.
using GetThreadStateFn = void* (*)();
using IsFinalizingFn = int (*)();
// `thread_list_head` stands for PyInterpreterState_ThreadHead(
// PyInterpreterState_Main()) (CaptureMainThreadPythonStack); null: none.
// The runtime counts as having its exit hook registered.
void InstallPythonRuntimeForTest(const PyWalkTarget& target, GetThreadStateFn get_tstate,
                                 IsFinalizingFn is_finalizing = nullptr,
                                 GetThreadStateFn thread_list_head = nullptr);
// Tests only: what the atexit hook does (stop walks, drain those in flight).
void StopPythonWalksForTest();

// Parses "3.12.1 (main, ...)" (Py_GetVersion's format). False when it is not
// "<major>.<minor>[.<micro>]" followed by anything that is not a digit.
bool ParsePythonVersion(const char* text, int* major, int* minor, int* micro);

}  // namespace gpscope::inject::stacks

#endif  // GPSCOPE_INJECT_STACKS_PYTHON_STACKS_H_
