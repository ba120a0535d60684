// Call-site stacks (issue 20) in the real injected library, without a GPU:
// the stand-in libcupti (tests/inject/fake_cupti.cc) drives CUPTI's API
// callbacks from the child's own functions (fake_cupti_api_call), so the
// collector captures the child's real native stack (or, in the Python case,
// a real interpreter's frames), and the test reads the trace back: every
// StackSamples row joins its API record by (thread id, correlation id), its
// stack's innermost frame names the calling function (or file:line), frames
// come before the stacks that use them and stacks before their samples, and
// what could not be kept is counted as DROP_STACKS.
#include <dlfcn.h>
#include <sys/wait.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "inject/api_cbids.h"
#include "tests/inject/collector_child.h"

using ApiCallFn = uint32_t (*)(uint32_t domain, uint32_t cbid, uint32_t busy_us, uint32_t inner);

// The call sites the stacks must name: exported (the test links with
// -rdynamic) so dladdr names them, never inlined, never tail calls.
extern "C" __attribute__((noinline, visibility("default"))) uint32_t gpscope_test_sync_site(
    ApiCallFn call, uint32_t busy_us) {
  volatile uint32_t c = call(CUPTI_CB_DOMAIN_RUNTIME_API,
                             CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, busy_us, 0);
  return c;
}
extern "C" __attribute__((noinline, visibility("default"))) uint32_t gpscope_test_driver_site(
    ApiCallFn call) {
  volatile uint32_t c =
      call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, 20, 0);
  return c;
}
// A runtime copy whose inner driver call must not be captured again.
extern "C" __attribute__((noinline, visibility("default"))) uint32_t gpscope_test_copy_site(
    ApiCallFn call) {
  volatile uint32_t c = call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
                             20, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2);
  return c;
}
extern "C" __attribute__((noinline, visibility("default"))) uint32_t gpscope_test_launch_site(
    ApiCallFn call, uint32_t busy_us) {
  volatile uint32_t c = call(CUPTI_CB_DOMAIN_RUNTIME_API,
                             CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, busy_us, 0);
  return c;
}

namespace gpscope {
namespace {

using namespace collector_test;  // NOLINT: the fixture and its helpers

// Where the child writes "LABEL CORRELATION" lines (set before the fork).
std::string g_calls_path;

void Note(FILE* f, const char* label, uint32_t corr) { fprintf(f, "%s %u\n", label, corr); }

ApiCallFn CallFn(void* fake) {
  auto fn = reinterpret_cast<ApiCallFn>(dlsym(fake, "fake_cupti_api_call"));
  if (fn == nullptr) _exit(40);
  return fn;
}

std::multimap<std::string, uint32_t> ReadCalls() {
  std::multimap<std::string, uint32_t> out;
  std::ifstream in(g_calls_path);
  std::string label;
  uint32_t corr;
  while (in >> label >> corr) out.emplace(label, corr);
  return out;
}

std::vector<uint32_t> Calls(const std::multimap<std::string, uint32_t>& calls,
                            const std::string& label) {
  std::vector<uint32_t> out;
  auto [lo, hi] = calls.equal_range(label);
  for (auto it = lo; it != hi; ++it) out.push_back(it->second);
  return out;
}

class CollectorStacksTest : public CollectorCuptiTest {
 protected:
  void SetUp() override {
    CollectorCuptiTest::SetUp();
    g_calls_path = dir_ + "/calls.txt";
  }

  // The one sample per correlation id; fails on none or several.
  const Trace::StackSample* SampleOf(const Trace& t, uint32_t corr) {
    const Trace::StackSample* found = nullptr;
    int n = 0;
    for (const auto& s : t.stack_samples) {
      if (s.correlation_id == corr) {
        found = &s;
        ++n;
      }
    }
    EXPECT_EQ(n, 1) << "samples with correlation id " << corr;
    return n == 1 ? found : nullptr;
  }

