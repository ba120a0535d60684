// inject/stacks/python_stacks.cc: see python_stacks.h.
#include "inject/stacks/python_stacks.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "common/posix.h"

namespace gpscope::inject::stacks {
namespace {

// Constant-initialized, trivially destructible: callbacks may run after
// static destructors.
struct Runtime {
  PyWalkTarget target;
  GetThreadStateFn get_tstate;
  IsFinalizingFn is_finalizing;     // nullptr only for test runtimes
  GetThreadStateFn thread_list_head;  // the main interpreter's newest thread state
};

// PyInterpreterState_Main / PyInterpreterState_ThreadHead, found by Init.
using InterpMainFn = void* (*)();
using ThreadHeadFn = void* (*)(void*);
std::atomic<InterpMainFn> g_interp_main{nullptr};
std::atomic<ThreadHeadFn> g_thread_head{nullptr};

void* RealThreadListHead() {
  const InterpMainFn main_fn = g_interp_main.load(std::memory_order_relaxed);
  const ThreadHeadFn head_fn = g_thread_head.load(std::memory_order_relaxed);
  if (main_fn == nullptr || head_fn == nullptr) return nullptr;
  void* interp = main_fn();
  return interp != nullptr ? head_fn(interp) : nullptr;
}

// PyThreadState: `struct _ts *prev; struct _ts *next; ...` in 3.9-3.13.
constexpr uint64_t kThreadStateNext = 8;
Runtime g_runtime;                  // written by Init before g_state publishes it
std::atomic<int> g_state{0};        // 0 off, 1 on, 2 turned off by an inconsistency
std::atomic<uint8_t> g_fault{0};    // WalkFault of the first inconsistency
// 1 once a walk over real frames of this process succeeded with checked
// reads; until then captures walk with checked reads (a syscall per read).
std::atomic<int> g_verified{0};
constexpr int kOff = 0, kOn = 1, kFaulted = 2;

void TurnOff(WalkFault fault) {
  uint8_t none = 0;
  g_fault.compare_exchange_strong(none, static_cast<uint8_t>(fault), std::memory_order_relaxed);
  g_state.store(kFaulted, std::memory_order_release);
}

std::string Str(int n) { return std::to_string(n); }

// The exit guard (python_stacks.h, "Interpreter shutdown").
constexpr int kUnguarded = 0, kGuarded = 1, kStopped = 2;
std::atomic<int> g_exit{kUnguarded};
std::atomic<int> g_walks{0};           // walks in flight, in any thread
std::atomic<bool> g_hook_scheduled{false};

// Counts a walk in flight for its scope; ok() is false once the exit hook
// ran. With both sides sequentially consistent, either this load sees
// kStopped or the hook's drain sees this walk counted.
class WalkScope {
 public:
  WalkScope() {
    g_walks.fetch_add(1, std::memory_order_seq_cst);
    ok_ = g_exit.load(std::memory_order_seq_cst) != kStopped;
  }
  ~WalkScope() { g_walks.fetch_sub(1, std::memory_order_release); }
  WalkScope(const WalkScope&) = delete;
  WalkScope& operator=(const WalkScope&) = delete;
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
};

// No walk starts from now on; waits (bounded) for those in flight. A walk
// takes microseconds; the bound only matters for a walker preempted for
// long, and keeps the exit from ever blocking on us.
constexpr uint64_t kDrainLimitNs = 200 * 1000000ull;
void StopWalks() {
  g_exit.store(kStopped, std::memory_order_seq_cst);
  const uint64_t start = common::ClockNs(CLOCK_MONOTONIC);
  while (g_walks.load(std::memory_order_seq_cst) != 0 &&
         common::ClockNs(CLOCK_MONOTONIC) - start < kDrainLimitNs) {
    sched_yield();
  }
}

// The CPython C API the hook needs, by dlsym (all in the stable ABI).
struct PyApi {
  using Obj = void*;
  int (*add_pending_call)(int (*)(void*), void*) = nullptr;
  Obj (*import_module)(const char*) = nullptr;
  Obj (*get_attr)(Obj, const char*) = nullptr;
  Obj (*new_function)(void*, Obj, Obj) = nullptr;  // PyCFunction_NewEx
  Obj (*call)(Obj, ...) = nullptr;                 // PyObject_CallFunctionObjArgs
  void (*decref)(Obj) = nullptr;                   // Py_DecRef
  void (*incref)(Obj) = nullptr;                   // Py_IncRef
  void (*clear_error)() = nullptr;
  Obj none = nullptr;                              // &_Py_NoneStruct
};
PyApi g_api;

// PyMethodDef, unchanged in 3.9-3.13; METH_NOARGS.
struct MethodDef {
  const char* name;
  void* (*meth)(void*, void*);
  int flags;
  const char* doc;
};
void* ExitHook(void*, void*) {
  StopWalks();
  g_api.incref(g_api.none);
  return g_api.none;
}
MethodDef g_exit_def{"gpscope_stop_python_stacks", ExitHook, 0x0004,
                     "gpscope: stop walking Python frames before the interpreter frees them"};

// A pending call: runs on the main thread with the GIL, where calling
// Python is allowed. Registers ExitHook with atexit, which Py_FinalizeEx
// runs before it sets the finalizing flag and frees thread states. Always
// returns 0 (a -1 would raise in the user's code).
int RegisterExitHook(void*) {
  void* atexit_module = g_api.import_module("atexit");
  void* reg = atexit_module != nullptr ? g_api.get_attr(atexit_module, "register") : nullptr;
  void* fn = reg != nullptr ? g_api.new_function(&g_exit_def, nullptr, nullptr) : nullptr;
  void* result = fn != nullptr ? g_api.call(reg, fn, nullptr) : nullptr;
  if (result != nullptr) {
    int unguarded = kUnguarded;
    g_exit.compare_exchange_strong(unguarded, kGuarded, std::memory_order_seq_cst);
    g_api.decref(result);
  } else {
    g_api.clear_error();
  }
  for (void* o : {fn, reg, atexit_module}) {
    if (o != nullptr) g_api.decref(o);
  }
  return 0;
}

// Schedules RegisterExitHook once per process; a reason when it cannot.
std::string ScheduleExitHook() {
  if (g_exit.load(std::memory_order_acquire) != kUnguarded) return "";
  PyApi a;
  auto sym = [](const char* name) { return dlsym(RTLD_DEFAULT, name); };
  a.add_pending_call = reinterpret_cast<decltype(a.add_pending_call)>(sym("Py_AddPendingCall"));
  a.import_module = reinterpret_cast<decltype(a.import_module)>(sym("PyImport_ImportModule"));
  a.get_attr = reinterpret_cast<decltype(a.get_attr)>(sym("PyObject_GetAttrString"));
  a.new_function = reinterpret_cast<decltype(a.new_function)>(sym("PyCFunction_NewEx"));
  a.call = reinterpret_cast<decltype(a.call)>(sym("PyObject_CallFunctionObjArgs"));
  a.decref = reinterpret_cast<decltype(a.decref)>(sym("Py_DecRef"));
  a.incref = reinterpret_cast<decltype(a.incref)>(sym("Py_IncRef"));
  a.clear_error = reinterpret_cast<decltype(a.clear_error)>(sym("PyErr_Clear"));
  a.none = sym("_Py_NoneStruct");
  if (a.add_pending_call == nullptr || a.import_module == nullptr || a.get_attr == nullptr ||
      a.new_function == nullptr || a.call == nullptr || a.decref == nullptr ||
      a.incref == nullptr || a.clear_error == nullptr || a.none == nullptr) {
    return "no exit hook (a C API symbol is missing): own-thread walks keep checked reads";
  }
  if (g_hook_scheduled.exchange(true)) return "";
  g_api = a;
  // A forked child has only the forking thread, which is not in a walk.
  pthread_atfork(nullptr, nullptr, [] { g_walks.store(0, std::memory_order_relaxed); });
  if (g_api.add_pending_call(RegisterExitHook, nullptr) != 0) {
    g_hook_scheduled.store(false);
    return "no exit hook (Py_AddPendingCall refused): own-thread walks keep checked reads";
  }
  return "";
}

// Reads a uint64/int64/pointer-sized value with a checked read.
template <typename T>
bool ReadAt(MemoryReader& mem, uint64_t addr, T* out) {
  return mem.Read(addr, out, sizeof(T));
}

// Checks tp_basicsize of the type object at `type` against `expected`.
bool BasicSizeIs(MemoryReader& mem, const PythonLayout& l, uint64_t type, int64_t expected,
                 const char* name, std::string* why) {
  int64_t size = 0;
  if (!ReadAt(mem, type + l.tp_basicsize, &size)) {
    *why = std::string("cannot read ") + name + ".tp_basicsize";
    return false;
  }
  if (size != expected) {
    *why = std::string(name) + ".tp_basicsize is " + std::to_string(size) + ", the 3." +
           Str(l.minor) + " release layout has " + std::to_string(expected) +
           " (a debug, free-threaded or patched build?)";
    return false;
  }
  return true;
}

// 3.13+: CPython's own table for debuggers must agree with ours.
bool DebugOffsetsAgree(MemoryReader& mem, const PythonLayout& l, unsigned long hex_version,
                       std::string* why) {
  const DebugOffsetsLayout* d = FindDebugOffsetsLayout(l.minor);
  if (d == nullptr) return true;
  const uint64_t runtime = reinterpret_cast<uint64_t>(dlsym(RTLD_DEFAULT, "_PyRuntime"));
  if (runtime == 0) {
    *why = "_PyRuntime not found (needed to check 3." + Str(l.minor) + "'s debug offsets)";
    return false;
  }
  char cookie[8];
  if (!mem.Read(runtime + d->cookie, cookie, sizeof cookie) ||
      std::memcmp(cookie, "xdebugpy", 8) != 0) {
    *why = "_PyRuntime.debug_offsets has no \"xdebugpy\" cookie";
    return false;
  }
  struct Check {
    int16_t at;
    int64_t expected;
    const char* name;
  };
  const Check checks[] = {
      {d->version, static_cast<int64_t>(hex_version), "version"},
      {d->free_threaded, 0, "free_threaded"},
      {d->tstate_current_frame, l.tstate_frame, "thread_state.current_frame"},
      {d->frame_previous, l.frame_previous, "interpreter_frame.previous"},
      {d->frame_executable, l.frame_code, "interpreter_frame.executable"},
      {d->frame_instr_ptr, l.frame_instr, "interpreter_frame.instr_ptr"},
      {d->frame_owner, l.frame_owner, "interpreter_frame.owner"},
      {d->code_filename, l.code_filename, "code_object.filename"},
      {d->code_name, l.code_name, "code_object.name"},
      {d->code_qualname, l.code_qualname, "code_object.qualname"},
      {d->code_linetable, l.code_linetable, "code_object.linetable"},
      {d->code_firstlineno, l.code_firstlineno, "code_object.firstlineno"},
      {d->code_adaptive, l.code_adaptive, "code_object.co_code_adaptive"},
      {d->ob_type, l.ob_type, "pyobject.ob_type"},
      {d->bytes_sval, l.bytes_sval, "bytes_object.ob_sval"},
      {d->unicode_ascii_size, l.unicode_ascii_size, "unicode_object.asciiobject_size"},
  };
  for (const Check& c : checks) {
    uint64_t v = 0;
    if (!ReadAt(mem, runtime + c.at, &v)) {
      *why = std::string("cannot read _PyRuntime.debug_offsets.") + c.name;
      return false;
    }
    if (static_cast<int64_t>(v) != c.expected) {
      *why = std::string("_PyRuntime.debug_offsets.") + c.name + " is " + std::to_string(v) +
             ", the table has " + std::to_string(c.expected);
      return false;
    }
  }
  return true;
}

PythonInfo Off(PythonInfo info, std::string why) {
  info.enabled = false;
  info.reason = std::move(why);
  return info;
}

}  // namespace

const char* WalkFaultName(WalkFault f) {
  switch (f) {
    case WalkFault::kNone:
      return "none";
    case WalkFault::kBadThreadState:
      return "bad thread state pointer";
    case WalkFault::kBadFramePointer:
      return "bad frame pointer";
    case WalkFault::kBadFrameType:
      return "frame type is not PyFrame_Type";
    case WalkFault::kBadOwner:
      return "frame owner out of range";
    case WalkFault::kBadCodePointer:
      return "bad code object pointer";
    case WalkFault::kBadCodeType:
      return "code object type is not PyCode_Type";
    case WalkFault::kBadInstruction:
      return "instruction outside the code object";
    case WalkFault::kCycle:
      return "frame chain loops";
    case WalkFault::kUnreadable:
      return "unreadable memory";
  }
  return "unknown";
}

bool ParsePythonVersion(const char* text, int* major, int* minor, int* micro) {
  if (text == nullptr) return false;
  int parts[3] = {0, 0, 0};
  int n = 0;
  const char* p = text;
  while (n < 3) {
    if (*p < '0' || *p > '9') return false;
    int v = 0;
    while (*p >= '0' && *p <= '9') {
      v = v * 10 + (*p - '0');
      if (v > 1000) return false;
      ++p;
    }
    parts[n++] = v;
    if (*p != '.') break;
    ++p;
  }
  if (n < 2 || (*p >= '0' && *p <= '9')) return false;
  *major = parts[0];
  *minor = parts[1];
  *micro = parts[2];
  return true;
}

PythonInfo InitPythonStacks() {
  g_state.store(kOff, std::memory_order_release);
  g_fault.store(0, std::memory_order_relaxed);
  PythonInfo info;

  // 1. Which interpreter.
  unsigned long hex_version = 0;
  if (const void* v = dlsym(RTLD_DEFAULT, "Py_Version")) {  // 3.11+: const unsigned long
    std::memcpy(&hex_version, v, sizeof hex_version);
    info.major = static_cast<int>((hex_version >> 24) & 0xff);
    info.minor = static_cast<int>((hex_version >> 16) & 0xff);
    info.micro = static_cast<int>((hex_version >> 8) & 0xff);
  } else {
    auto get_version =
        reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "Py_GetVersion"));
    if (get_version == nullptr) return Off(info, "no CPython in this process");
    // Formats static strings into a static buffer: no GIL needed.
    const char* text = get_version();
    if (!ParsePythonVersion(text, &info.major, &info.minor, &info.micro)) {
      return Off(info, std::string("cannot parse Py_GetVersion() \"") +
                           std::string(text ? text : "").substr(0, 40) + "\"");
    }
  }
  info.version = Str(info.major) + "." + Str(info.minor) + "." + Str(info.micro);
  const PythonLayout* l = FindPythonLayout(info.major, info.minor);
  if (l == nullptr) {
    return Off(info, "CPython " + info.version + " is not supported (3.9-3.13 are)");
  }
  info.layout = l;
  auto is_initialized = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  if (is_initialized != nullptr && is_initialized() == 0) {
    return Off(info, "CPython " + info.version + " is loaded but not initialized");
  }

  // 2. The symbols.
  auto sym = [](const char* name) { return reinterpret_cast<uint64_t>(dlsym(RTLD_DEFAULT, name)); };
  const auto get_tstate =
      reinterpret_cast<GetThreadStateFn>(dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState"));
  auto is_finalizing = reinterpret_cast<IsFinalizingFn>(dlsym(RTLD_DEFAULT, "Py_IsFinalizing"));
  if (is_finalizing == nullptr) {  // before 3.13
    is_finalizing = reinterpret_cast<IsFinalizingFn>(dlsym(RTLD_DEFAULT, "_Py_IsFinalizing"));
  }
  const uint64_t type_type = sym("PyType_Type");
  info.types.code = sym("PyCode_Type");
  info.types.unicode = sym("PyUnicode_Type");
  info.types.bytes = sym("PyBytes_Type");
  if (l->frame_basicsize > 0) info.types.frame = sym("PyFrame_Type");
  const char* missing = get_tstate == nullptr          ? "PyGILState_GetThisThreadState"
                        : is_finalizing == nullptr      ? "_Py_IsFinalizing"
                        : type_type == 0                ? "PyType_Type"
                        : info.types.code == 0          ? "PyCode_Type"
                        : info.types.unicode == 0       ? "PyUnicode_Type"
                        : info.types.bytes == 0         ? "PyBytes_Type"
                        : l->frame_basicsize > 0 && info.types.frame == 0 ? "PyFrame_Type"
                                                                          : nullptr;
  if (missing != nullptr) {
    return Off(info, "CPython " + info.version + ": symbol " + missing + " not found");
  }

  // 3. The build matches the table (checked reads: a wrong guess cannot fault).
  SelfMemoryReader mem;
  const std::string what = "CPython " + info.version + ": ";
  uint64_t meta = 0;
  if (!ReadAt(mem, type_type + l->ob_type, &meta) || meta != type_type) {
    return Off(info, what + "PyType_Type.ob_type is not at offset " + Str(l->ob_type) +
                         " (free-threaded or Py_TRACE_REFS build?)");
  }
  if (!ReadAt(mem, info.types.code + l->ob_type, &meta) || meta != type_type) {
    return Off(info, what + "PyCode_Type is not a type object");
  }
  uint64_t name_ptr = 0;
  char name[5] = {};
  if (!ReadAt(mem, info.types.code + l->tp_name, &name_ptr) || !mem.Read(name_ptr, name, 5) ||
      std::memcmp(name, "code", 5) != 0) {
    return Off(info, what + "PyCode_Type.tp_name is not \"code\"");
  }
  std::string why;
  if (!BasicSizeIs(mem, *l, info.types.code, l->code_basicsize, "PyCode_Type", &why) ||
      !BasicSizeIs(mem, *l, info.types.unicode, l->unicode_basicsize, "PyUnicode_Type", &why) ||
      !BasicSizeIs(mem, *l, info.types.bytes, l->bytes_basicsize, "PyBytes_Type", &why) ||
      (l->frame_basicsize > 0 &&
       !BasicSizeIs(mem, *l, info.types.frame, l->frame_basicsize, "PyFrame_Type", &why)) ||
      !DebugOffsetsAgree(mem, *l, hex_version, &why)) {
    return Off(info, what + why);
  }

  // 4. This thread's own frames, walked with checked reads.
  PyWalkTarget target{l, info.types.code, info.types.frame};
  std::string checked = "type objects checked";
  int verified = 0;
  if (void* ts = get_tstate()) {
    FrameRef frames[kMaxStackDepth];
    const WalkResult w = WalkPythonFrames(target, CheckedLoads{&mem}, reinterpret_cast<uint64_t>(ts),
                                          frames, kMaxStackDepth);
    if (w.status == WalkStatus::kInconsistent) {
      return Off(info, what + "walking this thread's frames failed after " + Str(w.depth) +
                           " frames: " + WalkFaultName(w.fault));
    }
    if (w.depth > 0) {
      verified = 1;
      checked += ", frame layout checked on " + Str(w.depth) + " frames of this thread";
    }
  }
  if (!verified) {
    checked += "; no Python frames on this thread: the first capture that finds frames checks "
               "the frame layout with checked reads";
  }

  g_interp_main.store(reinterpret_cast<InterpMainFn>(dlsym(RTLD_DEFAULT, "PyInterpreterState_Main")),
                      std::memory_order_relaxed);
  g_thread_head.store(
      reinterpret_cast<ThreadHeadFn>(dlsym(RTLD_DEFAULT, "PyInterpreterState_ThreadHead")),
      std::memory_order_relaxed);
  g_runtime.target = target;
  g_runtime.get_tstate = get_tstate;
  g_runtime.is_finalizing = is_finalizing;
  g_runtime.thread_list_head = RealThreadListHead;
  g_verified.store(verified, std::memory_order_relaxed);
  const std::string hook = ScheduleExitHook();
  if (!hook.empty()) checked += "; " + hook;
  g_state.store(kOn, std::memory_order_release);
  info.enabled = true;
  info.reason = what + checked + " (" + mem.method() + ")";
  return info;
}

