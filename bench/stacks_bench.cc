// bench/stacks_bench.cc: the cost of one captured stack (issue 20's budget:
// at most 1 us on the H200), Python and native, at depth 10 and 30.
//
//   build/bench/stacks_bench                                  # finds libpython3.X.so.1.0
//   GPSCOPE_BENCH_LIBPYTHON=/path/libpython3.12.so PYTHONHOME=/prefix build/bench/stacks_bench
//
// Python: the benchmark embeds the interpreter (dlopen of libpython with
// RTLD_GLOBAL, so the walker finds it with dlsym as inside a PyTorch
// process), builds a chain of `depth` Python frames and from the innermost
// calls back into this binary through ctypes.CDLL (GIL released, as around
// a CUDA call), where the timing loop runs CapturePythonStack. Without a
// loadable libpython the Python benchmarks report an error and the others
// run.
// Native: a recursion of noinline functions to `depth` frames in all; the
// fast unwinder (warm rule cache), libgcc's _Unwind_Backtrace, and the
// frame-pointer walk (this file is built with -fno-omit-frame-pointer; the
// harness's own frames may not be, so its depth counter can be lower).
// Counters: frames = frames captured per stack.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "inject/stack_capture.h"
#include "inject/stacks/fast_unwind.h"
#include "inject/stacks/native_stacks.h"
#include "inject/stacks/python_stacks.h"
#include "inject/stacks/stack_table.h"

using namespace gpscope::inject::stacks;

namespace {

// ---- Python ----------------------------------------------------------------

benchmark::State* g_state = nullptr;
int g_py_depth = 0;
std::string g_py_error;
bool g_py_ready = false;

bool StartPython() {
  static bool tried = false;
  if (tried) return g_py_ready;
  tried = true;
  void* lib = nullptr;
  if (const char* path = std::getenv("GPSCOPE_BENCH_LIBPYTHON")) {
    lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  } else {
    for (const char* name : {"libpython3.12.so.1.0", "libpython3.13.so.1.0", "libpython3.11.so.1.0",
                             "libpython3.10.so.1.0", "libpython3.9.so.1.0"}) {
      if ((lib = dlopen(name, RTLD_NOW | RTLD_GLOBAL)) != nullptr) break;
    }
  }
  if (lib == nullptr) {
    g_py_error = "no libpython3.X.so.1.0 (set GPSCOPE_BENCH_LIBPYTHON)";
    return false;
  }
  auto init = reinterpret_cast<void (*)(int)>(dlsym(lib, "Py_InitializeEx"));
  auto run = reinterpret_cast<int (*)(const char*)>(dlsym(lib, "PyRun_SimpleString"));
  if (init == nullptr || run == nullptr) {
    g_py_error = "libpython without Py_InitializeEx/PyRun_SimpleString";
    return false;
  }
  init(0);
  const PythonInfo info = InitPythonStacks();
  if (!info.enabled) {
    g_py_error = "Python stacks off: " + info.reason;
    return false;
  }
  std::fprintf(stderr, "python: %s\n", info.reason.c_str());
  if (run("import ctypes\n"
          "_leaf = ctypes.CDLL(None).gps_bench_python_leaf\n"
          "def nest(n):\n"
          "    if n <= 1:\n"
          "        return _leaf()\n"
          "    return nest(n - 1)\n") != 0) {
    g_py_error = "the benchmark's Python setup failed";
    return false;
  }
  g_py_ready = true;
  return true;
}

}  // namespace

// Called from Python (ctypes, GIL released) at the bottom of the chain.
extern "C" __attribute__((visibility("default"))) int gps_bench_python_leaf() {
  FrameRef out[kMaxStackDepth];
  int depth = 0;
  for (auto _ : *g_state) {
    const PyCaptureResult r = CapturePythonStack(out, kMaxStackDepth);
    depth = r.depth;
    benchmark::DoNotOptimize(out[0]);
  }
  g_py_depth = depth;
  return 0;
}

static void BM_PythonCapture(benchmark::State& state) {
  if (!StartPython()) {
    state.SkipWithError(g_py_error.c_str());
    return;
  }
  static auto run = reinterpret_cast<int (*)(const char*)>(dlsym(RTLD_DEFAULT, "PyRun_SimpleString"));
  g_state = &state;
  // PyRun_SimpleString's <module> frame + (depth - 1) nest() frames.
  const std::string code = "nest(" + std::to_string(state.range(0) - 1) + ")";
  run(code.c_str());
  state.counters["frames"] = g_py_depth;
}
BENCHMARK(BM_PythonCapture)->Arg(10)->Arg(30);

// ---- native ----------------------------------------------------------------

