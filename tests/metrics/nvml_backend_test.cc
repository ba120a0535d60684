#include "metrics/nvml_backend.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include "metrics/sampler.h"
#include "tests/metrics/fakes.h"

namespace gpscope::metrics {
namespace {

// ------------------------------------------------------ SelectVisibleDevices --

std::vector<int> Select(const char* visible) {
  const char* uuids[3] = {"GPU-aa11", "GPU-bb22", "GPU-bb33"};
  std::vector<int> ordinal(3);
  SelectVisibleDevices(visible, uuids, 3, ordinal.data());
  return ordinal;
}

TEST(SelectVisibleDevicesTest, UnsetOrEmptySelectsAllInOrder) {
  EXPECT_EQ(Select(nullptr), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(Select(""), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(Select("  "), (std::vector<int>{0, 1, 2}));
}

TEST(SelectVisibleDevicesTest, IndicesAndUuidPrefixesInCudaOrder) {
  EXPECT_EQ(Select("1"), (std::vector<int>{-1, 0, -1}));
  EXPECT_EQ(Select("2,0"), (std::vector<int>{1, -1, 0}));
  EXPECT_EQ(Select(" 2 , 0 "), (std::vector<int>{1, -1, 0}));
  EXPECT_EQ(Select("GPU-bb33,GPU-aa"), (std::vector<int>{1, -1, 0}));
}

TEST(SelectVisibleDevicesTest, StopsAtTheFirstInvalidEntryLikeCuda) {
  EXPECT_EQ(Select("0,7,1"), (std::vector<int>{0, -1, -1}));
  EXPECT_EQ(Select("1,1,2"), (std::vector<int>{-1, 0, -1}));      // repeated
  EXPECT_EQ(Select("GPU-bb,0"), (std::vector<int>{-1, -1, -1}));  // ambiguous prefix
  EXPECT_EQ(Select("-1"), (std::vector<int>{-1, -1, -1}));
}

TEST(SelectVisibleDevicesTest, MigInstancesSelectEveryGpu) {
  EXPECT_EQ(Select("MIG-0123-4567"), (std::vector<int>{0, 1, 2}));
}

// ------------------------------------------------------------ NvmlBackend --

TEST(NvmlBackendTest, MissingLibraryFailsOpenWithTheReason) {
  NvmlBackend::Options o;
  o.library = "/nonexistent/libnvidia-ml.so.1";
  NvmlBackend nvml(o);
  const char* why = nullptr;
  EXPECT_FALSE(nvml.Open(&why));
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("cannot load /nonexistent/libnvidia-ml.so.1"), std::string::npos)
      << why;
}

NvmlBackend::Options Fake() {
  NvmlBackend::Options o;
  o.library = GPSCOPE_FAKE_NVML;
  o.gpm_probe_ms = 1;
  return o;
}

void FakeControl(int what, int value) {
  void* h = dlopen(GPSCOPE_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr);
  auto fn = reinterpret_cast<void (*)(int, int)>(dlsym(h, "fake_nvml_control"));
  ASSERT_NE(fn, nullptr);
  fn(what, value);
  dlclose(h);
}

double V(const GpuReadings& r, GpuMetric m) { return r.value[static_cast<int>(m)]; }

TEST(NvmlBackendTest, OpensAndProbesTheFakeLibrary) {
  NvmlBackend nvml(Fake());
  const char* why = nullptr;
  ASSERT_TRUE(nvml.Open(&why)) << why;
  EXPECT_STREQ(nvml.driver_version(), "580.159");
  ASSERT_EQ(nvml.device_count(), 2u);
  EXPECT_STREQ(nvml.device(0).name, "Fake H200");
  EXPECT_STREQ(nvml.device(1).uuid, "GPU-bbbb0000-0000-0000-0000-000000000000");
  EXPECT_STREQ(nvml.device(1).pci_bus_id, "00000000:1A:00.0");
  EXPECT_EQ(nvml.device(1).cuda_ordinal, 1u);
  // Only the deprecated name exists: the fallback is used.
  EXPECT_EQ(nvml.api().DeviceGetCurrentClocksEventReasons, nullptr);
  EXPECT_NE(nvml.api().clock_event_reasons, nullptr);

  GpuProbe p[2];
  nvml.Probe(p);
  EXPECT_TRUE(p[0].gpm);
  EXPECT_TRUE(p[0].processes);
  EXPECT_TRUE(p[0].process_util);
  const MetricMask nvml_expected =
      kNvmlMask & ~Bit(GpuMetric::kPcieTxBytesPerS) & ~Bit(GpuMetric::kPcieRxBytesPerS);
  const MetricMask gpm_expected =
      kGpmMask & ~Bit(GpuMetric::kGpmNvlinkTxBytesPerS) & ~Bit(GpuMetric::kGpmNvlinkRxBytesPerS);
  EXPECT_EQ(p[0].supported, nvml_expected | gpm_expected);
  EXPECT_STREQ(p[0].reason[static_cast<int>(GpuMetric::kGpmNvlinkTxBytesPerS)], "Not Supported");
  EXPECT_NE(std::string(p[0].reason[static_cast<int>(GpuMetric::kPcieTxBytesPerS)]).find("20 ms"),
            std::string::npos);

  EXPECT_FALSE(p[1].gpm);
  EXPECT_STREQ(p[1].gpm_reason, "GPM not supported on this GPU (needs Hopper or newer)");
  EXPECT_EQ(p[1].supported, nvml_expected & ~Bit(GpuMetric::kPowerLimitW));
  EXPECT_STREQ(p[1].reason[static_cast<int>(GpuMetric::kPowerLimitW)], "Not Supported");
  EXPECT_TRUE(p[1].processes);
  EXPECT_FALSE(p[1].process_util);
  EXPECT_STREQ(p[1].process_util_reason, "Insufficient Permissions");
}

TEST(NvmlBackendTest, ReadsAndConvertsUnits) {
  NvmlBackend nvml(Fake());
  const char* why = nullptr;
  ASSERT_TRUE(nvml.Open(&why));
  GpuProbe p[2];
  nvml.Probe(p);
  GpuReadings r;
  nvml.Read(0, p[0].supported & kNvmlMask, &r);
  EXPECT_EQ(r.failed, 0u);
  EXPECT_EQ(r.valid, p[0].supported & kNvmlMask);
  EXPECT_EQ(V(r, GpuMetric::kGpuUtil), 97);
  EXPECT_EQ(V(r, GpuMetric::kMemUtil), 41);
  EXPECT_EQ(V(r, GpuMetric::kSmClockMhz), 1980);
  EXPECT_EQ(V(r, GpuMetric::kMemClockMhz), 3201);
  EXPECT_EQ(V(r, GpuMetric::kClockEventReasons), 0x24);
  EXPECT_DOUBLE_EQ(V(r, GpuMetric::kPowerW), 612.25);  // mW -> W
  EXPECT_DOUBLE_EQ(V(r, GpuMetric::kPowerLimitW), 700.0);
  EXPECT_EQ(V(r, GpuMetric::kTemperatureC), 61);
  EXPECT_EQ(V(r, GpuMetric::kMemoryUsedBytes), 80e9);
}

TEST(NvmlBackendTest, PcieThroughputWhenAskedFor) {
  NvmlBackend::Options o = Fake();
  o.nvml_pcie_throughput = true;
  NvmlBackend nvml(o);
  const char* why = nullptr;
  ASSERT_TRUE(nvml.Open(&why));
  GpuProbe p[2];
  nvml.Probe(p);
  ASSERT_TRUE(p[0].supported & Bit(GpuMetric::kPcieTxBytesPerS));
  GpuReadings r;
  nvml.Read(0, Bit(GpuMetric::kPcieTxBytesPerS) | Bit(GpuMetric::kPcieRxBytesPerS), &r);
  EXPECT_EQ(V(r, GpuMetric::kPcieTxBytesPerS), 1000 * 1024.0);  // KB/s -> bytes/s
  EXPECT_EQ(V(r, GpuMetric::kPcieRxBytesPerS), 2000 * 1024.0);
}

TEST(NvmlBackendTest, GpmMetricsBetweenTwoSnapshots) {
  NvmlBackend nvml(Fake());
  const char* why = nullptr;
  ASSERT_TRUE(nvml.Open(&why));
  GpuProbe p[2];
  nvml.Probe(p);
  ASSERT_TRUE(nvml.GpmSnapshot(0, 0));
  ASSERT_TRUE(nvml.GpmSnapshot(0, 1));
  GpuReadings r;
  nvml.GpmRead(0, 0, 1, p[0].supported & kGpmMask, &r);
  EXPECT_EQ(r.valid, p[0].supported & kGpmMask);
  EXPECT_EQ(V(r, GpuMetric::kGpmSmUtil), 2 * 10 + 1);      // NVML id 2, one snapshot apart
  EXPECT_EQ(V(r, GpuMetric::kGpmTensorUtil), 5 * 10 + 1);  // ANY_TENSOR_UTIL = 5
  EXPECT_EQ(V(r, GpuMetric::kGpmDramBwUtil), 10 * 10 + 1);
  EXPECT_EQ(V(r, GpuMetric::kGpmFp64Util), 11 * 10 + 1);
  EXPECT_EQ(V(r, GpuMetric::kGpmPcieRxBytesPerS), (21 * 10 + 1) * 1048576.0);  // MiB/s -> bytes/s
  // Asked for anyway, NVLink fails per metric with its reason.
  GpuReadings n;
  nvml.GpmRead(0, 0, 1, Bit(GpuMetric::kGpmNvlinkTxBytesPerS) | Bit(GpuMetric::kGpmSmUtil), &n);
  EXPECT_EQ(n.valid, Bit(GpuMetric::kGpmSmUtil));
  EXPECT_EQ(n.failed, Bit(GpuMetric::kGpmNvlinkTxBytesPerS));
  EXPECT_FALSE(nvml.GpmSnapshot(1, 0));  // no GPM samples on GPU 1
}

TEST(NvmlBackendTest, ProcessesWithMemoryAndAveragedUtilization) {
  NvmlBackend nvml(Fake());
  const char* why = nullptr;
  ASSERT_TRUE(nvml.Open(&why));
  GpuProbe p[2];
  nvml.Probe(p);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  GpuProcessReading procs[8];
  bool more = true;
  size_t n = nvml.ReadProcesses(0, procs, 8, &more);
  EXPECT_FALSE(more);
  ASSERT_EQ(n, 3u);
  EXPECT_EQ(procs[0].pid, 100u);
  EXPECT_TRUE(procs[0].has_memory);
  EXPECT_EQ(procs[0].memory_bytes, 1000000u);
  EXPECT_TRUE(procs[0].has_sm_util);
  EXPECT_DOUBLE_EQ(procs[0].sm_util_pct, 50.0);  // two samples: 40 and 60
  EXPECT_EQ(procs[1].pid, 101u);
  EXPECT_FALSE(procs[1].has_memory);  // NVML_VALUE_NOT_AVAILABLE
  EXPECT_FALSE(procs[1].has_sm_util);
  EXPECT_EQ(procs[2].pid, 555u);  // only in the utilization samples
  EXPECT_FALSE(procs[2].has_memory);
  EXPECT_DOUBLE_EQ(procs[2].sm_util_pct, 7.0);

  FakeControl(1, 1);  // no new utilization samples
  n = nvml.ReadProcesses(0, procs, 8, &more);
  FakeControl(1, 0);
  ASSERT_EQ(n, 2u);
  EXPECT_FALSE(procs[0].has_sm_util);  // no sample in the interval: no value, not 0

  n = nvml.ReadProcesses(0, procs, 1, &more);
  EXPECT_EQ(n, 1u);
  EXPECT_TRUE(more);

  FakeControl(2, 300);  // more than NvmlBackend's buffer
  n = nvml.ReadProcesses(0, procs, 8, &more);
  FakeControl(2, 2);
  EXPECT_TRUE(more);

  char name[64];
  nvml.ProcessName(100, name, sizeof(name));
  EXPECT_STREQ(name, "python3.11");  // basename of nvmlSystemGetProcessName
}

TEST(NvmlBackendTest, VisibleDevicesSelectAndRenumber) {
  NvmlBackend::Options o = Fake();
  o.visible_devices = "GPU-bbbb";
  NvmlBackend nvml(o);
  const char* why = nullptr;
  ASSERT_TRUE(nvml.Open(&why));
  ASSERT_EQ(nvml.device_count(), 1u);
  EXPECT_EQ(nvml.ignored_device_count(), 1u);
  EXPECT_STREQ(nvml.device(0).name, "Fake T4");
  EXPECT_EQ(nvml.device(0).index, 1u);
  EXPECT_EQ(nvml.device(0).cuda_ordinal, 0u);
}

TEST(NvmlBackendTest, SamplerOverTheFakeLibrary) {
  NvmlBackend::Options o = Fake();
  auto host = std::make_unique<testing::FakeHost>();
  host->open_ok = false;
  SamplerOptions so;
  so.self_cost = false;
  Sampler s(std::make_unique<NvmlBackend>(o), std::move(host), so);
  testing::RecordingSink sink;
  ASSERT_TRUE(s.Init(&sink));
  ASSERT_EQ(sink.Caps("nvml").size(), 1u);
  EXPECT_STREQ(sink.Caps("nvml")[0]->reason, "2 GPUs: Fake H200, Fake T4");
  EXPECT_EQ(sink.CountDefs("gpm."), 9);  // GPU 0 without NVLink
  EXPECT_EQ(sink.CountDefs("nvml.power_limit_w"), 1);
  ASSERT_EQ(sink.Caps("gpm").size(), 2u);
  ASSERT_EQ(sink.Caps("gpm.nvlink_tx_bytes_per_s").size(), 1u);
  EXPECT_STREQ(sink.Caps("gpm.nvlink_tx_bytes_per_s")[0]->reason, "GPU 0: Not Supported");
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  s.SampleOnce(1000, &sink);
  s.SampleOnce(2000, &sink);
  EXPECT_EQ(sink.Values(sink.Def("gpm.sm_util"), 2000), std::vector<double>{21});
  ASSERT_EQ(sink.CountDefs("nvml.power_w"), 2);  // both GPUs, numbered as CUDA would
  for (const MetricDef& d : sink.defs) {
    if (std::string(d.name) != "nvml.power_w") continue;
    EXPECT_EQ(sink.Values(d.id, 2000), std::vector<double>{612.25});
    EXPECT_STREQ(d.label, d.device_id == 0 ? "GPU-aaaa0000-0000-0000-0000-000000000000"
                                           : "GPU-bbbb0000-0000-0000-0000-000000000000");
  }
  const MetricDef* util = sink.Def("nvml.process_sm_util", 100);
  ASSERT_NE(util, nullptr);
  EXPECT_STREQ(util->label, "python3.11");
  EXPECT_EQ(s.stats().gpu_read_failures.load(), 0u);
}

}  // namespace
}  // namespace gpscope::metrics
