// A refused CUPTI client (the collector's CuptiClientRefusal notices, issue
// 17) is shown by `info` (text and JSON) and by the summary's completeness
// section (text and JSON, which the report's data embeds); the notices are
// cumulative, so the latest per (api, caller) is what is shown.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/testing/trace_builder.h"
#include "tools/analyze/cli.h"

namespace gpscope {
namespace {

std::string WriteTrace() {
  testing::TraceBuilder trace;
  auto& p = trace.AddProcess(0x77, 4242);
  p.WriteHeader();
  const uint64_t t0 = 1'700'000'000'000'000'000ull;
  p.AddKernel(t0, 10'000, "gemm");
  auto refusal = [&](uint64_t count, uint64_t last) {
    proto::CuptiClientRefusal* r = p.batch().add_cupti_refusals();
    r->set_api("cuptiSubscribe");
    r->set_caller("/opt/torch/lib/libtorch_cpu.so");
    r->set_count(count);
    r->set_first_ns(t0 + 2'000'000'000ull);
    r->set_last_ns(last);
    r->set_result(39);
  };
  refusal(1, t0 + 2'000'000'000ull);
  p.Flush();
  p.AddKernel(t0 + 3'000'000'000ull, 10'000, "gemm");
  refusal(3, t0 + 2'500'000'000ull);  // cumulative: supersedes the first
  p.Flush();
  p.WriteEnd();
  const std::string path =
      ::testing::TempDir() + "/refusal_" + std::to_string(getpid()) + ".gpscope";
  trace.WriteFile(path);
  return path;
}

std::string Analyze(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  EXPECT_EQ(analyze::Run(args, out, err), 0) << err.str();
  return out.str();
}

TEST(CuptiRefusalTest, InfoShowsTheRefusedClientOnceWithTheLatestCount) {
  const std::string path = WriteTrace();
  const std::string text = Analyze({"info", path});
  EXPECT_NE(text.find("REFUSED 3x: cuptiSubscribe from /opt/torch/lib/libtorch_cpu.so"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("REFUSED 1x"), std::string::npos) << text;
  const std::string json = Analyze({"info", "--format", "json", path});
  EXPECT_NE(json.find("\"cupti_refusals\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"count\": 3"), std::string::npos) << json;
  EXPECT_NE(json.find("\"result\": 39"), std::string::npos) << json;
  unlink(path.c_str());
}

TEST(CuptiRefusalTest, SummaryCompletenessNamesItAndTheJsonCarriesIt) {
  const std::string path = WriteTrace();
  const std::string text = Analyze({"summary", path});
  const size_t section = text.find("DATA COMPLETENESS");
  ASSERT_NE(section, std::string::npos) << text;
  EXPECT_NE(text.find("another profiler REFUSED: cuptiSubscribe from "
                      "/opt/torch/lib/libtorch_cpu.so, 3 calls from",
                      section),
            std::string::npos)
      << text.substr(section);
  EXPECT_NE(text.find("+2.000 s", section), std::string::npos) << "when, on the process's clock";
  const std::string json = Analyze({"summary", "--format", "json", path});
  const size_t completeness = json.find("\"completeness\"");
  ASSERT_NE(completeness, std::string::npos);
  EXPECT_NE(json.find("\"cupti_refusals\"", completeness), std::string::npos) << json;
  EXPECT_NE(json.find("\"caller\": \"/opt/torch/lib/libtorch_cpu.so\"", completeness),
            std::string::npos);
  unlink(path.c_str());
}

}  // namespace
}  // namespace gpscope