PyCaptureResult CapturePythonStack(FrameRef* out, int max_frames) {
  PyCaptureResult r;
  if (g_state.load(std::memory_order_acquire) != kOn) return r;  // kOff
  const WalkScope scope;
  if (!scope.ok() || (g_runtime.is_finalizing != nullptr && g_runtime.is_finalizing())) {
    r.status = PyCaptureStatus::kFinalizing;
    return r;
  }
  void* ts = g_runtime.get_tstate();
  if (ts == nullptr) {
    r.status = PyCaptureStatus::kNoThreadState;
    return r;
  }
  WalkResult w;
  if (g_verified.load(std::memory_order_acquire) &&
      g_exit.load(std::memory_order_acquire) == kGuarded) {
    w = WalkPythonFrames(g_runtime.target, DirectLoads{}, reinterpret_cast<uint64_t>(ts), out,
                         max_frames);
  } else {
    // Until one real chain has been walked safely (start-up found no
    // frames to check), or while the exit hook is not registered yet:
    // checked reads, once per process in practice.
    SelfMemoryReader mem;
    w = WalkPythonFrames(g_runtime.target, CheckedLoads{&mem}, reinterpret_cast<uint64_t>(ts), out,
                         max_frames);
    if (w.status != WalkStatus::kInconsistent && w.depth > 0) {
      g_verified.store(1, std::memory_order_release);
    }
  }
  r.depth = w.depth;
  switch (w.status) {
    case WalkStatus::kComplete:
      r.status = PyCaptureStatus::kOk;
      break;
    case WalkStatus::kTruncated:
      r.status = PyCaptureStatus::kTruncated;
      break;
    case WalkStatus::kInconsistent:
      TurnOff(w.fault);
      r.status = PyCaptureStatus::kInconsistent;
      break;
  }
  return r;
}

