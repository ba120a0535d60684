#include "inject/buffer_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace gpscope::inject {
namespace {

TEST(IndexQueueTest, FifoAndBounded) {
  IndexQueue q;
  ASSERT_TRUE(q.Init(4));
  for (uint64_t i = 0; i < 4; ++i) EXPECT_TRUE(q.TryPush(i));
  EXPECT_FALSE(q.TryPush(99));
  uint64_t v;
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(q.TryPop(&v));
    EXPECT_EQ(v, i);
  }
  EXPECT_FALSE(q.TryPop(&v));
  EXPECT_FALSE(IndexQueue().Init(3));  // not a power of two
}

TEST(BufferPoolTest, HandsOutEachBufferOnceThenCountsFailures) {
  BufferPool pool;
  ASSERT_TRUE(pool.Init(1001, 3));
  EXPECT_EQ(pool.buffer_bytes(), 1008u);  // 8-byte aligned for CUPTI
  std::set<uint8_t*> got;
  for (int i = 0; i < 3; ++i) {
    uint8_t* b = pool.Acquire();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 8, 0u);
    got.insert(b);
  }
  EXPECT_EQ(got.size(), 3u);
  EXPECT_EQ(pool.Acquire(), nullptr);
  EXPECT_EQ(pool.acquire_failures(), 1u);
  EXPECT_EQ(pool.outstanding(), 3);
}

TEST(BufferPoolTest, CompletedBuffersReachTheWriterWithTheirSize) {
  BufferPool pool;
  ASSERT_TRUE(pool.Init(4096, 2));
  uint8_t* a = pool.Acquire();
  memset(a, 0xab, 100);
  ASSERT_TRUE(pool.Complete(a, 100));
  EXPECT_EQ(pool.outstanding(), 0);
  uint8_t* b;
  size_t n;
  ASSERT_TRUE(pool.PopCompleted(&b, &n));
  EXPECT_EQ(b, a);
  EXPECT_EQ(n, 100u);
  EXPECT_FALSE(pool.PopCompleted(&b, &n));
  pool.Release(b);
  EXPECT_NE(pool.Acquire(), nullptr);
  EXPECT_NE(pool.Acquire(), nullptr);
}

TEST(BufferPoolTest, ForeignBuffersAreRejectedAndCounted) {
  BufferPool pool;
  ASSERT_TRUE(pool.Init(4096, 2));
  uint8_t other[64];
  EXPECT_FALSE(pool.Complete(other, 10));
  uint8_t* a = pool.Acquire();
  EXPECT_FALSE(pool.Complete(a + 8, 10));     // not a buffer start
  EXPECT_FALSE(pool.Complete(a, 5000));       // larger than a buffer
  EXPECT_EQ(pool.foreign_completions(), 3u);
  EXPECT_FALSE(pool.Owns(other));
  EXPECT_TRUE(pool.Owns(a));
}

// Producers (CUPTI's threads) acquire, fill and complete buffers while the
// writer drains and releases them; every byte written arrives exactly once.
TEST(BufferPoolTest, ConcurrentProducersAndWriterLoseNothing) {
  BufferPool pool;
  ASSERT_TRUE(pool.Init(256, 8));
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 5000;
  std::atomic<int> producers_done{0};
  std::atomic<uint64_t> failed_acquires{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer;) {
        uint8_t* b = pool.Acquire();
        if (b == nullptr) {
          failed_acquires.fetch_add(1);
          std::this_thread::yield();
          continue;
        }
        uint32_t tag = static_cast<uint32_t>(p * kPerProducer + i);
        memcpy(b, &tag, sizeof(tag));
        ASSERT_TRUE(pool.Complete(b, sizeof(tag)));
        ++i;
      }
      producers_done.fetch_add(1);
    });
  }
  std::vector<uint8_t> seen(kProducers * kPerProducer, 0);
  std::thread writer([&] {
    for (;;) {
      uint8_t* b;
      size_t n;
      if (pool.PopCompleted(&b, &n)) {
        uint32_t tag;
        memcpy(&tag, b, sizeof(tag));
        ASSERT_EQ(n, sizeof(tag));
        seen[tag]++;
        pool.Release(b);
      } else if (producers_done.load() == kProducers) {
        if (!pool.PopCompleted(&b, &n)) return;
        uint32_t tag;
        memcpy(&tag, b, sizeof(tag));
        seen[tag]++;
        pool.Release(b);
      } else {
        std::this_thread::yield();
      }
    }
  });
  for (auto& t : threads) t.join();
  writer.join();
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "tag " << i;
  EXPECT_EQ(pool.outstanding(), 0);
  EXPECT_EQ(pool.acquire_failures(), failed_acquires.load());
}

