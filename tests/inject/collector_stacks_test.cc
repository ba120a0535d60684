// Call-site stacks (issue 20) in the real injected library, without a GPU:
// the stand-in libcupti (tests/inject/fake_cupti.cc) drives CUPTI's API
// callbacks from the child's own functions (fake_cupti_api_call), so the
// collector captures the child's real native stack (or, in the Python case,
// a real interpreter's frames), and the test reads the trace back: every
// StackSamples row joins its API record by (thread id, correlation id), its
// stack's innermost frame names the calling function (or file:line), frames
// come before the stacks that use them and stacks before their samples, and
// what could not be kept is counted as DROP_STACKS.
//
// With GPSCOPE_API_SOURCE=callback (issue 24) the API records come from
// the same callbacks (CollectorApiCallbackTest): every listed call at every
// depth gives the row its activity record would (the same rows as the
// activity kinds give for the same calls, the stand-in recording nested
// calls as CUPTI does), kernels join their launch rows in the analyzer,
// only calls inside a capture window give rows, a full ring's losses are
// counted and shown, the rows need no stacks, and `stacks off` on the
// control socket leaves them on.
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "inject/api_cbids.h"
#include "inject/api_classes.h"
#include "proto/enums.h"
#include "tests/inject/collector_child.h"

using ApiCallFn = uint32_t (*)(uint32_t domain, uint32_t cbid, uint32_t busy_us, uint32_t inner);
using ApiCallResultFn = uint32_t (*)(uint32_t domain, uint32_t cbid, uint32_t busy_us,
                                     uint32_t inner, uint32_t result);
using KernelForFn = int (*)(uint32_t correlation);

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
// A kernel launched through the driver API directly (as JAX, CuPy and
// Triton launch theirs).
extern "C" __attribute__((noinline, visibility("default"))) uint32_t
gpscope_test_driver_launch_site(ApiCallFn call) {
  volatile uint32_t c = call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 5, 0);
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

  // The callbacks of exactly gpscope's call list were enabled; the
  // driver's launches as `driver_launches` says (in the activity mode they
  // wait for a direct driver-API call: CallSiteStacks::NoteDirectDriverCalls).
  enum class DriverLaunches { kOn, kOff, kEither };
  static void ExpectTheListedCallbacksEnabled(const FakeStats& stats,
                                              DriverLaunches driver_launches) {
    std::set<uint32_t> runtime, driver;
    for (const auto& c : stats.Calls("enable_callback")) {
      if (c.value != 1) continue;
      if ((c.arg >> 16) == CUPTI_CB_DOMAIN_RUNTIME_API) runtime.insert(c.arg & 0xffff);
      if ((c.arg >> 16) == CUPTI_CB_DOMAIN_DRIVER_API) driver.insert(c.arg & 0xffff);
    }
    EXPECT_EQ(runtime.size(), std::size(inject::kRuntimeCbids));
    size_t listed_driver = 0, driver_launch = 0, launches_on = 0;
    for (CUpti_CallbackId id : inject::kDriverCbids) {
      const bool launch =
          inject::ClassifyApi(CUPTI_CB_DOMAIN_DRIVER_API, id) == inject::ApiClass::kLaunch;
      driver_launch += launch;
      listed_driver += !launch && driver.count(id);
      launches_on += launch && driver.count(id);
    }
    ASSERT_GT(driver_launch, 0u);
    EXPECT_EQ(listed_driver, std::size(inject::kDriverCbids) - driver_launch);
    switch (driver_launches) {
      case DriverLaunches::kOn:
        EXPECT_EQ(launches_on, driver_launch);
        break;
      case DriverLaunches::kOff:
        EXPECT_EQ(launches_on, 0u);
        break;
      case DriverLaunches::kEither:
        EXPECT_TRUE(launches_on == 0 || launches_on == driver_launch) << launches_on;
        break;
    }
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
  FakeStats stats;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&stats));
  // Its direct cuCtxSynchronize turns the driver's launch callbacks on,
  // unless the process exited before the writer's next drain.
  ExpectTheListedCallbacksEnabled(stats, DriverLaunches::kEither);
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
  // A runtime copy with its inner driver call: not a direct driver call.
  Note(f, "copy", gpscope_test_copy_site(call));
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
  // Runtime launches only (and a runtime copy's inner driver call): the
  // driver's launch callbacks, dispatched inside every runtime launch,
  // stay off.
  FakeStats stats;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&stats));
  ExpectTheListedCallbacksEnabled(stats, DriverLaunches::kOff);
  EXPECT_TRUE(t.Unavailable("stacks.driver_launches").empty());
}