namespace {

// The main interpreter's oldest thread state (see python_stacks.h), or 0
// with *status kOff / kFinalizing / kNoThreadState / kInconsistent.
uint64_t FindMainThreadState(BlockReader& mem, PyCaptureStatus* status) {
  *status = PyCaptureStatus::kOff;
  if (g_state.load(std::memory_order_acquire) != kOn) return 0;
  if (g_runtime.is_finalizing != nullptr && g_runtime.is_finalizing()) {
    *status = PyCaptureStatus::kFinalizing;
    return 0;
  }
  void* head = g_runtime.thread_list_head != nullptr ? g_runtime.thread_list_head() : nullptr;
  *status = PyCaptureStatus::kNoThreadState;
  if (head == nullptr) return 0;
  uint64_t tstate = reinterpret_cast<uint64_t>(head);
  for (int i = 0;; ++i) {
    uint64_t next = 0;
    if (i == kMaxThreadStates || !PlausiblePointer(tstate) ||
        !mem.Read(tstate + kThreadStateNext, &next, sizeof next)) {
      *status = PyCaptureStatus::kInconsistent;  // a list being changed, or too long
      return 0;
    }
    if (next == 0) break;
    tstate = next;
  }
  *status = PyCaptureStatus::kOk;
  return tstate;
}

}  // namespace

