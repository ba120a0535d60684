#include "metrics/sampler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <iterator>
#include <memory>
#include <set>
#include <string>

#include "metrics/replay_backend.h"
#include "metrics/sample_ring.h"
#include "proto/metric_names.h"
#include "tests/metrics/fakes.h"

namespace gpscope::metrics {
namespace {

using testing::FakeHost;
using testing::RecordingSink;

constexpr uint64_t kSec = 1000000000ull;

constexpr char kH200[] = R"(device 0 GPU-8c3f0000-1111-2222-3333-444455556666 NVIDIA H200
step
nvml.gpu_util 0 97
nvml.mem_util 0 40
nvml.sm_clock_mhz 0 1980
nvml.mem_clock_mhz 0 3201
nvml.clock_event_reasons 0 4
nvml.power_w 0 612.25
nvml.power_limit_w 0 700
nvml.temperature_c 0 61
nvml.memory_used_bytes 0 80000000000
gpm.sm_util 0 10
gpm.sm_occupancy 0 11
gpm.tensor_util 0 12
gpm.dram_bw_util 0 13
gpm.fp16_util 0 14
gpm.fp32_util 0 15
gpm.fp64_util 0 16
gpm.pcie_tx_bytes_per_s 0 1000
gpm.pcie_rx_bytes_per_s 0 2000
gpm.nvlink_tx_bytes_per_s 0 3000
gpm.nvlink_rx_bytes_per_s 0 4000
proc 0 4242 1000000 90 python3
step
nvml.gpu_util 0 98
gpm.sm_util 0 85
gpm.tensor_util 0 55
proc 0 4242 2000000 91 python3
step
nvml.gpu_util 0 99
gpm.sm_util 0 30
gpm.tensor_util 0 5
proc 0 4242 3000000 92 python3
proc 0 777 5000000 40 other_job
)";

// A host whose readings are fixed; tests change them between samples.
std::unique_ptr<FakeHost> MakeHost(FakeHost** out) {
  auto h = std::make_unique<FakeHost>();
  h->snapshot.has_process_cpu = h->snapshot.has_rss = h->snapshot.has_system = true;
  h->snapshot.mono_ns = 1 * kSec;
  h->snapshot.rss_bytes = 123456;
  *out = h.get();
  return h;
}

SamplerOptions NoSelfCost() {
  SamplerOptions o;
  o.self_pid = 1000;
  o.self_cost = false;  // its value depends on the machine
  return o;
}

TEST(SamplerTest, DefinesEveryReplayedMetricWithDenseIds) {
  FakeHost* host;
  Sampler s(std::make_unique<ReplayBackend>(kH200), MakeHost(&host), NoSelfCost());
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  ASSERT_EQ(sink.defs.size(), s.descriptor_count());
  for (size_t i = 0; i < sink.defs.size(); ++i) EXPECT_EQ(sink.defs[i].id, i + 1);

  std::set<std::string> names;
  for (const MetricDef& d : sink.defs) names.insert(d.name);
  for (const char* n : {"nvml.gpu_util",
                        "nvml.mem_util",
                        "nvml.sm_clock_mhz",
                        "nvml.mem_clock_mhz",
                        "nvml.clock_event_reasons",
                        "nvml.power_w",
                        "nvml.power_limit_w",
                        "nvml.temperature_c",
                        "nvml.memory_used_bytes",
                        "gpm.sm_util",
                        "gpm.sm_occupancy",
                        "gpm.tensor_util",
                        "gpm.dram_bw_util",
                        "gpm.fp16_util",
                        "gpm.fp32_util",
                        "gpm.fp64_util",
                        "gpm.pcie_tx_bytes_per_s",
                        "gpm.pcie_rx_bytes_per_s",
                        "gpm.nvlink_tx_bytes_per_s",
                        "gpm.nvlink_rx_bytes_per_s",
                        "host.process_cpu_user_pct",
                        "host.process_cpu_system_pct",
                        "host.rss_bytes",
                        "host.cpu_util_pct",
                        "host.iowait_pct"}) {
    EXPECT_EQ(names.count(n), 1u) << n;
  }
  EXPECT_EQ(names.count("nvml.pcie_tx_bytes_per_s"), 0u);  // not recorded

  const MetricDef* power = sink.Def("nvml.power_w");
  ASSERT_NE(power, nullptr);
  EXPECT_STREQ(power->unit, "W");
  EXPECT_EQ(power->scope, kScopeDevice);
  EXPECT_EQ(power->device_id, 0u);
  EXPECT_STREQ(power->label, "GPU-8c3f0000-1111-2222-3333-444455556666");
  EXPECT_STREQ(sink.Def("nvml.clock_event_reasons")->unit, "bitmask");
  EXPECT_STREQ(sink.Def("gpm.nvlink_rx_bytes_per_s")->unit, "bytes/s");
  EXPECT_STREQ(sink.Def("nvml.temperature_c")->unit, "C");
  EXPECT_STREQ(sink.Def("nvml.sm_clock_mhz")->unit, "MHz");
  const MetricDef* user = sink.Def("host.process_cpu_user_pct");
  EXPECT_EQ(user->scope, kScopeProcess);
  EXPECT_EQ(user->pid, 1000u);
  EXPECT_EQ(sink.Def("host.cpu_util_pct")->scope, kScopeHost);

  auto nvml = sink.Caps("nvml");
  ASSERT_EQ(nvml.size(), 1u);
  EXPECT_TRUE(nvml[0]->available);
  EXPECT_STREQ(nvml[0]->reason, "1 GPU: NVIDIA H200");
  auto gpm = sink.Caps("gpm");
  ASSERT_EQ(gpm.size(), 1u);
  EXPECT_TRUE(gpm[0]->available);
  EXPECT_STREQ(gpm[0]->reason, "GPU 0: available");
  // The record views borrow the def's text.
  format::MetricDescriptorRecord rec = ToRecord(*power);
  EXPECT_EQ(std::string(rec.name.data, rec.name.size), "nvml.power_w");
  EXPECT_EQ(rec.scope, kScopeDevice);
}

// Every name the sampler writes is in the one catalogue (proto/metric_names.h)
// that the model, the analyses, the renderers and the monitor match against:
// GPU, process, thread, host and self-cost metrics, and the sources' notices.
TEST(SamplerTest, EveryNameItWritesIsInTheCatalogue) {
  const std::set<std::string> catalogue(std::begin(metric_names::kAllMetricNames),
                                        std::end(metric_names::kAllMetricNames));
  EXPECT_EQ(catalogue.size(), std::size(metric_names::kAllMetricNames));  // no name twice
  for (int m = 0; m < kGpuMetricCount; ++m) {
    EXPECT_EQ(catalogue.count(GetGpuMetricInfo(static_cast<GpuMetric>(m)).name), 1u) << m;
  }
  FakeHost* host;
  SamplerOptions o;
  o.self_pid = 1000;
  o.top_threads = 1;
  Sampler s(std::make_unique<ReplayBackend>(kH200), MakeHost(&host), o);
  host->threads = {FakeHost::Thread(10, 0, "python3")};
  host->threads_mono_ns = 10 * kSec;
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  s.SampleOnce(100 * kSec, &sink);
  host->threads = {FakeHost::Thread(10, 50, "python3")};
  host->threads_mono_ns = 11 * kSec;
  s.SampleOnce(101 * kSec, &sink);
  std::set<std::string> written;
  for (const MetricDef& d : sink.defs) written.insert(d.name);
  for (const char* n : {metric_names::kNvmlProcessSmUtil, metric_names::kNvmlProcessMemoryBytes,
                        metric_names::kHostThreadCpuPct, metric_names::kGpscopeSamplerCpuPct,
                        metric_names::kGpscopeCollectorCpuPct, metric_names::kHostCpuUtilPct}) {
    EXPECT_EQ(written.count(n), 1u) << n;  // the run reached every kind of name
  }
  for (const std::string& n : written) EXPECT_EQ(catalogue.count(n), 1u) << n;
  EXPECT_EQ(sink.Caps(metric_names::kCapNvml).size(), 1u);
  EXPECT_EQ(sink.Caps(metric_names::kCapGpm).size(), 1u);
}

TEST(SamplerTest, EmitsReplayedValuesStampedWithNow) {
  FakeHost* host;
  Sampler s(std::make_unique<ReplayBackend>(kH200), MakeHost(&host), NoSelfCost());
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  s.SampleOnce(5 * kSec, &sink);
  EXPECT_EQ(sink.Values(sink.Def("nvml.gpu_util"), 5 * kSec), std::vector<double>{97});
  EXPECT_EQ(sink.Values(sink.Def("nvml.power_w")), std::vector<double>{612.25});
  EXPECT_EQ(sink.Values(sink.Def("nvml.clock_event_reasons")), std::vector<double>{4});
  EXPECT_EQ(sink.Values(sink.Def("nvml.memory_used_bytes")), std::vector<double>{80e9});
  EXPECT_EQ(sink.Values(sink.Def("host.rss_bytes")), std::vector<double>{123456});
  for (const auto& v : sink.samples) EXPECT_EQ(v.timestamp_ns, 5 * kSec);
  s.SampleOnce(6 * kSec, &sink);
  EXPECT_EQ(sink.Values(sink.Def("nvml.gpu_util"), 6 * kSec), std::vector<double>{98});
  // A metric missing from a step is simply not sampled then.
  EXPECT_EQ(sink.Values(sink.Def("nvml.power_w")).size(), 1u);
}

TEST(SamplerTest, GpmValuesCoverTheIntervalSinceThePreviousSample) {
  Sampler s(std::make_unique<ReplayBackend>(kH200), nullptr, NoSelfCost());
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  const MetricDef* sm = sink.Def("gpm.sm_util");
  const MetricDef* tensor = sink.Def("gpm.tensor_util");
  ASSERT_NE(sm, nullptr);
  s.SampleOnce(1 * kSec, &sink);
  EXPECT_TRUE(sink.Values(sm).empty());  // one snapshot: no interval yet
  s.SampleOnce(2 * kSec, &sink);
  EXPECT_EQ(sink.Values(sm, 2 * kSec), std::vector<double>{85});
  EXPECT_EQ(sink.Values(tensor, 2 * kSec), std::vector<double>{55});
  s.SampleOnce(3 * kSec, &sink);
  EXPECT_EQ(sink.Values(sm, 3 * kSec), std::vector<double>{30});
  EXPECT_EQ(sink.Values(tensor, 3 * kSec), std::vector<double>{5});
  // Metrics missing from a step are not invented.
  EXPECT_EQ(sink.Values(sink.Def("gpm.fp64_util")).size(), 0u);
}

TEST(SamplerTest, GpmUnsupportedIsNotedOnceWithoutGpmDescriptors) {
  std::string text = kH200;
  text.insert(text.find("step"),
              "unsupported 0 gpm GPM not supported on this GPU (needs Hopper or newer)\n");
  Sampler s(std::make_unique<ReplayBackend>(text), nullptr, NoSelfCost());
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  for (int i = 1; i <= 5; ++i) s.SampleOnce(i * kSec, &sink);
  EXPECT_EQ(sink.CountDefs("gpm."), 0);
  auto gpm = sink.Caps("gpm");
  ASSERT_EQ(gpm.size(), 1u);
  EXPECT_FALSE(gpm[0]->available);
  EXPECT_STREQ(gpm[0]->reason, "GPU 0: GPM not supported on this GPU (needs Hopper or newer)");
  // Nothing per GPM metric: the one "gpm" notice covers them.
  for (const CapabilityDef& c : sink.caps) EXPECT_NE(std::string(c.component).rfind("gpm.", 0), 0u);
  EXPECT_NE(sink.Def("nvml.gpu_util"), nullptr);
  EXPECT_EQ(sink.Values(sink.Def("nvml.gpu_util")).size(), 5u);
}

TEST(SamplerTest, GpmCanBeSwitchedOff) {
  SamplerOptions o = NoSelfCost();
  o.gpm = false;
  Sampler s(std::make_unique<ReplayBackend>(kH200), nullptr, o);
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  EXPECT_EQ(sink.CountDefs("gpm."), 0);
  ASSERT_EQ(sink.Caps("gpm").size(), 1u);
  EXPECT_STREQ(sink.Caps("gpm")[0]->reason, "GPU 0: disabled by configuration");
}

TEST(SamplerTest, MissingNvmlIsNotedAndHostMetricsStillWork) {
  FakeHost* host;
  Sampler s(std::make_unique<ReplayBackend>(
                "nvml missing cannot load libnvidia-ml.so.1: cannot open shared object file\n"),
            MakeHost(&host), NoSelfCost());
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  auto nvml = sink.Caps("nvml");
  ASSERT_EQ(nvml.size(), 1u);
  EXPECT_FALSE(nvml[0]->available);
  EXPECT_STREQ(nvml[0]->reason, "cannot load libnvidia-ml.so.1: cannot open shared object file");
  EXPECT_EQ(sink.CountDefs("nvml."), 0);
  EXPECT_EQ(sink.CountDefs("gpm."), 0);
  EXPECT_EQ(s.gpu_device_count(), 0u);
  for (int i = 1; i <= 3; ++i) s.SampleOnce(i * kSec, &sink);
  EXPECT_EQ(sink.Values(sink.Def("host.rss_bytes")).size(), 3u);
  EXPECT_EQ(sink.Caps("nvml").size(), 1u);  // once, not per sample
}

TEST(SamplerTest, NothingToSampleFailsInit) {
  FakeHost* host;
  auto h = MakeHost(&host);
  host->open_ok = false;
  Sampler s(std::make_unique<ReplayBackend>("nvml missing gone\n"), std::move(h), NoSelfCost());
  RecordingSink sink;
  EXPECT_FALSE(s.Init(&sink));
  EXPECT_EQ(sink.Caps("host").size(), 1u);
  EXPECT_EQ(sink.Caps("nvml").size(), 1u);
}

TEST(SamplerTest, ProcessesAreReadAtTheirOwnSlowerCadence) {
  SamplerOptions o = NoSelfCost();
  o.process_interval_ms = 1000;
  Sampler s(std::make_unique<ReplayBackend>(kH200), nullptr, o);
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  // Device metrics every 100 ms; the replay has three steps, so sample
  // at 0, 100 and 1000 ms past the first: processes at 0 and 1000 only.
  s.SampleOnce(1 * kSec, &sink);
  s.SampleOnce(1 * kSec + kSec / 10, &sink);
  s.SampleOnce(2 * kSec, &sink);
  const MetricDef* util = sink.Def("nvml.gpu_util", 0);
  ASSERT_NE(util, nullptr);
  EXPECT_EQ(sink.Values(util).size(), 3u);
  const MetricDef* sm = sink.Def("nvml.process_sm_util", 4242);
  ASSERT_NE(sm, nullptr);
  EXPECT_EQ(sink.Values(sm, 1 * kSec), std::vector<double>{90});
  EXPECT_TRUE(sink.Values(sm, 1 * kSec + kSec / 10).empty());
  EXPECT_EQ(sink.Values(sm, 2 * kSec).size(), 1u);
}

TEST(SamplerTest, ASecondProcessOnTheGpuGetsItsOwnDescriptors) {
  Sampler s(std::make_unique<ReplayBackend>(kH200), nullptr, NoSelfCost());
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  EXPECT_EQ(sink.CountDefs("nvml.process_"), 0);  // defined when a pid appears
  s.SampleOnce(1 * kSec, &sink);
  const MetricDef* mem = sink.Def("nvml.process_memory_bytes", 4242);
  const MetricDef* sm = sink.Def("nvml.process_sm_util", 4242);
  ASSERT_NE(mem, nullptr);
  ASSERT_NE(sm, nullptr);
  EXPECT_EQ(mem->scope, kScopeProcess);
  EXPECT_EQ(mem->device_id, 0u);
  EXPECT_STREQ(mem->label, "python3");
  EXPECT_STREQ(sm->unit, "percent");
  EXPECT_EQ(sink.Values(mem), std::vector<double>{1e6});
  EXPECT_EQ(sink.Values(sm), std::vector<double>{90});
  s.SampleOnce(2 * kSec, &sink);
  EXPECT_EQ(sink.CountDefs("nvml.process_"), 2);  // same pid: no new descriptors
  s.SampleOnce(3 * kSec, &sink);
  const MetricDef* other = sink.Def("nvml.process_sm_util", 777);
  ASSERT_NE(other, nullptr);
  EXPECT_STREQ(other->label, "other_job");
  EXPECT_EQ(sink.Values(other, 3 * kSec), std::vector<double>{40});
  EXPECT_EQ(sink.CountDefs("nvml.process_"), 4);
  // Each descriptor precedes its first sample.
  std::set<uint32_t> seen;
  for (const auto& e : sink.order) {
    if (e.kind == 'd') seen.insert(e.id);
    if (e.kind == 's') {
      EXPECT_TRUE(seen.count(e.id)) << "sample before descriptor " << e.id;
    }
  }
}

TEST(SamplerTest, ProcessUtilizationNotPermittedLeavesMemoryOnly) {
  std::string text = kH200;
  text.insert(text.find("step"), "unsupported 0 process_util NVML_ERROR_NO_PERMISSION\n");
  Sampler s(std::make_unique<ReplayBackend>(text), nullptr, NoSelfCost());
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  auto util = sink.Caps("nvml.process_util");
  ASSERT_EQ(util.size(), 1u);
  EXPECT_STREQ(util[0]->reason, "GPU 0: NVML_ERROR_NO_PERMISSION");
  s.SampleOnce(1 * kSec, &sink);
  EXPECT_NE(sink.Def("nvml.process_memory_bytes", 4242), nullptr);
  EXPECT_EQ(sink.Def("nvml.process_sm_util", 4242), nullptr);
}

TEST(SamplerTest, ProcessesBeyondTheCapAreCountedNotDefined) {
  SamplerOptions o = NoSelfCost();
  o.max_gpu_processes = 1;
  Sampler s(std::make_unique<ReplayBackend>(kH200), nullptr, o);
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  for (int i = 1; i <= 3; ++i) s.SampleOnce(i * kSec, &sink);
  EXPECT_NE(sink.Def("nvml.process_sm_util", 4242), nullptr);
  EXPECT_EQ(sink.Def("nvml.process_sm_util", 777), nullptr);
  EXPECT_EQ(s.stats().gpu_processes_ignored.load(), 1u);
}

TEST(SamplerTest, CpuPercentagesComeFromTwoReadings) {
  FakeHost* host;
  Sampler s(nullptr, MakeHost(&host), NoSelfCost());
  host->snapshot.user_ns = 1 * kSec;
  host->snapshot.system_ns = kSec / 2;
  host->snapshot.system.user = 1000;
  host->snapshot.system.idle = 9000;
  host->snapshot.system.iowait = 100;
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));  // reads the baseline
  // 100 ms later: +50 ms user, +10 ms system; the node: 1000 ticks, 400 busy, 50 iowait.
  host->snapshot.mono_ns += kSec / 10;
  host->snapshot.user_ns += kSec / 20;
  host->snapshot.system_ns += kSec / 100;
  host->snapshot.system.user += 400;
  host->snapshot.system.idle += 550;
  host->snapshot.system.iowait += 50;
  s.SampleOnce(7 * kSec, &sink);
  EXPECT_EQ(sink.Values(sink.Def("host.process_cpu_user_pct"), 7 * kSec), std::vector<double>{50});
  EXPECT_EQ(sink.Values(sink.Def("host.process_cpu_system_pct")), std::vector<double>{10});
  EXPECT_EQ(sink.Values(sink.Def("host.cpu_util_pct")), std::vector<double>{40});
  EXPECT_EQ(sink.Values(sink.Def("host.iowait_pct")), std::vector<double>{5});
  // Within the same tick /proc/stat does not move: no node value, old baseline kept.
  host->snapshot.mono_ns += kSec / 100;
  s.SampleOnce(8 * kSec, &sink);
  EXPECT_EQ(sink.Values(sink.Def("host.cpu_util_pct")).size(), 1u);
  host->snapshot.mono_ns += kSec / 10;
  host->snapshot.system.user += 100;
  host->snapshot.system.idle += 100;
  s.SampleOnce(9 * kSec, &sink);
  EXPECT_EQ(sink.Values(sink.Def("host.cpu_util_pct"), 9 * kSec), std::vector<double>{50});
}