// Two sizes (the collector's defaults: 4 MiB large, 256 KiB small, 64 MiB
// cap): large ones while few are held, small ones once many threads hold
// one each; large ones never take more than half the cap.
TEST(BufferPoolTest, LargeBuffersForTheFirstHoldersSmallOnesForMany) {
  BufferPool pool;
  ASSERT_TRUE(pool.Init(4 << 20, 256 << 10, 64 << 20));
  EXPECT_EQ(pool.count(), 256u);  // the most buffers: all small
  std::vector<std::pair<uint8_t*, size_t>> held;
  for (int i = 0; i < 136; ++i) {
    size_t bytes = 0;
    uint8_t* b = pool.Acquire(&bytes);
    ASSERT_NE(b, nullptr) << "buffer " << i;
    EXPECT_EQ(bytes, i < 8 ? (4u << 20) : (256u << 10)) << "buffer " << i;
    held.emplace_back(b, bytes);
  }
  EXPECT_EQ(pool.large_buffers(), 8u);
  EXPECT_EQ(pool.small_buffers(), 128u);
  EXPECT_EQ(pool.Acquire(), nullptr) << "the cap is reached";
  EXPECT_TRUE(pool.Exhausted());
  // Every buffer inside the one region, none overlapping.
  std::vector<std::pair<uint8_t*, size_t>> sorted = held;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i) {
    ASSERT_LE(sorted[i - 1].first + sorted[i - 1].second, sorted[i].first);
  }
  EXPECT_LE(static_cast<size_t>(sorted.back().first + sorted.back().second - sorted.front().first),
            64u << 20);
  // A returned buffer keeps its size; few held again: large first.
  for (auto& [b, bytes] : held) {
    ASSERT_TRUE(pool.Complete(b, 8));
    uint8_t* p;
    size_t n;
    ASSERT_TRUE(pool.PopCompleted(&p, &n));
    pool.Release(p);
  }
  EXPECT_EQ(pool.outstanding(), 0);
  EXPECT_FALSE(pool.Exhausted());
  size_t bytes = 0;
  ASSERT_NE(pool.Acquire(&bytes), nullptr);
  EXPECT_EQ(bytes, 4u << 20);
  EXPECT_EQ(pool.peak_outstanding(), 136);
}

TEST(BufferPoolTest, WhenOneSizeIsGoneTheOtherIsHandedOut) {
  BufferPool pool;
  // 8 MiB cap: one 4 MiB large buffer (half the cap), 16 small ones.
  ASSERT_TRUE(pool.Init(4 << 20, 256 << 10, 8 << 20, /*large_slots=*/100));
  size_t bytes = 0;
  ASSERT_NE(pool.Acquire(&bytes), nullptr);
  EXPECT_EQ(bytes, 4u << 20);
  ASSERT_NE(pool.Acquire(&bytes), nullptr);
  EXPECT_EQ(bytes, 256u << 10) << "no second large one: small instead";
  EXPECT_EQ(pool.large_buffers(), 1u);
}