INSTANTIATE_TEST_SUITE_P(Interval, CollectorStackSamplingTest, ::testing::Values(1, 0));

// Syncs 1 ms apart for 0.8 s.
void SyncsForAWhileWorkload(void* fake) {
  ApiCallFn call = CallFn(fake);
  FILE* f = fopen(g_calls_path.c_str(), "w");
  if (f == nullptr) _exit(41);
  const uint64_t until = MonotonicMs() + 800;
  while (MonotonicMs() < until) {
    Note(f, "sync", gpscope_test_sync_site(call, 0));
    SleepMs(1);
  }
  fclose(f);
}

// Standby (GPSCOPE_STANDBY=1, no window ever opens): the API callbacks are
// off, so the application's CUDA calls pay no CUPTI callback (on a
// launch-bound loop standby cost +0.6 us per launch with them on: H100,
// session 13).
TEST_F(CollectorStacksTest, StandbyTakesNoApiCallbacks) {
  g_child_workload = SyncsForAWhileWorkload;
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"GPSCOPE_STANDBY", "1"}}, Then::kWorkload));
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  EXPECT_GT(Calls(ReadCalls(), "sync").size(), 100u);
  EXPECT_TRUE(t.stack_samples.empty());
  FakeStats stats;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&stats));
  EXPECT_EQ(stats.N("api_callbacks"), 0u);
  // They were accepted at start-up (the stacks are on), then switched off.
  size_t on = 0, off = 0;
  for (const auto& c : stats.Calls("enable_callback")) {
    if ((c.arg >> 16) != CUPTI_CB_DOMAIN_RUNTIME_API) continue;
    (c.value == 1 ? on : off) += 1;
  }
  EXPECT_GT(on, 0u);
  EXPECT_EQ(on, off);
}

// A window 0.3 s in, 0.2 s long: callbacks (and stacks) in it, none before.
TEST_F(CollectorStacksTest, TheApiCallbacksFollowTheCaptureWindow) {
  g_child_workload = SyncsForAWhileWorkload;
  ASSERT_NO_FATAL_FAILURE(RunToExit(
      {{"GPSCOPE_CAPTURE_DELAY_S", "0.3"}, {"GPSCOPE_CAPTURE_DURATION_S", "0.2"}},
      Then::kWorkload));
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  const size_t calls = Calls(ReadCalls(), "sync").size();
  ASSERT_GT(calls, 100u);
  EXPECT_GT(t.stack_samples.size(), 20u);
  for (const auto& s : t.stack_samples) EXPECT_EQ(s.trigger, static_cast<uint32_t>(proto::STACK_SYNC));
  FakeStats stats;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&stats));
  const uint64_t callbacks = stats.N("api_callbacks");
  EXPECT_GE(callbacks, 2 * t.stack_samples.size());  // entry and exit of each captured call
  // None in the 0.3 s before the window (of 0.8 s): with the callbacks on
  // throughout it would be 2 per call.
  EXPECT_LT(callbacks, 2 * calls * 3 / 4) << calls << " calls";
}

// A driver-API program: its first driver launch, before any direct driver
// call was seen, has no callbacks; a direct driver sync turns the driver's
// launch callbacks on at the writer's next drain (every 20 ms), so the
// launch after 200 ms idle gets its stack.
void DirectDriverWorkload(void* fake) {
  ApiCallFn call = CallFn(fake);
  FILE* f = fopen(g_calls_path.c_str(), "w");
  if (f == nullptr) _exit(41);
  SleepMs(20);
  Note(f, "early_launch", gpscope_test_driver_launch_site(call));
  Note(f, "driver_sync", gpscope_test_driver_site(call));
  SleepMs(200);
  Note(f, "late_launch", gpscope_test_driver_launch_site(call));
  fclose(f);
}

