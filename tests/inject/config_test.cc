#include "inject/config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace gpscope::inject {
namespace {

std::map<std::string, std::string>* g_env = nullptr;
const char* FakeEnv(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}

Config Parse(std::map<std::string, std::string> env, std::vector<std::string>* problems) {
  g_env = &env;
  Config c = ParseConfig(FakeEnv, problems);
  g_env = nullptr;
  return c;
}

TEST(ConfigTest, DefaultsWithEmptyEnvironment) {
  std::vector<std::string> problems;
  Config c = Parse({}, &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_TRUE(c.enabled);
  EXPECT_TRUE(c.sync_records);
  EXPECT_TRUE(c.detach);
  EXPECT_EQ(c.output_dir, "./gpscope-out");
  EXPECT_EQ(c.file_mode, FileMode::kNode);
  EXPECT_EQ(c.flush_interval_ms, 2000u);
  EXPECT_EQ(c.buffer_kb, 4096u);
  EXPECT_EQ(c.max_buffer_mb, 64u);
  EXPECT_EQ(c.cupti_mode, CuptiMode::kHold);
  EXPECT_TRUE(c.metrics);
  EXPECT_EQ(c.metrics_interval_ms, 100u);
}

TEST(ConfigTest, ReadsEveryVariable) {
  std::vector<std::string> problems;
  Config c = Parse({{"GPSCOPE_ENABLE", "0"}, {"GPSCOPE_OUTPUT", "/tmp/x"},
                    {"GPSCOPE_FILE_MODE", "PROCESS"}, {"GPSCOPE_JOB", "j1"},
                    {"GPSCOPE_FLUSH_INTERVAL_MS", "500"}, {"GPSCOPE_BUFFER_KB", "1024"},
                    {"GPSCOPE_MAX_BUFFER_MB", "16"}, {"GPSCOPE_API", "off"},
                    {"GPSCOPE_NVTX", "false"}, {"GPSCOPE_SYNC", "0"},
                    {"GPSCOPE_DETACH", "0"}, {"GPSCOPE_EXIT_TIMEOUT_MS", "100"},
                    {"GPSCOPE_CUPTI_MODE", "yield"}, {"GPSCOPE_ZSTD_LEVEL", "3"},
                    {"GPSCOPE_LOG_LEVEL", "debug"}, {"GPSCOPE_CUPTI_PATH", "/x/libcupti.so"},
                    {"GPSCOPE_METRICS", "0"}, {"GPSCOPE_METRICS_INTERVAL_MS", "250"},
                    {"GPSCOPE_NVML_PATH", "/y/libnvidia-ml.so.1"}},
                   &problems);
  EXPECT_TRUE(problems.empty()) << problems[0];
  EXPECT_FALSE(c.enabled);
  EXPECT_EQ(c.output_dir, "/tmp/x");
  EXPECT_EQ(c.file_mode, FileMode::kProcess);
  EXPECT_EQ(c.job, "j1");
  EXPECT_EQ(c.flush_interval_ms, 500u);
  EXPECT_EQ(c.buffer_kb, 1024u);
  EXPECT_EQ(c.max_buffer_mb, 16u);
  EXPECT_FALSE(c.api_records);
  EXPECT_FALSE(c.nvtx);
  EXPECT_FALSE(c.sync_records);
  EXPECT_FALSE(c.detach);
  EXPECT_EQ(c.exit_timeout_ms, 100u);
  EXPECT_EQ(c.cupti_mode, CuptiMode::kYield);
  EXPECT_EQ(c.zstd_level, 3);
  EXPECT_EQ(c.log_level, common::LogLevel::kDebug);
  EXPECT_EQ(c.cupti_path, "/x/libcupti.so");
  EXPECT_FALSE(c.metrics);
  EXPECT_EQ(c.metrics_interval_ms, 250u);
  EXPECT_EQ(c.nvml_path, "/y/libnvidia-ml.so.1");
}

TEST(ConfigTest, MetricsTakesABooleanOrAListOfSources) {
  std::vector<std::string> problems;
  Config c = Parse({{"GPSCOPE_METRICS", "host,gpm"}}, &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_TRUE(c.metrics);
  EXPECT_TRUE(c.metrics_nvml);  // GPM is read through NVML
  EXPECT_TRUE(c.metrics_gpm);
  EXPECT_FALSE(c.metrics_processes);
  EXPECT_TRUE(c.metrics_host);
  EXPECT_EQ(MetricSourcesText(c), "nvml,gpm,host");

  c = Parse({{"GPSCOPE_METRICS", "off"}}, &problems);
  EXPECT_FALSE(c.metrics);
  EXPECT_FALSE(c.metrics_nvml || c.metrics_gpm || c.metrics_processes || c.metrics_host);
  EXPECT_EQ(MetricSourcesText(c), "0");
  c = Parse({{"GPSCOPE_METRICS", "all"}}, &problems);
  EXPECT_TRUE(c.metrics_nvml && c.metrics_gpm && c.metrics_processes && c.metrics_host);
  EXPECT_EQ(MetricSourcesText(c), "1");
  EXPECT_TRUE(problems.empty());

  c = Parse({{"GPSCOPE_METRICS", "nvml,disk"}}, &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("GPSCOPE_METRICS='nvml,disk'"), std::string::npos) << problems[0];
  EXPECT_TRUE(c.metrics && c.metrics_gpm && c.metrics_host);  // the default: everything
}

TEST(ConfigTest, MetricsIntervalOutsideTenToThousandMsKeepsTheDefault) {
  for (const char* bad : {"9", "1001", "0", "fast"}) {
    std::vector<std::string> problems;
    Config c = Parse({{"GPSCOPE_METRICS_INTERVAL_MS", bad}}, &problems);
    ASSERT_EQ(problems.size(), 1u) << bad;
    EXPECT_NE(problems[0].find("GPSCOPE_METRICS_INTERVAL_MS"), std::string::npos);
    EXPECT_NE(problems[0].find("10..1000"), std::string::npos) << problems[0];
    EXPECT_EQ(c.metrics_interval_ms, 100u);
  }
  std::vector<std::string> problems;
  EXPECT_EQ(Parse({{"GPSCOPE_METRICS_INTERVAL_MS", "10"}}, &problems).metrics_interval_ms, 10u);
  EXPECT_EQ(Parse({{"GPSCOPE_METRICS_INTERVAL_MS", "1000"}}, &problems).metrics_interval_ms, 1000u);
  EXPECT_TRUE(problems.empty());
}

TEST(ConfigTest, BadValuesGetOneLineEachNamingTheVariableAndKeepDefaults) {
  std::vector<std::string> problems;
  Config c = Parse({{"GPSCOPE_BUFFER_KB", "abc"}, {"GPSCOPE_FLUSH_INTERVAL_MS", "5"},
                    {"GPSCOPE_MAX_BUFFER_MB", "-3"}, {"GPSCOPE_FILE_MODE", "cluster"},
                    {"GPSCOPE_API", "maybe"}, {"GPSCOPE_ZSTD_LEVEL", "12x"}},
                   &problems);
  ASSERT_EQ(problems.size(), 6u);
  EXPECT_NE(problems[0].find("GPSCOPE_FILE_MODE='cluster'"), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("node|process"), std::string::npos);
  EXPECT_NE(problems[1].find("GPSCOPE_FLUSH_INTERVAL_MS='5'"), std::string::npos) << problems[1];
  EXPECT_NE(problems[1].find("using 2000"), std::string::npos);
  EXPECT_NE(problems[2].find("GPSCOPE_BUFFER_KB='abc'"), std::string::npos);
  EXPECT_NE(problems[3].find("GPSCOPE_MAX_BUFFER_MB='-3'"), std::string::npos);
  EXPECT_NE(problems[4].find("GPSCOPE_API='maybe'"), std::string::npos);
  EXPECT_NE(problems[5].find("GPSCOPE_ZSTD_LEVEL='12x'"), std::string::npos);
  EXPECT_EQ(c.buffer_kb, 4096u);
  EXPECT_EQ(c.flush_interval_ms, 2000u);
  EXPECT_EQ(c.max_buffer_mb, 64u);
  EXPECT_EQ(c.file_mode, FileMode::kNode);
  EXPECT_TRUE(c.api_records);
  EXPECT_EQ(c.zstd_level, 1);
}

TEST(ConfigTest, PoolSmallerThanTwoBuffersIsRaised) {
  std::vector<std::string> problems;
  Config c = Parse({{"GPSCOPE_BUFFER_KB", "8192"}, {"GPSCOPE_MAX_BUFFER_MB", "4"}}, &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("fewer than two"), std::string::npos);
  EXPECT_EQ(c.max_buffer_mb, 16u);
}

// The overhead-diagnosis switches are no settings (inject/diag_switches.h):
// the configuration neither reads them nor lists them in the trace header.
TEST(ConfigTest, DiagnosisSwitchesAreNoSettings) {
  std::vector<std::string> problems;
  Config c = Parse({{"GPSCOPE_DIAG_OFF", "sync,bogus"}, {"GPSCOPE_DIAG_GATE_KERNELS", "1"}},
                   &problems);
  EXPECT_TRUE(problems.empty());
  for (const auto& [k, v] : c.AsKeyValues()) {
    EXPECT_EQ(k.rfind("GPSCOPE_DIAG", 0), std::string::npos) << k;
  }
}

TEST(ConfigTest, KeyValuesListEffectiveSettings) {
  Config c = Parse({{"GPSCOPE_JOB", "abc"}, {"GPSCOPE_SYNC", "0"}}, nullptr);
  auto kv = c.AsKeyValues();
  bool found = false, sync = false;
  for (auto& [k, v] : kv) {
    if (k == "GPSCOPE_JOB") found = (v == "abc");
    if (k == "GPSCOPE_SYNC") sync = (v == "0");
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(sync);
}

TEST(ConfigTest, StackSettingsAreParsedAndRecordedWithTheOthers) {
  std::vector<std::string> problems;
  Config c = Parse({{"GPSCOPE_STACKS", "native"}, {"GPSCOPE_STACK_SAMPLE_MS", "5"}}, &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(c.stacks.mode, stacks::StackMode::kNative);
  EXPECT_EQ(c.stacks.sample_interval_ms, 5u);
  std::map<std::string, std::string> kv;
  for (auto& [k, v] : c.AsKeyValues()) kv[k] = v;
  EXPECT_EQ(kv["GPSCOPE_STACKS"], "native");
  EXPECT_EQ(kv["GPSCOPE_STACK_SAMPLE_MS"], "5");
  // Defaults: on, 1 ms; a bad value is one line and keeps the default.
  Config d = Parse({{"GPSCOPE_STACK_SAMPLE_MS", "fast"}}, &problems);
  EXPECT_EQ(d.stacks.mode, stacks::StackMode::kAuto);
  EXPECT_EQ(d.stacks.sample_interval_ms, 1u);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("GPSCOPE_STACK_SAMPLE_MS='fast'"), std::string::npos) << problems[0];
}

TEST(ConfigTest, ApiSourceIsActivityUnlessCallbackAndABadValueIsOneLine) {
  std::vector<std::string> problems;
  Config c = Parse({}, &problems);
  EXPECT_EQ(c.api_source, ApiSource::kActivity);
  std::map<std::string, std::string> kv;
  for (auto& [k, v] : c.AsKeyValues()) kv[k] = v;
  EXPECT_EQ(kv["GPSCOPE_API_SOURCE"], "activity");
  c = Parse({{"GPSCOPE_API_SOURCE", "Callback"}}, &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(c.api_source, ApiSource::kCallback);
  for (auto& [k, v] : c.AsKeyValues()) kv[k] = v;
  EXPECT_EQ(kv["GPSCOPE_API_SOURCE"], "callback");
  c = Parse({{"GPSCOPE_API_SOURCE", "callbacks"}}, &problems);
  EXPECT_EQ(c.api_source, ApiSource::kActivity);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0],
            "GPSCOPE_API_SOURCE='callbacks' is not one of activity|callback; using activity");
}

}  // namespace
}  // namespace gpscope::inject
