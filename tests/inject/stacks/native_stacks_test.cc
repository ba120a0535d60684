// tests/inject/stacks/native_stacks_test.cc: native stacks in this process.
// The fast unwinder must return exactly what libgcc's _Unwind_Backtrace
// returns (recursion, a libc callback, a thread, alloca, large frames, a
// realigned frame that needs the fallback, the depth bound); the
// symbolizer names this binary's exported functions with dladdr and reads
// the same build ids as readelf.
#include "inject/stacks/native_stacks.h"

#include <alloca.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "inject/stacks/fast_unwind.h"

namespace gpscope::inject::stacks {
namespace {

struct Both {
  FrameRef fast[kMaxStackDepth];
  FrameRef slow[kMaxStackDepth];
  NativeCaptureResult f, s;
  int max = kMaxStackDepth;
};

StackBounds Bounds() {
  StackBounds b;
  EXPECT_TRUE(CurrentThreadStackBounds(&b));
  return b;
}

__attribute__((noinline)) void CaptureBoth(Both* b) {
  const StackBounds bounds = Bounds();
  b->f = CaptureNativeStack(b->fast, b->max, 0, bounds);
  b->s = CaptureNativeStackUnwind(b->slow, b->max, 0);
  asm volatile("" ::: "memory");
}

// Frame 0 differs (two call sites in CaptureBoth); all callers must match.
void ExpectSame(const Both& b, bool want_fast_path = true) {
  ASSERT_GT(b.s.depth, 2);
  EXPECT_EQ(b.f.depth, b.s.depth);
  EXPECT_EQ(b.f.truncated, b.s.truncated);
  EXPECT_EQ(b.f.slow_path, !want_fast_path);
  const int n = std::min(b.f.depth, b.s.depth);
  for (int i = 1; i < n; ++i) {
    EXPECT_EQ(b.fast[i].addr, b.slow[i].addr) << "frame " << i << " of " << n;
  }
}

volatile int g_sink;

__attribute__((noinline)) int Recurse(int n, Both* b) {
  if (n == 0) {
    CaptureBoth(b);
    return 0;
  }
  const int r = Recurse(n - 1, b);
  g_sink = r;
  return r + 1;
}

class NativeStacksTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    ASSERT_TRUE(InitFastUnwind(&why)) << why;
  }
};

TEST_F(NativeStacksTest, FastUnwinderMatchesLibgccThroughRecursion) {
  for (int depth : {0, 1, 5, 20, 40}) {
    Both b;
    Recurse(depth, &b);
    SCOPED_TRACE(depth);
    ExpectSame(b);
    EXPECT_FALSE(b.s.truncated);
    EXPECT_GE(b.s.depth, depth + 3);
  }
  EXPECT_GT(GetFastUnwindStats().rules_cached, 0u);
}

TEST_F(NativeStacksTest, BothStopAtTheBoundOnADeepStack) {
  Both b;
  Recurse(300, &b);
  ExpectSame(b);
  EXPECT_EQ(b.f.depth, kMaxStackDepth);
  EXPECT_TRUE(b.f.truncated);
  b.max = 7;
  Recurse(300, &b);
  ExpectSame(b);
  EXPECT_EQ(b.f.depth, 7);
  EXPECT_TRUE(b.f.truncated);
}