// The same without any direct driver call but the launches: their driver
// API records (CUPTI records no driver call made inside a runtime call)
// turn the callbacks on once the writer converts them.
void DriverLaunchesOnlyWorkload(void* fake) {
  ApiCallFn call = CallFn(fake);
  FILE* f = fopen(g_calls_path.c_str(), "w");
  if (f == nullptr) _exit(41);
  SleepMs(20);
  Note(f, "early_launch", gpscope_test_driver_launch_site(call));
  SleepMs(1000);  // > two flush intervals: the buffer is forced back
  Note(f, "late_launch", gpscope_test_driver_launch_site(call));
  fclose(f);
}

struct DirectDriverCase {
  void (*workload)(void*);
  const char* seen;  // how the notice says it saw the driver API
};

class CollectorDirectDriverTest : public CollectorStacksTest,
                                  public ::testing::WithParamInterface<DirectDriverCase> {};

TEST_P(CollectorDirectDriverTest, DriverLaunchesGetStacksOnceTheDriverApiIsSeenCalledDirectly) {
  g_child_workload = GetParam().workload;
  ASSERT_NO_FATAL_FAILURE(
      RunToExit({{"GPSCOPE_FLUSH_INTERVAL_MS", "100"}}, Then::kWorkload));
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  const auto calls = ReadCalls();
  const std::vector<uint32_t> early = Calls(calls, "early_launch");
  const std::vector<uint32_t> late = Calls(calls, "late_launch");
  ASSERT_EQ(early.size(), 1u);
  ASSERT_EQ(late.size(), 1u);
  for (const auto& s : t.stack_samples) {
    EXPECT_NE(s.correlation_id, early[0]) << "a stack before the callbacks were on";
  }
  EXPECT_NE(ApiCall(t, early[0]), nullptr) << "its API record is kept all the same";
  const Trace::StackSample* s = SampleOf(t, late[0]);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->trigger, static_cast<uint32_t>(proto::STACK_AFTER_IDLE));
  const proto::StackFrame* f = Innermost(t, *s);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(t.Str(f->function_id()), "gpscope_test_driver_launch_site");
  FakeStats stats;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&stats));
  ExpectTheListedCallbacksEnabled(stats, DriverLaunches::kOn);
  // One notice, available, saying how the driver API was seen.
  size_t notices = 0;
  for (const auto& c : t.capabilities) {
    if (c.component() != "stacks.driver_launches") continue;
    ++notices;
    EXPECT_TRUE(c.available());
    EXPECT_NE(c.reason().find(GetParam().seen), std::string::npos) << c.reason();
  }
  EXPECT_EQ(notices, 1u);
  EXPECT_EQ(t.Dropped(proto::DROP_STACKS), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Seen, CollectorDirectDriverTest,
    ::testing::Values(DirectDriverCase{DirectDriverWorkload, "a driver-API call made outside"},
                      DirectDriverCase{DriverLaunchesOnlyWorkload, "a driver-API record"}));

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

// ---- GPSCOPE_API_SOURCE=callback: the API records from the callbacks ----

constexpr uint32_t kRuntime = CUPTI_CB_DOMAIN_RUNTIME_API, kDriver = CUPTI_CB_DOMAIN_DRIVER_API;

// 20 launches (cudaLaunchKernel with its inner cuLaunchKernel) each with a
// kernel of the launch's correlation id, 5 stream syncs, 3 copies with an
// inner driver copy (the second returning cudaErrorInvalidValue, 1), 2
// driver context syncs returning CUDA_ERROR_ILLEGAL_ADDRESS (700).
void ApiRowsWorkload(void* fake) {
  auto call = reinterpret_cast<ApiCallResultFn>(dlsym(fake, "fake_cupti_api_call_result"));
  auto kernel = reinterpret_cast<KernelForFn>(dlsym(fake, "fake_cupti_kernel_for"));
  if (call == nullptr || kernel == nullptr) _exit(40);
  FILE* f = fopen(g_calls_path.c_str(), "w");
  if (f == nullptr) _exit(41);
  for (int i = 0; i < 20; ++i) {
    const uint32_t corr = call(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 5,
                               CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0);
    if (kernel(corr) != 1) _exit(42);
    Note(f, "launch", corr);
  }
  for (int i = 0; i < 5; ++i) {
    Note(f, "sync", call(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 10, 0, 0));
  }
  for (uint32_t i = 0; i < 3; ++i) {
    Note(f, "copy", call(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 10,
                         CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, i == 1 ? 1 : 0));
  }
  for (int i = 0; i < 2; ++i) {
    Note(f, "driver", call(kDriver, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, 10, 0, 700));
  }
  fclose(f);
}