namespace {

enum Method { kFast, kUnwind, kFramePointers };
volatile int g_sink;

__attribute__((noinline)) int CaptureOnce(Method m, FrameRef* out, const StackBounds& b) {
  switch (m) {
    case kFast:
      return CaptureNativeStack(out, kMaxStackDepth, 0, b).depth;
    case kUnwind:
      return CaptureNativeStackUnwind(out, kMaxStackDepth, 0).depth;
    case kFramePointers:
      return CaptureNativeStackFramePointers(out, kMaxStackDepth, 0, b).depth;
  }
  return 0;
}

__attribute__((noinline)) int Nest(int n, Method m, benchmark::State& state, const StackBounds& b) {
  if (n > 0) {
    const int r = Nest(n - 1, m, state, b);
    g_sink = r;
    return r + 1;
  }
  FrameRef out[kMaxStackDepth];
  int depth = 0;
  for (auto _ : state) {
    depth = CaptureOnce(m, out, b);
    benchmark::DoNotOptimize(out[0]);
  }
  state.counters["frames"] = depth;
  return depth;
}

// Runs on a fresh thread, whose few base frames (start_thread, clone3, the
// std::thread trampoline) let the stack have exactly range(0) frames.
void NativeBench(benchmark::State& state, Method m) {
  std::string why;
  InitFastUnwind(&why);
  std::thread t([&state, m] {
    StackBounds b;
    CurrentThreadStackBounds(&b);
    FrameRef out[kMaxStackDepth];
    const int base = CaptureNativeStackUnwind(out, kMaxStackDepth, 0).depth;
    // Nest(k) adds k + 1 frames and CaptureOnce one more.
    const int k = static_cast<int>(state.range(0)) - base - 2;
    Nest(k > 0 ? k : 0, m, state, b);
  });
  t.join();
}

}  // namespace

static void BM_NativeFastUnwind(benchmark::State& state) { NativeBench(state, kFast); }
static void BM_NativeUnwindBacktrace(benchmark::State& state) { NativeBench(state, kUnwind); }
static void BM_NativeFramePointers(benchmark::State& state) { NativeBench(state, kFramePointers); }
BENCHMARK(BM_NativeFastUnwind)->Arg(10)->Arg(30);
BENCHMARK(BM_NativeUnwindBacktrace)->Arg(10)->Arg(30);
BENCHMARK(BM_NativeFramePointers)->Arg(10)->Arg(30);

// ---- the collector's path (inject/stack_capture.h) ---------------------------
// What a CUDA call costs in the collector's API callback: a launch that takes
// no stack (entry + exit: pthread_getspecific, clock_gettime, the trigger
// test), and a synchronizing call that takes a native stack at depth N
// (slot claim, fast unwind, publish), plus the writer's copy of the slot out
// of the ring (Drain with nothing done per capture).

namespace {

gpscope::inject::StackCapturer* Capturer() {
  static gpscope::inject::StackCapturer* c = [] {
    auto* x = new gpscope::inject::StackCapturer();
    gpscope::inject::StackCapturer::Options o;
    o.settings.mode = StackMode::kNative;
    o.settings.sample_interval_ms = 60000;  // no time-based samples in the launch bench
    std::string why;
    InitFastUnwind(&why);
    if (!x->Init(o, &why)) fprintf(stderr, "StackCapturer: %s\n", why.c_str());
    return x;
  }();
  return c;
}

__attribute__((noinline)) int NestCollector(int n, bool sync, benchmark::State& state) {
  if (n > 0) {
    const int r = NestCollector(n - 1, sync, state);
    g_sink = r;
    return r + 1;
  }
  using gpscope::inject::ApiClass;
  gpscope::inject::StackCapturer* c = Capturer();
  uint32_t corr = 0;
  size_t drained = 0;
  c->OnEnter(true, ApiClass::kLaunch, 2, 13, ++corr);  // the thread's first: attaches
  c->OnExit(corr, 0);
  c->Drain([&](const StackCapture&) { ++drained; });
  for (auto _ : state) {
    c->OnEnter(true, sync ? ApiClass::kSync : ApiClass::kLaunch, 2, sync ? 131 : 13, ++corr);
    c->OnExit(corr, 0);
    if (sync) c->Drain([&](const StackCapture&) { ++drained; });
  }
  state.counters["captured"] = static_cast<double>(drained);
  return 0;
}

void CollectorBench(benchmark::State& state, bool sync) {
  std::thread t([&state, sync] {
    StackBounds b;
    CurrentThreadStackBounds(&b);
    FrameRef out[kMaxStackDepth];
    const int base = CaptureNativeStackUnwind(out, kMaxStackDepth, 0).depth;
    const int k = static_cast<int>(state.range(0)) - base - 3;
    NestCollector(k > 0 ? k : 0, sync, state);
  });
  t.join();
}

}  // namespace

static void BM_CollectorLaunchNoStack(benchmark::State& state) { CollectorBench(state, false); }
static void BM_CollectorSyncNativeStack(benchmark::State& state) { CollectorBench(state, true); }
BENCHMARK(BM_CollectorLaunchNoStack)->Arg(10);
BENCHMARK(BM_CollectorSyncNativeStack)->Arg(10)->Arg(30);

// ---- the writer: interning a repeated stack -----------------------------

namespace {
class NullResolver : public FrameResolver {
 public:
  ResolvedFrame Resolve(StackKind kind, const FrameRef& ref) override {
    ResolvedFrame f;
    f.kind = kind == StackKind::kPython ? FrameKind::kPython : FrameKind::kNative;
    f.file = "f.py";
    f.function = std::to_string(ref.addr);
    f.line = ref.offset;
    f.resolved = true;
    return f;
  }
};
}  // namespace

static void BM_StackTableInternRepeated(benchmark::State& state) {
  NullResolver r;
  StackTable table(&r);
  StackCapture c{};
  for (int i = 0; i < state.range(0); ++i) c.frames[i] = FrameRef{0x1000u + 64u * i, 2 * i, 1};
  c.Set(StackKind::kPython, static_cast<int>(state.range(0)), 0);
  table.Intern(c);
  for (auto _ : state) benchmark::DoNotOptimize(table.Intern(c));
}
BENCHMARK(BM_StackTableInternRepeated)->Arg(10)->Arg(30);

BENCHMARK_MAIN();
