// tests/tools/sweep_thread_test.cc: the model builder's sweep thread
// (tools/model/model_builder.cc, "threads"): the reading thread's arrival
// (each event's stats, the caches by id, GPU ops) hands commands to the
// sweep thread (the reorder queue, gaps, launch matching, steps, the
// timelines), and the summary must come out as on one thread. Label
// concurrent: the tsan preset runs it too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/testing/trace_builder.h"
#include "tools/analyses/summary.h"
#include "tools/model/model_builder.h"
#include "tools/render/summary_render.h"

namespace gpscope::analyze {
namespace {

// The JSON summary of `path` with the model built on `threads` threads.
std::string SummaryOnThreads(const std::string& path, int threads) {
  model::ModelOptions model_options;
  model_options.threads = threads;
  return render::RenderSummaryJson(
      *analyses::ComputeSummaryResult({path}, model_options, analyses::ReportOptions{}));
}

// The builder's sweep thread (model_builder.h) applies the arrival's
// commands in the order one thread would: the same summary either way,
// also where the builder goes on on one thread (the call-stack traces).
TEST(SweepThreadTest, OneThreadAndASweepThreadGiveTheSameSummary) {
  std::vector<std::string> traces;
  for (const auto& e : std::filesystem::recursive_directory_iterator(GPSCOPE_TEST_DATA_DIR)) {
    if (e.path().extension() == ".gpscope") traces.push_back(e.path().string());
  }
  std::sort(traces.begin(), traces.end());
  ASSERT_GT(traces.size(), 20u);
  for (const std::string& path : traces) {
    SCOPED_TRACE(path);
    EXPECT_EQ(SummaryOnThreads(path, 1), SummaryOnThreads(path, 2));
  }
}

// A kernel whose name was never defined (a lost string frame) makes the
// sweep look its stats up by name: the builder finishes the queue there and
// goes on on one thread, mid-batch, with the model unchanged.
TEST(SweepThreadTest, AnUndefinedKernelNameMidRunGivesTheSameSummary) {
  testing::TraceBuilder trace;
  testing::TraceBuilder::Process& p = trace.AddProcess(0x5eed, 42);
  p.WriteHeader();
  uint64_t t = 2'000'000'000;
  for (int batch = 0; batch < 40; ++batch) {
    for (int i = 0; i < 500; ++i) {
      t += i % 50 == 0 ? 8'000'000 : 20'000;  // an idle gap now and then
      p.AddKernel(t, 5'000 + static_cast<uint64_t>(i % 7) * 1'000, i % 3 == 0 ? "relu" : "gemm",
                  /*stream_id=*/7 + i % 2);
      if (batch == 25 && i == 250) {
        format::KernelEvent k{};
        k.start_ns = t + 1'000;
        k.end_ns = t + 2'000;
        k.name_id = 9'999;  // never interned
        k.context_id = 1;
        k.stream_id = 7;
        p.Add(k);
      }
    }
    p.Flush();
  }
  p.WriteEnd();
  const std::string path = ::testing::TempDir() + "sweep_thread_test." + std::to_string(getpid()) +
                           ".undefined_name.gpscope";
  ASSERT_TRUE(trace.WriteFile(path));
  const std::string a = SummaryOnThreads(path, 1);
  EXPECT_NE(a.find("<kernel name 9999>"), std::string::npos);
  EXPECT_EQ(a, SummaryOnThreads(path, 2));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace gpscope::analyze