// One expected row: what its activity record would say. A runtime call's
// inner driver call has none: CUPTI's activity kinds do not record it (seen
// on the H100 in session 12: cudaLaunchKernel's cuLaunchKernel, cudaMemcpy's
// cuMemcpy*), so the callback rows leave it out too.
struct WantRow {
  uint32_t domain;  // wire::API_*
  uint32_t cbid;
  uint32_t return_value;
  const char* name;
};

std::map<uint32_t, WantRow> WantedRows(const std::multimap<std::string, uint32_t>& calls) {
  std::map<uint32_t, WantRow> want;
  int copy = 0;
  for (const auto& [label, corr] : calls) {
    if (label == "launch") {
      want[corr] = {wire::API_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0,
                    "cudaLaunchKernel_v7000"};
    } else if (label == "sync") {
      want[corr] = {wire::API_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 0,
                    "cudaStreamSynchronize_v3020"};
    } else if (label == "copy") {
      want[corr] = {wire::API_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
                    copy++ == 1 ? 1u : 0u, "cudaMemcpy_v3020"};
    } else if (label == "driver") {
      want[corr] = {wire::API_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, 700,
                    "cuCtxSynchronize"};
    }
  }
  return want;
}

// stdout of a command (the analyzer), and its exit status in *status.
std::string Output(const std::string& command, int* status) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  *status = pclose(p);
  return out;
}

// The number after "key": in the analyzer's JSON, summed over its occurrences.
uint64_t JsonSum(const std::string& json, const std::string& key) {
  uint64_t sum = 0;
  const std::string k = "\"" + key + "\":";
  for (size_t at = json.find(k); at != std::string::npos; at = json.find(k, at + 1)) {
    sum += std::strtoull(json.c_str() + at + k.size(), nullptr, 10);
  }
  return sum;
}

class CollectorApiCallbackTest : public CollectorStacksTest {
 protected:
  // The workload once more with `env`; a fresh trace directory each time.
  void RunWorkload(const Env& env, void (*workload)(void*), Trace* t) {
    ASSERT_EQ(system(("rm -rf '" + trace_dir_ + "'").c_str()), 0);
    g_child_workload = workload;
    ASSERT_NO_FATAL_FAILURE(RunToExit(env, Then::kWorkload));
    ASSERT_NO_FATAL_FAILURE(ReadTrace(t));
  }

  // Checks the trace's API calls are exactly the wanted rows, of the child's
  // main thread.
  void ExpectRows(const Trace& t, const std::map<uint32_t, WantRow>& want) {
    std::map<uint32_t, const format::ApiCallEvent*> by_corr;
    for (const auto& a : t.api_calls) {
      EXPECT_TRUE(by_corr.emplace(a.correlation_id, &a).second) << "twice: " << a.correlation_id;
    }
    ASSERT_EQ(by_corr.size(), want.size());
    for (const auto& [corr, w] : want) {
      SCOPED_TRACE("correlation " + std::to_string(corr));
      auto it = by_corr.find(corr);
      ASSERT_NE(it, by_corr.end()) << "no row";
      const format::ApiCallEvent& a = *it->second;
      EXPECT_EQ(a.domain, w.domain);
      EXPECT_EQ(a.cbid, w.cbid);
      EXPECT_EQ(a.return_value, w.return_value);
      EXPECT_EQ(t.Str(a.api_name_id), w.name);
      EXPECT_EQ(a.thread_id, child_pid_) << "gettid of the child's main thread";
      EXPECT_GT(a.end_ns, a.start_ns);
      EXPECT_GE(a.start_ns, start_ns_);
      EXPECT_LE(a.end_ns, end_ns_);
    }
  }

