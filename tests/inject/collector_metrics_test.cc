// The metrics sampler inside the real injected library, without a GPU:
// a forked child dlopens libgpscope_inject.so, calls InitializeInjection
// with the stand-in libcupti (tests/inject/fake_cupti.cc, no kernels) and
// the stand-in libnvidia-ml
// (tests/metrics/fake_nvml.cc), runs a while and exits; the test
// reads the trace back and checks what the sampler thread -> ring -> writer
// thread path wrote: descriptors before samples, the canned NVML values,
// GPM rates, host metrics of the child's own pid, timestamps inside the
// child's lifetime, CUDA_VISIBLE_DEVICES numbering, and GPSCOPE_METRICS=0.
// The child then "creates CUDA contexts" (the stand-in's fake_cupti_start,
// on the devices in FAKE_CUPTI_CONTEXTS, default 0): only those GPUs are
// sampled, and a child that creates none leaves no trace file.
#include <dirent.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tools/reader/batch_decode.h"
#include "tools/reader/trace_reader.h"

namespace gpscope {
namespace {

uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

struct Collected : reader::ChunkVisitor {
  std::map<uint32_t, proto::MetricDescriptor> descriptors;
  std::vector<std::pair<std::string, std::string>> capabilities;  // component, reason (unavailable)
  std::vector<format::MetricSample> samples;
  uint32_t samples_before_descriptor = 0;
  uint32_t pid = 0;
  bool ended = false;
  absl::Status OnChunk(const reader::ChunkContext&, const proto::Chunk& c) override {
    if (c.has_header()) pid = c.header().pid();
    if (c.has_end()) ended = true;
    if (!c.has_batch()) return absl::OkStatus();
    for (const auto& d : c.batch().metric_descriptors()) descriptors[d.id()] = d;
    for (const auto& n : c.batch().capabilities()) {
      if (!n.available()) capabilities.emplace_back(n.component(), n.reason());
    }
    reader::DecodedBatch b;
    absl::Status st = reader::DecodeBatch(c.batch(), &b);
    if (!st.ok()) return st;
    for (const auto& s : b.metrics) {
      if (descriptors.count(s.metric_id) == 0) ++samples_before_descriptor;
      samples.push_back(s);
    }
    return absl::OkStatus();
  }
  // Values of the metric `name` (on `device` for device metrics), in order.
  std::vector<format::MetricSample> Of(const std::string& name, int device = -1) const {
    std::vector<format::MetricSample> out;
    for (const auto& s : samples) {
      auto it = descriptors.find(s.metric_id);
      if (it == descriptors.end() || it->second.name() != name) continue;
      if (device >= 0 && it->second.device_id() != static_cast<uint32_t>(device)) continue;
      out.push_back(s);
    }
    return out;
  }
  const proto::MetricDescriptor* Descriptor(const std::string& name, uint32_t device) const {
    for (const auto& [id, d] : descriptors) {
      if (d.name() == name && d.device_id() == device) return &d;
    }
    return nullptr;
  }
};

class CollectorMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/collector_metrics_" + std::to_string(getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_EQ(system(("rm -rf '" + dir_ + "'").c_str()), 0);
  }
  // The child's traces go with a passing test; a failing one keeps them.
  void TearDown() override {
    if (!HasFailure()) {
      EXPECT_EQ(system(("rm -rf '" + dir_ + "'").c_str()), 0);
    }
  }

  // Runs the collector in a child with `env` for `run_ms`; returns the
  // child's lifetime in CLOCK_REALTIME ns and reads its trace into *out.
  void RunChild(const std::vector<std::pair<const char*, const char*>>& env, int run_ms,
                Collected* out, size_t expect_files = 1) {
    start_ns_ = RealtimeNs();
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      setenv("GPSCOPE_OUTPUT", dir_.c_str(), 1);
      setenv("GPSCOPE_CUPTI_PATH", GPSCOPE_FAKE_CUPTI, 1);
      setenv("GPSCOPE_CONTROL", "0", 1);
      setenv("GPSCOPE_FILE_MODE", "process", 1);
      setenv("GPSCOPE_NVML_PATH", GPSCOPE_FAKE_NVML, 1);
      setenv("GPSCOPE_LOG_LEVEL", "error", 1);
      unsetenv("GPSCOPE_CUPTI_MODE");
      unsetenv("GPSCOPE_METRICS");
      unsetenv("CUDA_VISIBLE_DEVICES");
      for (const auto& [k, v] : env) setenv(k, v, 1);
      void* lib = dlopen(GPSCOPE_INJECT_LIB, RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) _exit(10);
      auto init = reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection"));
      if (init == nullptr) _exit(11);
      init();
      // The application's first CUDA work: contexts (FAKE_CUPTI_CONTEXTS).
      if (void* fake = dlopen(GPSCOPE_FAKE_CUPTI, RTLD_NOW | RTLD_NOLOAD)) {
        if (auto start = reinterpret_cast<int (*)()>(dlsym(fake, "fake_cupti_start"))) start();
      }
      usleep(static_cast<useconds_t>(run_ms) * 1000);
      exit(0);  // atexit: the collector's final flush
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    end_ns_ = RealtimeNs();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    child_pid_ = static_cast<uint32_t>(pid);

    std::vector<std::string> files;
    if (DIR* d = opendir(dir_.c_str())) {
      while (dirent* e = readdir(d)) {
        std::string n = e->d_name;
        if (n.size() > 8 && n.substr(n.size() - 8) == ".gpscope") files.push_back(dir_ + "/" + n);
      }
      closedir(d);
    }
    ASSERT_EQ(files.size(), expect_files) << "trace files in " << dir_;
    if (expect_files == 0) return;
    absl::StatusOr<reader::TraceIndex> index = reader::ReadTraces(files, *out);
    ASSERT_TRUE(index.ok()) << index.status();
    ASSERT_TRUE(index->warnings.empty()) << index->warnings[0];
  }

