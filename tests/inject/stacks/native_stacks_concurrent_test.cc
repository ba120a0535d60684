// tests/inject/stacks/native_stacks_concurrent_test.cc: many threads filling
// the fast unwinder's shared rule cache at once (label `concurrent`: the
// ThreadSanitizer run) must each get exactly libgcc's stack.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "inject/stacks/fast_unwind.h"
#include "inject/stacks/native_stacks.h"

namespace gpscope::inject::stacks {
namespace {

std::atomic<int> g_mismatches{0};
std::atomic<int> g_fast{0};
std::atomic<int> g_sink{0};  // keeps the recursion from being folded

__attribute__((noinline)) void CaptureAndCompare(const StackBounds& b) {
  FrameRef fast[kMaxStackDepth];
  FrameRef slow[kMaxStackDepth];
  const NativeCaptureResult f = CaptureNativeStack(fast, kMaxStackDepth, 0, b);
  const NativeCaptureResult s = CaptureNativeStackUnwind(slow, kMaxStackDepth, 0);
  bool same = f.depth == s.depth;
  for (int i = 1; same && i < f.depth; ++i) same = fast[i].addr == slow[i].addr;
  if (!same) g_mismatches.fetch_add(1);
  if (!f.slow_path) g_fast.fetch_add(1);
}

__attribute__((noinline)) int Down(int n, const StackBounds& b) {
  if (n == 0) {
    CaptureAndCompare(b);
    return 0;
  }
  const int r = Down(n - 1, b);
  g_sink.store(r, std::memory_order_relaxed);
  return r + 1;
}

TEST(NativeStacksConcurrentTest, ThreadsSharingTheRuleCacheGetLibgccsStacks) {
  std::string why;
  ASSERT_TRUE(InitFastUnwind(&why)) << why;
  std::vector<std::thread> threads;
  constexpr int kThreads = 8, kRounds = 300;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      StackBounds b;
      ASSERT_TRUE(CurrentThreadStackBounds(&b));
      for (int i = 0; i < kRounds; ++i) g_sink.store(Down((t + i) % 40, b), std::memory_order_relaxed);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(g_mismatches.load(), 0);
  EXPECT_EQ(g_fast.load(), kThreads * kRounds);
}

}  // namespace
}  // namespace gpscope::inject::stacks