  // gpscope-analyze summary: launches_matched, launches_unmatched.
  std::pair<uint64_t, uint64_t> AnalyzerJoins() {
#ifdef GPSCOPE_ANALYZE_BINARY
    int status = -1;
    const std::string json = Output(std::string(GPSCOPE_ANALYZE_BINARY) +
                                        " summary --format json '" + TraceFiles().at(0) + "'",
                                    &status);
    EXPECT_EQ(status, 0) << json;
    return {JsonSum(json, "launches_matched"), JsonSum(json, "launches_unmatched")};
#else
    return {0, 0};
#endif
  }
};

TEST_F(CollectorApiCallbackTest, EveryCallAtEveryDepthGivesTheRowItsRecordWouldAndKernelsJoinThem) {
  Trace t;
  ASSERT_NO_FATAL_FAILURE(RunWorkload({{"GPSCOPE_API_SOURCE", "callback"}}, ApiRowsWorkload, &t));
  const auto calls = ReadCalls();
  ASSERT_EQ(calls.size(), 30u);
  const std::map<uint32_t, WantRow> want = WantedRows(calls);
  ASSERT_EQ(want.size(), 30u);  // 20 launches + 5 + 3 copies + 2 (no inner driver calls)
  ASSERT_NO_FATAL_FAILURE(ExpectRows(t, want));
  // Each kernel carries its launch's correlation id.
  ASSERT_EQ(t.kernels.size(), 20u);
  const std::vector<uint32_t> launches = Calls(calls, "launch");
  const std::set<uint32_t> launch_ids(launches.begin(), launches.end());
  for (const auto& k : t.kernels) {
    EXPECT_TRUE(launch_ids.count(k.correlation_id)) << k.correlation_id;
  }
  EXPECT_EQ(Config(t, "GPSCOPE_API_SOURCE"), "callback");
  EXPECT_TRUE(t.drops.empty());
  EXPECT_TRUE(StderrLines().empty()) << Stderr();
  // The activity kinds stayed off: no RUNTIME/DRIVER kind, no call id on.
  FakeStats stats;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&stats));
  EXPECT_FALSE(stats.Set("kinds").count(CUPTI_ACTIVITY_KIND_RUNTIME));
  EXPECT_FALSE(stats.Set("kinds").count(CUPTI_ACTIVITY_KIND_DRIVER));
  EXPECT_TRUE(stats.Set("runtime_cbids").empty());
  EXPECT_TRUE(stats.Set("driver_cbids").empty());
  EXPECT_TRUE(stats.Calls("runtime_api").empty()) << "no per-id API record switch";
  EXPECT_TRUE(stats.Calls("driver_api").empty());
  for (const auto& c : stats.Calls("enable_kind")) {
    EXPECT_NE(c.arg, static_cast<uint32_t>(CUPTI_ACTIVITY_KIND_RUNTIME));
    EXPECT_NE(c.arg, static_cast<uint32_t>(CUPTI_ACTIVITY_KIND_DRIVER));
  }
#ifdef GPSCOPE_ANALYZE_BINARY
  const auto [matched, unmatched] = AnalyzerJoins();
  EXPECT_EQ(matched, 20u) << "every kernel joins its launch row";
  EXPECT_EQ(unmatched, 0u);
  int status = -1;
  const std::string dump = Output(std::string(GPSCOPE_ANALYZE_BINARY) + " dump '" +
                                      TraceFiles().at(0) + "'",
                                  &status);
  EXPECT_EQ(status, 0);
  size_t api_lines = 0;
  for (const std::string& l : Lines(dump)) {
    api_lines += l.find("\"type\":\"api\"") != std::string::npos;
  }
  EXPECT_EQ(api_lines, 30u) << dump.substr(0, 2000);
  EXPECT_NE(dump.find("\"name\":\"cuCtxSynchronize\""), std::string::npos);
  EXPECT_NE(dump.find("\"return_value\":700"), std::string::npos);
#endif
}