  // Checks the sample's stack and frames are defined no later than it and
  // returns its innermost frame (null on failure).
  const proto::StackFrame* Innermost(const Trace& t, const Trace::StackSample& s) {
    auto st = t.stacks.find(s.stack_id);
    if (st == t.stacks.end()) {
      ADD_FAILURE() << "stack " << s.stack_id << " never defined";
      return nullptr;
    }
    EXPECT_LE(st->second.second, s.chunk) << "stack " << s.stack_id << " after its sample";
    const proto::Stack& stack = st->second.first;
    if (stack.frame_ids_size() == 0) {
      ADD_FAILURE() << "stack " << s.stack_id << " has no frames";
      return nullptr;
    }
    for (uint32_t id : stack.frame_ids()) {
      auto f = t.stack_frames.find(id);
      if (f == t.stack_frames.end()) {
        ADD_FAILURE() << "frame " << id << " never defined";
        return nullptr;
      }
      EXPECT_LE(f->second.second, st->second.second) << "frame " << id << " after its stack";
    }
    return &t.stack_frames.at(stack.frame_ids(0)).first;
  }

  const format::ApiCallEvent* ApiCall(const Trace& t, uint32_t corr) {
    for (const auto& a : t.api_calls) {
      if (a.correlation_id == corr) return &a;
    }
    return nullptr;
  }

  std::string Config(const Trace& t, const std::string& key) {
    for (const auto& kv : t.header->config()) {
      if (kv.key() == key) return kv.value();
    }
    return "<unset>";
  }
};

void SyncWorkload(void* fake) {
  ApiCallFn call = CallFn(fake);
  FILE* f = fopen(g_calls_path.c_str(), "w");
  if (f == nullptr) _exit(41);
  for (int i = 0; i < 20; ++i) Note(f, "sync", gpscope_test_sync_site(call, 20));
  for (int i = 0; i < 5; ++i) Note(f, "driver", gpscope_test_driver_site(call));
  for (int i = 0; i < 3; ++i) Note(f, "copy", gpscope_test_copy_site(call));
  fclose(f);
}

TEST_F(CollectorStacksTest, SyncCallsCarryNativeStacksThatJoinTheirApiRecordsAndNameTheCaller) {
  g_child_workload = SyncWorkload;
  ASSERT_NO_FATAL_FAILURE(RunToExit({}, Then::kWorkload));
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  const auto calls = ReadCalls();
  ASSERT_EQ(calls.size(), 28u);
  const std::map<std::string, std::string> site = {{"sync", "gpscope_test_sync_site"},
                                                   {"driver", "gpscope_test_driver_site"},
                                                   {"copy", "gpscope_test_copy_site"}};
  for (const auto& [label, corr] : calls) {
    SCOPED_TRACE(label + " " + std::to_string(corr));
    const Trace::StackSample* s = SampleOf(t, corr);
    ASSERT_NE(s, nullptr);
    const format::ApiCallEvent* a = ApiCall(t, corr);
    ASSERT_NE(a, nullptr) << "no API record";
    EXPECT_EQ(s->thread_id, a->thread_id) << "the sample joins its API record by thread";
    EXPECT_EQ(s->thread_id, child_pid_);
    EXPECT_EQ(s->trigger, static_cast<uint32_t>(proto::STACK_SYNC));
    EXPECT_GE(s->timestamp_ns, a->start_ns);
    EXPECT_LE(s->timestamp_ns, a->end_ns);
    const proto::StackFrame* f = Innermost(t, *s);
    ASSERT_NE(f, nullptr);
    // The collector's callback and the (fake) CUPTI's dispatch are dropped:
    // the innermost frame is the caller's.
    EXPECT_EQ(f->kind(), proto::FRAME_NATIVE);
    EXPECT_EQ(t.Str(f->function_id()), site.at(label));
    const std::string module = t.Str(f->file_id());
    EXPECT_NE(module.find("collector_stacks_test"), std::string::npos) << module;
    EXPECT_NE(f->build_id_id(), 0u) << "the test binary has a GNU build id";
    EXPECT_NE(f->module_offset(), 0u);
  }
  // The copy's inner driver call (correlation id + 1) has no stack of its own.
  for (uint32_t corr : Calls(calls, "copy")) {
    for (const auto& s : t.stack_samples) EXPECT_NE(s.correlation_id, corr + 1);
  }
  // One stack per call site, however often it was called.
  std::set<uint32_t> ids;
  for (const auto& s : t.stack_samples) ids.insert(s.stack_id);
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(t.stack_samples.size(), 28u);
  EXPECT_EQ(Config(t, "GPSCOPE_STACKS"), "1");
  EXPECT_EQ(Config(t, "GPSCOPE_STACK_SAMPLE_MS"), "1");
  auto py = t.Unavailable("stacks.python");
  ASSERT_EQ(py.size(), 1u);
  EXPECT_EQ(py[0]->reason(), "no CPython in this process");
  EXPECT_EQ(t.Dropped(proto::DROP_STACKS), 0u);
  EXPECT_TRUE(StderrLines().empty()) << Stderr();
  // The callbacks of exactly gpscope's call list were enabled.
  FakeStats stats;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&stats));
  size_t runtime = 0, driver = 0;
  for (const auto& c : stats.Calls("enable_callback")) {
    runtime += (c.arg >> 16) == CUPTI_CB_DOMAIN_RUNTIME_API && c.value == 1;
    driver += (c.arg >> 16) == CUPTI_CB_DOMAIN_DRIVER_API && c.value == 1;
  }
  EXPECT_EQ(runtime, std::size(inject::kRuntimeCbids));
  EXPECT_EQ(driver, std::size(inject::kDriverCbids));
}