PyCaptureResult CaptureMainThreadPythonStack(FrameRef* out, int max_frames, MainThreadMark* mark) {
  PyCaptureResult r;
  const WalkScope scope;
  if (!scope.ok()) {
    r.status = g_state.load(std::memory_order_acquire) == kOn ? PyCaptureStatus::kFinalizing
                                                              : PyCaptureStatus::kOff;
    return r;
  }
  SelfMemoryReader self;
  BlockReader mem(&self);
  const uint64_t tstate = FindMainThreadState(mem, &r.status);
  if (tstate == 0) return r;
  const WalkResult w = WalkPythonFrames(g_runtime.target, CheckedLoads{&mem}, tstate, out, max_frames);
  r.depth = w.depth;
  r.status = w.status == WalkStatus::kComplete    ? PyCaptureStatus::kOk
             : w.status == WalkStatus::kTruncated ? PyCaptureStatus::kTruncated
                                                  : PyCaptureStatus::kInconsistent;
  if (mark != nullptr && r.status != PyCaptureStatus::kInconsistent && w.depth > 0) {
    *mark = MainThreadMark{tstate, w.top_frame, out[0].addr, out[0].offset};
  }
  return r;  // an inconsistency here is a race with that thread: stacks stay on
}

bool PeekMainThread(MainThreadMark* mark) {
  FrameRef top[1];
  *mark = MainThreadMark{};
  const PyCaptureResult r = CaptureMainThreadPythonStack(top, 1, mark);
  return r.status != PyCaptureStatus::kInconsistent && r.depth == 1;
}

