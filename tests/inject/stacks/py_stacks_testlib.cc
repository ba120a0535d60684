// tests/inject/stacks/py_stacks_testlib.cc: a small shared library that
// py_stacks_test.py loads with ctypes.CDLL into a real interpreter. ctypes
// releases the GIL around foreign calls, as PyTorch does around a CUDA
// call, so gps_capture() runs exactly where the collector's callback will:
// on a Python thread, inside a C call, without the GIL. It captures with
// CapturePythonStack and resolves with PythonResolver over
// process_vm_readv, then hands the frames back as text for the script to
// compare with traceback.extract_stack().
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "inject/stacks/fast_unwind.h"
#include "inject/stacks/memory_image.h"
#include "inject/stacks/native_stacks.h"
#include "inject/stacks/python_resolver.h"
#include "inject/stacks/python_stacks.h"

using namespace gpscope::inject::stacks;

namespace {

PythonInfo g_info;
SelfMemoryReader g_mem;
std::unique_ptr<PythonResolver> g_resolver;

int Put(const std::string& s, char* out, int cap) {
  if (cap <= 0) return -1;
  const size_t n = s.size() < static_cast<size_t>(cap - 1) ? s.size() : static_cast<size_t>(cap - 1);
  std::memcpy(out, s.data(), n);
  out[n] = '\0';
  return s.size() < static_cast<size_t>(cap) ? static_cast<int>(n) : -1;
}

const char* StatusName(PyCaptureStatus s) {
  switch (s) {
    case PyCaptureStatus::kOk:
      return "ok";
    case PyCaptureStatus::kTruncated:
      return "truncated";
    case PyCaptureStatus::kNoThreadState:
      return "nothread";
    case PyCaptureStatus::kOff:
      return "off";
    case PyCaptureStatus::kInconsistent:
      return "inconsistent";
    case PyCaptureStatus::kFinalizing:
      return "finalizing";
  }
  return "?";
}

// "file\tfunction\tline\n" per frame, innermost first; unresolved frames
// as "?\t?\t-2".
std::string Resolve(const FrameRef* frames, int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    const PyCodeInfo* code = g_resolver->Code(frames[i].addr, frames[i].check);
    if (code == nullptr) {
      text += "?\t?\t-2\n";
      continue;
    }
    text += code->filename + "\t" + code->name + "\t" +
            std::to_string(g_resolver->Line(*code, frames[i].offset)) + "\n";
  }
  return text;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int gps_init(char* out, int cap) {
  g_info = InitPythonStacks();
  if (g_info.enabled) g_resolver = std::make_unique<PythonResolver>(*g_info.layout, g_info.types, &g_mem);
  Put(g_info.version + "|" + g_info.reason, out, cap);
  return g_info.enabled ? 1 : 0;
}

__attribute__((visibility("default"))) int gps_enabled() { return PythonStacksEnabled() ? 1 : 0; }
// 1 once the atexit hook that stops walks before finalization is registered
// and captures walk with plain loads.
__attribute__((visibility("default"))) int gps_exit_hook() {
  return PythonExitHookRegistered() ? 1 : 0;
}

__attribute__((visibility("default"))) int gps_fault(char* out, int cap) {
  return Put(WalkFaultName(PythonStacksFault()), out, cap);
}

// Captures at most max_frames, resolves them. Writes "status depth\n" and
// then one line per frame. Returns the length written, -1 when `cap` is too
// small.
__attribute__((visibility("default"))) int gps_capture(char* out, int cap, int max_frames) {
  FrameRef frames[kMaxStackDepth];
  if (max_frames > kMaxStackDepth) max_frames = kMaxStackDepth;
  const PyCaptureResult r = CapturePythonStack(frames, max_frames);
  std::string text = std::string(StatusName(r.status)) + " " + std::to_string(r.depth) + "\n";
  if (g_resolver) text += Resolve(frames, r.depth);
  return Put(text, out, cap);
}

// The resolver's line for byte offset `offset` of the code object at
// `code` (captured with co_firstlineno == first_line); -1000 when the code
// object does not resolve.
__attribute__((visibility("default"))) int gps_line(uint64_t code, int first_line, int offset) {
  if (!g_resolver) return -1000;
  const PyCodeInfo* info = g_resolver->Code(code, first_line);
  if (info == nullptr) return -1000 - static_cast<int>(g_resolver->last_error());
  return g_resolver->Line(*info, offset);
}

// "filename\tname\tqualname" of a code object, or "" when unresolvable.
__attribute__((visibility("default"))) int gps_code_names(uint64_t code, int first_line, char* out,
                                                          int cap) {
  if (!g_resolver) return Put("", out, cap);
  const PyCodeInfo* info = g_resolver->Code(code, first_line);
  if (info == nullptr) return Put("", out, cap);
  return Put(info->filename + "\t" + info->name + "\t" + info->qualname, out, cap);
}

// The str object at `addr` as UTF-8; -2 when it cannot be read.
__attribute__((visibility("default"))) int gps_string(uint64_t addr, char* out, int cap) {
  if (!g_resolver) return -2;
  std::string s;
  if (!g_resolver->ReadString(addr, &s)) return -2;
  return Put(s, out, cap);
}

// Records this thread's frame chain (as a capture here sees it) and
// everything resolving it reads into a memory image at `path`, with
// `expected` (the script's traceback, "file\tfunction\tline\n" innermost
// first) stored beside it. Returns the number of frames, or -1.
__attribute__((visibility("default"))) int gps_record_image(const char* path, const char* expected,
                                                            char* error, int cap) {
  std::string why;
  const int n = RecordPythonImage(g_info, path, expected, &why);
  if (n < 0) Put(why, error, cap);
  return n;
}

// Runs capture(out, cap) on a fresh pthread that never ran Python and
// returns its result.
static int OnFreshThread(int (*capture)(char*, int), char* out, int cap) {
  struct Arg {
    int (*capture)(char*, int);
    char* out;
    int cap;
    int n;
  } arg{capture, out, cap, -1};
  pthread_t t;
  if (pthread_create(
          &t, nullptr,
          [](void* p) -> void* {
            Arg* a = static_cast<Arg*>(p);
            a->n = a->capture(a->out, a->cap);
            return nullptr;
          },
          &arg) != 0) {
    return -1;
  }
  pthread_join(t, nullptr);
  return arg.n;
}

static int CaptureMainThread(char* out, int cap) {
  FrameRef frames[kMaxStackDepth];
  const PyCaptureResult r = CaptureMainThreadPythonStack(frames, kMaxStackDepth);
  std::string text = std::string(StatusName(r.status)) + " " + std::to_string(r.depth) + "\n";
  if (g_resolver) text += Resolve(frames, r.depth);
  return Put(text, out, cap);
}

// Captures on a fresh pthread that never ran Python: must report that the
// thread has no thread state ("nothread 0").
__attribute__((visibility("default"))) int gps_capture_on_native_thread(char* out, int cap) {
  return OnFreshThread([](char* o, int c) { return gps_capture(o, c, kMaxStackDepth); }, out, cap);
}

// From a fresh pthread that never ran Python, while this (main) thread
// waits for it inside this C call without the GIL, as JAX's main thread
// waits in `float(loss)` while an XLA thread synchronizes: the main
// thread's stack through CaptureMainThreadPythonStack, in gps_capture's
// format.
__attribute__((visibility("default"))) int gps_capture_main_from_native_thread(char* out, int cap) {
  return OnFreshThread(CaptureMainThread, out, cap);
}

// The native stack here (through libffi, _ctypes and the interpreter's
// eval loop) with the fast unwinder and with _Unwind_Backtrace: writes
// "<fast depth> <libgcc depth> <fast path used 0|1> <frames equal 0|1>".
__attribute__((visibility("default"))) __attribute__((noinline)) int gps_native_compare(char* out, int cap) {
  std::string why;
  if (!InitFastUnwind(&why)) return Put("init " + why, out, cap);
  StackBounds b;
  if (!CurrentThreadStackBounds(&b)) return Put("no stack bounds", out, cap);
  FrameRef fast[kMaxStackDepth];
  FrameRef slow[kMaxStackDepth];
  const NativeCaptureResult f = CaptureNativeStack(fast, kMaxStackDepth, 0, b);
  const NativeCaptureResult s = CaptureNativeStackUnwind(slow, kMaxStackDepth, 0);
  bool same = f.depth == s.depth;
  for (int i = 1; same && i < f.depth; ++i) same = fast[i].addr == slow[i].addr;
  return Put(std::to_string(f.depth) + " " + std::to_string(s.depth) + " " + (f.slow_path ? "0" : "1") +
                 " " + (same ? "1" : "0"),
             out, cap);
}

// Captures in a tight loop for `ms` milliseconds, from a daemon thread
// while the interpreter shuts down. Each capture first asks the runtime
// whether it is finalizing; a capture that began after shutdown began must
// not walk a chain (kOk/kTruncated), it must return kFinalizing (or
// kNoThreadState once the thread-state key is gone). An atexit handler
// (run by exit() after Py_FinalizeEx) waits up to 3 s until the loop has
// made at least one capture after shutdown began, then reports on stderr:
//   "capture loop: N captures after shutdown began, M walked a chain"
// Returns the number of captures.
std::atomic<int> g_after_shutdown{0};
std::atomic<int> g_walked_after_shutdown{0};
std::atomic<bool> g_loop_running{false};

void ReportShutdown() {
  for (int i = 0; i < 300 && g_loop_running.load() && g_after_shutdown.load() == 0; ++i) usleep(10000);
  char line[160];
  const int n = snprintf(line, sizeof line, "capture loop: %d captures after shutdown began, %d walked a chain\n",
                         g_after_shutdown.load(), g_walked_after_shutdown.load());
  if (n > 0 && write(2, line, static_cast<size_t>(n)) < 0) return;
}

__attribute__((visibility("default"))) int gps_capture_loop(int ms) {
  auto finalizing = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "Py_IsFinalizing"));
  if (finalizing == nullptr) finalizing = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "_Py_IsFinalizing"));
  if (finalizing == nullptr) return -1;
  static bool registered = false;
  if (!registered) {
    registered = true;
    atexit(ReportShutdown);
  }
  g_loop_running.store(true);
  timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  const int64_t end = start.tv_sec * 1000000000ll + start.tv_nsec + ms * 1000000ll;
  FrameRef frames[kMaxStackDepth];
  int n = 0;
  for (;; ++n) {
    const bool shutting_down = finalizing() != 0;
    const PyCaptureResult r = CapturePythonStack(frames, kMaxStackDepth);
    if (shutting_down) {
      g_after_shutdown.fetch_add(1);
      if (r.status == PyCaptureStatus::kOk || r.status == PyCaptureStatus::kTruncated) {
        g_walked_after_shutdown.fetch_add(1);
      }
    }
    if (r.status == PyCaptureStatus::kInconsistent) {
      static const char kMsg[] = "capture loop: a walk turned Python stacks off\n";
      if (write(2, kMsg, sizeof kMsg - 1) < 0) break;
    }
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec * 1000000000ll + now.tv_nsec >= end) break;
  }
  g_loop_running.store(false);
  return n;
}

}  // extern "C"
