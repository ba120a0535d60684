// tests/tools/windows_test.cc: windows and minute trends (exact per-window
// counters, --window-ms, coarsening of long runs), the CSV tables, and steps
// found without NVTX markers, on synthetic traces.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "tests/testing/synth.h"
#include "tests/testing/trace_builder.h"
#include "tools/analyses/windows.h"
#include "tools/analyze/cli.h"
#include "tools/analyze/summary.h"
#include "tools/model/model_builder.h"
#include "tools/model/timeline.h"

namespace gpscope {
namespace {

using analyses::WindowTable;
using testing::Synth;
using testing::TraceBuilder;

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kS = 1'000'000'000;
constexpr uint64_t kT0 = 2 * kS;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "windows_test." + std::to_string(getpid()) + "." + name +
         ".gpscope";
}

std::unique_ptr<analyze::SummaryResult> Analyze(TraceBuilder& trace, const std::string& name,
                                                model::ModelOptions options = {}) {
  const std::string path = TempPath(name);
  EXPECT_TRUE(trace.WriteFile(path));
  auto r = analyze::ComputeSummaryResult({path}, options, analyses::ReportOptions{});
  unlink(path.c_str());
  return r;
}

struct Output {
  int code;
  std::string out, err;
};

Output RunCli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = analyze::Run(args, out, err);
  return {code, out.str(), err.str()};
}

void AddDescriptor(TraceBuilder::Process& p, uint32_t id, const std::string& name,
                   proto::MetricScope scope, uint32_t pid) {
  proto::MetricDescriptor* d = p.batch().add_metric_descriptors();
  d->set_id(id);
  d->set_name(name);
  d->set_scope(scope);
  d->set_device_id(0);
  d->set_pid(pid);
}

format::MemcpyEvent Copy(uint64_t start_ns, uint64_t bytes, uint32_t kind) {
  format::MemcpyEvent c{};
  c.start_ns = start_ns;
  c.end_ns = start_ns + 100 * kUs;
  c.bytes = bytes;
  c.copy_kind = kind;
  c.src_kind = kind == proto::MEMCPY_HTOD ? proto::MEMORY_PINNED : proto::MEMORY_DEVICE;
  c.dst_kind = kind == proto::MEMCPY_HTOD ? proto::MEMORY_DEVICE : proto::MEMORY_PINNED;
  c.context_id = 1;
  c.stream_id = 7;
  c.flags = 1;
  return c;
}

// ----------------------------------------------------------- timeline --

