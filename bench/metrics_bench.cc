// metrics_bench: the CPU cost of the metrics sampler (metrics/) on
// this machine, without a GPU: the real host side (/proc) plus a replayed
// GPU side (ReplayBackend stands in for NVML, whose cost can only be
// measured on the GPU host: run nvml_probe there).
//
//   metrics_bench [--paced-samples N]
//
// Reports thread CPU per SampleOnce, back to back (warm caches) and paced at
// 100 ms (cold caches, as in production), and that as a share of one core
// at a 100 ms interval. Record results in bench/RESULTS.md.
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/posix.h"
#include "metrics/host_stats.h"
#include "metrics/replay_backend.h"
#include "metrics/sample_ring.h"
#include "metrics/sampler.h"

namespace gm = gpscope::metrics;

namespace {

// Every metric on `gpus` GPUs, two processes each.
std::string Replay(int gpus) {
  std::string t;
  for (int d = 0; d < gpus; ++d)
    t += "device " + std::to_string(d) + " GPU-" + std::to_string(d) + " NVIDIA H200\n";
  for (int step = 0; step < 4; ++step) {
    t += "step\n";
    for (int d = 0; d < gpus; ++d) {
      for (int m = 0; m < gm::kGpuMetricCount; ++m) {
        if (m == static_cast<int>(gm::GpuMetric::kPcieTxBytesPerS) ||
            m == static_cast<int>(gm::GpuMetric::kPcieRxBytesPerS)) {
          continue;  // off by default in NvmlBackend
        }
        t += std::string(gm::GetGpuMetricInfo(m).name) + " " + std::to_string(d) + " " +
             std::to_string(step * 10 + m) + "\n";
      }
      t += "proc " + std::to_string(d) + " " + std::to_string(1000 + d) + " 1000000 80 train\n";
      t += "proc " + std::to_string(d) + " 999 5000 5 other\n";
    }
  }
  return t;
}

struct Result {
  double warm_us;
  double paced_us;
  size_t values_per_sample;
};

// Back to back: `n` samples whose timestamps advance 100 ms each, so the
// thread scan runs every 10th sample as in production.
Result Measure(int gpus, bool host, uint32_t paced_samples) {
  auto make = [&] {
    std::unique_ptr<gm::GpuBackend> gpu;
    if (gpus > 0) gpu = std::make_unique<gm::ReplayBackend>(Replay(gpus), /*loop=*/true);
    std::unique_ptr<gm::HostSource> h;
    if (host) h = std::make_unique<gm::ProcHostSource>();
    return std::make_unique<gm::Sampler>(std::move(gpu), std::move(h), gm::SamplerOptions{});
  };
  gm::MetricRing ring;
  ring.Init(1 << 14);
  gm::RingSink sink(&ring);
  auto drain = [&] {
    gm::MetricEvent e;
    size_t n = 0;
    while (ring.TryPop(&e)) n += e.kind == gm::MetricEvent::kSample;
    return n;
  };
  Result r{};
  {
    auto s = make();
    s->Init(&sink);
    drain();
    const int kWarm = 2000;
    uint64_t now = gpscope::common::ClockNs(CLOCK_REALTIME);
    const uint64_t cpu0 = gpscope::common::ClockNs(CLOCK_THREAD_CPUTIME_ID);
    size_t values = 0;
    for (int i = 0; i < kWarm; ++i) {
      now += 100000000ull;
      s->SampleOnce(now, &sink);
      values += drain();
    }
    r.warm_us = (gpscope::common::ClockNs(CLOCK_THREAD_CPUTIME_ID) - cpu0) / 1e3 / kWarm;
    r.values_per_sample = values / kWarm;
  }
  if (paced_samples > 0) {
    auto s = make();
    s->Init(&sink);
    drain();
    for (uint32_t i = 0; i < paced_samples; ++i) {
      timespec ts{0, 100000000L};
      nanosleep(&ts, nullptr);
      s->SampleOnce(gpscope::common::ClockNs(CLOCK_REALTIME), &sink);
      drain();
    }
    // The sampler's own accounting: thread CPU inside SampleOnce.
    r.paced_us = s->stats().cpu_ns.load() / 1e3 / paced_samples;
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t paced = 30;
  if (argc == 3 && std::strcmp(argv[1], "--paced-samples") == 0) paced = std::atoi(argv[2]);
  std::printf("metrics_bench: thread CPU per SampleOnce (us); %% = share of one core at 100 ms\n");
  std::printf("%-40s %9s %9s %9s %7s\n", "configuration", "warm", "paced", "%core", "values");
  auto row = [&](const char* name, int gpus, bool host) {
    Result r = Measure(gpus, host, paced);
    const double worst = r.paced_us > r.warm_us ? r.paced_us : r.warm_us;
    std::printf("%-40s %9.1f %9.1f %8.3f%% %7zu\n", name, r.warm_us, r.paced_us, worst / 1000.0,
                r.values_per_sample);
  };
  row("host only", 0, true);
  row("replayed GPU x1 only", 1, false);
  row("host + replayed GPU x1", 1, true);
  row("host + replayed GPU x8", 8, true);
  // A PyTorch-like process: 64 more threads for the thread scan to read.
  std::atomic<bool> stop{false};
  std::vector<std::thread> idle;
  for (int i = 0; i < 64; ++i) {
    idle.emplace_back([&] {
      while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    });
  }
  row("host + GPU x1, 66 threads", 1, true);
  row("host + GPU x8, 66 threads", 8, true);
  stop = true;
  for (auto& t : idle) t.join();

  // The pieces of the host side.
  gm::ProcHostSource host;
  const char* why;
  host.Open(&why);
  gm::HostSnapshot snap;
  const int kN = 20000;
  uint64_t c0 = gpscope::common::ClockNs(CLOCK_THREAD_CPUTIME_ID);
  for (int i = 0; i < kN; ++i) host.Read(&snap);
  std::printf("\nProcHostSource::Read (getrusage + /proc/stat + statm): %.2f us\n",
              (gpscope::common::ClockNs(CLOCK_THREAD_CPUTIME_ID) - c0) / 1e3 / kN);
  std::vector<gm::ThreadCpu> threads(1024);
  gm::ThreadScan scan;
  c0 = gpscope::common::ClockNs(CLOCK_THREAD_CPUTIME_ID);
  for (int i = 0; i < 2000; ++i) host.ReadThreads(threads.data(), threads.size(), &scan);
  std::printf("ProcHostSource::ReadThreads (%zu threads): %.2f us\n", scan.count,
              (gpscope::common::ClockNs(CLOCK_THREAD_CPUTIME_ID) - c0) / 1e3 / 2000);
  return 0;
}
