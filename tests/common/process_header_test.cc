// common/process_header.h: the one process-header builder, as the collector
// (a job's rank) and the node monitor (a program of its own) use it.
#include "common/process_header.h"

#include <gtest/gtest.h>

#include <string>

#include "proto/framing.h"

#include "gpscope_version.h"

namespace gpscope::common {
namespace {

std::string Str(format::StringRef r) { return r.data == nullptr ? "" : std::string(r.data, r.size); }

ProcessIdentity Rank3() {
  ProcessIdentity id;
  id.hostname = "node-7";
  id.pid = 4242;
  id.ppid = 4200;
  id.cmdline = {"python3", "train.py", "--steps=10"};
  id.exe_path = "/usr/bin/python3.11";
  id.job_id = "job-9";
  id.rank = 3;
  id.local_rank = 1;
  id.world_size = 8;
  id.node_rank = 1;
  id.launcher = "torchrun";
  id.env = {{"RANK", "3"}, {"NCCL_DEBUG", "INFO"}};
  id.driver_version = "580.159.04";
  return id;
}

TEST(ProcessHeaderTest, ARankRecordsItsIdentityConfigAndClock) {
  const ProcessIdentity id = Rank3();
  ProcessHeaderBuilder header(id);
  header.AddConfig({{"GPSCOPE_ENABLE", "1"}, {"GPSCOPE_JOB", "job-9"}});
  header.AddConfig({{"GPSCOPE_STANDBY", "0"}});
  header.SetClock({111, 2000000000000ull, 333});
  const format::ProcessHeaderRecord h = header.Build();

  EXPECT_EQ(h.format_version, format::kFormatVersion);
  EXPECT_EQ(Str(h.gpscope_version), GPSCOPE_VERSION);
  EXPECT_EQ(Str(h.hostname), "node-7");
  EXPECT_EQ(h.pid, 4242u);
  EXPECT_EQ(h.ppid, 4200u);
  ASSERT_EQ(h.cmdline_count, 3u);
  EXPECT_EQ(Str(h.cmdline[0]), "python3");
  EXPECT_EQ(Str(h.cmdline[2]), "--steps=10");
  EXPECT_EQ(Str(h.exe_path), "/usr/bin/python3.11");
  EXPECT_EQ(Str(h.driver_version), "580.159.04");
  EXPECT_EQ(Str(h.identity.job_id), "job-9");
  EXPECT_EQ(h.identity.rank, 3);
  EXPECT_EQ(h.identity.local_rank, 1);
  EXPECT_EQ(h.identity.world_size, 8);
  EXPECT_EQ(h.identity.node_rank, 1);
  EXPECT_EQ(Str(h.identity.launcher), "torchrun");
  ASSERT_EQ(h.env_count, 2u);
  EXPECT_EQ(Str(h.env[1].key), "NCCL_DEBUG");
  EXPECT_EQ(Str(h.env[1].value), "INFO");
  ASSERT_EQ(h.config_count, 3u);  // in the order added
  EXPECT_EQ(Str(h.config[0].key), "GPSCOPE_ENABLE");
  EXPECT_EQ(Str(h.config[2].key), "GPSCOPE_STANDBY");
  EXPECT_EQ(Str(h.config[2].value), "0");
  EXPECT_EQ(h.device_count, 0u);
  ASSERT_EQ(h.clock_count, 1u);
  EXPECT_EQ(h.clocks[0].cupti_ns, 111u);
  EXPECT_EQ(h.clocks[0].monotonic_ns, 333u);
  EXPECT_EQ(h.start_realtime_ns, 2000000000000ull);  // the clock's, by default
  EXPECT_EQ(h.cupti_api_version, 0u);                 // the collector's to fill
  EXPECT_EQ(h.cuda_driver_version, 0u);
}

TEST(ProcessHeaderTest, AProgramOfItsOwnHasNoJobAndItsOwnHostStartAndDevices) {
  const ProcessIdentity id = Rank3();  // a monitor started inside a job's environment
  ProcessHeaderBuilder header(id);
  header.SetHostname("override-host");
  header.SetProgram("gpscope-monitor");
  header.AddConfig("mode", "monitor");
  format::DeviceRecord gpu{};
  gpu.device_id = 1;
  gpu.name = format::MakeStringRef("NVIDIA H200");
  header.AddDevice(gpu);
  header.SetClock({0, 5000, 6000});
  header.SetStartRealtimeNs(1234);
  const format::ProcessHeaderRecord h = header.Build();

  EXPECT_EQ(Str(h.hostname), "override-host");
  EXPECT_EQ(h.pid, 4242u);
  EXPECT_EQ(h.identity.job_id.size, 0u);
  EXPECT_EQ(h.identity.rank, -1);
  EXPECT_EQ(h.identity.local_rank, -1);
  EXPECT_EQ(h.identity.world_size, 0);
  EXPECT_EQ(h.identity.node_rank, -1);
  EXPECT_EQ(Str(h.identity.launcher), "gpscope-monitor");
  EXPECT_EQ(h.env_count, 2u);  // the allow-listed environment is still recorded
  ASSERT_EQ(h.config_count, 1u);
  EXPECT_EQ(Str(h.config[0].value), "monitor");
  ASSERT_EQ(h.device_count, 1u);
  EXPECT_EQ(h.devices[0].device_id, 1u);
  EXPECT_EQ(Str(h.devices[0].name), "NVIDIA H200");
  EXPECT_EQ(h.start_realtime_ns, 1234u);
  EXPECT_EQ(h.clocks[0].realtime_ns, 5000u);
}

}  // namespace
}  // namespace gpscope::common
