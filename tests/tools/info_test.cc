// tests/tools/info_test.cc: `gpscope-analyze info`, through Run() with
// string streams (report content) and through the real binary (exit codes,
// stderr).
#include "tools/analyze/info.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tests/testing/trace_builder.h"
#include "tools/analyze/cli.h"

namespace gpscope::analyze {
namespace {

using testing::TraceBuilder;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "info_test." + std::to_string(getpid()) + "." + name;
}

// Two processes of a torchrun job on one node. Rank 0 exits cleanly; rank 1
// is a fork child that loses a frame, records drops, a lost interval and an
// unavailable capability, and never writes its end chunk. A burst of garbage
// sits between two frames.
void BuildJobTrace(TraceBuilder& trace) {
  TraceBuilder::Process& r0 = trace.AddProcess(0x00000000000000A0, 1000);
  TraceBuilder::Process& r1 = trace.AddProcess(0x00000000000000A1, 1001);
  for (int rank = 0; rank < 2; ++rank) {
    TraceBuilder::Process& p = rank == 0 ? r0 : r1;
    proto::ProcessHeader& h = p.header();
    h.set_hostname("node-7");
    h.clear_cmdline();
    h.add_cmdline("python");
    h.add_cmdline("train.py");
    h.add_cmdline("--epochs=3");
    proto::Identity* id = h.mutable_identity();
    id->set_job_id("4711");
    id->set_rank(rank);
    id->set_local_rank(rank);
    id->set_world_size(2);
    id->set_node_rank(0);
    id->set_launcher("torchrun");
    h.mutable_devices(0)->set_device_id(rank);
  }
  r1.header().set_ppid(1000);
  r0.WriteHeader();
  r1.WriteHeader();

  // CUPTI ns 1e9 is realtime 1.7e18 (2023-11-14 22:13:20 UTC) in DefaultHeader.
  const uint64_t t0 = 1'000'000'000;
  for (int i = 0; i < 10; ++i) r0.AddKernel(t0 + 1'000'000 + i * 100'000, 50'000, "gemm");
  format::MemcpyEvent copy{};
  copy.start_ns = t0 + 500'000;
  copy.end_ns = t0 + 600'000;
  copy.bytes = 1 << 20;
  copy.copy_kind = 1;
  r0.Add(copy);
  r0.Flush();
  const uint8_t garbage[40] = {1, 2, 3};
  trace.AppendBytes(garbage, sizeof(garbage));
  format::SyncEvent sync{};
  sync.start_ns = t0 + 3'000'000;
  sync.end_ns = t0 + 3'250'000;
  r0.Add(sync).Add(format::ApiCallEvent{t0 + 2'000'000, t0 + 2'000'500, 1, 211, 1000, 1, 0, 0});
  r0.WriteEnd();

  r1.AddKernel(t0 + 2'000'000, 10'000, "allreduce");
  r1.Add(format::NvtxRangeEvent{t0 + 1'500'000, t0 + 2'500'000, r1.Intern("step"), 0, 1001, 0});
  r1.Add(format::NvtxMarkEvent{t0 + 1'600'000, r1.Intern("ckpt"), 0, 1001});
  r1.Add(format::OverheadEvent{t0 + 1'700'000, t0 + 1'710'000, 2, 1001, 0});
  r1.Add(format::MetricSample{t0 + 1'800'000, 1, 97.5});
  r1.Add(format::MetricSample{t0 + 1'900'000, 1, 98.5});
  proto::DropNotice* drop = r1.batch().add_drops();
  drop->set_reason(proto::DROP_RING_FULL);
  drop->set_count(17);
  drop = r1.batch().add_drops();
  drop->set_reason(proto::DROP_CUPTI_REPORTED);
  drop->set_count(3);
  proto::LostInterval* lost = r1.batch().add_lost_intervals();
  lost->set_start_ns(t0 + 2'100'000);
  lost->set_end_ns(t0 + 2'200'000);
  lost->set_reason(proto::LOST_OTHER_PROFILER_ACTIVE);
  lost->set_detail("nsys attached");
  proto::CapabilityNotice* cap = r1.batch().add_capabilities();
  cap->set_component("gpm");
  cap->set_available(false);
  cap->set_reason("not supported on this GPU");
  r1.Flush();
  r1.SkipSequence(1).AddKernel(t0 + 4'000'000, 10'000, "allreduce").Flush();
}

struct Output {
  int code;
  std::string out;
  std::string err;
};

Output RunCli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = Run(args, out, err);
  return {code, out.str(), err.str()};
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The real executable, for what only a process shows: exit status, streams.
Output RunBinary(const std::vector<std::string>& args) {
  const std::string out_path = TempPath("stdout"), err_path = TempPath("stderr");
  const pid_t child = fork();
  if (child == 0) {
    std::vector<char*> argv;
    std::string binary = GPSCOPE_ANALYZE_BINARY;
    argv.push_back(binary.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (!freopen(out_path.c_str(), "w", stdout) || !freopen(err_path.c_str(), "w", stderr))
      _exit(99);
    execv(binary.c_str(), argv.data());
    _exit(98);
  }
  int status = 0;
  waitpid(child, &status, 0);
  Output o{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(out_path), ReadFile(err_path)};
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  return o;
}

// Works in a fresh directory with a short relative path, so the report's
// lines (and their wrapping) do not depend on where the test runs.
class InfoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = ::testing::TempDir() + "info_test.XXXXXX";
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    dir_ = dir;
    ASSERT_NE(getcwd(old_cwd_, sizeof(old_cwd_)), nullptr);
    ASSERT_EQ(chdir(dir_.c_str()), 0);
    TraceBuilder trace;
    BuildJobTrace(trace);
    ASSERT_TRUE(trace.WriteFile(path_));
  }
  void TearDown() override {
    unlink(path_.c_str());
    EXPECT_EQ(chdir(old_cwd_), 0);
    rmdir(dir_.c_str());
  }
  const std::string path_ = "job.gps";
  std::string dir_;
  char old_cwd_[4096];
};

constexpr char kGoldenText[] = R"(gpscope trace info: 1 file, 2 processes
time origin 2023-11-14T22:13:20.000500000Z (earliest event of all files; times are since it)

file job.gps
  format      version 1, 1.26 kB, 7 frames
  damage      1 damaged region, 40 bytes skipped

process 1000 on node-7  (uid 00000000000000a0)
  command     python train.py --epochs=3
  identity    job 4711, rank 0 of 2, local rank 0, node rank 0 (torchrun)
  versions    gpscope 0.1.0-test, CUDA driver API 13.0, CUPTI 130001, driver 580.159.04
  device 0    NVIDIA H100 80GB HBM3, 132 SMs, 85.5 GB, sm_90
              GPU-00000000-1111-2222-3333-444444444444, PCI 0000:18:00.0
  time span   2023-11-14 22:13:20.000500 .. 22:13:20.003250 UTC (2.75 ms)
  frames      4 read
  events      kernels 10  memcpys 1  memsets 0  syncs 1  api calls 1  nvtx ranges 0  nvtx marks 0
              overheads 0  metric samples 0
  end         exit, 13 events written, 0 dropped

process 1001 on node-7  (uid 00000000000000a1)
  command     python train.py --epochs=3
  identity    job 4711, rank 1 of 2, local rank 1, node rank 0 (torchrun)
  versions    gpscope 0.1.0-test, CUDA driver API 13.0, CUPTI 130001, driver 580.159.04
  device 1    NVIDIA H100 80GB HBM3, 132 SMs, 85.5 GB, sm_90
              GPU-00000000-1111-2222-3333-444444444444, PCI 0000:18:00.0
  time span   2023-11-14 22:13:20.001500 .. 22:13:20.004010 UTC (2.51 ms)
  frames      3 read, 1 LOST (sequence 2)
  events      kernels 2  memcpys 0  memsets 0  syncs 0  api calls 0  nvtx ranges 1  nvtx marks 1
              overheads 1  metric samples 2
  dropped     cupti reported 3 records, ring full 17 records
  lost        1 interval with incomplete data (UTC time, length, why):
              22:13:20.002100 (100 us)  other profiler active: nsys attached
  unavailable gpm: not supported on this GPU
  end         MISSING: the process did not exit cleanly (killed, crashed or still running)

warnings (2):
  job.gps: offset 707: no frame magic, skipped 40 bytes to next frame
  job.gps: offset 1182: process 1001 (uid 00000000000000a1): 1 frame lost (sequence 2 missing)
)";

TEST_F(InfoTest, TextReportMatchesGolden) {
  const Output o = RunCli({"info", path_});
  EXPECT_EQ(o.code, kExitOk);
  EXPECT_EQ(o.err, "");
  EXPECT_EQ(o.out, kGoldenText);
}

// Scripts depend on JSON keys and their order: check both, and the values
// the text golden does not show.
TEST_F(InfoTest, JsonReportHasStableKeysInOrder) {
  const Output o = RunCli({"info", "--format", "json", path_});
  ASSERT_EQ(o.code, kExitOk) << o.err;
  std::vector<std::string> keys;  // every key, in output order, for the first process
  const std::string json = o.out;
  const size_t first = json.find("\"processes\": [");
  const size_t second = json.find("\"process_uid\": \"00000000000000a1\"");
  ASSERT_NE(first, std::string::npos);
  ASSERT_NE(second, std::string::npos);
  for (absl::string_view line : absl::StrSplit(json.substr(first, second - first), '\n')) {
    const size_t q = line.find('"');
    const size_t colon = line.find("\": ");
    if (q != absl::string_view::npos && colon != absl::string_view::npos && q < colon) {
      keys.emplace_back(line.substr(q + 1, colon - q - 1));
    }
  }
  const std::vector<std::string> expected = {"processes",
                                             "process_uid",
                                             "pid",
                                             "path",
                                             "header_present",
                                             "hostname",
                                             "ppid",
                                             "cmdline",
                                             "exe_path",
                                             "identity",
                                             "job_id",
                                             "rank",
                                             "local_rank",
                                             "world_size",
                                             "node_rank",
                                             "launcher",
                                             "env",
                                             "gpscope_version",
                                             "cuda_driver_version",
                                             "cupti_api_version",
                                             "driver_version",
                                             "devices",
                                             "device_id",
                                             "name",
                                             "uuid",
                                             "pci_bus_id",
                                             "compute_capability",
                                             "sm_count",
                                             "global_memory_bytes",
                                             "first_event_ns",
                                             "last_event_ns",
                                             "first_event_time",
                                             "last_event_time",
                                             "clock_snapshots",
                                             "frames",
                                             "lost_frames",
                                             "sequence_gaps",
                                             "out_of_order_frames",
                                             "events",
                                             "kernels",
                                             "memcpys",
                                             "memsets",
                                             "syncs",
                                             "api_calls",
                                             "nvtx_ranges",
                                             "nvtx_marks",
                                             "overheads",
                                             "metric_samples",
                                             "undecodable_batches",
                                             "dropped",
                                             "lost_intervals",
                                             "capabilities",
                                             "clean_exit",
                                             "end",
                                             "reason",
                                             "signal",
                                             "end_ns",
                                             "chunks_written",
                                             "events_written",
                                             "events_dropped",
                                             "flush_timed_out"};
  EXPECT_EQ(keys, expected);
  for (const char* part :
       {"\"first_event_time\": \"2023-11-14T22:13:20.001500000Z\"",
        "\"dropped\": {\n        \"cupti_reported\": 3,\n        \"ring_full\": 17\n      }",
        "\"sequence_gaps\": [\n        {\n          \"first_sequence\": 2,\n          \"count\": 1",
        "\"reason\": \"other_profiler_active\"", "\"clean_exit\": false,\n      \"end\": null",
        "\"damaged_regions\": 1", "\"error\": null",
        "\"warnings_omitted\": 0\n}\n"}) {
    EXPECT_NE(json.find(part), std::string::npos) << part;
  }
  EXPECT_EQ(json.front(), '{');
}

TEST(InfoCommandTest, EveryTextLineFitsIn100Columns) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(1, 2);
  p.header().set_hostname(std::string(90, 'h') + "\n\x1b[2J");  // no raw control bytes out
  for (int i = 0; i < 40; ++i)
    p.header().add_cmdline("--some-long-option=value" + std::to_string(i));
  p.header().mutable_devices(0)->set_name(std::string(120, 'D'));
  p.WriteHeader();
  p.AddKernel(1'000'000'000, 5, "k");
  proto::LostInterval* lost = p.batch().add_lost_intervals();
  lost->set_start_ns(1'000'000'000);
  lost->set_detail(std::string(300, 'x') + " and some words after a very long one");
  p.Flush();
  const std::string path = TempPath(std::string(80, 'p') + ".gps");
  trace.AppendBytes("junk", 4);
  ASSERT_TRUE(trace.WriteFile(path));
  const Output o = RunCli({"info", path});
  ASSERT_EQ(o.code, kExitOk) << o.err;
  for (absl::string_view line : absl::StrSplit(o.out, '\n')) {
    EXPECT_LE(line.size(), 100u) << line;
  }
  EXPECT_EQ(o.out.find('\x1b'), std::string::npos);
  // Control characters are escaped, not dropped: "\n\x1b[2J" shows as text.
  EXPECT_NE(o.out.find(std::string(90, 'h') + "\\x0a\\x1b"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("[2J"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("--some-long-option=value0 --some-long-option=value1"), std::string::npos);
  EXPECT_NE(o.out.find("..."), std::string::npos);  // the command line was shortened
  EXPECT_NE(o.out.find("and some words after a very long one"), std::string::npos);  // wrapped
  unlink(path.c_str());
}

TEST(InfoCommandTest, AProcessWithoutHeaderOrEventsIsStillDescribed) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0xBEEF, 9);
  p.SkipSequence(1);
  p.WriteEnd();
  const std::string path = TempPath("headless.gps");
  ASSERT_TRUE(trace.WriteFile(path));
  const Output o = RunCli({"info", path});
  EXPECT_EQ(o.code, kExitOk);
  EXPECT_NE(o.out.find("process 9  (uid 000000000000beef)\n"
                       "  header      MISSING: its frame was lost or damaged; identity and devices "
                       "unknown\n"
                       "  time span   no events\n"
                       "  frames      1 read, 1 LOST (sequence 0)\n"),
            std::string::npos)
      << o.out;
  unlink(path.c_str());
}

// The allow-listed environment the collector recorded (CUDA_LAUNCH_BLOCKING
// and the like, the settings the findings cite) is shown as recorded: text
// and JSON, in order, repeated names kept.
TEST(InfoCommandTest, ShowsTheRecordedEnvironment) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0xE5, 11);
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"CUDA_LAUNCH_BLOCKING", "1"},
           {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"},
           {"NCCL_DEBUG", "INFO"}}) {
    proto::KeyValue* kv = p.header().add_env();
    kv->set_key(k);
    kv->set_value(v);
  }
  p.WriteHeader();
  p.WriteEnd();
  const std::string path = TempPath("env.gps");
  ASSERT_TRUE(trace.WriteFile(path));
  const Output text = RunCli({"info", path});
  EXPECT_EQ(text.code, kExitOk);
  EXPECT_NE(text.out.find("  environment CUDA_LAUNCH_BLOCKING=1  "
                          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"
                          "              NCCL_DEBUG=INFO\n"),
            std::string::npos)
      << text.out;
  const Output json = RunCli({"info", "--format", "json", path});
  EXPECT_EQ(json.code, kExitOk);
  EXPECT_NE(json.out.find("\"name\": \"CUDA_LAUNCH_BLOCKING\",\n          \"value\": \"1\""),
            std::string::npos)
      << json.out;
  unlink(path.c_str());
}

