#include "metrics/sampler_thread.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <thread>

#include "metrics/replay_backend.h"
#include "metrics/sample_ring.h"

namespace gpscope::metrics {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kReplay[] =
    "device 0 GPU-a NVIDIA H200\nstep\nnvml.gpu_util 0 50\ngpm.sm_util 0 40\n";

// A HostSource that records which thread used it and with which signal
// mask, and can be made to hang inside Read().
class ProbeHost : public HostSource {
 public:
  std::atomic<bool> hang{false};
  std::atomic<bool> in_read{false};
  std::atomic<bool> open_on_caller{false};
  std::atomic<bool> term_blocked{false};
  std::atomic<bool> int_blocked{false};
  std::atomic<bool> others_blocked{true};  // any signal besides SIGTERM/SIGINT
  std::atomic<int> reads{0};
  std::thread::id caller = std::this_thread::get_id();

  bool Open(const char**) override {
    open_on_caller = std::this_thread::get_id() == caller;
    return true;
  }
  void Read(HostSnapshot* out) override {
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, nullptr, &mask);
    term_blocked = sigismember(&mask, SIGTERM) == 1;
    int_blocked = sigismember(&mask, SIGINT) == 1;
    bool others = false;
    for (int sig = 1; sig < SIGRTMAX; ++sig) {
      if (sig != SIGTERM && sig != SIGINT && sigismember(&mask, sig) == 1) others = true;
    }
    others_blocked = others;
    *out = HostSnapshot{};
    out->has_rss = true;
    out->rss_bytes = 1;
    ++reads;
    in_read = true;
    while (hang.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    in_read = false;
  }
  bool ReadThreads(ThreadCpu*, size_t, ThreadScan*) override { return false; }
  uint64_t ticks_per_second() const override { return 100; }
};

uint64_t FakeClock() {
  static std::atomic<uint64_t> t{0};
  return t.fetch_add(1000) + 1000;
}

TEST(SamplerThreadTest, SamplesEveryIntervalOnItsOwnThreadAndStopsPromptly) {
  auto host = std::make_unique<ProbeHost>();
  ProbeHost* h = host.get();
  SamplerOptions o;
  o.threads = false;
  MetricRing ring;
  ASSERT_TRUE(ring.Init(1024));
  RingSink sink(&ring);
  SamplerThread::Options to;
  to.interval_ms = 10;
  to.clock_ns = FakeClock;
  SamplerThread t(
      std::make_unique<Sampler>(std::make_unique<ReplayBackend>(kReplay), std::move(host), o),
      &sink, to);
  ASSERT_TRUE(t.Start());
  EXPECT_TRUE(t.running());

  // The writer side drains concurrently.
  std::set<uint32_t> defined;
  size_t samples = 0;
  bool orphan = false;
  const auto end = Clock::now() + std::chrono::milliseconds(300);
  while (Clock::now() < end) {
    MetricEvent e;
    while (ring.TryPop(&e)) {
      if (e.kind == MetricEvent::kDescriptor) defined.insert(e.descriptor->id);
      if (e.kind == MetricEvent::kSample) {
        ++samples;
        orphan |= defined.count(e.sample.metric_id) == 0;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_TRUE(t.initialized());
  const auto stop_start = Clock::now();
  EXPECT_TRUE(t.Stop(1000));
  EXPECT_LT(Clock::now() - stop_start, std::chrono::milliseconds(200));
  EXPECT_FALSE(t.running());
  const int reads = h->reads.load();
  EXPECT_GE(reads, 10);  // ~30 at 10 ms; generous for loaded machines
  EXPECT_LE(reads, 40);
  EXPECT_FALSE(h->open_on_caller.load());  // Init ran on the sampler thread
  EXPECT_TRUE(h->term_blocked.load());
  EXPECT_TRUE(h->int_blocked.load());
  // Nothing else: the CUDA driver may signal every thread and wait.
  EXPECT_FALSE(h->others_blocked.load());
  EXPECT_GT(samples, 10u);
  EXPECT_FALSE(orphan);
  ASSERT_NE(t.sampler(), nullptr);
  EXPECT_EQ(t.sampler()->stats().samples.load(), static_cast<uint64_t>(reads) - 1);  // + Init
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(h->reads.load(), reads);  // nothing after Stop
}

TEST(SamplerThreadTest, IntervalIsClamped) {
  SamplerThread::Options to;
  to.interval_ms = 1;
  SamplerThread fast(std::make_unique<Sampler>(nullptr, nullptr), nullptr, to);
  EXPECT_EQ(fast.interval_ms(), SamplerThread::kMinIntervalMs);
  to.interval_ms = 60000;
  SamplerThread slow(std::make_unique<Sampler>(nullptr, nullptr), nullptr, to);
  EXPECT_EQ(slow.interval_ms(), SamplerThread::kMaxIntervalMs);
}

TEST(SamplerThreadTest, AHungSourceCannotHangStop) {
  auto host = std::make_unique<ProbeHost>();
  ProbeHost* h = host.get();  // stays alive: a timed-out Stop leaks the Sampler
  SamplerOptions o;
  o.threads = false;
  MetricRing ring;
  ASSERT_TRUE(ring.Init(1024));
  RingSink sink(&ring);
  SamplerThread::Options to;
  to.interval_ms = 10;
  auto t = std::make_unique<SamplerThread>(std::make_unique<Sampler>(nullptr, std::move(host), o),
                                           &sink, to);
  ASSERT_TRUE(t->Start());
  while (h->reads.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  h->hang = true;
  while (!h->in_read.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto stop_start = Clock::now();
  EXPECT_FALSE(t->Stop(50));
  EXPECT_LT(Clock::now() - stop_start, std::chrono::milliseconds(500));
  EXPECT_EQ(t->sampler(), nullptr);
  t.reset();  // must not free what the stuck thread uses
  // Let the stuck thread finish; it must leave without sampling again.
  h->hang = false;
  while (h->in_read.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const int reads = h->reads.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(h->reads.load(), reads);
}

}  // namespace
}  // namespace gpscope::metrics
