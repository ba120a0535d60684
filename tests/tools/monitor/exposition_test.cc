// Tests of tools/monitor/exposition.h: metric names, the two text formats,
// escaping and staleness.
#include "tools/monitor/exposition.h"

#include <gtest/gtest.h>

#include <string>

#include "metrics/gpu_backend.h"

namespace gpscope::monitor {
namespace {

TEST(ExpositionTest, EveryTraceMetricMapsToAValidDocumentedName) {
  for (int m = 0; m < metrics::kGpuMetricCount; ++m) {
    FamilySpec f;
    const char* name = metrics::GetGpuMetricInfo(m).name;
    ASSERT_TRUE(MapTraceMetric(name, 1, &f)) << name;
    EXPECT_TRUE(IsValidMetricName(f.name)) << f.name;
    EXPECT_EQ(f.name.rfind("gpscope_gpu_", 0), 0u) << f.name;
    EXPECT_EQ(f.help.find("not documented"), std::string::npos) << name;
  }
  FamilySpec f;
  ASSERT_TRUE(MapTraceMetric("gpm.sm_util", 1, &f));
  EXPECT_EQ(f.name, "gpscope_gpu_sm_util_percent");
  ASSERT_TRUE(MapTraceMetric("nvml.process_memory_bytes", 2, &f));
  EXPECT_EQ(f.name, "gpscope_gpu_process_memory_bytes");
  ASSERT_TRUE(MapTraceMetric("nvml.sm_clock_mhz", 1, &f));
  EXPECT_EQ(f.name, "gpscope_gpu_sm_clock_hertz");
  EXPECT_EQ(f.scale, 1e6);
  EXPECT_FALSE(MapTraceMetric("host.thread_cpu_pct", 4, &f));
}

TEST(ExpositionTest, UnknownTraceMetricsGetASanitizedName) {
  FamilySpec f;
  ASSERT_TRUE(MapTraceMetric("gpm.new-thing/x", 1, &f));
  EXPECT_EQ(f.name, "gpscope_gpm_new_thing_x");
  EXPECT_TRUE(IsValidMetricName(f.name));
}

TEST(ExpositionTest, NameValidation) {
  EXPECT_TRUE(IsValidMetricName("a_b:c9"));
  EXPECT_FALSE(IsValidMetricName("9abc"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_FALSE(IsValidMetricName(""));
}

TEST(ExpositionTest, FormatsValuesAsPrometheusReadsThem) {
  EXPECT_EQ(FormatValue(12), "12");
  EXPECT_EQ(FormatValue(0.5), "0.5");
  EXPECT_EQ(FormatValue(-3), "-3");
  EXPECT_EQ(FormatValue(75161927680.0), "75161927680");
  EXPECT_EQ(FormatValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatValue(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(FormatValue(0.0 / 0.0), "NaN");
  EXPECT_EQ(std::stod(FormatValue(0.1 + 0.2)), 0.1 + 0.2);
}

TEST(ExpositionTest, EscapesLabelValues) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

TEST(ExpositionTest, RendersHelpTypeAndGroupedSeries) {
  MetricStore store;
  FamilySpec sm;
  ASSERT_TRUE(MapTraceMetric("gpm.sm_util", 1, &sm));
  const uint32_t a = store.AddSeries(sm, {{"gpu", "0"}, {"uuid", "GPU-a"}});
  FamilySpec power;
  ASSERT_TRUE(MapTraceMetric("nvml.power_w", 1, &power));
  const uint32_t p = store.AddSeries(power, {{"gpu", "0"}, {"uuid", "GPU-a"}});
  const uint32_t b = store.AddSeries(sm, {{"gpu", "1"}, {"uuid", "GPU-\"b\""}});
  store.Stage(a, 87.5);
  store.Stage(p, 610);
  store.Stage(b, 3);
  store.Commit();
  const std::string page = store.Render(ExpositionFormat::kPrometheusText);
  EXPECT_EQ(page,
            "# HELP gpscope_gpu_sm_util_percent Percent of SMs busy, averaged over the last "
            "sample period (GPM).\n"
            "# TYPE gpscope_gpu_sm_util_percent gauge\n"
            "gpscope_gpu_sm_util_percent{gpu=\"0\",uuid=\"GPU-a\"} 87.5\n"
            "gpscope_gpu_sm_util_percent{gpu=\"1\",uuid=\"GPU-\\\"b\\\"\"} 3\n"
            "# HELP gpscope_gpu_power_watts Power draw.\n"
            "# TYPE gpscope_gpu_power_watts gauge\n"
            "gpscope_gpu_power_watts{gpu=\"0\",uuid=\"GPU-a\"} 610\n");
  EXPECT_EQ(store.scrapes(), 1u);
}

TEST(ExpositionTest, OpenMetricsNamesCountersWithoutTotalAndEndsWithEof) {
  MetricStore store;
  const uint32_t c = store.AddSeries(
      FamilySpec{"gpscope_monitor_samples_total", "Rounds.", MetricType::kCounter, 1, true}, {});
  store.Stage(c, 42);
  store.Commit();
  EXPECT_EQ(store.Render(ExpositionFormat::kOpenMetrics),
            "# HELP gpscope_monitor_samples Rounds.\n"
            "# TYPE gpscope_monitor_samples counter\n"
            "gpscope_monitor_samples_total 42\n"
            "# EOF\n");
  EXPECT_EQ(store.Render(ExpositionFormat::kPrometheusText),
            "# HELP gpscope_monitor_samples_total Rounds.\n"
            "# TYPE gpscope_monitor_samples_total counter\n"
            "gpscope_monitor_samples_total 42\n");
}

TEST(ExpositionTest, ScalesValuesToBaseUnits) {
  MetricStore store;
  FamilySpec clock;
  ASSERT_TRUE(MapTraceMetric("nvml.sm_clock_mhz", 1, &clock));
  const uint32_t h = store.AddSeries(clock, {{"gpu", "0"}});
  store.Stage(h, 1980);
  store.Commit();
  EXPECT_NE(store.Render(ExpositionFormat::kPrometheusText)
                .find("gpscope_gpu_sm_clock_hertz{gpu=\"0\"} 1980000000\n"),
            std::string::npos);
}

TEST(ExpositionTest, StaleSeriesLeaveThePageAndNeverStaleOnesStay) {
  MetricStore store(/*stale_rounds=*/2);
  FamilySpec mem;
  ASSERT_TRUE(MapTraceMetric("nvml.process_memory_bytes", 2, &mem));
  const uint32_t proc = store.AddSeries(mem, {{"gpu", "0"}, {"pid", "42"}});
  const uint32_t info = store.AddSeries(
      FamilySpec{"gpscope_monitor_info", "Info.", MetricType::kGauge, 1, true}, {});
  store.Stage(proc, 1024);
  store.Stage(info, 1);
  store.Commit();  // round 1
  EXPECT_NE(store.Render(ExpositionFormat::kPrometheusText).find("pid=\"42\""), std::string::npos);
  store.Commit();  // round 2: the process was not seen; one missed round is tolerated
  EXPECT_NE(store.Render(ExpositionFormat::kPrometheusText).find("pid=\"42\""), std::string::npos);
  store.Commit();  // round 3: gone
  const std::string page = store.Render(ExpositionFormat::kPrometheusText);
  EXPECT_EQ(page.find("pid=\"42\""), std::string::npos);
  EXPECT_EQ(page.find("gpscope_gpu_process_memory_bytes"), std::string::npos);  // no empty family
  EXPECT_NE(page.find("gpscope_monitor_info 1\n"), std::string::npos);
}

// Was a bug (seen on the H200 at 100 ms): per-process series are read every
// second, so with the store's 2-round default they left the page between
// reads. A family's own stale_rounds keeps them.
TEST(ExpositionTest, AFamilysOwnStaleRoundsOverrideTheStoreDefault) {
  MetricStore store(/*stale_rounds=*/2);
  FamilySpec mem;
  ASSERT_TRUE(MapTraceMetric("nvml.process_memory_bytes", 2, &mem));
  mem.stale_rounds = 20;  // read every 1 s, sampled every 100 ms
  const uint32_t proc = store.AddSeries(mem, {{"gpu", "0"}, {"pid", "42"}});
  store.Stage(proc, 1024);
  store.Commit();
  for (int round = 2; round <= 20; ++round) {
    store.Commit();
    ASSERT_NE(store.Render(ExpositionFormat::kPrometheusText).find("pid=\"42\""),
              std::string::npos)
        << "round " << round;
  }
  store.Commit();  // round 21: 20 rounds without a value
  EXPECT_EQ(store.Render(ExpositionFormat::kPrometheusText).find("pid=\"42\""), std::string::npos);
}

TEST(ExpositionTest, RemovedSeriesAreNotRendered) {
  MetricStore store;
  FamilySpec sm;
  ASSERT_TRUE(MapTraceMetric("gpm.sm_util", 1, &sm));
  const uint32_t a = store.AddSeries(sm, {{"gpu", "0"}});
  const uint32_t b = store.AddSeries(sm, {{"gpu", "1"}});
  store.Stage(a, 1);
  store.Stage(b, 2);
  store.Commit();
  store.RemoveSeries(a);
  EXPECT_EQ(store.live_series(), 1u);
  const std::string page = store.Render(ExpositionFormat::kPrometheusText);
  EXPECT_EQ(page.find("gpu=\"0\""), std::string::npos);
  EXPECT_NE(page.find("gpu=\"1\""), std::string::npos);
}

TEST(ExpositionTest, RemovedSlotsAreReusedWithoutTheirStagedValues) {
  MetricStore store;
  FamilySpec mem;
  ASSERT_TRUE(MapTraceMetric("nvml.process_memory_bytes", 2, &mem));
  const uint32_t old_proc = store.AddSeries(mem, {{"pid", "1"}});
  store.Stage(old_proc, 111);
  store.RemoveSeries(old_proc);  // e.g. the GPU sampler is renewed mid-round
  const uint32_t new_proc = store.AddSeries(mem, {{"pid", "2"}});
  EXPECT_EQ(new_proc, old_proc);  // the table does not grow with churn
  store.Commit();
  EXPECT_EQ(store.Render(ExpositionFormat::kPrometheusText), "");  // 111 was not carried over
  store.Stage(new_proc, 222);
  store.Commit();
  EXPECT_NE(store.Render(ExpositionFormat::kPrometheusText)
                .find("gpscope_gpu_process_memory_bytes{pid=\"2\"} 222\n"),
            std::string::npos);
}

TEST(ExpositionTest, NegotiatesOpenMetricsOnlyWhenAsked) {
  EXPECT_EQ(NegotiateFormat(""), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(NegotiateFormat("text/plain;version=0.0.4"), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(NegotiateFormat("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
            ExpositionFormat::kOpenMetrics);
}

}  // namespace
}  // namespace gpscope::monitor