// The same workload through the activity kinds (the stand-in, like CUPTI,
// recording no inner driver call): the same rows, the same joins.
TEST_F(CollectorApiCallbackTest, TheActivityKindsGiveTheSameRowsForTheSameCalls) {
  Trace activity, callback;
  ASSERT_NO_FATAL_FAILURE(RunWorkload({}, ApiRowsWorkload, &activity));
  const std::map<uint32_t, WantRow> want = WantedRows(ReadCalls());
  ASSERT_NO_FATAL_FAILURE(ExpectRows(activity, want));
  EXPECT_EQ(Config(activity, "GPSCOPE_API_SOURCE"), "activity");
  const auto activity_joins = AnalyzerJoins();
  ASSERT_NO_FATAL_FAILURE(RunWorkload({{"GPSCOPE_API_SOURCE", "callback"}}, ApiRowsWorkload,
                                      &callback));
  EXPECT_EQ(WantedRows(ReadCalls()).size(), want.size());
  ASSERT_NO_FATAL_FAILURE(ExpectRows(callback, want));
  EXPECT_EQ(AnalyzerJoins(), activity_joins);
}

TEST_F(CollectorApiCallbackTest, WithStacksOffTheCallbacksStillGiveTheRows) {
  Trace t;
  ASSERT_NO_FATAL_FAILURE(RunWorkload({{"GPSCOPE_API_SOURCE", "callback"}, {"GPSCOPE_STACKS", "0"}},
                                      ApiRowsWorkload, &t));
  ASSERT_NO_FATAL_FAILURE(ExpectRows(t, WantedRows(ReadCalls())));
  EXPECT_TRUE(t.stack_samples.empty());
  EXPECT_TRUE(t.stacks.empty());
  auto off = t.Unavailable("stacks");
  ASSERT_EQ(off.size(), 1u);
  EXPECT_EQ(off[0]->reason(), "GPSCOPE_STACKS=0");
  FakeStats stats;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&stats));
  ExpectTheListedCallbacksEnabled(stats, DriverLaunches::kOn);  // the rows need them
  EXPECT_TRUE(stats.Set("runtime_cbids").empty());
}

// Another client holds the subscriber: no callbacks, so the activity kinds
// give the records after all, and the trace says why.
TEST_F(CollectorApiCallbackTest, WithoutTheSubscriberTheActivityKindsGiveTheRecords) {
  Trace t;
  ASSERT_NO_FATAL_FAILURE(RunWorkload(
      {{"GPSCOPE_API_SOURCE", "callback"},
       {"FAKE_CUPTI_SUBSCRIBE", "busy"},
       {"FAKE_CUPTI_KERNELS", "10"}},
      ApiRowsWorkload, &t));
  size_t launches = 0;
  for (const auto& a : t.api_calls) {
    launches += a.cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  }
  EXPECT_EQ(launches, 30u) << "the workload's 10 and the child's 20 launch records";
  auto why = t.Unavailable("api_callbacks");
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0]->reason().find("no CUPTI subscriber of our own"), std::string::npos)
      << why[0]->reason();
}

void WindowWorkload(void* fake) {
  ApiCallFn call = CallFn(fake);
  const uint64_t until = MonotonicMs() + 800;
  while (MonotonicMs() < until) {
    call(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0, 0);
    SleepMs(1);
  }
}

// A 0.3 s window 0.2 s in: only the calls that start inside it give rows.
TEST_F(CollectorApiCallbackTest, OnlyCallsInsideTheCaptureWindowGiveRows) {
  Trace t;
  ASSERT_NO_FATAL_FAILURE(RunWorkload({{"GPSCOPE_API_SOURCE", "callback"},
                                       {"GPSCOPE_CAPTURE_DELAY_S", "0.2"},
                                       {"GPSCOPE_CAPTURE_DURATION_S", "0.3"}},
                                      WindowWorkload, &t));
  std::vector<proto::LostInterval> off;
  for (const auto& l : t.lost) {
    if (l.reason() == proto::LOST_TRACING_DISABLED) off.push_back(l);
  }
  ASSERT_EQ(off.size(), 2u) << "before and after the window";
  const uint64_t window_start = off[0].end_ns(), window_end = off[1].start_ns();
  // ~1 call per 1.1 ms for 0.3 s: ~270 (fewer on a loaded machine), of ~700.
  EXPECT_GT(t.api_calls.size(), 50u);
  EXPECT_LT(t.api_calls.size(), 400u);
  for (const auto& a : t.api_calls) {
    ASSERT_GE(a.start_ns, window_start);
    ASSERT_LT(a.start_ns, window_end);
  }
  EXPECT_TRUE(t.drops.empty());
}

