// inject/stack_capture.h on its own (CUDA-free, so it also runs under TSan,
// label `concurrent`): the triggers a CUDA call's entry decides, a runtime
// call's inner driver calls, the capture gate, the per-thread SPSC rings
// drained while their threads fill them (every capture drained or counted),
// and thread states reused after their threads exit; the API call rows
// (GPSCOPE_API_SOURCE=callback): one per call at every depth with its own
// correlation id, return value and times, only for calls that start while
// the gate is open, full rings, deep nesting, missed exits and threads past
// the limit counted, the stacks switched off while the rows go on.
#include "inject/stack_capture.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "inject/stacks/python_layout.h"
#include "inject/stacks/python_stacks.h"
#include "tests/inject/stacks/fake_chain.h"

namespace gpscope::inject {
namespace {

using stacks::StackCapture;
using stacks::StackTrigger;

constexpr uint8_t kRuntimeDomain = 2, kDriverDomain = 1;  // CUpti_CallbackDomain

void SleepMs(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

void SpinUs(int us) {
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do {
    clock_gettime(CLOCK_MONOTONIC, &b);
  } while ((b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

StackCapturer::Options Opts(stacks::StackMode mode, uint32_t sample_ms, uint32_t ring = 0) {
  StackCapturer::Options o;
  o.settings.mode = mode;
  o.settings.sample_interval_ms = sample_ms;
  o.ring_slots = ring;
  return o;
}

// One call: entry then exit.
void Call(StackCapturer& c, bool runtime, ApiClass cls, uint32_t corr, int busy_us = 0) {
  c.OnEnter(runtime, cls, runtime ? kRuntimeDomain : kDriverDomain, 7, corr);
  if (busy_us > 0) SpinUs(busy_us);
  c.OnExit(corr, 0);
}

// kMaxThreads + 10 threads, one after another, never drained: two syncs each.
void TwoSyncsOnThreadsPastTheLimit(StackCapturer& c) {
  for (uint32_t i = 0; i < StackCapturer::kMaxThreads + 10; ++i) {
    std::thread([&] {
      Call(c, true, ApiClass::kSync, i);
      Call(c, true, ApiClass::kSync, i + 100000);
    }).join();
  }
}

std::map<uint32_t, StackCapture> DrainAll(StackCapturer& c) {
  std::map<uint32_t, StackCapture> out;
  c.Drain([&](const StackCapture& s) { out[static_cast<uint32_t>(s.correlation_id)] = s; });
  return out;
}

TEST(StackCaptureTest, OffSettingsAndPythonOnlyWithoutPythonDoNotStart) {
  StackCapturer off, py;
  std::string why;
  EXPECT_FALSE(off.Init(Opts(stacks::StackMode::kOff, 1), &why));
  EXPECT_EQ(why, "GPSCOPE_STACKS=0");
  EXPECT_FALSE(py.Init(Opts(stacks::StackMode::kPython, 1), &why));
  EXPECT_EQ(why, "GPSCOPE_STACKS=python and Python stacks are unavailable");
  Call(off, true, ApiClass::kSync, 1);
  EXPECT_TRUE(DrainAll(off).empty());
}

TEST(StackCaptureTest, TriggersSyncAfterIdleAndSampledLaunches) {
  StackCapturer c;
  std::string why;
  ASSERT_TRUE(c.Init(Opts(stacks::StackMode::kAuto, 1), &why)) << why;
  // CLOCK_REALTIME (the capturer's clock) no later than the "last exit" the
  // capturer sees before 2, 6, 7 and 12: before calls 1, 5 (its exit time
  // is its entry's) and 6, before call 11's exit.
  uint64_t before_1 = 0, before_5 = 0, before_6 = 0, before_exit_11 = 0;
  auto realtime = [] {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  };
  std::thread([&] {
    before_1 = realtime();
    Call(c, true, ApiClass::kLaunch, 1);   // the thread's first launch: after "idle"
    Call(c, true, ApiClass::kLaunch, 2);   // right after: nothing
    Call(c, true, ApiClass::kSync, 3);     // a sync: always
    Call(c, false, ApiClass::kSync, 4);    // a driver sync on its own: always
    before_5 = realtime();
    Call(c, true, ApiClass::kOther, 5);    // neither: never
    SpinUs(1500);                          // busy elsewhere but < 5 ms: the sample is due
    before_6 = realtime();
    Call(c, true, ApiClass::kLaunch, 6);
    Call(c, true, ApiClass::kLaunch, 7);   // within 1 ms of the last sample: nothing
    SleepMs(8);                            // >= 5 ms outside CUDA
    Call(c, false, ApiClass::kLaunch, 8);  // a driver launch (JAX): after idle
    // A runtime sync whose inner driver sync is its own: one capture.
    c.OnEnter(true, ApiClass::kSync, kRuntimeDomain, 7, 9);
    c.OnEnter(false, ApiClass::kSync, kDriverDomain, 8, 10);
    c.OnExit(10, 0);
    c.OnExit(9, 0);
    // A long sync ends 8 ms later: the next launch is not after idle.
    c.OnEnter(true, ApiClass::kSync, kRuntimeDomain, 7, 11);
    SleepMs(8);
    before_exit_11 = realtime();
    c.OnExit(11, 0);
    Call(c, true, ApiClass::kLaunch, 12);
  }).join();
  const auto got = DrainAll(c);
  const std::map<uint32_t, StackTrigger> want = {
      {1, StackTrigger::kAfterIdle}, {3, StackTrigger::kSync},    {4, StackTrigger::kSync},
      {6, StackTrigger::kSampled},   {8, StackTrigger::kAfterIdle}, {9, StackTrigger::kSync},
      {11, StackTrigger::kSync},
  };
  // 12: a sample (the last one was 8: > 1 ms ago), not after idle (the
  // long sync ended just before). 2 and 7 come < 1 ms after a sample: none,
  // unless this loaded machine preempted the thread for a millisecond. A
  // thread held off >= 5 ms before 2, 6, 7 or 12 (TSan, load) is rightly
  // after idle.
  for (const auto& [corr, cap] : got) {
    SCOPED_TRACE(corr);
    const uint64_t before = corr == 2    ? before_1
                            : corr == 6  ? before_5
                            : corr == 7  ? before_6
                            : corr == 12 ? before_exit_11
                                         : 0;
    if (before != 0 && cap.timestamp_ns - before >= StackCapturer::kIdleThresholdNs) {
      EXPECT_TRUE(cap.trigger == StackTrigger::kAfterIdle || cap.trigger == StackTrigger::kSampled);
      continue;
    }
    if (corr == 12 || corr == 2 || corr == 7) {
      EXPECT_EQ(cap.trigger, StackTrigger::kSampled);
      continue;
    }
    ASSERT_TRUE(want.count(corr)) << "unexpected capture";
    EXPECT_EQ(cap.trigger, want.at(corr));
    EXPECT_EQ(cap.kind, stacks::StackKind::kNative);
    EXPECT_GT(cap.depth, 2);
  }
  for (const auto& [corr, trigger] : want) EXPECT_TRUE(got.count(corr)) << corr;
  EXPECT_TRUE(got.count(12));
  EXPECT_FALSE(got.count(5)) << "neither a sync nor a launch";
  EXPECT_FALSE(got.count(10)) << "the runtime call's inner driver call";
  EXPECT_EQ(got.at(4).domain, kDriverDomain);
  EXPECT_EQ(got.at(3).cbid, 7u);
  EXPECT_EQ(c.ring_drops(), 0u);
}

TEST(StackCaptureTest, NoTimeSamplesWithIntervalZeroAndNothingWhileTheGateIsShut) {
  StackCapturer c;
  std::atomic<bool> gate{false};
  StackCapturer::Options o = Opts(stacks::StackMode::kNative, 0);
  o.gate = &gate;
  std::string why;
  ASSERT_TRUE(c.Init(o, &why)) << why;
  std::thread([&] {
    Call(c, true, ApiClass::kSync, 1);  // gate shut: nothing
    gate.store(true);
    Call(c, true, ApiClass::kLaunch, 2);  // last exit 0 us ago (call 1): not idle
    for (uint32_t i = 0; i < 20; ++i) Call(c, true, ApiClass::kLaunch, 100 + i, 200);
    Call(c, true, ApiClass::kSync, 3);
  }).join();
  const auto got = DrainAll(c);
  EXPECT_FALSE(got.count(1)) << "taken while the gate was shut";
  ASSERT_TRUE(got.count(3));
  EXPECT_EQ(got.at(3).trigger, StackTrigger::kSync);
  // Launches 50 us apart: no time-based samples with interval 0; a capture
  // after idle only if this (loaded, maybe TSan-slowed) machine held the
  // thread off for 5 ms.
  for (const auto& [corr, cap] : got) {
    if (corr != 3) {
      EXPECT_EQ(cap.trigger, StackTrigger::kAfterIdle) << corr;
    }
  }
  EXPECT_LE(got.size(), 3u);
}

// Four threads fill 4-slot rings while the writer drains: each capture is
// drained once, in its thread's order, or counted as a drop.
TEST(StackCaptureTest, RingsDrainWhileFilledAndCountWhatDidNotFit) {
  StackCapturer c;
  std::string why;
  ASSERT_TRUE(c.Init(Opts(stacks::StackMode::kNative, 1, 4), &why)) << why;
  constexpr int kThreads = 4, kCalls = 3000;
  std::atomic<int> running{kThreads};
  std::vector<std::thread> threads;
  std::vector<uint32_t> tids(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      tids[t] = static_cast<uint32_t>(syscall(SYS_gettid));
      for (int i = 0; i < kCalls; ++i) {
        Call(c, true, ApiClass::kSync, static_cast<uint32_t>(t * 1000000 + i));
      }
      running.fetch_sub(1);
    });
  }
  std::map<uint32_t, std::vector<uint32_t>> seen;  // tid -> correlation ids
  auto drain = [&] {
    c.Drain([&](const StackCapture& s) {
      seen[s.thread_id].push_back(static_cast<uint32_t>(s.correlation_id));
      EXPECT_GT(s.depth, 0);
      EXPECT_EQ(s.trigger, StackTrigger::kSync);
    });
  };
  while (running.load() > 0) drain();
  for (auto& th : threads) th.join();
  drain();
  size_t drained = 0;
  for (int t = 0; t < kThreads; ++t) {
    const std::vector<uint32_t>& ids = seen[tids[t]];
    drained += ids.size();
    for (size_t i = 1; i < ids.size(); ++i) ASSERT_LT(ids[i - 1], ids[i]) << "thread order";
    for (uint32_t id : ids) ASSERT_EQ(id / 1000000, static_cast<uint32_t>(t)) << "wrong thread";
  }
  EXPECT_EQ(drained + c.ring_drops(), static_cast<uint64_t>(kThreads) * kCalls);
  EXPECT_EQ(c.captures(), drained);
  EXPECT_EQ(c.threads_seen(), static_cast<uint32_t>(kThreads));
}

// Thread states come back once their threads exit and their rings are
// drained; without drains, threads beyond the 256 states get no stacks and
// their synchronizing calls are counted.
TEST(StackCaptureTest, ExitedThreadsStatesAreReusedAndBeyondTheLimitCounted) {
  StackCapturer c;
  std::string why;
  ASSERT_TRUE(c.Init(Opts(stacks::StackMode::kNative, 1), &why)) << why;
  size_t drained = 0;
  for (uint32_t i = 0; i < 400; ++i) {
    std::thread([&] { Call(c, true, ApiClass::kSync, i); }).join();
    drained += DrainAll(c).size();  // frees the exited thread's state
  }
  EXPECT_EQ(drained, 400u);
  EXPECT_EQ(c.thread_drops(), 0u);
  EXPECT_EQ(c.threads_seen(), 400u);

  StackCapturer d;
  ASSERT_TRUE(d.Init(Opts(stacks::StackMode::kNative, 1), &why)) << why;
  TwoSyncsOnThreadsPastTheLimit(d);
  EXPECT_EQ(DrainAll(d).size(), 2u * StackCapturer::kMaxThreads);
  EXPECT_EQ(d.thread_drops(), 20u);
}

// ---- API call rows ----

StackCapturer::Options RowOpts(uint32_t rows = 0,
                               stacks::StackMode mode = stacks::StackMode::kOff) {
  StackCapturer::Options o = Opts(mode, 1);
  o.api_rows = true;
  o.api_row_slots = rows;
  return o;
}

struct Row {
  uint32_t tid;
  ApiCallRow row;
};

std::vector<Row> DrainRows(StackCapturer& c) {
  std::vector<Row> out;
  c.DrainApiRows([&](uint32_t tid, const ApiCallRow& r) { out.push_back({tid, r}); });
  return out;
}

uint32_t Gettid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

TEST(ApiRowsTest, EveryCallOutsideARuntimeCallGetsItsRowInTheOrderTheCallsReturned) {
  StackCapturer c;
  std::string why;
  ASSERT_TRUE(c.Init(RowOpts(), &why));
  EXPECT_EQ(why, "GPSCOPE_STACKS=0") << "rows without stacks";
  EXPECT_TRUE(c.rows_on());
  EXPECT_FALSE(c.stacks_on());
  uint32_t tid = 0;
  uint64_t before = 0, after = 0;
  std::thread([&] {
    tid = Gettid();
    before = RealtimeNs();
    // A runtime copy whose inner driver copy returns an error of its own.
    c.OnEnter(true, ApiClass::kSync, kRuntimeDomain, 31, 100);
    SpinUs(50);
    c.OnEnter(false, ApiClass::kSync, kDriverDomain, 279, 101);
    SpinUs(50);
    c.OnExit(101, 700);
    SpinUs(50);
    c.OnExit(100, 1);
    c.OnEnter(false, ApiClass::kLaunch, kDriverDomain, 307, 102);  // a driver launch alone
    SpinUs(20);
    c.OnExit(102, 0);
    after = RealtimeNs();
  }).join();
  // The runtime copy's own driver call gets no row (CUPTI's API records
  // leave it out too); the driver launch made directly does.
  const std::vector<Row> rows = DrainRows(c);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].row.correlation_id, 100u);
  EXPECT_EQ(rows[1].row.correlation_id, 102u);
  EXPECT_EQ(rows[0].row.cbid, 31u);
  EXPECT_EQ(rows[0].row.domain, kRuntimeDomain);
  EXPECT_EQ(rows[0].row.return_value, 1u);
  EXPECT_EQ(rows[1].row.cbid, 307u);
  EXPECT_EQ(rows[1].row.domain, kDriverDomain);
  EXPECT_EQ(rows[1].row.return_value, 0u);
  for (const Row& r : rows) {
    EXPECT_EQ(r.tid, tid);
    EXPECT_GE(r.row.start_ns, before);
    EXPECT_LE(r.row.end_ns, after);
    EXPECT_GE(r.row.end_ns - r.row.start_ns, 20000u) << r.row.correlation_id;
  }
  EXPECT_GE(rows[0].row.end_ns - rows[0].row.start_ns, 150000u) << "the copy's whole time";
  EXPECT_LE(rows[0].row.end_ns, rows[1].row.start_ns);
  EXPECT_EQ(c.api_rows(), 2u);
  EXPECT_EQ(c.api_row_drops(), 0u);
  EXPECT_EQ(c.captures(), 0u) << "no stacks with GPSCOPE_STACKS=0";
}

TEST(ApiRowsTest, OnlyCallsThatStartWhileTheGateIsOpenGiveRows) {
  StackCapturer c;
  std::atomic<bool> gate{false};
  StackCapturer::Options o = RowOpts();
  o.gate = &gate;
  std::string why;
  ASSERT_TRUE(c.Init(o, &why));
  std::thread([&] {
    Call(c, true, ApiClass::kLaunch, 1);  // shut: nothing
    c.OnEnter(true, ApiClass::kSync, kRuntimeDomain, 7, 2);
    gate.store(true);
    c.OnExit(2, 0);  // started while shut: nothing
    c.OnEnter(true, ApiClass::kSync, kRuntimeDomain, 7, 3);
    gate.store(false);
    c.OnExit(3, 0);  // started while open: its row
    gate.store(true);
    Call(c, false, ApiClass::kLaunch, 4);
  }).join();
  std::vector<uint32_t> corr;
  for (const Row& r : DrainRows(c)) corr.push_back(r.row.correlation_id);
  EXPECT_EQ(corr, (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(c.api_row_drops(), 0u);
}

TEST(ApiRowsTest, AFullRingKeepsTheOldestRowsAndCountsTheRest) {
  StackCapturer c;
  std::string why;
  ASSERT_TRUE(c.Init(RowOpts(4), &why));
  std::thread([&] {
    for (uint32_t i = 1; i <= 10; ++i) Call(c, true, ApiClass::kLaunch, i);
  }).join();
  std::vector<uint32_t> corr;
  for (const Row& r : DrainRows(c)) corr.push_back(r.row.correlation_id);
  EXPECT_EQ(corr, (std::vector<uint32_t>{1, 2, 3, 4}));
  EXPECT_EQ(c.api_row_drops(), 6u);
  EXPECT_EQ(c.api_rows(), 4u);
  // Drained: room again.
  std::thread([&] { Call(c, true, ApiClass::kLaunch, 11); }).join();
  ASSERT_EQ(DrainRows(c).size(), 1u);
  EXPECT_EQ(c.api_row_drops(), 6u);
}

TEST(ApiRowsTest, TooDeepNestingAndExitsNeverSeenAreCountedNotWritten) {
  StackCapturer c;
  std::string why;
  ASSERT_TRUE(c.Init(RowOpts(), &why));
  std::thread([&] {
    // One call deeper than kMaxOpenCalls.
    const uint32_t depth = StackCapturer::kMaxOpenCalls + 1;
    for (uint32_t i = 0; i < depth; ++i) {
      c.OnEnter(false, ApiClass::kOther, kDriverDomain, 7, 10 + i);
    }
    EXPECT_EQ(c.api_calls_in_flight(), StackCapturer::kMaxOpenCalls);
    for (uint32_t i = depth; i-- > 0;) c.OnExit(10 + i, 0);
    // An inner call whose exit never came: the outer call's exit ends it
    // (driver calls both: a runtime call's own driver calls get no row).
    c.OnEnter(false, ApiClass::kSync, kDriverDomain, 7, 50);
    c.OnEnter(false, ApiClass::kSync, kDriverDomain, 8, 51);
    c.OnExit(50, 0);
    // An exit whose entry was not seen.
    c.OnExit(60, 0);
    Call(c, true, ApiClass::kLaunch, 70);
    EXPECT_EQ(c.api_calls_in_flight(), 0u);
  }).join();
  std::vector<uint32_t> corr;
  for (const Row& r : DrainRows(c)) corr.push_back(r.row.correlation_id);
  std::vector<uint32_t> want;
  for (uint32_t i = StackCapturer::kMaxOpenCalls; i-- > 0;) want.push_back(10 + i);
  want.push_back(50);
  want.push_back(70);
  EXPECT_EQ(corr, want);
  EXPECT_EQ(c.api_row_drops(), 2u) << "the 9th level and the call whose exit was missed";
}

TEST(ApiRowsTest, CallsInFlightAreCountedUntilTheyReturn) {
  StackCapturer c;
  std::string why;
  ASSERT_TRUE(c.Init(RowOpts(), &why));
  std::atomic<int> step{0};
  std::thread t([&] {
    c.OnEnter(true, ApiClass::kSync, kRuntimeDomain, 7, 1);
    step.store(1);
    while (step.load() != 2) SleepMs(1);
    c.OnExit(1, 0);
    step.store(3);
  });
  while (step.load() != 1) SleepMs(1);
  EXPECT_EQ(c.api_calls_in_flight(), 1u);
  EXPECT_TRUE(DrainRows(c).empty());
  step.store(2);
  while (step.load() != 3) SleepMs(1);
  EXPECT_EQ(c.api_calls_in_flight(), 0u);
  EXPECT_EQ(c.api_rows_pending(), 1u);
  EXPECT_EQ(DrainRows(c).size(), 1u);
  EXPECT_EQ(c.api_rows_pending(), 0u);
  t.join();
}

TEST(ApiRowsTest, StacksSwitchedOffLeaveTheRowsAndEnableForgetsCallsInFlight) {
  StackCapturer c;
  std::string why;
  ASSERT_TRUE(c.Init(RowOpts(0, stacks::StackMode::kNative), &why)) << why;
  EXPECT_TRUE(why.empty()) << why;
  std::thread([&] {
    // A runtime sync and its inner driver sync: one stack, one row.
    c.OnEnter(true, ApiClass::kSync, kRuntimeDomain, 7, 1);
    c.OnEnter(false, ApiClass::kSync, kDriverDomain, 8, 2);
    c.OnExit(2, 0);
    c.OnExit(1, 0);
    c.SetStacks(false);
    Call(c, true, ApiClass::kSync, 3);  // a row, no stack
    c.SetStacks(true);
    Call(c, true, ApiClass::kSync, 4);  // both
    // Off and on again (the callbacks went off): the call in flight then
    // is forgotten, its exit matches nothing.
    c.OnEnter(true, ApiClass::kSync, kRuntimeDomain, 7, 5);
    c.Disable();
    c.Enable();
    c.OnExit(5, 0);
    EXPECT_EQ(c.api_calls_in_flight(), 1u) << "until the thread's next call";
    Call(c, true, ApiClass::kSync, 6);
    EXPECT_EQ(c.api_calls_in_flight(), 0u);
  }).join();
  std::vector<uint32_t> rows;
  for (const Row& r : DrainRows(c)) rows.push_back(r.row.correlation_id);
  EXPECT_EQ(rows, (std::vector<uint32_t>{1, 3, 4, 6}));
  const auto stacks = DrainAll(c);
  EXPECT_EQ(stacks.size(), 4u);
  for (uint32_t corr : {1u, 4u, 5u, 6u}) EXPECT_TRUE(stacks.count(corr)) << corr;
}

// The writer marks the rows, drains the captures, then the marked rows:
// later rows (a new thread's, or one that took a freed state in between)
// wait for the next drain.
TEST(ApiRowsTest, AMarkedDrainTakesOnlyTheRowsPublishedByTheMark) {
  StackCapturer c;
  std::string why;
  ASSERT_TRUE(c.Init(RowOpts(), &why));
  auto corr_of = [&](const StackCapturer::ApiRowMarks* marks) {
    std::vector<uint32_t> out;
    c.DrainApiRows([&](uint32_t, const ApiCallRow& r) { out.push_back(r.correlation_id); },
                   marks);
    return out;
  };
  StackCapturer::ApiRowMarks marks;
  std::thread([&] {
    Call(c, true, ApiClass::kLaunch, 1);
    Call(c, true, ApiClass::kLaunch, 2);
  }).join();
  c.MarkApiRows(&marks);
  std::thread([&] { Call(c, true, ApiClass::kLaunch, 3); }).join();  // a second state
  EXPECT_EQ(corr_of(&marks), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(corr_of(nullptr), (std::vector<uint32_t>{3}));
  // A thread whose rows were drained exits: marked (empty), freed by the
  // captures' drain, then taken by a new thread before the rows' drain.
  std::atomic<int> step{0};
  std::thread a([&] {
    Call(c, true, ApiClass::kLaunch, 5);
    step.store(1);
    while (step.load() != 2) SleepMs(1);
  });
  while (step.load() != 1) SleepMs(1);
  EXPECT_EQ(corr_of(nullptr), (std::vector<uint32_t>{5}));
  step.store(2);
  a.join();
  c.MarkApiRows(&marks);
  DrainAll(c);
  std::thread([&] { Call(c, true, ApiClass::kLaunch, 6); }).join();
  EXPECT_TRUE(corr_of(&marks).empty());
  EXPECT_EQ(corr_of(nullptr), (std::vector<uint32_t>{6}));
}

// Four threads make runtime calls with an inner driver call each into
// 64-slot rings while the writer drains: every row is drained once, in its
// thread's exit order, or counted as a drop.
TEST(ApiRowsTest, RingsDrainWhileFilledAndCountWhatDidNotFit) {
  StackCapturer c;
  std::string why;
  ASSERT_TRUE(c.Init(RowOpts(64), &why));
  constexpr int kThreads = 4;
  constexpr uint32_t kCalls = 20000;  // pairs of calls per thread (a runtime one, a driver one)
  std::atomic<int> running{kThreads};
  std::vector<std::thread> threads;
  std::vector<uint32_t> tids(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      tids[t] = Gettid();
      const uint32_t base = static_cast<uint32_t>(t) * 1000000;
      for (uint32_t i = 0; i < kCalls; ++i) {
        const uint32_t corr = base + 2 * i;
        c.OnEnter(true, ApiClass::kLaunch, kRuntimeDomain, 13, corr);
        c.OnExit(corr, i & 1);
        c.OnEnter(false, ApiClass::kLaunch, kDriverDomain, 307, corr + 1);
        c.OnExit(corr + 1, 0);
      }
      running.fetch_sub(1);
    });
  }
  std::map<uint32_t, std::vector<ApiCallRow>> seen;  // tid -> rows
  auto drain = [&] {
    c.DrainApiRows([&](uint32_t tid, const ApiCallRow& r) { seen[tid].push_back(r); });
  };
  while (running.load() > 0) drain();
  for (auto& th : threads) th.join();
  drain();
  uint64_t drained = 0;
  for (int t = 0; t < kThreads; ++t) {
    const std::vector<ApiCallRow>& rows = seen[tids[t]];
    drained += rows.size();
    // Exit order: corr then corr + 1 for each pair.
    int64_t last = -1;
    for (const ApiCallRow& r : rows) {
      ASSERT_EQ(r.correlation_id / 1000000, static_cast<uint32_t>(t)) << "wrong thread";
      const uint32_t local = r.correlation_id % 1000000;
      const int64_t position = local;
      ASSERT_GT(position, last) << "thread order";
      last = position;
      ASSERT_EQ(r.domain, local % 2 == 1 ? kDriverDomain : kRuntimeDomain);
      ASSERT_EQ(r.return_value, local % 2 == 1 ? 0u : (local / 2) & 1);
      ASSERT_LE(r.start_ns, r.end_ns);
    }
  }
  EXPECT_EQ(drained + c.api_row_drops(), 2ull * kThreads * kCalls);
  EXPECT_EQ(c.api_rows(), drained);
  EXPECT_EQ(c.api_calls_in_flight(), 0u);
}

// Rows keep a thread state alive until drained; past the 256 states a
// thread's calls in a window are counted.
TEST(ApiRowsTest, ExitedThreadsStatesAreReusedAfterTheirRowsAndBeyondTheLimitCounted) {
  StackCapturer c;
  std::string why;
  ASSERT_TRUE(c.Init(RowOpts(), &why));
  std::map<uint32_t, int> per_thread;
  for (uint32_t i = 0; i < 300; ++i) {
    std::thread([&] { Call(c, true, ApiClass::kLaunch, i); }).join();
    for (const Row& r : DrainRows(c)) ++per_thread[r.tid];  // frees the exited state
  }
  EXPECT_EQ(per_thread.size(), 300u);
  EXPECT_EQ(c.api_thread_drops(), 0u);

  StackCapturer d;
  ASSERT_TRUE(d.Init(RowOpts(), &why));
  TwoSyncsOnThreadsPastTheLimit(d);
  EXPECT_EQ(DrainRows(d).size(), 2u * StackCapturer::kMaxThreads);
  EXPECT_EQ(d.api_thread_drops(), 20u);
}

void* NoPythonHere() { return nullptr; }
uint8_t* g_main_tstate = nullptr;
void* MainThreadList() { return g_main_tstate; }

TEST(StackCaptureTest, SyncsOfAThreadWithoutPythonReuseTheMainThreadsStackOnlyWhileItStaysPut) {
  // A fake CPython 3.12 main thread waiting at code unit 3 of `wait_code`;
  // the capturing thread has no Python (NoPythonHere).
  stacks::FakeChain main_thread(*stacks::FindPythonLayout(3, 12));
  main_thread.Push(main_thread.Code(10), 1);
  uint8_t* wait_code = main_thread.Code(30);
  uint8_t* wait = main_thread.Push(wait_code, 3);
  g_main_tstate = reinterpret_cast<uint8_t*>(main_thread.tstate());
  stacks::InstallPythonRuntimeForTest(main_thread.target(), NoPythonHere, nullptr, MainThreadList);
  StackCapturer c;
  StackCapturer::Options o = Opts(stacks::StackMode::kAuto, 0);
  o.python = true;
  std::string why;
  ASSERT_TRUE(c.Init(o, &why)) << why;

  // Per round: a walk (the interval has passed), a sync right after it (the
  // main thread has not moved: the same stack again), then the main thread
  // moves and a third sync comes: never the old stack. Rounds until one
  // ran all three within the interval (the first, unless the machine stalls).
  bool within_interval = false;
  int rounds = 0;
  std::thread([&] {
    for (; rounds < 20 && !within_interval; ++rounds) {
      SleepMs(2);
      const uint32_t base = 10 * static_cast<uint32_t>(rounds);
      main_thread.SetUnit(wait, wait_code, 3);
      const uint64_t reused_before = c.main_thread_reused();
      const uint64_t t0 = RealtimeNs();
      Call(c, false, ApiClass::kSync, base + 1);
      Call(c, false, ApiClass::kSync, base + 2);
      main_thread.SetUnit(wait, wait_code, 7);
      Call(c, false, ApiClass::kSync, base + 3);
      const uint64_t elapsed = RealtimeNs() - t0;
      std::map<uint32_t, StackCapture> got = DrainAll(c);
      ASSERT_EQ(got.size(), 3u);
      const StackCapture& walked = got[base + 1];
      ASSERT_EQ(walked.trigger, StackTrigger::kSyncMainThread);
      ASSERT_EQ(walked.kind, stacks::StackKind::kPython);
      ASSERT_EQ(walked.depth, 2);
      EXPECT_EQ(walked.frames[0].addr, stacks::FakeChain::Addr(wait_code));
      EXPECT_EQ(walked.frames[0].offset, 6);  // code unit 3
      const StackCapture& again = got[base + 2];
      ASSERT_EQ(again.trigger, StackTrigger::kSyncMainThread);
      ASSERT_EQ(again.depth, walked.depth);
      for (int i = 0; i < walked.depth; ++i) {
        EXPECT_EQ(again.frames[i].addr, walked.frames[i].addr);
        EXPECT_EQ(again.frames[i].offset, walked.frames[i].offset);
      }
      const StackCapture& moved = got[base + 3];
      if (moved.trigger == StackTrigger::kSyncMainThread) {
        EXPECT_EQ(moved.frames[0].offset, 14);  // walked again: where it is now
      } else {
        EXPECT_EQ(moved.trigger, StackTrigger::kSync);
        EXPECT_EQ(moved.kind, stacks::StackKind::kNative);
      }
      if (elapsed < StackCapturer::kMainThreadIntervalNs) {
        within_interval = true;
        EXPECT_EQ(c.main_thread_reused() - reused_before, 1u);
        EXPECT_EQ(moved.trigger, StackTrigger::kSync);  // no walk in the interval, mark moved
      }
    }
  }).join();
  EXPECT_TRUE(within_interval) << rounds << " rounds, none within 1 ms";
  EXPECT_GE(c.main_thread_captures(), 2u * static_cast<uint64_t>(rounds));
  g_main_tstate = nullptr;  // the fake thread goes away: no main thread from here on
}

}  // namespace
}  // namespace gpscope::inject
