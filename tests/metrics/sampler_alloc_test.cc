// After Init, SampleOnce must not allocate: this binary replaces the global
// operator new to count allocations while a window is open.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "metrics/host_stats.h"
#include "metrics/replay_backend.h"
#include "metrics/sampler.h"

#if defined(__GNUC__) && !defined(__clang__)
// GCC cannot see that these replacements pair malloc with free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace {
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_allocations{0};
}  // namespace

void* operator new(size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace gpscope::metrics {
namespace {

// Counts; allocates nothing itself.
struct CountingSink : MetricSink {
  size_t defs = 0, caps = 0, samples = 0;
  bool OnDescriptor(const MetricDef&) override { return ++defs, true; }
  bool OnCapability(const CapabilityDef&) override { return ++caps, true; }
  void OnSample(const format::MetricSample&) override { ++samples; }
};

// Two GPUs; processes appear over time (new descriptors on the steady path),
// a metric fails at run time (a notice on the steady path).
std::string Replay() {
  std::string t = "device 0 GPU-a NVIDIA H200\ndevice 1 GPU-b NVIDIA H200\n";
  for (int step = 0; step < 60; ++step) {
    t += "step\n";
    for (int d = 0; d < 2; ++d) {
      const std::string dev = " " + std::to_string(d) + " ";
      t += "nvml.gpu_util" + dev + "90\nnvml.power_w" + dev + "500\ngpm.sm_util" + dev + "80\n";
      t += "gpm.tensor_util" + dev + "60\ngpm.dram_bw_util" + dev + "30\n";
      if (step == 30) t += "fail" + dev + "nvml.power_w NVML_ERROR_UNKNOWN\n";
      for (int p = 0; p <= step / 10; ++p) {
        t += "proc" + dev + std::to_string(1000 + p) + " 1000 50 job" + std::to_string(p) + "\n";
      }
    }
  }
  return t;
}

TEST(SamplerAllocTest, SampleOnceDoesNotAllocateAfterInit) {
  SamplerOptions o;
  o.thread_scan_interval_ms = 1;  // scan threads on every sample
  o.min_thread_cpu_pct = 0;       // and define every thread seen
  o.top_threads = 16;
  Sampler s(std::make_unique<ReplayBackend>(Replay()), std::make_unique<ProcHostSource>(), o);
  CountingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  // The counter sees allocations at all (a direct call: new-expressions
  // may be elided).
  g_allocations = 0;
  g_counting = true;
  ::operator delete(::operator new(16));
  g_counting = false;
  ASSERT_EQ(g_allocations.load(), 1u);
  // Some busy threads for the thread scan to find.
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int i = 0; i < 3; ++i) {
    workers.emplace_back([&] {
      volatile uint64_t x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
    });
  }
  g_allocations = 0;
  g_counting = true;
  for (int i = 1; i <= 60; ++i) {
    s.SampleOnce(static_cast<uint64_t>(i) * 100000000ull, &sink);
    timespec ts{0, 2000000};
    nanosleep(&ts, nullptr);
  }
  g_counting = false;
  stop = true;
  for (auto& w : workers) w.join();
  EXPECT_EQ(g_allocations.load(), 0u);
  EXPECT_GT(sink.samples, 60u * 10);
  EXPECT_GT(sink.defs, 0u);
  EXPECT_GE(s.stats().gpu_read_failures.load(), 2u);  // the run-time failure was handled
  size_t process_defs = 0, thread_defs = 0;
  for (size_t i = 0; i < s.descriptor_count(); ++i) {
    const std::string name = s.descriptor(i).name;
    process_defs += name == "nvml.process_sm_util";
    thread_defs += name == "host.thread_cpu_pct";
  }
  EXPECT_EQ(process_defs, 12u);  // 6 pids x 2 GPUs, defined on the steady path
  EXPECT_GT(thread_defs, 0u);
}

}  // namespace
}  // namespace gpscope::metrics