// 64 threads (CUPTI requesting a buffer for each) at once, each keeping the
// buffer it got, as with the defaults: all get one, no two the same, within
// the cap; then they complete and the writer recycles them while they go on.
TEST(BufferPoolTest, SixtyFourConcurrentRequestersAllGetABufferWithinTheCap) {
  BufferPool pool;
  ASSERT_TRUE(pool.Init(4 << 20, 256 << 10, 64 << 20));
  constexpr int kThreads = 64;
  std::vector<std::pair<uint8_t*, size_t>> got(kThreads);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<int> done{0};
  std::atomic<int> holding{0};
  std::atomic<bool> rounds{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      size_t bytes = 0;
      uint8_t* b = pool.Acquire(&bytes);
      got[t] = {b, bytes};
      if (b != nullptr) memset(b, t, 64);
      // All 64 hold one at the same time before any is completed.
      holding.fetch_add(1);
      while (!rounds.load()) std::this_thread::yield();
      // Then 200 more fill-and-complete rounds while the writer recycles.
      for (int i = 0; i < 200 && b != nullptr; ++i) {
        ASSERT_TRUE(pool.Complete(b, 64));
        b = nullptr;
        while (b == nullptr) {
          b = pool.Acquire(&bytes);
          if (b == nullptr) std::this_thread::yield();
        }
      }
      if (b != nullptr) {
        ASSERT_TRUE(pool.Complete(b, 64));
      }
      done.fetch_add(1);
    });
  }
  while (ready.load() < kThreads) std::this_thread::yield();
  go.store(true);
  while (holding.load() < kThreads) std::this_thread::yield();
  // The first round, all at once: none refused, each its own buffer.
  EXPECT_EQ(pool.acquire_failures(), 0u);
  EXPECT_EQ(pool.outstanding(), kThreads);
  rounds.store(true);
  std::thread writer([&] {
    uint8_t* b;
    size_t n;
    for (;;) {
      if (pool.PopCompleted(&b, &n)) {
        pool.Release(b);
      } else if (done.load() == kThreads) {
        if (!pool.PopCompleted(&b, &n)) return;
        pool.Release(b);
      } else {
        std::this_thread::yield();
      }
    }
  });
  for (auto& t : threads) t.join();
  writer.join();
  std::set<uint8_t*> distinct;
  for (const auto& [b, bytes] : got) {
    ASSERT_NE(b, nullptr);
    distinct.insert(b);
  }
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kThreads));
  EXPECT_LE(pool.large_buffers() * (4u << 20) + pool.small_buffers() * (256u << 10), 64u << 20);
  EXPECT_EQ(pool.outstanding(), 0);
}

}  // namespace
}  // namespace gpscope::inject

namespace gpscope::inject {
namespace {

TEST(IndexStackTest, LastReleasedIsReusedFirst) {
  IndexStack s;
  ASSERT_TRUE(s.Init(4));
  s.Push(2);
  s.Push(0);
  s.Push(3);
  uint32_t v;
  ASSERT_TRUE(s.TryPop(&v));
  EXPECT_EQ(v, 3u);
  s.Push(1);
  ASSERT_TRUE(s.TryPop(&v));
  EXPECT_EQ(v, 1u);
  ASSERT_TRUE(s.TryPop(&v));
  EXPECT_EQ(v, 0u);
  ASSERT_TRUE(s.TryPop(&v));
  EXPECT_EQ(v, 2u);
  EXPECT_FALSE(s.TryPop(&v));
}

TEST(BufferPoolTest, ReusesTheWarmestBuffer) {
  BufferPool pool;
  ASSERT_TRUE(pool.Init(4096, 8));
  uint8_t* a = pool.Acquire();
  uint8_t* b = pool.Acquire();
  ASSERT_TRUE(pool.Complete(a, 1));
  uint8_t* p;
  size_t n;
  ASSERT_TRUE(pool.PopCompleted(&p, &n));
  pool.Release(p);
  EXPECT_EQ(pool.Acquire(), a);  // not one of the six never touched
  (void)b;
}

// Many threads popping and pushing one small stack: no index is ever held
// twice, none is lost (the ABA case the tag guards against).
TEST(IndexStackTest, ConcurrentPopPushNeverDuplicates) {
  constexpr uint32_t kN = 4;
  IndexStack s;
  ASSERT_TRUE(s.Init(kN));
  for (uint32_t i = 0; i < kN; ++i) s.Push(i);
  std::atomic<int> held[kN];
  for (auto& h : held) h.store(0);
  std::atomic<bool> bad{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        uint32_t v;
        if (!s.TryPop(&v)) continue;
        if (held[v].fetch_add(1) != 0) bad = true;
        held[v].fetch_sub(1);
        s.Push(v);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(bad.load());
  std::set<uint32_t> left;
  uint32_t v;
  while (s.TryPop(&v)) left.insert(v);
  EXPECT_EQ(left.size(), kN);
}

}  // namespace
}  // namespace gpscope::inject
