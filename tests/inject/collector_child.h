// tests/inject/collector_child.h: the fixture of the collector tests that
// run the real libgpscope_inject.so with the stand-in libcupti
// (tests/inject/fake_cupti.cc) in a forked child: the child's environment,
// what it does once InitializeInjection returned, the trace read back with
// tools/reader and the fake's counters and call log.
// Used by collector_cupti_test.cc and collector_hardening_test.cc.
#ifndef GPSCOPE_TESTS_INJECT_COLLECTOR_CHILD_H_
#define GPSCOPE_TESTS_INJECT_COLLECTOR_CHILD_H_

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/control/control_channel.h"
#include "inject/api_cbids.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/trace_reader.h"

namespace gpscope::collector_test {

inline uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t MonotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000ull + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

inline void SleepMs(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

// Kernel i of the fake's workload, restated from fake_cupti.cc's header.
inline constexpr const char* kKernelNames[3] = {
    "_Z6vecAddPKfS0_Pfi", "_ZN4gemm6kernelILi128EEEvPKfS2_Pf",
    "void at::native::elementwise_kernel<128, 4>(int, at::native::Add)"};
inline constexpr uint32_t kFirstCorrelation = 1000;

// Everything the trace of one process holds, decoded.
struct Trace : reader::ChunkVisitor {
  std::map<uint32_t, std::string> strings;
  std::map<uint32_t, proto::LaunchConfig> launches;
  std::vector<proto::DeviceInfo> devices;
  std::vector<proto::ContextInfo> contexts;
  std::vector<proto::DropNotice> drops;
  std::vector<proto::CapabilityNotice> capabilities;
  std::vector<proto::ClockSnapshot> clocks;  // those of the batches
  std::vector<proto::LostInterval> lost;
  std::vector<format::KernelEvent> kernels;
  std::vector<format::MemcpyEvent> memcpys;
  std::vector<format::MemsetEvent> memsets;
  std::vector<format::SyncEvent> syncs;
  std::vector<format::ApiCallEvent> api_calls;
  std::vector<format::NvtxRangeEvent> ranges;
  std::vector<format::NvtxMarkEvent> marks;
  std::vector<format::OverheadEvent> overheads;
  std::optional<proto::ProcessHeader> header;
  std::optional<proto::ProcessEnd> end;
  // Call stacks, with the index (chunks so far) of the batch that brought each.
  struct StackSample {
    uint64_t timestamp_ns;
    uint32_t thread_id, correlation_id, stack_id, trigger;
    uint64_t chunk;
  };
  std::map<uint32_t, std::pair<proto::StackFrame, uint64_t>> stack_frames;
  std::map<uint32_t, std::pair<proto::Stack, uint64_t>> stacks;
  std::vector<StackSample> stack_samples;
  uint64_t chunks = 0;
  uint64_t events = 0;

  absl::Status OnChunk(const reader::ChunkContext&, const proto::Chunk& c) override {
    ++chunks;
    if (c.has_header()) header = c.header();
    if (c.has_end()) end = c.end();
    if (!c.has_batch()) return absl::OkStatus();
    const proto::EventBatch& b = c.batch();
    for (const auto& s : b.strings()) strings[s.id()] = s.value();
    for (const auto& l : b.launch_configs()) launches[l.id()] = l;
    devices.insert(devices.end(), b.devices().begin(), b.devices().end());
    contexts.insert(contexts.end(), b.contexts().begin(), b.contexts().end());
    drops.insert(drops.end(), b.drops().begin(), b.drops().end());
    capabilities.insert(capabilities.end(), b.capabilities().begin(), b.capabilities().end());
    clocks.insert(clocks.end(), b.clocks().begin(), b.clocks().end());
    lost.insert(lost.end(), b.lost_intervals().begin(), b.lost_intervals().end());
    for (const auto& f : b.stack_frames()) stack_frames[f.id()] = {f, chunks};
    for (const auto& st : b.stacks()) stacks[st.id()] = {st, chunks};
    if (b.has_stack_samples()) {
      const proto::StackSamples& ss = b.stack_samples();
      uint64_t ts = b.base_ns();
      int64_t corr = 0;
      for (int i = 0; i < ss.timestamp_delta_ns_size(); ++i) {
        ts += static_cast<uint64_t>(ss.timestamp_delta_ns(i));
        corr += ss.correlation_delta(i);
        stack_samples.push_back({ts, ss.thread_id(i), static_cast<uint32_t>(corr), ss.stack_id(i),
                                 static_cast<uint32_t>(ss.trigger(i)), chunks});
      }
    }
    reader::DecodedBatch d;
    absl::Status st = reader::DecodeBatch(b, &d);
    if (!st.ok()) return st;
    events += d.event_count();
    kernels.insert(kernels.end(), d.kernels.begin(), d.kernels.end());
    memcpys.insert(memcpys.end(), d.memcpys.begin(), d.memcpys.end());
    memsets.insert(memsets.end(), d.memsets.begin(), d.memsets.end());
    syncs.insert(syncs.end(), d.syncs.begin(), d.syncs.end());
    api_calls.insert(api_calls.end(), d.api_calls.begin(), d.api_calls.end());
    ranges.insert(ranges.end(), d.nvtx_ranges.begin(), d.nvtx_ranges.end());
    marks.insert(marks.end(), d.nvtx_marks.begin(), d.nvtx_marks.end());
    overheads.insert(overheads.end(), d.overheads.begin(), d.overheads.end());
    return absl::OkStatus();
  }

  std::string Str(uint32_t id) const {
    auto it = strings.find(id);
    return it == strings.end() ? "<undefined " + std::to_string(id) + ">" : it->second;
  }
  uint64_t Dropped(proto::DropReason reason) const {
    uint64_t n = 0;
    for (const auto& d : drops) n += d.reason() == reason ? d.count() : 0;
    return n;
  }
  int DropNotices(proto::DropReason reason) const {
    int n = 0;
    for (const auto& d : drops) n += d.reason() == reason ? 1 : 0;
    return n;
  }
  std::vector<const proto::CapabilityNotice*> Unavailable(const std::string& component) const {
    std::vector<const proto::CapabilityNotice*> out;
    for (const auto& c : capabilities) {
      if (c.component() == component && !c.available()) out.push_back(&c);
    }
    return out;
  }
};

// The fake's counters and call log (FAKE_CUPTI_STATS).
struct FakeStats {
  std::map<std::string, std::vector<std::string>> values;
  struct Call {
    uint64_t seq;
    std::string op;
    uint32_t arg;
    uint32_t value;
  };
  std::vector<Call> calls;

  uint64_t N(const std::string& key) const {
    auto it = values.find(key);
    return it == values.end() || it->second.empty() ? UINT64_MAX
                                                    : std::stoull(it->second[0]);
  }
  std::set<uint32_t> Set(const std::string& key) const {
    std::set<uint32_t> out;
    auto it = values.find(key);
    if (it != values.end()) {
      for (const std::string& v : it->second) out.insert(static_cast<uint32_t>(std::stoul(v)));
    }
    return out;
  }
  std::vector<Call> Calls(const std::string& op) const {
    std::vector<Call> out;
    for (const Call& c : calls) {
      if (c.op == op) out.push_back(c);
    }
    return out;
  }
  std::string Text(const std::string& key) const {
    auto it = values.find(key);
    return it == values.end() || it->second.empty() ? "" : it->second[0];
  }
};

inline bool ParseStats(const std::string& path, FakeStats* out) {
  std::string text = ReadFile(path);
  if (text.empty()) return false;
  for (const std::string& line : Lines(text)) {
    std::istringstream in(line);
    std::string key;
    in >> key;
    if (key == "event") {
      FakeStats::Call c;
      uint64_t time_ns;
      in >> c.seq >> time_ns >> c.op >> c.arg >> c.value;
      out->calls.push_back(c);
      continue;
    }
    std::vector<std::string>& v = out->values[key];
    for (std::string word; in >> word;) v.push_back(word);
  }
  return true;
}

// What the child does once InitializeInjection returned and the fake's
// workload is started.
enum class Then {
  kExit,              // exit(0) once the workload is written
  kExitAfterFlushes,  // ... and the fake saw at least 2 non-forced flushes
  kStay,              // stay alive until killed
  // The application inside CUDA calls (the fake's driver lock, which its
  // cuptiActivityFlushAll waits for):
  kTightLoop,         // calls of 50 us back to back, never sleeping, until killed
  kStuckInCall,       // one call that never returns, until killed
  kExitWithAThreadStuck,  // another thread stuck in a call, then exit(0)
  // Another profiler in the process (FAKE_OTHER_PROFILER=library, loaded
  // before InitializeInjection with FAKE_OTHER_PROFILER_EARLY=1, else after
  // the start and 350 ms for a rescan; RTLD_LAZY with FAKE_OTHER_PROFILER_LAZY=1):
  // it calls cuptiSubscribe and cuptiActivityRegisterCallbacks, writes their
  // results to other.txt, and the child exits once the workload is written.
  kOtherProfiler,
  // g_child_workload(fake library handle) on the main thread once the
  // workload is started, then exit(0) once the fake's workload is written.
  kWorkload,
};

// Then::kWorkload's code (set by the test before Start; the fork copies it).
inline void (*g_child_workload)(void* fake) = nullptr;

using Env = std::vector<std::pair<std::string, std::string>>;

class CollectorCuptiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A parameterized test's name holds '/': one directory level, always.
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) c = c == '/' ? '_' : c;
    dir_ = ::testing::TempDir() + "/collector_cupti_" + std::to_string(getpid()) + "_" + name;
    ASSERT_EQ(system(("rm -rf '" + dir_ + "' && mkdir -p '" + dir_ + "'").c_str()), 0);
    trace_dir_ = dir_ + "/trace";
    // Socket paths are short (sun_path): the control socket gets its own.
    static int serial = 0;
    control_dir_ = "/tmp/gpsct" + std::to_string(getpid()) + "_" + std::to_string(serial++);
    ASSERT_EQ(system(("rm -rf '" + control_dir_ + "'").c_str()), 0);
  }
  void TearDown() override {
    if (child_ > 0) {  // a failed assertion left it running
      kill(child_, SIGKILL);
      waitpid(child_, nullptr, 0);
    }
    ASSERT_EQ(system(("rm -rf '" + control_dir_ + "'").c_str()), 0);
    if (!HasFailure()) {  // a failed case's files stay for a look
      ASSERT_EQ(system(("rm -rf '" + dir_ + "'").c_str()), 0);
    }
  }

  // Forks the traced "application". GPSCOPE_* defaults for these tests,
  // then `env` on top.
  void Start(const Env& env, Then then, const char* cupti_path = GPSCOPE_FAKE_CUPTI) {
    fflush(stdout);
    fflush(stderr);
    start_ns_ = RealtimeNs();
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) RunChild(env, then, cupti_path);
    child_ = pid;
  }

  [[noreturn]] void RunChild(const Env& env, Then then, const char* cupti_path) {
    int err = open((dir_ + "/stderr.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err < 0 || dup2(err, STDERR_FILENO) < 0) _exit(20);
    setenv("GPSCOPE_OUTPUT", trace_dir_.c_str(), 1);
    setenv("GPSCOPE_FILE_MODE", "process", 1);
    setenv("GPSCOPE_CUPTI_PATH", cupti_path, 1);
    setenv("GPSCOPE_METRICS", "0", 1);
    setenv("GPSCOPE_FLUSH_INTERVAL_MS", "100", 1);
    setenv("GPSCOPE_BUFFER_KB", "64", 1);
    setenv("GPSCOPE_LOG_LEVEL", "warning", 1);
    setenv("FAKE_CUPTI_STATS", (dir_ + "/fake_stats.txt").c_str(), 1);
    setenv("GPSCOPE_CONTROL_DIR", control_dir_.c_str(), 1);
    for (const char* v : {"NVTX_INJECTION64_PATH", "GPSCOPE_CUPTI_MODE", "GPSCOPE_STANDBY",
                          "GPSCOPE_CAPTURE_DELAY_S", "GPSCOPE_CAPTURE_DURATION_S",
                          "GPSCOPE_CAPTURE_RANGE", "GPSCOPE_CAPTURE_RANGE_COUNT",
                          "GPSCOPE_CAPTURE_STEPS", "GPSCOPE_DUTY"}) {
      unsetenv(v);
    }
    // "@chdir" is no variable: the child's working directory. Nor "@diag":
    // the child loads the collector's diagnosis build, which alone reads the
    // GPSCOPE_DIAG_* switches (inject/diag_switches.h).
    const char* inject_lib = GPSCOPE_INJECT_LIB;
    for (const auto& [k, v] : env) {
      if (k == "@chdir") {
        if (chdir(v.c_str()) != 0) _exit(21);
      } else if (k == "@diag") {
        inject_lib = GPSCOPE_INJECT_DIAG_LIB;
      } else {
        setenv(k.c_str(), v.c_str(), 1);
      }
    }
    void* other = nullptr;
    const char* other_path = getenv("FAKE_OTHER_PROFILER");
    const int other_flags =
        (getenv("FAKE_OTHER_PROFILER_LAZY") != nullptr ? RTLD_LAZY : RTLD_NOW) | RTLD_LOCAL;
    if (then == Then::kOtherProfiler && getenv("FAKE_OTHER_PROFILER_EARLY") != nullptr) {
      // Its libcupti dependency is the stand-in the collector loads next.
      other = dlopen(other_path, other_flags);
      if (other == nullptr) _exit(30);
    }
    // A library whose symbols the collector must find with dlsym(RTLD_DEFAULT)
    // (an interpreter stand-in), loaded first.
    if (const char* global = getenv("GPSCOPE_TEST_DLOPEN_GLOBAL")) {
      if (dlopen(global, RTLD_NOW | RTLD_GLOBAL) == nullptr) _exit(33);
    }
    void* lib = dlopen(inject_lib, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) _exit(10);
    auto init = reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection"));
    if (init == nullptr || init() != 1) _exit(11);
    if (FILE* f = fopen((dir_ + "/child.txt").c_str(), "w")) {
      const char* nvtx = getenv("NVTX_INJECTION64_PATH");
      fprintf(f, "nvtx=%s\n", nvtx != nullptr ? nvtx : "");
      fclose(f);
    }
    // The fake is loaded only if the collector got that far.
    // (RTLD_NOLOAD still opens a path to compare inodes: not a FIFO's.)
    struct stat cupti_st{};
    void* fake = stat(cupti_path, &cupti_st) == 0 && S_ISREG(cupti_st.st_mode)
                     ? dlopen(cupti_path, RTLD_NOW | RTLD_NOLOAD)
                     : nullptr;
    if (fake != nullptr && dlsym(fake, "fake_cupti_start") != nullptr) {
      auto start = reinterpret_cast<int (*)()>(dlsym(fake, "fake_cupti_start"));
      auto wait_done = reinterpret_cast<int (*)(int)>(dlsym(fake, "fake_cupti_wait_done"));
      auto stat = reinterpret_cast<uint64_t (*)(const char*)>(dlsym(fake, "fake_cupti_stat"));
      if (start == nullptr || wait_done == nullptr || stat == nullptr) _exit(12);
      if (start() != 0) _exit(13);
      if (then == Then::kStay) {
        for (;;) pause();
      }
      auto call = reinterpret_cast<void (*)(uint32_t)>(dlsym(fake, "fake_cupti_app_call"));
      auto stuck = reinterpret_cast<void (*)()>(dlsym(fake, "fake_cupti_app_call_forever"));
      if (call == nullptr || stuck == nullptr) _exit(16);
      if (then == Then::kTightLoop) {
        for (;;) call(50);
      }
      if (then == Then::kStuckInCall) stuck();
      if (then == Then::kWorkload) {
        if (g_child_workload == nullptr) _exit(17);
        g_child_workload(fake);
      }
      if (then == Then::kOtherProfiler) {
        if (other == nullptr) {
          other = dlopen(other_path, other_flags);
          if (other == nullptr) _exit(31);
          SleepMs(350);  // a few periodic flushes: the writer rescans
        }
        auto subscribe = reinterpret_cast<int (*)()>(dlsym(other, "other_profiler_subscribe"));
        auto reg = reinterpret_cast<int (*)()>(dlsym(other, "other_profiler_register"));
        if (subscribe == nullptr || reg == nullptr) _exit(32);
        const int s = subscribe();
        const int r = reg();
        if (FILE* f = fopen((dir_ + "/other.txt").c_str(), "w")) {
          fprintf(f, "subscribe=%d register=%d\n", s, r);
          fclose(f);
        }
      }
      if (then == Then::kExitWithAThreadStuck) {
        std::thread(stuck).detach();
        while (stat("app_calls") == 0) SleepMs(1);
        SleepMs(300);  // a periodic flush is stuck behind it by now
        exit(0);
      }
      if (wait_done(8000) != 1) _exit(14);
      const uint64_t deadline = MonotonicMs() + 8000;
      while (then == Then::kExitAfterFlushes && stat("flushes") < 2) {
        if (MonotonicMs() > deadline) _exit(15);
        SleepMs(5);
      }
    } else if (then == Then::kStay) {
      for (;;) pause();
    }
    exit(0);  // atexit: the collector's final flush
  }

  // Waits for the child; its status.
  int Wait() {
    int status = 0;
    EXPECT_EQ(waitpid(child_, &status, 0), child_);
    end_ns_ = RealtimeNs();
    child_pid_ = static_cast<uint32_t>(child_);
    child_ = -1;
    return status;
  }

  // Waits at most timeout_ms for the child; a child still running then is
  // killed (SIGKILL) and *hung set.
  int WaitAtMost(int timeout_ms, bool* hung) {
    const uint64_t deadline = MonotonicMs() + static_cast<uint64_t>(timeout_ms);
    int status = 0;
    *hung = false;
    for (;;) {
      const pid_t r = waitpid(child_, &status, WNOHANG);
      if (r == child_) break;
      if (MonotonicMs() > deadline) {
        *hung = true;
        kill(child_, SIGKILL);
        waitpid(child_, &status, 0);
        break;
      }
      SleepMs(5);
    }
    end_ns_ = RealtimeNs();
    child_pid_ = static_cast<uint32_t>(child_);
    child_ = -1;
    return status;
  }

  void RunToExit(const Env& env, Then then = Then::kExit) {
    ASSERT_NO_FATAL_FAILURE(Start(env, then));
    int status = Wait();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "child status " << status << "; stderr:\n" << Stderr();
  }

  std::vector<std::string> TraceFiles() const {
    std::vector<std::string> files;
    if (DIR* d = opendir(trace_dir_.c_str())) {
      while (dirent* e = readdir(d)) {
        std::string n = e->d_name;
        struct stat st{};
        // Trace files only: not a link or FIFO planted under such a name.
        if (n.size() > 8 && n.substr(n.size() - 8) == ".gpscope" &&
            lstat((trace_dir_ + "/" + n).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
          files.push_back(trace_dir_ + "/" + n);
        }
      }
      closedir(d);
    }
    return files;
  }

  // 200 kernels, the periodic flush, then SIGKILL, with `extra` env.
  void RunPeriodicFlushThenSigkill(const Env& extra);

  // A 0.3 s window after 0.3 s of 2,000 kernels/s, with `extra` env: only
  // the window's kernels, LostInterval(TRACING_DISABLED) around it.
  void RunDelayWindow(const Env& extra);
  void DelayWindowTrace(const Env& extra, Trace* t);
  void ExpectOneLaunchRecordPerKernel(const Trace& t);

  // Reads the one trace file into *t; *index gets the reader's view.
  void ReadTrace(Trace* t, reader::TraceIndex* index = nullptr) {
    std::vector<std::string> files = TraceFiles();
    ASSERT_EQ(files.size(), 1u) << "one trace file expected in " << trace_dir_;
    absl::StatusOr<reader::TraceIndex> read = reader::ReadTraces(files, *t);
    ASSERT_TRUE(read.ok()) << read.status();
    ASSERT_TRUE(read->warnings.empty()) << read->warnings[0];
    ASSERT_EQ(read->processes.size(), 1u);
    if (index != nullptr) *index = *read;
  }

  void ReadStats(FakeStats* s) {
    ASSERT_TRUE(ParseStats(dir_ + "/fake_stats.txt", s)) << "no stats from the fake";
  }

  std::vector<std::string> StderrLines() const { return Lines(Stderr()); }
  std::string Stderr() const { return ReadFile(dir_ + "/stderr.txt"); }

  // Polls the trace of the running child until it holds `kernels` kernels.
  bool WaitForKernels(size_t kernels, int timeout_ms, Trace* out) {
    const uint64_t deadline = MonotonicMs() + static_cast<uint64_t>(timeout_ms);
    for (;;) {
      std::vector<std::string> files = TraceFiles();
      if (files.size() == 1) {
        Trace t;
        absl::StatusOr<reader::TraceIndex> read = reader::ReadTraces(files, t);
        if (read.ok() && t.kernels.size() >= kernels) {
          *out = std::move(t);
          return true;
        }
      }
      if (MonotonicMs() > deadline) return false;
      SleepMs(10);
    }
  }

  // Checks kernel i of the workload as the fake states it, t0 its start.
  static void ExpectKernel(const Trace& t, const format::KernelEvent& k, uint64_t i,
                           uint64_t t0) {
    SCOPED_TRACE("kernel " + std::to_string(i));
    EXPECT_EQ(t.Str(k.name_id), kKernelNames[i % 3]);
    EXPECT_EQ(k.start_ns, t0 + 10000 * i);
    EXPECT_EQ(k.end_ns, k.start_ns + 2000 + i);
    EXPECT_EQ(k.device_id, 0u);
    EXPECT_EQ(k.context_id, 1u);
    EXPECT_EQ(k.stream_id, 7 + 6 * (i % 2));
    EXPECT_EQ(k.correlation_id, kFirstCorrelation + i);
    EXPECT_EQ(k.graph_id, i % 10 == 9 ? 5u : 0u);
    EXPECT_EQ(k.graph_node_id, i % 10 == 9 ? 0x1000 + i : 0u);
    auto it = t.launches.find(k.launch_config_id);
    ASSERT_NE(it, t.launches.end()) << "launch config " << k.launch_config_id;
    const proto::LaunchConfig& l = it->second;
    EXPECT_EQ(l.grid_x(), 1 + i % 5);
    EXPECT_EQ(l.grid_y(), 2u);
    EXPECT_EQ(l.grid_z(), 1u);
    EXPECT_EQ(l.block_x(), 128u << (i % 2));
    EXPECT_EQ(l.block_y(), 1u);
    EXPECT_EQ(l.block_z(), 1u);
    EXPECT_EQ(l.registers_per_thread(), 32u);
    EXPECT_EQ(l.static_shared_memory_bytes(), 1024u);
    EXPECT_EQ(l.dynamic_shared_memory_bytes(), 256 * (i % 2));
    EXPECT_EQ(l.cluster_x(), 1u);
  }

  // The kernels hold exactly the workload's kernels 0..n-1 (any order).
  static void ExpectKernelPrefix(const Trace& t, uint64_t n, uint64_t t0) {
    ASSERT_EQ(t.kernels.size(), n);
    std::map<uint32_t, const format::KernelEvent*> by_correlation;
    for (const auto& k : t.kernels) by_correlation[k.correlation_id] = &k;
    ASSERT_EQ(by_correlation.size(), n) << "repeated correlation ids";
    uint64_t i = 0;
    for (const auto& [corr, k] : by_correlation) {
      ASSERT_EQ(corr, kFirstCorrelation + i) << "kernels missing before " << corr;
      ExpectKernel(t, *k, i, t0);
      if (::testing::Test::HasFailure()) return;  // one kernel's failures are enough
      ++i;
    }
  }

  std::string dir_, trace_dir_, control_dir_;
  pid_t child_ = -1;
  uint32_t child_pid_ = 0;
  uint64_t start_ns_ = 0, end_ns_ = 0;
};

inline void CollectorCuptiTest::RunPeriodicFlushThenSigkill(const Env& extra) {
  Env env = {{"FAKE_CUPTI_KERNELS", "200"}};
  env.insert(env.end(), extra.begin(), extra.end());
  ASSERT_NO_FATAL_FAILURE(Start(env, Then::kStay));
  // 200 kernels fit one buffer that only the periodic cuptiActivityFlushAll(0)
  // hands over; the flush interval is 100 ms.
  Trace live;
  ASSERT_TRUE(WaitForKernels(200, 5000, &live)) << "no periodic flush within 5 s";
  EXPECT_EQ(live.kernels.size(), 200u);
  EXPECT_FALSE(live.end.has_value());
  EXPECT_EQ(waitpid(child_, nullptr, WNOHANG), 0) << "the child should still run";
  // Each periodic chunk carries a clock snapshot (CUPTI time <-> wall time).
  ASSERT_FALSE(live.clocks.empty());
  EXPECT_GE(live.clocks[0].cupti_ns(), start_ns_);
  EXPECT_LE(live.clocks[0].cupti_ns(), RealtimeNs());
  EXPECT_NE(live.clocks[0].monotonic_ns(), 0u);
  ASSERT_EQ(kill(child_, SIGKILL), 0);
  int status = Wait();
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;

  Trace t;
  reader::TraceIndex index;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t, &index));  // no warnings: whole frames only
  EXPECT_FALSE(t.end.has_value());
  EXPECT_FALSE(index.processes[0].end.has_value());
  EXPECT_EQ(index.processes[0].lost_chunks, 0u);
  EXPECT_FALSE(index.files[0].truncated);
  EXPECT_EQ(t.kernels.size(), 200u);
}