TEST(SamplerTest, BusiestThreadsAreReportedWithTheirNames) {
  FakeHost* host;
  SamplerOptions o = NoSelfCost();
  o.top_threads = 2;
  o.thread_scan_interval_ms = 1000;
  Sampler s(nullptr, MakeHost(&host), o);
  host->threads = {FakeHost::Thread(10, 0, "python3"), FakeHost::Thread(11, 0, "pt_autograd_0"),
                   FakeHost::Thread(12, 0, "idle"), FakeHost::Thread(13, 0, "dataloader")};
  host->threads_mono_ns = 10 * kSec;
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));  // baseline scan
  EXPECT_EQ(host->thread_reads, 1);
  s.SampleOnce(100 * kSec, &sink);  // starts the scan clock
  EXPECT_EQ(host->thread_reads, 1);
  s.SampleOnce(100 * kSec + kSec / 2, &sink);  // not due yet
  EXPECT_EQ(host->thread_reads, 1);
  // One second later (10 ms ticks): 50, 100, 0 and 30 ticks.
  host->threads = {FakeHost::Thread(13, 30, "dataloader"),
                   FakeHost::Thread(11, 100, "pt_autograd_0"), FakeHost::Thread(10, 50, "python3"),
                   FakeHost::Thread(12, 0, "idle")};
  host->threads_mono_ns = 11 * kSec;
  s.SampleOnce(101 * kSec, &sink);
  EXPECT_EQ(host->thread_reads, 2);
  EXPECT_EQ(sink.CountDefs("host.thread_cpu_pct"), 2);  // the top two
  const MetricDef* autograd = sink.Def("host.thread_cpu_pct", 0, 11);
  const MetricDef* main = sink.Def("host.thread_cpu_pct", 0, 10);
  ASSERT_NE(autograd, nullptr);
  ASSERT_NE(main, nullptr);
  EXPECT_EQ(autograd->scope, kScopeThread);
  EXPECT_STREQ(autograd->label, "pt_autograd_0");
  EXPECT_EQ(autograd->pid, 1000u);
  EXPECT_EQ(sink.Values(autograd, 101 * kSec), std::vector<double>{100});
  EXPECT_EQ(sink.Values(main), std::vector<double>{50});

  // Next second: the dataloader takes over; the main thread gets one last
  // value at its real level so its series does not stop at 50%.
  host->threads = {FakeHost::Thread(10, 51, "python3"), FakeHost::Thread(11, 200, "pt_autograd_0"),
                   FakeHost::Thread(12, 0, "idle"), FakeHost::Thread(13, 130, "dataloader")};
  host->threads_mono_ns = 12 * kSec;
  s.SampleOnce(102 * kSec, &sink);
  const MetricDef* loader = sink.Def("host.thread_cpu_pct", 0, 13);
  ASSERT_NE(loader, nullptr);
  EXPECT_EQ(sink.Values(loader, 102 * kSec), std::vector<double>{100});
  EXPECT_EQ(sink.Values(main, 102 * kSec), std::vector<double>{1});
  EXPECT_EQ(sink.Def("host.thread_cpu_pct", 0, 12), nullptr);  // idle never shown
  host->threads_mono_ns = 13 * kSec;
  s.SampleOnce(103 * kSec, &sink);
  EXPECT_TRUE(sink.Values(main, 103 * kSec).empty());  // gone below the floor
}

