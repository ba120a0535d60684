// tests/inject/stacks/native_stack_prog.cc: a small C++ program, built with
// and without -fno-omit-frame-pointer (native_stack_prog_fp / _nofp), whose
// main -> gps_f -> gps_g captures its stack with each native method and
// checks, by dladdr name, that gps_g, gps_f and main appear in that order;
// then that each method stops at its bound on a 10000-deep recursion.
//
//   native_stack_prog_fp fp      # frame pointers kept: all three methods must pass
//   native_stack_prog_nofp nofp  # omitted: the DWARF methods must pass; the
//                                # frame-pointer walk is only reported
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "inject/stacks/fast_unwind.h"
#include "inject/stacks/native_stacks.h"

using namespace gpscope::inject::stacks;

namespace {

enum Method { kFast, kUnwind, kFramePointers };
const char* kNames[] = {"fast unwinder", "_Unwind_Backtrace", "frame pointers"};
StackBounds g_bounds;
volatile int g_sink;

NativeCaptureResult Capture(Method m, FrameRef* out, int max) {
  switch (m) {
    case kFast:
      return CaptureNativeStack(out, max, 0, g_bounds);
    case kUnwind:
      return CaptureNativeStackUnwind(out, max, 0);
    case kFramePointers:
      return CaptureNativeStackFramePointers(out, max, 0, g_bounds);
  }
  return {};
}

// The function names of a capture, innermost first.
std::vector<std::string> Names(const FrameRef* f, int n) {
  static NativeSymbolizer sym;
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back(sym.Symbolize(f[i].addr).function);
  return names;
}

bool InOrder(const std::vector<std::string>& names, const std::vector<std::string>& want) {
  size_t at = 0;
  for (const std::string& n : names) {
    if (at < want.size() && n == want[at]) ++at;
  }
  return at == want.size();
}

std::vector<std::string> g_found[3];
int g_depth[3];

}  // namespace

extern "C" __attribute__((noinline, visibility("default"))) int gps_g(int x) {
  for (int m = 0; m < 3; ++m) {
    FrameRef out[kMaxStackDepth];
    const NativeCaptureResult r = Capture(static_cast<Method>(m), out, kMaxStackDepth);
    g_depth[m] = r.depth;
    g_found[m] = Names(out, r.depth);
  }
  asm volatile("" ::: "memory");
  return x + 1;
}

extern "C" __attribute__((noinline, visibility("default"))) int gps_f(int x) {
  const int r = gps_g(x + 1);
  g_sink = r;
  return r * 2;
}

// The leaf keeps the 1 KiB frame buffer out of the recursion's frames.
__attribute__((noinline)) void TimedCapture(int m, NativeCaptureResult* r, double* us) {
  FrameRef out[kMaxStackDepth];
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  *r = Capture(static_cast<Method>(m), out, kMaxStackDepth);
  clock_gettime(CLOCK_MONOTONIC, &b);
  *us = (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3;
}

extern "C" __attribute__((noinline, visibility("default"))) int gps_deep(int n, int m, NativeCaptureResult* r,
                                                                          double* us) {
  if (n > 0) {
    const int v = gps_deep(n - 1, m, r, us);
    g_sink = v;
    return v + 1;
  }
  TimedCapture(m, r, us);
  return 0;
}

int main(int argc, char** argv) {
  const bool fp = argc > 1 && std::strcmp(argv[1], "fp") == 0;
  std::string why;
  if (!InitFastUnwind(&why)) std::printf("note: %s\n", why.c_str());
  if (!CurrentThreadStackBounds(&g_bounds)) {
    std::printf("FAIL: no stack bounds for the main thread\n");
    return 1;
  }
  g_sink = gps_f(1);
  int failures = 0;
  const std::vector<std::string> want = {"gps_g", "gps_f", "main"};
  for (int m = 0; m < 3; ++m) {
    const bool ok = InOrder(g_found[m], want);
    std::string list;
    for (const std::string& n : g_found[m]) list += (n.empty() ? "?" : n) + " ";
    const bool must = m != kFramePointers || fp;
    std::printf("%s %s: %d frames: %s\n", ok ? "ok  " : (must ? "FAIL" : "info"), kNames[m], g_depth[m],
                list.c_str());
    if (!ok && must) ++failures;
  }
  for (int m = 0; m < 3; ++m) {
    NativeCaptureResult r;
    double us = 0;
    gps_deep(10000, m, &r, &us);
    const bool must = m != kFramePointers || fp;
    const bool ok = r.depth == kMaxStackDepth && r.truncated;
    std::printf("%s %s on a 10000-deep stack: %d frames%s in %.1f us\n",
                ok ? "ok  " : (must ? "FAIL" : "info"), kNames[m], r.depth,
                r.truncated ? " (truncated)" : "", us);
    if (!ok && must) ++failures;
  }
  return failures == 0 ? 0 : 1;
}
