// Tests of tools/analyses/window_summary.h: a capture window's summary is
// the summary analyses' own numbers (gpu_report.h) and top finding
// (rules.h), read from a trace in memory; and it reads back from the
// record the node monitor writes (proto/batch_builder.h).
#include "tools/analyses/window_summary.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "proto/batch_builder.h"
#include "tests/testing/synth.h"
#include "tests/testing/trace_builder.h"

namespace gpscope::analyses {
namespace {

using testing::HealthyLoop;
using testing::Synth;
using testing::TraceBuilder;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kT0 = 2'000'000'000;  // CUPTI ns; DefaultHeader maps 1e9 to 1.7e18

void Identity(proto::ProcessHeader& h) {
  h.set_hostname("node7");
  h.mutable_identity()->set_job_id("job-42");
  h.mutable_identity()->set_rank(3);
}

void AddMetric(Synth& s, uint32_t id, const std::string& name, double value) {
  proto::MetricDescriptor* d = s.p().batch().add_metric_descriptors();
  d->set_id(id);
  d->set_name(name);
  d->set_scope(proto::SCOPE_DEVICE);
  for (int i = 0; i < 95; ++i) {
    s.p().Add(format::MetricSample{kT0 + static_cast<uint64_t>(i) * 10 * kMs, id, value});
  }
}

std::unique_ptr<SummaryResult> FromTrace(const TraceBuilder& trace) {
  return ComputeSummaryResultFromBuffer("window.gpscope", trace.bytes().data(),
                                        trace.bytes().size(), model::ModelOptions{},
                                        ReportOptions{});
}

TEST(WindowSummaryTest, ABusyWindowCarriesTheSummaryAnalysesNumbers) {
  TraceBuilder trace;
  Synth s(trace, 0x5157, 4242, {}, Identity);
  HealthyLoop(s, {});
  AddMetric(s, 1, "gpm.sm_util", 70.0);
  AddMetric(s, 2, "gpm.dram_bw_util", 30.0);
  s.p().WriteEnd();
  const std::unique_ptr<SummaryResult> r = FromTrace(trace);
  const WindowSummary w = SummarizeWindow(*r, {kT0, kT0 + 1000 * kMs});

  EXPECT_EQ(w.process_uid, 0x5157u);
  EXPECT_EQ(w.pid, 4242u);
  EXPECT_EQ(w.hostname, "node7");
  EXPECT_EQ(w.job_id, "job-42");
  EXPECT_EQ(w.rank, 3);
  EXPECT_EQ(w.start_realtime_ns, 1'700'000'000'000'000'000ull + kT0 - 1'000'000'000);
  EXPECT_EQ(w.end_realtime_ns, w.start_realtime_ns + 1000 * kMs);
  ASSERT_EQ(w.gpus.size(), 1u);
  const GpuReport& g = r->report.gpus[0];
  const WindowGpuSummary& x = w.gpus[0];
  EXPECT_EQ(x.idle_share, g.idle_gap_share);
  EXPECT_EQ(x.busy_share, g.busy_share);
  EXPECT_LT(x.idle_share, 0.01);
  EXPECT_GT(x.busy_share, 0.95);
  EXPECT_DOUBLE_EQ(x.sm_util_pct, 70.0);
  EXPECT_FALSE(x.sm_util_estimated);
  EXPECT_DOUBLE_EQ(x.mem_bw_util_pct, 30.0);
  EXPECT_EQ(x.kernels, 500u);
  EXPECT_NEAR(static_cast<double>(x.kernel_p50_ns), 1.9e6, 0.1e6);
  EXPECT_NEAR(static_cast<double>(x.kernel_p95_ns), 1.9e6, 0.1e6);
  EXPECT_EQ(x.traced_ns, static_cast<uint64_t>(g.traced_window_ns() + 0.5));
  // A healthy window: nothing above info.
  EXPECT_TRUE(w.top_severity.empty() || w.top_severity == "info") << w.top_rule;
  EXPECT_EQ(w.events, r->model.processes[0].events);
}

TEST(WindowSummaryTest, AnIdleHeavyWindowNamesItsTopFindingAndItsCostShare) {
  TraceBuilder trace;
  Synth s(trace, 0x5157, 4242, {}, Identity);
  testing::HostBoundLoop(s, kT0);
  s.p().WriteEnd();
  const std::unique_ptr<SummaryResult> r = FromTrace(trace);
  const WindowSummary w = SummarizeWindow(*r, {});
  ASSERT_FALSE(r->findings.empty());
  EXPECT_EQ(w.top_rule, r->findings[0].rule);
  EXPECT_EQ(w.top_rule, "host-bound");
  EXPECT_EQ(w.top_severity, "critical");
  EXPECT_EQ(w.top_title, r->findings[0].title);
  EXPECT_EQ(w.top_cost_ns, r->findings[0].cost_ns);
  EXPECT_DOUBLE_EQ(w.top_cost_share, static_cast<double>(r->findings[0].cost_ns) /
                                         r->report.gpus[0].traced_window_ns());
  EXPECT_GT(w.top_cost_share, 0.8);
  EXPECT_LE(w.top_cost_share, 1.0);
  ASSERT_EQ(w.gpus.size(), 1u);
  EXPECT_GT(w.gpus[0].idle_share, 0.85);
  EXPECT_TRUE(w.gpus[0].sm_util_estimated) << "no GPM samples: the launch-shape estimate";
  EXPECT_EQ(w.gpus[0].mem_bw_util_pct, -1);
  // Without bounds: the process's first and last event.
  EXPECT_EQ(w.start_realtime_ns, r->model.processes[0].clocks.ToRealtimeNs(
                                     r->model.processes[0].first_ns));
}

TEST(WindowSummaryTest, ReadsBackFromTheMonitorsRecord) {
  const format::WindowGpuRecord gpu{1, format::MakeStringRef("GPU-1"), 0.5, 0.4, -1, false,
                                    -1, 2000, 9000, 77, 3000};
  format::WindowSummaryRecord r{};
  r.process_uid = 9;
  r.pid = 10;
  r.hostname = format::MakeStringRef("h");
  r.job_id = format::MakeStringRef("j");
  r.rank = 0;
  r.close_reason = format::MakeStringRef("duty_schedule");
  r.gpus = &gpu;
  r.gpu_count = 1;
  r.top_rule = format::MakeStringRef("long-gaps");
  r.top_severity = format::MakeStringRef("warning");
  r.top_cost_share = 0.25;
  format::BatchBuilder b(4096);
  b.Begin(0);
  ASSERT_TRUE(b.AddWindowSummary(r));
  std::vector<uint8_t> out(b.encoded_bytes_estimate());
  const size_t n = b.FinishChunk(1, 2, 3, out.data(), out.size());
  proto::Chunk c;
  ASSERT_TRUE(c.ParseFromArray(out.data(), static_cast<int>(n)));
  ASSERT_EQ(c.batch().window_summaries_size(), 1);
  const WindowSummary w = FromProto(c.batch().window_summaries(0));
  EXPECT_EQ(w.process_uid, 9u);
  EXPECT_EQ(w.rank, 0);
  EXPECT_EQ(w.close_reason, "duty_schedule");
  ASSERT_EQ(w.gpus.size(), 1u);
  EXPECT_EQ(w.gpus[0].uuid, "GPU-1");
  EXPECT_EQ(w.gpus[0].idle_share, 0.5);
  EXPECT_EQ(w.gpus[0].sm_util_pct, -1);
  EXPECT_EQ(w.gpus[0].kernels, 77u);
  EXPECT_EQ(w.top_rule, "long-gaps");
  EXPECT_EQ(w.top_cost_share, 0.25);
}

}  // namespace
}  // namespace gpscope::analyses