// The collector's own cost: all gpscope-* threads together, every scan,
// whether or not they are among the busiest.
TEST(SamplerTest, CollectorThreadsAreSummedEveryScan) {
  FakeHost* host;
  SamplerOptions o = NoSelfCost();
  o.self_cost = true;
  o.top_threads = 1;
  Sampler s(nullptr, MakeHost(&host), o);
  host->threads = {FakeHost::Thread(10, 0, "python3"), FakeHost::Thread(20, 0, "gpscope-writer"),
                   FakeHost::Thread(21, 0, "gpscope-sampler")};
  host->threads_mono_ns = 10 * kSec;
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  s.SampleOnce(100 * kSec, &sink);
  // One second later (10 ms ticks): python3 50%, writer 2%, sampler 1%.
  host->threads = {FakeHost::Thread(10, 50, "python3"), FakeHost::Thread(20, 2, "gpscope-writer"),
                   FakeHost::Thread(21, 1, "gpscope-sampler")};
  host->threads_mono_ns = 11 * kSec;
  s.SampleOnce(101 * kSec, &sink);
  const MetricDef* ours = sink.Def("gpscope.collector_cpu_pct", 0, 0);
  ASSERT_NE(ours, nullptr);
  EXPECT_EQ(ours->scope, kScopeProcess);
  EXPECT_STREQ(ours->label, "gpscope");
  EXPECT_EQ(sink.Values(ours, 101 * kSec), std::vector<double>{3});
  // Only the busiest thread gets its own series; ours are below it.
  EXPECT_EQ(sink.CountDefs("host.thread_cpu_pct"), 1);
  // Idle next second: a 0, not a gap.
  host->threads_mono_ns = 12 * kSec;
  s.SampleOnce(102 * kSec, &sink);
  EXPECT_EQ(sink.Values(ours, 102 * kSec), std::vector<double>{0});
}