TEST(TimelineTest, ArbitraryWidthWindowsAreExactAndCoarsenByPairs) {
  model::Timeline t(2, 1'050 * kMs, /*max_windows=*/4, /*first_width_ns=*/100 * kMs);
  EXPECT_EQ(t.anchor_ns(), 1'000 * kMs);  // rounded down to the width
  t.AddSpan(0, 1'050 * kMs, 1'250 * kMs);
  ASSERT_EQ(t.windows(), 3u);
  EXPECT_EQ(t.Value(0, 0), 50.0 * kMs);
  EXPECT_EQ(t.Value(0, 1), 100.0 * kMs);
  EXPECT_EQ(t.Value(0, 2), 50.0 * kMs);
  t.Add(1, 1'399 * kMs, 1);
  EXPECT_EQ(t.window_ns(), 100 * kMs);
  t.Add(1, 1'450 * kMs, 1);  // a fifth window: pairs merge, width 200 ms
  EXPECT_EQ(t.window_ns(), 200 * kMs);
  ASSERT_EQ(t.windows(), 3u);
  EXPECT_EQ(t.window_start_ns(1), 1'200 * kMs);
  EXPECT_EQ(t.Value(0, 0), 150.0 * kMs);
  EXPECT_EQ(t.Value(0, 1), 50.0 * kMs);
  EXPECT_EQ(t.Value(1, 1), 1.0);
  EXPECT_EQ(t.Value(1, 2), 1.0);
  EXPECT_EQ(t.Sum(0, 0, 2'000 * kMs), 200.0 * kMs);
  EXPECT_EQ(t.Sum(0, 1'000 * kMs, 1'100 * kMs), 75.0 * kMs);  // half of a 200 ms window
  EXPECT_EQ(t.first_width_ns(), 100 * kMs);
}

// ------------------------------------------------------------ windows --

// 0.5 s of kernels (1 ms every 2 ms), an H2D copy, a D2H copy, a last kernel
// at 2.95 s; SM/tensor/CPU samples in the first windows.
void BuildWindowsTrace(TraceBuilder& trace) {
  TraceBuilder::Process& p = trace.AddProcess(0xAA, 77);
  p.WriteHeader();
  AddDescriptor(p, 1, "gpm.sm_util", proto::SCOPE_DEVICE, 0);
  AddDescriptor(p, 2, "gpm.tensor_util", proto::SCOPE_DEVICE, 0);
  AddDescriptor(p, 3, "host.process_cpu_user_pct", proto::SCOPE_PROCESS, 77);
  for (int i = 0; i < 250; ++i) p.AddKernel(kT0 + static_cast<uint64_t>(i) * 2 * kMs, kMs, "gemm");
  p.Add(Copy(kT0 + 550 * kMs, 1 << 20, proto::MEMCPY_HTOD));
  p.Add(Copy(kT0 + 650 * kMs, 4096, proto::MEMCPY_DTOH));
  p.AddKernel(kT0 + 950 * kMs, kMs, "gemm");
  p.Add(format::MetricSample{kT0 + 50 * kMs, 1, 80});
  p.Add(format::MetricSample{kT0 + 150 * kMs, 1, 60});
  p.Add(format::MetricSample{kT0 + 50 * kMs, 2, 40});
  p.Add(format::MetricSample{kT0 + 50 * kMs, 3, 150});
  p.Add(format::MetricSample{kT0 + 60 * kMs, 3, 50});
  p.WriteEnd();
}

TEST(WindowsTest, RowsHoldBusyKernelsCopiesIdleAndSamplesPerWindow) {
  TraceBuilder trace;
  BuildWindowsTrace(trace);
  const auto r = Analyze(trace, "rows");
  const WindowTable& w = r->report.gpus.at(0).windows;
  EXPECT_EQ(w.requested_ns, 100 * kMs);
  EXPECT_EQ(w.width_ns, 100 * kMs);
  EXPECT_FALSE(w.coarsened);
  ASSERT_EQ(w.rows.size(), 10u);
  EXPECT_EQ(w.rows[0].start_ns, kT0);
  EXPECT_EQ(w.rows[9].end_ns, kT0 + kS);
  const auto& v0 = w.rows[0].values;
  EXPECT_NEAR(v0[analyses::kColBusyShare], 0.5, 1e-9);
  EXPECT_EQ(v0[analyses::kColKernelCount], 50);
  EXPECT_EQ(v0[analyses::kColKernelMeanNs], 1.0 * kMs);
  EXPECT_EQ(v0[analyses::kColSmUtilPct], 80);
  EXPECT_EQ(v0[analyses::kColTensorUtilPct], 40);
  EXPECT_EQ(v0[analyses::kColCpuUserPct], 100);  // (150 + 50) / 2
  EXPECT_TRUE(std::isnan(v0[analyses::kColDramUtilPct]));  // not sampled
  EXPECT_EQ(w.rows[1].values[analyses::kColSmUtilPct], 60);
  EXPECT_EQ(w.rows[5].values[analyses::kColH2dBytes], 1 << 20);
  EXPECT_EQ(w.rows[6].values[analyses::kColD2hBytes], 4096);
  EXPECT_EQ(w.rows[5].values[analyses::kColKernelCount], 0);
  EXPECT_TRUE(std::isnan(w.rows[5].values[analyses::kColKernelMeanNs]));
  // 2.6501 -> 2.95 s is one idle gap: windows 7 and 8 are idle throughout.
  EXPECT_EQ(w.rows[7].values[analyses::kColIdleGapShare], 1.0);
  EXPECT_EQ(w.rows[8].values[analyses::kColBusyShare], 0.0);
  EXPECT_EQ(w.rows[9].values[analyses::kColKernelCount], 1);
  double kernels = 0;
  for (const analyses::WindowRow& row : w.rows) kernels += row.values[analyses::kColKernelCount];
  EXPECT_EQ(kernels, 251);
  const WindowTable& m = r->report.gpus.at(0).minutes;
  ASSERT_EQ(m.rows.size(), 1u);
  EXPECT_EQ(m.rows[0].start_ns, kT0);
  EXPECT_NEAR(m.rows[0].values[analyses::kColKernelCount], 251, 1e-9);
  EXPECT_NEAR(m.rows[0].values[analyses::kColBusyNs], 251.0 * kMs + 200 * kUs, 1.0);
}

TEST(WindowsTest, WindowMsSetsTheWidthAndLongRunsCoarsen) {
  // 91 kernels 10 s apart: 900 s is 18,000 windows of 50 ms, more than
  // kMaxWindowRows: they merge into 9,000 windows of 100 ms.
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0xAB, 78);
  p.WriteHeader();
  for (int i = 0; i <= 90; ++i) {
    p.AddKernel(kT0 + static_cast<uint64_t>(i) * 10 * kS, 5 * kMs, "tick");
    if (i % 10 == 9) p.Flush();
  }
  p.WriteEnd();
  model::ModelOptions options;
  options.window_ns = 50 * kMs;
  const auto r = Analyze(trace, "long", options);
  const WindowTable& w = r->report.gpus.at(0).windows;
  EXPECT_EQ(w.requested_ns, 50 * kMs);
  EXPECT_EQ(w.width_ns, 100 * kMs);
  EXPECT_TRUE(w.coarsened);
  EXPECT_EQ(w.rows.size(), 9'001u);  // 900.005 s from the first window's start
  double kernels = 0;
  for (const analyses::WindowRow& row : w.rows) kernels += row.values[analyses::kColKernelCount];
  EXPECT_EQ(kernels, 91);
  const WindowTable& m = r->report.gpus.at(0).minutes;
  ASSERT_EQ(m.rows.size(), 16u);
  for (size_t i = 0; i < 15; ++i) {
    EXPECT_NEAR(m.rows[i].values[analyses::kColKernelCount], 6, 1e-9) << i;
  }
  // The option reaches the model through the command line, checked.
  const Output bad = RunCli({"summary", "--window-ms", "20", "x.gpscope"});
  EXPECT_EQ(bad.code, analyze::kExitUsage);
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

// --------------------------------------------------------------- csv --

std::vector<std::string> CsvFields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back().push_back('"');
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back().push_back(c);
    }
  }
  return fields;
}

TEST(CsvTest, EveryTableHasOneHeaderAndRowsOfTheSameWidth) {
  TraceBuilder trace;
  BuildWindowsTrace(trace);
  TraceBuilder::Process& q = trace.AddProcess(0xAC, 79);
  q.WriteHeader();
  q.AddKernel(kT0, 3 * kMs, "_Z4gemmILi128ELi4EEvPfS0_");  // "void gemm<128, 4>(float*, float*)"
  q.WriteEnd();
  const std::string path = TempPath("csv");
  ASSERT_TRUE(trace.WriteFile(path));
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"kernels",
       "gpu,rank,name,demangled,count,total_ns,share,mean_ns,p50_ns,p95_ns,p99_ns,min_ns,max_ns,"
       "stddev_ns,tiny_count,collective"},
      {"windows",
       "gpu,rank,start_ns,end_ns,since_origin_ns,time_origin_utc,busy_ns,busy_share,kernel_count,"
       "kernel_mean_ns,h2d_bytes,"
       "d2h_bytes,d2d_bytes,other_copy_bytes,idle_gap_share,comm_busy_ns,sm_util_pct,"
       "dram_bw_util_pct,tensor_util_pct,cpu_user_pct,cpu_system_pct"},
      {"minutes", ""},
      {"copies",
       "gpu,rank,direction,memory,count,bytes,duration_ns,gb_per_s,share_of_gpu_time,sync_count,"
       "sync_bytes,sync_duration_ns"},
      {"steps", ""},
      {"ranks", ""},
  };
  for (const auto& [table, header] : headers) {
    const Output o = RunCli({"summary", "--format", "csv", "--table", table, path});
    ASSERT_EQ(o.code, analyze::kExitOk) << table << ": " << o.err;
    const std::vector<std::string> lines = absl::StrSplit(o.out, '\n', absl::SkipEmpty());
    ASSERT_FALSE(lines.empty()) << table;
    if (!header.empty()) {
      EXPECT_EQ(lines[0], header) << table;
    }
    const size_t width = CsvFields(lines[0]).size();
    for (const std::string& l : lines) EXPECT_EQ(CsvFields(l).size(), width) << table << ": " << l;
    if (table == "windows") {
      EXPECT_EQ(lines.size(), 1u + 10u + 1u);  // header, GPU 0's ten windows, GPU 1's one
      EXPECT_EQ(CsvFields(lines[1])[2], "2000000000");
      EXPECT_EQ(CsvFields(lines[1])[18], "40");  // tensor_util_pct
      EXPECT_EQ(CsvFields(lines[1])[17], "");    // dram_bw_util_pct: not sampled
      // since_origin_ns: the window's start on the common timebase, from the
      // origin the table names (the trace's first event starts the window).
      EXPECT_EQ(CsvFields(lines[1])[4], "0");
      EXPECT_EQ(CsvFields(lines[1])[5].size(), std::string("2023-11-14T22:13:21.000000000Z").size());
    }
    if (table == "kernels") {
      const std::vector<std::string> last = CsvFields(lines.back());
      EXPECT_EQ(last[3], "void gemm<128, 4>(float*, float*)");  // quoted: it has a comma
      EXPECT_NE(lines.back().find("\"void gemm<128, 4>(float*, float*)\""), std::string::npos);
      EXPECT_EQ(last[5], "3000000");
    }
    if (table == "ranks") {
      EXPECT_EQ(lines.size(), 3u);
    }
  }
  unlink(path.c_str());
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"summary", "--format", "csv", "f"},
                                             {"summary", "--format", "csv", "--table", "x", "f"},
                                             {"summary", "--table", "kernels", "f"}}) {
    const Output o = RunCli(args);
    EXPECT_EQ(o.code, analyze::kExitUsage);
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  }
}