TEST_F(CollectorStacksTest, AnUnsupportedCPythonIsOneInfoLineANoticeAndNativeStacks) {
  g_child_workload = SyncWorkload;
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"GPSCOPE_TEST_DLOPEN_GLOBAL", GPSCOPE_FAKE_PYTHON314},
                                     {"GPSCOPE_LOG_LEVEL", "info"}},
                                    Then::kWorkload));
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  auto py = t.Unavailable("stacks.python");
  ASSERT_EQ(py.size(), 1u);
  EXPECT_EQ(py[0]->reason(), "CPython 3.14.0 is not supported (3.9-3.13 are)");
  // One line (info level) about it, and no other naming the version.
  int lines = 0, python = 0;
  for (const std::string& l : StderrLines()) {
    lines += l.find("python stacks: CPython 3.14.0 is not supported (3.9-3.13 are)") !=
             std::string::npos;
    python += l.find("3.14.0") != std::string::npos;
  }
  EXPECT_EQ(lines, 1) << Stderr();
  EXPECT_EQ(python, 1) << Stderr();
  // The calls still get stacks: native ones, naming their callers.
  ASSERT_EQ(t.stack_samples.size(), 28u);
  for (const auto& s : t.stack_samples) {
    const proto::StackFrame* f = Innermost(t, s);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->kind(), proto::FRAME_NATIVE);
  }
}

void LaunchWorkload(void* fake) {
  ApiCallFn call = CallFn(fake);
  FILE* f = fopen(g_calls_path.c_str(), "w");
  if (f == nullptr) _exit(41);
  SleepMs(20);
  Note(f, "after_idle_1", gpscope_test_launch_site(call, 5));
  const uint64_t t0 = RealtimeNs();
  for (int i = 0; i < 400; ++i) Note(f, "burst", gpscope_test_launch_site(call, 50));
  Note(f, "burst_us", static_cast<uint32_t>((RealtimeNs() - t0) / 1000));
  SleepMs(20);
  Note(f, "after_idle_2", gpscope_test_launch_site(call, 5));
  fclose(f);
}

// Launches: the first after >= 5 ms away from CUDA, then at most one per
// GPSCOPE_STACK_SAMPLE_MS; 0 turns the time-based samples off.
class CollectorStackSamplingTest : public CollectorStacksTest,
                                   public ::testing::WithParamInterface<int> {};