// A 0.3 s window 0.3 s after start in a 2,000 kernels/s workload, ended by
// SIGTERM at 1.2 s: its trace.
inline void CollectorCuptiTest::DelayWindowTrace(const Env& extra, Trace* t) {
  Env env = {{"FAKE_CUPTI_KERNELS", "forever"},
             {"FAKE_CUPTI_RATE", "2000"},
             {"GPSCOPE_CAPTURE_DELAY_S", "0.3"},
             {"GPSCOPE_CAPTURE_DURATION_S", "0.3"}};
  env.insert(env.end(), extra.begin(), extra.end());
  ASSERT_NO_FATAL_FAILURE(Start(env, Then::kStay));
  SleepMs(1200);
  ASSERT_EQ(kill(child_, SIGTERM), 0);
  int status = Wait();
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status << Stderr();
  ASSERT_NO_FATAL_FAILURE(ReadTrace(t));
}

inline void CollectorCuptiTest::RunDelayWindow(const Env& extra) {
  Trace t;
  ASSERT_NO_FATAL_FAILURE(DelayWindowTrace(extra, &t));
  std::vector<proto::LostInterval> off;
  for (const auto& l : t.lost) {
    if (l.reason() == proto::LOST_TRACING_DISABLED) off.push_back(l);
  }
  ASSERT_EQ(off.size(), 2u) << "before and after the window";
  const uint64_t window_start = off[0].end_ns(), window_end = off[1].start_ns();
  EXPECT_GE(off[0].start_ns(), start_ns_);
  // The window starts 0.3 s after the collector did and lasts 0.3 s.
  EXPECT_NEAR(static_cast<double>(window_start - off[0].start_ns()), 0.3e9, 0.1e9);
  EXPECT_NEAR(static_cast<double>(window_end - window_start), 0.3e9, 0.1e9);
  ASSERT_GT(t.kernels.size(), 100u);  // 2,000 per second for 0.3 s
  for (const auto& k : t.kernels) {
    ASSERT_GE(k.start_ns, window_start);
    ASSERT_LT(k.start_ns, window_end);
  }
  ExpectOneLaunchRecordPerKernel(t);
  ASSERT_TRUE(t.end.has_value());
}

// Tracing switched on after the workload started still records the launch
// call of every kernel (the fake, like CUPTI 13.0 on the H200, ignores
// per-id API enables made then) and none of the calls gpscope leaves out.
inline void CollectorCuptiTest::ExpectOneLaunchRecordPerKernel(const Trace& t) {
  size_t launches = 0, others = 0;
  for (const auto& a : t.api_calls) {
    if (a.cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) {
      ++launches;
    } else {
      ++others;
    }
  }
  // A window's edge can fall between a launch call and its kernel, and with
  // gated kernels (GPSCOPE_DIAG_GATE_KERNELS, the diagnosis build) the API
  // kinds switch on a few ms after the gate opens: 5 of 600 kernels at
  // 2,000/s here.
  const double slack = std::max(2.0, 0.02 * static_cast<double>(t.kernels.size()));
  EXPECT_NEAR(static_cast<double>(launches), static_cast<double>(t.kernels.size()), slack)
      << "launch records in the window";
  EXPECT_EQ(others, 0u) << "cudaGetLastError is not among the recorded calls";
}

}  // namespace gpscope::collector_test

#endif  // GPSCOPE_TESTS_INJECT_COLLECTOR_CHILD_H_
