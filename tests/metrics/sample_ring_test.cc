#include "metrics/sample_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace gpscope::metrics {
namespace {

TEST(SpscRingTest, FifoBoundedAndCountsDrops) {
  SpscRing<uint64_t> r;
  EXPECT_FALSE(r.Init(3));
  ASSERT_TRUE(r.Init(4));
  EXPECT_EQ(r.capacity(), 4u);
  for (uint64_t i = 0; i < 4; ++i) EXPECT_TRUE(r.TryPush(i));
  EXPECT_FALSE(r.TryPush(99));
  EXPECT_FALSE(r.TryPush(100));
  EXPECT_EQ(r.dropped(), 2u);
  uint64_t v;
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(r.TryPop(&v));
    EXPECT_EQ(v, i);
  }
  EXPECT_FALSE(r.TryPop(&v));
  // Wraps around many times.
  for (uint64_t i = 0; i < 1000; ++i) {
    ASSERT_TRUE(r.TryPush(i));
    ASSERT_TRUE(r.TryPop(&v));
    EXPECT_EQ(v, i);
  }
}

TEST(SpscRingTest, ConcurrentProducerAndConsumerKeepOrderAndLoseNothingUncounted) {
  MetricRing r;
  ASSERT_TRUE(r.Init(256));
  constexpr uint64_t kN = 400000;
  std::atomic<bool> done{false};
  uint64_t pushed = 0;
  std::thread producer([&] {
    for (uint64_t i = 1; i <= kN; ++i) {
      MetricEvent e{MetricEvent::kSample,
                    format::MetricSample{i, static_cast<uint32_t>(i), i * 0.5}, nullptr, nullptr};
      if (r.TryPush(e)) ++pushed;
      if ((i & 1023) == 0) std::this_thread::yield();
    }
    done.store(true, std::memory_order_release);
  });
  uint64_t popped = 0, last = 0;
  bool ordered = true, intact = true;
  for (;;) {
    MetricEvent e;
    if (r.TryPop(&e)) {
      ++popped;
      ordered &= e.sample.timestamp_ns > last;
      intact &= e.sample.metric_id == static_cast<uint32_t>(e.sample.timestamp_ns) &&
                e.sample.value == e.sample.timestamp_ns * 0.5;
      last = e.sample.timestamp_ns;
    } else if (done.load(std::memory_order_acquire)) {
      if (!r.TryPop(&e)) break;
      ++popped;
      ordered &= e.sample.timestamp_ns > last;
      last = e.sample.timestamp_ns;
    }
  }
  producer.join();
  EXPECT_TRUE(ordered);
  EXPECT_TRUE(intact);
  EXPECT_EQ(popped, pushed);
  EXPECT_EQ(pushed + r.dropped(), kN);
}

TEST(SpscRingTest, RingSinkRefusesDescriptorsWhenFullAndCountsLostSamples) {
  MetricRing r;
  ASSERT_TRUE(r.Init(2));
  RingSink sink(&r);
  MetricDef def;
  def.id = 7;
  CapabilityDef cap;
  EXPECT_TRUE(sink.OnDescriptor(def));
  EXPECT_TRUE(sink.OnCapability(cap));
  EXPECT_FALSE(sink.OnDescriptor(def));
  sink.OnSample(format::MetricSample{1, 7, 1.0});
  EXPECT_EQ(sink.samples_dropped(), 1u);
  EXPECT_EQ(r.dropped(), 2u);
  MetricEvent e;
  ASSERT_TRUE(r.TryPop(&e));
  EXPECT_EQ(e.kind, MetricEvent::kDescriptor);
  EXPECT_EQ(e.descriptor, &def);
  ASSERT_TRUE(r.TryPop(&e));
  EXPECT_EQ(e.kind, MetricEvent::kCapability);
  EXPECT_EQ(e.capability, &cap);
}

}  // namespace
}  // namespace gpscope::metrics
