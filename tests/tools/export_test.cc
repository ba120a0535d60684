#include "tools/analyze/export.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <string>

#include "tests/testing/trace_builder.h"
#include "tools/analyze/cli.h"

namespace gpscope::analyze {
namespace {

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

std::string BuildTrace() {
  testing::TraceBuilder trace;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    testing::TraceBuilder::Process& p = trace.AddProcess(0x100 + rank, 40 + rank);
    p.header().mutable_identity()->set_rank(static_cast<int32_t>(rank));
    p.WriteHeader();
    // One clock snapshot maps CUPTI 1e9 to the header's start time; the
    // second rank's kernels start 2 us after the first's.
    for (int i = 0; i < 3; ++i) {
      format::KernelEvent k{};
      k.start_ns = 1'000'000'000 + 10'000 * i + 2'000 * rank;
      k.end_ns = k.start_ns + 1'500;
      k.name_id = p.Intern("kernel \"quoted\" </script>");
      k.stream_id = 7;
      k.correlation_id = 1 + i;
      p.Add(k);
    }
    format::ApiCallEvent a{};
    a.start_ns = 999'990'000;
    a.end_ns = 999'995'000;
    a.thread_id = 40 + rank;
    a.api_name_id = p.Intern("cudaLaunchKernel_v7000");
    p.Add(a);
    p.Flush();
    p.WriteEnd();
  }
  std::string path = ::testing::TempDir() + "export_test." + std::to_string(getpid()) + ".gpscope";
  trace.WriteFile(path);
  return path;
}

TEST(ExportTest, WritesChromeTraceEventsWithTracksAndEscapedNames) {
  const std::string path = BuildTrace();
  std::ostringstream out, err;
  ASSERT_EQ(analyze::Run({"export", path}, out, err), kExitOk) << err.str();
  const std::string json = out.str();
  EXPECT_EQ(json.rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 0), 0u);
  // The document ends with its metadata: the time origin every command prints.
  EXPECT_NE(json.find("],\"metadata\":{\"gpscope_time_origin\":{\"realtime_ns\":"),
            std::string::npos);
  EXPECT_EQ(Count(json, "\"cat\":\"kernel\""), 6u);
  EXPECT_EQ(Count(json, "\"cat\":\"cuda_api\""), 2u);
  EXPECT_EQ(Count(json, "\"name\":\"GPU 0 stream 7\""), 2u);  // one track per process
  EXPECT_NE(json.find("rank 1 · pid 41"), std::string::npos);
  // Trace strings are JSON strings: their quotes are escaped.
  EXPECT_EQ(json.find("kernel \"quoted\""), std::string::npos);
  EXPECT_NE(json.find("kernel \\\"quoted\\\""), std::string::npos);
  // Both ranks on one time base: rank 1's first kernel is 2 us after rank 0's.
  EXPECT_NE(json.find("\"pid\":40,\"tid\":1099511627783,\"ts\":"), std::string::npos);
  unlink(path.c_str());
}

TEST(ExportTest, UsageErrorsAndUnreadableFiles) {
  std::ostringstream out, err;
  EXPECT_EQ(analyze::Run({"export"}, out, err), kExitUsage);
  EXPECT_EQ(analyze::Run({"export", "--format", "svg", "x"}, out, err), kExitUsage);
  std::ostringstream out2, err2;
  EXPECT_EQ(analyze::Run({"export", "/nonexistent/trace.gpscope"}, out2, err2), kExitFailed);
  EXPECT_NE(err2.str().find("/nonexistent/trace.gpscope"), std::string::npos);
}

}  // namespace
}  // namespace gpscope::analyze