TEST(SamplerTest, ThreadDescriptorsBeyondTheCapAreCounted) {
  FakeHost* host;
  SamplerOptions o = NoSelfCost();
  o.top_threads = 4;
  o.max_thread_descriptors = 1;
  Sampler s(nullptr, MakeHost(&host), o);
  host->threads = {FakeHost::Thread(10, 0, "a"), FakeHost::Thread(11, 0, "b")};
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  s.SampleOnce(1 * kSec, &sink);
  host->threads = {FakeHost::Thread(10, 50, "a"), FakeHost::Thread(11, 60, "b")};
  host->threads_mono_ns = kSec;
  s.SampleOnce(3 * kSec, &sink);
  EXPECT_EQ(sink.CountDefs("host.thread_cpu_pct"), 1);
  EXPECT_NE(sink.Def("host.thread_cpu_pct", 0, 11), nullptr);  // the busier one won
  EXPECT_EQ(s.stats().threads_ignored.load(), 1u);
}

TEST(SamplerTest, UnreadableThreadListIsNotedOnce) {
  FakeHost* host;
  auto h = MakeHost(&host);
  host->threads_ok = false;
  Sampler s(nullptr, std::move(h), NoSelfCost());
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  ASSERT_EQ(sink.Caps("host.threads").size(), 1u);
  for (int i = 1; i <= 5; ++i) s.SampleOnce(i * kSec * 2, &sink);
  EXPECT_EQ(host->thread_reads, 1);
  EXPECT_EQ(sink.Caps("host.threads").size(), 1u);
}