void ManyLaunchesWorkload(void* fake) {
  ApiCallFn call = CallFn(fake);
  for (int i = 0; i < 3000; ++i) {
    call(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0, 0);
  }
}

// Two row slots: a burst faster than the writer drains fills the ring; what
// did not fit is counted (DROP_RING_FULL) and `info` and `summary` show it.
TEST_F(CollectorApiCallbackTest, AFullRingDropsRowsAndCountsThem) {
  Trace t;
  ASSERT_NO_FATAL_FAILURE(RunWorkload({{"@diag", "1"},
                                       {"GPSCOPE_API_SOURCE", "callback"},
                                       {"GPSCOPE_DIAG_API_ROW_RING", "2"}},
                                      ManyLaunchesWorkload, &t));
  const uint64_t dropped = t.Dropped(proto::DROP_RING_FULL);
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(t.api_calls.size() + dropped, 3000u) << "every row written or counted";
  for (const auto& d : t.drops) {
    EXPECT_EQ(d.reason(), proto::DROP_RING_FULL);
    EXPECT_NE(d.detail().find("API call ring was full"), std::string::npos) << d.detail();
  }
#ifdef GPSCOPE_ANALYZE_BINARY
  int status = -1;
  const std::string info = Output(std::string(GPSCOPE_ANALYZE_BINARY) + " info '" +
                                      TraceFiles().at(0) + "'",
                                  &status);
  EXPECT_NE(info.find("dropped     ring full "), std::string::npos) << info;
  const std::string summary = Output(std::string(GPSCOPE_ANALYZE_BINARY) + " summary '" +
                                         TraceFiles().at(0) + "'",
                                     &status);
  EXPECT_NE(summary.find("DROPPED (ring full"), std::string::npos) << summary;
#endif
}

void InFlightAtExitWorkload(void* fake) {
  ApiCallFn call = CallFn(fake);
  for (int i = 0; i < 10; ++i) {
    call(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0, 0);
  }
  // A sync that is still running when the process exits.
  std::thread([call] {
    call(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 60'000'000, 0);
  }).detach();
  SleepMs(50);
}

// The exit: every call that returned is written; the one still running has
// no end, no row, and is counted.
TEST_F(CollectorApiCallbackTest, ACallStillRunningAtExitIsCountedAndTheOthersWritten) {
  Trace t;
  ASSERT_NO_FATAL_FAILURE(
      RunWorkload({{"GPSCOPE_API_SOURCE", "callback"}}, InFlightAtExitWorkload, &t));
  EXPECT_EQ(t.api_calls.size(), 10u);
  for (const auto& a : t.api_calls) {
    EXPECT_EQ(a.cbid, static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  }
  EXPECT_EQ(t.Dropped(proto::DROP_CUPTI_INCOMPLETE_RECORD), 1u);
  ASSERT_EQ(t.drops.size(), 1u);
  EXPECT_NE(t.drops[0].detail().find("still in progress at the end"), std::string::npos)
      << t.drops[0].detail();
  ASSERT_TRUE(t.end.has_value());
}

void ManyThreadsWorkload(void* fake) {
  ApiCallFn call = CallFn(fake);
  // More threads than the collector's 256 states, all alive at once.
  constexpr int kThreads = 300;
  std::atomic<int> called{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      call(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0, 0);
      called.fetch_add(1);
      while (called.load() < kThreads) SleepMs(1);
    });
  }
  for (auto& th : threads) th.join();
}

TEST_F(CollectorApiCallbackTest, CallsOfThreadsPastTheLimitAreCounted) {
  Trace t;
  ASSERT_NO_FATAL_FAILURE(
      RunWorkload({{"GPSCOPE_API_SOURCE", "callback"}}, ManyThreadsWorkload, &t));
  std::set<uint32_t> threads;
  for (const auto& a : t.api_calls) threads.insert(a.thread_id);
  EXPECT_EQ(t.api_calls.size(), 256u);
  EXPECT_EQ(threads.size(), 256u);
  EXPECT_EQ(t.Dropped(proto::DROP_RING_FULL), 44u);
  for (const auto& d : t.drops) {
    EXPECT_NE(d.detail().find("beyond the collector's thread limit"), std::string::npos)
        << d.detail();
  }
}

