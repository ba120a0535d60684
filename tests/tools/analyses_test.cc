// tests/tools/analyses_test.cc: the model (histograms, interval union,
// reorder queue, timeline, idle classification, steps) and the findings
// rules, on synthetic traces written with TraceBuilder. Each rule has a
// trigger trace that yields exactly that rule at warning level or above; a
// healthy compute-bound trace yields none.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "proto/metric_names.h"
#include "tests/testing/synth.h"
#include "tests/testing/trace_builder.h"
#include "tools/analyses/gpu_report.h"
#include "tools/analyses/names.h"
#include "tools/analyses/rules.h"
#include "tools/analyze/summary.h"
#include "tools/model/interval_union.h"
#include "tools/model/log_histogram.h"
#include "tools/model/model_builder.h"
#include "tools/model/occupancy.h"
#include "tools/model/reorder_queue.h"
#include "tools/model/timeline.h"
#include "tools/model/top_k.h"

namespace gpscope {
namespace {

using analyses::Finding;
using analyses::Severity;
using model::GapCause;
using model::Interval;
using model::IntervalUnion;
using model::LogHistogram;
using testing::HealthyLoop;
using testing::LoopOptions;
using testing::Synth;
using testing::TraceBuilder;

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kS = 1'000'000'000;
constexpr uint64_t kT0 = 2 * kS;  // CUPTI ns; DefaultHeader maps 1e9 to wall time
constexpr uint32_t kThread = 4242;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "analyses_test." + std::to_string(getpid()) + "." + name +
         ".gpscope";
}

struct Result {
  std::unique_ptr<analyze::SummaryResult> r;
  const model::GpuModel& gpu(size_t i = 0) const { return r->model.gpus.at(i); }
  const analyses::GpuReport& report(size_t i = 0) const { return r->report.gpus.at(i); }
  const std::vector<Finding>& findings() const { return r->findings; }
};

Result Analyze(TraceBuilder& trace, const std::string& name, model::ModelOptions options = {}) {
  const std::string path = TempPath(name);
  EXPECT_TRUE(trace.WriteFile(path));
  Result result{analyze::ComputeSummaryResult({path}, options, analyses::ReportOptions{})};
  // ANALYSES_TEST_KEEP=1 keeps the trace files, to look at them with the CLI.
  if (getenv("ANALYSES_TEST_KEEP") == nullptr) unlink(path.c_str());
  return result;
}

// Rule ids of the findings at warning level or above, most costly first.
std::vector<std::string> WarningRules(const std::vector<Finding>& findings) {
  std::vector<std::string> ids;
  for (const Finding& f : findings) {
    if (f.severity >= Severity::kWarning) ids.push_back(f.rule);
  }
  return ids;
}

const Finding* FindRule(const std::vector<Finding>& findings, const std::string& rule) {
  for (const Finding& f : findings) {
    if (f.rule == rule) return &f;
  }
  return nullptr;
}

std::string Describe(const std::vector<Finding>& findings) {
  std::string s;
  for (const Finding& f : findings) {
    s += f.rule + " (" + analyses::SeverityName(f.severity) + ", cost " +
         std::to_string(f.cost_ns) + "): " + f.summary + "\n";
  }
  return s;
}

// ------------------------------------------------------ synthetic traces --

TEST(RulesTest, HealthyComputeBoundTraceHasNoWarning) {
  TraceBuilder trace;
  Synth s(trace);
  HealthyLoop(s, {});
  s.p().WriteEnd();
  const Result r = Analyze(trace, "healthy");
  EXPECT_TRUE(WarningRules(r.findings()).empty()) << Describe(r.findings());
  const analyses::GpuReport& g = r.report();
  EXPECT_LT(g.idle_gap_share, 0.01);
  EXPECT_GT(g.busy_share, 0.95);
  EXPECT_EQ(g.step_count, 50u);
  EXPECT_NEAR(g.est_sm_efficiency, 1.0, 1e-9);
  EXPECT_EQ(g.sm_util.source, analyses::Utilization::Source::kEstimated);
  EXPECT_GT(g.sm_util.percent, 95);
  EXPECT_EQ(g.dram_util.source, analyses::Utilization::Source::kUnavailable);
}

TEST(RulesTest, StarvedLoopYieldsDataStarvation) {
  TraceBuilder trace;
  Synth s(trace);
  uint64_t h = kT0;
  for (int step = 0; step < 50; ++step) {
    const uint64_t start = h;
    // The batch arrives from the loader: its copy is the input evidence.
    uint64_t t = s.Copy(h, 40 * kUs, 2 << 20, proto::MEMCPY_HTOD, proto::MEMORY_PINNED);
    for (int k = 0; k < 4; ++k) t = s.Kernel(t + 2 * kUs, 500 * kUs, "conv_fwd");
    s.Step(start, t + 50 * kUs, static_cast<uint64_t>(step));
    h = std::max(t, s.gpu_free_ns()) + 20 * kMs;  // a slow data loader, every step
  }
  s.p().WriteEnd();
  const Result r = Analyze(trace, "starved");
  EXPECT_EQ(WarningRules(r.findings()), std::vector<std::string>{"data-starvation"})
      << Describe(r.findings());
  const Finding& f = r.findings().front();
  EXPECT_EQ(f.rule, "data-starvation");
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_GT(r.report().idle_gap_share, 0.85);
  EXPECT_GT(f.cost_ns, 40 * 19 * kMs);
  EXPECT_EQ(f.ranges.size(), 5u);
  EXPECT_FALSE(f.fixes.empty());
  // Step time includes the time outside the annotated range.
  EXPECT_NEAR(r.report().step_period.p50, 22.1 * kMs, 0.3 * kMs);
  EXPECT_NEAR(r.report().step_idle_ns, 20.01 * kMs, 0.1 * kMs);
  EXPECT_EQ(r.report().step_period.count, 48u);  // not the first (warm-up) nor the last
  EXPECT_GT(r.report().input_host_ns, 0.9 * r.report().gap_idle.host_ns);
}

// The same idle without an input copy before the steps is the host's own
// code, not the input pipeline (ANALYSIS-NOTES: what separates causes).
TEST(RulesTest, HostGapsWithoutInputAreHostBoundNotStarvation) {
  TraceBuilder trace;
  Synth s(trace);
  testing::HostBoundLoop(s, kT0);
  s.p().WriteEnd();
  const Result r = Analyze(trace, "hostbound");
  EXPECT_EQ(WarningRules(r.findings()), std::vector<std::string>{"host-bound"})
      << Describe(r.findings());
  const Finding& f = r.findings().front();
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_GT(f.cost_ns, 40 * 19 * kMs);
  EXPECT_NE(f.summary.find("not input starvation"), std::string::npos) << f.summary;
  EXPECT_EQ(r.report().input_host_ns, 0);
}

// loss.item() and then slow Python: the sync's wait is part of it, the host
// code after it is the cost; host-sync is grouped under host-bound.
TEST(RulesTest, SyncThenHostCodeIsHostBoundWithTheSyncGrouped) {
  TraceBuilder trace;
  Synth s(trace);
  uint64_t h = kT0;
  for (int step = 0; step < 100; ++step) {
    const uint64_t start = h;
    uint64_t t = h;
    for (int k = 0; k < 4; ++k) t = s.Kernel(t + 2 * kUs, 1 * kMs, "fused_mlp");
    t = s.Copy(t, 2 * kUs, 4, proto::MEMCPY_DTOH, proto::MEMORY_PINNED);
    t = s.Sync(t);
    s.Step(start, t + 20 * kUs, static_cast<uint64_t>(step));
    h = t + 4500 * kUs;  // metric code in Python, below the idle-gap threshold
  }
  s.p().WriteEnd();
  const Result r = Analyze(trace, "itemhost");
  EXPECT_EQ(WarningRules(r.findings()), std::vector<std::string>{"host-bound"})
      << Describe(r.findings());
  const Finding& f = r.findings().front();
  EXPECT_GT(r.report().short_after_sync_host_ns, 0.9 * r.report().short_gap_idle.host_ns);
  ASSERT_EQ(f.grouped.size(), 1u) << Describe(r.findings());
  EXPECT_EQ(f.grouped[0].rule, "host-sync");
  EXPECT_NE(f.grouped[0].relation.find("consequence"), std::string::npos);
}

TEST(RulesTest, TinyKernelsYieldLaunchBound) {
  TraceBuilder trace;
  Synth s(trace);
  uint64_t h = kT0;
  for (int i = 0; i < 20'000; ++i) {
    s.Kernel(h, 3 * kUs, i % 3 == 0 ? "add_kernel" : "mul_kernel", 1, /*call_ns=*/5 * kUs);
    h += 12 * kUs;
  }
  s.p().WriteEnd();
  const Result r = Analyze(trace, "tiny");
  EXPECT_EQ(WarningRules(r.findings()), std::vector<std::string>{"launch-bound"})
      << Describe(r.findings());
  const analyses::GpuReport& g = r.report();
  EXPECT_EQ(g.kernel_count, 20'000u);
  EXPECT_EQ(g.tiny_kernels, 20'000u);
  EXPECT_EQ(g.shorter_than_launch, 20'000u);
  EXPECT_GT(g.short_gap_idle.host_ns / static_cast<double>(g.window.length_ns()), 0.6);
}

TEST(RulesTest, SyncEveryStepYieldsHostSync) {
  TraceBuilder trace;
  Synth s(trace);
  uint64_t h = kT0;
  for (int step = 0; step < 100; ++step) {
    const uint64_t start = h;
    uint64_t t = h;
    for (int k = 0; k < 4; ++k) t = s.Kernel(t + 2 * kUs, 500 * kUs, "fused_mlp");
    t = s.Copy(t, 2 * kUs, 4, proto::MEMCPY_DTOH, proto::MEMORY_PINNED);  // loss.item()
    t = s.Sync(t);
    s.Step(start, t + 20 * kUs, static_cast<uint64_t>(step));
    h = t + 400 * kUs;  // Python between the sync and the next step's launches
  }
  s.p().WriteEnd();
  const Result r = Analyze(trace, "sync");
  EXPECT_EQ(WarningRules(r.findings()), std::vector<std::string>{"host-sync"})
      << Describe(r.findings());
  const Finding* found = FindRule(r.findings(), "host-sync");
  ASSERT_NE(found, nullptr) << Describe(r.findings());
  const Finding& f = *found;
  EXPECT_GT(f.cost_ns, 90 * 400 * kUs);
  EXPECT_EQ(f.ranges.size(), 5u);
  const analyses::GpuReport& g = r.report();
  EXPECT_NEAR(g.sync_calls / g.steps_in_window, 1.0, 0.05);
  EXPECT_NEAR(g.d2h_copy_count / g.steps_in_window, 1.0, 0.05);
  EXPECT_LT(g.idle_gap_share, 0.01);
}

TEST(RulesTest, PageableCopiesAreFlagged) {
  TraceBuilder trace;
  Synth s(trace);
  LoopOptions o;
  o.pageable_ns = 300 * kUs;
  HealthyLoop(s, o);
  s.p().WriteEnd();
  const Result r = Analyze(trace, "pageable");
  EXPECT_EQ(WarningRules(r.findings()), std::vector<std::string>{"pageable-copies"})
      << Describe(r.findings());
  const Finding* found = FindRule(r.findings(), "pageable-copies");
  ASSERT_NE(found, nullptr) << Describe(r.findings());
  const Finding& f = *found;
  EXPECT_EQ(f.cost_ns, 50 * 300 * kUs / 2);
  EXPECT_EQ(f.ranges.size(), 5u);
}

TEST(RulesTest, CopyHeavyLoopIsFlagged) {
  TraceBuilder trace;
  Synth s(trace);
  LoopOptions o;
  o.copy_ns = 6 * kMs;
  o.copy_bytes = 300 << 20;
  o.kernel_ns = 1'300 * kUs;
  HealthyLoop(s, o);
  s.p().WriteEnd();
  const Result r = Analyze(trace, "copyheavy");
  EXPECT_EQ(WarningRules(r.findings()), std::vector<std::string>{"copy-heavy"})
      << Describe(r.findings());
  EXPECT_GT(r.report().copy_share_of_gpu_time, 0.25);
}

TEST(RulesTest, LongGapsInsideTheRunAreFlagged) {
  TraceBuilder trace;
  Synth s(trace);
  uint64_t h = kT0;
  for (int phase = 0; phase < 3; ++phase) {
    for (int i = 0; i < 5'000; ++i) h = s.Kernel(h, 2 * kMs, "stencil") + 1'900 * kUs;
    h = std::max(h, s.gpu_free_ns()) + 800 * kMs;  // checkpointing, twice mid-run
  }
  s.p().WriteEnd();
  const Result r = Analyze(trace, "longgaps");
  EXPECT_EQ(WarningRules(r.findings()), std::vector<std::string>{"long-gaps"})
      << Describe(r.findings());
  const Finding* found = FindRule(r.findings(), "long-gaps");
  ASSERT_NE(found, nullptr) << Describe(r.findings());
  const Finding& f = *found;
  EXPECT_EQ(f.ranges.size(), 2u);
  EXPECT_NEAR(static_cast<double>(f.cost_ns), 1.6e9, 0.02e9);
}

TEST(RulesTest, DominantKernelIsInfoWithNcuCommand) {
  TraceBuilder trace;
  Synth s(trace, 0x5157, 4242, {"python", "train.py", "--lr=1e-3"});
  uint64_t h = kT0;
  for (int i = 0; i < 200; ++i) {
    h = s.Kernel(h, 3 * kMs, "_Z10sgemm_tileILi128EEvPKfS1_Pfi");
    h = s.Kernel(h, 1 * kMs, "_Z4reluPfi");
    h += 3'900 * kUs;
  }
  s.p().WriteEnd();
  const Result r = Analyze(trace, "dominant");
  EXPECT_TRUE(WarningRules(r.findings()).empty()) << Describe(r.findings());
  const Finding* f = FindRule(r.findings(), "dominant-kernel");
  ASSERT_NE(f, nullptr) << Describe(r.findings());
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_EQ(r.report().top_kernels.front().compact, "sgemm_tile<128>");
  EXPECT_EQ(r.report().top_kernels.front().demangled,
            "void sgemm_tile<128>(float const*, float const*, float*, int)");
  ASSERT_FALSE(f->fixes.empty());
  EXPECT_NE(f->fixes[0].find("ncu --kernel-name regex:sgemm_tile --launch-count 3 --set full -o "
                             "gpscope_sgemm_tile python train.py --lr=1e-3"),
            std::string::npos)
      << f->fixes[0];
}

TEST(RulesTest, SmallGridsYieldLowSmEfficiency) {
  TraceBuilder trace;
  Synth s(trace);
  LoopOptions o;
  o.config = 2;  // 8 blocks on 132 SMs
  HealthyLoop(s, o);
  s.p().WriteEnd();
  const Result r = Analyze(trace, "lowsm");
  EXPECT_EQ(WarningRules(r.findings()), std::vector<std::string>{"low-sm-efficiency"})
      << Describe(r.findings());
  EXPECT_NEAR(r.report().est_sm_efficiency, 8.0 / 132, 1e-9);
  EXPECT_LT(r.report().sm_util.percent, 7);
}

TEST(RulesTest, DropsAndMissingEndYieldIncompleteData) {
  TraceBuilder trace;
  Synth s(trace);
  HealthyLoop(s, {});
  proto::DropNotice* d = s.p().batch().add_drops();
  d->set_reason(proto::DROP_RING_FULL);
  d->set_count(17);
  proto::LostInterval* l = s.p().batch().add_lost_intervals();
  l->set_start_ns(kT0 + 100 * kMs);
  l->set_end_ns(kT0 + 150 * kMs);
  l->set_reason(proto::LOST_OTHER_PROFILER_ACTIVE);
  l->set_detail("nsys attached");
  s.p().Flush();  // no WriteEnd: the process was killed
  const Result r = Analyze(trace, "incomplete");
  EXPECT_EQ(WarningRules(r.findings()), std::vector<std::string>{"incomplete-data"})
      << Describe(r.findings());
  const Finding* found = FindRule(r.findings(), "incomplete-data");
  ASSERT_NE(found, nullptr) << Describe(r.findings());
  const Finding& f = *found;
  // The 50 ms not traced, plus the dropped records' share of the span.
  const model::ProcessModel& p = r.r->model.processes.at(0);
  EXPECT_NEAR(static_cast<double>(f.cost_ns),
              50.0 * kMs + 17.0 / static_cast<double>(p.events + 17) *
                               static_cast<double>(p.last_ns - p.first_ns),
              1.0);
  EXPECT_GT(f.cost_ns, 50 * kMs);
  EXPECT_EQ(f.process, 0);
  ASSERT_EQ(f.ranges.size(), 1u);
  EXPECT_NE(f.summary.find("17 records dropped"), std::string::npos) << f.summary;
}

// Time outside a capture window (delay, standby) was left out by choice:
// a clean trace with such intervals is complete; a window cut from a
// process still running (no end record, as `gpscope attach` writes it) is
// info, not a warning, and its fixes do not blame another profiler.
TEST(RulesTest, CaptureWindowTimeIsNotALoss) {
  auto add_off = [](Synth& s, uint64_t start, uint64_t end) {
    proto::LostInterval* l = s.p().batch().add_lost_intervals();
    l->set_start_ns(start);
    l->set_end_ns(end);
    l->set_reason(proto::LOST_TRACING_DISABLED);
    l->set_detail("outside the capture window");
  };
  {
    TraceBuilder trace;
    Synth s(trace);
    add_off(s, kT0 - 2000 * kMs, kT0);
    HealthyLoop(s, {});
    s.p().WriteEnd();
    const Result r = Analyze(trace, "window_clean");
    EXPECT_EQ(FindRule(r.findings(), "incomplete-data"), nullptr) << Describe(r.findings());
    EXPECT_TRUE(r.r->report.processes.at(0).complete);
  }
  {
    TraceBuilder trace;
    Synth s(trace);
    add_off(s, kT0 - 2000 * kMs, kT0);
    HealthyLoop(s, {});
    s.p().Flush();  // no end record: the process ran on after the window
    const Result r = Analyze(trace, "window_open");
    const Finding* f = FindRule(r.findings(), "incomplete-data");
    ASSERT_NE(f, nullptr) << Describe(r.findings());
    EXPECT_EQ(f->severity, Severity::kInfo);
    EXPECT_EQ(f->cost_ns, 0u);
    EXPECT_NE(f->summary.find("capture window"), std::string::npos) << f->summary;
    for (const std::string& fix : f->fixes) {
      EXPECT_EQ(fix.find("profiler"), std::string::npos) << fix;
    }
  }
}

// Two capture windows of one process (attach twice, or repeat windows): the
// 3.5 s between them were not traced, so they are neither idle nor host
// wait, and no step statistic spans them. Without the lost interval the
// same ops read as a 3.5 s idle gap (the control).
TEST(RulesTest, TimeBetweenCaptureWindowsIsNotIdle) {
  auto two_windows = [](bool record_off, const std::string& name) {
    TraceBuilder trace;
    Synth s(trace);
    LoopOptions o;
    o.steps = 25;
    HealthyLoop(s, o, kT0);
    const uint64_t off_start = kT0 + 25 * o.step_ns + 5 * kMs;  // the gate closes
    const uint64_t second = kT0 + 4 * kS;
    if (record_off) {
      proto::LostInterval* l = s.p().batch().add_lost_intervals();
      l->set_start_ns(off_start);
      l->set_end_ns(second);
      l->set_reason(proto::LOST_TRACING_DISABLED);
      l->set_detail("outside the capture window");
    }
    HealthyLoop(s, o, second);
    s.p().WriteEnd();
    return Analyze(trace, name);
  };
  const Result gap = two_windows(false, "two_windows_unmarked");
  EXPECT_GT(gap.report().long_gap_count, 0.0);
  EXPECT_LT(gap.report().busy_share, 0.5);
  EXPECT_GT(gap.report().step_period.max, 1.0 * kS);

  const Result r = two_windows(true, "two_windows");
  const analyses::GpuReport& g = r.report();
  EXPECT_TRUE(WarningRules(r.findings()).empty()) << Describe(r.findings());
  EXPECT_EQ(FindRule(r.findings(), "data-starvation"), nullptr) << Describe(r.findings());
  EXPECT_EQ(g.long_gap_count, 0.0);
  EXPECT_LT(g.idle_gap_share, 0.01);
  EXPECT_GT(g.busy_share, 0.95);
  // The untraced part of the gap: from the lost interval's start to the
  // second window's first op (the first window's last op ends before it).
  EXPECT_NEAR(g.untraced_ns, 4.0 * kS - (25 * 19 + 5) * kMs, 1.0 * kMs);
  // The step across the windows is left out: periods stay ~19 ms.
  EXPECT_LT(g.step_period.max, 25.0 * kMs);
  EXPECT_TRUE(r.r->report.processes.at(0).complete);
}

TEST(RulesTest, TwoProcessesOnOneGpuYieldGpuShared) {
  TraceBuilder trace;
  Synth a(trace, 0xA, 100);
  Synth b(trace, 0xB, 200);
  LoopOptions o;
  o.steps = 25;
  HealthyLoop(a, o);
  HealthyLoop(b, o, kT0 + 3 * kMs);
  a.p().WriteEnd();
  b.p().WriteEnd();
  const Result r = Analyze(trace, "shared");
  EXPECT_EQ(WarningRules(r.findings()), std::vector<std::string>{"gpu-shared"})
      << Describe(r.findings());
  EXPECT_EQ(r.r->model.gpus.size(), 2u);
}

// Adds a metric and samples it every 10 ms over the healthy loop's 950 ms.
void AddMetric(Synth& s, uint32_t id, const std::string& name, proto::MetricScope scope,
               uint32_t pid, const std::string& label, const std::function<double(int)>& value) {
  proto::MetricDescriptor* d = s.p().batch().add_metric_descriptors();
  d->set_id(id);
  d->set_name(name);
  d->set_scope(scope);
  d->set_device_id(0);
  d->set_pid(pid);
  d->set_label(label);
  for (int i = 0; i < 95; ++i) {
    s.p().Add(format::MetricSample{kT0 + static_cast<uint64_t>(i) * 10 * kMs, id, value(i)});
  }
}

TEST(RulesTest, PowerCappedClocksYieldClockThrottling) {
  TraceBuilder trace;
  Synth s(trace);
  HealthyLoop(s, {});
  AddMetric(s, 1, "nvml.clock_event_reasons", proto::SCOPE_DEVICE, 0, "",
            [](int i) { return i % 5 < 3 ? 0x4 | 0x20 : 0x1; });  // 60% power/thermal
  s.p().WriteEnd();
  const Result r = Analyze(trace, "throttle");
  EXPECT_EQ(WarningRules(r.findings()), std::vector<std::string>{"clock-throttling"})
      << Describe(r.findings());
  EXPECT_NEAR(r.report().throttled_share, 0.6, 0.03);
  EXPECT_EQ(FindRule(r.findings(), "clock-throttling")->severity, Severity::kCritical);
}

TEST(RulesTest, PowerCapAloneIsInfoNotAWarning) {
  // A GPU at its power limit under a dense GEMM (the H200 at 700 W): only
  // the software power cap bit, in 60% of the samples.
  TraceBuilder trace;
  Synth s(trace);
  HealthyLoop(s, {});
  AddMetric(s, 1, "nvml.clock_event_reasons", proto::SCOPE_DEVICE, 0, "",
            [](int i) { return i % 5 < 3 ? 0x4 : 0x1; });
  s.p().WriteEnd();
  const Result r = Analyze(trace, "powercap");
  EXPECT_TRUE(WarningRules(r.findings()).empty()) << Describe(r.findings());
  const Finding* f = FindRule(r.findings(), "clock-throttling");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_NE(f->title.find("power limit"), std::string::npos) << f->title;
}

TEST(RulesTest, SaturatedDramYieldsMemoryBandwidthBound) {
  TraceBuilder trace;
  Synth s(trace);
  HealthyLoop(s, {});
  AddMetric(s, 1, "gpm.dram_bw_util", proto::SCOPE_DEVICE, 0, "", [](int) { return 85.0; });
  AddMetric(s, 2, "gpm.sm_util", proto::SCOPE_DEVICE, 0, "", [](int) { return 40.0; });
  s.p().WriteEnd();
  const Result r = Analyze(trace, "dram");
  EXPECT_EQ(WarningRules(r.findings()), std::vector<std::string>{"memory-bandwidth-bound"})
      << Describe(r.findings());
  EXPECT_EQ(r.report().sm_util.source, analyses::Utilization::Source::kMeasured);
  EXPECT_NEAR(r.report().sm_util.percent, 40, 1e-6);
  EXPECT_NEAR(r.report().dram_util.percent, 85, 1e-6);
}

TEST(RulesTest, UntracedProcessOnTheGpuYieldsGpuSharedNvml) {
  TraceBuilder trace;
  Synth s(trace);
  HealthyLoop(s, {});
  AddMetric(s, 1, "nvml.process_sm_util", proto::SCOPE_PROCESS, 9999, "jupyter",
            [](int) { return 30.0; });
  AddMetric(s, 2, "nvml.process_sm_util", proto::SCOPE_PROCESS, 4242, "python",  // itself
            [](int) { return 70.0; });
  s.p().WriteEnd();
  const Result r = Analyze(trace, "othernvml");
  EXPECT_EQ(WarningRules(r.findings()), std::vector<std::string>{"gpu-shared-nvml"})
      << Describe(r.findings());
  ASSERT_EQ(r.report().other_processes.size(), 1u);
  EXPECT_EQ(r.report().other_processes[0].label, "jupyter");
  EXPECT_NEAR(r.report().other_process_sm, 30, 1e-6);
}

// From inside a container NVML's pids are the host's (the collector says so
// with capability nvml.process_pids unavailable): the traced process itself
// looks untraced. One NVML process is no finding; two are an info note.
TEST(RulesTest, NvmlPidsFromInsideAPidNamespaceAreNotCalledStrangers) {
  auto run = [](int processes, const std::string& name) {
    TraceBuilder trace;
    Synth s(trace);
    HealthyLoop(s, {});
    proto::CapabilityNotice* cap = s.p().batch().add_capabilities();
    cap->set_component("nvml.process_pids");
    cap->set_available(false);
    cap->set_reason("in a PID namespace (a container)");
    // Host pids: the traced process (pid 4242 inside) is 871234 here.
    AddMetric(s, 1, "nvml.process_sm_util", proto::SCOPE_PROCESS, 871234, "python",
              [](int) { return 70.0; });
    if (processes > 1) {
      AddMetric(s, 2, "nvml.process_sm_util", proto::SCOPE_PROCESS, 871300, "jupyter",
                [](int) { return 30.0; });
    }
    s.p().WriteEnd();
    return Analyze(trace, name);
  };
  const Result one = run(1, "pidns1");
  EXPECT_EQ(FindRule(one.findings(), "gpu-shared-nvml"), nullptr) << Describe(one.findings());
  const Result two = run(2, "pidns2");
  EXPECT_TRUE(WarningRules(two.findings()).empty()) << Describe(two.findings());
  const Finding* f = FindRule(two.findings(), "gpu-shared-nvml");
  ASSERT_NE(f, nullptr) << Describe(two.findings());
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_NE(f->summary.find("PID namespace"), std::string::npos) << f->summary;
}

// The SM limits of an H100 (DefaultHeader leaves them unknown).
void SetSmLimits(proto::ProcessHeader& h) {
  proto::DeviceInfo* d = h.mutable_devices(0);
  d->set_max_threads_per_sm(2048);
  d->set_max_blocks_per_sm(32);
  d->set_max_registers_per_sm(65536);
  d->set_max_shared_memory_per_sm_bytes(233472);
}

TEST(OccupancyTest, LimitedByWarpsRegistersSharedMemoryAndBlocks) {
  model::SmLimits h100{2048, 32, 65536, 233472};
  EXPECT_EQ(model::TheoreticalOccupancy({256, 0, 0}, h100), 1.0);
  EXPECT_EQ(model::TheoreticalOccupancy({256, 128, 0}, h100), 0.25);   // 16 warps of registers
  EXPECT_EQ(model::TheoreticalOccupancy({256, 168, 0}, h100), 0.125);  // 12 warps: one block
  EXPECT_EQ(model::TheoreticalOccupancy({256, 0, 100 * 1024}, h100), 0.25);  // two blocks of smem
  EXPECT_EQ(model::TheoreticalOccupancy({32, 0, 0}, h100), 0.5);      // 32 blocks of one warp
  EXPECT_EQ(model::TheoreticalOccupancy({1000, 0, 0}, h100), 2 * 32.0 / 64);  // 32 warps, 2 blocks
  EXPECT_EQ(model::TheoreticalOccupancy({256, 0, 0}, model::SmLimits{}), -1);  // limits unknown
  EXPECT_EQ(model::TheoreticalOccupancy({0, 0, 0}, h100), -1);
}

// Values from a hostile trace (the analyzer fuzzer found the first: 2^27
// registers per thread wrapped the per-warp count to 0, a division by zero).
TEST(OccupancyTest, ImpossibleShapesAreUnknownNotADivisionByZero) {
  model::SmLimits h100{2048, 32, 65536, 233472};
  EXPECT_EQ(model::TheoreticalOccupancy({256, 1u << 27, 0}, h100), -1);
  EXPECT_EQ(model::TheoreticalOccupancy({256, 256, 0}, h100), -1);  // past 255 per thread
  EXPECT_EQ(model::TheoreticalOccupancy({256, 255, 0}, h100), 0.125);  // 8 warps: one block
  EXPECT_EQ(model::TheoreticalOccupancy({0xFFFFFFFFu, 0, 0}, h100), -1);  // wraps in 32 bits
  EXPECT_EQ(model::TheoreticalOccupancy({256, 0, 0xFFFFFFFFu}, h100), 0);
}

TEST(RulesTest, RegisterHungryLaunchesYieldLowOccupancy) {
  TraceBuilder trace;
  Synth s(trace, 0x5157, 4242, {}, SetSmLimits);
  proto::LaunchConfig* c = s.p().batch().add_launch_configs();
  c->set_id(3);
  c->set_grid_x(1056);  // plenty of blocks: SM efficiency is fine
  c->set_grid_y(1);
  c->set_grid_z(1);
  c->set_block_x(256);
  c->set_block_y(1);
  c->set_block_z(1);
  c->set_registers_per_thread(168);  // one resident block per SM: 12.5%
  LoopOptions o;
  o.config = 3;
  HealthyLoop(s, o);
  s.p().WriteEnd();
  const Result r = Analyze(trace, "lowocc");
  EXPECT_EQ(WarningRules(r.findings()), std::vector<std::string>{"low-occupancy"})
      << Describe(r.findings());
  EXPECT_NEAR(r.report().est_occupancy, 0.125, 1e-6);
  EXPECT_NEAR(r.report().occupancy_known_share, 1.0, 1e-9);
  EXPECT_NEAR(r.report().top_kernels.at(0).est_occupancy, 0.125, 1e-6);
  // The same loop with unconstrained shapes is healthy.
  TraceBuilder healthy;
  Synth h(healthy, 0x5157, 4242, {}, SetSmLimits);
  HealthyLoop(h, {});
  h.p().WriteEnd();
  const Result ok = Analyze(healthy, "fullocc");
  EXPECT_TRUE(WarningRules(ok.findings()).empty()) << Describe(ok.findings());
  EXPECT_NEAR(ok.report().est_occupancy, 1.0, 1e-6);
}

// A Hopper GEMM's shape (as cuBLAS's nvjet kernels launched on the H200:
// 384 threads, 168 registers, ~200 KiB dynamic shared memory) has 18.75%
// theoretical occupancy by design; it is not a low-occupancy problem.
TEST(RulesTest, LargeTileGemmShapesAreNotLowOccupancy) {
  TraceBuilder trace;
  Synth s(trace, 0x5157, 4242, {}, SetSmLimits);
  proto::LaunchConfig* c = s.p().batch().add_launch_configs();
  c->set_id(3);
  c->set_grid_x(132);
  c->set_grid_y(1);
  c->set_grid_z(1);
  c->set_block_x(384);
  c->set_block_y(1);
  c->set_block_z(1);
  c->set_registers_per_thread(168);
  c->set_dynamic_shared_memory_bytes(200 * 1024);
  LoopOptions o;
  o.config = 3;
  HealthyLoop(s, o);
  s.p().WriteEnd();
  const Result r = Analyze(trace, "gemmtile");
  EXPECT_EQ(FindRule(r.findings(), "low-occupancy"), nullptr) << Describe(r.findings());
  EXPECT_NEAR(r.report().large_tile_share, 1.0, 1e-9);
  EXPECT_LT(r.report().est_occupancy, 0);  // nothing left to weigh
  EXPECT_NEAR(r.report().top_kernels.at(0).est_occupancy, 0.1875, 1e-6);  // shown per kernel
  EXPECT_TRUE(r.report().top_kernels.at(0).large_tile);
}

// The same register-hungry launches by a cuBLAS kernel: the library chose
// its registers; no low-occupancy (launch-bounds) advice.
TEST(RulesTest, LibraryKernelsGetNoLaunchBoundsAdvice) {
  TraceBuilder trace;
  Synth s(trace, 0x5157, 4242, {}, SetSmLimits);
  proto::LaunchConfig* c = s.p().batch().add_launch_configs();
  c->set_id(3);
  c->set_grid_x(1056);
  c->set_grid_y(1);
  c->set_grid_z(1);
  c->set_block_x(256);
  c->set_block_y(1);
  c->set_block_z(1);
  c->set_registers_per_thread(168);  // 12.5%, as in RegisterHungryLaunchesYieldLowOccupancy
  LoopOptions o;
  o.config = 3;
  o.emit_steps = true;
  uint64_t h = 2'000'000'000;
  for (int step = 0; step < 50; ++step) {
    const uint64_t start = h;
    for (int k = 0; k < 10; ++k) h = s.Kernel(h, 1'900 * kUs, "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8", 3);
    s.Step(start, h, static_cast<uint64_t>(step));
    h += 1 * kMs;
  }
  s.p().WriteEnd();
  const Result r = Analyze(trace, "cublasocc");
  EXPECT_EQ(FindRule(r.findings(), "low-occupancy"), nullptr) << Describe(r.findings());
  EXPECT_NEAR(r.report().library_share, 1.0, 1e-9);
  EXPECT_LT(r.report().est_occupancy, 0);  // none of the program's own kernels to weigh
  EXPECT_EQ(r.report().top_kernels.at(0).library, "cuBLAS");
  const Finding* dominant = FindRule(r.findings(), "dominant-kernel");
  ASSERT_NE(dominant, nullptr) << Describe(r.findings());
  bool call_advice = false;
  for (const std::string& fix : dominant->fixes) {
    EXPECT_EQ(fix.find("__launch_bounds__"), std::string::npos) << fix;
    call_advice |= fix.find("tune the call") != std::string::npos;
  }
  EXPECT_TRUE(call_advice) << Describe(r.findings());
}

TEST(LibraryTest, NamesLibrariesAndGeneratedCode) {
  EXPECT_EQ(analyses::LibraryOf("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", false), "cuBLAS");
  EXPECT_EQ(analyses::LibraryOf("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc", false),
            "cuDNN");
  EXPECT_EQ(analyses::LibraryOf("ncclDevKernel_AllReduce_Sum_f32_RING_LL", false), "NCCL");
  EXPECT_EQ(analyses::LibraryOf("_ZN7cutlass6KernelI...", false), "CUTLASS");
  EXPECT_EQ(analyses::LibraryOf("_Z11regular_fftILj2048EE", false), "cuFFT");
  EXPECT_EQ(analyses::LibraryOf("triton_poi_fused_gelu_3", false), "Triton");
  EXPECT_EQ(analyses::LibraryOf("flash_fwd_kernel", false), "flash attention");
  EXPECT_EQ(analyses::LibraryOf("matmul_kernel", true), "generated");  // a Triton @jit, via cuLaunchKernel
  EXPECT_EQ(analyses::LibraryOf("_Z5RelaxPKfPfi", false), "");       // the program's own kernel
}

// torch.cuda.empty_cache() every step: cudaFree/cudaMalloc between the
// launches hold the host while the GPU runs dry.
TEST(RulesTest, AllocationInTheLoopYieldsImplicitSync) {
  TraceBuilder trace;
  Synth s(trace);
  const std::string kernel = "_ZN2at6native29vectorized_elementwise_kernelILi4EEEviT0_T1_";
  uint64_t h = kT0;
  for (int step = 0; step < 60; ++step) {
    const uint64_t start = h;
    for (int k = 0; k < 20; ++k) {
      h = s.Call(h, 120 * kUs, "cudaMalloc_v3020", 20);  // the block is not cached any more
      h = s.Kernel(h, 60 * kUs, kernel);  // shorter than the allocation: the GPU runs dry
    }
    h = s.Call(std::max(h, s.gpu_free_ns()), 400 * kUs, "cudaFree_v3020", 22);  // empty_cache()
    s.Step(start, h, static_cast<uint64_t>(step));
    h += 50 * kUs;
  }
  s.p().WriteEnd();
  const Result r = Analyze(trace, "emptycache");
  ASSERT_FALSE(WarningRules(r.findings()).empty()) << Describe(r.findings());
  EXPECT_EQ(WarningRules(r.findings()).front(), "implicit-sync") << Describe(r.findings());
  const Finding& f = r.findings().front();
  const analyses::GpuReport& g = r.report();
  ASSERT_FALSE(g.implicit.empty());
  EXPECT_EQ(g.implicit.front().group, model::kImplicitDeviceAlloc);
  EXPECT_GT(g.implicit_idle_ns, 0.3 * g.traced_window_ns());
  EXPECT_GT(g.implicit_blocked_ns, 0.5 * g.traced_window_ns());
  EXPECT_EQ(f.cost_ns, static_cast<uint64_t>(g.implicit_idle_ns + 0.5));
  std::string fixes;
  for (const std::string& fix : f.fixes) fixes += fix + "\n";
  EXPECT_NE(fixes.find("empty_cache"), std::string::npos) << fixes;  // a PyTorch program
  EXPECT_NE(fixes.find("expandable_segments:True"), std::string::npos) << fixes;
}

// CUDA_LAUNCH_BLOCKING=1: every launch returns after its kernel. The
// recorded environment names the cause; launch-bound is grouped under it.
TEST(RulesTest, BlockingLaunchesYieldSynchronousLaunchesCitingTheEnvironment) {
  for (const bool recorded : {true, false}) {
    TraceBuilder trace;
    Synth s(trace, 0x5157, 4242, {}, [recorded](proto::ProcessHeader& h) {
      if (!recorded) return;
      proto::KeyValue* kv = h.add_env();
      kv->set_key("CUDA_LAUNCH_BLOCKING");
      kv->set_value("1");
    });
    uint64_t h = kT0;
    for (int i = 0; i < 12'000; ++i) {
      h = s.BlockingKernel(h, i % 20 == 0 ? 100 * kUs : 4 * kUs, i % 20 == 0 ? "conv" : "relu");
      h += 15 * kUs;  // Python between ops
    }
    s.p().WriteEnd();
    const Result r = Analyze(trace, recorded ? "blocking_env" : "blocking");
    ASSERT_FALSE(r.findings().empty());
    const Finding& f = r.findings().front();
    EXPECT_EQ(f.rule, "synchronous-launches") << Describe(r.findings());
    EXPECT_NEAR(r.report().long_launches_blocking / r.report().long_launches, 1.0, 1e-9);
    EXPECT_EQ(f.summary.find("CUDA_LAUNCH_BLOCKING=1 (recorded") != std::string::npos, recorded)
        << f.summary;
    if (!recorded) {
      EXPECT_NE(f.summary.find("no recorded environment"), std::string::npos);
    }
    EXPECT_EQ(FindRule(r.findings(), "launch-bound"), nullptr) << "grouped: " << Describe(r.findings());
  }
  // Asynchronous launches of the same kernels return long before they end.
  TraceBuilder trace;
  Synth s(trace);
  uint64_t h = kT0;
  for (int i = 0; i < 3'000; ++i) h = s.Kernel(h, i % 3 == 0 ? 200 * kUs : 4 * kUs, "conv") + 60 * kUs;
  s.p().WriteEnd();
  const Result r = Analyze(trace, "async");
  EXPECT_EQ(FindRule(r.findings(), "synchronous-launches"), nullptr) << Describe(r.findings());
  EXPECT_EQ(r.report().long_launches_blocking, 0);
}

// A long gap after which the GPU runs kernels it never ran (compilation)
// is one-time start-up work: info, left out of the steady state. The same
// gap followed by the same kernels is a pause in the run.
TEST(RulesTest, CompilationGapIsOneTimeButAPauseIsALongGap) {
  for (const bool new_code : {true, false}) {
    TraceBuilder trace;
    Synth s(trace);
    uint64_t h = kT0;
    for (int i = 0; i < 2'000; ++i) h = s.Kernel(h, 2 * kMs, "eager_op") + 1'900 * kUs;
    h = std::max(h, s.gpu_free_ns()) + 3 * kS;  // compiling, or checkpointing
    for (int i = 0; i < 4'000; ++i) {
      h = s.Kernel(h, 2 * kMs, new_code ? "triton_poi_fused_0" : "eager_op") + 1'900 * kUs;
    }
    s.p().WriteEnd();
    const Result r = Analyze(trace, new_code ? "onetime" : "pause");
    if (new_code) {
      EXPECT_TRUE(WarningRules(r.findings()).empty()) << Describe(r.findings());
      const Finding* f = FindRule(r.findings(), "one-time-startup");
      ASSERT_NE(f, nullptr) << Describe(r.findings());
      EXPECT_EQ(f->severity, Severity::kInfo);
      EXPECT_EQ(r.gpu().one_time_gaps.size(), 1u);
      EXPECT_LT(r.report().idle_gap_share, 0.01);  // the gap is not steady-state idle
    } else {
      EXPECT_EQ(WarningRules(r.findings()), std::vector<std::string>{"long-gaps"})
          << Describe(r.findings());
      EXPECT_TRUE(r.gpu().one_time_gaps.empty());
    }
  }
}

// A checkpoint: kernels stop for a second while tensors are copied to the
// host. Not idle (copies run), but a pause in the GPU's work: long-gaps,
// with the copies grouped under it.
TEST(RulesTest, KernelFreePauseWithCopiesIsALongGap) {
  TraceBuilder trace;
  Synth s(trace);
  uint64_t h = kT0;
  for (int i = 0; i < 1'500; ++i) h = s.Kernel(h, 2 * kMs, "train_op") + 1'900 * kUs;
  h = std::max(h, s.gpu_free_ns());
  // Frames as the collector writes them (one per flush interval), not one
  // batch spanning more than the reader's reorder window.
  s.p().Flush();
  for (int i = 0; i < 50; ++i) {  // torch.save: D2H of each tensor, then writing it
    h = s.Copy(h, 12 * kMs, 24 << 20, proto::MEMCPY_DTOH, proto::MEMORY_PAGEABLE, true);
    h += 8 * kMs;
  }
  s.p().Flush();
  for (int i = 0; i < 1'500; ++i) h = s.Kernel(h, 2 * kMs, "train_op") + 1'900 * kUs;
  s.p().WriteEnd();
  const Result r = Analyze(trace, "checkpoint");
  ASSERT_FALSE(WarningRules(r.findings()).empty()) << Describe(r.findings());
  const Finding& f = r.findings().front();
  EXPECT_EQ(f.rule, "long-gaps") << Describe(r.findings());
  EXPECT_EQ(r.report().pause_count, 1);
  EXPECT_NEAR(r.report().pause_ns, 1.0e9, 0.02e9);
  EXPECT_NEAR(r.report().pause_copy_ns, 0.6e9, 0.02e9);
  EXPECT_EQ(r.report().long_gap_count, 0);  // no idle gap of 500 ms: copies ran
}

// A host-bound loop with a sync per step and kernels that change every step
// (nothing repeats on the GPU): the steps come from the host's sync calls.
TEST(StepInferenceTest, HostSyncCallsGiveStepsWhenTheGpuDoesNotRepeat) {
  TraceBuilder trace;
  Synth s(trace);
  uint64_t h = kT0;
  for (int step = 0; step < 200; ++step) {
    for (int k = 0; k < 3; ++k) {
      h = s.Kernel(h, 30 * kUs, "k_" + std::to_string(step) + "_" + std::to_string(k));
    }
    h = s.Sync(h);
    h += 2 * kMs;  // host code: shorter than the idle-gap threshold
  }
  s.p().WriteEnd();
  const Result r = Analyze(trace, "hoststeps");
  const analyses::GpuReport& g = r.report();
  EXPECT_EQ(g.step_source, "inferred");
  EXPECT_TRUE(g.step_anchor_host);
  EXPECT_NE(g.step_anchor.find("cudaStreamSynchronize calls of thread"), std::string::npos)
      << g.step_anchor;
  EXPECT_EQ(g.step_count, 200u);
  EXPECT_NEAR(g.step_period.p50, 2.1 * kMs, 0.05 * kMs);
  EXPECT_GT(g.steps_in_window, 190);
  EXPECT_EQ(WarningRules(r.findings()).front(), "host-bound") << Describe(r.findings());
}

TEST(RulesTest, CatalogueListsEveryRuleOnce) {
  std::vector<std::string> ids;
  for (const analyses::RuleInfo& r : analyses::RuleCatalogue()) {
    ids.push_back(r.id);
    EXPECT_GT(std::string(r.trigger).size(), 10u) << r.id;
    EXPECT_GT(std::string(r.source).size(), 2u) << r.id;
  }
  std::vector<std::string> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (const char* required : {"data-starvation", "launch-bound", "host-sync", "pageable-copies",
                               "copy-heavy", "long-gaps", "dominant-kernel", "incomplete-data",
                               "low-occupancy", "low-comm-overlap", "straggler-rank",
                               "host-bound", "implicit-sync", "synchronous-launches",
                               "one-time-startup"}) {
    EXPECT_NE(std::find(ids.begin(), ids.end(), required), ids.end()) << required;
  }
}

// A trigger that names a sampled metric names it as the sampler writes it
// (proto/metric_names.h): the documented text cannot drift from the name.
TEST(RulesTest, CatalogueNamesTheMetricsItJudgesAsTheSamplerWritesThem) {
  for (const analyses::RuleInfo& r : analyses::RuleCatalogue()) {
    if (std::string(r.id) == "memory-bandwidth-bound") {
      EXPECT_NE(std::string(r.trigger).find(std::string("(") + metric_names::kGpmDramBwUtil + ")"),
                std::string::npos)
          << r.trigger;
    }
  }
}

// Most severe first, then most costly: a critical finding is never listed
// below a warning, however cheap it is.
TEST(RulesTest, FindingsAreRankedBySeverityThenCost) {
  TraceBuilder trace;
  Synth s(trace);
  LoopOptions o;
  o.pageable_ns = 300 * kUs;
  o.config = 2;
  HealthyLoop(s, o);
  s.p().WriteEnd();
  const Result r = Analyze(trace, "ranked");
  ASSERT_GE(r.findings().size(), 2u) << Describe(r.findings());
  bool seen_info = false;
  for (size_t i = 0; i < r.findings().size(); ++i) {
    const Finding& f = r.findings()[i];
    const bool info = f.severity == Severity::kInfo;
    if (i > 0) {
      const Finding& prev = r.findings()[i - 1];
      EXPECT_GE(prev.severity, f.severity) << Describe(r.findings());
      if (prev.severity == f.severity) {
        EXPECT_GE(prev.cost_ns, f.cost_ns) << Describe(r.findings());
      }
    }
    seen_info |= info;
  }
  EXPECT_EQ(r.findings().front().rule, "low-sm-efficiency");
  EXPECT_TRUE(seen_info) << "the case has an info finding costlier than a warning: "
                         << Describe(r.findings());
}

// -------------------------------------------------------- idle breakdown --

// Two kernels on one stream; the second launched at `launch_ns` (0: no
// launch record), starting at `start_ns`; optionally a sync call [sync_start,
// sync_end) and CUPTI sync records. Returns the second op's gap split on the
// stream.
std::array<uint64_t, 4> StreamIdle(uint64_t launch_ns, uint64_t start_ns, uint64_t sync_start = 0,
                                   uint64_t sync_end = 0,
                                   const std::vector<format::SyncEvent>& records = {}) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x1D, 7);
  p.WriteHeader();
  const uint32_t launch = p.Intern("cudaLaunchKernel_v7000");
  p.Add(format::ApiCallEvent{kT0 - 20 * kUs, kT0 - 10 * kUs, proto::API_RUNTIME, 211, 1, 1, 0,
                             launch});
  format::KernelEvent k{};
  k.start_ns = kT0;
  k.end_ns = kT0 + 10 * kUs;
  k.name_id = p.Intern("k");
  k.context_id = 1;
  k.stream_id = 7;
  k.correlation_id = 1;
  p.Add(k);
  if (launch_ns != 0) {
    p.Add(format::ApiCallEvent{launch_ns, launch_ns + 5 * kUs, proto::API_RUNTIME, 211, 1, 2, 0,
                               launch});
  }
  k.start_ns = start_ns;
  k.end_ns = start_ns + 10 * kUs;
  k.correlation_id = 2;
  p.Add(k);
  if (sync_end != 0) {
    p.Add(format::ApiCallEvent{sync_start, sync_end, proto::API_RUNTIME, 131, 1, 3, 0,
                               p.Intern("cudaStreamSynchronize_v3020")});
  }
  for (const format::SyncEvent& r : records) p.Add(r);
  p.WriteEnd();
  const std::string path = TempPath("idle");
  EXPECT_TRUE(trace.WriteFile(path));
  const model::TraceModel m = model::BuildModel({path});
  unlink(path.c_str());
  EXPECT_EQ(m.gpus.size(), 1u);
  if (m.gpus.empty()) return {};
  EXPECT_EQ(m.gpus[0].streams.size(), 1u);
  return m.gpus[0].streams[0].idle_ns;
}

constexpr int kHost = static_cast<int>(GapCause::kHost);
constexpr int kSync = static_cast<int>(GapCause::kSync);
constexpr int kKernel = static_cast<int>(GapCause::kKernel);
constexpr int kOther = static_cast<int>(GapCause::kOther);

TEST(IdleGapTest, LaunchAfterTheGpuRanDryIsHostWait) {
  const auto idle = StreamIdle(kT0 + 50 * kUs, kT0 + 60 * kUs);
  EXPECT_EQ(idle[kHost], 50 * kUs);
  EXPECT_EQ(idle[kSync] + idle[kKernel] + idle[kOther], 0u);
}

TEST(IdleGapTest, QueuedWorkWithAShortGapIsKernelWait) {
  const auto idle = StreamIdle(kT0 + 2 * kUs, kT0 + 20 * kUs);
  EXPECT_EQ(idle[kKernel], 10 * kUs);
  EXPECT_EQ(idle[kHost] + idle[kSync] + idle[kOther], 0u);
}

TEST(IdleGapTest, QueuedWorkWaitingPastTheThresholdIsOther) {
  const auto idle = StreamIdle(kT0 + 2 * kUs, kT0 + 10 * kMs);
  EXPECT_EQ(idle[kOther], 10 * kMs - 10 * kUs);
  EXPECT_EQ(idle[kHost] + idle[kSync] + idle[kKernel], 0u);
}

TEST(IdleGapTest, UnknownLaunchIsKernelWaitOrOtherByLength) {
  EXPECT_EQ(StreamIdle(0, kT0 + 30 * kUs)[kKernel], 20 * kUs);
  EXPECT_EQ(StreamIdle(0, kT0 + 30 * kMs)[kOther], 30 * kMs - 10 * kUs);
}

TEST(IdleGapTest, GapBehindABlockingSyncIsSyncWait) {
  // The host waits in cudaStreamSynchronize until just after the kernel
  // ends, then launches 300 us later: all of it is the sync's.
  const auto idle = StreamIdle(kT0 + 310 * kUs, kT0 + 320 * kUs, kT0 + 5 * kUs, kT0 + 12 * kUs);
  EXPECT_EQ(idle[kSync], 310 * kUs);
  EXPECT_EQ(idle[kHost], 0u);
}

TEST(IdleGapTest, HostDelayLongAfterASyncIsHostWait) {
  // Returned from the sync at +12 us, then 8 ms elsewhere: sync wait up to
  // the return plus kSyncRelaunchNs, the rest host wait.
  const auto idle = StreamIdle(kT0 + 8 * kMs, kT0 + 8 * kMs + 10 * kUs, kT0 + 5 * kUs,
                               kT0 + 12 * kUs);
  EXPECT_EQ(idle[kSync], 2 * kUs + model::kSyncRelaunchNs);
  EXPECT_EQ(idle[kHost], 8 * kMs - 2 * kUs - model::kSyncRelaunchNs);
}

TEST(IdleGapTest, SyncStartingJustAfterTheGpuRanDryCounts) {
  // .item(): a blocking D2H copy ends, then cudaStreamSynchronize starts a
  // few microseconds later.
  const auto idle = StreamIdle(kT0 + 210 * kUs, kT0 + 220 * kUs, kT0 + 14 * kUs, kT0 + 16 * kUs);
  EXPECT_EQ(idle[kSync], 210 * kUs);
}

// Sync records (CUPTI's SYNCHRONIZATION kind) next to API rows: a gap whose
// start a record spans, with or without the sync call's own row. The first
// kernel ends at +10 us, the second is launched at +310 us. `polls`
// event-query records (no API row; CUPTI records cudaEventQuery as
// EVENT_SYNCHRONIZE) of `poll_ns` each start from +6 us, 20 ns apart.
std::array<uint64_t, 4> IdleWithSyncRecords(bool sync_row, int polls, uint64_t poll_ns) {
  std::vector<format::SyncEvent> records;
  format::SyncEvent sync{};
  sync.start_ns = kT0 + 5 * kUs;
  sync.end_ns = kT0 + 12 * kUs;
  sync.sync_kind = proto::SYNC_STREAM_SYNCHRONIZE;
  sync.context_id = 1;
  sync.stream_id = 7;
  sync.event_id = 0xffffffff;
  sync.correlation_id = 3;
  if (sync_row) records.push_back(sync);
  for (int i = 0; i < polls; ++i) {
    format::SyncEvent poll = sync;
    poll.sync_kind = proto::SYNC_EVENT_SYNCHRONIZE;
    poll.stream_id = 0xffffffff;
    poll.event_id = 9;
    poll.start_ns = kT0 + 6 * kUs + 20 * static_cast<uint64_t>(i);
    poll.end_ns = poll.start_ns + poll_ns;
    poll.correlation_id = 100 + i;
    records.push_back(poll);
  }
  // The sync call's row, when there is one, is the record's: +5 to +12 us.
  return StreamIdle(kT0 + 310 * kUs, kT0 + 320 * kUs, sync_row ? sync.start_ns : 0,
                    sync_row ? sync.end_ns : 0, records);
}

TEST(IdleGapTest, EventQueriesAreNotSyncWait) {
  // One query spanning the moment the GPU ran dry (+6 to +11 us), no sync
  // call: the host was polling, not blocked; the launch 300 us later is the
  // host's own delay.
  const auto idle = IdleWithSyncRecords(/*sync_row=*/false, /*polls=*/1, 5 * kUs);
  EXPECT_EQ(idle[kHost], 310 * kUs);
  EXPECT_EQ(idle[kSync], 0u);
}

TEST(IdleGapTest, EventQueriesDoNotHideTheSyncThatSpansTheGap) {
  // A cudaStreamSynchronize from +5 to +12 us, and 100 queries of 1 us
  // while it waits (another thread's NCCL watchdog), all done before the GPU
  // ran dry: the gap is still the sync's.
  const auto idle = IdleWithSyncRecords(/*sync_row=*/true, /*polls=*/100, 1 * kUs);
  EXPECT_EQ(idle[kSync], 310 * kUs);
  EXPECT_EQ(idle[kHost], 0u);
  // The same without the queries, as the baseline.
  EXPECT_EQ(IdleWithSyncRecords(true, 0, 0)[kSync], 310 * kUs);
}

TEST(IdleGapTest, IgnoresGapsBelowThresholdForIdleShare) {
  TraceBuilder trace;
  Synth s(trace);
  uint64_t h = kT0;
  // 1 ms kernels separated by 4 ms host gaps (below 5 ms), then one 20 ms gap.
  for (int i = 0; i < 20; ++i) h = s.Kernel(h, 1 * kMs, "k") + 5 * kMs;
  h += 20 * kMs;
  for (int i = 0; i < 20; ++i) h = s.Kernel(h, 1 * kMs, "k") + 5 * kMs;
  s.p().WriteEnd();
  const Result r = Analyze(trace, "threshold");
  const analyses::GpuReport& g = r.report();
  EXPECT_NEAR(g.gap_count, 1, 1e-9);
  EXPECT_NEAR(g.gap_idle.host_ns, 24 * kMs + 8 * kUs, 2 * kUs);
  model::ModelOptions o;
  o.idle_gap_threshold_ns = 3 * kMs;  // now every gap counts
  TraceBuilder trace2;
  Synth s2(trace2);
  h = kT0;
  for (int i = 0; i < 20; ++i) h = s2.Kernel(h, 1 * kMs, "k") + 5 * kMs;
  s2.p().WriteEnd();
  const Result r2 = Analyze(trace2, "threshold2", o);
  EXPECT_NEAR(r2.report().gap_count, 19, 1e-9);
}

// ------------------------------------------------ interval union / reorder --

TEST(IntervalUnionTest, MergesOverlapsAndReportsGaps) {
  IntervalUnion u;
  std::vector<Interval> closed;
  std::vector<Interval> gaps;
  const Interval in[] = {{0, 10}, {5, 15}, {15, 18}, {20, 30}, {25, 26}, {40, 50}};
  for (const Interval& i : in) {
    Interval c;
    if (u.Add(i.start_ns, i.end_ns, &c)) {
      closed.push_back(c);
      gaps.push_back({c.end_ns, i.start_ns});
    }
  }
  Interval c;
  ASSERT_TRUE(u.Finish(&c));
  closed.push_back(c);
  ASSERT_EQ(closed.size(), 3u);
  EXPECT_EQ(closed[0].end_ns, 18u);
  EXPECT_EQ(closed[1].start_ns, 20u);
  EXPECT_EQ(closed[1].end_ns, 30u);
  EXPECT_EQ(u.busy_ns(), 18u + 10u + 10u);
  ASSERT_EQ(gaps.size(), 2u);
  EXPECT_EQ(gaps[0].start_ns, 18u);
  EXPECT_EQ(gaps[1].length_ns(), 10u);
}

TEST(IntervalUnionTest, ShuffledInputThroughTheReorderQueueGivesTheSameUnion) {
  std::mt19937_64 rng(7);
  std::vector<Interval> intervals;
  uint64_t t = 1'000'000'000;
  for (int i = 0; i < 5'000; ++i) {
    t += rng() % 3'000;
    intervals.push_back({t, t + 500 + rng() % 4'000});  // overlaps and gaps
  }
  auto union_of = [](const std::vector<Interval>& in, uint64_t window_ns, uint64_t* late) {
    struct Item {
      uint64_t start_ns, end_ns;
    };
    model::ReorderQueue<Item> q(window_ns);
    IntervalUnion u;
    uint64_t gaps = 0;
    auto emit = [&](const Item& i) {
      Interval c;
      if (u.Add(i.start_ns, i.end_ns, &c)) gaps += i.start_ns - c.end_ns;
    };
    for (size_t i = 0; i < in.size(); ++i) {
      q.Push({in[i].start_ns, in[i].end_ns}, emit);
      if (i % 64 == 0) q.Advance(emit);
    }
    q.Drain(emit);
    Interval c;
    u.Finish(&c);
    *late = q.late();
    return std::make_pair(u.busy_ns(), gaps);
  };
  uint64_t late = 0;
  const auto sorted = union_of(intervals, 2'000'000, &late);
  // Shuffle within blocks of 256 (about 0.4 ms of records): well inside a
  // 2 ms window.
  std::vector<Interval> shuffled = intervals;
  for (size_t i = 0; i < shuffled.size(); i += 256) {
    std::shuffle(shuffled.begin() + static_cast<std::ptrdiff_t>(i),
                 shuffled.begin() + static_cast<std::ptrdiff_t>(std::min(i + 256, shuffled.size())),
                 rng);
  }
  const auto reordered = union_of(shuffled, 2'000'000, &late);
  EXPECT_EQ(late, 0u);
  EXPECT_EQ(reordered, sorted);
  // Brute force: mark every ns.
  const uint64_t base = intervals.front().start_ns;
  uint64_t last = 0;
  for (const Interval& i : intervals) last = std::max(last, i.end_ns);
  std::vector<bool> busy(last - base, false);
  for (const Interval& i : intervals) {
    for (uint64_t x = i.start_ns; x < i.end_ns; ++x) busy[x - base] = true;
  }
  EXPECT_EQ(sorted.first, static_cast<uint64_t>(std::count(busy.begin(), busy.end(), true)));
}

TEST(ReorderQueueTest, RecordsLaterThanTheWindowAreEmittedAndCounted) {
  struct Item {
    uint64_t start_ns, end_ns;
  };
  model::ReorderQueue<Item> q(10'000'000);
  std::vector<uint64_t> out;
  auto emit = [&](const Item& i) { out.push_back(i.start_ns); };
  for (uint64_t t = 0; t < 100; ++t) q.Push({1'000'000'000 + t * 1'000'000, 0}, emit);
  q.Advance(emit);
  EXPECT_EQ(q.late(), 0u);
  q.Push({1'000'000'000, 0}, emit);  // 99 ms late: its bucket is gone
  EXPECT_EQ(q.late(), 1u);
  q.Drain(emit);
  EXPECT_EQ(out.size(), 101u);
  EXPECT_EQ(q.pending(), 0u);
}

TEST(ModelBuilderTest, OutOfOrderBatchesGiveTheExactBusyTime) {
  // Kernels written in shuffled order across several batches.
  std::mt19937_64 rng(3);
  std::vector<format::KernelEvent> kernels;
  uint64_t t = kT0;
  for (int i = 0; i < 5'000; ++i) {
    format::KernelEvent k{};
    t += 5 * kUs + rng() % (20 * kUs);
    k.start_ns = t;
    k.end_ns = t + 4 * kUs + rng() % (30 * kUs);
    k.context_id = 1;
    k.stream_id = 7 + static_cast<uint32_t>(rng() % 3);
    k.correlation_id = static_cast<uint32_t>(i + 1);
    kernels.push_back(k);
  }
  IntervalUnion expected;
  for (const auto& k : kernels) {
    Interval c;
    expected.Add(k.start_ns, k.end_ns, &c);
  }
  Interval c;
  expected.Finish(&c);
  for (size_t i = 0; i < kernels.size(); i += 500) {
    std::shuffle(kernels.begin() + static_cast<std::ptrdiff_t>(i),
                 kernels.begin() + static_cast<std::ptrdiff_t>(std::min(i + 500, kernels.size())),
                 rng);
  }
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x00D, 9);
  p.WriteHeader();
  const uint32_t name = p.Intern("k");
  for (size_t i = 0; i < kernels.size(); ++i) {
    kernels[i].name_id = name;
    p.Add(kernels[i]);
    if (i % 700 == 699) p.Flush();
  }
  p.WriteEnd();
  const std::string path = TempPath("ooo");
  ASSERT_TRUE(trace.WriteFile(path));
  const model::TraceModel m = model::BuildModel({path});
  unlink(path.c_str());
  ASSERT_EQ(m.gpus.size(), 1u);
  EXPECT_EQ(m.gpus[0].busy_ns, expected.busy_ns());
  EXPECT_EQ(m.gpus[0].late_ops, 0u);
  EXPECT_EQ(m.gpus[0].kernel_count, 5'000u);
  EXPECT_EQ(m.gpus[0].streams.size(), 3u);
}

TEST(ModelBuilderTest, LaunchCallsInLaterBatchesStillMatch) {
  // CUPTI activity (kernels) and API records travel separately: here every
  // kernel's launch call arrives one batch after the kernel.
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x1A7E, 11);
  p.WriteHeader();
  const uint32_t launch = p.Intern("cudaLaunchKernel_v7000");
  std::vector<format::ApiCallEvent> pending;
  for (int i = 0; i < 1'000; ++i) {
    const uint64_t h = kT0 + static_cast<uint64_t>(i) * 100 * kUs;
    format::KernelEvent k{};
    k.start_ns = h + 30 * kUs;
    k.end_ns = h + 40 * kUs;
    k.name_id = p.Intern("k");
    k.context_id = 1;
    k.stream_id = 7;
    k.correlation_id = static_cast<uint32_t>(i + 1);
    p.Add(k);
    pending.push_back({h, h + 20 * kUs, proto::API_RUNTIME, 211, 1, k.correlation_id, 0, launch});
    if (i % 100 == 99) {
      p.Flush();
      for (const auto& a : pending) p.Add(a);
      pending.clear();
    }
  }
  p.WriteEnd();
  const std::string path = TempPath("match");
  ASSERT_TRUE(trace.WriteFile(path));
  const model::TraceModel m = model::BuildModel({path});
  unlink(path.c_str());
  ASSERT_EQ(m.gpus.size(), 1u);
  EXPECT_EQ(m.gpus[0].launches_matched, 1'000u);
  EXPECT_EQ(m.gpus[0].launches_unmatched, 0u);
  EXPECT_NEAR(m.gpus[0].queue_delay_ns.Percentile(50), 10 * kUs, 0.1 * kUs);
  EXPECT_EQ(m.gpus[0].shorter_than_launch, 1'000u);  // 10 us kernels, 20 us calls
  EXPECT_EQ(m.processes[0].launch_call_ns.count(), 1'000u);
}

TEST(ModelBuilderTest, StepsBeforeTheirKernelsArriveAreKept) {
  // NVTX ranges come through the host ring and reach the file long before
  // the CUPTI buffer with their kernels.
  TraceBuilder trace;
  Synth s(trace);
  LoopOptions o;
  o.steps = 10;
  o.emit_steps = false;
  for (int step = 0; step < o.steps; ++step) {
    const uint64_t start = kT0 + static_cast<uint64_t>(step) * o.step_ns;
    s.Step(start, start + o.step_ns - 10 * kUs, static_cast<uint64_t>(step));
  }
  s.p().Flush();  // the steps' frame comes first
  HealthyLoop(s, o);
  s.p().WriteEnd();
  const Result r = Analyze(trace, "steps");
  EXPECT_EQ(r.report().step_count, 10u);
  EXPECT_NEAR(r.report().step_period.p50, 19 * kMs, 0.2 * kMs);
  EXPECT_GT(r.report().step_compute_ns, 18 * kMs);
  EXPECT_EQ(r.report().window.start_ns, kT0 + 19 * kMs);
}

TEST(ModelBuilderTest, RecognisesStepNames) {
  for (const char* yes : {"step 12", "Step#3", "ProfilerStep#7", "iteration 5", "iter_9",
                          "train_step", "training step 4", "STEP", "train_iteration"}) {
    EXPECT_TRUE(model::IsStepName(yes)) << yes;
  }
  for (const char* no : {"forward", "stepper", "data loading", "backward step", "12", ""}) {
    EXPECT_FALSE(model::IsStepName(no)) << no;
  }
}

TEST(ModelBuilderTest, NormalizesApiNames) {
  EXPECT_EQ(model::NormalizeApiName("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(model::NormalizeApiName("cudaMemcpyAsync_ptsz_v7000"), "cudaMemcpyAsync");
  EXPECT_EQ(model::NormalizeApiName("cuLaunchKernelEx"), "cuLaunchKernelEx");
}

// ------------------------------------------------------------- histogram --

TEST(LogHistogramTest, PercentilesWithinOnePercentOfExact) {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> dist(9.5, 1.5);  // ~13 us median, long tail
  LogHistogram h;
  std::vector<uint64_t> values;
  for (int i = 0; i < 200'000; ++i) {
    const uint64_t v = static_cast<uint64_t>(dist(rng)) + 100;
    values.push_back(v);
    h.Add(v);
  }
  std::sort(values.begin(), values.end());
  auto exact = [&values](double p) {
    const double rank = p / 100 * static_cast<double>(values.size() - 1);
    const size_t lo = static_cast<size_t>(rank);
    const double f = rank - static_cast<double>(lo);
    const double a = static_cast<double>(values[lo]);
    return lo + 1 < values.size() ? a + (static_cast<double>(values[lo + 1]) - a) * f : a;
  };
  for (double p : {1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9}) {
    EXPECT_NEAR(h.Percentile(p) / exact(p), 1.0, 0.01) << "p" << p;
  }
  EXPECT_EQ(h.Percentile(0), static_cast<double>(values.front()));
  EXPECT_EQ(h.Percentile(100), static_cast<double>(values.back()));
  EXPECT_EQ(h.count(), values.size());
  double sum = 0, sq = 0;
  for (uint64_t v : values) sum += static_cast<double>(v);
  const double mean = sum / static_cast<double>(values.size());
  for (uint64_t v : values) sq += (static_cast<double>(v) - mean) * (static_cast<double>(v) - mean);
  EXPECT_NEAR(h.mean(), mean, 1e-6 * mean);
  EXPECT_NEAR(h.stddev(), std::sqrt(sq / static_cast<double>(values.size())), 1e-6 * mean);
}

TEST(LogHistogramTest, SmallValuesAreExact) {
  LogHistogram h;
  for (uint64_t v = 0; v < 64; ++v) h.Add(v);
  EXPECT_EQ(h.Percentile(50), 31.5);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 63u);
}

TEST(LogHistogramTest, MergeEqualsAddingEverything) {
  std::mt19937_64 rng(5);
  LogHistogram a, b, all;
  for (int i = 0; i < 10'000; ++i) {
    const uint64_t v = rng() % 1'000'000;
    (i % 3 == 0 ? a : b).Add(v);
    all.Add(v);
  }
  LogHistogram low;  // a disjoint, lower range merged both ways
  for (uint64_t v = 1; v < 50; ++v) low.Add(v);
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.sum(), all.sum());
  for (double p : {5.0, 50.0, 95.0, 99.0}) EXPECT_EQ(a.Percentile(p), all.Percentile(p));
  LogHistogram c = low;
  c.Merge(all);
  all.Merge(low);
  EXPECT_EQ(c.count(), all.count());
  for (double p : {1.0, 50.0, 99.0}) EXPECT_EQ(c.Percentile(p), all.Percentile(p));
}

TEST(LogHistogramTest, BucketsAreContiguousAndNarrow) {
  for (int b = 0; b < 40 * LogHistogram::kSubBuckets; ++b) {
    EXPECT_EQ(LogHistogram::BucketLow(b) + LogHistogram::BucketWidth(b),
              LogHistogram::BucketLow(b + 1));
    EXPECT_EQ(LogHistogram::BucketOf(LogHistogram::BucketLow(b)), b);
    EXPECT_LE(static_cast<double>(LogHistogram::BucketWidth(b)),
              std::max(1.0, static_cast<double>(LogHistogram::BucketLow(b)) / 64));
  }
}

// -------------------------------------------------------- timeline, top-k --

TEST(TimelineTest, SumsSpansAcrossWindowsAndCoarsens) {
  model::Timeline t(2, kT0, /*max_windows=*/8);
  t.AddSpan(0, kT0, kT0 + 3 * kMs);  // ~3 windows of 1.05 ms
  t.Add(1, kT0 + 1 * kMs, 5);
  // Whole windows are exact; a window cut by the query is prorated, so the
  // error is at most a window's width (1.05 ms here) at each end.
  EXPECT_NEAR(t.Sum(0, kT0 - 2 * kMs, kT0 + 5 * kMs), 3.0 * kMs, 1);
  EXPECT_NEAR(t.Sum(0, kT0, kT0 + 3 * kMs), 3.0 * kMs, 1.05 * kMs);
  EXPECT_NEAR(t.Sum(1, kT0, kT0 + 3 * kMs), 5, 5 * 0.5);
  EXPECT_NEAR(t.Total(0), 3.0 * kMs, 1);
  t.AddSpan(0, kT0 + 100 * kMs, kT0 + 101 * kMs);  // forces coarsening
  EXPECT_LE(t.windows(), 8u);
  EXPECT_NEAR(t.Total(0), 4.0 * kMs, 1);
  EXPECT_NEAR(t.Total(1), 5, 1e-9);
  EXPECT_NEAR(t.Sum(0, kT0 + 50 * kMs, kT0 + 200 * kMs), 1.0 * kMs, 0.01 * kMs);
}

TEST(TopKTest, KeepsTheLargestInOrder) {
  model::TopK<int> top(3);
  for (int i : {5, 1, 9, 3, 7, 9}) top.Add(static_cast<uint64_t>(i), i);
  const auto sorted = top.Sorted();
  ASSERT_EQ(sorted.size(), 3u);
  EXPECT_EQ(sorted[0].first, 9u);
  EXPECT_EQ(sorted[1].first, 9u);
  EXPECT_EQ(sorted[2].first, 7u);
}

// ----------------------------------------------------------------- names --

TEST(NamesTest, DemanglesAndShortensKernelNames) {
  EXPECT_EQ(analyses::Demangle("_Z6squarePfi"), "square(float*, int)");
  EXPECT_EQ(analyses::Demangle("nvjet_sm90_tst_128x256"), "nvjet_sm90_tst_128x256");
  const char* torch =
      "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_"
      "T1_";
  EXPECT_EQ(analyses::CompactKernelName(torch),
            "vectorized_elementwise_kernel<4, FillFunctor<float>, array<char*, 1ul> >");
  EXPECT_EQ(analyses::KernelBaseName(torch), "vectorized_elementwise_kernel");
  EXPECT_EQ(analyses::KernelBaseName("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN"),
            "nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN");
  EXPECT_EQ(analyses::Truncate("abcdefgh", 6), "abc...");
  EXPECT_EQ(analyses::ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(analyses::NcuCommand("_Z6squarePfi", {}),
            "ncu --kernel-name regex:square --launch-count 3 --set full -o gpscope_square "
            "YOUR_PROGRAM");
}

// kSyncBlockedNs is the time in which some thread was blocked in a sync
// call: overlapping calls on two threads count once, a call counts in the
// windows it covers (not all at its start), and calls that arrive out of
// order (two threads' records interleave) are still merged.
TEST(ModelBuilderTest, SyncBlockedTimeIsTheUnionOverThreadsSpreadOverTime) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x5AC, 12);
  p.WriteHeader();
  const uint32_t sync = p.Intern("cudaDeviceSynchronize_v3020");
  format::KernelEvent k{};
  k.start_ns = kT0;
  k.end_ns = kT0 + 1 * kMs;
  k.name_id = p.Intern("k");
  k.context_id = 1;
  k.stream_id = 7;
  p.Add(k);
  // Thread 2's call comes first in the file although it starts later.
  p.Add(format::ApiCallEvent{kT0 + 50 * kMs, kT0 + 150 * kMs, proto::API_RUNTIME, 165, 2, 2, 0,
                             sync});
  p.Add(format::ApiCallEvent{kT0 + 10 * kMs, kT0 + 110 * kMs, proto::API_RUNTIME, 165, 1, 1, 0,
                             sync});
  p.Flush();
  p.Add(format::ApiCallEvent{kT0 + 300 * kMs, kT0 + 310 * kMs, proto::API_RUNTIME, 165, 1, 3, 0,
                             sync});
  p.WriteEnd();
  const std::string path = TempPath("sync_union");
  ASSERT_TRUE(trace.WriteFile(path));
  const model::TraceModel m = model::BuildModel({path});
  unlink(path.c_str());
  ASSERT_EQ(m.processes.size(), 1u);
  const model::Timeline& t = m.processes[0].timeline;
  // [10, 150) ms and [300, 310) ms: 150 ms, not 100 + 100 + 10.
  EXPECT_NEAR(t.Total(model::kSyncBlockedNs), 150.0 * kMs, 1.0 * kMs);
  // Within [kT0, kT0 + 100 ms) only 90 ms were blocked (the first call's
  // whole 100 ms at its start read as more than the window).
  EXPECT_LE(t.Sum(model::kSyncBlockedNs, kT0, kT0 + 100 * kMs), 91.0 * kMs);
  EXPECT_GE(t.Sum(model::kSyncBlockedNs, kT0, kT0 + 100 * kMs), 89.0 * kMs);
  EXPECT_NEAR(t.Total(model::kSyncCalls), 3.0, 1e-9);
}

}  // namespace
}  // namespace gpscope