bool PythonStacksEnabled() { return g_state.load(std::memory_order_acquire) == kOn; }

WalkFault PythonStacksFault() {
  return static_cast<WalkFault>(g_fault.load(std::memory_order_relaxed));
}

void InstallPythonRuntimeForTest(const PyWalkTarget& target, GetThreadStateFn get_tstate,
                                 IsFinalizingFn is_finalizing,
                                 GetThreadStateFn thread_list_head) {
  g_state.store(kOff, std::memory_order_release);
  g_fault.store(0, std::memory_order_relaxed);
  g_runtime.target = target;
  g_runtime.get_tstate = get_tstate;
  g_runtime.is_finalizing = is_finalizing;
  g_runtime.thread_list_head = thread_list_head;
  g_verified.store(0, std::memory_order_relaxed);  // the first capture checks, as in a real process
  g_exit.store(kGuarded, std::memory_order_seq_cst);  // as if the exit hook were registered
  g_state.store(kOn, std::memory_order_release);
}

void StopPythonWalksForTest() { StopWalks(); }

bool PythonExitHookRegistered() { return g_exit.load(std::memory_order_acquire) != kUnguarded; }

bool PythonLayoutVerified() { return g_verified.load(std::memory_order_acquire) != 0; }

}  // namespace gpscope::inject::stacks