  std::string dir_;
  uint64_t start_ns_ = 0, end_ns_ = 0;
  uint32_t child_pid_ = 0;
};

TEST_F(CollectorMetricsTest, SamplerThreadFeedsTheTraceThroughTheWriter) {
  Collected c;
  ASSERT_NO_FATAL_FAILURE(
      RunChild({{"GPSCOPE_METRICS_INTERVAL_MS", "20"}, {"FAKE_CUPTI_CONTEXTS", "0,1"}}, 400, &c));
  EXPECT_EQ(c.pid, child_pid_);
  EXPECT_TRUE(c.ended);
  EXPECT_EQ(c.samples_before_descriptor, 0u) << "a sample arrived before its descriptor";

  // Canned NVML readings of the two fake GPUs, numbered in NVML order.
  const proto::MetricDescriptor* util0 = c.Descriptor("nvml.gpu_util", 0);
  ASSERT_NE(util0, nullptr);
  EXPECT_EQ(util0->label(), "GPU-aaaa0000-0000-0000-0000-000000000000");
  std::vector<format::MetricSample> gpu0 = c.Of("nvml.gpu_util", 0);
  std::vector<format::MetricSample> gpu1 = c.Of("nvml.gpu_util", 1);
  // 400 ms at 20 ms: ~20 samples; allow a slow, shared CI machine.
  EXPECT_GE(gpu0.size(), 8u);
  EXPECT_LE(gpu0.size(), 25u);
  for (const auto& s : gpu0) EXPECT_EQ(s.value, 97.0);
  ASSERT_FALSE(gpu1.empty());
  for (const auto& s : gpu1) EXPECT_EQ(s.value, 3.0);

  // GPM rates need two snapshots; the fake GPU 0 has GPM, GPU 1 has not.
  EXPECT_FALSE(c.Of("gpm.sm_util", 0).empty());
  EXPECT_TRUE(c.Of("gpm.sm_util", 1).empty());

  // Host metrics are the child's own.
  bool rss_defined = false;
  for (const auto& [id, d] : c.descriptors) {
    if (d.name() == "host.rss_bytes") {
      rss_defined = true;
      EXPECT_EQ(d.pid(), child_pid_);
    }
  }
  EXPECT_TRUE(rss_defined);
  std::vector<format::MetricSample> rss = c.Of("host.rss_bytes");
  ASSERT_FALSE(rss.empty());
  EXPECT_GT(rss.back().value, 1e6);  // a process with a C++ runtime loaded

  // Timestamps: inside the child's life (the stand-in CUPTI clock is CLOCK_REALTIME), in order.
  for (size_t i = 0; i < gpu0.size(); ++i) {
    EXPECT_GE(gpu0[i].timestamp_ns, start_ns_);
    EXPECT_LE(gpu0[i].timestamp_ns, end_ns_);
    if (i > 0) {
      EXPECT_GT(gpu0[i].timestamp_ns, gpu0[i - 1].timestamp_ns);
    }
  }

  // What is missing is said once each, with a reason.
  std::multiset<std::string> missing;
  for (const auto& [component, reason] : c.capabilities) {
    missing.insert(component);
    EXPECT_FALSE(reason.empty()) << component;
  }
  EXPECT_EQ(missing.count("cupti"), 0u);
  for (const std::string& m : missing) EXPECT_LE(missing.count(m), 1u) << m;
}

TEST_F(CollectorMetricsTest, CudaVisibleDevicesNumbersGpusAsCudaDoes) {
  Collected c;
  ASSERT_NO_FATAL_FAILURE(RunChild({{"GPSCOPE_METRICS_INTERVAL_MS", "20"},
                                    {"CUDA_VISIBLE_DEVICES", "GPU-bbbb0000"}},
                                   200, &c));
  // Only the fake T4 is visible, and CUDA calls it device 0.
  const proto::MetricDescriptor* util0 = c.Descriptor("nvml.gpu_util", 0);
  ASSERT_NE(util0, nullptr);
  EXPECT_EQ(util0->label(), "GPU-bbbb0000-0000-0000-0000-000000000000");
  EXPECT_EQ(c.Descriptor("nvml.gpu_util", 1), nullptr);
  std::vector<format::MetricSample> gpu0 = c.Of("nvml.gpu_util", 0);
  ASSERT_FALSE(gpu0.empty());
  for (const auto& s : gpu0) EXPECT_EQ(s.value, 3.0);
}

