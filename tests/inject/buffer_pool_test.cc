#include "inject/buffer_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <set>
#include <thread>
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
