// Tests of tools/monitor/monitor.h: the command line, the run loop with
// replayed NVML readings (no GPU) while clients scrape /metrics, NVML
// missing and GPUs lost mid-run, rotation in a real run, and the real
// binary under SIGTERM and SIGKILL; then `gpscope-analyze metrics` on the
// files it wrote.
#include "tools/monitor/monitor.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/tools/monitor/duty_trace.h"
#include "tools/analyze/metrics.h"
#include "tools/monitor/trace_files.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/trace_reader.h"

namespace gpscope::monitor {
namespace {

const std::string kReplay = std::string(GPSCOPE_MONITOR_DATA) + "/h200x2.replay";
const char kUuid0[] = "GPU-8c3f0000-0000-4000-8000-000000000000";

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/gpscope_monitor_test_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ + "/" + name) << text;
    return path_ + "/" + name;
  }

 private:
  std::string path_;
};

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

std::string Scrape(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
    const std::string req = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[16384];
      pollfd p{fd, POLLIN, 0};
      while (poll(&p, 1, 3000) > 0) {
        const ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) break;
        reply.append(buf, static_cast<size_t>(n));
      }
    }
  }
  close(fd);
  return reply;
}

std::vector<std::string> TraceFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& f : ListTraceFiles(dir, "gpscope-monitor_")) out.push_back(f.path);
  return out;
}

// What a set of files holds, read with the real reader.
struct Content {
  uint64_t headers = 0, ends = 0, samples = 0, damaged = 0, lost_intervals = 0;
  uint64_t undefined_samples = 0;  // ids with no descriptor earlier in the same file
  int end_reason = -1, end_signal = 0;
  bool truncated = false;
  std::string launcher;
  std::vector<std::string> notices;  // "component: reason"
};
class ContentVisitor : public reader::ChunkVisitor {
 public:
  absl::Status OnChunk(const reader::ChunkContext&, const proto::Chunk& chunk) override {
    if (chunk.has_header()) {
      ++c.headers;
      c.launcher = chunk.header().identity().launcher();
    }
    if (chunk.has_end()) {
      ++c.ends;
      c.end_reason = chunk.end().reason();
      c.end_signal = chunk.end().signal();
    }
    if (chunk.has_batch()) {
      for (const auto& n : chunk.batch().capabilities()) {
        c.notices.push_back(n.component() + ": " + n.reason());
      }
      c.lost_intervals += static_cast<uint64_t>(chunk.batch().lost_intervals_size());
      std::set<uint32_t>& ids = defined_[chunk.process_uid()];
      for (const auto& d : chunk.batch().metric_descriptors()) ids.insert(d.id());
      std::vector<format::MetricSample> s;
      EXPECT_TRUE(reader::DecodeMetrics(chunk.batch(), &s).ok());
      c.samples += s.size();
      for (const auto& one : s) c.undefined_samples += ids.count(one.metric_id) == 0;
    }
    return absl::OkStatus();
  }
  Content c;

 private:
  std::map<uint64_t, std::set<uint32_t>> defined_;  // by process_uid (one per file)
};
Content Read(const std::vector<std::string>& paths) {
  ContentVisitor v;
  absl::StatusOr<reader::TraceIndex> index = reader::ReadTraces(paths, v);
  EXPECT_TRUE(index.ok());
  if (index.ok()) {
    for (const reader::FileInfo& f : index->files) {
      EXPECT_TRUE(f.status.ok()) << f.path << ": " << f.status;
      v.c.damaged += f.damaged_regions;
      v.c.truncated |= f.truncated;
    }
  }
  return v.c;
}

MonitorOptions ReplayOptions(const std::string& out_dir) {
  MonitorOptions o;
  o.output_dir = out_dir;
  o.replay_path = kReplay;
  o.interval_ms = 100;
  o.listen = "none";
  o.hostname = "node-a";
  return o;
}

// ------------------------------------------------------------ command line --

TEST(MonitorArgsTest, DefaultsAreTheDocumentedOnes) {
  MonitorOptions o;
  std::ostringstream out, err;
  ASSERT_EQ(ParseMonitorArgs({}, &o, out, err), 0);
  EXPECT_EQ(o.interval_ms, 1000u);
  EXPECT_EQ(o.listen, "127.0.0.1:9464");
  EXPECT_EQ(o.limits.max_file_bytes, 64ull << 20);
  EXPECT_EQ(o.limits.max_file_age_ns, 3600ull * 1000000000ull);
  EXPECT_EQ(o.limits.max_total_bytes, 2048ull << 20);
  EXPECT_EQ(o.limits.max_files, 0u);
  EXPECT_EQ(err.str(), "");
}