TEST(SamplerTest, RunTimeFailuresAreNotedOnceAndCounted) {
  std::string text = R"(device 0 GPU-a NVIDIA H200
step
nvml.power_w 0 600
nvml.gpu_util 0 50
step
fail 0 nvml.power_w NVML_ERROR_GPU_IS_LOST
nvml.gpu_util 0 50
step
fail 0 nvml.power_w NVML_ERROR_GPU_IS_LOST
nvml.gpu_util 0 50
)";
  Sampler s(std::make_unique<ReplayBackend>(text), nullptr, NoSelfCost());
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  for (int i = 1; i <= 3; ++i) s.SampleOnce(i * kSec, &sink);
  auto power = sink.Caps("nvml.power_w");
  ASSERT_EQ(power.size(), 1u);
  EXPECT_FALSE(power[0]->available);
  EXPECT_NE(std::string(power[0]->reason).find("NVML_ERROR_GPU_IS_LOST"), std::string::npos);
  EXPECT_EQ(s.stats().gpu_read_failures.load(), 2u);
  EXPECT_EQ(sink.Values(sink.Def("nvml.power_w")).size(), 1u);
  EXPECT_EQ(sink.Values(sink.Def("nvml.gpu_util")).size(), 3u);
}

TEST(SamplerTest, NoticesAreGroupedAcrossGpus) {
  std::string text = R"(device 0 GPU-a Tesla T4
device 1 GPU-b Tesla T4
device 2 GPU-c NVIDIA H100
unsupported 0 gpm GPM not supported on this GPU (needs Hopper or newer)
unsupported 1 gpm GPM not supported on this GPU (needs Hopper or newer)
step
nvml.gpu_util 0 1
nvml.gpu_util 1 2
nvml.gpu_util 2 3
gpm.sm_util 2 4
)";
  Sampler s(std::make_unique<ReplayBackend>(text), nullptr, NoSelfCost());
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  auto gpm = sink.Caps("gpm");
  ASSERT_EQ(gpm.size(), 2u);
  std::set<std::string> reasons{gpm[0]->reason, gpm[1]->reason};
  EXPECT_EQ(reasons.count("GPU 0,1: GPM not supported on this GPU (needs Hopper or newer)"), 1u);
  EXPECT_EQ(reasons.count("GPU 2: available"), 1u);
  EXPECT_EQ(sink.CountDefs("gpm.sm_util"), 1);
  EXPECT_EQ(sink.CountDefs("nvml.gpu_util"), 3);
  // One notice for a metric missing on all three GPUs, not three.
  EXPECT_EQ(sink.Caps("nvml.power_w").size(), 1u);
  EXPECT_STREQ(sink.Caps("nvml.power_w")[0]->reason, "GPU 0,1,2: not recorded in the replay");
}

