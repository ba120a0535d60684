#include "metrics/replay_backend.h"

#include <gtest/gtest.h>

#include <string>

namespace gpscope::metrics {
namespace {

constexpr char kTwoGpus[] = R"(# two GPUs, the second without GPM
device 0 GPU-aaaa NVIDIA H200
pci 0 00000000:19:00.0
device 1 GPU-bbbb Tesla T4
unsupported 1 gpm GPM not supported on this GPU (needs Hopper or newer)
unsupported 1 nvml.power_limit_w NVML_ERROR_NOT_SUPPORTED
unsupported 1 process_util NVML_ERROR_NO_PERMISSION
step
nvml.gpu_util 0 97
nvml.power_w 0 650.5
gpm.sm_util 0 10
nvml.gpu_util 1 5
nvml.power_limit_w 1 70
gpm.sm_util 1 50
proc 0 4242 1073741824 88 python3 train.py
step
nvml.gpu_util 0 98
gpm.sm_util 0 20
fail 0 nvml.power_w NVML_ERROR_GPU_IS_LOST
proc 0 4242 1073741824 - python3 train.py
proc 0 5151 2048 12
step
nvml.gpu_util 0 99
gpm.sm_util 0 60
)";

TEST(ReplayBackendTest, DevicesAndSupportComeFromTheFile) {
  ReplayBackend r(kTwoGpus);
  ASSERT_TRUE(r.ok()) << r.error();
  const char* why = nullptr;
  ASSERT_TRUE(r.Open(&why));
  ASSERT_EQ(r.device_count(), 2u);
  EXPECT_STREQ(r.device(0).name, "NVIDIA H200");
  EXPECT_STREQ(r.device(0).uuid, "GPU-aaaa");
  EXPECT_STREQ(r.device(0).pci_bus_id, "00000000:19:00.0");
  EXPECT_STREQ(r.device(1).name, "Tesla T4");
  EXPECT_EQ(r.step_count(), 3u);

  GpuProbe p[2];
  r.Probe(p);
  EXPECT_TRUE(p[0].gpm);
  EXPECT_EQ(p[0].supported,
            Bit(GpuMetric::kGpuUtil) | Bit(GpuMetric::kPowerW) | Bit(GpuMetric::kGpmSmUtil));
  EXPECT_STREQ(p[0].reason[static_cast<int>(GpuMetric::kTemperatureC)],
               "not recorded in the replay");
  EXPECT_FALSE(p[1].gpm);
  EXPECT_STREQ(p[1].gpm_reason, "GPM not supported on this GPU (needs Hopper or newer)");
  EXPECT_EQ(p[1].supported, Bit(GpuMetric::kGpuUtil));  // gpm and the power limit removed
  EXPECT_STREQ(p[1].reason[static_cast<int>(GpuMetric::kPowerLimitW)], "NVML_ERROR_NOT_SUPPORTED");
  EXPECT_TRUE(p[1].processes);
  EXPECT_FALSE(p[1].process_util);
  EXPECT_STREQ(p[1].process_util_reason, "NVML_ERROR_NO_PERMISSION");
}

TEST(ReplayBackendTest, ReadsStepByStepAndStaysOnTheLast) {
  ReplayBackend r(kTwoGpus);
  GpuReadings g;
  r.Read(0, kAllGpuMetrics, &g);  // before the first step: nothing
  EXPECT_EQ(g.valid, 0u);
  const double expect[] = {97, 98, 99, 99, 99};
  for (double e : expect) {
    r.BeginSample(0);
    GpuReadings x;
    r.Read(0, Bit(GpuMetric::kGpuUtil), &x);
    ASSERT_TRUE(x.valid & Bit(GpuMetric::kGpuUtil));
    EXPECT_EQ(x.value[static_cast<int>(GpuMetric::kGpuUtil)], e);
  }
}

TEST(ReplayBackendTest, LoopWrapsAround) {
  ReplayBackend r(kTwoGpus, /*loop=*/true);
  const double expect[] = {97, 98, 99, 97, 98};
  for (double e : expect) {
    r.BeginSample(0);
    GpuReadings x;
    r.Read(0, Bit(GpuMetric::kGpuUtil), &x);
    EXPECT_EQ(x.value[static_cast<int>(GpuMetric::kGpuUtil)], e);
  }
}

TEST(ReplayBackendTest, FailLinesFailThatReadWithTheReason) {
  ReplayBackend r(kTwoGpus);
  r.BeginSample(0);
  r.BeginSample(0);
  GpuReadings x;
  r.Read(0, Bit(GpuMetric::kPowerW) | Bit(GpuMetric::kGpuUtil), &x);
  EXPECT_EQ(x.valid, Bit(GpuMetric::kGpuUtil));
  EXPECT_EQ(x.failed, Bit(GpuMetric::kPowerW));
  EXPECT_STREQ(x.error[static_cast<int>(GpuMetric::kPowerW)], "NVML_ERROR_GPU_IS_LOST");
}

TEST(ReplayBackendTest, GpmAveragesTheStepsBetweenTwoSnapshots) {
  ReplayBackend r(kTwoGpus);
  r.BeginSample(0);
  ASSERT_TRUE(r.GpmSnapshot(0, 0));  // step 0
  r.BeginSample(0);
  r.BeginSample(0);
  ASSERT_TRUE(r.GpmSnapshot(0, 1));  // step 2
  GpuReadings x;
  r.GpmRead(0, 0, 1, kGpmMask, &x);
  ASSERT_TRUE(x.valid & Bit(GpuMetric::kGpmSmUtil));
  EXPECT_DOUBLE_EQ(x.value[static_cast<int>(GpuMetric::kGpmSmUtil)], 40.0);  // (20 + 60) / 2
  EXPECT_FALSE(r.GpmSnapshot(1, 0));                                         // no GPM on device 1
}

TEST(ReplayBackendTest, ProcessesAndNames) {
  ReplayBackend r(kTwoGpus);
  r.BeginSample(0);
  r.BeginSample(0);
  GpuProcessReading p[4];
  bool more = true;
  ASSERT_EQ(r.ReadProcesses(0, p, 4, &more), 2u);
  EXPECT_FALSE(more);
  EXPECT_EQ(p[0].pid, 4242u);
  EXPECT_TRUE(p[0].has_memory);
  EXPECT_EQ(p[0].memory_bytes, 1073741824u);
  EXPECT_FALSE(p[0].has_sm_util);
  EXPECT_EQ(p[1].pid, 5151u);
  EXPECT_TRUE(p[1].has_sm_util);
  EXPECT_EQ(p[1].sm_util_pct, 12);
  ASSERT_EQ(r.ReadProcesses(0, p, 1, &more), 1u);
  EXPECT_TRUE(more);
  char name[32];
  r.ProcessName(4242, name, sizeof(name));
  EXPECT_STREQ(name, "python3 train.py");
  r.ProcessName(5151, name, sizeof(name));
  EXPECT_STREQ(name, "");
}

TEST(ReplayBackendTest, MissingNvmlFailsOpenWithTheReason) {
  ReplayBackend r("nvml missing libnvidia-ml.so.1: cannot open shared object file\n");
  ASSERT_TRUE(r.ok());
  const char* why = nullptr;
  EXPECT_FALSE(r.Open(&why));
  EXPECT_STREQ(why, "libnvidia-ml.so.1: cannot open shared object file");
}

TEST(ReplayBackendTest, ParseErrorsNameTheLine) {
  ReplayBackend r("device 0 GPU-a A\nstep\nnvml.gpu_util 0 abc\n");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error().find("line 3"), std::string::npos) << r.error();
  const char* why = nullptr;
  EXPECT_FALSE(r.Open(&why));
  EXPECT_FALSE(ReplayBackend("device 1 GPU-a A\n").ok());  // not dense
  EXPECT_FALSE(ReplayBackend("device 0 GPU-a A\nstep\nbogus.m 0 1\n").ok());
  EXPECT_FALSE(ReplayBackend("device 0 GPU-a A\nnvml.gpu_util 0 1\n").ok());  // before a step
}

TEST(ReplayBackendTest, UnreadableFileFailsOpen) {
  auto r = ReplayBackend::FromFile("/nonexistent/replay.txt");
  const char* why = nullptr;
  EXPECT_FALSE(r->Open(&why));
  EXPECT_NE(std::string(why).find("/nonexistent/replay.txt"), std::string::npos);
}

}  // namespace
}  // namespace gpscope::metrics