TEST(MonitorArgsTest, ParsesEveryOption) {
  MonitorOptions o;
  std::ostringstream out, err;
  ASSERT_EQ(ParseMonitorArgs({"--output", "/tmp/x", "--interval-ms=100", "--max-file-mb", "0.5",
                              "--max-file-age", "15m", "--retention", "24,2GB", "--listen",
                              "[::1]:0", "--duration", "2.5", "--replay", kReplay,
                              "--zstd-level", "9"},
                             &o, out, err),
            0)
      << err.str();
  EXPECT_EQ(o.output_dir, "/tmp/x");
  EXPECT_EQ(o.interval_ms, 100u);
  EXPECT_EQ(o.limits.max_file_bytes, 512u * 1024);
  EXPECT_EQ(o.limits.max_file_age_ns, 900ull * 1000000000ull);
  EXPECT_EQ(o.limits.max_files, 24u);
  EXPECT_EQ(o.limits.max_total_bytes, 2ull << 30);
  EXPECT_EQ(o.listen, "[::1]:0");
  EXPECT_EQ(o.duration_s, 2.5);
  EXPECT_EQ(o.replay_path, kReplay);
  EXPECT_EQ(o.zstd_level, 9);
}

TEST(MonitorArgsTest, BadValuesGetOneLineAndExitStatus2) {
  const std::vector<std::vector<std::string>> bad = {
      {"--interval-ms", "50"},      {"--interval-ms", "abc"},   {"--max-file-mb", "0.01"},
      {"--max-file-age", "1x"},     {"--max-file-age", "0s"},   {"--retention", "10KB"},
      {"--retention", "0"},         {"--listen", "localhost"},  {"--duration", "-1"},
      {"--replay", "/no/such/file"}, {"--bogus", "1"},          {"--interval-ms"},
      {"positional"},               {"--zstd-level", "42"},
      {"--max-file-mb", "64", "--retention", "10MB"},
  };
  for (const auto& args : bad) {
    MonitorOptions o;
    std::ostringstream out, err;
    EXPECT_EQ(RunMonitor(args, out, err), 2) << args[0];
    EXPECT_EQ(CountOf(err.str(), "\n"), 1) << err.str();
    EXPECT_EQ(err.str().rfind("gpscope-monitor: ", 0), 0u) << err.str();
  }
}

TEST(MonitorArgsTest, HelpGoesToOutAndExitsZero) {
  std::ostringstream out, err;
  EXPECT_EQ(RunMonitor({"--help"}, out, err), 0);
  EXPECT_NE(out.str().find("--replay FILE"), std::string::npos);
  EXPECT_EQ(err.str(), "");
}

TEST(MonitorArgsTest, DurationsAndRetention) {
  uint64_t ns = 0;
  EXPECT_TRUE(ParseDurationNs("90", &ns));
  EXPECT_EQ(ns, 90ull * 1000000000ull);
  EXPECT_TRUE(ParseDurationNs("2h", &ns));
  EXPECT_EQ(ns, 7200ull * 1000000000ull);
  EXPECT_FALSE(ParseDurationNs("h", &ns));
  EXPECT_FALSE(ParseDurationNs("-5s", &ns));
  uint32_t files = 0;
  uint64_t bytes = 0;
  EXPECT_TRUE(ParseRetention("none", &files, &bytes));
  EXPECT_EQ(files, 0u);
  EXPECT_EQ(bytes, 0u);
  EXPECT_TRUE(ParseRetention("500MB", &files, &bytes));
  EXPECT_EQ(bytes, 500ull << 20);
  EXPECT_FALSE(ParseRetention("3,4", &files, &bytes));
  EXPECT_FALSE(ParseRetention("1MB,2MB", &files, &bytes));
  EXPECT_FALSE(ParseRetention("", &files, &bytes));
}

// ------------------------------------------------------------ run, in-process --