// ----------------------------------------------------- inferred steps --

TEST(InferredStepsTest, LoopWithoutNvtxGetsStepsFromItsRepeatingPattern) {
  TraceBuilder trace;
  Synth s(trace);
  std::vector<uint64_t> starts;
  uint64_t h = kT0;
  for (int step = 0; step < 60; ++step) {
    uint64_t t = s.Kernel(h, 200 * kUs, "embedding_fwd");
    starts.push_back(s.gpu_free_ns() - 200 * kUs);
    for (int k = 0; k < 4; ++k) t = s.Kernel(t, 2 * kMs, "gemm");
    t = s.Kernel(t, 300 * kUs, "cross_entropy");
    t = s.Copy(t, 5 * kUs, 4, proto::MEMCPY_DTOH, proto::MEMORY_PINNED, /*blocking=*/true);
    h = t + 3 * kMs + static_cast<uint64_t>(step % 3) * 100 * kUs;  // host work, a bit uneven
  }
  s.p().WriteEnd();
  const auto r = Analyze(trace, "inferred");
  const analyses::GpuReport& g = r->report.gpus.at(0);
  ASSERT_TRUE(g.has_steps);
  EXPECT_EQ(g.step_source, "inferred");
  EXPECT_EQ(g.step_count, 60u);
  EXPECT_GE(g.step_candidates, 3u);  // embedding_fwd, cross_entropy, D2H copies agree
  // Per-step rule rates use inferred steps too: the window runs from the
  // second inferred step to the last, 58 periods.
  EXPECT_NEAR(g.steps_in_window, 58, 0.5);
  EXPECT_NE(g.window.basis.find("inferred steps"), std::string::npos) << g.window.basis;
  std::vector<double> periods;
  for (size_t i = 2; i < starts.size(); ++i) periods.push_back(static_cast<double>(starts[i] - starts[i - 1]));
  std::sort(periods.begin(), periods.end());
  const double median = periods[periods.size() / 2];
  EXPECT_NEAR(g.step_period.p50, median, 0.01 * median);
  EXPECT_EQ(g.step_period.count, 58u);  // after the warm-up step, up to the last start
  EXPECT_NEAR(g.step_compute_ns, 8.5 * kMs, 0.1 * kMs);
  EXPECT_NEAR(g.step_compute_ns + g.step_copy_ns + g.step_idle_ns, g.step_period.mean,
              0.01 * g.step_period.mean);
  const std::string json = analyze::RenderSummaryJson(*r);
  EXPECT_NE(json.find("\"source\": \"inferred\""), std::string::npos);
  EXPECT_NE(analyze::RenderSummaryText(*r).find("inferred without NVTX markers"), std::string::npos);
}

TEST(InferredStepsTest, NvtxStepsWinAndIrregularWorkHasNoSteps) {
  {
    TraceBuilder trace;
    Synth s(trace);
    testing::HealthyLoop(s, {});
    s.p().WriteEnd();
    const auto r = Analyze(trace, "nvtx");
    EXPECT_EQ(r->report.gpus.at(0).step_source, "nvtx");
    EXPECT_FALSE(r->model.gpus.at(0).inferred_steps.found);
  }
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0xAD, 80);
  p.WriteHeader();
  std::mt19937_64 rng(3);
  std::exponential_distribution<double> gap(1.0 / 5e6);  // Poisson arrivals, mean 5 ms
  uint64_t t = kT0;
  for (int i = 0; i < 300; ++i) {
    t += 100 * kUs + static_cast<uint64_t>(gap(rng));
    p.AddKernel(t, 50 * kUs, i % 2 == 0 ? "a" : "b");
  }
  p.WriteEnd();
  const auto r = Analyze(trace, "irregular");
  EXPECT_FALSE(r->report.gpus.at(0).has_steps);
  EXPECT_EQ(r->report.gpus.at(0).step_source, "");
}

}  // namespace
}  // namespace gpscope