Both* g_qsort_both = nullptr;
int Compare(const void* a, const void* b) {
  if (g_qsort_both != nullptr) {
    CaptureBoth(g_qsort_both);
    g_qsort_both = nullptr;
  }
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

TEST_F(NativeStacksTest, FastUnwinderMatchesLibgccThroughLibc) {
  Both b;
  g_qsort_both = &b;
  int v[] = {3, 1, 2};
  qsort(v, 3, sizeof v[0], Compare);
  ExpectSame(b);
}

TEST_F(NativeStacksTest, FastUnwinderMatchesLibgccOnAThread) {
  Both b;
  std::thread t([&b] { Recurse(3, &b); });
  t.join();
  ExpectSame(b);
  EXPECT_FALSE(b.s.truncated);
}

__attribute__((noinline)) int WithAlloca(int n, Both* b) {
  char* p = static_cast<char*>(alloca(static_cast<size_t>(n)));
  std::memset(p, 1, static_cast<size_t>(n));
  CaptureBoth(b);
  return p[n - 1];
}

__attribute__((noinline)) int WithBigFrame(Both* b) {
  volatile char big[200000];
  big[0] = 1;
  big[sizeof big - 1] = 2;
  CaptureBoth(b);
  return big[0] + big[sizeof big - 1];
}

TEST_F(NativeStacksTest, FastUnwinderMatchesLibgccThroughAllocaAndLargeFrames) {
  Both a;
  g_sink = WithAlloca(1000, &a);
  ExpectSame(a);
  Both b;
  g_sink = WithBigFrame(&b);
  ExpectSame(b);
}

__attribute__((noinline)) int Realigned(Both* b) {
  alignas(128) volatile char buf[128];  // GCC realigns rsp: a CFA expression
  buf[0] = 1;
  CaptureBoth(b);
  return buf[0];
}

TEST_F(NativeStacksTest, AFrameTheFastUnwinderCannotReadFallsBackToLibgcc) {
  Both b;
  g_sink = Realigned(&b);
  // Either the fast path read it (an rbp-based CFA) or it fell back; both
  // must give libgcc's stack.
  ASSERT_GT(b.s.depth, 2);
  EXPECT_EQ(b.f.depth, b.s.depth);
  for (int i = 1; i < b.s.depth; ++i) EXPECT_EQ(b.fast[i].addr, b.slow[i].addr) << i;
}

TEST_F(NativeStacksTest, EmptyBoundsUseLibgcc) {
  FrameRef out[kMaxStackDepth];
  const NativeCaptureResult r = CaptureNativeStack(out, kMaxStackDepth, 0, StackBounds{});
  EXPECT_GT(r.depth, 2);
  EXPECT_FALSE(r.slow_path);
}

TEST_F(NativeStacksTest, StackBoundsHoldTheCurrentFrame) {
  StackBounds b;
  ASSERT_TRUE(CurrentThreadStackBounds(&b));
  int local = 0;
  EXPECT_TRUE(b.Contains(reinterpret_cast<uint64_t>(&local), sizeof local));
  EXPECT_FALSE(b.Contains(reinterpret_cast<uint64_t>(&g_sink), 4));
}

// Exported (the test links with -rdynamic) so dladdr names them.
extern "C" __attribute__((noinline, visibility("default"))) int gps_native_leaf(FrameRef* out) {
  const int n = CaptureNativeStack(out, kMaxStackDepth, 0, Bounds()).depth;
  asm volatile("" ::: "memory");
  return n;
}
extern "C" __attribute__((noinline, visibility("default"))) int gps_native_middle(FrameRef* out) {
  const int n = gps_native_leaf(out);
  g_sink = n;
  return n;
}
extern "C" __attribute__((noinline, visibility("default"))) int gps_native_outer(FrameRef* out) {
  const int n = gps_native_middle(out);
  g_sink = n;
  return n;
}

std::string ReadelfBuildId(const std::string& path) {
  FILE* p = popen(("readelf -n '" + path + "' 2>/dev/null").c_str(), "r");
  if (p == nullptr) return "";
  char line[512];
  std::string id;
  while (std::fgets(line, sizeof line, p)) {
    const char* at = std::strstr(line, "Build ID: ");
    if (at != nullptr) {
      id = at + 10;
      while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    }
  }
  pclose(p);
  return id;
}

TEST_F(NativeStacksTest, SymbolizesExportedFunctionsWithModuleAndBuildId) {
  FrameRef out[kMaxStackDepth];
  const int n = gps_native_outer(out);
  ASSERT_GE(n, 4);
  NativeSymbolizer sym;
  const NativeFrameInfo leaf = sym.Symbolize(out[0].addr);
  const NativeFrameInfo middle = sym.Symbolize(out[1].addr);
  const NativeFrameInfo outer = sym.Symbolize(out[2].addr);
  EXPECT_EQ(leaf.function, "gps_native_leaf");
  EXPECT_EQ(middle.function, "gps_native_middle");
  EXPECT_EQ(outer.function, "gps_native_outer");
  ASSERT_NE(leaf.module, nullptr);
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  ASSERT_GT(len, 0);
  EXPECT_EQ(leaf.module->path, std::string(exe, static_cast<size_t>(len)));
  EXPECT_EQ(leaf.module->build_id.size(), 40u);
  EXPECT_EQ(leaf.module->build_id, ReadelfBuildId(leaf.module->path));
  EXPECT_EQ(leaf.module_offset + leaf.module->bias, out[0].addr - 1);
  EXPECT_LT(leaf.function_offset, 256u);
}

TEST_F(NativeStacksTest, FramesInLibcNameLibcAndItsBuildId) {
  Both b;
  g_qsort_both = &b;
  int v[] = {3, 1, 2};
  qsort(v, 3, sizeof v[0], Compare);
  NativeSymbolizer sym;
  bool found = false;
  for (int i = 0; i < b.s.depth; ++i) {
    const NativeFrameInfo f = sym.Symbolize(b.slow[i].addr);
    if (f.module != nullptr && f.module->path.find("libc.so") != std::string::npos) {
      found = true;
      EXPECT_FALSE(f.module->build_id.empty());
      EXPECT_EQ(f.module->build_id, ReadelfBuildId(f.module->path));
      break;
    }
  }
  EXPECT_TRUE(found) << "no frame in libc under qsort";
}

TEST_F(NativeStacksTest, AnAddressInNoModuleHasNoModule) {
  NativeSymbolizer sym;
  const NativeFrameInfo f = sym.Symbolize(0x1234);
  EXPECT_EQ(f.module, nullptr);
  EXPECT_TRUE(f.function.empty());
  EXPECT_GT(sym.modules().size(), 2u);
}

}  // namespace
}  // namespace gpscope::inject::stacks