TEST_P(CollectorStackSamplingTest, LaunchesGetStacksAfterIdleAndAtTheSamplingInterval) {
  const int sample_ms = GetParam();
  g_child_workload = LaunchWorkload;
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"GPSCOPE_STACK_SAMPLE_MS", std::to_string(sample_ms)}},
                                    Then::kWorkload));
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  const auto calls = ReadCalls();
  for (const char* label : {"after_idle_1", "after_idle_2"}) {
    SCOPED_TRACE(label);
    const std::vector<uint32_t> c = Calls(calls, label);
    ASSERT_EQ(c.size(), 1u);
    const Trace::StackSample* s = SampleOf(t, c[0]);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->trigger, static_cast<uint32_t>(proto::STACK_AFTER_IDLE));
    const proto::StackFrame* f = Innermost(t, *s);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(t.Str(f->function_id()), "gpscope_test_launch_site");
  }
  const std::vector<uint32_t> burst = Calls(calls, "burst");
  ASSERT_EQ(burst.size(), 400u);
  const std::set<uint32_t> in_burst(burst.begin(), burst.end());
  const double burst_ms = Calls(calls, "burst_us").at(0) / 1000.0;
  size_t sampled = 0;
  for (const auto& s : t.stack_samples) {
    if (!in_burst.count(s.correlation_id)) continue;
    // 50 us apart: never 5 ms away, unless this loaded machine preempted
    // the child that long (then it is rightly a capture after idle).
    if (s.trigger == proto::STACK_SAMPLED) ++sampled;
    EXPECT_TRUE(s.trigger == proto::STACK_SAMPLED || s.trigger == proto::STACK_AFTER_IDLE)
        << s.trigger;
  }
  if (sample_ms == 0) {
    EXPECT_EQ(sampled, 0u);
  } else {
    // At most one per interval (+1 for the interval the burst starts in),
    // and the burst spans >= 20 ms (400 x 50 us): several.
    EXPECT_LE(sampled, static_cast<size_t>(burst_ms / sample_ms) + 1) << burst_ms << " ms";
    EXPECT_GE(sampled, 3u) << burst_ms << " ms";
  }
  EXPECT_EQ(t.Dropped(proto::DROP_STACKS), 0u);
}

INSTANTIATE_TEST_SUITE_P(Interval, CollectorStackSamplingTest, ::testing::Values(1, 0));

void ManySyncsWorkload(void* fake) {
  ApiCallFn call = CallFn(fake);
  FILE* f = fopen(g_calls_path.c_str(), "w");
  if (f == nullptr) _exit(41);
  for (int i = 0; i < 3000; ++i) Note(f, "sync", gpscope_test_sync_site(call, 0));
  fclose(f);
}

TEST_F(CollectorStacksTest, AFullCaptureRingLosesStacksNotRecordsAndCountsThemAsDropStacks) {
  g_child_workload = ManySyncsWorkload;
  // Two slots: a burst of syncs faster than the writer drains fills it.
  ASSERT_NO_FATAL_FAILURE(
      RunToExit({{"@diag", "1"}, {"GPSCOPE_DIAG_STACK_RING", "2"}}, Then::kWorkload));
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  EXPECT_EQ(t.api_calls.size(), 3000u) << "every API record is kept";
  const uint64_t dropped = t.Dropped(proto::DROP_STACKS);
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(t.stack_samples.size() + dropped, 3000u) << "every stack is written or counted";
  for (const auto& d : t.drops) {
    if (d.reason() != proto::DROP_STACKS) continue;
    EXPECT_NE(d.detail().find("capture ring was full"), std::string::npos) << d.detail();
  }
  for (const auto& s : t.stack_samples) EXPECT_NE(s.stack_id, 0u);
}

TEST_F(CollectorStacksTest, StacksOffTakeNoCallbacksAndSaySoInTheTrace) {
  g_child_workload = SyncWorkload;
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"GPSCOPE_STACKS", "0"}}, Then::kWorkload));
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  EXPECT_EQ(t.api_calls.size(), 28u);
  EXPECT_TRUE(t.stack_samples.empty());
  EXPECT_TRUE(t.stacks.empty());
  EXPECT_TRUE(t.stack_frames.empty());
  EXPECT_EQ(Config(t, "GPSCOPE_STACKS"), "0");
  auto off = t.Unavailable("stacks");
  ASSERT_EQ(off.size(), 1u);
  EXPECT_EQ(off[0]->reason(), "GPSCOPE_STACKS=0");
  FakeStats stats;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&stats));
  for (const auto& c : stats.Calls("enable_callback")) {
    EXPECT_EQ(c.arg >> 16, static_cast<uint32_t>(CUPTI_CB_DOMAIN_RESOURCE));
  }
}