// ------------------------------------------------ the binary: exit codes

TEST_F(InfoTest, BinaryExitsZeroAndPrintsTheReport) {
  const Output o = RunBinary({"info", path_});
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.out, kGoldenText);
  EXPECT_EQ(o.err, "");
}

TEST_F(InfoTest, BinaryExitsOneWithOneStderrLinePerUnreadableFile) {
  const std::string missing = TempPath("missing.gps");
  const std::string not_trace = TempPath("notes.txt");
  std::ofstream(not_trace) << "not a trace\n";
  Output o = RunBinary({"info", missing});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err, "gpscope-analyze: " + missing + ": no such file\n");

  // The readable file is still reported; each bad one is one line.
  o = RunBinary({"info", path_, missing, not_trace});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "gpscope-analyze: " + missing + ": no such file\n" + "gpscope-analyze: " +
                       not_trace + ": not a gpscope trace (bad file magic)\n");
  EXPECT_NE(o.out.find("gpscope trace info: 3 files, 2 processes"), std::string::npos);
  EXPECT_NE(o.out.find("file NOT READ: " + missing + ": no such file"), std::string::npos);
  EXPECT_NE(o.out.find("process 1001 on node-7"), std::string::npos);
  unlink(not_trace.c_str());
}

TEST(InfoBinaryTest, UsageErrorsExitTwo) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{},
                                             {"frobnicate"},
                                             {"info"},
                                             {"info", "--format", "xml", "x.gps"},
                                             {"info", "--format"},
                                             {"info", "--colour", "x.gps"},
                                             {"info", "-v", "x.gps"}}) {
    const Output o = RunBinary(args);
    EXPECT_EQ(o.code, 2) << absl::StrJoin(args, " ");
    EXPECT_EQ(o.out, "");
    EXPECT_NE(o.err, "");
    if (!args.empty()) {  // bare invocation prints the usage; the rest one line
      EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
    }
  }
}

TEST(InfoBinaryTest, HelpAndVersionExitZero) {
  Output o = RunBinary({"--help"});
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(o.out.find("info"), std::string::npos);
  o = RunBinary({"info", "--help"});
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(o.out.find("--format text|json"), std::string::npos);
  o = RunBinary({"--version"});
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.out.rfind("gpscope-analyze ", 0), 0u) << o.out;
}

TEST(InfoBinaryTest, DamagedDataIsAWarningNotAFailure) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(5, 55);
  p.WriteHeader().AddKernel(1'000'000'000, 10, "k").Flush();
  trace.AppendBytes("GPSF torn", 9);
  const std::string path = TempPath("torn.gps");
  ASSERT_TRUE(trace.WriteFile(path));
  const Output o = RunBinary({"info", "--format=json", path});
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.err, "");
  EXPECT_NE(o.out.find("\"truncated\": true"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(": offset " + std::to_string(trace.bytes().size() - 9) + ": truncated"),
            std::string::npos)
      << o.out;
  unlink(path.c_str());
}

}  // namespace
}  // namespace gpscope::analyze