TEST(SamplerTest, RefusedDescriptorsAreOfferedAgainAndTheirSamplesHeldBack) {
  FakeHost* host;
  Sampler s(std::make_unique<ReplayBackend>(kH200), MakeHost(&host), NoSelfCost());
  RecordingSink sink;
  sink.refuse = true;
  ASSERT_TRUE(s.Init(&sink));
  EXPECT_TRUE(sink.defs.empty());
  s.SampleOnce(1 * kSec, &sink);
  EXPECT_TRUE(sink.samples.empty());
  EXPECT_GT(s.stats().values_held_back.load(), 0u);
  sink.refuse = false;
  s.SampleOnce(2 * kSec, &sink);
  EXPECT_EQ(sink.defs.size(), s.descriptor_count());
  EXPECT_EQ(sink.caps.size(), s.capability_count());
  EXPECT_FALSE(sink.samples.empty());
  std::set<uint32_t> seen;
  for (const auto& e : sink.order) {
    if (e.kind == 'd') seen.insert(e.id);
    if (e.kind == 's') {
      EXPECT_TRUE(seen.count(e.id));
    }
  }
}

TEST(SamplerTest, AFullRingDelaysDescriptorsButNeverOrphansSamples) {
  MetricRing ring;
  ASSERT_TRUE(ring.Init(8));  // far smaller than one sample's output
  RingSink sink(&ring);
  FakeHost* host;
  Sampler s(std::make_unique<ReplayBackend>(kH200), MakeHost(&host), NoSelfCost());
  ASSERT_TRUE(s.Init(&sink));
  std::set<uint32_t> defined;
  size_t samples = 0;
  for (int i = 1; i <= 40; ++i) {
    s.SampleOnce(i * kSec, &sink);
    MetricEvent e;
    while (ring.TryPop(&e)) {
      if (e.kind == MetricEvent::kDescriptor) defined.insert(e.descriptor->id);
      if (e.kind == MetricEvent::kSample) {
        ++samples;  // never before its descriptor
        EXPECT_TRUE(defined.count(e.sample.metric_id)) << e.sample.metric_id;
      }
    }
  }
  EXPECT_EQ(defined.size(), s.descriptor_count());
  EXPECT_GT(samples, 0u);
  EXPECT_GT(sink.samples_dropped(), 0u);
}

TEST(SamplerTest, ReportsItsOwnCost) {
  FakeHost* host;
  SamplerOptions o;
  Sampler s(std::make_unique<ReplayBackend>(kH200), MakeHost(&host), o);
  RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  const MetricDef* self = sink.Def("gpscope.sampler_cpu_pct");
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(self->pid, static_cast<uint32_t>(getpid()));
  for (int i = 1; i <= 3; ++i) s.SampleOnce(i * kSec, &sink);
  auto v = sink.Values(self);
  EXPECT_EQ(v.size(), 2u);  // from the second sample on
  for (double x : v) EXPECT_GE(x, 0.0);
  EXPECT_EQ(s.stats().samples.load(), 3u);
  EXPECT_GT(s.stats().cpu_ns.load(), 0u);
}

}  // namespace
}  // namespace gpscope::metrics