TEST_F(CollectorStacksTest, ABadSettingIsOneLineAndTheDefaultHolds) {
  g_child_workload = SyncWorkload;
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"GPSCOPE_STACKS", "sometimes"}}, Then::kWorkload));
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  EXPECT_EQ(Config(t, "GPSCOPE_STACKS"), "1");
  EXPECT_EQ(t.stack_samples.size(), 28u);
  const auto lines = StderrLines();
  ASSERT_EQ(lines.size(), 1u) << Stderr();
  EXPECT_NE(lines[0].find("GPSCOPE_STACKS='sometimes'"), std::string::npos) << lines[0];
}

void ThreadsWorkload(void* fake) {
  ApiCallFn call = CallFn(fake);
  // Four threads at once, then 300 short-lived ones one after another
  // (more than the 256 thread states: exited threads' states are reused).
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([call] {
      for (int j = 0; j < 200; ++j) gpscope_test_sync_site(call, 5);
    });
  }
  for (auto& th : threads) th.join();
  for (int i = 0; i < 300; ++i) {
    std::thread([call] { gpscope_test_sync_site(call, 5); }).join();
    if (i % 20 == 19) SleepMs(30);  // a writer drain or so between groups
  }
}

TEST_F(CollectorStacksTest, ConcurrentAndShortLivedThreadsGetTheirOwnStacks) {
  g_child_workload = ThreadsWorkload;
  ASSERT_NO_FATAL_FAILURE(RunToExit({}, Then::kWorkload));
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  std::string drops;
  for (const auto& d : t.drops) drops += " " + d.ShortDebugString();
  ASSERT_EQ(t.api_calls.size(), 1100u) << "drops:" << drops;
  std::map<uint32_t, const format::ApiCallEvent*> by_corr;
  for (const auto& a : t.api_calls) by_corr[a.correlation_id] = &a;
  std::map<uint32_t, int> per_thread;
  for (const auto& s : t.stack_samples) {
    auto a = by_corr.find(s.correlation_id);
    ASSERT_NE(a, by_corr.end()) << s.correlation_id;
    EXPECT_EQ(s.thread_id, a->second->thread_id);
    ++per_thread[s.thread_id];
    const proto::StackFrame* f = Innermost(t, s);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(t.Str(f->function_id()), "gpscope_test_sync_site");
  }
  // The four busy threads may outrun the writer (200 syncs in ~2 ms each
  // on this shared machine): what their 64-slot rings could not hold is
  // counted. Each short-lived thread's one stack is kept.
  EXPECT_EQ(t.stack_samples.size() + t.Dropped(proto::DROP_STACKS), 1100u);
  EXPECT_EQ(per_thread.size(), 304u);
  int single = 0;
  for (const auto& [tid, n] : per_thread) single += n == 1;
  EXPECT_GE(single, 300);
}

// The same through a real CPython (pyenv's 3.9-3.13, else /usr/bin): a
// script calls the fake's API entry through ctypes (which releases the GIL,
// as PyTorch does around its CUDA calls); the stacks are Python frames.
class CollectorPythonStacksTest : public CollectorStacksTest,
                                  public ::testing::WithParamInterface<const char*> {};

std::string FindPython(const std::string& version) {
  const std::string root = "/root/.pyenv/versions";
  if (DIR* d = opendir(root.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind(version + ".", 0) != 0) continue;
      const std::string py = root + "/" + n + "/bin/python" + version;
      if (access(py.c_str(), X_OK) == 0) {
        closedir(d);
        return py;
      }
    }
    closedir(d);
  }
  const std::string sys = "/usr/bin/python" + version;
  return access(sys.c_str(), X_OK) == 0 ? sys : "";
}