// A rank of a multi-GPU job uses one GPU: it samples that one, not every
// GPU of the node (each rank reading all eight is 8x the NVML cost and
// duplicate series).
TEST_F(CollectorMetricsTest, OnlyTheGpusWithAContextAreSampled) {
  Collected c;
  ASSERT_NO_FATAL_FAILURE(
      RunChild({{"GPSCOPE_METRICS_INTERVAL_MS", "20"}, {"FAKE_CUPTI_CONTEXTS", "1"}}, 300, &c));
  EXPECT_EQ(c.Descriptor("nvml.gpu_util", 0), nullptr);
  ASSERT_NE(c.Descriptor("nvml.gpu_util", 1), nullptr);
  EXPECT_TRUE(c.Of("nvml.gpu_util", 0).empty());
  std::vector<format::MetricSample> gpu1 = c.Of("nvml.gpu_util", 1);
  EXPECT_GE(gpu1.size(), 5u);
  for (const auto& s : gpu1) EXPECT_EQ(s.value, 3.0);
  EXPECT_EQ(c.samples_before_descriptor, 0u);
  EXPECT_FALSE(c.Of("host.rss_bytes").empty());
}

// torchrun's agent initializes CUDA and never uses a GPU: no file, so a
// node's job leaves one file (its ranks'), not one more per agent.
TEST_F(CollectorMetricsTest, AProcessWithoutACudaContextLeavesNoFile) {
  Collected none;
  ASSERT_NO_FATAL_FAILURE(RunChild({{"FAKE_CUPTI_CONTEXTS", "none"}}, 150, &none, 0));
  // GPSCOPE_OPEN_AT=start: the file is made at CUDA initialization, as before.
  ASSERT_EQ(system(("rm -rf '" + dir_ + "'").c_str()), 0);
  Collected start;
  // 20 ms samples: a loaded machine can start the sampler late, and its
  // first sample comes one interval after that (at 100 ms, none in 150 ms).
  ASSERT_NO_FATAL_FAILURE(RunChild({{"FAKE_CUPTI_CONTEXTS", "none"},
                                    {"GPSCOPE_OPEN_AT", "start"},
                                    {"GPSCOPE_METRICS_INTERVAL_MS", "20"}},
                                   150, &start, 1));
  EXPECT_TRUE(start.ended);
  EXPECT_TRUE(start.Of("nvml.gpu_util").empty());  // no GPU in use: none sampled
  EXPECT_FALSE(start.Of("host.rss_bytes").empty());
}

TEST_F(CollectorMetricsTest, MetricsOffWritesNoSamplesAndSaysSo) {
  Collected c;
  ASSERT_NO_FATAL_FAILURE(RunChild({{"GPSCOPE_METRICS", "0"}}, 100, &c));
  EXPECT_TRUE(c.ended);
  EXPECT_TRUE(c.samples.empty());
  EXPECT_TRUE(c.descriptors.empty());
  bool said = false;
  for (const auto& [component, reason] : c.capabilities) {
    if (component == "metrics") said = reason.find("GPSCOPE_METRICS=0") != std::string::npos;
  }
  EXPECT_TRUE(said);
}

// Yield mode: metrics stay off even when asked for (on the H200 any running
// sampler thread next to torch.profiler's CUPTI hung CUDA start-up).
TEST_F(CollectorMetricsTest, YieldModeKeepsMetricsOffEvenWhenAskedFor) {
  Collected c;
  ASSERT_NO_FATAL_FAILURE(
      RunChild({{"GPSCOPE_CUPTI_MODE", "yield"}, {"GPSCOPE_METRICS", "1"}}, 100, &c));
  EXPECT_TRUE(c.ended);
  EXPECT_TRUE(c.samples.empty());
  bool said = false;
  for (const auto& [component, reason] : c.capabilities) {
    if (component == "metrics") said = reason.find("GPSCOPE_CUPTI_MODE=yield") != std::string::npos;
  }
  EXPECT_TRUE(said);
}

TEST_F(CollectorMetricsTest, MissingNvmlIsOneNoticeAndHostMetricsStillFlow) {
  Collected c;
  ASSERT_NO_FATAL_FAILURE(RunChild({{"GPSCOPE_METRICS_INTERVAL_MS", "20"},
                                    {"GPSCOPE_NVML_PATH", "/nonexistent/libnvidia-ml.so.1"}},
                                   200, &c));
  int nvml_notices = 0;
  for (const auto& [component, reason] : c.capabilities) {
    if (component == "nvml") {
      ++nvml_notices;
      EXPECT_NE(reason.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << reason;
    }
  }
  EXPECT_EQ(nvml_notices, 1);
  EXPECT_TRUE(c.Of("nvml.gpu_util").empty());
  EXPECT_FALSE(c.Of("host.rss_bytes").empty());
}

}  // namespace
}  // namespace gpscope