TEST(MonitorRunTest, ReplayRunServesMetricsWhileScrapedAndWritesAReadableFile) {
  TempDir dir;
  MonitorOptions o = ReplayOptions(dir.path() + "/out");
  o.duration_s = 3.0;
  o.listen = "127.0.0.1:0";
  std::atomic<uint16_t> port{0};
  o.on_listening = [&port](uint16_t p) { port.store(p); };
  std::atomic<bool> running{true};
  std::atomic<int> good_pages{0};
  std::string page;  // the last page with process series, owned by scraper 0
  std::vector<std::thread> scrapers;
  for (int t = 0; t < 4; ++t) {
    scrapers.emplace_back([&, t] {
      while (port.load() == 0 && running.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      while (running.load()) {
        const std::string reply = Scrape(port.load());
        if (reply.find("HTTP/1.1 200") == 0 && reply.find("pid=\"4242\"") != std::string::npos) {
          good_pages.fetch_add(1);
          if (t == 0) page = reply;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  std::ostringstream out, err;
  MonitorStats stats;
  const int code = RunMonitorWithOptions(o, out, err, &stats);
  running.store(false);
  for (auto& s : scrapers) s.join();
  ASSERT_EQ(code, 0) << err.str();

  // ~30 rounds of 100 ms in 3 s (never a burst after falling behind; fewer
  // on a loaded machine).
  EXPECT_GE(stats.rounds, 15u);
  EXPECT_LE(stats.rounds, 32u);
  EXPECT_GT(good_pages.load(), 10);
  EXPECT_GE(stats.scrapes, static_cast<uint64_t>(good_pages.load()));
  EXPECT_NE(err.str().find("REPLAYED"), std::string::npos) << err.str();
  EXPECT_LE(stats.log_lines, 3u) << err.str();

  const std::string uuid0 = std::string("uuid=\"") + kUuid0 + "\"";
  EXPECT_NE(page.find("# TYPE gpscope_gpu_sm_util_percent gauge"), std::string::npos);
  EXPECT_NE(page.find("gpscope_gpu_sm_util_percent{gpu=\"0\"," + uuid0 + "}"), std::string::npos);
  EXPECT_NE(page.find("gpscope_gpu_process_memory_bytes{gpu=\"0\"," + uuid0 +
                      ",pid=\"4242\",name=\"python3\"} 75161927680\n"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("gpscope_gpu_clock_event_active{gpu=\"0\"," + uuid0 +
                      ",reason=\"sw_power_cap\"}"),
            std::string::npos);
  EXPECT_NE(page.find("gpscope_gpu_info{gpu=\"1\",uuid=\"GPU-8c3f0001-0000-4000-8000-000000000001\","
                      "model=\"NVIDIA H200\",pci_bus_id=\"00000000:3B:00.0\"} 1"),
            std::string::npos);
  EXPECT_NE(page.find("gpscope_monitor_info{version="), std::string::npos);
  EXPECT_NE(page.find("backend=\"replay\"} 1"), std::string::npos);
  EXPECT_NE(page.find("gpscope_monitor_gpu_sampling_up 1\n"), std::string::npos);

  const std::vector<std::string> files = TraceFiles(dir.path() + "/out");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].find("gpscope-monitor_node-a_"), std::string::npos);
  const Content c = Read(files);
  EXPECT_EQ(c.headers, 1u);
  EXPECT_EQ(c.ends, 1u);
  EXPECT_EQ(c.end_reason, 1);  // END_EXIT: --duration
  EXPECT_EQ(c.launcher, "gpscope-monitor");
  EXPECT_EQ(c.damaged, 0u);

  // The analyzer reads it like any trace.
  analyze::MetricsOptions mo;
  mo.window_ns = 1000000000ull;
  const analyze::MetricsReport r = analyze::CollectMetrics(files, mo);
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[0].uuid, kUuid0);
  EXPECT_EQ(r.replayed.size(), 1u);
  ASSERT_GE(r.processes.size(), 3u);
  bool saw_4242 = false, shared = false, capped = false;
  for (const auto& p : r.processes) {
    if (p.pid == 4242) {
      saw_4242 = true;
      EXPECT_EQ(p.gpu, 0u);
      EXPECT_GE(p.sm.mean(), 70);
      EXPECT_EQ(p.memory.max, 75161927680.0);
    }
  }
  for (const auto& [w, gw] : r.gpus[1].windows) shared |= gw.pids.count(4343) && gw.pids.count(4344);
  for (const auto& [w, gw] : r.gpus[0].windows) capped |= gw.reason_hits[0] > 0;  // sw_power_cap
  EXPECT_TRUE(saw_4242);
  EXPECT_TRUE(shared);
  EXPECT_TRUE(capped);
}

TEST(MonitorRunTest, MissingNvmlIsRetriedWithBackoffAndLoggedOnce) {
  TempDir dir;
  MonitorOptions o = ReplayOptions(dir.path() + "/out");
  o.replay_path = dir.Write("missing.replay", "nvml missing libnvidia-ml.so.1: cannot open shared object file\n");
  o.duration_s = 2.5;
  o.retry_initial_ms = 100;
  o.retry_max_ms = 400;
  std::ostringstream out, err;
  MonitorStats stats;
  ASSERT_EQ(RunMonitorWithOptions(o, out, err, &stats), 0) << err.str();
  // Tries at about 0, 0.1, 0.3, 0.7, 1.1, 1.5, 1.9, 2.3 s: backoff, not every sample.
  EXPECT_GE(stats.gpu_init_attempts, 5u);
  EXPECT_LE(stats.gpu_init_attempts, 10u);
  EXPECT_EQ(stats.gpu_init_failures, stats.gpu_init_attempts);
  EXPECT_EQ(CountOf(err.str(), "GPU sampling unavailable: libnvidia-ml.so.1: cannot open"), 1)
      << err.str();
  EXPECT_EQ(stats.log_lines, 3u) << err.str();  // started, unavailable (once), stopped
  const Content c = Read(TraceFiles(dir.path() + "/out"));
  EXPECT_GT(c.samples, 0u);  // host metrics go on
  int nvml_notices = 0;
  for (const std::string& n : c.notices) nvml_notices += n.rfind("nvml: ", 0) == 0;
  EXPECT_EQ(nvml_notices, 1);
  EXPECT_EQ(c.ends, 1u);
}

// Device 1 answers for 3 steps, then every reading fails ("GPU is lost").
std::string LosingReplay() {
  std::string r =
      "device 0 GPU-aaaa NVIDIA H200\n"
      "device 1 GPU-bbbb NVIDIA H200\n";
  const char* metrics[] = {"nvml.gpu_util", "nvml.power_w", "nvml.memory_used_bytes", "gpm.sm_util"};
  for (int step = 0; step < 12; ++step) {
    r += "step\n";
    for (const char* m : metrics) {
      r += std::string(m) + " 0 50\n";
      r += step < 3 ? std::string(m) + " 1 40\n" : std::string("fail 1 ") + m + " GPU is lost\n";
    }
  }
  return r;
}

TEST(MonitorRunTest, LostGpuIsDroppedAndReinitializedWithBoundedLogging) {
  TempDir dir;
  MonitorOptions o = ReplayOptions(dir.path() + "/out");
  o.replay_path = dir.Write("losing.replay", LosingReplay());
  o.duration_s = 4.0;
  o.retry_initial_ms = 100;
  o.retry_max_ms = 400;
  o.listen = "127.0.0.1:0";
  std::atomic<uint16_t> port{0};
  o.on_listening = [&port](uint16_t p) { port.store(p); };
  std::ostringstream out, err;
  MonitorStats stats;
  ASSERT_EQ(RunMonitorWithOptions(o, out, err, &stats), 0) << err.str();
  // Each generation: 3 good rounds, 3 failing ones, then dropped; re-init
  // after 100, 200, 400, 400... ms.
  EXPECT_GE(stats.gpu_losses, 2u);
  EXPECT_LE(stats.gpu_losses, 8u);
  EXPECT_EQ(stats.gpu_init_failures, 0u);
  const std::string log = err.str();
  EXPECT_GE(CountOf(log, "GPU sampling lost: GPU 1: every reading failed for 3 samples"), 2) << log;
  EXPECT_LE(CountOf(log, "GPU sampling lost"), 5) << log;
  EXPECT_NE(log.find("GPU is lost"), std::string::npos) << log;
  EXPECT_GE(CountOf(log, "GPU sampling back after"), 1) << log;
  const std::vector<std::string> files = TraceFiles(dir.path() + "/out");
  const Content c = Read(files);
  EXPECT_GE(c.lost_intervals, 1u);
  EXPECT_EQ(c.ends, 1u);
  // GPU 0 kept being sampled across the re-initializations.
  analyze::MetricsOptions mo;
  mo.window_ns = 1000000000ull;
  const analyze::MetricsReport r = analyze::CollectMetrics(files, mo);
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_GE(r.gpus[0].windows.size(), 4u);
}

TEST(MonitorRunTest, AGpuMissingAfterReinitializationIsReportedAndTheRestSampled) {
  // The GPU side is re-created from the replay file at each initialization:
  // rewriting the file while the monitor runs stands for a GPU that is gone
  // from the node (fallen off the bus) when NVML comes back.
  TempDir dir;
  MonitorOptions o = ReplayOptions(dir.path() + "/out");
  o.replay_path = dir.Write("node.replay", LosingReplay());
  o.duration_s = 2.5;
  o.retry_initial_ms = 100;
  o.retry_max_ms = 400;
  std::thread rewrite([&] {
    // After the first initialization read the file, before GPU 1's loss
    // (3 good and 3 failing samples at 100 ms).
    while (TraceFiles(dir.path() + "/out").empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::string one = "device 0 GPU-aaaa NVIDIA H200\n";
    for (int step = 0; step < 5; ++step) one += "step\nnvml.gpu_util 0 50\ngpm.sm_util 0 45\n";
    const std::string tmp = dir.Write("node.replay.tmp", one);
    std::filesystem::rename(tmp, o.replay_path);
  });
  std::ostringstream out, err;
  MonitorStats stats;
  const int code = RunMonitorWithOptions(o, out, err, &stats);
  rewrite.join();
  ASSERT_EQ(code, 0) << err.str();
  EXPECT_EQ(stats.gpu_losses, 1u) << err.str();
  EXPECT_EQ(CountOf(err.str(), "1 of 2 GPUs seen before are missing now"), 1) << err.str();
  EXPECT_NE(err.str().find("GPU sampling back after 1 attempt(s): 1 GPU: NVIDIA H200"),
            std::string::npos)
      << err.str();
  analyze::MetricsOptions mo;
  mo.window_ns = 500000000ull;
  const analyze::MetricsReport r = analyze::CollectMetrics(TraceFiles(dir.path() + "/out"), mo);
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_GT(r.gpus[0].last_ns, r.gpus[1].last_ns + 1000000000ull);  // GPU 0 sampled on
}

TEST(MonitorRunTest, GpuSamplerIsRenewedBeforeItsProcessCapAndFilesStayConsistent) {
  TempDir dir;
  MonitorOptions o = ReplayOptions(dir.path() + "/out");
  o.duration_s = 2.5;
  o.max_gpu_processes = 66;  // renew at 2 (GPU, pid) pairs: when 4343 and 4344 arrive
  o.limits.max_file_age_ns = 1000000000ull;  // and rotate meanwhile
  std::ostringstream out, err;
  MonitorStats stats;
  ASSERT_EQ(RunMonitorWithOptions(o, out, err, &stats), 0) << err.str();
  EXPECT_GE(stats.gpu_renewals, 1u) << err.str();
  EXPECT_EQ(stats.gpu_losses, 0u);
  EXPECT_NE(err.str().find("renewing the GPU sampler after 3 (GPU, process) pairs"),
            std::string::npos)
      << err.str();
  const Content c = Read(TraceFiles(dir.path() + "/out"));
  EXPECT_GT(c.samples, 0u);
  EXPECT_EQ(c.undefined_samples, 0u);  // every file defines what it uses
  analyze::MetricsOptions mo;
  const analyze::MetricsReport r = analyze::CollectMetrics(TraceFiles(dir.path() + "/out"), mo);
  EXPECT_EQ(r.gpus.size(), 2u);  // one GPU series each across the renewals
}

#ifdef GPSCOPE_FAKE_NVML
TEST(MonitorRunTest, RealNvmlBackendThroughAStandInLibrary) {
  TempDir dir;
  MonitorOptions o;
  o.output_dir = dir.path();
  o.nvml_library = GPSCOPE_FAKE_NVML;
  o.interval_ms = 100;
  o.duration_s = 1.0;
  o.listen = "none";
  std::ostringstream out, err;
  MonitorStats stats;
  ASSERT_EQ(RunMonitorWithOptions(o, out, err, &stats), 0) << err.str();
  EXPECT_NE(err.str().find("GPU sampling up: 2 GPUs: Fake H200, Fake T4; NVML ("), std::string::npos)
      << err.str();
  EXPECT_EQ(stats.gpu_init_failures, 0u);
  analyze::MetricsOptions mo;
  const analyze::MetricsReport r = analyze::CollectMetrics(TraceFiles(dir.path()), mo);
  EXPECT_EQ(r.gpus.size(), 2u);
  EXPECT_TRUE(r.replayed.empty());
}
#endif

TEST(MonitorRunTest, RotatesByAgeAndKeepsTheRetentionInARealRun) {
  TempDir dir;
  MonitorOptions o = ReplayOptions(dir.path() + "/out");
  o.duration_s = 4.0;
  o.limits.max_file_age_ns = 1000000000ull;
  o.limits.max_files = 2;
  o.limits.max_total_bytes = 0;
  std::ostringstream out, err;
  MonitorStats stats;
  ASSERT_EQ(RunMonitorWithOptions(o, out, err, &stats), 0) << err.str();
  EXPECT_GE(stats.files_opened, 3u);
  EXPECT_EQ(stats.files_deleted, stats.files_opened - 2);
  const std::vector<std::string> files = TraceFiles(dir.path() + "/out");
  ASSERT_EQ(files.size(), 2u);
  for (const std::string& f : files) {
    const Content c = Read({f});
    EXPECT_EQ(c.headers, 1u) << f;
    EXPECT_EQ(c.ends, 1u) << f;
    EXPECT_GT(c.samples, 0u) << f;
    EXPECT_EQ(c.undefined_samples, 0u) << f;
    // Each file repeats what it needs: the GPUs and the notices.
    bool backend_notice = false;
    for (const std::string& n : c.notices) backend_notice |= n.rfind("monitor.backend: ", 0) == 0;
    EXPECT_TRUE(backend_notice) << f;
    analyze::MetricsOptions mo;
    EXPECT_EQ(analyze::CollectMetrics({f}, mo).gpus.size(), 2u) << f;
  }
}

// ------------------------------------------------------ the real binary --

// Starts gpscope-monitor with replayed readings; stderr goes to err_path.
pid_t Spawn(const std::string& out_dir, const std::string& err_path) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    execl(GPSCOPE_MONITOR_BINARY, GPSCOPE_MONITOR_BINARY, "--replay", kReplay.c_str(),
          "--interval-ms", "100", "--output", out_dir.c_str(), "--listen", "none",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// Waits until the monitor's file has grown past `bytes` (10 s at most).
bool WaitForData(const std::string& dir, uint64_t bytes) {
  for (int i = 0; i < 200; ++i) {
    for (const auto& f : ListTraceFiles(dir, "gpscope-monitor_")) {
      if (f.bytes >= bytes) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(MonitorProcessTest, SigtermEndsTheFileCleanly) {
  TempDir dir;
  const std::string out = dir.path() + "/out";
  const pid_t pid = Spawn(out, dir.path() + "/stderr");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitForData(out, 2048));
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const std::string log = Slurp(dir.path() + "/stderr");
  EXPECT_NE(log.find("stopped on Terminated"), std::string::npos) << log;
  const Content c = Read(TraceFiles(out));
  EXPECT_EQ(c.ends, 1u);
  EXPECT_EQ(c.end_reason, 2);  // END_SIGNAL
  EXPECT_EQ(c.end_signal, SIGTERM);
  EXPECT_EQ(c.damaged, 0u);
  EXPECT_FALSE(c.truncated);
}

TEST(MonitorProcessTest, SigkillLeavesAReadableFileThatTheAnalyzerReads) {
  TempDir dir;
  const std::string out = dir.path() + "/out";
  const pid_t pid = Spawn(out, dir.path() + "/stderr");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitForData(out, 2048));
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // past another flush
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  const std::vector<std::string> files = TraceFiles(out);
  ASSERT_EQ(files.size(), 1u);
  const Content c = Read(files);
  EXPECT_EQ(c.headers, 1u);
  EXPECT_EQ(c.ends, 0u);  // killed: no end chunk
  EXPECT_GT(c.samples, 100u);
  EXPECT_EQ(c.damaged, 0u);  // every frame landed whole
  EXPECT_EQ(c.undefined_samples, 0u);
  EXPECT_FALSE(c.truncated);

  analyze::MetricsOptions mo;
  mo.window_ns = 1000000000ull;
  const analyze::MetricsReport r = analyze::CollectMetrics(files, mo);
  EXPECT_EQ(r.gpus.size(), 2u);
  EXPECT_GE(r.processes.size(), 1u);
  std::ostringstream text, json, err;
  EXPECT_EQ(analyze::RunMetrics({files[0]}, text, err), 0) << err.str();
  EXPECT_NE(text.str().find("REPLAYED"), std::string::npos);
  EXPECT_NE(text.str().find("4242"), std::string::npos);
  EXPECT_EQ(analyze::RunMetrics({"--format", "json", "--window", "1s", files[0]}, json, err), 0);
  EXPECT_NE(json.str().find("\"pid\": 4242"), std::string::npos);
  EXPECT_NE(json.str().find("\"gpu_readings\": \"replayed (no GPU)\""), std::string::npos);
}

// ------------------------------------------------------------- --traces --

// The value of one series on a /metrics page; NaN when it is not there.
double Gauge(const std::string& page, const std::string& series) {
  const std::string line = "\n" + series + " ";
  const size_t at = page.find(line);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(page.c_str() + at + line.size(), nullptr);
}

// The window summaries in the monitor's files.
std::vector<proto::WindowSummary> Summaries(const std::vector<std::string>& paths) {
  struct Collect : reader::ChunkVisitor {
    std::vector<proto::WindowSummary> summaries;
    absl::Status OnChunk(const reader::ChunkContext&, const proto::Chunk& c) override {
      for (const auto& w : c.batch().window_summaries()) summaries.push_back(w);
      return absl::OkStatus();
    }
  } collect;
  EXPECT_TRUE(reader::ReadTraces(paths, collect).ok());
  return collect.summaries;
}

// Issue 24: a job under GPSCOPE_DUTY=1s/10s writes its trace in two steps
// (window 1, compute-bound; then the time off, window 2, idle-heavy, its
// end). With --traces on that directory the monitor summarizes each window
// when it closes, with the analyzer's analyses: the latest per process on
// /metrics (scraped over HTTP), every one in its own file, which
// `gpscope-analyze metrics` shows. A symbolic link and another user's file
// beside it are one log line each, and the monitor runs on.
TEST(MonitorRunTest, TracesSummarizesEachCaptureWindowOnMetricsAndInItsFile) {
  TempDir dir;
  const std::string traces = dir.path() + "/traces";
  ASSERT_EQ(mkdir(traces.c_str(), 0750), 0);
  const std::string job = traces + "/job-42_node7.gpscope";
  testing::DutyTrace d;
  testing::BuildDutyTrace(&d, "1s/10s");
  auto append = [&job](const uint8_t* data, size_t size) {
    std::ofstream f(job, std::ios::binary | std::ios::app);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  };
  append(d.bytes().data(), d.first_window_bytes);
  ASSERT_EQ(symlink(job.c_str(), (traces + "/link.gpscope").c_str()), 0);
  const bool root = geteuid() == 0;  // another user's file needs chown
  if (root) {
    const std::string other = traces + "/other.gpscope";
    std::ofstream(other, std::ios::binary)
        .write(reinterpret_cast<const char*>(d.bytes().data()),
               static_cast<std::streamsize>(d.bytes().size()));
    ASSERT_EQ(chown(other.c_str(), 12345, 12345), 0);
  }

  MonitorOptions o = ReplayOptions(dir.path() + "/out");
  o.listen = "127.0.0.1:0";
  o.trace_dirs = {traces};
  o.window_poll_ms = 50;
  o.window_settle_ns = 200000000;  // the synthetic windows lie in the past: closed 0.2 s after
  std::atomic<uint16_t> port{0};
  o.on_listening = [&port](uint16_t p) { port.store(p); };
  std::atomic<bool> stop{false};
  o.stop = &stop;
  std::ostringstream out, err;
  MonitorStats stats;
  int code = -1;
  std::thread run([&] { code = RunMonitorWithOptions(o, out, err, &stats); });
  auto page_with = [&port](const std::string& what) {
    for (int i = 0; i < 400; ++i) {
      if (port.load() != 0) {
        const std::string page = Scrape(port.load());
        if (page.find(what) != std::string::npos) return page;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return std::string();
  };
  const std::string process = "job=\"job-42\",host=\"node7\",rank=\"3\",pid=\"4242\"";
  const std::string gpu = process + ",gpu=\"0\",uuid=\"GPU-00000000-1111-2222-3333-444444444444\"";

  // Window 1: its GPSCOPE_DUTY time is over, nothing came after it.
  const std::string busy = page_with("gpscope_window_idle_share{" + gpu + "}");
  ASSERT_FALSE(busy.empty()) << err.str();
  EXPECT_LT(Gauge(busy, "gpscope_window_idle_share{" + gpu + "}"), 0.01) << busy;
  EXPECT_GT(Gauge(busy, "gpscope_window_busy_share{" + gpu + "}"), 0.95);
  EXPECT_NEAR(Gauge(busy, "gpscope_window_kernel_p50_seconds{" + gpu + "}"), 0.0019, 0.0002);
  EXPECT_GT(Gauge(busy, "gpscope_window_sm_utilization_percent{" + gpu + ",source=\"estimate\"}"),
            95);
  EXPECT_EQ(busy.find("gpscope_window_mem_bw_utilization_percent{"), std::string::npos)
      << "no GPM samples in the job's trace: not exposed";
  EXPECT_EQ(Gauge(busy, "gpscope_window_events_not_analysed{" + process + "}"), 0);
  EXPECT_NEAR(Gauge(busy, "gpscope_window_start_timestamp_seconds{" + process + "}"), 1.7e9 + 1,
              0.01);
  EXPECT_EQ(busy.find("severity=\"critical\""), std::string::npos) << busy;
  EXPECT_NE(busy.find("# TYPE gpscope_window_idle_share gauge"), std::string::npos);

  // Window 2 and the process's end arrive.
  append(d.bytes().data() + d.first_window_bytes, d.bytes().size() - d.first_window_bytes);
  const std::string top = "gpscope_window_top_finding{" + process +
                          ",rule=\"host-bound\",severity=\"critical\"}";
  const std::string idle = page_with(top);
  ASSERT_FALSE(idle.empty()) << err.str();
  EXPECT_GT(Gauge(idle, top), 0.8);
  EXPECT_GT(Gauge(idle, "gpscope_window_idle_share{" + gpu + "}"), 0.85);
  EXPECT_NEAR(Gauge(idle, "gpscope_window_kernel_p50_seconds{" + gpu + "}"), 0.0005, 0.00005);
  EXPECT_NEAR(Gauge(idle, "gpscope_window_start_timestamp_seconds{" + process + "}"), 1.7e9 + 19,
              0.01);
  EXPECT_EQ(CountOf(idle, "\ngpscope_window_idle_share{"), 1) << "only the latest window";
  EXPECT_EQ(Gauge(idle, "gpscope_monitor_windows_summarized_total"), 2);

  stop.store(true);
  run.join();
  ASSERT_EQ(code, 0) << err.str();
  EXPECT_EQ(stats.windows_summarized, 2u);
  EXPECT_EQ(stats.trace_files_refused, root ? 2u : 1u);
  EXPECT_EQ(CountOf(err.str(), "--traces: skipping"), root ? 2 : 1) << err.str();
  EXPECT_EQ(CountOf(err.str(), "link.gpscope: a symbolic link"), 1) << err.str();
  if (root) {
    EXPECT_EQ(CountOf(err.str(), "other.gpscope: belongs to uid 12345"), 1) << err.str();
  }

  // Both windows are in the monitor's file, in the order they closed.
  const std::vector<std::string> files = TraceFiles(dir.path() + "/out");
  const std::vector<proto::WindowSummary> written = Summaries(files);
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[0].close_reason(), "duty_schedule");
  EXPECT_EQ(written[0].job_id(), "job-42");
  EXPECT_EQ(written[0].rank(), 3);
  EXPECT_EQ(written[0].trace_path(), job);
  ASSERT_EQ(written[0].gpus_size(), 1);
  EXPECT_LT(written[0].gpus(0).idle_share(), 0.01);
  EXPECT_EQ(written[0].gpus(0).kernels(), 500u);
  EXPECT_NE(written[0].top_severity(), "critical");
  EXPECT_EQ(written[1].close_reason(), "process_end");
  EXPECT_EQ(written[1].top_rule(), "host-bound");
  EXPECT_EQ(written[1].top_severity(), "critical");
  ASSERT_EQ(written[1].gpus_size(), 1);
  EXPECT_GT(written[1].gpus(0).idle_share(), 0.85);
  EXPECT_EQ(written[1].gpus(0).kernels(), 200u);
  EXPECT_EQ(written[1].gpus(0).sm_util_pct() >= 0, true);

  // `gpscope-analyze metrics` lists them.
  std::ostringstream text, json, merr;
  EXPECT_EQ(analyze::RunMetrics(files, text, merr), 0) << merr.str();
  EXPECT_NE(text.str().find("Capture windows summarized by the monitor"), std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("host-bound (critical, "), std::string::npos) << text.str();
  EXPECT_EQ(CountOf(text.str(), " job-42 "), 2) << text.str();
  EXPECT_EQ(analyze::RunMetrics({"--format", "json", files[0]}, json, merr), 0);
  EXPECT_NE(json.str().find("\"capture_windows\": ["), std::string::npos);
  EXPECT_NE(json.str().find("\"close_reason\": \"duty_schedule\""), std::string::npos);
  EXPECT_NE(json.str().find("\"rule\": \"host-bound\""), std::string::npos);
  EXPECT_NE(json.str().find("\"capture_windows_repeated\": 0"), std::string::npos);

  // A restarted monitor summarizes the traces' windows again into a file of
  // its own; the metrics over both list each window once and say so.
  std::atomic<bool> stop2{false};
  o.stop = &stop2;
  port.store(0);
  std::ostringstream out2, err2;
  MonitorStats stats2;
  int code2 = -1;
  std::thread rerun([&] { code2 = RunMonitorWithOptions(o, out2, err2, &stats2); });
  EXPECT_FALSE(page_with("gpscope_monitor_windows_summarized_total 2").empty()) << err2.str();
  stop2.store(true);
  rerun.join();
  ASSERT_EQ(code2, 0) << err2.str();
  const std::vector<std::string> both = TraceFiles(dir.path() + "/out");
  ASSERT_EQ(both.size(), files.size() + 1);
  EXPECT_EQ(Summaries(both).size(), 4u);
  std::ostringstream text2, json2;
  EXPECT_EQ(analyze::RunMetrics(both, text2, merr), 0) << merr.str();
  EXPECT_EQ(CountOf(text2.str(), " job-42 "), 2) << text2.str();
  EXPECT_NE(text2.str().find("(2 summaries of windows listed here came again"), std::string::npos)
      << text2.str();
  std::vector<std::string> json_args = {"--format", "json"};
  json_args.insert(json_args.end(), both.begin(), both.end());
  EXPECT_EQ(analyze::RunMetrics(json_args, json2, merr), 0);
  EXPECT_NE(json2.str().find("\"capture_windows_repeated\": 2"), std::string::npos);
}

TEST(MonitorArgsTest, TracesOptions) {
  MonitorOptions o;
  std::ostringstream out, err;
  ASSERT_EQ(ParseMonitorArgs({"--traces", "/a", "--traces=/b", "--window-ttl", "15m",
                              "--window-max-events", "5000"},
                             &o, out, err),
            0)
      << err.str();
  EXPECT_EQ(o.trace_dirs, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(o.window_ttl_ns, 900ull * 1000000000ull);
  EXPECT_EQ(o.window_max_events, 5000u);
  MonitorOptions defaults;
  EXPECT_TRUE(defaults.trace_dirs.empty()) << "off unless asked for";
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"--traces", ""},
                                             {"--window-ttl", "0s"},
                                             {"--window-max-events", "10"}}) {
    std::ostringstream e;
    EXPECT_EQ(ParseMonitorArgs(bad, &o, out, e), 2) << bad[0];
    EXPECT_EQ(CountOf(e.str(), "\n"), 1) << e.str();
  }
}

TEST(MetricsCommandTest, BadUsageAndMissingFiles) {
  std::ostringstream out, err;
  EXPECT_EQ(analyze::RunMetrics({}, out, err), 2);
  EXPECT_EQ(analyze::RunMetrics({"--window", "0s", "x"}, out, err), 2);
  EXPECT_EQ(analyze::RunMetrics({"--format", "xml", "x"}, out, err), 2);
  std::ostringstream err2;
  EXPECT_EQ(analyze::RunMetrics({"/no/such.gpscope"}, out, err2), 1);
  EXPECT_NE(err2.str().find("/no/such.gpscope"), std::string::npos) << err2.str();
  EXPECT_EQ(CountOf(err2.str(), "\n"), 1);
}

}  // namespace
}  // namespace gpscope::monitor