void ForkWorkload(void* fake) {
  ApiCallFn call = CallFn(fake);
  for (int i = 0; i < 10; ++i) call(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 0, 0);
  const pid_t child = fork();
  if (child == 0) {
    // The forked child: its calls go nowhere (no writer), and its exit
    // writes no trace of its own.
    for (int i = 0; i < 10; ++i) call(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 0, 0);
    exit(0);
  }
  int status = -1;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    _exit(43);
  }
  for (int i = 0; i < 10; ++i) call(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 0, 0);
}

TEST_F(CollectorApiCallbackTest, AForkedChildsCallsStayOutOfTheParentsTrace) {
  Trace t;
  ASSERT_NO_FATAL_FAILURE(RunWorkload({{"GPSCOPE_API_SOURCE", "callback"}}, ForkWorkload, &t));
  EXPECT_EQ(t.api_calls.size(), 20u);
  for (const auto& a : t.api_calls) EXPECT_EQ(a.thread_id, child_pid_);
  EXPECT_TRUE(t.drops.empty());
}

void PausedSyncsWorkload(void* fake) {
  ApiCallFn call = CallFn(fake);
  for (int i = 0; i < 50; ++i) gpscope_test_sync_site(call, 5);
  if (FILE* f = fopen((g_calls_path + ".half").c_str(), "w")) fclose(f);
  struct stat st{};
  while (stat((g_calls_path + ".go").c_str(), &st) != 0) SleepMs(5);
  for (int i = 0; i < 50; ++i) gpscope_test_sync_site(call, 5);
}

// `stacks off` on the control socket: with the rows from the callbacks it
// switches the captures only; the callbacks and the rows go on.
TEST_F(CollectorApiCallbackTest, StacksOffOnTheControlSocketLeavesTheRowsOn) {
  g_child_workload = PausedSyncsWorkload;
  ASSERT_NO_FATAL_FAILURE(Start({{"GPSCOPE_API_SOURCE", "callback"}}, Then::kWorkload));
  struct stat st{};
  const uint64_t deadline = MonotonicMs() + 10000;
  while (stat((g_calls_path + ".half").c_str(), &st) != 0) {
    ASSERT_LT(MonotonicMs(), deadline) << "the child never got half way";
    SleepMs(5);
  }
  control::ControlClient client;
  std::string error, reply;
  ASSERT_EQ(client.Connect(control::ControlSocketPath(control_dir_, child_), &error),
            control::ClientError::kOk)
      << error;
  ASSERT_EQ(client.Request("stacks off", 2000, &reply, &error), control::ClientError::kOk)
      << error;
  EXPECT_EQ(reply.rfind("ok", 0), 0u) << reply;
  client.Close();
  SleepMs(200);  // the writer applies it within a tick
  if (FILE* f = fopen((g_calls_path + ".go").c_str(), "w")) fclose(f);
  const int status = Wait();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << Stderr();
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  ASSERT_EQ(t.api_calls.size(), 100u) << "every sync has its row, stacks on or off";
  EXPECT_EQ(t.stack_samples.size(), 50u) << "only the first half have stacks";
  std::set<uint32_t> stacked;
  for (const auto& s : t.stack_samples) stacked.insert(s.correlation_id);
  std::vector<uint32_t> corr;
  for (const auto& a : t.api_calls) corr.push_back(a.correlation_id);
  std::sort(corr.begin(), corr.end());
  for (size_t i = 0; i < corr.size(); ++i) {
    EXPECT_EQ(stacked.count(corr[i]), i < 50 ? 1u : 0u) << corr[i];
  }
  FakeStats stats;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&stats));
  for (const auto& c : stats.Calls("enable_callback")) {
    EXPECT_EQ(c.value, 1u) << "a callback switched off: domain " << (c.arg >> 16);
  }
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