TEST_P(CollectorPythonStacksTest, PythonCallSitesAreNamedByFileAndLine) {
  const std::string version = GetParam();
  const std::string py = FindPython(version);
  if (py.empty()) {
    const char* skip = getenv("GPSCOPE_SKIP_PYTHON");
    const std::string list = std::string(",") + (skip ? skip : "") + ",";
    if (list.find(",all,") != std::string::npos || list.find("," + version + ",") != std::string::npos) {
      GTEST_SKIP() << "CPython " << version << " not installed (GPSCOPE_SKIP_PYTHON)";
    }
    FAIL() << "CPython " << version << " not found under /root/.pyenv/versions or /usr/bin: "
           << "install it or set GPSCOPE_SKIP_PYTHON=" << version;
  }
  const std::string script = GPSCOPE_SOURCE_DIR "/tests/inject/stacks_child.py";
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int err = open((dir_ + "/stderr.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err < 0 || dup2(err, STDERR_FILENO) < 0) _exit(20);
    setenv("GPSCOPE_OUTPUT", trace_dir_.c_str(), 1);
    setenv("GPSCOPE_FILE_MODE", "process", 1);
    setenv("GPSCOPE_CUPTI_PATH", GPSCOPE_FAKE_CUPTI, 1);
    setenv("GPSCOPE_METRICS", "0", 1);
    setenv("GPSCOPE_FLUSH_INTERVAL_MS", "100", 1);
    setenv("GPSCOPE_BUFFER_KB", "64", 1);
    setenv("GPSCOPE_LOG_LEVEL", "info", 1);
    setenv("GPSCOPE_CONTROL", "0", 1);
    unsetenv("PYTHONPATH");
    execl(py.c_str(), py.c_str(), "-S", script.c_str(), GPSCOPE_INJECT_LIB, GPSCOPE_FAKE_CUPTI,
          g_calls_path.c_str(), static_cast<char*>(nullptr));
    _exit(22);
  }
  child_ = pid;
  const int status = Wait();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "python child status " << status << "; stderr:\n" << Stderr();
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  // calls.txt: "sync CORR" (the script's line of the call in "line N").
  const auto calls = ReadCalls();
  const std::vector<uint32_t> lines = Calls(calls, "line");
  const std::vector<uint32_t> outer = Calls(calls, "outer_line");
  const std::vector<uint32_t> syncs = Calls(calls, "sync");
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_EQ(outer.size(), 1u);
  ASSERT_EQ(syncs.size(), 10u);
  auto on = t.Unavailable("stacks.python");
  EXPECT_TRUE(on.empty()) << on[0]->reason();
  for (uint32_t corr : syncs) {
    SCOPED_TRACE(corr);
    const Trace::StackSample* s = SampleOf(t, corr);
    ASSERT_NE(s, nullptr);
    const format::ApiCallEvent* a = ApiCall(t, corr);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(s->thread_id, a->thread_id);
    const proto::StackFrame* f = Innermost(t, *s);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->kind(), proto::FRAME_PYTHON);
    EXPECT_EQ(t.Str(f->file_id()), script);
    EXPECT_EQ(t.Str(f->function_id()), "sync_site");
    EXPECT_EQ(f->line(), lines[0]);
    // Its caller is the script's loop in main().
    const proto::Stack& st = t.stacks.at(s->stack_id).first;
    ASSERT_GE(st.frame_ids_size(), 2);
    const proto::StackFrame& caller = t.stack_frames.at(st.frame_ids(1)).first;
    EXPECT_EQ(t.Str(caller.function_id()), "main");
    EXPECT_EQ(caller.line(), outer[0]);
  }
  EXPECT_EQ(t.Dropped(proto::DROP_STACKS), 0u);
  EXPECT_NE(Stderr().find("python stacks: "), std::string::npos) << Stderr();
}

INSTANTIATE_TEST_SUITE_P(CPython, CollectorPythonStacksTest,
                         ::testing::Values("3.9", "3.10", "3.11", "3.12", "3.13"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) c = c == '.' ? '_' : c;
                           return "py" + n;
                         });

}  // namespace
}  // namespace gpscope
