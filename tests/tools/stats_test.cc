// Tests of analyses/stats.h (the nsys-style tables) and the `stats` command,
// on a trace built here whose numbers were worked out by hand below.
#include "tools/analyses/stats.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <sstream>
#include <string>

#include "tests/testing/trace_builder.h"
#include "tools/analyze/cli.h"
#include "tools/reader/event_reader.h"

namespace gpscope::analyses {
namespace {

constexpr uint64_t kT = 1'000'000'000;  // the trace's CUPTI base (the builder's clock snapshot)

// Thread 10: range "step" [1000, 5000] with "fwd" [1500, 3000] inside it, a
// second "step" [8000, 12000]; thread 11: "step" [1000, 9000] that launches
// nothing. Launches on thread 10 (start, duration, correlation -> GPU ops):
//   cudaLaunchKernel  1600 +100 corr 1 -> square [2000, 2600]
//   cudaLaunchKernel  3500 +120 corr 2 -> gemm<4> [4000, 4300]
//   cudaGraphLaunch   3600 +200 corr 5 -> gemm<8> [4400, 4500], gemm<4> [4600, 4900]
//   cudaLaunchKernel  6000 +140 corr 3 -> square [6500, 7000] (in no range)
//   cudaMemcpyAsync   8100 +300 corr 4 -> H2D 4096 bytes [9000, 9500]
std::string BuildTrace() {
  testing::TraceBuilder trace;
  testing::TraceBuilder::Process& p = trace.AddProcess(0x51, 51);
  p.WriteHeader();
  auto range = [&](uint64_t start, uint64_t end, const char* name, uint32_t tid, uint32_t depth) {
    format::NvtxRangeEvent r{};
    r.start_ns = kT + start;
    r.end_ns = kT + end;
    r.name_id = p.Intern(name);
    r.thread_id = tid;
    r.depth = depth;
    p.Add(r);
  };
  range(1000, 5000, "step", 10, 0);
  range(1000, 9000, "step", 11, 0);
  range(1500, 3000, "fwd", 10, 1);
  range(8000, 12000, "step", 10, 0);
  auto call = [&](uint64_t start, uint64_t duration, const char* name, uint32_t corr) {
    format::ApiCallEvent a{};
    a.start_ns = kT + start;
    a.end_ns = kT + start + duration;
    a.thread_id = 10;
    a.correlation_id = corr;
    a.api_name_id = p.Intern(name);
    p.Add(a);
  };
  call(1600, 100, "cudaLaunchKernel", 1);
  call(3500, 120, "cudaLaunchKernel", 2);
  call(3600, 200, "cudaGraphLaunch", 5);
  call(6000, 140, "cudaLaunchKernel", 3);
  call(8100, 300, "cudaMemcpyAsync", 4);
  auto kernel = [&](uint64_t start, uint64_t end, const char* name, uint32_t corr) {
    format::KernelEvent k{};
    k.start_ns = kT + start;
    k.end_ns = kT + end;
    k.name_id = p.Intern(name);
    k.context_id = 1;
    k.stream_id = 7;
    k.correlation_id = corr;
    p.Add(k);
  };
  kernel(2000, 2600, "_Z6squarePfi", 1);
  kernel(4000, 4300, "_ZN2ns4gemmILi4EEEvPf", 2);
  kernel(4400, 4500, "_ZN2ns4gemmILi8EEEvPf", 5);
  kernel(4600, 4900, "_ZN2ns4gemmILi4EEEvPf", 5);
  kernel(6500, 7000, "_Z6squarePfi", 3);
  format::MemcpyEvent m{};
  m.start_ns = kT + 9000;
  m.end_ns = kT + 9500;
  m.bytes = 4096;
  m.copy_kind = 1;  // HtoD
  m.src_kind = 1;
  m.dst_kind = 3;
  m.context_id = 1;
  m.stream_id = 7;
  m.correlation_id = 4;
  p.Add(m);
  p.Flush();
  p.WriteEnd();
  std::string path = ::testing::TempDir() + "stats_test." + std::to_string(getpid()) + ".gpscope";
  EXPECT_TRUE(trace.WriteFile(path));
  return path;
}

StatsReport Compute(const std::string& path, NameStyle names) {
  StatsCollector stats;
  reader::ReadResult read = reader::ReadEvents({path}, {&stats});
  EXPECT_TRUE(read.index.FirstFileError().ok());
  return stats.Finish({names});
}

const StatsRow* Find(const std::vector<StatsRow>& rows, const std::string& name) {
  for (const StatsRow& r : rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

TEST(StatsTest, SummarizeUsesMiddleMedianNearestRankP95AndSampleStddev) {
  std::vector<uint64_t> d = {40, 10, 30, 20};
  DurationSummary s = Summarize(d);
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.total_ns, 100u);
  EXPECT_DOUBLE_EQ(s.mean_ns, 25);
  EXPECT_DOUBLE_EQ(s.median_ns, 25);  // (20 + 30) / 2
  EXPECT_EQ(s.p95_ns, 40u);           // ceil(3.8) = 4th smallest
  EXPECT_EQ(s.min_ns, 10u);
  EXPECT_EQ(s.max_ns, 40u);
  EXPECT_NEAR(s.stddev_ns, std::sqrt(500.0 / 3), 1e-9);  // (225+25+25+225) / (4-1)
  // 20 values 1..20: P95 is the 19th smallest, the median 10.5.
  std::vector<uint64_t> twenty;
  for (uint64_t v = 20; v >= 1; --v) twenty.push_back(v);
  s = Summarize(twenty);
  EXPECT_EQ(s.p95_ns, 19u);
  EXPECT_DOUBLE_EQ(s.median_ns, 10.5);
  std::vector<uint64_t> none;
  EXPECT_EQ(Summarize(none).count, 0u);
}

TEST(StatsTest, NvtxSummaryCountsEveryRangeByNameAndDomain) {
  const std::string path = BuildTrace();
  const StatsReport r = Compute(path, NameStyle::kFull);
  EXPECT_EQ(r.processes, 1u);
  ASSERT_EQ(r.nvtx_sum.size(), 2u);
  const StatsRow& step = r.nvtx_sum[0];  // largest total first
  EXPECT_EQ(step.name, "step");
  EXPECT_EQ(step.domain, "");
  EXPECT_EQ(step.time.count, 3u);
  EXPECT_EQ(step.time.total_ns, 16000u);  // 4000 + 8000 + 4000
  EXPECT_DOUBLE_EQ(step.time.median_ns, 4000);
  EXPECT_EQ(step.time.p95_ns, 8000u);
  EXPECT_EQ(step.time.min_ns, 4000u);
  EXPECT_EQ(step.time.max_ns, 8000u);
  EXPECT_NEAR(step.time.stddev_ns, std::sqrt(16e6 / 3), 1e-6);  // deviations -4/3, -4/3, 8/3 us
  EXPECT_NEAR(step.share, 16000.0 / 17500, 1e-12);
  EXPECT_EQ(r.nvtx_sum[1].name, "fwd");
  EXPECT_EQ(r.nvtx_sum[1].time.total_ns, 1500u);
  unlink(path.c_str());
}

TEST(StatsTest, GpuProjectionTakesOpsLaunchedInsideTheRangeOnItsThread) {
  const std::string path = BuildTrace();
  const StatsReport r = Compute(path, NameStyle::kFull);
  ASSERT_EQ(r.nvtx_gpu_proj.size(), 2u);
  const ProjectionRow& step = r.nvtx_gpu_proj[0];
  EXPECT_EQ(step.name, "step");
  // Thread 10's first step: corr 1, 2, 5 -> [2000, 4900] = 2900, 4 ops; its
  // second: corr 4 -> [9000, 9500] = 500, 1 op. Thread 11's step launched
  // nothing (thread 10's calls inside its time do not count).
  EXPECT_EQ(step.ranges, 2u);
  EXPECT_EQ(step.projected.total_ns, 3400u);
  EXPECT_EQ(step.projected.min_ns, 500u);
  EXPECT_EQ(step.projected.max_ns, 2900u);
  EXPECT_DOUBLE_EQ(step.projected.median_ns, 1700);
  EXPECT_EQ(step.total_range_ns, 8000u);
  EXPECT_EQ(step.gpu_ops, 5u);
  EXPECT_DOUBLE_EQ(step.mean_gpu_ops, 2.5);
  const ProjectionRow& fwd = r.nvtx_gpu_proj[1];
  EXPECT_EQ(fwd.name, "fwd");  // corr 1 only: [2000, 2600]
  EXPECT_EQ(fwd.ranges, 1u);
  EXPECT_EQ(fwd.projected.total_ns, 600u);
  EXPECT_EQ(fwd.gpu_ops, 1u);
  unlink(path.c_str());
}

TEST(StatsTest, ApiKernelAndMemoryTables) {
  const std::string path = BuildTrace();
  StatsReport r = Compute(path, NameStyle::kFull);
  ASSERT_EQ(r.cuda_api_sum.size(), 3u);
  EXPECT_EQ(r.cuda_api_sum[0].name, "cudaLaunchKernel");
  EXPECT_EQ(r.cuda_api_sum[0].time.count, 3u);
  EXPECT_EQ(r.cuda_api_sum[0].time.total_ns, 360u);
  EXPECT_DOUBLE_EQ(r.cuda_api_sum[0].time.median_ns, 120);
  EXPECT_EQ(r.cuda_api_sum[0].time.p95_ns, 140u);
  EXPECT_EQ(r.cuda_api_sum[1].name, "cudaMemcpyAsync");
  EXPECT_EQ(r.cuda_api_sum[2].name, "cudaGraphLaunch");

  ASSERT_EQ(r.cuda_gpu_kern_sum.size(), 3u);
  EXPECT_EQ(r.cuda_gpu_kern_sum[0].name, "square(float*, int)");
  EXPECT_EQ(r.cuda_gpu_kern_sum[0].time.total_ns, 1100u);
  EXPECT_EQ(r.cuda_gpu_kern_sum[1].name, "void ns::gemm<4>(float*)");
  EXPECT_EQ(r.cuda_gpu_kern_sum[1].time.count, 2u);
  EXPECT_EQ(r.cuda_gpu_kern_sum[1].time.total_ns, 600u);
  EXPECT_EQ(r.cuda_gpu_kern_sum[2].time.total_ns, 100u);

  ASSERT_EQ(r.cuda_gpu_mem_sum.size(), 1u);
  EXPECT_EQ(r.cuda_gpu_mem_sum[0].name, "H2D");
  EXPECT_EQ(r.cuda_gpu_mem_sum[0].bytes, 4096u);
  EXPECT_EQ(r.cuda_gpu_mem_sum[0].time.total_ns, 500u);

  // Base names merge the two instantiations of gemm.
  r = Compute(path, NameStyle::kBase);
  ASSERT_EQ(r.cuda_gpu_kern_sum.size(), 2u);
  const StatsRow* gemm = Find(r.cuda_gpu_kern_sum, "gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->time.count, 3u);
  EXPECT_EQ(gemm->time.total_ns, 700u);
  ASSERT_NE(Find(r.cuda_gpu_kern_sum, "square"), nullptr);
  unlink(path.c_str());
}

TEST(StatsTest, CommandWritesTextCsvAndJsonAndRejectsBadUsage) {
  const std::string path = BuildTrace();
  std::ostringstream out, err;
  ASSERT_EQ(analyze::Run({"stats", "--report", "cuda_gpu_kern_sum", "--names", "base", "--format",
                          "csv", path},
                         out, err),
            analyze::kExitOk)
      << err.str();
  const std::string csv = out.str();
  EXPECT_EQ(csv.rfind("# time origin ", 0), 0u) << csv;
  EXPECT_NE(csv.find("\nshare,total_ns,count,mean_ns,median_ns,p95_ns,min_ns,max_ns,stddev_ns,name\n"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find(",1100,2,550,550,600,500,600,"), std::string::npos) << csv;  // square
  EXPECT_NE(csv.find(",gemm\n"), std::string::npos) << csv;

  std::ostringstream json, err2;
  ASSERT_EQ(analyze::Run({"stats", "--format", "json", path}, json, err2), analyze::kExitOk);
  EXPECT_NE(json.str().find("\"schema\": \"gpscope.stats/1\""), std::string::npos);
  EXPECT_NE(json.str().find("\"nvtx_gpu_proj\""), std::string::npos);

  std::ostringstream text, err3;
  ASSERT_EQ(analyze::Run({"stats", path}, text, err3), analyze::kExitOk);
  EXPECT_NE(text.str().find("nvtx_gpu_proj: NVTX GPU projection"), std::string::npos);

  for (std::vector<std::string> bad : std::vector<std::vector<std::string>>{
           {"stats"},
           {"stats", "--report", "nope", path},
           {"stats", "--format", "csv", path},  // csv needs one report
           {"stats", "--names", "mangled", path},
           {"stats", "--format", "xml", path}}) {
    std::ostringstream o, e;
    EXPECT_EQ(analyze::Run(bad, o, e), analyze::kExitUsage) << bad.back();
  }
  std::ostringstream o, e;
  EXPECT_EQ(analyze::Run({"stats", "/nonexistent/x.gpscope"}, o, e), analyze::kExitFailed);
  unlink(path.c_str());
}

}  // namespace
}  // namespace gpscope::analyses
